// cairn — leaf paths, array shards and the ArrayTree container.
#include <cairn/tree.hpp>

#include "base/fnv1a.hpp"
#include "tree/quote.hpp"

#include <unistd.h>

#include <algorithm>
#include <fmt/format.h>
#include <limits>
#include <new>

namespace cairn {
namespace {

using tree_detail::quote;

bool allowed_path_char(char c) noexcept {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-' || c == '+';
}

std::string leaf_name(std::string_view path) { return "leaf " + quote(path, 200); }

// Bytes of memory of this machine, or 0 when unknown.
std::uint64_t physical_memory() noexcept {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
}

// The box a shard describes: an empty box of an n-d array means the whole array.
Box effective_box(const ArrayShard& s) {
  if (s.box.offset.empty() && s.box.extent.empty() && !s.global_shape.empty()) {
    return whole_box(s.global_shape);
  }
  return s.box;
}

}  // namespace

// ---- paths -----------------------------------------------------------------------------------

std::optional<std::string> leaf_path_problem(std::string_view path) {
  if (path.empty()) return std::string("it is empty");
  if (path.size() > kMaxPathLength) {
    return "it is " + std::to_string(path.size()) + " bytes long; the limit is " +
           std::to_string(kMaxPathLength);
  }
  for (std::size_t k = 0; k < path.size(); ++k) {
    if (path[k] != '/' && !allowed_path_char(path[k])) {
      return "it contains the character " + quote(path.substr(k, 1)) + " at position " +
             std::to_string(k) + "; use only letters, digits, '_', '.', '-', '+' and '/'";
    }
  }
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = path.find('/', start);
    const std::string_view component = path.substr(
        start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (component.empty()) {
      if (start == 0) return std::string("it starts with '/'");
      if (slash == std::string_view::npos) return std::string("it ends with '/'");
      return std::string("it has an empty component ('//')");
    }
    if (component == "." || component == "..") {
      return "it has a " + quote(component) + " component";
    }
    if (slash == std::string_view::npos) return std::nullopt;
    start = slash + 1;
  }
}

void validate_leaf_path(std::string_view path) {
  if (auto problem = leaf_path_problem(path)) {
    throw InvalidArgument("invalid leaf path " + quote(path) + ": " + *problem +
                          ". A leaf path is non-empty names separated by single '/'");
  }
}

std::string join_path(std::string_view prefix, std::string_view name) {
  if (prefix.empty()) return std::string(name);
  std::string out(prefix);
  out += '/';
  out += name;
  return out;
}

std::string_view memory_kind_name(MemoryKind kind) noexcept {
  switch (kind) {
    case MemoryKind::host: return "host";
    case MemoryKind::cuda_device: return "cuda_device";
  }
  return "invalid";
}

std::string_view leaf_kind_name(LeafKind kind) noexcept {
  switch (kind) {
    case LeafKind::array: return "array";
    case LeafKind::scalar: return "scalar";
    case LeafKind::string: return "string";
    case LeafKind::json: return "json";
  }
  return "invalid";
}

// ---- ArrayShard --------------------------------------------------------------------------------

bool ArrayShard::contiguous() const noexcept {
  if (strides.empty()) return true;
  const Box b = effective_box(*this);
  if (strides.size() != b.extent.size()) return false;
  if (std::any_of(b.extent.begin(), b.extent.end(), [](std::int64_t e) { return e == 0; })) {
    return true;
  }
  std::int64_t expected = 1;
  for (std::size_t k = b.extent.size(); k-- > 0;) {
    const std::int64_t e = b.extent[k];
    if (e < 0) return false;
    if (e > 1 && strides[k] != expected) return false;  // the stride of a length-1 axis is moot
    if (expected > std::numeric_limits<std::int64_t>::max() / e) return false;
    expected *= e;
  }
  return true;
}

std::int64_t ArrayShard::local_volume() const { return volume(effective_box(*this)); }

std::int64_t ArrayShard::local_bytes() const {
  const std::int64_t n = local_volume();
  const auto size = static_cast<std::int64_t>(dtype_size(dtype));
  if (size != 0 && n > std::numeric_limits<std::int64_t>::max() / size) {
    throw InvalidArgument("an array shard of " + std::to_string(n) + " " +
                          std::string(dtype_name(dtype)) +
                          " elements has more bytes than an int64 can count");
  }
  return n * size;
}

LeafLayout ArrayShard::layout() const {
  LeafLayout out;
  out.dtype = dtype;
  out.global_shape = global_shape;
  out.replicated = replicated;
  out.fortran_order = fortran_order;
  Box b = effective_box(*this);
  if (!is_empty(b)) out.box = std::move(b);
  return out;
}

// ---- Leaf --------------------------------------------------------------------------------------

Leaf::Leaf(std::string path, Value value, std::shared_ptr<void> owner)
    : path_(std::move(path)), value_(std::move(value)), owner_(std::move(owner)) {}

void Leaf::wrong_kind(LeafKind wanted) const {
  throw InvalidArgument(leaf_name(path_) + " is " + std::string(leaf_kind_name(kind())) + ", not " +
                        std::string(leaf_kind_name(wanted)) + "; read it as what it was saved as");
}

const ArrayShard& Leaf::as_array() const {
  if (const auto* v = std::get_if<ArrayShard>(&value_)) return *v;
  wrong_kind(LeafKind::array);
}

const Scalar& Leaf::as_scalar() const {
  if (const auto* v = std::get_if<Scalar>(&value_)) return *v;
  wrong_kind(LeafKind::scalar);
}

const std::string& Leaf::as_string() const {
  if (const auto* v = std::get_if<std::string>(&value_)) return *v;
  wrong_kind(LeafKind::string);
}

const boost::json::value& Leaf::as_json() const {
  if (const auto* v = std::get_if<boost::json::value>(&value_)) return *v;
  wrong_kind(LeafKind::json);
}

std::string_view empty_node_name(EmptyNode kind) noexcept {
  return kind == EmptyNode::list ? "list" : "group";
}

// ---- ArrayTree ---------------------------------------------------------------------------------

void ArrayTree::insert(std::string_view path, Leaf::Value value, std::shared_ptr<void> owner) {
  validate_leaf_path(path);
  if (index_.contains(path)) {
    throw InvalidArgument("cannot add " + leaf_name(path) +
                          ": the tree already has a leaf with this path; give each leaf a "
                          "unique path");
  }
  if (empty_nodes_.contains(path)) {
    throw InvalidArgument("cannot add " + leaf_name(path) + ": it is already an empty " +
                          std::string(empty_node_name(empty_nodes_.find(path)->second)));
  }
  if (const auto below = empty_nodes_.lower_bound(join_path(path, ""));
      below != empty_nodes_.end() && below->first.starts_with(join_path(path, ""))) {
    throw InvalidArgument("cannot add " + leaf_name(path) + ": the empty node " +
                          quote(below->first, 200) +
                          " is under it, and a leaf cannot also be a group");
  }
  if (groups_.contains(path)) {
    const std::string child = index_.lower_bound(join_path(path, ""))->first;
    throw InvalidArgument("cannot add " + leaf_name(path) + ": it is already a group (leaf " +
                          quote(child, 200) +
                          " is under it) and a path cannot be both a leaf and a group");
  }
  std::vector<std::string> prefixes;
  for (std::size_t slash = path.find('/'); slash != std::string_view::npos;
       slash = path.find('/', slash + 1)) {
    prefixes.emplace_back(path.substr(0, slash));
    if (index_.contains(prefixes.back())) {
      throw InvalidArgument("cannot add " + leaf_name(path) + ": " + quote(prefixes.back(), 200) +
                            " is already a leaf, and a leaf cannot also be a group");
    }
  }
  // All checks passed. Should an allocation fail below, undo what was done so that the
  // three containers stay consistent.
  std::vector<std::set<std::string, std::less<>>::iterator> new_groups;
  try {
    for (std::string& p : prefixes) {
      const auto [it, inserted] = groups_.insert(std::move(p));
      if (inserted) new_groups.push_back(it);
    }
    leaves_.push_back(Leaf(std::string(path), std::move(value), std::move(owner)));
    try {
      index_.emplace(std::string(path), leaves_.size() - 1);
    } catch (...) {
      leaves_.pop_back();
      throw;
    }
  } catch (...) {
    for (const auto& it : new_groups) groups_.erase(it);
    throw;
  }
  // An empty node that the new leaf lies under is a group of leaves now.
  for (const auto& it : new_groups) empty_nodes_.erase(*it);
}

void ArrayTree::add_empty(std::string_view path, EmptyNode kind) {
  validate_leaf_path(path);
  const std::string what = "cannot add an empty node at " + leaf_name(path);
  if (index_.contains(path)) throw InvalidArgument(what + ": it is a leaf");
  if (groups_.contains(path)) throw InvalidArgument(what + ": leaves lie under it");
  if (empty_nodes_.contains(path)) throw InvalidArgument(what + ": it is one already");
  for (std::size_t slash = path.find('/'); slash != std::string_view::npos;
       slash = path.find('/', slash + 1)) {
    if (index_.contains(path.substr(0, slash))) {
      throw InvalidArgument(what + ": " + quote(path.substr(0, slash), 200) + " is a leaf");
    }
  }
  // Empty nodes above it are no longer empty: they hold it.
  for (std::size_t slash = path.find('/'); slash != std::string_view::npos;
       slash = path.find('/', slash + 1)) {
    if (const auto it = empty_nodes_.find(path.substr(0, slash)); it != empty_nodes_.end()) {
      empty_nodes_.erase(it);
    }
  }
  empty_nodes_.emplace(std::string(path), kind);
}

void ArrayTree::add_array(std::string_view path, ArrayShard shard, std::shared_ptr<void> owner) {
  validate_leaf_path(path);
  const std::string what = "cannot add array " + leaf_name(path);
  if (dtype_size(shard.dtype) == 0) {
    throw InvalidArgument(what + ": invalid dtype enumerator " +
                          std::to_string(static_cast<int>(shard.dtype)));
  }
  try {
    (void)volume(shard.global_shape);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(what + ": global shape " + shape_to_string(shard.global_shape) +
                          " is invalid: " + e.what());
  }
  shard.box = effective_box(shard);
  if (auto problem = box_problem(shard.box, shard.global_shape)) {
    throw InvalidArgument(what + ": box " + to_string(shard.box) +
                          " does not fit the global shape " + shape_to_string(shard.global_shape) +
                          ": " + *problem + "; give this rank's part of the global array");
  }
  if (shard.replicated && shard.box != whole_box(shard.global_shape)) {
    throw InvalidArgument(what + ": it is marked replicated but its box " + to_string(shard.box) +
                          " is not the whole array " + shape_to_string(shard.global_shape) +
                          "; a replicated leaf holds the whole array on every rank");
  }
  if (!shard.strides.empty()) {
    if (shard.memory != MemoryKind::host) {
      throw Unsupported(what +
                        ": strided views of device memory are not supported; pass a "
                        "contiguous device buffer");
    }
    if (shard.strides.size() != shard.global_shape.size()) {
      throw InvalidArgument(what + ": " + std::to_string(shard.strides.size()) + " strides for a " +
                            std::to_string(shard.global_shape.size()) +
                            "-d array; give one element stride per dimension or none");
    }
  }
  if (shard.data == nullptr && !is_empty(shard.box)) {
    throw InvalidArgument(what + ": its data pointer is null but its box " + to_string(shard.box) +
                          " holds elements");
  }
  try {
    (void)shard.local_bytes();
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(what + ": " + e.what());
  }
  insert(path, std::move(shard), std::move(owner));
}

void* ArrayTree::add_owned_array(std::string_view path, DType dtype,
                                 std::vector<std::int64_t> global_shape, Box box, bool replicated,
                                 bool fortran_order) {
  // Assigned member by member: g++ 12 -Wextra warns about omitted designated initializers.
  ArrayShard shard;
  shard.dtype = dtype;
  shard.global_shape = std::move(global_shape);
  shard.box = std::move(box);
  shard.replicated = replicated;
  shard.fortran_order = fortran_order;
  validate_leaf_path(path);
  std::int64_t bytes = 0;
  try {
    shard.box = effective_box(shard);
    check_box_in_shape(shard.box, shard.global_shape, leaf_name(path));
    bytes = shard.local_bytes();
  } catch (const InvalidArgument& e) {
    throw InvalidArgument("cannot add array " + leaf_name(path) + ": " + e.what());
  }
  // The size often comes from a file or a user's option: a buffer that cannot exist is an
  // error naming the leaf, not a std::bad_alloc from somewhere in a restore. Sizes beyond the
  // machine's memory are refused before trying (a sanitizer's allocator aborts on them).
  const auto refuse = [&](const std::string& why) {
    return InvalidArgument(fmt::format(
        "cannot add array {}: its buffer of {} bytes ({} elements of {}) cannot be allocated on "
        "this rank: {}",
        leaf_name(path), bytes, volume(shard.box), dtype_name(dtype), why));
  };
  if (const std::uint64_t memory = physical_memory();
      memory != 0 && static_cast<std::uint64_t>(bytes) > memory) {
    throw refuse(fmt::format("more than the {} bytes of memory of this machine", memory));
  }
  // One spare byte keeps the pointer non-null for empty boxes.
  std::shared_ptr<std::byte[]> buffer;
  try {
    buffer.reset(new std::byte[static_cast<std::size_t>(bytes) + 1]());
  } catch (const std::bad_alloc&) {
    throw refuse("out of memory");
  }
  shard.data = buffer.get();
  void* data = shard.data;
  add_array(path, std::move(shard), std::shared_ptr<void>(buffer, buffer.get()));
  return data;
}

void ArrayTree::add_scalar(std::string_view path, Scalar value) { insert(path, value, nullptr); }

void ArrayTree::add_string(std::string_view path, std::string value) {
  insert(path, std::move(value), nullptr);
}

void ArrayTree::add_json(std::string_view path, boost::json::value value) {
  insert(path, std::move(value), nullptr);
}

bool ArrayTree::contains(std::string_view path) const noexcept {
  return index_.find(path) != index_.end();
}

bool ArrayTree::is_group(std::string_view path) const noexcept {
  return groups_.find(path) != groups_.end();
}

const Leaf* ArrayTree::find(std::string_view path) const noexcept {
  const auto it = index_.find(path);
  return it == index_.end() ? nullptr : &leaves_[it->second];
}

const Leaf& ArrayTree::at(std::string_view path) const {
  if (const Leaf* leaf = find(path)) return *leaf;
  std::string message = "the tree has no " + leaf_name(path);
  if (is_group(path)) message += " (it is a group of leaves: give the path of one of them)";
  throw NotFound(std::string(path), message + "; check the path against sorted_paths()");
}

std::vector<const Leaf*> ArrayTree::leaves_under(std::string_view prefix) const {
  std::vector<const Leaf*> out;
  if (prefix.empty()) {
    for (const auto& [path, index] : index_) out.push_back(&leaves_[index]);
    return out;
  }
  if (const Leaf* leaf = find(prefix)) out.push_back(leaf);
  const std::string group = join_path(prefix, "");
  for (auto it = index_.lower_bound(group);
       it != index_.end() && it->first.compare(0, group.size(), group) == 0; ++it) {
    out.push_back(&leaves_[it->second]);
  }
  return out;
}

std::vector<std::string> ArrayTree::paths() const {
  std::vector<std::string> out;
  out.reserve(leaves_.size());
  for (const Leaf& leaf : leaves_) out.push_back(leaf.path());
  return out;
}

std::vector<std::string> ArrayTree::sorted_paths() const {
  std::vector<std::string> out;
  out.reserve(index_.size());
  for (const auto& entry : index_) out.push_back(entry.first);
  return out;
}

std::uint64_t ArrayTree::structure_hash() const noexcept {
  base::Fnv1a h;
  h.u64(index_.size());
  for (const auto& [path, index] : index_) {
    const Leaf& leaf = leaves_[index];
    h.str(path);
    h.str(leaf_kind_name(leaf.kind()));
    if (const auto* a = std::get_if<ArrayShard>(&leaf.value_)) {
      h.str(dtype_name(a->dtype));
      h.u64(a->replicated ? 1 : 0);
      h.u64(a->global_shape.size());
      for (const std::int64_t n : a->global_shape) h.u64(static_cast<std::uint64_t>(n));
    } else if (const auto* s = std::get_if<Scalar>(&leaf.value_)) {
      h.str(dtype_name(s->dtype()));
    }
  }
  // Trees without empty nodes hash as before empty nodes existed.
  for (const auto& [path, kind] : empty_nodes_) {
    h.str(path);
    h.str(empty_node_name(kind));
  }
  return h.value();
}

}  // namespace cairn
