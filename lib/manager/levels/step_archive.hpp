// cairn — the part of a checkpoint step that one node keeps in its node-local directory, as one
// byte string (internal): what the redundancy of the node-local level (levels/redundancy.hpp)
// copies to other nodes or folds into parity, and what a rebuilt node unpacks again.
//
// Layout: the 8 bytes "CAIRNARC", then (lib/base/packed.hpp numbers) the version and the number
// of files, then per file, in the order of their relative paths: the path (length and bytes),
// the size, the XXH3-64 of the bytes (8 bytes), the bytes. Empty directories are not kept.
// The whole archive is held in memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace cairn::levels {

/// Every regular file under `dir`, at any depth, packed into one archive, sorted by relative
/// path so that the same files give the same bytes. Not collective. Throws NotFound when
/// `dir` does not exist, IoError naming the path of a symbolic link or special file (a node's
/// part of a step holds regular files only), of a directory that cannot be listed or of a file
/// that cannot be read, FormatError when a file shrinks while it is read.
[[nodiscard]] std::vector<std::byte> pack_directory(const std::filesystem::path& dir);

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
