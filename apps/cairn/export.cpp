#include "export.hpp"

#include <cairn/error.hpp>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <utility>

#include "checkpoint_dir.hpp"
#include "commands.hpp"

namespace cairn_tool {
namespace {

// Writes all of `data` to `fd`; the errno of the failure, or 0.
int write_all(int fd, const void* data, std::size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return 0;
}

// Bytes of one number of `dtype` that byte order swaps: a component of a complex number.
std::size_t swap_unit(cairn::DType dtype) {
  const std::size_t size = cairn::dtype_size(dtype);
  return cairn::is_complex(dtype) ? size / 2 : size;
}

}  // namespace

std::optional<std::string> npy_descr(cairn::DType dtype) {
  using cairn::DType;
  switch (dtype) {
    case DType::boolean: return "|b1";
    case DType::int8: return "|i1";
    case DType::uint8: return "|u1";
    case DType::bfloat16: return std::nullopt;
    default: break;
  }
  char kind = 'f';
  if (cairn::is_signed_integer(dtype)) kind = 'i';
  if (cairn::is_unsigned_integer(dtype)) kind = 'u';
  if (cairn::is_complex(dtype)) kind = 'c';
  return fmt::format("<{}{}", kind, cairn::dtype_size(dtype));
}

std::string npy_header(cairn::DType dtype, const std::vector<std::int64_t>& shape) {
  const auto descr = npy_descr(dtype);
  if (!descr) {
    throw cairn::InvalidArgument(
        fmt::format("NumPy has no dtype {}: export it with --raw", cairn::dtype_name(dtype)));
  }
  std::string dims;
  for (const std::int64_t n : shape) dims += fmt::format("{}{}", dims.empty() ? "" : ", ", n);
  if (shape.size() == 1) dims += ",";
  std::string dict =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", *descr, dims);
  // Version 1.0 holds the length in 2 bytes; 2.0 in 4. The data starts at a multiple of 64.
  const bool v2 = dict.size() + 1 + 10 > 65535;
  const std::size_t prefix = v2 ? 12 : 10;
  dict.append(63 - (prefix + dict.size()) % 64, ' ');
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  const std::size_t length = dict.size();
  for (std::size_t i = 0; i < (v2 ? 4U : 2U); ++i)
    out += static_cast<char>((length >> (8 * i)) & 0xff);
  return out + dict;
}

ExportFile::ExportFile(const cairn::Comm& comm, std::filesystem::path path, ExportFormat format,
                       bool force)
    : comm_(comm), path_(std::move(path)), format_(format), force_(force) {
  namespace fs = std::filesystem;
  const std::string why = on_primary(comm_, [&]() -> std::string {
    // An export is data taken out: written into a checkpoint or a root, it could replace a
    // shard or a metadata file, or become a file the checkpoint does not list.
    if (const std::string in = cairn_directory_holding(path_, false, false); !in.empty()) {
      return fmt::format(
          "'{}' is inside {}: an export is never written inside a checkpoint or a checkpoint "
          "root, with --force or not; nothing was written",
          path_.string(), in);
    }
    std::error_code ec;
    const fs::file_status status = fs::symlink_status(path_, ec);
    if (fs::is_directory(status)) {
      return fmt::format("'{}' is a directory: name the file to write", path_.string());
    }
    if (fs::exists(status) && !force_) {
      return fmt::format("'{}' already exists; pass --force to replace it", path_.string());
    }
    if (fs::exists(status) && !fs::is_regular_file(status)) {
      return fmt::format("'{}' exists and is not a regular file; nothing was written",
                         path_.string());
    }
    temporary_ = path_;
    temporary_ += fmt::format(".cairn-tmp.{}", ::getpid());
    fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0) {
      const int error = errno;
      temporary_.clear();
      return fmt::format("cannot write '{}': {}", path_.string(), std::strerror(error));
    }
    return {};
  });
  if (!why.empty()) throw CommandError(why);
}

ExportFile::~ExportFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!temporary_.empty()) ::unlink(temporary_.c_str());
}

void ExportFile::fail(const std::string& what, int error) {
  if (error_.empty()) {
    error_ = fmt::format("cannot {} '{}': {}", what, path_.string(), std::strerror(error));
  }
}

void ExportFile::begin(cairn::DType dtype, const std::vector<std::int64_t>& shape) {
  dtype_ = dtype;
  if (format_ != ExportFormat::npy || fd_ < 0) return;
  const std::string header = npy_header(dtype, shape);
  if (const int error = write_all(fd_, header.data(), header.size()); error != 0) {
    fail("write", error);
  }
  bytes_ += header.size();
}

void ExportFile::write(std::span<const std::byte> elements) {
  if (fd_ < 0 || !error_.empty()) return;
  const std::size_t unit = swap_unit(dtype_);
  if constexpr (std::endian::native == std::endian::big) {
    if (unit > 1) {
      swapped_.assign(elements.begin(), elements.end());
      for (std::size_t i = 0; i + unit <= swapped_.size(); i += unit) {
        std::reverse(swapped_.begin() + static_cast<std::ptrdiff_t>(i),
                     swapped_.begin() + static_cast<std::ptrdiff_t>(i + unit));
      }
      elements = swapped_;
    }
  }
  if (const int error = write_all(fd_, elements.data(), elements.size()); error != 0) {
    fail("write", error);
  }
  bytes_ += elements.size();
}

std::uint64_t ExportFile::commit() {
  const std::string why = on_primary(comm_, [&]() -> std::string {
    if (fd_ >= 0 && ::close(std::exchange(fd_, -1)) != 0) fail("write", errno);
    if (!error_.empty()) return error_ + "; nothing was written there";
    if (force_) {
      if (::rename(temporary_.c_str(), path_.c_str()) != 0) {
        fail("replace", errno);
        return error_;
      }
    } else if (::link(temporary_.c_str(), path_.c_str()) != 0) {
      // A hard link never replaces a file that appeared since the constructor looked.
      const int error = errno;
      std::error_code ec;
      if (error == EEXIST || std::filesystem::exists(std::filesystem::symlink_status(path_, ec))) {
        return fmt::format("'{}' appeared while it was written; pass --force to replace it",
                           path_.string());
      }
      // A file system without hard links: the check above is the last word.
      if ((error != EPERM && error != EOPNOTSUPP && error != ENOSYS) ||
          ::rename(temporary_.c_str(), path_.c_str()) != 0) {
        fail("create", error);
        return error_;
      }
      temporary_.clear();
      return {};
    }
    // After a rename the temporary name is gone; after a link it is one name too many.
    if (!force_) ::unlink(temporary_.c_str());
    temporary_.clear();
    return {};
  });
  if (!why.empty()) throw CommandError(why);
  return bytes_;
}

}  // namespace cairn_tool
