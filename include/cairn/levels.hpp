// cairn — multi-level checkpointing: a node-local level (tmpfs, NVMe) that every save of a
// CheckpointManager goes to, protected by copies on other nodes, and the persistent level (the
// manager's root) that some saves reach through a background drain from the local files.
#pragma once

#include <cairn/policies.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace cairn {

/// How a node's local files are protected against the loss of the node (SCR's names).
struct LocalRedundancy {
  /// The scheme.
  enum class Kind : std::uint8_t {
    none,        ///< no copy: a lost node's step is served by the persistent level
    partner,     ///< each node also stores the files of the node `partner_distance` before it
    xor_parity,  ///< groups of `xor_group` nodes; each stores one parity segment (RAID-5)
  };
  /// The scheme.
  Kind kind = Kind::none;
  /// partner: node n stores a copy of node (n - distance) mod nodes, so that a node and its
  /// copy are `distance` nodes apart (another rack, another power domain). At least 1 and
  /// less than the number of nodes.
  int partner_distance = 1;
  /// xor: nodes per group (consecutive node numbers; a last group of one node joins the one
  /// before it). At least 2. Each node stores about 1/(group - 1) of its data in parity.
  int xor_group = 4;

  /// No redundancy. Never throws.
  [[nodiscard]] static LocalRedundancy none() noexcept { return {}; }
  /// Partner copies `distance` nodes apart. Never throws (validated by the manager).
  [[nodiscard]] static LocalRedundancy partner(int distance = 1) noexcept {
    return {.kind = Kind::partner, .partner_distance = distance};
  }
  /// XOR parity over groups of `group` nodes. Never throws (validated by the manager).
  [[nodiscard]] static LocalRedundancy xor_parity(int group = 4) noexcept {
    return {.kind = Kind::xor_parity, .xor_group = group};
  }
  /// "none", "partner(distance=1)", "xor(group=4)". Never throws beyond std::bad_alloc.
  [[nodiscard]] std::string describe() const;
  /// Parses "none", "partner", "partner=D", "xor", "xor=G" (the spelling of heat2d's
  /// --redundancy and of the C API). Not collective. Throws InvalidArgument naming `text`.
  [[nodiscard]] static LocalRedundancy parse(std::string_view text);
};

/// The node-local level of a CheckpointManager (CheckpointManagerOptions::local_level).
/// Aggregate: use designated initializers.
///
/// Every save goes to the local level: each node writes its ranks' shards, their shard
/// records and checksums, and the step's small metadata into its own directory (an ordinary
/// cairn checkpoint of the node's part, listed by `cairn ls` and checked by `cairn verify`
/// there), commits it, then the redundancy copies are placed over MPI; the step counts as
/// saved once every node holds it. Saves chosen by `persistent_every` / `persistent_policy`
/// (and the preemption save) are then drained: written from the local files to the manager's
/// root in the background, as an ordinary checkpoint of the configured format. A restore
/// reads the local level when the step is there on every node (rebuilding a lost node from
/// its copies first) and the job has the same world size and node layout, else the
/// persistent level.
struct LocalLevelOptions {
  /// The node-local directory; `{node}` in it is replaced by the node's number (0, 1, ...),
  /// so that nodes simulated on one machine get directories of their own. It is created when
  /// missing. Must not be empty, nor inside the manager's root, nor inside a checkpoint (a
  /// step of another root): the manager's constructor throws InvalidArgument on every rank.
  std::filesystem::path directory = {};
  /// How nodes protect each other's local files.
  LocalRedundancy redundancy = {};
  /// Local steps kept on each node (the newest ones). At least 1.
  int keep = 2;
  /// Every this many local saves (counted by saves, not steps) one is also drained to the
  /// persistent level; 1: every save; 0: none but the preemption save and the one at close().
  /// The count goes on across jobs that use the same local directory (the level keeps it), so
  /// a restarted job does not count from zero. Must not be negative. Ignored when
  /// persistent_policy is set.
  std::int64_t persistent_every = 1;
  /// Decides which local saves are also drained (asked on the primary, with the newest
  /// persistent step as SaveContext::last_saved_step); replaces persistent_every.
  std::shared_ptr<const SaveDecisionPolicy> persistent_policy = {};
  /// Drain the save made at a preemption (reached_preemption()) whatever the two above say.
  bool persistent_on_preemption = true;
  /// At close(), drain the newest local step when it is newer than the newest persistent one,
  /// whoever saved it, and wait for it (SCR's flush at the end of an allocation; see
  /// CheckpointManager::drain()).
  bool drain_at_close = true;
  /// Pace of the drain's writes in bytes per second on each rank; 0: as fast as the file
  /// system takes them. A paced drain leaves bandwidth to the job's own I/O.
  std::uint64_t drain_bytes_per_second = 0;
  /// Ranks per node: 0 takes the nodes MPI reports (MPI_Comm_split_type SHARED), or the
  /// environment variable CAIRN_RANKS_PER_NODE when it is set; n > 0 groups n consecutive
  /// ranks into one simulated node (tests and benchmarks on one machine).
  int ranks_per_node = 0;
};

/// Where a CheckpointManager's last restore read from (CheckpointManager::last_restore()).
struct LevelRestore {
  /// The step restored; -1 before any restore.
  std::int64_t step = -1;
  /// "local" or "persistent".
  std::string level = {};
  /// Nodes whose local files were rebuilt from their copies before a local restore.
  std::vector<int> rebuilt_nodes = {};
  /// Whether a local restore moved cells between nodes over MPI: the restore asked for boxes
  /// other than those each node's ranks saved (another process grid or decomposition).
  bool exchanged = false;
  /// Why the local level did not serve (empty when it did, or when there is no local level).
  std::string why_not_local = {};
};

/// What a CheckpointManager's last drain decision did (CheckpointManager::last_drain(), and
/// what drain_local_level() returns).
struct LevelDrain {
  /// The local step written to the root; -1 when none was.
  std::int64_t step = -1;
  /// The newest step of the local level when the drain was decided; -1 when it held none.
  std::int64_t newest_local = -1;
  /// The newest step of the root when the drain was decided; -1 when it held none.
  std::int64_t newest_persistent = -1;
  /// Nodes whose local files were rebuilt from their copies before the drain.
  std::vector<int> rebuilt_nodes = {};
  /// Why no step was written (empty when one was): nothing newer than the root's newest
  /// step, or why the newest local step could not be drained.
  std::string why_not = {};
  /// Whether a local step newer than the root's newest could not be drained (lost beyond
  /// repair, damaged, an item of a user's handler, saved by a job of another layout); false
  /// when one was drained and when none needed to be.
  bool failed = false;
};

/// The local-save interval of Young and Daly for a save that costs `cost` and a mean time
/// between failures `mtbf`: sqrt(2 * cost * mtbf) (SCR_Need_checkpoint's advice). Not
/// collective. Throws InvalidArgument when either is not positive.
[[nodiscard]] std::chrono::duration<double> young_daly_interval(std::chrono::duration<double> cost,
                                                                std::chrono::duration<double> mtbf);

namespace save_policy {

/// Saves when the time since the newest save reaches young_daly_interval() of the measured
/// cost of the manager's saves (SaveContext::last_save_cost, the blocking time of the last
/// save) and `mtbf`; saves at once when no save was measured yet. With a local level the
/// cost is that of a local save. `assumed_cost` stands in until a save was measured.
class YoungDaly final : public SaveDecisionPolicy {
 public:
  /// Not collective. Throws InvalidArgument when `mtbf` is not positive or `assumed_cost` is
  /// negative.
  explicit YoungDaly(std::chrono::duration<double> mtbf,
                     std::chrono::duration<double> assumed_cost = {});
  [[nodiscard]] bool should_save(const SaveContext& context) const override;
  [[nodiscard]] std::string describe() const override;
  /// The interval it would wait for a save of `cost` (young_daly_interval()). Throws as it.
  [[nodiscard]] std::chrono::duration<double> interval(std::chrono::duration<double> cost) const;

 private:
  std::chrono::duration<double> mtbf_;
  std::chrono::duration<double> assumed_cost_;
};

}  // namespace save_policy

}  // namespace cairn
