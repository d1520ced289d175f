// cairn C ABI — what the opaque C handles hold, and the conversions between C arguments and
// C++ values (handles, strings, dims, dtypes, JSON text). Every check of a C argument that
// can fail throws cairn::InvalidArgument naming the argument; guarded() turns it into a
// status.
#pragma once

#include <cairn/cairn.h>
#include <cairn/comm.hpp>
#include <cairn/dtype.hpp>
#include <cairn/error.hpp>
#include <cairn/manager.hpp>
#include <cairn/multihost.hpp>
#include <cairn/policies.hpp>
#include <cairn/tree.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

/// cairn_comm: a shared cairn::Comm, so that a multihost checkpoint (which refers to its
/// Comm) stays valid after cairn_comm_free.
struct cairn_comm {
  std::shared_ptr<cairn::Comm> comm;
};

/// cairn_tree: an ArrayTree (copies share array memory and the owners of owned buffers), and
/// the caller's memory behind its converted leaves.
struct cairn_tree {
  /// An array leaf added by cairn_tree_add_logical_array: the tree's shard is a bool buffer of
  /// its own; the caller's memory holds `elem_size`-byte integers (nonzero is true).
  struct LogicalLeaf {
    std::string path;
    void* data = nullptr;               ///< the caller's first element
    std::size_t elem_size = 0;          ///< 1, 2, 4 or 8
    std::vector<std::int64_t> extent;   ///< this rank's box
    std::vector<std::int64_t> strides;  ///< element strides of `data` (row-major when contiguous)
  };

  cairn::ArrayTree tree;
  std::vector<LogicalLeaf> logical;

  /// The tree to save: `tree` itself, or a copy whose logical leaves are converted from the
  /// caller's memory into new buffers that the copy owns (so that a save still reading one
  /// never sees a later conversion). Not collective. Throws std::bad_alloc.
  [[nodiscard]] cairn::ArrayTree to_save() const;
  /// Before a restore into `tree`: converts the caller's logicals into the tree's buffers, so
  /// that what the checkpoint does not cover keeps its values. Not collective. Throws
  /// std::bad_alloc.
  void before_restore();
  /// After a restore into `tree`: writes the restored bools back to the caller's memory (1 for
  /// true, 0 for false). Not collective. Throws std::bad_alloc.
  void after_restore();
};

/// cairn_save_policy: a shared, immutable save decision policy.
struct cairn_save_policy {
  cairn::SaveDecisionPolicyPtr policy;
};

/// cairn_preservation_policy: a shared, immutable preservation policy.
struct cairn_preservation_policy {
  cairn::PreservationPolicyPtr policy;
};

/// cairn_items: named items of a composite step.
struct cairn_items {
  /// What an item holds.
  enum class Kind { tree, json, bytes, user };
  struct Item {
    Kind kind = Kind::tree;
    cairn_tree* tree = nullptr;                         ///< the caller's tree (not owned)
    std::optional<cairn::ArrayTree> restored = {};      ///< a tree restored as saved
    std::optional<boost::json::value> json = {};        ///< a JSON item's value
    std::optional<std::vector<std::byte>> bytes = {};   ///< a bytes item's value
    bool replicated = false;                            ///< bytes saved once for all ranks
    std::optional<int> from_rank = {};                  ///< bytes to restore: whose
    boost::json::object metadata = {};                  ///< custom metadata (set or restored)
    std::string user_type = {};                         ///< a user item's handler type
    cairn_user_item_save_fn user_save = nullptr;        ///< a user item's save callback
    cairn_user_item_restore_fn user_restore = nullptr;  ///< a user item's restore callback
    void* user_data = nullptr;                          ///< passed to the user callbacks
  };
  std::map<std::string, Item, std::less<>> items;
};

/// cairn_manager: a CheckpointManager.
struct cairn_manager {
  std::unique_ptr<cairn::CheckpointManager> manager;
};

/// cairn_multihost: a MultihostCheckpoint and the Comm it refers to.
struct cairn_multihost {
  std::shared_ptr<cairn::Comm> comm;
  std::unique_ptr<cairn::MultihostCheckpoint> multihost;
};

namespace cairn::capi {

/// `*handle`; throws InvalidArgument "<what> is NULL" for a null handle.
template <class Handle>
Handle& deref(Handle* handle, const char* what) {
  if (handle == nullptr) throw InvalidArgument(std::string(what) + " is NULL");
  return *handle;
}

/// Checks that an output pointer is not null; throws InvalidArgument naming it.
template <class T>
T* out_param(T* out, const char* what) {
  if (out == nullptr) throw InvalidArgument(std::string(what) + " (output) is NULL");
  return out;
}

/// A NUL-terminated argument as a string view; throws InvalidArgument when it is NULL.
std::string_view text(const char* value, const char* what);

/// A copy of `value` in memory from malloc (for cairn_free). Throws std::bad_alloc.
char* copy_out(std::string_view value);

/// The DType of a CAIRN_* dtype number; throws InvalidArgument naming it and the valid range.
DType dtype_from_c(int dtype);
/// The CAIRN_* number of a DType. Never throws.
int dtype_to_c(DType dtype) noexcept;

/// `ndim` values at `values` (which may be NULL only when ndim is 0); throws InvalidArgument
/// naming `what` for a NULL array or an ndim outside 0..CAIRN_MAX_DIMS.
std::vector<std::int64_t> dims(const std::int64_t* values, int ndim, const char* what);

/// `count` strings at `list` (NULL with count 0 is an empty list); throws InvalidArgument for a
/// NULL list or element.
std::vector<std::string> strings(const char* const* list, std::size_t count, const char* what);

/// Parses JSON text; throws InvalidArgument naming `what` with the parser's message.
boost::json::value parse_json(const char* text, const char* what);

/// The array shard a C description asks for (dims, box, data, memory kind, strides). Throws
/// InvalidArgument for bad arguments, Unsupported for a memory kind this build lacks.
ArrayShard shard_from_c(const cairn_array_desc& desc);

}  // namespace cairn::capi
