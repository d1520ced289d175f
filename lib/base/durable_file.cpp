#include "base/durable_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cairn/error.hpp>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <utility>

#include "base/fault.hpp"
#include "base/log.hpp"

namespace cairn::base {
namespace {

// A descriptor closed when it goes out of scope (the error of a close that matters is
// checked by close() first).
class Descriptor {
 public:
  Descriptor(const std::filesystem::path& path, int flags)
      : path_(path), fd_(open_file(path, flags)) {}
  // Takes over `fd`, an open descriptor of `path`.
  Descriptor(const std::filesystem::path& path, int fd, std::in_place_t /*adopt*/)
      : path_(path), fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0 && ::close(fd_) != 0) {
      log::warn("file.close", "path=\"{}\" error=\"{}\"", path_.string(), std::strerror(errno));
    }
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;

  [[nodiscard]] int get() const noexcept { return fd_; }
  // Hands the descriptor to the caller, who closes it.
  [[nodiscard]] int release() noexcept { return std::exchange(fd_, -1); }
  void close() {
    if (::close(std::exchange(fd_, -1)) != 0) throw_errno(path_, "closing", errno);
  }

 private:
  const std::filesystem::path& path_;
  int fd_;
};

// What a file that is not a regular one is, for the refusal.
const char* file_kind(mode_t mode) noexcept {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

void throw_errno(const std::filesystem::path& path, std::string_view what, int error) {
  throw IoError(path.string(),
                fmt::format("{} '{}' failed: {}", what, path.string(), std::strerror(error)));
}

int open_file(const std::filesystem::path& path, int flags) {
  int fd = -1;
  do {
    fd = ::open(path.c_str(), flags | O_CLOEXEC, 0666);  // the umask decides
  } while (fd < 0 && errno == EINTR);
  if (fd >= 0) return fd;
  const int error = errno;
  const bool creates = (flags & O_CREAT) != 0;
  if (!creates && error == ENOENT) {
    throw NotFound(path.string(), fmt::format("file '{}' does not exist", path.string()));
  }
  const bool writes = (flags & O_ACCMODE) != O_RDONLY;
  throw_errno(path,
              creates  ? "creating"
              : writes ? "opening for writing"
                       : "opening for reading",
              error);
}

int open_for_reading(const std::filesystem::path& path, int extra_flags) {
  Descriptor file(path, open_file(path, O_RDONLY | O_NONBLOCK | extra_flags), std::in_place);
  struct stat info {};
  if (::fstat(file.get(), &info) != 0) throw_errno(path, "stat of", errno);
  if (!S_ISREG(info.st_mode)) {
    throw FormatError(path.string(), "file type",
                      fmt::format("'{}' is {}, not a regular file: cairn reads only regular "
                                  "files; put the file itself in its place or restore from "
                                  "another checkpoint",
                                  path.string(), file_kind(info.st_mode)));
  }
  const int flags = ::fcntl(file.get(), F_GETFL);
  if (flags < 0 || ::fcntl(file.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) {
    throw_errno(path, "clearing O_NONBLOCK of", errno);
  }
  return file.release();
}

void require_regular_file(const std::filesystem::path& path) {
  const Descriptor file(path, open_for_reading(path), std::in_place);
}

void write_all_at(int fd, const std::filesystem::path& path, std::uint64_t offset,
                  std::span<const std::byte> data) {
  while (!data.empty()) {
    // Linux writes at most 0x7ffff000 bytes per call.
    const std::size_t chunk = std::min<std::size_t>(data.size(), 1ULL << 30);
    if (const int injected = fault::error_at("storage.pwrite")) {
      throw_errno(path, fmt::format("writing {} bytes at offset {} of", chunk, offset), injected);
    }
    const ssize_t written = ::pwrite(fd, data.data(), chunk, static_cast<off_t>(offset));
    if (written < 0) {
      if (errno == EINTR) continue;
      throw_errno(path, fmt::format("writing {} bytes at offset {} of", chunk, offset), errno);
    }
    if (written == 0) throw_errno(path, "writing", EIO);
    data = data.subspan(static_cast<std::size_t>(written));
    offset += static_cast<std::uint64_t>(written);
  }
}

void read_all_at(int fd, const std::filesystem::path& path, std::uint64_t offset,
                 std::span<std::byte> data) {
  const std::uint64_t wanted_end = offset + data.size();
  while (!data.empty()) {
    const std::size_t chunk = std::min<std::size_t>(data.size(), 1ULL << 30);
    const ssize_t got = ::pread(fd, data.data(), chunk, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw_errno(path, fmt::format("reading {} bytes at offset {} of", chunk, offset), errno);
    }
    if (got == 0) {
      throw FormatError(path.string(), fmt::format("bytes [{}, {})", offset, wanted_end),
                        fmt::format("file '{}' is truncated: it ends at byte {} but bytes up "
                                    "to {} are expected",
                                    path.string(), offset, wanted_end));
    }
    data = data.subspan(static_cast<std::size_t>(got));
    offset += static_cast<std::uint64_t>(got);
  }
}

void write_file_durably(const std::filesystem::path& path, std::string_view text) {
  Descriptor file(path, O_WRONLY | O_CREAT | O_TRUNC);
  write_all_at(file.get(), path, 0, std::as_bytes(std::span(text.data(), text.size())));
  if (::fsync(file.get()) != 0) throw_errno(path, "fsync of", errno);
  file.close();
}

std::string read_small_file(const std::filesystem::path& path, std::uint64_t max_bytes) {
  const Descriptor file(path, open_for_reading(path), std::in_place);
  struct stat info {};
  if (::fstat(file.get(), &info) != 0) throw_errno(path, "stat of", errno);
  const auto size = static_cast<std::uint64_t>(info.st_size);
  if (size > max_bytes) {
    throw FormatError(path.string(), "size",
                      fmt::format("file '{}' is {} bytes, more than the {} bytes cairn "
                                  "accepts for a metadata file",
                                  path.string(), size, max_bytes));
  }
  std::string text(static_cast<std::size_t>(size), '\0');
  read_all_at(file.get(), path, 0, std::as_writable_bytes(std::span(text.data(), text.size())));
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

}  // namespace cairn::base
