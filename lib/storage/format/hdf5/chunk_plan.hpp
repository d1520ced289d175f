// cairn — the layout of the unfiltered array datasets of data.h5 (internal): contiguous, or
// chunked with one chunk per shard (see hdf5/writer.hpp).
#pragma once

#include <cairn/comm.hpp>

#include <cstdint>
#include <span>
#include <vector>

#include "storage/format/shard_writer.hpp"

namespace cairn::storage::h5 {

/// The chunk shape of each array of `arrays` (every rank's the same): empty for a contiguous
/// dataset. An array is chunked with one chunk per shard when some rank's shard is not a run
/// of the array (2-D blocks, column slabs: in a contiguous dataset such a shard is one piece
/// per row, written and read in small strided requests) and every shard is one chunk of a
/// regular grid (the largest shard's shape; shards start on chunk boundaries and span a chunk,
/// or reach the end of the array). A decomposition that is not a regular grid, a chunk of
/// 4 GiB or more (HDF5's limit) or more chunks than ranks keeps the dataset contiguous.
/// Filtered arrays (compressed, or with a chunk shape) are planned by plan_filtered_chunks().
/// Collective: at most two element-wise reductions over `comm`, whatever the number of arrays.
[[nodiscard]] std::vector<std::vector<std::int64_t>> plan_chunks(
    const Comm& comm, std::span<const ArrayToWrite> arrays);

}  // namespace cairn::storage::h5
