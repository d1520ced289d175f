// cairn C ABI — array trees: building them, and reading leaves back.
#include <boost/json/serialize.hpp>
#include <cairn/box.hpp>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "capi/handles.hpp"
#include "capi/options.hpp"
#include "capi/status.hpp"

using cairn::capi::deref;
using cairn::capi::guarded;
using cairn::capi::out_param;
using cairn::capi::text;

namespace {

static_assert(static_cast<int>(cairn::LeafKind::array) == CAIRN_LEAF_ARRAY &&
              static_cast<int>(cairn::LeafKind::scalar) == CAIRN_LEAF_SCALAR &&
              static_cast<int>(cairn::LeafKind::string) == CAIRN_LEAF_STRING &&
              static_cast<int>(cairn::LeafKind::json) == CAIRN_LEAF_JSON);

const cairn::Leaf& leaf_at(const cairn_tree* tree, const char* path) {
  return deref(tree, "tree").tree.at(text(path, "path"));
}

// The caller's logicals of `leaf` as bools (0 or 1) into `out`.
void logicals_to_bools(const cairn_tree::LogicalLeaf& leaf, std::uint8_t* out) {
  const auto count = static_cast<std::size_t>(cairn::volume(leaf.extent));
  std::vector<std::byte> packed(count * leaf.elem_size);
  cairn::pack_strided(leaf.elem_size, leaf.data, leaf.extent, leaf.strides, packed.data());
  for (std::size_t i = 0; i < count; ++i) {
    const std::byte* element = packed.data() + i * leaf.elem_size;
    out[i] = std::any_of(element, element + leaf.elem_size,
                         [](std::byte b) { return b != std::byte{0}; })
                 ? 1
                 : 0;
  }
}

// `count` bools from `in` as integers of type Int (1 or 0) at `out`.
template <class Int>
void bools_to(const std::uint8_t* in, std::size_t count, std::byte* out) {
  for (std::size_t i = 0; i < count; ++i) {
    const Int value = in[i] != 0 ? 1 : 0;
    std::memcpy(out + i * sizeof(Int), &value, sizeof(Int));
  }
}

// Writes `in` (bools) to the caller's logicals of `leaf`: 1 for true, 0 for false.
void bools_to_logicals(const std::uint8_t* in, const cairn_tree::LogicalLeaf& leaf) {
  const auto count = static_cast<std::size_t>(cairn::volume(leaf.extent));
  std::vector<std::byte> packed(count * leaf.elem_size);
  switch (leaf.elem_size) {
    case 1: bools_to<std::int8_t>(in, count, packed.data()); break;
    case 2: bools_to<std::int16_t>(in, count, packed.data()); break;
    case 4: bools_to<std::int32_t>(in, count, packed.data()); break;
    default: bools_to<std::int64_t>(in, count, packed.data()); break;
  }
  cairn::unpack_strided(leaf.elem_size, packed.data(), leaf.extent, leaf.strides, leaf.data);
}

}  // namespace

cairn::ArrayTree cairn_tree::to_save() const {
  if (logical.empty()) return tree;
  cairn::ArrayTree copy;
  for (const cairn::Leaf& leaf : tree) {
    switch (leaf.kind()) {
      case cairn::LeafKind::array: {
        const auto converted =
            std::find_if(logical.begin(), logical.end(),
                         [&](const LogicalLeaf& l) { return l.path == leaf.path(); });
        if (converted == logical.end()) {
          copy.add_array(leaf.path(), leaf.as_array(), leaf.owner());
          break;
        }
        cairn::ArrayShard shard = leaf.as_array();
        std::shared_ptr<std::uint8_t[]> bools(
            new std::uint8_t[static_cast<std::size_t>(shard.local_volume())]);
        logicals_to_bools(*converted, bools.get());
        shard.data = bools.get();
        copy.add_array(leaf.path(), std::move(shard), std::move(bools));
        break;
      }
      case cairn::LeafKind::scalar: copy.add_scalar(leaf.path(), leaf.as_scalar()); break;
      case cairn::LeafKind::string: copy.add_string(leaf.path(), leaf.as_string()); break;
      case cairn::LeafKind::json: copy.add_json(leaf.path(), leaf.as_json()); break;
    }
  }
  return copy;
}

void cairn_tree::before_restore() {
  for (const LogicalLeaf& leaf : logical) {
    logicals_to_bools(leaf, static_cast<std::uint8_t*>(tree.at(leaf.path).as_array().data));
  }
}

void cairn_tree::after_restore() {
  for (const LogicalLeaf& leaf : logical) {
    bools_to_logicals(static_cast<const std::uint8_t*>(tree.at(leaf.path).as_array().data), leaf);
  }
}

extern "C" {

cairn_status cairn_array_desc_init(cairn_array_desc* desc, size_t struct_size) {
  return guarded(__func__, [&] {
    cairn::capi::init_options(desc, struct_size, cairn::capi::default_array_desc(), "desc");
  });
}

cairn_status cairn_tree_create(cairn_tree** out) {
  return guarded(__func__, [&] {
    out_param(out, "out");
    *out = new cairn_tree();
  });
}

void cairn_tree_free(cairn_tree* tree) { delete tree; }

cairn_status cairn_tree_add_array(cairn_tree* tree, const char* path, int dtype, int ndim,
                                  const int64_t* global_dims, const int64_t* offset,
                                  const int64_t* local_dims, void* data, int flags) {
  return guarded(__func__, [&] {
    if ((flags & ~(CAIRN_ARRAY_REPLICATED | CAIRN_ARRAY_FORTRAN_ORDER)) != 0) {
      throw cairn::InvalidArgument(
          "unknown flags " + std::to_string(flags) +
          ": use 0, CAIRN_ARRAY_REPLICATED and/or CAIRN_ARRAY_FORTRAN_ORDER");
    }
    cairn_array_desc desc = cairn::capi::default_array_desc();
    desc.dtype = dtype;
    desc.ndim = ndim;
    desc.global_dims = global_dims;
    desc.offset = offset;
    desc.local_dims = local_dims;
    desc.data = data;
    desc.replicated = (flags & CAIRN_ARRAY_REPLICATED) != 0;
    desc.fortran_order = (flags & CAIRN_ARRAY_FORTRAN_ORDER) != 0;
    auto& t = deref(tree, "tree").tree;
    t.add_array(text(path, "path"), cairn::capi::shard_from_c(desc));
  });
}

cairn_status cairn_tree_add_array_desc(cairn_tree* tree, const char* path,
                                       const cairn_array_desc* desc) {
  return guarded(__func__, [&] {
    if (desc == nullptr) throw cairn::InvalidArgument("desc is NULL");
    const auto full = cairn::capi::read_options(desc, cairn::capi::default_array_desc(), "desc");
    auto& t = deref(tree, "tree").tree;
    t.add_array(text(path, "path"), cairn::capi::shard_from_c(full));
  });
}

cairn_status cairn_tree_add_logical_array(cairn_tree* tree, const char* path, size_t elem_size,
                                          const cairn_array_desc* desc) {
  return guarded(__func__, [&] {
    auto& t = deref(tree, "tree");
    if (desc == nullptr) throw cairn::InvalidArgument("desc is NULL");
    if (elem_size != 1 && elem_size != 2 && elem_size != 4 && elem_size != 8) {
      throw cairn::InvalidArgument("elem_size is " + std::to_string(elem_size) +
                                   "; logicals are stored in 1, 2, 4 or 8 bytes");
    }
    const auto full = cairn::capi::read_options(desc, cairn::capi::default_array_desc(), "desc");
    if (full.dtype != CAIRN_BOOL) {
      throw cairn::InvalidArgument(
          "desc->dtype must be CAIRN_BOOL, the dtype a logical array is "
          "saved as");
    }
    if (full.memory != CAIRN_MEMORY_HOST) {
      throw cairn::InvalidArgument("a logical array must be in host memory");
    }
    cairn::ArrayShard shard = cairn::capi::shard_from_c(full);
    const std::string name(text(path, "path"));
    cairn_tree::LogicalLeaf leaf{.path = name,
                                 .data = shard.data,
                                 .elem_size = elem_size,
                                 .extent = shard.box.extent,
                                 .strides = shard.strides.empty()
                                                ? cairn::row_major_strides(shard.box.extent)
                                                : shard.strides};
    const auto count = static_cast<std::size_t>(cairn::volume(shard.box.extent));
    if (count > 0 && shard.data == nullptr) {
      throw cairn::InvalidArgument("leaf '" + name + "': data is NULL");
    }
    std::shared_ptr<std::uint8_t[]> bools(new std::uint8_t[std::max<std::size_t>(count, 1)]());
    shard.data = bools.get();
    shard.strides.clear();
    t.tree.add_array(name, std::move(shard), bools);
    t.logical.push_back(std::move(leaf));
    logicals_to_bools(t.logical.back(), bools.get());
  });
}

cairn_status cairn_tree_add_scalar(cairn_tree* tree, const char* path, int dtype,
                                   const void* value) {
  return guarded(__func__, [&] {
    auto& t = deref(tree, "tree").tree;
    if (value == nullptr) throw cairn::InvalidArgument("value is NULL");
    t.add_scalar(text(path, "path"), cairn::Scalar(cairn::capi::dtype_from_c(dtype), value));
  });
}

cairn_status cairn_tree_add_string(cairn_tree* tree, const char* path, const char* value) {
  return guarded(__func__, [&] {
    auto& t = deref(tree, "tree").tree;
    t.add_string(text(path, "path"), std::string(text(value, "value")));
  });
}

cairn_status cairn_tree_add_json(cairn_tree* tree, const char* path, const char* json_text) {
  return guarded(__func__, [&] {
    auto& t = deref(tree, "tree").tree;
    t.add_json(text(path, "path"), cairn::capi::parse_json(json_text, "json_text"));
  });
}

cairn_status cairn_tree_leaf_count(const cairn_tree* tree, size_t* count) {
  return guarded(__func__, [&] { *out_param(count, "count") = deref(tree, "tree").tree.size(); });
}

cairn_status cairn_tree_leaf_path(const cairn_tree* tree, size_t index, char** path) {
  return guarded(__func__, [&] {
    out_param(path, "path");
    const auto& t = deref(tree, "tree").tree;
    if (index >= t.size()) {
      throw cairn::NotFound(std::to_string(index), "leaf index " + std::to_string(index) +
                                                       " is past the last of " +
                                                       std::to_string(t.size()) + " leaves");
    }
    *path = cairn::capi::copy_out((t.begin() + static_cast<std::ptrdiff_t>(index))->path());
  });
}

cairn_status cairn_tree_leaf_kind(const cairn_tree* tree, const char* path, int* kind) {
  return guarded(__func__, [&] {
    out_param(kind, "kind");
    *kind = static_cast<int>(leaf_at(tree, path).kind());
  });
}

cairn_status cairn_tree_array_info(const cairn_tree* tree, const char* path, int* dtype, int* ndim,
                                   int capacity, int64_t* global_dims, int64_t* offset,
                                   int64_t* local_dims, int* replicated) {
  return guarded(__func__, [&] {
    const auto& shard = leaf_at(tree, path).as_array();
    const auto n = static_cast<int>(shard.global_shape.size());
    const bool wants_dims = global_dims != nullptr || offset != nullptr || local_dims != nullptr;
    if (wants_dims && n > capacity) {
      throw cairn::InvalidArgument("leaf '" + std::string(path) + "' has " + std::to_string(n) +
                                   " dimensions but the arrays hold only " +
                                   std::to_string(capacity));
    }
    if (dtype != nullptr) *dtype = cairn::capi::dtype_to_c(shard.dtype);
    if (ndim != nullptr) *ndim = n;
    for (int d = 0; d < n && wants_dims; ++d) {
      const auto i = static_cast<std::size_t>(d);
      if (global_dims != nullptr) global_dims[d] = shard.global_shape[i];
      if (offset != nullptr) offset[d] = shard.box.offset[i];
      if (local_dims != nullptr) local_dims[d] = shard.box.extent[i];
    }
    if (replicated != nullptr) *replicated = shard.replicated ? 1 : 0;
  });
}

cairn_status cairn_tree_read_array(const cairn_tree* tree, const char* path, int dtype,
                                   void* buffer, size_t size) {
  return guarded(__func__, [&] {
    const auto& shard = leaf_at(tree, path).as_array();
    const auto to = cairn::capi::dtype_from_c(dtype);
    const auto count = static_cast<std::size_t>(shard.local_volume());
    const std::size_t needed = count * cairn::dtype_size(to);
    if (size != needed) {
      throw cairn::InvalidArgument(
          "leaf '" + std::string(path) + "': the buffer has " + std::to_string(size) +
          " bytes but this rank's box of " + std::to_string(count) + " " +
          std::string(cairn::dtype_name(to)) + " elements needs " + std::to_string(needed));
    }
    if (count == 0) return;
    if (buffer == nullptr) throw cairn::InvalidArgument("buffer is NULL");
    if (shard.memory != cairn::MemoryKind::host) {
      throw cairn::Unsupported("leaf '" + std::string(path) +
                               "' is in device memory; read it with the device API");
    }
    if (!shard.contiguous()) {
      // A strided view: pack it first, then convert.
      std::vector<std::byte> packed(count * cairn::dtype_size(shard.dtype));
      cairn::pack_strided(cairn::dtype_size(shard.dtype), shard.data, shard.box.extent,
                          shard.strides, packed.data());
      cairn::convert(shard.dtype, packed.data(), to, buffer, count, path);
      return;
    }
    cairn::convert(shard.dtype, shard.data, to, buffer, count, path);
  });
}

cairn_status cairn_tree_get_scalar(const cairn_tree* tree, const char* path, int dtype,
                                   void* value) {
  return guarded(__func__, [&] {
    const auto& scalar = leaf_at(tree, path).as_scalar();
    const auto to = cairn::capi::dtype_from_c(dtype);
    cairn::convert(scalar.dtype(), scalar.data(), to, out_param(value, "value"), 1, path);
  });
}

cairn_status cairn_tree_get_string(const cairn_tree* tree, const char* path, char** value) {
  return guarded(__func__, [&] {
    out_param(value, "value");
    *value = cairn::capi::copy_out(leaf_at(tree, path).as_string());
  });
}

cairn_status cairn_tree_get_json(const cairn_tree* tree, const char* path, char** json_text) {
  return guarded(__func__, [&] {
    out_param(json_text, "json_text");
    *json_text = cairn::capi::copy_out(boost::json::serialize(leaf_at(tree, path).as_json()));
  });
}

cairn_status cairn_tree_add_empty(cairn_tree* tree, const char* path, int kind) {
  return guarded(__func__, [&] {
    auto& t = deref(tree, "tree");
    const auto p = text(path, "path");
    if (kind != CAIRN_EMPTY_GROUP && kind != CAIRN_EMPTY_LIST) {
      throw cairn::InvalidArgument("empty node '" + std::string(p) + "': kind " +
                                   std::to_string(kind) +
                                   " is neither CAIRN_EMPTY_GROUP nor CAIRN_EMPTY_LIST");
    }
    t.tree.add_empty(p,
                     kind == CAIRN_EMPTY_LIST ? cairn::EmptyNode::list : cairn::EmptyNode::group);
  });
}

cairn_status cairn_tree_empty_count(const cairn_tree* tree, size_t* count) {
  return guarded(__func__, [&] {
    *out_param(count, "count") = deref(tree, "tree").tree.empty_nodes().size();
  });
}

cairn_status cairn_tree_empty_node(const cairn_tree* tree, size_t index, char** path, int* kind) {
  return guarded(__func__, [&] {
    out_param(path, "path");
    *path = nullptr;
    const auto& nodes = deref(tree, "tree").tree.empty_nodes();
    if (index >= nodes.size()) {
      throw cairn::NotFound(std::to_string(index), "empty node index " + std::to_string(index) +
                                                       " is past the last of " +
                                                       std::to_string(nodes.size()) + " nodes");
    }
    const auto it = std::next(nodes.begin(), static_cast<std::ptrdiff_t>(index));
    if (kind != nullptr) {
      *kind = it->second == cairn::EmptyNode::list ? CAIRN_EMPTY_LIST : CAIRN_EMPTY_GROUP;
    }
    *path = cairn::capi::copy_out(it->first);
  });
}

}  // extern "C"
