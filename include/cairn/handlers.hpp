// cairn — the handlers cairn ships and their argument types: array trees, JSON values, opaque
// bytes, and composites of named items.
#pragma once

#include <cairn/handler.hpp>
#include <cairn/storage.hpp>
#include <cairn/tree.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace cairn {

// ------------------------------------------------------------------ array trees

/// Save arguments of ArrayTreeHandler: the tree (a view of the caller's arrays) and how to
/// store it (format per tree or per leaf, sparse leaves, fsync).
struct ArrayTreeSave final : CheckpointArgs {
  /// Saves `tree_` with `options_`. Never throws beyond std::bad_alloc.
  ArrayTreeSave(ArrayTree tree_, TreeSaveOptions options_ = {})
      : tree(std::move(tree_)), options(std::move(options_)) {}
  /// Arguments whose tree is made by `build` only when a save of them starts: a
  /// CheckpointManager that decides not to save the step never calls it. For trees that cost
  /// work to make, such as converted copies of the caller's arrays. `build` is called once per
  /// save, on the calling thread, before save() returns; what it throws, the save throws.
  /// Never throws beyond std::bad_alloc.
  [[nodiscard]] static ArrayTreeSave deferred(std::function<ArrayTree()> build,
                                              TreeSaveOptions options = {}) {
    ArrayTreeSave args(ArrayTree{}, std::move(options));
    args.build = std::move(build);
    return args;
  }
  std::string_view handler_type() const noexcept override;
  /// The tree to save: what `build` returns when it is set, else `tree`. Throws what `build`
  /// throws.
  [[nodiscard]] ArrayTree tree_to_save() const { return build ? build() : tree; }
  /// The tree to save when `build` is not set: views of the caller's arrays.
  ArrayTree tree;
  /// Formats per tree and per leaf, sparse leaves, fsync.
  TreeSaveOptions options;
  /// When set, makes the tree at the start of each save instead of `tree` (see deferred()).
  std::function<ArrayTree()> build = {};
};

/// Restore arguments of ArrayTreeHandler. With a target, the saved leaves are read into the
/// target's buffers (any decomposition; casts when options.allow_cast); without one, the tree
/// comes back as saved (as_saved options: whole arrays, selection).
struct ArrayTreeRestore final : CheckpointArgs {
  ArrayTreeRestore() = default;
  /// Reads into the buffers of `target_`, with `options_`. Never throws beyond std::bad_alloc.
  explicit ArrayTreeRestore(ArrayTree target_, TreeRestoreOptions options_ = {})
      : target(std::move(target_)), options(std::move(options_)) {}
  /// Returns the tree as saved, laid out as `as_saved_` says. Never throws beyond
  /// std::bad_alloc.
  explicit ArrayTreeRestore(AsSavedOptions as_saved_) : as_saved(std::move(as_saved_)) {}
  std::string_view handler_type() const noexcept override;
  /// A copy with options.load_and_broadcast set.
  [[nodiscard]] std::shared_ptr<const CheckpointArgs> with_load_and_broadcast() const override;
  /// The tree whose buffers receive the saved values; empty: restore as saved.
  std::optional<ArrayTree> target;
  /// How a restore into `target` reads (casts, optional leaves, checksums).
  TreeRestoreOptions options;
  /// How a restore without `target` lays out the tree it returns.
  AsSavedOptions as_saved;
};

/// Stores an ArrayTree with save_tree()/restore_tree(). restore() returns an ArrayTree (the
/// target with its values filled in, or a tree that owns its buffers).
class ArrayTreeHandler final : public CheckpointHandler {
 public:
  /// The handler type recorded in step metadata.
  static constexpr std::string_view kTypeName = "cairn.array_tree";
  std::string_view type_name() const noexcept override { return kTypeName; }
  std::unique_ptr<PendingSave> async_save(const Comm& comm, const std::filesystem::path& dir,
                                          const CheckpointArgs& args,
                                          const AsyncContext& context) override;
  std::any restore(const Comm& comm, const std::filesystem::path& dir,
                   const CheckpointArgs* args) override;
  boost::json::value metadata(const Comm& comm, const std::filesystem::path& dir) override;
};

inline std::string_view ArrayTreeSave::handler_type() const noexcept {
  return ArrayTreeHandler::kTypeName;
}
inline std::string_view ArrayTreeRestore::handler_type() const noexcept {
  return ArrayTreeHandler::kTypeName;
}

// ------------------------------------------------------------------ JSON

/// Save arguments of JsonHandler. The primary rank's value is written.
struct JsonSave final : CheckpointArgs {
  /// Saves `value_` (a copy). Never throws beyond std::bad_alloc.
  explicit JsonSave(boost::json::value value_) : value(std::move(value_)) {}
  std::string_view handler_type() const noexcept override;
  /// The value to save (the primary rank's is written).
  boost::json::value value;
};

/// Restore arguments of JsonHandler: none are needed; `expected` checks the kinds of the
/// fields the caller relies on.
struct JsonRestore final : CheckpointArgs {
  /// Restores the value as saved, whatever its shape. Never throws.
  JsonRestore() = default;
  /// Restores the value and checks it against `expected_` (see `expected`). Never throws
  /// beyond std::bad_alloc.
  explicit JsonRestore(boost::json::value expected_) : expected(std::move(expected_)) {}
  std::string_view handler_type() const noexcept override;
  /// A value of the shape the caller reads, such as one it saves: every key of an object here
  /// must be in the restored object, with a value of the same kind (a string, a bool, an
  /// object, an array; a double here takes any number; a signed integer here takes an integer
  /// in the range of std::int64_t, an unsigned one a non-negative integer), checked
  /// recursively. An array of one element here is a list: the restored array may have any
  /// length, each element checked against that one; an array of two or more elements is a
  /// tuple: the restored array must have as many, each checked against the one in its place;
  /// an empty array takes any array. null here checks nothing. A restored value that does not fit
  /// throws FormatError naming value.json and the field (as a JSON pointer, e.g. "/nx"), which
  /// CheckpointManager::restore_latest_intact() treats as damage like any other.
  boost::json::value expected = nullptr;
};

/// Stores one JSON value as `value.json`, written by the primary rank. restore() returns a
/// boost::json::value (read by the primary, broadcast to all ranks).
class JsonHandler final : public CheckpointHandler {
 public:
  /// The handler type recorded in step metadata.
  static constexpr std::string_view kTypeName = "cairn.json";
  std::string_view type_name() const noexcept override { return kTypeName; }
  std::unique_ptr<PendingSave> async_save(const Comm& comm, const std::filesystem::path& dir,
                                          const CheckpointArgs& args,
                                          const AsyncContext& context) override;
  std::any restore(const Comm& comm, const std::filesystem::path& dir,
                   const CheckpointArgs* args) override;
  boost::json::value metadata(const Comm& comm, const std::filesystem::path& dir) override;
};

inline std::string_view JsonSave::handler_type() const noexcept { return JsonHandler::kTypeName; }
inline std::string_view JsonRestore::handler_type() const noexcept {
  return JsonHandler::kTypeName;
}

// ------------------------------------------------------------------ bytes

/// Save arguments of BytesHandler: this rank's bytes (per-rank), or the same bytes on every
/// rank (replicated: the primary writes them once). The bytes are copied when the args are
/// made.
struct BytesSave final : CheckpointArgs {
  /// Saves `bytes_`, per rank or (`replicated_`) once for all ranks. Never throws beyond
  /// std::bad_alloc.
  explicit BytesSave(std::vector<std::byte> bytes_, bool replicated_ = false)
      : bytes(std::move(bytes_)), replicated(replicated_) {}
  std::string_view handler_type() const noexcept override;
  /// This rank's bytes (or every rank's, when replicated).
  std::vector<std::byte> bytes;
  /// Every rank holds the same bytes; the primary writes them once.
  bool replicated;
};

/// Restore arguments of BytesHandler. Per-rank blobs: rank r gets what rank `from_rank`
/// (default: r) saved; replicated blobs: every rank gets the one blob.
struct BytesRestore final : CheckpointArgs {
  BytesRestore() = default;
  /// Reads the per-rank blob that rank `from_rank_` saved. Never throws.
  explicit BytesRestore(int from_rank_) : from_rank(from_rank_) {}
  std::string_view handler_type() const noexcept override;
  /// The rank whose blob to read (per-rank blobs); empty: this rank's own.
  std::optional<int> from_rank;
};

/// Stores opaque bytes for codes that serialize themselves: `p<rank>.bin` per rank (or one
/// `replicated.bin`) with an XXH3-64 checksum each in `cairn-bytes.json`. restore() returns
/// std::vector<std::byte>. Restoring per-rank bytes on a rank the save did not have throws
/// NotFound naming the rank.
class BytesHandler final : public CheckpointHandler {
 public:
  /// The handler type recorded in step metadata.
  static constexpr std::string_view kTypeName = "cairn.bytes";
  std::string_view type_name() const noexcept override { return kTypeName; }
  std::unique_ptr<PendingSave> async_save(const Comm& comm, const std::filesystem::path& dir,
                                          const CheckpointArgs& args,
                                          const AsyncContext& context) override;
  std::any restore(const Comm& comm, const std::filesystem::path& dir,
                   const CheckpointArgs* args) override;
  boost::json::value metadata(const Comm& comm, const std::filesystem::path& dir) override;
};

inline std::string_view BytesSave::handler_type() const noexcept { return BytesHandler::kTypeName; }
inline std::string_view BytesRestore::handler_type() const noexcept {
  return BytesHandler::kTypeName;
}

// ------------------------------------------------------------------ composites

/// Arguments of a CompositeHandler: an immutable map from item name to the item's (save or
/// restore) arguments, and, for a save, optional custom metadata per item (a JSON object
/// stored in the step's cairn-step.json, returned by CompositeResult::custom_metadata() and
/// CompositeHandler::metadata()). Names are non-empty, valid as a path component, and do not
/// start with "__". An empty Composite given to restore means every item on disk, as null
/// arguments do. An item may be given null arguments (Orbax's `None`): a restore reads it
/// with the handler configured or recorded for it, as saved; a save leaves it out (see
/// CompositeHandler). Throws InvalidArgument naming a bad name, or custom metadata for an item
/// that is not among the items.
class Composite final : public CheckpointArgs {
 public:
  /// Item name -> the item's arguments.
  using Items = std::map<std::string, std::shared_ptr<const CheckpointArgs>>;
  /// Item name -> its custom metadata.
  using CustomMetadata = std::map<std::string, boost::json::object>;
  Composite() = default;
  /// The items {name, arguments}; arguments may be null (see the class comment). Throws
  /// InvalidArgument naming a bad name.
  Composite(std::initializer_list<Items::value_type> items);
  /// The items of `items`, with custom metadata for some of them. Throws InvalidArgument
  /// naming a bad name, or metadata for an item not among the items.
  explicit Composite(Items items, CustomMetadata custom_metadata = {});
  std::string_view handler_type() const noexcept override;
  /// A copy whose items are replaced by their with_load_and_broadcast(); null when no item
  /// changes.
  [[nodiscard]] std::shared_ptr<const CheckpointArgs> with_load_and_broadcast() const override;
  /// The names of the items. Never throws beyond std::bad_alloc.
  [[nodiscard]] std::optional<std::set<std::string>> item_names() const override;
  /// The items, sorted by name. Never throws.
  [[nodiscard]] const Items& items() const noexcept { return items_; }
  /// The arguments of `name`, or null (not among the items, or given null). Never throws.
  [[nodiscard]] const CheckpointArgs* find(std::string_view name) const noexcept;
  /// The custom metadata given per item (saved with them). Never throws.
  [[nodiscard]] const CustomMetadata& custom_metadata() const noexcept { return custom_; }

 private:
  Items items_;
  CustomMetadata custom_;
};

/// What a CompositeHandler restores: item name -> the item handler's result.
class CompositeResult {
 public:
  /// Whether `name` was restored. Never throws.
  [[nodiscard]] bool contains(std::string_view name) const noexcept;
  /// The result of `name` as T. Throws NotFound naming the item when it was not restored
  /// (e.g. absent on disk), InvalidArgument when it holds another type.
  template <class T>
  [[nodiscard]] const T& get(std::string_view name) const {
    const std::any& value = at(name);
    if (const T* typed = std::any_cast<T>(&value)) return *typed;
    throw_wrong_type(name);
  }
  /// Names restored, sorted. Never throws beyond std::bad_alloc.
  [[nodiscard]] std::vector<std::string> names() const;
  /// Adds or replaces an item's result. Not collective.
  void set(std::string name, std::any value) { items_[std::move(name)] = std::move(value); }
  /// The custom metadata saved with item `name` (Composite's per-item metadata), or an empty
  /// object when none was saved. Never throws beyond std::bad_alloc.
  [[nodiscard]] boost::json::object custom_metadata(std::string_view name) const;
  /// Sets the custom metadata of an item. Not collective.
  void set_custom_metadata(std::string name, boost::json::object metadata) {
    custom_[std::move(name)] = std::move(metadata);
  }

 private:
  [[nodiscard]] const std::any& at(std::string_view name) const;
  [[noreturn]] void throw_wrong_type(std::string_view name) const;
  std::map<std::string, std::any, std::less<>> items_;
  std::map<std::string, boost::json::object, std::less<>> custom_;
};

/// Stores several named items, each in its own sub-directory, each with its own handler.
/// Items are processed in sorted name order on every rank. restore() returns a
/// CompositeResult.
class CompositeHandler final : public CheckpointHandler {
 public:
  /// Items may be named up front with their handlers (fixed), or left to be resolved from
  /// the argument types on first use. `item_names`, when not empty, fixes the set of names a
  /// save may use. Handlers not given are made by `registry` (per item name, then per type:
  /// HandlerRegistry::create(item_name, type_name)); null: HandlerRegistry::global(). Throws
  /// InvalidArgument for bad names.
  explicit CompositeHandler(std::map<std::string, std::shared_ptr<CheckpointHandler>> handlers = {},
                            std::set<std::string> item_names = {},
                            std::shared_ptr<const HandlerRegistry> registry = nullptr);

  /// The handler type recorded in step metadata.
  static constexpr std::string_view kTypeName = "cairn.composite";
  /// The key a composite save adds to the step metadata: item name -> handler type.
  static constexpr std::string_view kItemsKey = "items";
  /// The key of item name -> custom metadata in the step metadata (only when some item has
  /// any).
  static constexpr std::string_view kItemCustomMetadataKey = "item_custom_metadata";
  std::string_view type_name() const noexcept override { return kTypeName; }
  /// Saves the items of `args` (a Composite of save arguments), each with its handler. An
  /// item given null arguments (Orbax's `None`) has nothing to write and is left out of the
  /// step (logged), but must be an item this handler knows (given a handler, named in
  /// `item_names`, or used before): else InvalidArgument naming it, on every rank.
  /// Collective. Throws as CheckpointHandler::async_save().
  std::unique_ptr<PendingSave> async_save(const Comm& comm, const std::filesystem::path& dir,
                                          const CheckpointArgs& args,
                                          const AsyncContext& context) override;
  /// Restores the items of `args` (a Composite of restore arguments) or, with null args or
  /// an empty Composite, every item on disk. An item's handler is the one given, used before,
  /// or recorded in the checkpoint's cairn-step.json and registered; restoring every item, or
  /// an item given null arguments (Orbax's `None`, read as saved), when the item's handler
  /// cannot be determined throws InvalidArgument naming the item on every rank. An item
  /// that `args` names but that is not on disk is left out of the result (logged), so
  /// CompositeResult::contains() tells; CompositeResult::get() of it throws NotFound.
  /// Collective.
  std::any restore(const Comm& comm, const std::filesystem::path& dir,
                   const CheckpointArgs* args) override;
  /// {"handler", "handlers": {name: type of the handlers known}, "items": {name: the item
  /// handler's metadata, or null when its handler cannot be determined}, "custom_metadata":
  /// {name: object}}. Collective.
  boost::json::value metadata(const Comm& comm, const std::filesystem::path& dir) override;
  void finalize(const Comm& comm, const std::filesystem::path& dir) override;
  void close() override;

  /// The handler fixed for `name`, or null. Never throws.
  [[nodiscard]] std::shared_ptr<CheckpointHandler> handler(std::string_view name) const;

 private:
  std::shared_ptr<CheckpointHandler> resolve(const std::string& name, std::string_view type);
  // The handler of `name`: known, or recorded in `recorded` and registered; null otherwise.
  std::shared_ptr<CheckpointHandler> known_or_recorded(
      const std::string& name, const std::map<std::string, std::string>& recorded);

  [[nodiscard]] const HandlerRegistry& registry() const noexcept;

  std::map<std::string, std::shared_ptr<CheckpointHandler>, std::less<>> handlers_;
  std::set<std::string, std::less<>> names_;
  std::shared_ptr<const HandlerRegistry> registry_;  // null: HandlerRegistry::global()
};

inline std::string_view Composite::handler_type() const noexcept {
  return CompositeHandler::kTypeName;
}

/// Checks that `name` can name a composite item: a valid leaf-path component that does not
/// start with "__". Throws InvalidArgument naming it. Not collective.
void validate_item_name(std::string_view name);

}  // namespace cairn
