#include "storage/stream/shard_stream.hpp"

#include <cairn/error.hpp>
#include <fmt/format.h>

namespace cairn::storage {
namespace {

// Appends the boxes of stream elements [a, b) of the sub-box of `box` whose dimensions before
// `dim` are fixed at `at` (global indices, already set in at.offset[0..dim)).
void split_from(const Box& box, std::size_t dim, Box& at, std::int64_t a, std::int64_t b,
                const std::vector<std::int64_t>& inner, std::vector<Box>& out) {
  if (a >= b) return;
  const std::int64_t n = box.extent[dim];
  if (a == 0 && b == n * inner[dim]) {
    Box whole = at;
    for (std::size_t d = dim; d < box.rank(); ++d) {
      whole.offset[d] = box.offset[d];
      whole.extent[d] = box.extent[d];
    }
    out.push_back(std::move(whole));
    return;
  }
  std::int64_t i0 = a / inner[dim];
  const std::int64_t r0 = a % inner[dim];
  const std::int64_t i1 = b / inner[dim];
  const std::int64_t r1 = b % inner[dim];
  const auto descend = [&](std::int64_t i, std::int64_t lo, std::int64_t hi) {
    at.offset[dim] = box.offset[dim] + i;
    at.extent[dim] = 1;
    split_from(box, dim + 1, at, lo, hi, inner, out);
  };
  if (i0 == i1) {
    descend(i0, r0, r1);
    return;
  }
  if (r0 != 0) descend(i0++, r0, inner[dim]);
  if (i1 > i0) {
    Box middle = at;
    middle.offset[dim] = box.offset[dim] + i0;
    middle.extent[dim] = i1 - i0;
    for (std::size_t d = dim + 1; d < box.rank(); ++d) {
      middle.offset[d] = box.offset[d];
      middle.extent[d] = box.extent[d];
    }
    out.push_back(std::move(middle));
  }
  if (r1 != 0) descend(i1, 0, r1);
}

void check_range(const Box& box, std::int64_t first, std::int64_t count) {
  if (first < 0 || count < 0 || first + count > volume(box)) {
    throw InvalidArgument(fmt::format("elements [{}, {}) are not inside the {} elements of box {}",
                                      first, first + count, volume(box), to_string(box)));
  }
}

}  // namespace

std::vector<Box> split_stream_range(const Box& box, std::int64_t first, std::int64_t count) {
  check_range(box, first, count);
  std::vector<Box> out;
  if (count == 0) return out;
  if (box.rank() == 0) {
    out.push_back(box);
    return out;
  }
  std::vector<std::int64_t> inner(box.rank(), 1);  // elements below one index of each dim
  for (std::size_t d = box.rank() - 1; d > 0; --d) inner[d - 1] = inner[d] * box.extent[d];
  Box at = box;
  split_from(box, 0, at, first, first + count, inner, out);
  return out;
}

void for_each_global_piece(std::span<const std::int64_t> shape, const Box& box, std::int64_t first,
                           std::int64_t count, const StreamPieceFn& fn) {
  check_range(box, first, count);
  check_box_in_shape(box, shape, "a shard");
  if (count == 0) return;
  const std::size_t rank = box.rank();
  if (rank == 0) {
    fn(0, first, count);
    return;
  }
  // Dimensions after `k` are whole in the array, so a unit (one index of every dimension
  // before k, the box's range of k) is contiguous in the array.
  std::size_t k = rank - 1;
  while (k > 0 && box.offset[k] == 0 && box.extent[k] == shape[k]) --k;
  const std::vector<std::int64_t> global_strides = row_major_strides(shape);
  std::int64_t unit = box.extent[k] * global_strides[k];
  // A box whole in dimension k too extends the unit over the next dimension out.
  std::vector<std::int64_t> outer_extent(box.extent.begin(), box.extent.begin() + k);
  const std::int64_t units = volume(std::span<const std::int64_t>(outer_extent));
  std::int64_t base = 0;
  for (std::size_t d = 0; d < rank; ++d) base += box.offset[d] * global_strides[d];
  std::vector<std::int64_t> index(k, 0);
  std::int64_t u = first / unit;
  // Position `index` at unit u.
  for (std::int64_t rest = u, d = static_cast<std::int64_t>(k) - 1; d >= 0; --d) {
    index[static_cast<std::size_t>(d)] = rest % box.extent[static_cast<std::size_t>(d)];
    rest /= box.extent[static_cast<std::size_t>(d)];
  }
  const std::int64_t end = first + count;
  std::int64_t at = first;
  std::int64_t run_global = -1;  // the piece being merged
  std::int64_t run_stream = 0;
  std::int64_t run_count = 0;
  for (; u < units && at < end; ++u) {
    std::int64_t unit_global = base;
    for (std::size_t d = 0; d < k; ++d) unit_global += index[d] * global_strides[d];
    const std::int64_t lo = at - u * unit;
    const std::int64_t hi = std::min(end - u * unit, unit);
    const std::int64_t g = unit_global + lo;
    if (run_count > 0 && run_global + run_count == g) {
      run_count += hi - lo;
    } else {
      if (run_count > 0) fn(run_global, run_stream, run_count);
      run_global = g;
      run_stream = at;
      run_count = hi - lo;
    }
    at += hi - lo;
    for (std::size_t d = k; d-- > 0;) {  // next unit
      if (++index[d] < box.extent[d]) break;
      index[d] = 0;
    }
  }
  if (run_count > 0) fn(run_global, run_stream, run_count);
}

namespace {

// The dimension whose range closes each run of `region` in the stream of `box`: dimensions
// after it are whole in the box, so one index of every dimension before it and the region's
// range of it are contiguous in the stream. Throws InvalidArgument when the region is not
// inside the box.
std::size_t run_dimension(const Box& box, const Box& region) {
  if (!contains(box, region)) {
    throw InvalidArgument(
        fmt::format("region {} is not inside box {}", to_string(region), to_string(box)));
  }
  std::size_t k = box.rank() == 0 ? 0 : box.rank() - 1;
  while (k > 0 && region.offset[k] == box.offset[k] && region.extent[k] == box.extent[k]) --k;
  return k;
}

}  // namespace

std::int64_t stream_run_count(const Box& box, const Box& region) {
  const std::size_t k = run_dimension(box, region);
  if (volume(region) == 0) return 0;
  return volume(std::span<const std::int64_t>(region.extent.data(), k));
}

std::vector<StreamRun> stream_runs(const Box& box, const Box& region) {
  const std::size_t k = run_dimension(box, region);
  std::vector<StreamRun> out;
  if (volume(region) == 0) return out;
  const std::size_t rank = box.rank();
  if (rank == 0) {
    out.push_back({0, 1, region});
    return out;
  }
  const std::vector<std::int64_t> strides = row_major_strides(box.extent);
  std::vector<std::int64_t> index(k, 0);
  std::vector<std::int64_t> outer(region.extent.begin(), region.extent.begin() + k);
  const std::int64_t runs = volume(std::span<const std::int64_t>(outer));
  const std::int64_t length = region.extent[k] * strides[k];
  out.reserve(static_cast<std::size_t>(runs));
  for (std::int64_t r = 0; r < runs; ++r) {
    Box part = region;
    std::int64_t begin = (region.offset[k] - box.offset[k]) * strides[k];
    for (std::size_t d = 0; d < k; ++d) {
      part.offset[d] = region.offset[d] + index[d];
      part.extent[d] = 1;
      begin += (part.offset[d] - box.offset[d]) * strides[d];
    }
    out.push_back({begin, begin + length, std::move(part)});
    for (std::size_t d = k; d-- > 0;) {
      if (++index[d] < region.extent[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

}  // namespace cairn::storage
