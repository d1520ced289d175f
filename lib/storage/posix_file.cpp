#include "storage/posix_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cairn/error.hpp>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fmt/format.h>
#include <utility>
#include <vector>

#include "comm/fault.hpp"
#include "comm/log.hpp"

namespace cairn::storage {
namespace {

[[noreturn]] void throw_errno(const std::filesystem::path& path, std::string_view what, int error) {
  throw IoError(path.string(),
                fmt::format("{} '{}' failed: {}", what, path.string(), std::strerror(error)));
}

}  // namespace

PosixFile::PosixFile(std::filesystem::path path, Mode mode) : path_(std::move(path)) {
  int flags = O_RDONLY | O_CLOEXEC;
  if (mode == Mode::write_new) flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
  if (mode == Mode::write_existing) flags = O_WRONLY | O_CLOEXEC;
  do {
    fd_ = ::open(path_.c_str(), flags, 0666);  // the umask decides
  } while (fd_ < 0 && errno == EINTR);
  if (fd_ < 0) {
    const int error = errno;
    if (mode != Mode::write_new && error == ENOENT) {
      throw NotFound(path_.string(), fmt::format("file '{}' does not exist", path_.string()));
    }
    throw_errno(path_,
                mode == Mode::read             ? "opening for reading"
                : mode == Mode::write_existing ? "opening for writing"
                                               : "creating",
                error);
  }
}

PosixFile::~PosixFile() {
  if (fd_ >= 0 && ::close(fd_) != 0) {
    log::warn("file.close", "path=\"{}\" error=\"{}\"", path_.string(), std::strerror(errno));
  }
}

PosixFile::PosixFile(PosixFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)) {}

PosixFile& PosixFile::operator=(PosixFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void PosixFile::write_at(std::uint64_t offset, std::span<const std::byte> data) {
  while (!data.empty()) {
    // Linux writes at most 0x7ffff000 bytes per call.
    const std::size_t chunk = std::min<std::size_t>(data.size(), 1ULL << 30);
    if (const int injected = fault::error_at("storage.pwrite")) {
      throw_errno(path_, fmt::format("writing {} bytes at offset {} of", chunk, offset), injected);
    }
    const ssize_t written = ::pwrite(fd_, data.data(), chunk, static_cast<off_t>(offset));
    if (written < 0) {
      if (errno == EINTR) continue;
      throw_errno(path_, fmt::format("writing {} bytes at offset {} of", chunk, offset), errno);
    }
    if (written == 0) throw_errno(path_, "writing", EIO);
    data = data.subspan(static_cast<std::size_t>(written));
    offset += static_cast<std::uint64_t>(written);
  }
}

void PosixFile::read_at(std::uint64_t offset, std::span<std::byte> data) const {
  const std::uint64_t wanted_end = offset + data.size();
  while (!data.empty()) {
    const std::size_t chunk = std::min<std::size_t>(data.size(), 1ULL << 30);
    const ssize_t got = ::pread(fd_, data.data(), chunk, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw_errno(path_, fmt::format("reading {} bytes at offset {} of", chunk, offset), errno);
    }
    if (got == 0) {
      throw FormatError(path_.string(), fmt::format("bytes [{}, {})", offset, wanted_end),
                        fmt::format("file '{}' is truncated: it ends at byte {} but bytes up "
                                    "to {} are expected",
                                    path_.string(), offset, wanted_end));
    }
    data = data.subspan(static_cast<std::size_t>(got));
    offset += static_cast<std::uint64_t>(got);
  }
}

void PosixFile::read_at(std::uint64_t offset, std::span<const std::span<std::byte>> pieces) const {
  std::uint64_t wanted_end = offset;
  for (const auto& piece : pieces) wanted_end += piece.size();
  std::vector<iovec> batch;
  std::size_t next = 0;     // first piece not yet in a batch
  std::size_t partial = 0;  // bytes of pieces[next] already read
  while (next < pieces.size()) {
    // Up to IOV_MAX buffers per call, the first one cut by what was read of it before.
    batch.clear();
    for (std::size_t k = next; k < pieces.size() && batch.size() < IOV_MAX; ++k) {
      const std::size_t skip = k == next ? partial : 0;
      if (pieces[k].size() == skip) continue;
      batch.push_back({pieces[k].data() + skip, pieces[k].size() - skip});
    }
    if (batch.empty()) break;
    const ssize_t got =
        ::preadv(fd_, batch.data(), static_cast<int>(batch.size()), static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw_errno(path_, fmt::format("reading {} pieces at offset {} of", batch.size(), offset),
                  errno);
    }
    if (got == 0) {
      throw FormatError(path_.string(), fmt::format("bytes [{}, {})", offset, wanted_end),
                        fmt::format("file '{}' is truncated: it ends at byte {} but bytes up "
                                    "to {} are expected",
                                    path_.string(), offset, wanted_end));
    }
    offset += static_cast<std::uint64_t>(got);
    // Moves past the bytes read: whole pieces, then part of the next one.
    auto left = static_cast<std::size_t>(got);
    while (next < pieces.size() && left >= pieces[next].size() - partial) {
      left -= pieces[next].size() - partial;
      partial = 0;
      ++next;
    }
    partial += left;
  }
}

void PosixFile::advise_will_need(std::uint64_t offset, std::uint64_t bytes) const noexcept {
  // Linux reads at most its readahead size (128 KiB by default) per advice: advise in steps
  // of that size, so that the whole range is read.
  constexpr std::uint64_t kStep = std::uint64_t{128} << 10;
  for (std::uint64_t at = offset; at < offset + bytes; at += kStep) {
    (void)::posix_fadvise(fd_, static_cast<off_t>(at),
                          static_cast<off_t>(std::min(kStep, offset + bytes - at)),
                          POSIX_FADV_WILLNEED);
  }
}

std::uint64_t PosixFile::size() const {
  struct stat info {};
  if (::fstat(fd_, &info) != 0) throw_errno(path_, "stat of", errno);
  return static_cast<std::uint64_t>(info.st_size);
}

void PosixFile::sync() {
  if (::fsync(fd_) != 0) throw_errno(path_, "fsync of", errno);
}

void PosixFile::close() {
  if (fd_ < 0) return;
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) throw_errno(path_, "closing", errno);
}

void write_file_durably(const std::filesystem::path& path, std::string_view text) {
  PosixFile file(path, PosixFile::Mode::write_new);
  file.write_at(0, std::as_bytes(std::span(text.data(), text.size())));
  file.sync();
  file.close();
}

std::string read_small_file(const std::filesystem::path& path, std::uint64_t max_bytes) {
  const PosixFile file(path, PosixFile::Mode::read);
  const std::uint64_t size = file.size();
  if (size > max_bytes) {
    throw FormatError(path.string(), "size",
                      fmt::format("file '{}' is {} bytes, more than the {} bytes cairn "
                                  "accepts for a metadata file",
                                  path.string(), size, max_bytes));
  }
  std::string text(static_cast<std::size_t>(size), '\0');
  file.read_at(0, std::as_writable_bytes(std::span(text.data(), text.size())));
  return text;
}

void sync_directory(const std::filesystem::path& path) {
  int fd = -1;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) throw_errno(path, "opening directory", errno);
  const int result = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  if (result != 0) throw_errno(path, "fsync of directory", error);
}

void create_directories(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) {
    throw IoError(path.string(),
                  fmt::format("creating directory '{}' failed: {}", path.string(), ec.message()));
  }
}

void require_inside(const std::filesystem::path& root, const std::filesystem::path& path) {
  std::error_code ec;
  const auto base = std::filesystem::weakly_canonical(root, ec);
  if (ec) return;  // the reads that follow report a root that cannot be resolved
  const auto target = std::filesystem::weakly_canonical(path, ec);
  if (ec) return;
  const auto relative = target.lexically_relative(base);
  if (!relative.empty() && *relative.begin() != "..") return;
  throw FormatError(path.string(), "symbolic link",
                    fmt::format("'{}' leads outside the checkpoint directory '{}' (to '{}') "
                                "through a symbolic link: cairn does not read data from outside "
                                "a checkpoint; put the file itself in its place",
                                path.string(), root.string(), target.string()));
}

void require_no_link_out(const std::filesystem::path& root) {
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_symlink(ec)) require_inside(root, it->path());
  }
  if (ec) {
    throw IoError(root.string(),
                  fmt::format("listing '{}' failed: {}", root.string(), ec.message()));
  }
}

}  // namespace cairn::storage
