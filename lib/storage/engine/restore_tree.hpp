// cairn — restoring a saved tree (internal): any number of ranks, any decomposition, each rank
// reading only the shards that meet its boxes (ShardSource drives the formats' readers). The
// public calls of storage.hpp (restore_tree(), restore_tree_as_saved(), read_tree_info()) are
// these, as save_tree() is TreeWriter (tree_writer.hpp).
#pragma once

#include <cairn/comm.hpp>
#include <cairn/storage.hpp>
#include <cairn/tree.hpp>

#include <filesystem>

namespace cairn::storage {

/// cairn::read_tree_info(): collective, throws as it documents.
[[nodiscard]] SavedTreeInfo read_tree_info(const Comm& comm, const std::filesystem::path& dir);

/// cairn::restore_tree(): collective, throws as it documents.
void restore_tree(const Comm& comm, const std::filesystem::path& dir, ArrayTree& target,
                  const TreeRestoreOptions& options);

/// cairn::restore_tree_as_saved(): collective, throws as it documents.
[[nodiscard]] ArrayTree restore_tree_as_saved(const Comm& comm, const std::filesystem::path& dir,
                                              const AsSavedOptions& options);

}  // namespace cairn::storage
