// StandardCheckpointer: a Checkpointer with an ArrayTreeHandler, one call per save or restore.
#include <cairn/standard_checkpointer.hpp>

#include <memory>

namespace cairn {

StandardCheckpointer::StandardCheckpointer(const Comm& comm)
    : checkpointer_(comm, std::make_shared<ArrayTreeHandler>()) {}

void StandardCheckpointer::save(const std::filesystem::path& dir, const ArrayTree& tree,
                                const StandardSaveOptions& options) {
  checkpointer_.save(dir, ArrayTreeSave(tree, options.tree), options.checkpoint);
}

ArrayTree StandardCheckpointer::restore(const std::filesystem::path& dir, const ArrayTree& target,
                                        const TreeRestoreOptions& options) {
  const ArrayTreeRestore args(target, options);
  return checkpointer_.restore_as<ArrayTree>(dir, &args);
}

ArrayTree StandardCheckpointer::restore(const std::filesystem::path& dir,
                                        const AsSavedOptions& options) {
  const ArrayTreeRestore args(options);
  return checkpointer_.restore_as<ArrayTree>(dir, &args);
}

boost::json::value StandardCheckpointer::metadata(const std::filesystem::path& dir) {
  return checkpointer_.metadata(dir);
}

}  // namespace cairn
