// cairn — StandardCheckpointer: one array tree saved and restored with a plain checkpointer
// in one call each (Orbax's StandardCheckpointer), for the common case of a simulation state
// that is a single ArrayTree.
#pragma once

#include <cairn/checkpointer.hpp>
#include <cairn/comm.hpp>
#include <cairn/handlers.hpp>
#include <cairn/storage.hpp>
#include <cairn/tree.hpp>

#include <boost/json/value.hpp>
#include <filesystem>

namespace cairn {

/// Options of StandardCheckpointer::save(). Aggregate: use designated initializers.
struct StandardSaveOptions {
  /// How the tree is stored (format per leaf, sparse leaves, fsync, checksum chunks).
  TreeSaveOptions tree = {};
  /// Replace an existing checkpoint at the same path (otherwise InvalidArgument), and the
  /// custom metadata of cairn-step.json.
  CheckpointSaveOptions checkpoint = {};
};

/// Saves and restores one ArrayTree per checkpoint directory with the commit protocol of
/// Checkpointer and an ArrayTreeHandler. A checkpoint it writes is an ordinary cairn
/// checkpoint of handler "cairn.array_tree": Checkpointer, CheckpointManager and the `cairn`
/// tool read it. Unlike Orbax's StandardCheckpointer, which saves in the background, save()
/// returns once the checkpoint is committed; AsyncCheckpointer with ArrayTreeSave arguments is
/// the background form.
///
/// Every member is collective over the Comm given at construction: all ranks call it in the
/// same order.
class StandardCheckpointer {
 public:
  /// Duplicates `comm`. Collective.
  explicit StandardCheckpointer(const Comm& comm);

  /// Writes `tree` as the checkpoint `dir`. Collective. Throws as Checkpointer::save():
  /// InvalidArgument when `dir` holds a committed checkpoint (unless
  /// options.checkpoint.force) or the tree is not valid on some rank, I/O errors on every
  /// rank; nothing is committed then.
  void save(const std::filesystem::path& dir, const ArrayTree& tree,
            const StandardSaveOptions& options = {});

  /// Reads the checkpoint `dir` into the buffers of `target` (any decomposition and rank
  /// count; casts when options.allow_cast) and returns the target with its scalars, strings
  /// and JSON leaves filled in. Collective. Throws NotFound for a missing checkpoint or leaf,
  /// FormatError for a damaged or incomplete one, InvalidArgument when the target does not
  /// match what was saved; on every rank.
  [[nodiscard]] ArrayTree restore(const std::filesystem::path& dir, const ArrayTree& target,
                                  const TreeRestoreOptions& options = {});

  /// Reads the checkpoint `dir` as it was saved, into buffers the returned tree owns (each
  /// rank the box it saved; see AsSavedOptions for whole arrays and selections). Collective.
  /// Throws as the other restore().
  [[nodiscard]] ArrayTree restore(const std::filesystem::path& dir,
                                  const AsSavedOptions& options = {});

  /// The metadata of the checkpoint `dir` (leaves, dtypes, shapes; see
  /// ArrayTreeHandler::metadata()). Collective. Throws NotFound or FormatError on every rank.
  [[nodiscard]] boost::json::value metadata(const std::filesystem::path& dir);

 private:
  Checkpointer checkpointer_;
};

}  // namespace cairn
