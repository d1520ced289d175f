#include "manager/levels/file_map.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cairn/error.hpp>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "base/durable_file.hpp"
#include "base/fault.hpp"
#include "base/log.hpp"

namespace cairn::levels {
namespace {

void close_quietly(int fd, const std::filesystem::path& path) {
  if (fd >= 0 && ::close(fd) != 0) {
    base::log::warn("file.close", "path=\"{}\" error=\"{}\"", path.string(), std::strerror(errno));
  }
}

}  // namespace

MappedFile::MappedFile(const std::filesystem::path& path, bool populate) : path_(path) {
  // O_NOFOLLOW refuses a link; open_for_reading() refuses a FIFO or any other file that is
  // not a regular one without waiting on it.
  const int fd = base::open_for_reading(path, O_NOFOLLOW);
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int error = errno;
    close_quietly(fd, path);
    base::throw_errno(path, "stat of", error);
  }
  size_ = static_cast<std::size_t>(info.st_size);
  if (size_ > 0) {
    void* at = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED | (populate ? MAP_POPULATE : 0), fd, 0);
    const int error = errno;
    close_quietly(fd, path);
    if (at == MAP_FAILED) base::throw_errno(path, "mapping", error);
    data_ = static_cast<const std::byte*>(at);
  } else {
    close_quietly(fd, path);
  }
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
}

const std::byte* MappedFile::at(std::uint64_t offset, std::uint64_t count) const {
  if (offset > size_ || count > size_ - offset) {
    throw FormatError(path_.string(), fmt::format("bytes {}-{}", offset, offset + count),
                      fmt::format("local file '{}' holds {} bytes, {} are needed at {}",
                                  path_.string(), size_, count, offset));
  }
  return data_ + offset;
}

MappedOutput::MappedOutput(const std::filesystem::path& path, std::size_t size)
    : path_(path), tmp_(path.string() + ".cairn-tmp"), size_(size) {
  fd_ = base::open_file(tmp_, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW);
  try {
    if (size_ > 0) {
      // Allocated now, so that a full file system fails here and not as SIGBUS on a write.
      int error = base::fault::error_at("storage.pwrite");
      if (error == 0) error = ::posix_fallocate(fd_, 0, static_cast<off_t>(size_));
      if (error != 0) {
        base::throw_errno(tmp_, fmt::format("allocating {} bytes for", size_), error);
      }
      void* at = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
      if (at == MAP_FAILED) base::throw_errno(tmp_, "mapping", errno);
      data_ = static_cast<std::byte*>(at);
    }
  } catch (...) {
    release();
    throw;
  }
}

MappedOutput::~MappedOutput() { release(); }

void MappedOutput::release() noexcept {
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = nullptr;
  if (fd_ >= 0) {
    close_quietly(fd_, tmp_);
    fd_ = -1;
    std::error_code ec;
    std::filesystem::remove(tmp_, ec);
  }
}

void MappedOutput::commit() {
  if (::fsync(fd_) != 0) base::throw_errno(tmp_, "fsync of", errno);
  if (data_ != nullptr && ::munmap(data_, size_) != 0) base::throw_errno(tmp_, "unmapping", errno);
  data_ = nullptr;
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) base::throw_errno(tmp_, "closing", errno);
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  if (ec) {
    std::filesystem::remove(tmp_, ec);
    throw IoError(path_.string(), fmt::format("renaming '{}' to '{}' failed: {}", tmp_.string(),
                                              path_.string(), ec.message()));
  }
  const auto parent = path_.parent_path();
  base::sync_directory(parent.empty() ? std::filesystem::path(".") : parent);
}

}  // namespace cairn::levels
