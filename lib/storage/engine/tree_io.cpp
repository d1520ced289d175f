// The public calls of storage.hpp that save and restore a tree, each the engine's: save_tree()
// is a TreeWriter driven in one go (tree_writer.hpp), the restores are restore_tree.hpp's.
#include <cairn/storage.hpp>

#include "storage/engine/restore_tree.hpp"
#include "storage/engine/tree_writer.hpp"
#include "storage/index/tree_index.hpp"

namespace cairn {

std::int64_t tree_format_version() noexcept { return storage::kTreeFormatVersionSections; }

bool is_tree_index_file(std::string_view file_name) noexcept {
  return file_name == storage::kTreeIndexFile || file_name == storage::kTreeIndexBinaryFile;
}

void save_tree(const Comm& comm, const std::filesystem::path& dir, const ArrayTree& tree,
               const TreeSaveOptions& options) {
  storage::TreeWriter writer(comm, dir, tree, options);
  for (std::size_t i = 0; i < writer.arrays().size(); ++i) writer.write_leaf(i);
  writer.flush();
  writer.finish(comm);
}

SavedTreeInfo read_tree_info(const Comm& comm, const std::filesystem::path& dir) {
  return storage::read_tree_info(comm, dir);
}

void restore_tree(const Comm& comm, const std::filesystem::path& dir, ArrayTree& target,
                  const TreeRestoreOptions& options) {
  storage::restore_tree(comm, dir, target, options);
}

ArrayTree restore_tree_as_saved(const Comm& comm, const std::filesystem::path& dir,
                                const AsSavedOptions& options) {
  return storage::restore_tree_as_saved(comm, dir, options);
}

}  // namespace cairn
