// cairn — the part of a checkpoint step that one node keeps in its node-local directory, as one
// byte string (internal): what the redundancy of the node-local level (levels/redundancy.hpp)
// copies to other nodes or folds into parity, and what a rebuilt node unpacks again.
//
// Layout: the 8 bytes "CAIRNARC", then (lib/base/packed.hpp numbers) the version and the number
// of files, then per file, in the order of their relative paths: the path (length and bytes),
// the size, the XXH3-64 of the bytes (8 bytes), the bytes. Empty directories are not kept.
// A node's own archive is never assembled in memory: map_directory() maps its files and
// describes the archive as the ranges it is made of (ArchiveBytes); a rebuilt archive arrives
// whole in memory and is unpacked from there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

namespace cairn::levels {

/// An archive as the byte ranges it is made of, in order, and what keeps them alive; copies
/// share the ranges. The XXH3-64 of the whole is computed once.
class ArchiveBytes {
 public:
  /// The empty archive (no bytes at all, not an archive of no files). Never throws.
  ArchiveBytes() = default;
  /// `bytes` as one range, which the caller keeps alive as long as this and its copies.
  /// Computes the checksum. Never throws beyond std::bad_alloc.
  explicit ArchiveBytes(std::span<const std::byte> bytes);
  /// `parts` kept alive by `owner`, whose concatenation has the XXH3-64 `checksum`. Never
  /// throws beyond std::bad_alloc.
  ArchiveBytes(std::vector<std::span<const std::byte>> parts, std::shared_ptr<const void> owner,
               std::uint64_t checksum);

  /// Bytes in all. Never throws.
  [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
  /// XXH3-64 of all the bytes (archive_checksum() of them laid end to end). Never throws.
  [[nodiscard]] std::uint64_t checksum() const noexcept { return checksum_; }
  /// The ranges, in order; none is empty. Never throws.
  [[nodiscard]] std::span<const std::span<const std::byte>> parts() const noexcept {
    return parts_;
  }
  /// What keeps the ranges alive (null when the caller does). Never throws.
  [[nodiscard]] const std::shared_ptr<const void>& owner() const noexcept { return owner_; }
  /// Copies the bytes from `offset` on into `out`, zeros past the end. Never throws.
  void copy(std::uint64_t offset, std::span<std::byte> out) const noexcept;

 private:
  std::vector<std::span<const std::byte>> parts_;
  std::shared_ptr<const void> owner_;
  std::uint64_t size_ = 0;
  std::uint64_t checksum_ = 0;
};

/// The archive of every regular file under `dir`, at any depth, sorted by relative path so
/// that the same files give the same bytes; the files are mapped, not read, and each is hashed
/// once. The files must not change while the archive is in use. Not collective. Throws
/// NotFound when `dir` does not exist, IoError naming the path of a symbolic link or special
/// file (a node's part of a step holds regular files only), of a directory that cannot be
/// listed or of a file that cannot be mapped.
[[nodiscard]] ArchiveBytes map_directory(const std::filesystem::path& dir);

/// Writes the files of `archive` under `dir`, which must not exist: the whole archive is
/// checked first (magic, version, bounds, relative paths without "." or ".." parts, every
/// file's XXH3), then the files are written into `<dir>.cairn-tmp` (a stale one is removed),
/// each file and directory is fsynced, and the directory is renamed to `dir` and its parent
/// fsynced. Not collective. Throws InvalidArgument when `dir` exists or has no final
/// component, FormatError naming what is wrong when the archive is damaged or hostile (nothing
/// is written then), IoError.
void unpack_directory(std::span<const std::byte> archive, const std::filesystem::path& dir);

/// The XXH3-64 of `archive`: what the redundancy of a step records to check a rebuilt archive.
/// Not collective; never throws.
[[nodiscard]] std::uint64_t archive_checksum(std::span<const std::byte> archive) noexcept;

}  // namespace cairn::levels
