// cairn — compression of stored chunks (internal): a shard stored compressed is cut into its
// checksum chunks (LeafRecord::chunk_bytes of raw row-major bytes), each compressed on its own
// and stored back to back; the index holds each chunk's stored size and the XXH3 of its stored
// bytes. zstd is lossless, its chunk's bytes shuffled first when Compression::shuffle (byte k
// of every element together, as HDF5's shuffle filter); zfp is a 1-D fixed-accuracy stream of the
// chunk's elements with a zfp header, so that a chunk decompresses without the tolerance it was
// written with.
#pragma once

#include <cairn/dtype.hpp>
#include <cairn/storage.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "storage/stream/checksum.hpp"

namespace cairn::storage {

/// "none", "zstd" or "zfp". Never throws.
[[nodiscard]] std::string_view compression_kind_name(Compression::Kind kind) noexcept;

/// "zstd level 3", "zfp absolute error 0.001", "zfp relative error 1e-06" or "none", for
/// messages and `cairn inspect`. Never throws beyond std::bad_alloc.
[[nodiscard]] std::string describe_compression(const Compression& compression);

/// Compresses `raw` (whole elements of `dtype`, at least one) with `compression` (validated:
/// zstd or zfp on float32/float64 with a positive bound) into `out`, which is resized to the
/// stored bytes. Not collective. Throws IoError naming `what` when the library fails,
/// Unsupported when this build lacks the library.
void compress_chunk(const Compression& compression, DType dtype, std::span<const std::byte> raw,
                    std::vector<std::byte>& out, std::string_view what);

/// The most bytes a shard of `raw_bytes` raw bytes of `dtype` can take stored in chunks of
/// `chunk_bytes` raw bytes (whole elements, at least one) compressed with `compression` (each
/// chunk's bound: ZSTD_compressBound, zfp_stream_maximum_size with its header; the raw bytes
/// without compression). Not collective. Throws Unsupported when this build lacks the library.
[[nodiscard]] std::uint64_t max_stored_bytes(const Compression& compression, DType dtype,
                                             std::uint64_t raw_bytes, std::uint64_t chunk_bytes);

/// Decompresses the stored bytes `stored` of one chunk into `raw`, which must come out exactly
/// filled. Not collective. Throws FormatError naming `file` and `what` when the bytes do not
/// decompress to raw.size() bytes, Unsupported when this build lacks the library.
void decompress_chunk(const Compression& compression, DType dtype,
                      std::span<const std::byte> stored, std::span<std::byte> raw,
                      const std::string& file, const std::string& what);

/// Compresses a shard's raw stream, handed over in pieces of any size (whole elements), chunk
/// by chunk: it holds at most one raw chunk and one compressed chunk in memory, hands each
/// compressed chunk to `write` as soon as it is made (unless `skip` says the chunk is stored
/// already: an incremental save), and keeps the stored sizes and checksums.
class ChunkCompressor {
 public:
  using Write = std::function<void(std::span<const std::byte> stored)>;
  /// Whether chunk `chunk`, whose stored bytes have XXH3-64 `checksum` and `size` bytes, need
  /// not be written.
  using Skip = std::function<bool(std::size_t chunk, std::uint64_t checksum, std::uint64_t size)>;
  /// `chunk_bytes`: raw bytes of a chunk (whole elements). `what` names the leaf in errors.
  ChunkCompressor(Compression compression, DType dtype, std::uint64_t chunk_bytes, std::string what,
                  Write write, Skip skip = {});
  /// Adds the next raw bytes. Throws as compress_chunk() and what `write` throws.
  void update(std::span<const std::byte> raw);
  /// Compresses the last, possibly shorter, chunk. Throws as update().
  void finish();
  /// Stored size and XXH3-64 of the stored bytes of each chunk, in order. Never throw.
  [[nodiscard]] const std::vector<std::uint64_t>& chunk_sizes() const noexcept { return sizes_; }
  [[nodiscard]] const std::vector<std::uint64_t>& checksums() const noexcept { return sums_; }
  /// Stored bytes of the chunks so far, those skipped included: the offset in the shard's
  /// stored bytes of the next chunk handed to `write`. Never throws.
  [[nodiscard]] std::uint64_t stored_bytes() const noexcept { return stored_; }

 private:
  void emit(std::size_t chunk, std::span<const std::byte> raw);

  Compression compression_;
  DType dtype_;
  std::string what_;
  Write write_;
  Skip skip_;
  ChunkCutter cutter_;
  std::vector<std::byte> out_;  // the last compressed chunk
  std::vector<std::uint64_t> sizes_;
  std::vector<std::uint64_t> sums_;
  std::uint64_t stored_ = 0;
};

}  // namespace cairn::storage
