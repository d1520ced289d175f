// cairn — the geometry of a shard's stream (internal): a shard is stored and checksummed as
// the row-major sequence of the elements of its box (its stream). These helpers map ranges of
// that stream to boxes and to contiguous pieces of the row-major global array.
#pragma once

#include <cairn/box.hpp>

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace cairn::storage {

/// The elements [first, first + count) of the row-major stream of `box`, as boxes in global
/// coordinates, in stream order, each contiguous in the stream (at most 2 * rank - 1 of them).
/// A 0-d box gives itself for the range [0, 1). Not collective. Throws InvalidArgument when
/// the range is not inside the box.
[[nodiscard]] std::vector<Box> split_stream_range(const Box& box, std::int64_t first,
                                                  std::int64_t count);

/// Receives one contiguous piece: `count` elements that start at element `stream` of the
/// shard's stream and at element `global` of the row-major global array.
using StreamPieceFn =
    std::function<void(std::int64_t global, std::int64_t stream, std::int64_t count)>;

/// Calls `fn` for the maximal pieces of the stream range [first, first + count) of `box` that
/// are contiguous in the row-major array of `shape`, in stream order. Not collective. Throws
/// InvalidArgument when the range is not inside the box or the box not inside the shape, and
/// what `fn` throws.
void for_each_global_piece(std::span<const std::int64_t> shape, const Box& box, std::int64_t first,
                           std::int64_t count, const StreamPieceFn& fn);

/// The runs of `region` (inside `box`) in the stream of `box`: [begin, end) element ranges,
/// in stream order, each contiguous in the stream and in the region's own row-major order,
/// with the box of the region it holds. Not collective. Throws InvalidArgument when the
/// region is not inside the box.
struct StreamRun {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  Box part;  ///< the elements of the run, a box in global coordinates
};
[[nodiscard]] std::vector<StreamRun> stream_runs(const Box& box, const Box& region);
/// stream_runs(box, region).size(), computed without listing them. Not collective. Throws
/// InvalidArgument when the region is not inside the box.
[[nodiscard]] std::int64_t stream_run_count(const Box& box, const Box& region);

}  // namespace cairn::storage
