// cairn — which ranks share a node, for the node-local level (internal): a communicator over
// each node's ranks and one over the nodes' leaders, from MPI's shared-memory split or from a
// fixed number of consecutive ranks per simulated node.
#pragma once

#include <cairn/comm.hpp>

#include <optional>
#include <string>
#include <vector>

namespace cairn::levels {

/// The nodes of a communicator. Node numbers follow the lowest rank of each node.
struct NodeLayout {
  int node = 0;                   ///< this rank's node
  int nodes = 1;                  ///< how many nodes
  std::vector<int> node_sizes;    ///< ranks of each node, by node number
  std::optional<Comm> node_comm;  ///< this node's ranks (node rank 0 is its leader)
  /// The leaders of every node, rank = node number; std::nullopt on the other ranks.
  std::optional<Comm> leaders;

  /// Whether this rank is its node's leader. Never throws.
  [[nodiscard]] bool leader() const noexcept { return leaders.has_value(); }
  /// "4 nodes of 1 rank", "2 nodes of 2 ranks", "3 nodes of 1-2 ranks". Never throws beyond
  /// std::bad_alloc.
  [[nodiscard]] std::string describe() const;
};

/// The ranks per node that `requested` (LocalLevelOptions::ranks_per_node) and the environment
/// variable CAIRN_RANKS_PER_NODE ask for: `requested` when positive, else the variable when
/// set, else 0 (nodes as MPI reports them). Not collective. Throws InvalidArgument for a
/// negative request or a variable that is not a positive integer.
[[nodiscard]] int requested_ranks_per_node(int requested);

/// Splits `world` into nodes: `ranks_per_node` consecutive ranks each when positive, else
/// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED). Collective over `world`; the ranks first agree
/// on `ranks_per_node` (CollectiveMismatch on every rank otherwise), so that no split hangs.
/// Throws IoError when MPI fails.
[[nodiscard]] NodeLayout split_nodes(const Comm& world, int ranks_per_node);

/// The leaders of `leaders` ordered by `key` (distinct on every leader): the leader of the
/// smallest key gets rank 0. Collective over `leaders`; the leaders first agree, so that a
/// leader that makes another call is an error rather than a hang. Throws CollectiveMismatch,
/// TimeoutError, IoError when MPI fails.
[[nodiscard]] Comm reorder_leaders(const Comm& leaders, int key);

}  // namespace cairn::levels
