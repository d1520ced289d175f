// cairn — the node-local level of a CheckpointManager (internal): each node's part of a step as
// an ordinary checkpoint in the node's own directory, the step's record on every node, the
// redundancy copies placed and rebuilt over MPI, and retention of the local steps.
//
// A node's local directory:
//   <step name>/                    the node's part: a checkpoint over the node's ranks
//   cairn-level/<step name>.json    the step's record: layout, archive size and checksum
//   cairn-level/<step name>.copy    the redundancy file: a partner's copy or a parity segment
#pragma once

#include <cairn/checkpointer.hpp>
#include <cairn/levels.hpp>
#include <cairn/manager.hpp>

#include <any>
#include <boost/json/object.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "manager/levels/node_layout.hpp"
#include "manager/levels/redundancy.hpp"

namespace cairn::levels {

/// Name of the folder of step records and redundancy files in a node's local directory.
inline constexpr const char* kLevelFolder = "cairn-level";

/// `directory` with "{node}" replaced by `node`. Never throws beyond std::bad_alloc.
[[nodiscard]] std::filesystem::path node_directory(const std::filesystem::path& directory,
                                                   int node);

/// The redundancy scheme of `redundancy` checked against `nodes`. Throws InvalidArgument
/// naming the field. Not collective.
[[nodiscard]] Redundancy scheme_of(const LocalRedundancy& redundancy, int nodes);

/// One manager's node-local level. Every member is collective over the manager's ranks
/// unless it says otherwise.
class LocalLevel {
 public:
  /// Splits `world` into nodes, creates this node's directory and lists its steps. Throws
  /// InvalidArgument for bad options (naming the field) or when a node's directory serves
  /// another root than `persistent_root` (the manager's, canonical), IoError naming the
  /// directory. `root_metadata` (the manager's cairn-root.json) is written, with the node's
  /// size as its world size and `persistent_root`, into a node directory that has none, so
  /// that tools read the directory as an ordinary root.
  LocalLevel(const Comm& world, LocalLevelOptions options, StepNameFormatPtr naming,
             CheckpointerOptions checkpointer, boost::json::object root_metadata,
             const std::filesystem::path& persistent_root);

  /// Re-reads the steps recorded on every node.
  void scan();
  /// Steps recorded on at least one node for this job's layout, ascending (whether every
  /// node still holds them is found at restore). Not collective; never throws.
  [[nodiscard]] const std::vector<std::int64_t>& steps() const noexcept { return steps_; }
  /// Whether `step` is one of steps(). Not collective; never throws.
  [[nodiscard]] bool has(std::int64_t step) const noexcept;
  /// The decision time recorded with `step` (std::nullopt when unknown). Not collective.
  [[nodiscard]] std::optional<std::chrono::system_clock::time_point> time_of(
      std::int64_t step) const;
  /// This node's directory of `step`. Not collective.
  [[nodiscard]] std::filesystem::path step_dir(std::int64_t step) const;
  /// The nodes. Not collective; never throws.
  [[nodiscard]] const NodeLayout& layout() const noexcept { return layout_; }
  /// The options. Not collective; never throws.
  [[nodiscard]] const LocalLevelOptions& options() const noexcept { return options_; }
  /// This node's directory. Not collective; never throws.
  [[nodiscard]] const std::filesystem::path& directory() const noexcept { return directory_; }

  /// Saves `args` as `step` on every node with `handler`, places the redundancy copies and
  /// records the step on every node; only then does it count. Throws on every rank when any
  /// rank failed; a node's part already committed is removed again.
  void save(std::int64_t step, const std::shared_ptr<CheckpointHandler>& handler,
            const CheckpointArgs& args, const CheckpointSaveOptions& options,
            std::chrono::system_clock::time_point time);

  /// What restore() found.
  struct Restored {
    std::any result;                 ///< what the handler returned
    std::vector<int> rebuilt_nodes;  ///< nodes rebuilt from their copies first
  };
  /// Restores `step` from the local level, first rebuilding the nodes whose part is missing
  /// or damaged from their copies; `handler_for` gives the handler for the type recorded in
  /// the node's step (called on every rank after any rebuild). Returns std::nullopt, with
  /// `why` alike on every rank, when the level cannot serve the step (lost beyond repair,
  /// damaged, a restore that failed on some node): the caller then reads the persistent
  /// level. Throws TimeoutError and what `handler_for` throws.
  [[nodiscard]] std::optional<Restored> restore(
      std::int64_t step,
      const std::function<std::shared_ptr<CheckpointHandler>(const std::filesystem::path&)>&
          handler_for,
      const CheckpointArgs* args, std::string& why);

  /// Keeps the newest LocalLevelOptions::keep steps on every node and removes the others
  /// (records first, so that a half-removed step is never one). Throws IoError on every rank.
  void retain();

  /// Makes `step` readable on every node, as restore() does first: checks each node's part
  /// and rebuilds the lost or damaged ones from their copies (their numbers are added to
  /// `rebuilt`). Returns false, with `why` alike on every rank, when the step is lost beyond
  /// repair. Throws TimeoutError.
  [[nodiscard]] bool make_readable(std::int64_t step, std::vector<int>& rebuilt, std::string& why);

 private:
  struct Record {
    std::int64_t step = 0;
    std::optional<std::uint64_t> archive_xxh3;
    std::int64_t time_ns = 0;
  };
  [[nodiscard]] std::filesystem::path record_path(std::int64_t step) const;
  [[nodiscard]] std::filesystem::path copy_path(std::int64_t step) const;
  [[nodiscard]] std::optional<Record> read_record(std::int64_t step) const;
  void write_record(std::int64_t step, std::optional<std::uint64_t> archive_xxh3,
                    std::chrono::system_clock::time_point time) const;
  void place_copies(std::int64_t step, std::optional<std::uint64_t>& archive_xxh3);
  [[nodiscard]] bool repair(std::int64_t step, std::vector<int>& rebuilt, std::string& why);
  void ensure_checkpointer(const std::shared_ptr<CheckpointHandler>& handler);
  // On a leader: removes the step directories of this node that are not `kept` (ascending).
  void remove_unkept(const std::vector<std::int64_t>& kept) const;

  const Comm& world_;
  LocalLevelOptions options_;
  StepNameFormatPtr naming_;
  CheckpointerOptions checkpointer_options_;
  NodeLayout layout_;
  Redundancy scheme_;
  std::filesystem::path directory_;             // this node's
  std::unique_ptr<Checkpointer> checkpointer_;  // over the node's ranks
  std::vector<std::int64_t> steps_;
  std::map<std::int64_t, std::int64_t> times_;  // step -> decision time (ns), where recorded
};

}  // namespace cairn::levels
