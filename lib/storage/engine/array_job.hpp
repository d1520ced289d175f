// cairn — one array leaf of a tree being saved, as the engine plans it (internal): its format,
// stored dtype, chunking, compression and this rank's share.
#pragma once

#include <cairn/storage.hpp>
#include <cairn/tree.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "storage/index/tree_index.hpp"

namespace cairn::storage {

/// One array leaf of the tree being written: how it is stored (StoredArray: the dtype stored
/// is LeafSaveArgs::dtype, else the leaf's; chunk_bytes LeafSaveArgs::chunk_bytes, else
/// TreeSaveOptions::checksum_chunk_bytes; compression and chunk_shape LeafSaveArgs', else the
/// tree's) and this rank's share of it.
struct ArrayJob : StoredArray {
  const Leaf* leaf = nullptr;
  bool writes = false;      ///< this rank writes a shard of it
  std::uint64_t bytes = 0;  ///< bytes of this rank's shard in memory (0 when it writes none)
  /// The bytes of this rank's shard in the stored dtype; `cast` when that differs from the
  /// leaf's dtype.
  std::uint64_t stored_bytes = 0;
  bool cast = false;
  /// Where this rank's shard lives: declared, or detected when asked (TreeSaveOptions).
  MemoryKind memory = MemoryKind::host;
  /// The position among the array leaves of its format: its index in that format's writer.
  std::size_t format_index = 0;
};

}  // namespace cairn::storage
