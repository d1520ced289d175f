// The restore transforms of restore_tree(): which saved leaf fills each target leaf
// (TreeRestoreOptions::renames), the padding of a resized leaf's target
// (TreeRestoreOptions::resize_leaves) and the leaves derived from several saved ones
// (TreeRestoreOptions::derived_leaves, the one collective function here).
#pragma once

#include <cairn/storage.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "storage/index/tree_index.hpp"

namespace cairn::storage {

/// The saved path of each target path under TreeRestoreOptions::renames; the same on every
/// rank (every rank has the same target structure and options).
class SavedPaths {
 public:
  /// Compiles the rules. Throws InvalidArgument naming a pattern that is not a regular
  /// expression.
  explicit SavedPaths(const TreeRestoreOptions& options);

  /// The saved path of `target`: the first matching rule's, else `target` itself when
  /// default_to_original, else std::nullopt. Throws InvalidArgument when a rule makes a path
  /// that is not a leaf path.
  [[nodiscard]] std::optional<std::string> of(const std::string& target) const;

 private:
  std::vector<std::pair<std::regex, std::string>> rules_;
  bool default_to_original_ = true;
};

/// Sets every element of the box of `target` to `fill`, converted to its dtype: a resized
/// leaf's target reaches beyond the saved shape, and the saved elements are read over it
/// afterwards. Throws InvalidArgument (naming `path`) when the fill value does not fit the
/// dtype, Unsupported for device memory.
void pad_target(const ArrayShard& target, MemoryKind memory, const Scalar& fill,
                const std::string& path);

/// Whether `box` reaches beyond `shape` (a resized leaf's target that needs padding). Never
/// throws.
[[nodiscard]] bool beyond(const Box& box, const std::vector<std::int64_t>& shape) noexcept;

/// Checks every rule of TreeRestoreOptions::derived_leaves against the target and `index`, so
/// that a bad rule fails before anything is read. Not collective: the same outcome on every
/// rank. Throws as TreeRestoreOptions::derived_leaves documents.
void check_derived(const std::filesystem::path& dir, const TreeIndex& index,
                   const ArrayTree& target, const TreeRestoreOptions& options);

/// Restores a tree of source leaves with the given options (restore_tree() on the index it
/// read). Collective.
using RestoreSources = std::function<void(ArrayTree& sources, const TreeRestoreOptions& options)>;

/// Computes every derived leaf of `target` (TreeRestoreOptions::derived_leaves), one at a time:
/// checks the rule against `index`, restores the sources into buffers of this rank's box of
/// the target through `restore`, then calls the rule's fill. Collective over `comm`. Throws,
/// on every rank alike, as TreeRestoreOptions::derived_leaves documents and what `fill` throws
/// on any rank.
void restore_derived(const Comm& comm, const std::filesystem::path& dir, const TreeIndex& index,
                     const ArrayTree& target, const TreeRestoreOptions& options,
                     const RestoreSources& restore);

}  // namespace cairn::storage
