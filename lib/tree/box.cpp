// cairn — box geometry and region copies.
#include <cairn/box.hpp>

#include <algorithm>
#include <cstring>
#include <limits>

namespace cairn {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

// offset + extent, or std::nullopt when it overflows (both are expected non-negative).
std::optional<std::int64_t> end_of(std::int64_t offset, std::int64_t extent) noexcept {
  if (offset < 0 || extent < 0 || extent > kMax - offset) return std::nullopt;
  return offset + extent;
}

void check_consistent(const Box& box, const char* what) {
  if (box.offset.size() != box.extent.size()) {
    throw InvalidArgument(std::string(what) + " box has " + std::to_string(box.offset.size()) +
                          " offsets but " + std::to_string(box.extent.size()) +
                          " extents; give one of each per dimension");
  }
}

// A dimension of a strided copy after dropping extents of 1 and merging contiguous ones.
struct Dim {
  std::int64_t extent;
  std::int64_t src_stride;
  std::int64_t dst_stride;
};

// Copies an `extent`-shaped block between two strided views (strides in elements). The
// innermost run is one memcpy when it is contiguous in both views.
void strided_copy(std::size_t elem_size, const std::byte* src,
                  std::span<const std::int64_t> src_strides, std::byte* dst,
                  std::span<const std::int64_t> dst_strides, std::span<const std::int64_t> extent) {
  std::vector<Dim> dims;  // innermost first
  for (std::size_t k = extent.size(); k-- > 0;) {
    if (extent[k] == 0) return;
    if (extent[k] == 1) continue;
    const Dim d{extent[k], src_strides[k], dst_strides[k]};
    if (!dims.empty()) {
      Dim& inner = dims.back();
      if (d.src_stride == inner.src_stride * inner.extent &&
          d.dst_stride == inner.dst_stride * inner.extent) {
        inner.extent *= d.extent;  // fits: the merged run lies inside both boxes
        continue;
      }
    }
    dims.push_back(d);
  }
  const auto es = static_cast<std::int64_t>(elem_size);
  if (dims.empty()) {  // 0-d or all extents 1
    std::memcpy(dst, src, elem_size);
    return;
  }
  std::size_t run_bytes = elem_size;
  std::size_t first_loop = 0;  // dims[first_loop..] are iterated one element at a time
  if (dims[0].src_stride == 1 && dims[0].dst_stride == 1) {
    run_bytes = static_cast<std::size_t>(dims[0].extent) * elem_size;
    first_loop = 1;
  }
  const std::size_t loops = dims.size() - first_loop;
  if (loops == 0) {
    std::memcpy(dst, src, run_bytes);
    return;
  }
  std::vector<std::int64_t> index(loops, 0);
  const std::byte* s = src;
  std::byte* d = dst;
  while (true) {
    std::memcpy(d, s, run_bytes);
    // Odometer over dims[first_loop..], innermost first.
    std::size_t k = 0;
    for (; k < loops; ++k) {
      const Dim& dim = dims[first_loop + k];
      if (++index[k] < dim.extent) {
        s += dim.src_stride * es;
        d += dim.dst_stride * es;
        break;
      }
      s -= (dim.extent - 1) * dim.src_stride * es;
      d -= (dim.extent - 1) * dim.dst_stride * es;
      index[k] = 0;
    }
    if (k == loops) return;
  }
}

void check_copy_args(std::size_t elem_size, const Box& src_box, const Box& dst_box,
                     const Box& region) {
  if (elem_size == 0) throw InvalidArgument("copy_region: elem_size must be positive");
  check_consistent(src_box, "copy_region: source");
  check_consistent(dst_box, "copy_region: destination");
  check_consistent(region, "copy_region: region");
  if (src_box.rank() != region.rank() || dst_box.rank() != region.rank()) {
    throw InvalidArgument("copy_region: the source box has " + std::to_string(src_box.rank()) +
                          " dimensions, the destination box " + std::to_string(dst_box.rank()) +
                          " and the region " + std::to_string(region.rank()) +
                          "; all three must have the same number");
  }
  if (!contains(src_box, region) || !contains(dst_box, region)) {
    throw InvalidArgument("copy_region: region " + to_string(region) +
                          " is not inside both the source box " + to_string(src_box) +
                          " and the destination box " + to_string(dst_box) +
                          "; intersect the boxes first");
  }
}

}  // namespace

Box whole_box(std::span<const std::int64_t> shape) {
  return Box{std::vector<std::int64_t>(shape.size(), 0),
             std::vector<std::int64_t>(shape.begin(), shape.end())};
}

std::string to_string(const Box& box) {
  std::string out = "[";
  const std::size_t n = std::min(box.offset.size(), box.extent.size());
  for (std::size_t k = 0; k < n; ++k) {
    if (k > 0) out += ", ";
    out += std::to_string(box.offset[k]);
    out += ':';
    if (const auto end = end_of(box.offset[k], box.extent[k])) {
      out += std::to_string(*end);
    } else {
      // offset + extent overflows: show the sum unevaluated.
      out += '(';
      out += std::to_string(box.offset[k]);
      out += '+';
      out += std::to_string(box.extent[k]);
      out += ')';
    }
  }
  if (box.offset.size() != box.extent.size()) out += " (mismatched offset/extent sizes)";
  return out + "]";
}

std::string shape_to_string(std::span<const std::int64_t> shape) {
  std::string out = "(";
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (k > 0) out += ", ";
    out += std::to_string(shape[k]);
  }
  return out + ")";
}

std::int64_t volume(std::span<const std::int64_t> extent) {
  if (extent.size() > kMaxDims) {
    throw InvalidArgument("an array has " + std::to_string(extent.size()) +
                          " dimensions; cairn supports at most " + std::to_string(kMaxDims));
  }
  std::int64_t product = 1;
  bool any_zero = false;
  for (const std::int64_t e : extent) {
    if (e < 0) {
      throw InvalidArgument("extent " + shape_to_string(extent) +
                            " has a negative entry; extents count elements and must be >= 0");
    }
    if (e == 0) {
      any_zero = true;
      continue;
    }
    if (product > kMax / e) {
      throw InvalidArgument("extent " + shape_to_string(extent) +
                            " has more elements than an int64 can count");
    }
    product *= e;
  }
  return any_zero ? 0 : product;
}

std::int64_t volume(const Box& box) {
  check_consistent(box, "the");
  return volume(box.extent);
}

bool is_empty(const Box& box) noexcept {
  return std::any_of(box.extent.begin(), box.extent.end(), [](std::int64_t e) { return e == 0; });
}

std::optional<std::string> box_problem(const Box& box, std::span<const std::int64_t> shape) {
  if (box.offset.size() != box.extent.size()) {
    return "it has " + std::to_string(box.offset.size()) + " offsets but " +
           std::to_string(box.extent.size()) + " extents";
  }
  if (box.rank() != shape.size()) {
    return "it has " + std::to_string(box.rank()) + " dimensions but the array has " +
           std::to_string(shape.size());
  }
  for (std::size_t k = 0; k < shape.size(); ++k) {
    const std::string dim = " in dimension " + std::to_string(k);
    if (shape[k] < 0) return "the array shape is negative" + dim;
    if (box.offset[k] < 0) return "the offset is negative" + dim;
    if (box.extent[k] < 0) return "the extent is negative" + dim;
    if (box.offset[k] > shape[k] - box.extent[k]) return "it ends past the array" + dim;
  }
  return std::nullopt;
}

void check_box_in_shape(const Box& box, std::span<const std::int64_t> shape,
                        std::string_view what) {
  if (auto problem = box_problem(box, shape)) {
    throw InvalidArgument("box " + to_string(box) + " of " + std::string(what) +
                          " does not fit the global shape " + shape_to_string(shape) + ": " +
                          *problem + "; give a box inside the global array");
  }
}

std::optional<Box> intersect(const Box& a, const Box& b) {
  check_consistent(a, "intersect: first");
  check_consistent(b, "intersect: second");
  if (a.rank() != b.rank()) {
    throw InvalidArgument("intersect: boxes " + to_string(a) + " and " + to_string(b) +
                          " have different numbers of dimensions");
  }
  Box out;
  out.offset.resize(a.rank());
  out.extent.resize(a.rank());
  for (std::size_t k = 0; k < a.rank(); ++k) {
    const auto a_end = end_of(a.offset[k], a.extent[k]);
    const auto b_end = end_of(b.offset[k], b.extent[k]);
    if (!a_end || !b_end) {
      throw InvalidArgument("intersect: box " + to_string(a_end ? b : a) +
                            " has a negative or overflowing offset or extent");
    }
    const std::int64_t lo = std::max(a.offset[k], b.offset[k]);
    const std::int64_t hi = std::min(*a_end, *b_end);
    if (hi <= lo) return std::nullopt;
    out.offset[k] = lo;
    out.extent[k] = hi - lo;
  }
  return out;
}

bool contains(const Box& outer, const Box& inner) noexcept {
  if (outer.offset.size() != outer.extent.size() || inner.offset.size() != inner.extent.size() ||
      outer.rank() != inner.rank()) {
    return false;
  }
  if (is_empty(inner)) return true;
  for (std::size_t k = 0; k < outer.rank(); ++k) {
    if (outer.offset[k] < 0 || outer.extent[k] < 0 || inner.offset[k] < 0 || inner.extent[k] < 0 ||
        inner.offset[k] < outer.offset[k]) {
      return false;
    }
    // Both sides are non-negative differences, so neither can overflow.
    if (inner.offset[k] - outer.offset[k] > outer.extent[k] - inner.extent[k]) return false;
  }
  return true;
}

std::vector<std::int64_t> row_major_strides(std::span<const std::int64_t> extent) {
  (void)volume(extent);  // validates and rules out overflow of every partial product below
  std::vector<std::int64_t> strides(extent.size(), 1);
  for (std::size_t k = extent.size(); k-- > 1;) {
    strides[k - 1] = strides[k] * std::max<std::int64_t>(extent[k], 1);
  }
  return strides;
}

void copy_region(std::size_t elem_size, const void* src, const Box& src_box, void* dst,
                 const Box& dst_box, const Box& region) {
  check_copy_args(elem_size, src_box, dst_box, region);
  copy_region(elem_size, src, src_box, row_major_strides(src_box.extent), dst, dst_box, region);
}

void copy_region(std::size_t elem_size, const void* src, const Box& src_box,
                 std::span<const std::int64_t> src_strides, void* dst, const Box& dst_box,
                 const Box& region) {
  check_copy_args(elem_size, src_box, dst_box, region);
  if (src_strides.size() != src_box.rank()) {
    throw InvalidArgument("copy_region: " + std::to_string(src_strides.size()) +
                          " source strides for a " + std::to_string(src_box.rank()) +
                          "-d box; give one stride per dimension");
  }
  if (is_empty(region)) return;
  const std::vector<std::int64_t> dst_strides = row_major_strides(dst_box.extent);
  const auto es = static_cast<std::int64_t>(elem_size);
  std::int64_t src_start = 0;
  std::int64_t dst_start = 0;
  for (std::size_t k = 0; k < region.rank(); ++k) {
    src_start += (region.offset[k] - src_box.offset[k]) * src_strides[k];
    dst_start += (region.offset[k] - dst_box.offset[k]) * dst_strides[k];
  }
  strided_copy(elem_size, static_cast<const std::byte*>(src) + src_start * es, src_strides,
               static_cast<std::byte*>(dst) + dst_start * es, dst_strides, region.extent);
}

namespace {

// The checks shared by pack_strided() and unpack_strided().
void check_strided_args(const char* function, std::size_t elem_size,
                        std::span<const std::int64_t> extent,
                        std::span<const std::int64_t> strides) {
  if (elem_size == 0) throw InvalidArgument(std::string(function) + ": elem_size must be positive");
  if (strides.size() != extent.size()) {
    throw InvalidArgument(std::string(function) + ": " + std::to_string(strides.size()) +
                          " strides for " + std::to_string(extent.size()) + " dimensions");
  }
}

}  // namespace

std::vector<Box> split_into_runs(const Box& box, std::int64_t max_elements) {
  if (max_elements < 1) {
    throw InvalidArgument("split_into_runs: max_elements must be at least 1, not " +
                          std::to_string(max_elements));
  }
  const std::int64_t total = volume(box);
  if (total == 0 && box.rank() > 0) return {};
  if (total <= max_elements) return {box};
  // The first dimension `split` whose rows (the elements of the dimensions after it) fit.
  const std::size_t n = box.rank();
  std::size_t split = n - 1;
  std::int64_t row = 1;  // elements of one row of `split`
  while (split > 0 && row * box.extent[split] <= max_elements) row *= box.extent[split--];
  const std::int64_t rows = std::min(max_elements / row, box.extent[split]);
  // Every index of the dimensions before `split`, row-major, then slabs of `rows` rows.
  std::vector<std::int64_t> outer(split, 0);
  std::vector<Box> runs;
  while (true) {
    for (std::int64_t first = 0; first < box.extent[split]; first += rows) {
      Box run = box;
      for (std::size_t d = 0; d < split; ++d) {
        run.offset[d] += outer[d];
        run.extent[d] = 1;
      }
      run.offset[split] += first;
      run.extent[split] = std::min(rows, box.extent[split] - first);
      runs.push_back(std::move(run));
    }
    std::size_t d = split;
    while (d > 0 && ++outer[d - 1] == box.extent[d - 1]) outer[--d] = 0;
    if (d == 0) break;
  }
  return runs;
}

void pack_strided(std::size_t elem_size, const void* src, std::span<const std::int64_t> extent,
                  std::span<const std::int64_t> strides, void* dst) {
  check_strided_args("pack_strided", elem_size, extent, strides);
  if (volume(extent) == 0 && !extent.empty()) return;
  strided_copy(elem_size, static_cast<const std::byte*>(src), strides, static_cast<std::byte*>(dst),
               row_major_strides(extent), extent);
}

void unpack_strided(std::size_t elem_size, const void* src, std::span<const std::int64_t> extent,
                    std::span<const std::int64_t> strides, void* dst) {
  check_strided_args("unpack_strided", elem_size, extent, strides);
  if (volume(extent) == 0 && !extent.empty()) return;
  strided_copy(elem_size, static_cast<const std::byte*>(src), row_major_strides(extent),
               static_cast<std::byte*>(dst), strides, extent);
}

}  // namespace cairn
