#include "base/posix_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cairn/error.hpp>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fmt/format.h>
#include <utility>
#include <vector>

#include "base/durable_file.hpp"
#include "base/log.hpp"

namespace cairn::base {

using base::throw_errno;

namespace {

std::atomic<std::uint64_t> written_behind{0};

int open_flags(PosixFile::Mode mode) noexcept {
  switch (mode) {
    case PosixFile::Mode::read: return O_RDONLY;
    case PosixFile::Mode::write_new: return O_WRONLY | O_CREAT | O_TRUNC;
    case PosixFile::Mode::write_existing: return O_WRONLY;
  }
  return O_RDONLY;
}

}  // namespace

PosixFile::PosixFile(std::filesystem::path path, Mode mode)
    : path_(std::move(path)),
      fd_(mode == Mode::read ? base::open_for_reading(path_)
                             : base::open_file(path_, open_flags(mode))) {}

PosixFile::~PosixFile() {
  if (fd_ >= 0 && ::close(fd_) != 0) {
    base::log::warn("file.close", "path=\"{}\" error=\"{}\"", path_.string(), std::strerror(errno));
  }
}

PosixFile::PosixFile(PosixFile&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      write_behind_bytes_(other.write_behind_bytes_),
      pending_begin_(other.pending_begin_),
      pending_end_(other.pending_end_),
      pending_bytes_(std::exchange(other.pending_bytes_, 0)) {}

PosixFile& PosixFile::operator=(PosixFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    write_behind_bytes_ = other.write_behind_bytes_;
    pending_begin_ = other.pending_begin_;
    pending_end_ = other.pending_end_;
    pending_bytes_ = std::exchange(other.pending_bytes_, 0);
  }
  return *this;
}

void PosixFile::write_at(std::uint64_t offset, std::span<const std::byte> data) {
  base::write_all_at(fd_, path_, offset, data);
  if (write_behind_bytes_ == 0 || data.empty()) return;
  // The range handed over covers every write since the last one, gaps included (writeback
  // skips pages that are not dirty), so that scattered small writes make one call per range.
  const std::uint64_t end = offset + data.size();
  pending_begin_ = pending_bytes_ == 0 ? offset : std::min(pending_begin_, offset);
  pending_end_ = pending_bytes_ == 0 ? end : std::max(pending_end_, end);
  pending_bytes_ += data.size();
  if (pending_bytes_ >= write_behind_bytes_) start_writeback();
}

void PosixFile::write_behind(std::uint64_t bytes) noexcept {
  start_writeback();
  write_behind_bytes_ = bytes;
}

void PosixFile::start_writeback() noexcept {
  if (fd_ >= 0 && pending_bytes_ > 0 &&
      ::sync_file_range(fd_, static_cast<off_t>(pending_begin_),
                        static_cast<off_t>(pending_end_ - pending_begin_),
                        SYNC_FILE_RANGE_WRITE) == 0) {
    written_behind.fetch_add(pending_bytes_, std::memory_order_relaxed);
  }
  pending_bytes_ = 0;
}

std::uint64_t written_behind_bytes() noexcept {
  return written_behind.load(std::memory_order_relaxed);
}

void PosixFile::read_at(std::uint64_t offset, std::span<std::byte> data) const {
  base::read_all_at(fd_, path_, offset, data);
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

}  // namespace cairn::base
