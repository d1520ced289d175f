// cairn — the write side of a storage format (internal): what the storage engine asks of a
// format to store shards. A format only places and moves the bytes of shard streams (the
// row-major bytes of a shard's box, see shard_stream.hpp); validation, staging of device and
// strided data, checksums and the index are the engine's (engine/tree_writer.hpp).
//
// The life of a writer: its format row's open_writer (format_table.hpp, collective), then for each
// shard this rank writes place() once and write() any number of times (local, from any one thread
// at a time, so an async save writes from its background thread without MPI), flush() (local: this
// rank's bytes are durable), close() (collective: what the ranks share is closed).
#pragma once

#include <cairn/comm.hpp>
#include <cairn/storage.hpp>
#include <cairn/tree.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "storage/index/tree_index.hpp"

namespace cairn::storage {

/// The shard of one rank.
struct RankBox {
  int rank = 0;
  Box box;
};

/// One array leaf of a format, as it is stored (StoredArray) with this rank's share: the same
/// list, in the same (sorted path) order, on every rank.
struct ArrayToWrite : StoredArray {
  /// This rank's shard, or std::nullopt when this rank writes none of the leaf (no shard, or
  /// a replicated leaf written by another rank).
  std::optional<Box> box;
  /// Every writing rank's shard of the leaf, in rank order: the decomposition, which a format
  /// may record for external readers (hdf5's cairn_decomposition attribute). Filled on the
  /// primary only, the rank that writes a format's shared metadata; empty on the others.
  std::vector<RankBox> shards = {};
};

/// One non-array leaf that a format may store for external readers (hdf5 does when it is the
/// item's default format). The index holds every value whatever the format does.
struct ValueToWrite {
  std::string path;
  const Leaf* leaf = nullptr;
};

/// Where a shard's stream is stored: the `file` and `byte_offset` of its ShardRecord.
struct ShardPlacement {
  std::string file;
  std::uint64_t byte_offset = 0;
};

/// Stores the shards of the array leaves of one format in one item directory.
class ShardWriter {
 public:
  virtual ~ShardWriter() = default;
  /// Reserves the place of this rank's shard of array `index` (position in the list given to
  /// the writer was opened for), `bytes` long, and says where it is. Once per shard, before its
  /// write() calls. Local. Throws InvalidArgument when this rank has no shard of the array,
  /// the byte count is not the box's or the shard was placed before; IoError naming the file.
  virtual ShardPlacement place(std::size_t index, std::uint64_t bytes) = 0;
  /// Writes `data` at byte `first` of the stream of this rank's shard of array `index`
  /// (placed before); `first` and the size are whole elements. Local; one thread at a time.
  /// Throws IoError naming the file, InvalidArgument for a range outside the shard.
  virtual void write(std::size_t index, std::uint64_t first, std::span<const std::byte> data) = 0;
  /// Whether the engine hands this format the shard of array `index` compressed chunk by chunk
  /// (ArrayToWrite::compression; each checksum chunk compressed on its own), rather than its
  /// raw stream: then place() still takes the raw byte count, the stored size is known only
  /// once written, and write() appends the stored chunks one after the other (`first` is the
  /// stored bytes written so far). A format that compresses by itself (hdf5's filters), or
  /// an array without compression, says false. Local; never throws.
  [[nodiscard]] virtual bool stores_compressed_chunks(std::size_t /*index*/) const noexcept {
    return false;
  }
  /// After close(): the checksums of what a read of this rank's shard of array `index` gives
  /// back, one XXH3-64 per ArrayToWrite::chunk_bytes of its stream, when that differs
  /// from the stream written (lossy compression: hdf5's zfp filter, whose datasets return the
  /// decompressed values); the index records them in place of the stream's. std::nullopt: the
  /// stream's own checksums stand (every lossless format and leaf). Local; never throws beyond
  /// std::bad_alloc.
  [[nodiscard]] virtual std::optional<std::vector<std::uint64_t>> checksums_as_read(
      std::size_t /*index*/) const {
    return std::nullopt;
  }
  /// Ends this rank's writes and releases its own descriptors; no write() follows. With
  /// `fsync`, a format makes the writes durable here or in close() (hdf5, whose file is
  /// shared). Local. Throws IoError naming the file.
  virtual void flush(bool fsync) = 0;
  /// Closes what the ranks share and makes it durable when `fsync`. Collective over `comm`
  /// (the ranks of the Comm the writer was opened with; it may be another Comm over them, e.g. one
  /// for a background thread), after flush(); ranks must not skip it, even after a local
  /// failure. May throw IoError on some ranks only: the caller shares the verdict.
  virtual void close(const Comm& comm, bool fsync) = 0;
};

}  // namespace cairn::storage
