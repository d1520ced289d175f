// cairn — box geometry of array shards: volumes, intersections, containment, and copies of a
// region between row-major (or strided) buffers. Storage uses these for N->M restores.
//
// Conventions: a shape or extent lists elements per dimension, outermost first (row-major,
// C order). A box is the half-open region [offset, offset + extent) of a global array. A 0-d
// array has an empty shape; its only box has no dimensions and holds one element.
// Nothing in this header is collective, talks to MPI or touches device memory: pointers
// passed here must be host pointers.
#pragma once

#include <cairn/error.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cairn {

/// Largest number of dimensions of an array leaf.
inline constexpr std::size_t kMaxDims = 32;

/// A rectangular region of a global array: [offset, offset + extent) per dimension.
struct Box {
  std::vector<std::int64_t> offset = {};  ///< first index per dimension
  std::vector<std::int64_t> extent = {};  ///< number of elements per dimension (may be 0)

  /// Number of dimensions (offset.size(); the two vectors must have the same size).
  [[nodiscard]] std::size_t rank() const noexcept { return offset.size(); }
  /// Same offsets and extents. Never throws.
  friend bool operator==(const Box&, const Box&) = default;
};

/// The box covering a whole array of `shape` (offsets 0). Not collective; never throws beyond
/// std::bad_alloc.
[[nodiscard]] Box whole_box(std::span<const std::int64_t> shape);

/// "[o0:e0, o1:e1]" with e = offset + extent (half-open), "[]" for 0-d. Not collective.
[[nodiscard]] std::string to_string(const Box& box);
/// "(n0, n1)" for a shape or extent, "()" for 0-d. Not collective.
[[nodiscard]] std::string shape_to_string(std::span<const std::int64_t> shape);

/// Number of elements of `extent` (1 for 0-d). Not collective. Throws InvalidArgument when an
/// extent is negative, there are more than kMaxDims dimensions, or the product of the non-zero
/// extents overflows int64 (so that row-major strides always fit, even of an empty array).
[[nodiscard]] std::int64_t volume(std::span<const std::int64_t> extent);
/// volume(box.extent). Not collective. Throws InvalidArgument as volume(extent) and when the
/// offset and extent sizes differ.
[[nodiscard]] std::int64_t volume(const Box& box);

/// Whether any extent of `box` is 0 (a 0-d box is never empty). Not collective; never throws.
[[nodiscard]] bool is_empty(const Box& box) noexcept;

/// The problem with `box` as a box of an array of `shape`, or std::nullopt when it is fine:
/// the two have the same number of dimensions (offset and extent sizes included), offsets and
/// extents are non-negative and offset + extent <= shape in every dimension (checked without
/// overflow). Safe on any input. Not collective; never throws beyond std::bad_alloc.
[[nodiscard]] std::optional<std::string> box_problem(const Box& box,
                                                     std::span<const std::int64_t> shape);
/// Throws InvalidArgument naming `what` (e.g. "leaf 'fields/u' on rank 3"), the box, the shape
/// and the problem when box_problem() reports one. Not collective.
void check_box_in_shape(const Box& box, std::span<const std::int64_t> shape, std::string_view what);

/// The common region of `a` and `b`, or std::nullopt when it is empty. Two 0-d boxes
/// intersect in the 0-d box. Not collective. Throws InvalidArgument when the boxes have
/// different numbers of dimensions or mismatched offset/extent sizes.
[[nodiscard]] std::optional<Box> intersect(const Box& a, const Box& b);

/// Whether `inner` lies inside `outer` (an empty inner box of the right rank lies inside any
/// box). Not collective; never throws (boxes of different ranks give false).
[[nodiscard]] bool contains(const Box& outer, const Box& inner) noexcept;

/// Splits `box` into consecutive runs of its row-major buffer: boxes in global coordinates,
/// in buffer order, whose elements are contiguous in that buffer and together cover it once.
/// Each run holds at most `max_elements` elements and is as long as that allows: the runs are
/// slabs of whole rows of the first dimension whose rows fit, taken row by row of the
/// dimensions before it. An empty box gives no run, a 0-d box itself. Used to write a shard
/// in pieces no larger than a staging buffer. Not collective. Throws InvalidArgument when
/// `max_elements` is less than 1 or the box is inconsistent (see volume()).
[[nodiscard]] std::vector<Box> split_into_runs(const Box& box, std::int64_t max_elements);

/// Element strides of a row-major (C order) buffer of `extent`: the last is 1. Not collective.
/// Throws InvalidArgument when the volume overflows (see volume()).
[[nodiscard]] std::vector<std::int64_t> row_major_strides(std::span<const std::int64_t> extent);

/// Copies `region` from `src`, a row-major buffer holding `src_box`, into `dst`, a row-major
/// buffer holding `dst_box`. All three boxes are in global coordinates and `region` must lie
/// inside both boxes. Contiguous innermost runs are copied with memcpy (adjacent dimensions
/// that are contiguous in both buffers are merged first). 0-d boxes copy one element; an
/// empty region copies nothing. The buffers must not overlap. Not collective. Throws
/// InvalidArgument when elem_size is 0, the ranks differ, or region is not inside both boxes.
void copy_region(std::size_t elem_size, const void* src, const Box& src_box, void* dst,
                 const Box& dst_box, const Box& region);

/// As copy_region(), but `src` is a strided view of `src_box`: element (i0, i1, ...) of the
/// box (local indices) is at src + elem_size * sum(i_d * src_strides[d]). Strides are in
/// elements and may be any value (negative and zero included) as long as every addressed
/// element is inside the caller's allocation. Not collective. Throws InvalidArgument as
/// copy_region() and when src_strides.size() != src_box.rank().
void copy_region(std::size_t elem_size, const void* src, const Box& src_box,
                 std::span<const std::int64_t> src_strides, void* dst, const Box& dst_box,
                 const Box& region);

/// Packs a strided view into a contiguous row-major buffer: `extent` is the view's extent,
/// `strides` its element strides (as in the strided copy_region()), `dst` receives
/// volume(extent) elements. Not collective. Throws InvalidArgument when elem_size is 0, the
/// sizes of extent and strides differ, or the volume overflows.
void pack_strided(std::size_t elem_size, const void* src, std::span<const std::int64_t> extent,
                  std::span<const std::int64_t> strides, void* dst);

/// The inverse of pack_strided(): scatters volume(extent) row-major elements from `src` into
/// the strided view `dst` (strides in elements; the view's elements must not overlap). Not
/// collective. Throws InvalidArgument as pack_strided().
void unpack_strided(std::size_t elem_size, const void* src, std::span<const std::int64_t> extent,
                    std::span<const std::int64_t> strides, void* dst);

}  // namespace cairn
