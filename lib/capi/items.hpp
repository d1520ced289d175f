// cairn C ABI — composite items: the C++ save and restore arguments of a cairn_items set.
#pragma once

#include <cairn/handlers.hpp>
#include <cairn/storage.hpp>

#include "capi/handles.hpp"

namespace cairn::capi {

/// The Composite save arguments of every item. Throws InvalidArgument for an item without a
/// value (a JSON item added with NULL text, a tree item with a NULL tree).
Composite save_args(const cairn_items& items, const TreeSaveOptions& tree_options);
/// The Composite restore arguments of every item: tree items with a tree are targets, the
/// others are restored as saved; JSON items are read. Converts the logical leaves of target
/// trees into their buffers (cairn_tree::before_restore). Throws InvalidArgument.
Composite restore_args(const cairn_items& items, const TreeRestoreOptions& target_options,
                       const AsSavedOptions& as_saved);
/// Stores the restored values in the items (target trees in place, their logical leaves
/// written back). Throws NotFound for an item missing from `result`.
void take_results(cairn_items& items, const CompositeResult& result);

}  // namespace cairn::capi
