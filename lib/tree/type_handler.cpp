// cairn — helpers of the built-in type handlers (also for user handlers).
#include <cairn/type_handler.hpp>

#include "tree/quote.hpp"

#include <vector>

namespace cairn {
namespace {

std::string leaf_name(const Leaf& leaf) { return "leaf " + tree_detail::quote(leaf.path(), 200); }

void require_host(const Leaf& leaf, const ArrayShard& shard) {
  if (shard.memory != MemoryKind::host) {
    throw Unsupported(leaf_name(leaf) + " is in " + std::string(memory_kind_name(shard.memory)) +
                      " memory; copy it to the host before reading it into a C++ value");
  }
}

}  // namespace

void read_array_leaf(const Leaf& leaf, DType dtype, void* dst) {
  const ArrayShard& shard = leaf.as_array();
  require_host(leaf, shard);
  const std::int64_t n = shard.local_volume();
  if (n == 0) return;
  const auto count = static_cast<std::size_t>(n);
  const std::string what = leaf_name(leaf);
  if (shard.contiguous()) {
    convert(shard.dtype, shard.data, dtype, dst, count, what);
    return;
  }
  if (shard.dtype == dtype) {
    pack_strided(dtype_size(dtype), shard.data, shard.box.extent, shard.strides, dst);
    return;
  }
  std::vector<std::byte> packed(count * dtype_size(shard.dtype));
  pack_strided(dtype_size(shard.dtype), shard.data, shard.box.extent, shard.strides, packed.data());
  convert(shard.dtype, packed.data(), dtype, dst, count, what);
}

void read_scalar_leaf(const Leaf& leaf, DType dtype, void* out) {
  if (leaf.kind() == LeafKind::scalar) {
    const Scalar& s = leaf.as_scalar();
    convert(s.dtype(), s.data(), dtype, out, 1, leaf_name(leaf));
    return;
  }
  if (leaf.kind() == LeafKind::array) {
    const ArrayShard& shard = leaf.as_array();
    if (volume(shard.global_shape) == 1 && shard.local_volume() == 1) {
      read_array_leaf(leaf, dtype, out);
      return;
    }
    throw InvalidArgument(leaf_name(leaf) + " is an array of shape " +
                          shape_to_string(shard.global_shape) + " with local box " +
                          to_string(shard.box) + ", not a single " +
                          std::string(dtype_name(dtype)) + " value");
  }
  throw InvalidArgument(leaf_name(leaf) + " is " + std::string(leaf_kind_name(leaf.kind())) +
                        ", not a " + std::string(dtype_name(dtype)) + " value");
}

std::int64_t whole_1d_length(const Leaf& leaf) {
  const ArrayShard& shard = leaf.as_array();
  if (shard.global_shape.size() != 1) {
    throw InvalidArgument(leaf_name(leaf) + " has shape " + shape_to_string(shard.global_shape) +
                          "; a std::vector restores only from a 1-d array");
  }
  if (shard.box != whole_box(shard.global_shape)) {
    throw InvalidArgument(leaf_name(leaf) + " holds only the box " + to_string(shard.box) +
                          " of its global shape " + shape_to_string(shard.global_shape) +
                          "; restore the whole array to read it into a std::vector");
  }
  return shard.global_shape[0];
}

}  // namespace cairn
