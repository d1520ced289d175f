// cairn — shard checksums (internal): XXH3-64 from libxxhash, printed as 16 hex digits, one per
// fixed-size chunk of a shard's row-major bytes (format version 2) or one per shard (version 1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cairn::storage {

/// Incremental XXH3-64 over a shard written or read in pieces. Not thread-safe.
class Checksum {
 public:
  Checksum();
  ~Checksum();
  Checksum(const Checksum&) = delete;
  Checksum& operator=(const Checksum&) = delete;

  void update(std::span<const std::byte> data);
  [[nodiscard]] std::uint64_t digest() const;
  /// Starts over, as a new Checksum. Never throws.
  void reset() noexcept;

 private:
  void* state_;
};

/// XXH3-64 of each consecutive `chunk_bytes`-byte chunk of a stream that arrives in pieces of
/// any size (the last chunk may be shorter). Not thread-safe.
class ChunkedChecksum {
 public:
  /// Throws InvalidArgument when `chunk_bytes` is 0.
  explicit ChunkedChecksum(std::uint64_t chunk_bytes);

  void update(std::span<const std::byte> data);
  /// The checksums of every chunk so far, the partial last one included. Never throws beyond
  /// std::bad_alloc.
  [[nodiscard]] std::vector<std::uint64_t> digests() const;
  /// Bytes received so far. Never throws.
  [[nodiscard]] std::uint64_t bytes() const noexcept { return total_; }

 private:
  std::uint64_t chunk_bytes_;
  std::uint64_t total_ = 0;
  std::uint64_t in_chunk_ = 0;  // bytes of the chunk being hashed
  Checksum current_;
  std::vector<std::uint64_t> done_;
};

/// Cuts a stream that arrives in pieces of any size into consecutive chunks of `chunk_bytes`
/// bytes (the last one possibly shorter, at finish()) and hands each whole chunk to `emit`
/// with its number and stream offset: straight from the piece when it holds the whole chunk,
/// otherwise from one chunk-sized buffer. Not thread-safe.
class ChunkCutter {
 public:
  using Emit =
      std::function<void(std::size_t chunk, std::uint64_t first, std::span<const std::byte> bytes)>;
  /// Throws InvalidArgument when `chunk_bytes` is 0.
  ChunkCutter(std::uint64_t chunk_bytes, Emit emit);
  /// Adds the next bytes. Throws what `emit` throws.
  void update(std::span<const std::byte> data);
  /// Emits the last, shorter chunk, if any. Throws what `emit` throws.
  void finish();
  /// Chunks emitted so far. Never throws.
  [[nodiscard]] std::size_t chunks() const noexcept { return chunks_; }

 private:
  void emit(std::span<const std::byte> bytes);

  std::uint64_t chunk_bytes_;
  Emit emit_;
  std::vector<std::byte> pending_;  // bytes of the chunk being filled
  std::size_t chunks_ = 0;
  std::uint64_t emitted_ = 0;
};

/// The chunk checksums of one buffer (ChunkedChecksum in one piece).
[[nodiscard]] std::vector<std::uint64_t> chunk_checksums_of(std::span<const std::byte> data,
                                                            std::uint64_t chunk_bytes);

/// Nanoseconds every thread of this process has spent hashing with the functions and classes
/// above, so far (for the time breakdown of a save or restore: the difference over it).
/// Never throws.
[[nodiscard]] std::uint64_t checksum_nanoseconds() noexcept;

/// XXH3-64 of one buffer.
[[nodiscard]] std::uint64_t checksum_of(std::span<const std::byte> data);
/// "0123456789abcdef".
[[nodiscard]] std::string checksum_to_hex(std::uint64_t value);
/// Parses 16 lower-case hex digits; std::nullopt on anything else.
[[nodiscard]] std::optional<std::uint64_t> checksum_from_hex(std::string_view text);

}  // namespace cairn::storage
