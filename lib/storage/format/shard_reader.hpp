// cairn — the read side of a storage format (internal): what the storage engine asks of a
// format to restore and verify shards. A format only moves bytes of shard streams (the
// row-major bytes of a shard's box, see shard_stream.hpp); planning, checksums and buffers
// are the engine's (restore_tree.cpp, verify_tree.cpp).
#pragma once

#include <cairn/comm.hpp>
#include <cairn/storage.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "storage/index/tree_index.hpp"

namespace cairn::storage {

/// The destination of a scattered read: buffers filled one after the other, so that the
/// bytes read land in the first, then the next, and so on (readv's iovecs).
using ScatterList = std::span<const std::span<std::byte>>;

/// Total size of `pieces`. Not collective; never throws.
[[nodiscard]] std::uint64_t scatter_bytes(ScatterList pieces) noexcept;
/// The part of `pieces` that holds bytes [offset, offset + bytes) of their concatenation (the
/// first and last buffers cut to fit). Not collective. Throws InvalidArgument when the range
/// is not inside `pieces`.
[[nodiscard]] std::vector<std::span<std::byte>> scatter_slice(ScatterList pieces,
                                                              std::uint64_t offset,
                                                              std::uint64_t bytes);

/// Reads the shards of the leaves of one format in one item directory. Opened collectively
/// (its format row's open_reader, then open() with the leaves); read() is local; one thread at a
/// time.
class ShardReader {
 public:
  virtual ~ShardReader() = default;
  /// Prepares `leaves` (array leaves stored in this format; the same list, in the same order,
  /// on every rank) for reading; leaves opened before are skipped. Collective over the Comm
  /// the reader was opened with. Throws, on every rank alike, FormatError naming the file and the
  /// leaf when its data does not match the index.
  virtual void open(std::span<const LeafRecord* const> leaves) = 0;
  /// Reads bytes [first, first + bytes) of the stream of `shard` of `leaf` (a leaf passed to
  /// its open()) into `dst`; `first` and `bytes` are whole elements. For a shard
  /// stored as compressed chunks (ShardRecord::compressed(), formats whose writer says
  /// stores_compressed_chunks()), the bytes are those of its stored chunks, back to back, and
  /// need not be whole elements; the engine decompresses them. Local. Throws
  /// NotFound (missing file), FormatError (file too short: truncated) or IoError, naming the
  /// file; InvalidArgument for a leaf not opened or a range outside the shard.
  virtual void read(const LeafRecord& leaf, const ShardRecord& shard, std::uint64_t first,
                    std::uint64_t bytes, std::byte* dst) = 0;
  /// Reads bytes [first, first + scatter_bytes(pieces)) of the stream of `shard` of `leaf` into
  /// `pieces`, in order (each piece whole elements), so that a target whose rows lie apart is
  /// filled without a copy through a buffer. Local. Throws as read(). The default calls read()
  /// piece by piece; a format overrides it where storage can scatter (readv).
  virtual void read_scattered(const LeafRecord& leaf, const ShardRecord& shard, std::uint64_t first,
                              ScatterList pieces);
  /// Hints that bytes [first, first + bytes) of the stream of `shard` of `leaf` (as for
  /// read()) will be read soon: the format starts reading from storage what holds them, in the
  /// background, so that the reads wait less and the storage sees large requests even where a
  /// shard's pieces lie apart in the file. Local. Throws as read() for a leaf not opened, a
  /// range outside the shard or a missing file; what storage does with the hint never throws.
  virtual void prefetch(const LeafRecord& leaf, const ShardRecord& shard, std::uint64_t first,
                        std::uint64_t bytes) = 0;
  /// Where bytes [first, first + bytes) of the stream of `shard` lie in its file, for messages
  /// ("file offsets [a, b)"); empty when the format cannot say it as one range. Local. Never
  /// throws beyond std::bad_alloc.
  [[nodiscard]] virtual std::string file_range(const LeafRecord& /*leaf*/,
                                               const ShardRecord& /*shard*/,
                                               std::uint64_t /*first*/,
                                               std::uint64_t /*bytes*/) const {
    return {};
  }
  /// Releases the format's files. Collective over the Comm the reader was opened with (destroying
  /// an open reader is too, and logs instead of throwing). Throws IoError naming the file.
  virtual void close() = 0;
};

}  // namespace cairn::storage
