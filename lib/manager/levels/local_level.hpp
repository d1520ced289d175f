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
#include "manager/step_dirs.hpp"

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
  /// Splits `world` into nodes, creates this node's directory, takes its lock (see
  /// acquire_lock(), with `lock_lease`) and lists its steps. Throws
  /// InvalidArgument for bad options (naming the field) or when a node's directory serves
  /// another root than `persistent_root` (the manager's, canonical), IoError naming the
  /// directory. `root_metadata` (the manager's cairn-root.json) is written, with the node's
  /// size as its world size and `persistent_root`, into a node directory that has none, so
  /// that tools read the directory as an ordinary root.
  LocalLevel(const Comm& world, LocalLevelOptions options, StepNameFormatPtr naming,
             CheckpointerOptions checkpointer, boost::json::object root_metadata,
             const std::filesystem::path& persistent_root, std::chrono::seconds lock_lease);
  /// Releases the node directories' locks. Not collective; never throws.
  ~LocalLevel();
  LocalLevel(const LocalLevel&) = delete;
  LocalLevel& operator=(const LocalLevel&) = delete;

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
    bool exchanged = false;          ///< cells moved between nodes (another decomposition)
  };
  /// Restores `step` from the local level, first rebuilding the nodes whose part is missing
  /// or damaged from their copies; `handler_for` gives the handler for the type recorded in
  /// the node's step (called on every rank after any rebuild). Targets that ask for cells
  /// other nodes saved (another decomposition) are filled by LocalExchange. Returns
  /// std::nullopt, with `why` alike on every rank, when the level cannot serve the step (lost
  /// beyond repair, damaged, cells in no node's part, a target the exchange cannot fill, a
  /// restore that failed on some node): the caller then reads the persistent level. Throws
  /// TimeoutError and what `handler_for` throws.
  [[nodiscard]] std::optional<Restored> restore(
      std::int64_t step,
      const std::function<std::shared_ptr<CheckpointHandler>(const std::filesystem::path&)>&
          handler_for,
      const CheckpointArgs* args, std::string& why);

  /// Keeps the newest LocalLevelOptions::keep steps on every node and removes the others
  /// (records first, so that a half-removed step is never one). Steps that a job of another
  /// layout (world size, node sizes) recorded are kept until this job holds a newer step.
  /// Throws IoError on every rank.
  void retain();

  /// Makes `step` readable on every node, as restore() does first: checks each node's part
  /// and rebuilds the lost or damaged ones from their copies (their numbers are added to
  /// `rebuilt`). Returns false, with `why` alike on every rank, when the step is lost beyond
  /// repair. Throws TimeoutError.
  [[nodiscard]] bool make_readable(std::int64_t step, std::vector<int>& rebuilt, std::string& why);

 private:
  struct Record {
    std::int64_t step = 0;
    int node = 0;  // the node that saved this part of the step: the part's number
    std::optional<std::uint64_t> archive_xxh3;
    std::int64_t time_ns = 0;
    // Every node's archive checksum of the step, as the nodes shared them when it was saved.
    std::vector<std::optional<std::uint64_t>> archives = {};
  };
  [[nodiscard]] std::filesystem::path record_path(std::int64_t step) const;
  [[nodiscard]] std::filesystem::path copy_path(std::int64_t step) const;
  [[nodiscard]] std::optional<Record> read_record(std::int64_t step) const;
  void write_record(std::int64_t step, int part, std::optional<std::uint64_t> archive_xxh3,
                    std::chrono::system_clock::time_point time,
                    const std::vector<std::optional<std::uint64_t>>& archives) const;
  // On the leaders: places this node's copies of `step` and returns every node's archive
  // checksum.
  [[nodiscard]] std::vector<std::optional<std::uint64_t>> place_copies(
      std::int64_t step, std::optional<std::uint64_t>& archive_xxh3);
  // The binding of the redundancy files of `step` with the recorded archive checksums.
  [[nodiscard]] Binding binding(std::int64_t step,
                                std::vector<std::optional<std::uint64_t>> archives) const;
  // Which part of a step (the number of the node that saved it) each node holds, or takes in
  // place of a lost one: parts are matched to nodes by what the node directories record, not
  // by position, so that a job restarted with its nodes in another order (a spare anywhere in
  // the host list) finds them. Meaningful on the leaders.
  struct Parts {
    int part = 0;                      // this node's part
    std::vector<int> node_of = {};     // part -> the node that holds it or takes its place
    std::optional<Comm> ordered = {};  // the leaders ordered by part, when not node order
  };
  // Assigns the parts of `step`. Collective over the world.
  [[nodiscard]] Parts assign_parts(std::int64_t step);
  [[nodiscard]] bool repair(std::int64_t step, const Parts& parts, std::vector<int>& rebuilt,
                            std::string& why);
  void ensure_checkpointer(const std::shared_ptr<CheckpointHandler>& handler);
  // Why the record of `step` on this node is of another layout, or std::nullopt when it is
  // not a level record at all.
  [[nodiscard]] std::optional<std::string> other_layout(std::int64_t step) const;
  // On a leader: removes the step directories of this node that are not `kept` (ascending).
  void remove_unkept(const std::vector<std::int64_t>& kept) const;

  const Comm& world_;
  LocalLevelOptions options_;
  StepNameFormatPtr naming_;
  CheckpointerOptions checkpointer_options_;
  NodeLayout layout_;
  Redundancy scheme_;
  std::uint64_t source_ = 0;                    // XXH3-64 of the persistent root's path
  std::filesystem::path directory_;             // this node's
  std::unique_ptr<Checkpointer> checkpointer_;  // over the node's ranks
  // On a leader: the node directory's lock (cairn.lock, as a root's), renewed while held, so
  // that `cairn gc` and another job leave the directory alone.
  bool locked_ = false;
  std::unique_ptr<manager::LockRenewal> lock_renewal_;
  std::vector<std::int64_t> steps_;
  // On a leader: the steps this node holds for another layout, ascending.
  std::vector<std::int64_t> other_layouts_;
  std::map<std::int64_t, std::int64_t> times_;  // step -> decision time (ns), where recorded
};

}  // namespace cairn::levels
