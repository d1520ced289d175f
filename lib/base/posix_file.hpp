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

/// An open file descriptor (RAII, move-only). The destructor closes without throwing.
class PosixFile {
 public:
  enum class Mode { read, write_new, write_existing };

  /// Opens `path`: `read` opens an existing file read-only; `write_new` creates or truncates
  /// it for writing (mode 0666 less the umask); `write_existing` opens an existing file for
  /// writing, keeping its content. Throws NotFound (read or write_existing, missing) or IoError.
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
  /// Size of the file in bytes. Throws IoError.
  [[nodiscard]] std::uint64_t size() const;
  /// Flushes data and metadata to stable storage. Throws IoError.
  void sync();
  /// Closes the descriptor, reporting a failed close. Throws IoError.
  void close();

  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

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
