// cairn — files of the node-local level mapped into memory (internal), so that a node's data is
// not copied in memory on its way between the local files and MPI: a local file read in place
// (the drain's arguments, a step's archive, a redundancy file) and a new file written in place
// (a redundancy file received or reduced over MPI).
//
// A file truncated by someone else while it is mapped raises SIGBUS on access: the local level
// maps only files of its own node-local directory. A file written in place has its whole size
// allocated first, so that a full file system is an IoError, not a SIGBUS.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>

namespace cairn::levels {

/// A read-only, shared map of a whole regular file; unmapped on destruction.
class MappedFile {
 public:
  /// Maps `path`, a regular file (not a link, FIFO or device); `populate` reads the pages in at
  /// once (MAP_POPULATE) for a file about to be read whole. Not collective. Throws FormatError
  /// naming the path when it is not a regular file, IoError naming it when it cannot be opened
  /// or mapped.
  explicit MappedFile(const std::filesystem::path& path, bool populate = false);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  /// The file's bytes (empty for an empty file). Never throws.
  [[nodiscard]] std::span<const std::byte> bytes() const noexcept { return {data_, size_}; }
  /// The `count` bytes at `offset`. Throws FormatError naming the file when it is shorter.
  [[nodiscard]] const std::byte* at(std::uint64_t offset, std::uint64_t count) const;

 private:
  std::filesystem::path path_;
  std::size_t size_ = 0;
  const std::byte* data_ = nullptr;
};

/// A new file of a fixed size, written in place through a shared map at `<path>.cairn-tmp`
/// and put at `path` by commit(). Destroyed uncommitted, it removes the temporary file.
class MappedOutput {
 public:
  /// Creates `<path>.cairn-tmp` (replacing a stale one) with `size` bytes allocated on the file
  /// system, all zero, and maps it. Not collective. Throws IoError naming the path when it
  /// cannot be created, its space cannot be allocated (a full file system) or it cannot be
  /// mapped.
  MappedOutput(const std::filesystem::path& path, std::size_t size);
  ~MappedOutput();
  MappedOutput(const MappedOutput&) = delete;
  MappedOutput& operator=(const MappedOutput&) = delete;

  /// The file's bytes, to fill. Never throws.
  [[nodiscard]] std::span<std::byte> bytes() noexcept { return {data_, size_}; }
  /// Flushes the bytes and the file to storage (fsync), unmaps it, renames it to `path`
  /// (replacing a file there) and syncs the directory. Call once. Not collective. Throws
  /// IoError naming the path.
  void commit();

 private:
  void release() noexcept;

  std::filesystem::path path_;
  std::filesystem::path tmp_;
  std::size_t size_ = 0;
  std::byte* data_ = nullptr;
  int fd_ = -1;
};

}  // namespace cairn::levels
