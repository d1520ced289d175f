// The restore transforms of restore_tree(): which saved leaf fills each target leaf
// (TreeRestoreOptions::renames) and the padding of a resized leaf's target
// (TreeRestoreOptions::resize_leaves). Nothing here is collective.
#pragma once

#include <cairn/storage.hpp>

#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <utility>
#include <vector>

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

}  // namespace cairn::storage
