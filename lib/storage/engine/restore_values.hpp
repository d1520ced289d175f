// cairn — the values of a restored tree (internal): the saved scalars, strings and JSON values
// put in place of the target's own, after its arrays are read (restore_tree.cpp).
#pragma once

#include <cairn/tree.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include "storage/index/tree_index.hpp"

namespace cairn::storage {

/// The saved record of each target leaf path that has one.
using SavedOf = std::map<std::string, const LeafRecord*, std::less<>>;

/// Rebuilds `target` with the saved scalars, strings and JSON values of `saved_of` in place of
/// its own (its arrays and empty nodes kept). Local. Throws FormatError naming `dir` and the
/// leaf for a saved scalar that does not parse.
void restore_values(const std::filesystem::path& dir, const SavedOf& saved_of, ArrayTree& target);

}  // namespace cairn::storage
