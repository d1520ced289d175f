// cairn — one array leaf of a tree being saved, as the engine plans it (internal): its format,
// stored dtype, chunking, compression and this rank's share.
#pragma once

#include <cairn/storage.hpp>
#include <cairn/tree.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cairn::storage {

/// One array leaf of the tree being written.
struct ArrayJob {
  const Leaf* leaf = nullptr;
  StorageFormat format = StorageFormat::posix;
  bool writes = false;      ///< this rank writes a shard of it
  std::uint64_t bytes = 0;  ///< bytes of this rank's shard in memory (0 when it writes none)
  /// The dtype stored on disk (LeafSaveArgs::dtype, else the leaf's) and the bytes of this
  /// rank's shard in it; `cast` when it differs from the leaf's dtype.
  DType stored_dtype = DType::float64;
  std::uint64_t stored_bytes = 0;
  bool cast = false;
  /// Where this rank's shard lives: declared, or detected when asked (TreeSaveOptions).
  MemoryKind memory = MemoryKind::host;
  /// Bytes of a checksum chunk of the leaf (LeafSaveArgs::chunk_bytes, else
  /// TreeSaveOptions::checksum_chunk_bytes, in whole stored elements).
  std::uint64_t chunk_bytes = 1;
  /// Compression of the stored bytes (LeafSaveArgs::compression, else
  /// TreeSaveOptions::compression) and the hdf5 chunk shape (LeafSaveArgs::chunk_shape).
  Compression compression = {};
  std::vector<std::int64_t> chunk_shape = {};
  /// The position among the array leaves of its format: its index in that format's writer.
  std::size_t format_index = 0;
};

}  // namespace cairn::storage
