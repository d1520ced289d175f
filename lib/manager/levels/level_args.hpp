// cairn — the arguments of the node-local level's saves and drains (internal): the caller's
// arguments made fit for a node's part of a step, and rebuilt from the local files for the
// drain to the persistent level.
#pragma once

#include <boost/json/object.hpp>
#include <cairn/comm.hpp>
#include <cairn/handler.hpp>
#include <cairn/storage.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

namespace cairn::levels {

/// `args` with every deferred array tree (ArrayTreeSave::deferred) built once, so that the
/// local save and the drain save the same tree; other arguments are shared as they are
/// (`args` itself is aliased, not copied: it must outlive the result). Not collective.
/// Throws what a tree's build function throws.
[[nodiscard]] std::shared_ptr<const CheckpointArgs> resolve_args(const CheckpointArgs& args);

/// The arguments of a node's local save of `resolved`: array trees in the posix format,
/// uncompressed, one file per rank, every leaf allowed sparse (a node holds only its ranks'
/// boxes), no incremental base; other items as they are. Not collective; never throws beyond
/// std::bad_alloc.
[[nodiscard]] std::shared_ptr<const CheckpointArgs> local_save_args(
    const std::shared_ptr<const CheckpointArgs>& resolved);

/// The arguments that save `resolved` again from its local step `local_step`, where this
/// rank is `node_rank` of its node: each array shard points into a read-only map of the
/// local file holding it (the map lives as long as the arguments), scalars, strings, JSON and
/// bytes items are copies. The persistent save writes them in the caller's format and
/// compression, paced at `bytes_per_second` (0: unpaced). Returns null when an item's
/// arguments are not cairn's own (a user's handler), which cannot be rebuilt from files. Not
/// collective. Throws FormatError or NotFound naming the local file that lacks a shard.
[[nodiscard]] std::shared_ptr<const CheckpointArgs> drain_args(
    const std::shared_ptr<const CheckpointArgs>& resolved, const std::filesystem::path& local_step,
    int node_rank, std::uint64_t bytes_per_second);

/// What args_from_local_step() read back.
struct LocalStepArgs {
  /// The save arguments; null when an item cannot be rebuilt from files.
  std::shared_ptr<const CheckpointArgs> args;
  /// The item (or the step's handler) that cannot be rebuilt: its handler is a user's.
  std::string not_rebuilt;
  /// The step's custom metadata as the local save recorded it (metrics, the caller's
  /// metadata, the decision time).
  boost::json::object custom;
};

/// The arguments that save the local step `local_step` again, read back from the node's files
/// alone (for a step that this process did not save): each array tree is restored as saved
/// over `node_comm` (each rank gets the boxes its node rank wrote, checked against their
/// checksums) and saved with the options `like` holds for its item (by item name; "" for a
/// step of one item) or TreeSaveOptions' defaults, every leaf allowed sparse, paced at
/// `bytes_per_second`; JSON and bytes items are read back; a composite keeps its items' custom
/// metadata. Collective over `node_comm`. Throws NotFound, FormatError naming the file that
/// cannot be read, and what a restore throws.
[[nodiscard]] LocalStepArgs args_from_local_step(const Comm& node_comm,
                                                 const std::filesystem::path& local_step,
                                                 const std::map<std::string, TreeSaveOptions>& like,
                                                 std::uint64_t bytes_per_second);

/// The format and compression of every array leaf of the array tree items of the committed
/// checkpoint `step_dir` (by item name; "" for a checkpoint of one item), as TreeSaveOptions
/// that save a tree of the same leaves alike; items of other handlers are left out.
/// Collective over `comm` (the primary reads, every rank parses). Throws NotFound,
/// FormatError naming the file.
[[nodiscard]] std::map<std::string, TreeSaveOptions> tree_options_of(
    const Comm& comm, const std::filesystem::path& step_dir);

/// Whether a restore with `args` (null: every item as saved) can be served by a node's local
/// files alone: array trees must be restored into targets (a node does not hold the whole
/// arrays), bytes without from_rank. When not, `why` says what needs the persistent level.
/// Not collective; never throws beyond std::bad_alloc.
[[nodiscard]] bool locally_restorable(const CheckpointArgs* args, std::string& why);

}  // namespace cairn::levels
