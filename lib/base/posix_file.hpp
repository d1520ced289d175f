// cairn — an open file with checked positioned I/O (internal): the shard files of the formats,
// the index, the handlers' blobs; and the checks that a checkpoint's files stay inside its
// directory.
//
// Every call that can fail is checked where it is made (base/durable_file.hpp) and turned into
// an IoError naming the path and the errno text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace cairn::base {

/// The range the formats' writers give write_behind() in a save that fsyncs. Measured on a
/// 2 GiB save of 4 ranks, interleaved with saves without write-behind: the hdf5 save, whose
/// ranks share one file, took 0.70 of the time, the posix save 0.75 (medians); 32 MiB ranges
/// gained nothing over 8 MiB.
inline constexpr std::uint64_t kWriteBehindBytes = std::uint64_t{8} << 20;

/// An open file descriptor (RAII, move-only). The destructor closes without throwing.
class PosixFile {
 public:
  enum class Mode { read, write_new, write_existing };

  /// Opens `path`: `read` opens an existing regular file read-only (base::open_for_reading(),
  /// which refuses a FIFO or any other kind of file without waiting on it); `write_new` creates or
  /// truncates it for writing (mode 0666 less the umask); `write_existing` opens an existing file
  /// for writing, keeping its content. Throws NotFound (read or write_existing, missing),
  /// FormatError (read, not a regular file) or IoError.
  PosixFile(std::filesystem::path path, Mode mode);
  ~PosixFile();
  PosixFile(PosixFile&& other) noexcept;
  PosixFile& operator=(PosixFile&& other) noexcept;
  PosixFile(const PosixFile&) = delete;
  PosixFile& operator=(const PosixFile&) = delete;

  /// Writes all of `data` at byte `offset`, retrying short writes. Throws IoError.
  void write_at(std::uint64_t offset, std::span<const std::byte> data);
  /// Reads exactly `data.size()` bytes at `offset`. Throws FormatError (file too short:
  /// truncated) or IoError.
  void read_at(std::uint64_t offset, std::span<std::byte> data) const;
  /// Reads exactly the total size of `pieces` at `offset` into them, one after the other
  /// (preadv, in batches of at most IOV_MAX buffers). Throws as read_at().
  void read_at(std::uint64_t offset, std::span<const std::span<std::byte>> pieces) const;
  /// Asks the kernel to start reading bytes [offset, offset + bytes) into the page cache in
  /// the background (posix_fadvise WILLNEED), so that reads of them soon after do not wait for
  /// storage. A hint: never throws, and a file system that ignores it reads as before.
  void advise_will_need(std::uint64_t offset, std::uint64_t bytes) const noexcept;
  /// Starts writing back to storage, in the background, what write_at() writes from now on:
  /// each time `bytes` more have been written, the range they span (sync_file_range,
  /// SYNC_FILE_RANGE_WRITE), so that the disk works while the caller still writes and the
  /// final sync() has less left to do. Writes not yet handed over are handed over first; 0
  /// turns it off. A hint: it never throws, and a file system without it writes back as
  /// before. The data is durable only after sync().
  void write_behind(std::uint64_t bytes) noexcept;
  /// Size of the file in bytes. Throws IoError.
  [[nodiscard]] std::uint64_t size() const;
  /// Flushes data and metadata to stable storage. Throws IoError.
  void sync();
  /// Closes the descriptor, reporting a failed close. Throws IoError.
  void close();

  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  // Hands the pending range to writeback.
  void start_writeback() noexcept;

  std::filesystem::path path_;
  int fd_ = -1;
  std::uint64_t write_behind_bytes_ = 0;  // 0: off
  std::uint64_t pending_begin_ = 0;       // the range of the writes not yet handed over
  std::uint64_t pending_end_ = 0;
  std::uint64_t pending_bytes_ = 0;  // bytes of those writes
};

/// Bytes this process has handed to writeback through PosixFile::write_behind() so far (all
/// files, all threads). Never throws.
[[nodiscard]] std::uint64_t written_behind_bytes() noexcept;

/// Checks that `path`, a file or directory under `root`, resolves to a place inside `root`:
/// neither it nor a directory between `root` and it is a symbolic link that leads out of
/// `root` (links inside `root` are allowed; `root` itself may be a link). Local. Throws
/// FormatError naming `path` and where it leads.
void require_inside(const std::filesystem::path& root, const std::filesystem::path& path);
/// require_inside() for every symbolic link under `root`, at any depth (links to directories
/// are not followed). Local. Throws FormatError naming the first link that leads out, IoError
/// when `root` cannot be listed.
void require_no_link_out(const std::filesystem::path& root);

}  // namespace cairn::base
