// cairn — the in-memory model of what a checkpoint holds: an ordered tree of named leaves.
//
// A leaf is addressed by a path such as "fields/u" or "particles/x". It is an array shard (a
// view of this rank's part of a global array), a scalar, a string or a JSON value. The tree
// does not talk to MPI or to files; storage turns it into files and back. User types become
// leaves through cairn::TypeHandler (type_handler.hpp, included at the end of this header).
//
// Nothing in this header is collective.
#pragma once

#include <cairn/box.hpp>
#include <cairn/dtype.hpp>
#include <cairn/error.hpp>
#include <cairn/layout.hpp>

#include <array>
#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace cairn {

/// Longest leaf path, in bytes.
inline constexpr std::size_t kMaxPathLength = 1024;

/// The problem with `path` as a leaf path, or std::nullopt when it is valid. A valid path is
/// 1..kMaxPathLength bytes of components separated by '/': no empty component (so no leading,
/// trailing or doubled '/'), no "." or ".." component, only the characters A-Z a-z 0-9 _ . - +
/// (so a path is safe both as an HDF5 dataset path and as a file-name component). Safe on any
/// input, including embedded NULs. Not collective; never throws beyond std::bad_alloc.
[[nodiscard]] std::optional<std::string> leaf_path_problem(std::string_view path);

/// Throws InvalidArgument quoting `path` (escaped, shortened) and saying what is wrong when
/// leaf_path_problem() reports a problem. Storage calls leaf_path_problem() itself to report
/// damaged metadata as a FormatError. Not collective.
void validate_leaf_path(std::string_view path);

/// `prefix + "/" + name`, or `name` when the prefix is empty. Does not validate (adding a leaf
/// does). Not collective; never throws beyond std::bad_alloc.
[[nodiscard]] std::string join_path(std::string_view prefix, std::string_view name);

/// Where the elements of an array shard live.
enum class MemoryKind : std::uint8_t {
  host,         ///< ordinary host memory
  cuda_device,  ///< CUDA device memory (storage stages it through the host)
};

/// Stable name of a memory kind ("host", "cuda_device"). Never throws.
[[nodiscard]] std::string_view memory_kind_name(MemoryKind kind) noexcept;

/// What a leaf holds.
enum class LeafKind : std::uint8_t {
  array,   ///< an ArrayShard
  scalar,  ///< a Scalar (bool, integer, floating or complex number)
  string,  ///< a std::string
  json,    ///< a boost::json::value
};

/// Stable name of a leaf kind ("array", "scalar", "string", "json"). Never throws.
[[nodiscard]] std::string_view leaf_kind_name(LeafKind kind) noexcept;

/// What an empty node of a tree stands for: a nested structure with nothing in it, which a
/// save keeps (Orbax keeps the empty dicts and lists of a PyTree).
enum class EmptyNode : std::uint8_t {
  group,  ///< a group without leaves (an empty dict)
  list,   ///< an empty list
};

/// Stable name of an empty node's kind ("group", "list"). Never throws.
[[nodiscard]] std::string_view empty_node_name(EmptyNode kind) noexcept;

/// One number of any dtype, stored by value.
class Scalar {
 public:
  /// The int64 zero.
  Scalar() = default;
  /// Holds `value` with dtype_of<T>(). Never throws.
  template <HasDType T>
  explicit Scalar(T value) noexcept : dtype_(dtype_of<T>()) {
    static_assert(sizeof(T) <= sizeof(bytes_));
    std::memcpy(bytes_.data(), &value, sizeof(T));
  }
  /// Holds the dtype_size(dtype) bytes at `bytes` (e.g. a float16 bit pattern). Throws
  /// InvalidArgument for an invalid dtype enumerator or a null pointer.
  Scalar(DType dtype, const void* bytes);

  /// The dtype of the value. Never throws.
  [[nodiscard]] DType dtype() const noexcept { return dtype_; }
  /// The value's bytes (dtype_size(dtype()) of them). Never throws.
  [[nodiscard]] const void* data() const noexcept { return bytes_.data(); }

  /// The value as T, with the checks of convert(): a value that does not fit T (300 as int8,
  /// 2.5 as int, a complex as a real) throws InvalidArgument naming `what` (e.g. the leaf).
  template <HasDType T>
  [[nodiscard]] T as(std::string_view what = {}) const {
    T out{};
    convert(dtype_, bytes_.data(), dtype_of<T>(), &out, 1, what);
    return out;
  }

  /// {"dtype": "int32", "value": 5}. Floating values are numbers, or "nan", "inf", "-inf";
  /// complex values are [re, im]; float16/bfloat16 are written as their exact value. Never
  /// throws beyond std::bad_alloc.
  [[nodiscard]] boost::json::value to_json() const;
  /// Parses what to_json() wrote, checking that the value fits the dtype. Throws FormatError
  /// with path `source` and field "<field>.dtype" or "<field>.value".
  [[nodiscard]] static Scalar from_json(const boost::json::value& json,
                                        std::string_view source = {},
                                        std::string_view field = "scalar");

  /// Same dtype and same bytes (so NaN equals an identical NaN). Never throws.
  friend bool operator==(const Scalar& a, const Scalar& b) noexcept {
    return a.dtype_ == b.dtype_ && a.bytes_ == b.bytes_;
  }

 private:
  DType dtype_ = DType::int64;
  alignas(16) std::array<std::byte, 16> bytes_{};
};

/// A view of this rank's shard of a global array: cairn reads it when saving and writes it
/// when restoring into a target; it never owns the memory (see ArrayTree::add_array for
/// keeping an owner alive). Aggregate: use designated initializers.
struct ArrayShard {
  DType dtype = DType::float64;                 ///< element type
  std::vector<std::int64_t> global_shape = {};  ///< shape of the whole array; empty: 0-d
  /// This rank's part of the global array. Leaving offset and extent both empty means the
  /// whole array (ArrayTree stores the filled-in box).
  Box box = {};
  void* data = nullptr;  ///< first element of the box; may be null when the box is empty
  /// Element strides of the box (one per dimension, host memory only); empty: contiguous
  /// row-major. Strides may be any value that keeps every element inside the allocation; a
  /// restore target's must address distinct elements (restoring fills the view in place).
  std::vector<std::int64_t> strides = {};
  MemoryKind memory = MemoryKind::host;  ///< where `data` points
  /// Every rank holds the same whole array; one rank writes it.
  bool replicated = false;
  /// The array is a Fortran (column-major) array whose dimensions were reversed: global_shape,
  /// box and data are in C order, and the writer's own view of the array is
  /// reverse(global_shape). Changes no byte: it is recorded in the metadata ("order": "F" in
  /// cairn-tree.json, attribute cairn_order = "F" in data.h5) so that readers know. Every rank
  /// must agree on it (validate_layout()); restore_tree_as_saved() returns it; restoring into a
  /// target ignores it (a C target of shape reverse(...) gets the same bytes).
  bool fortran_order = false;

  /// A contiguous host view of `data` (dtype_of<T>()); `box` empty: the whole array. The view
  /// is read-only to cairn unless used as a restore target. Never throws beyond bad_alloc.
  template <HasDType T>
  [[nodiscard]] static ArrayShard host(const T* data, std::vector<std::int64_t> global_shape,
                                       Box box = {}, bool replicated = false) {
    ArrayShard shard;
    shard.dtype = dtype_of<T>();
    shard.global_shape = std::move(global_shape);
    shard.box = std::move(box);
    shard.data = const_cast<std::remove_cv_t<T>*>(data);
    shard.replicated = replicated;
    return shard;
  }

  /// Whether the elements are contiguous in row-major order (no strides, or strides equal to
  /// the row-major ones). Never throws.
  [[nodiscard]] bool contiguous() const noexcept;
  /// Number of elements in the box. Throws InvalidArgument when the box is invalid.
  [[nodiscard]] std::int64_t local_volume() const;
  /// Bytes of the box's elements. Throws InvalidArgument when that overflows int64.
  [[nodiscard]] std::int64_t local_bytes() const;
  /// This shard's description for validate_layout() (box omitted when empty). Never throws
  /// beyond std::bad_alloc.
  [[nodiscard]] LeafLayout layout() const;
};

/// One named leaf of an ArrayTree. Read-only; obtained from the tree.
class Leaf {
 public:
  /// The leaf's path. Never throws.
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  /// What the leaf holds. Never throws.
  [[nodiscard]] LeafKind kind() const noexcept { return static_cast<LeafKind>(value_.index()); }
  /// The array shard. Throws InvalidArgument naming the path when the leaf is not an array.
  [[nodiscard]] const ArrayShard& as_array() const;
  /// The scalar. Throws InvalidArgument naming the path when the leaf is not a scalar.
  [[nodiscard]] const Scalar& as_scalar() const;
  /// The string. Throws InvalidArgument naming the path when the leaf is not a string.
  [[nodiscard]] const std::string& as_string() const;
  /// The JSON value. Throws InvalidArgument naming the path when the leaf is not JSON.
  [[nodiscard]] const boost::json::value& as_json() const;
  /// What keeps an array's memory alive (ArrayTree::add_array), or null. Never throws.
  [[nodiscard]] const std::shared_ptr<void>& owner() const noexcept { return owner_; }

 private:
  friend class ArrayTree;
  using Value = std::variant<ArrayShard, Scalar, std::string, boost::json::value>;
  Leaf(std::string path, Value value, std::shared_ptr<void> owner);
  [[noreturn]] void wrong_kind(LeafKind wanted) const;

  std::string path_;
  Value value_;
  std::shared_ptr<void> owner_;
};

/// Teaches cairn a C++ type: a specialization provides
///   static void to_leaves(const T& value, std::string_view prefix, ArrayTree& tree);
///   static void from_leaves(const ArrayTree& tree, std::string_view prefix, T& value);
/// See type_handler.hpp for the built-in handlers and an example.
template <class T>
struct TypeHandler;

/// An ordered tree of named leaves. Iteration follows insertion order; sorted_paths() and
/// structure_hash() do not depend on it. A path is either a leaf or a group (a proper prefix
/// of other paths), never both. Copyable (copies share array memory and owners) and movable.
/// Not thread-safe for concurrent modification.
class ArrayTree {
 public:
  /// Iterates the leaves in insertion order.
  using const_iterator = std::vector<Leaf>::const_iterator;

  /// Adds an array leaf. The box is filled in when left empty, then checked: dtype valid, at
  /// most kMaxDims dimensions, shape volume fits int64, box inside the shape, a replicated
  /// shard holds the whole array, one stride per dimension (host memory only), data not null
  /// unless the box is empty. `owner` (may be null) is kept alive with the leaf. Throws
  /// InvalidArgument naming the path for any of these and for an invalid, duplicate or
  /// conflicting path (a leaf cannot also be a group); Unsupported for strided device views.
  void add_array(std::string_view path, ArrayShard shard, std::shared_ptr<void> owner = {});
  /// Allocates a zeroed, tree-owned buffer for the box of a new array leaf and returns it.
  /// `replicated` and `fortran_order` set the shard's flags of the same names. Not collective.
  /// Throws as add_array(), and InvalidArgument naming the leaf and the size when the buffer
  /// cannot be allocated (out of memory).
  void* add_owned_array(std::string_view path, DType dtype, std::vector<std::int64_t> global_shape,
                        Box box = {}, bool replicated = false, bool fortran_order = false);
  /// Adds a scalar leaf. Throws InvalidArgument for an invalid, duplicate or conflicting path.
  void add_scalar(std::string_view path, Scalar value);
  /// Adds a string leaf. Throws as add_scalar().
  void add_string(std::string_view path, std::string value);
  /// Adds a string leaf (so that add(path, "text") works). Throws as add_scalar().
  void add(std::string_view path, const char* value) { add_string(path, value); }
  /// Adds a JSON leaf. Throws as add_scalar().
  void add_json(std::string_view path, boost::json::value value);

  /// Adds an empty node (an empty group or list) at `path`, kept by a save and given back by
  /// restore_tree_as_saved(); a leaf added under it later makes it an ordinary group. Throws
  /// InvalidArgument for an invalid path, a path that is a leaf, a group of leaves or an empty
  /// node already, or that lies under a leaf.
  void add_empty(std::string_view path, EmptyNode kind = EmptyNode::group);
  /// The empty nodes, sorted by path. Never throws.
  [[nodiscard]] const std::map<std::string, EmptyNode, std::less<>>& empty_nodes() const noexcept {
    return empty_nodes_;
  }

  /// Adds `value` through TypeHandler<T>::to_leaves: a scalar, string, vector, JSON value or
  /// user type becomes one or more leaves at or under `path`. Throws what the handler throws
  /// (InvalidArgument for bad paths); leaves added before an error stay in the tree.
  template <class T>
  void add(std::string_view path, const T& value) {
    static_assert(
        requires(const T& v, std::string_view p, ArrayTree& t) {
          TypeHandler<T>::to_leaves(v, p, t);
        },
        "cairn has no TypeHandler for this type: specialize cairn::TypeHandler<T> "
        "(see cairn/type_handler.hpp)");
    TypeHandler<T>::to_leaves(value, path, *this);
  }

  /// Fills `value` from the leaves at or under `path` through TypeHandler<T>::from_leaves.
  /// Throws NotFound for a missing leaf, InvalidArgument for a leaf of the wrong kind, shape
  /// or a value that does not fit (see convert()).
  template <class T>
  void extract(std::string_view path, T& value) const {
    static_assert(
        requires(T & v, std::string_view p, const ArrayTree& t) {
          TypeHandler<T>::from_leaves(t, p, v);
        },
        "cairn has no TypeHandler for this type: specialize cairn::TypeHandler<T> "
        "(see cairn/type_handler.hpp)");
    TypeHandler<T>::from_leaves(*this, path, value);
  }
  /// extract() into a value-initialized T and return it. Throws as extract().
  template <class T>
  [[nodiscard]] T get(std::string_view path) const {
    T value{};
    extract(path, value);
    return value;
  }

  /// Whether `path` is a leaf. Never throws.
  [[nodiscard]] bool contains(std::string_view path) const noexcept;
  /// Whether `path` is a group (a proper prefix of some leaf's path). Never throws.
  [[nodiscard]] bool is_group(std::string_view path) const noexcept;
  /// The leaf at `path`, or null. The pointer is valid until the tree is next modified.
  [[nodiscard]] const Leaf* find(std::string_view path) const noexcept;
  /// The leaf at `path`. Throws NotFound naming the path.
  [[nodiscard]] const Leaf& at(std::string_view path) const;
  /// The leaf at `prefix` and the leaves under the group `prefix`, sorted by path; every leaf
  /// when the prefix is empty. Valid until the tree is next modified.
  [[nodiscard]] std::vector<const Leaf*> leaves_under(std::string_view prefix) const;

  /// Number of leaves. Never throws.
  [[nodiscard]] std::size_t size() const noexcept { return leaves_.size(); }
  /// Whether there are no leaves. Never throws.
  [[nodiscard]] bool empty() const noexcept { return leaves_.empty(); }
  /// First leaf in insertion order. Never throws.
  [[nodiscard]] const_iterator begin() const noexcept { return leaves_.begin(); }
  /// End of the leaves. Never throws.
  [[nodiscard]] const_iterator end() const noexcept { return leaves_.end(); }

  /// Leaf paths in insertion order.
  [[nodiscard]] std::vector<std::string> paths() const;
  /// Leaf paths sorted bytewise (the order storage writes metadata in).
  [[nodiscard]] std::vector<std::string> sorted_paths() const;

  /// 64-bit FNV-1a hash of every leaf's (path, kind, dtype of arrays and scalars, global
  /// shape, replicated flag), in sorted path order, then of every empty node (path, kind).
  /// Boxes, pointers, strides, memory kinds, the fortran_order flag (checked by the layout
  /// validation of a save instead, and meaningless in a restore target) and values are not
  /// included, so ranks that describe the same global tree get the same hash on any platform.
  /// Never throws.
  [[nodiscard]] std::uint64_t structure_hash() const noexcept;

 private:
  void insert(std::string_view path, Leaf::Value value, std::shared_ptr<void> owner);

  std::vector<Leaf> leaves_;
  std::map<std::string, std::size_t, std::less<>> index_;  // path -> position in leaves_
  std::set<std::string, std::less<>> groups_;              // every proper prefix of a path
  // Groups and lists without leaves.
  std::map<std::string, EmptyNode, std::less<>> empty_nodes_;
};

}  // namespace cairn

// The built-in handlers complete this header: ArrayTree::add/extract need them.
#include <cairn/type_handler.hpp>
