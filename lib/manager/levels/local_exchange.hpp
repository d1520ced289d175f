// cairn — the N->M restore of a local step across its node parts (internal). Each node's part
// of a step holds the shards its ranks saved; a restore under another decomposition asks for
// boxes that other nodes hold. Each rank then reads what its node-rank saved (checked against
// the chunk checksums as any read) and sends every other rank the overlap with that rank's
// target boxes over MPI: no rank reads another node's files. The plan is made before any byte
// is read, so that a restore the node parts cannot serve touches no target buffer.
#pragma once

#include <cairn/comm.hpp>
#include <cairn/handler.hpp>
#include <cairn/tree.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace cairn::levels {

/// How the array targets of one restore of a local step are served.
class LocalExchange {
 public:
  /// Plans the restore of `args` from the local step whose part on this node is `step_dir`
  /// (saved by the ranks of `node`, rank numbers as at the save). Reads this node's index of
  /// each array-tree item; finds the leaves where some rank's target box is not inside what
  /// its own node saved; for those, gathers every rank's saved and target boxes. Collective
  /// over `world` (and `node`). Throws what reading the index throws (NotFound, FormatError
  /// naming the file), TimeoutError.
  LocalExchange(const Comm& world, const Comm& node, const std::filesystem::path& step_dir,
                const CheckpointArgs& args);

  /// Whether the direct restore of each node's part leaves some target cells to other nodes.
  /// Same on every rank. Never throws.
  [[nodiscard]] bool needed() const noexcept { return !leaves_.empty(); }
  /// Why the node parts cannot serve this restore (a box no node saved, a target the exchange
  /// cannot fill), or empty. Same on every rank. Never throws.
  [[nodiscard]] const std::string& problem() const noexcept { return problem_; }

  /// After the direct restore of every node's part: fills the rest of each target by the
  /// exchange. Collective over `world` and `node`. Throws what reading the node's files
  /// throws (FormatError naming the file and leaf on a checksum mismatch), on every rank;
  /// TimeoutError.
  void run() const;

 private:
  // One array leaf whose targets need cells of other nodes.
  struct Leaf {
    std::filesystem::path item_dir;  // the item's directory in this node's part
    std::string path;                // the leaf's path
    ArrayShard target;               // this rank's target
    std::vector<Box> saved = {};     // per world rank: the box its node-rank saved
    std::vector<Box> targets = {};   // per world rank: its target box
  };

  const Comm& world_;
  const Comm& node_;
  std::vector<Leaf> leaves_;
  std::string problem_;
};

}  // namespace cairn::levels
