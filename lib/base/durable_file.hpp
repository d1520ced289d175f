// cairn — checked POSIX I/O for every layer (internal): descriptors opened, written and read
// with each call checked where it is made, and small files (metadata, markers, locks) written
// durably and read whole. A failure is an IoError naming the path and the errno text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace cairn::base {

/// Throws IoError naming `path`: "<what> '<path>' failed: <errno text of error>".
[[noreturn]] void throw_errno(const std::filesystem::path& path, std::string_view what, int error);

/// Opens `path` with open(2) `flags` (O_CLOEXEC added; mode 0666 less the umask when it
/// creates), retrying interrupted calls, and returns the descriptor. Not collective. Throws
/// NotFound when `path` does not exist and `flags` do not create it, else IoError.
[[nodiscard]] int open_file(const std::filesystem::path& path, int flags);

/// Opens the existing file `path` for reading without waiting on it and returns the
/// descriptor: open(2) with O_RDONLY | O_NONBLOCK | `extra_flags` (so that a FIFO or a device
/// in the file's place does not block the open), fstat, and a refusal of anything but a
/// regular file; O_NONBLOCK is then cleared for the reads. Every file cairn reads is opened
/// here or checked by require_regular_file(). Not collective. Throws NotFound when `path` does
/// not exist, FormatError naming the path and what it is when it is not a regular file (a
/// FIFO, a directory, a device, a socket), else IoError.
[[nodiscard]] int open_for_reading(const std::filesystem::path& path, int extra_flags = 0);
/// Checks that `path` (symbolic links followed) is a regular file, for a reader that opens it
/// itself (HDF5's H5Fopen): opens it as open_for_reading() does and closes it. Not collective.
/// Throws as open_for_reading().
void require_regular_file(const std::filesystem::path& path);

/// Writes all of `data` to descriptor `fd` of file `path` at byte `offset`, retrying short and
/// interrupted writes. The fault point storage.pwrite (an errno action) stands for a full or
/// failing disk. Not collective. Throws IoError.
void write_all_at(int fd, const std::filesystem::path& path, std::uint64_t offset,
                  std::span<const std::byte> data);
/// Reads exactly `data.size()` bytes from descriptor `fd` of file `path` at byte `offset`.
/// Not collective. Throws FormatError when the file ends first (truncated), IoError.
void read_all_at(int fd, const std::filesystem::path& path, std::uint64_t offset,
                 std::span<std::byte> data);

/// Writes `text` to `path` (create or truncate) and fsyncs it. Not collective. Throws IoError.
void write_file_durably(const std::filesystem::path& path, std::string_view text);
/// Reads a whole (small) file. Not collective. Throws NotFound or IoError; FormatError when
/// larger than `max_bytes` (protects against hostile files).
[[nodiscard]] std::string read_small_file(const std::filesystem::path& path,
                                          std::uint64_t max_bytes = 1ULL << 30);
/// Fsyncs a directory so that entries created or renamed in it are durable. Not collective.
/// Throws IoError.
void sync_directory(const std::filesystem::path& path);
/// Creates `path` and missing parents. Not collective. Throws IoError naming the path.
void create_directories(const std::filesystem::path& path);

}  // namespace cairn::base
