#include "manager/levels/node_layout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string_view>

#include "comm/mpi_check.hpp"

namespace cairn::levels {

std::string NodeLayout::describe() const {
  const auto [low, high] = std::minmax_element(node_sizes.begin(), node_sizes.end());
  const int few = node_sizes.empty() ? 0 : *low;
  const int many = node_sizes.empty() ? 0 : *high;
  const std::string ranks = few == many ? fmt::format("{} rank{}", few, few == 1 ? "" : "s")
                                        : fmt::format("{}-{} ranks", few, many);
  return fmt::format("{} node{} of {}", nodes, nodes == 1 ? "" : "s", ranks);
}

int requested_ranks_per_node(int requested) {
  if (requested < 0) {
    throw InvalidArgument(fmt::format(
        "local level: ranks_per_node {} is negative (0: the nodes MPI reports)", requested));
  }
  if (requested > 0) return requested;
  const char* env = std::getenv("CAIRN_RANKS_PER_NODE");
  if (env == nullptr || *env == '\0') return 0;
  const std::string_view text(env);
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || value <= 0) {
    throw InvalidArgument(
        fmt::format("CAIRN_RANKS_PER_NODE='{}' is not a positive number of ranks per node", text));
  }
  return value;
}

NodeLayout split_nodes(const Comm& world, int ranks_per_node) {
  // The split below has no deadline: agree first, so that a rank that asks for another
  // layout, or makes another call, is an error on every rank rather than a hang.
  world.agree({.operation = "local level: splitting the ranks into nodes",
               .options = static_cast<std::uint64_t>(ranks_per_node)});
  MPI_Comm node_raw = MPI_COMM_NULL;
  if (ranks_per_node > 0) {
    detail::check_mpi(
        MPI_Comm_split(world.get(), world.rank() / ranks_per_node, world.rank(), &node_raw),
        "MPI_Comm_split (nodes)");
  } else {
    detail::check_mpi(MPI_Comm_split_type(world.get(), MPI_COMM_TYPE_SHARED, world.rank(),
                                          MPI_INFO_NULL, &node_raw),
                      "MPI_Comm_split_type (nodes)");
  }
  int node_rank = 0;
  MPI_Comm_rank(node_raw, &node_rank);
  MPI_Comm leaders_raw = MPI_COMM_NULL;
  detail::check_mpi(
      MPI_Comm_split(world.get(), node_rank == 0 ? 0 : MPI_UNDEFINED, world.rank(), &leaders_raw),
      "MPI_Comm_split (node leaders)");
  const CommOptions options{.barrier_timeout = world.options().barrier_timeout};
  NodeLayout layout;
  layout.node_comm.emplace(node_raw, options);
  MPI_Comm_free(&node_raw);
  if (leaders_raw != MPI_COMM_NULL) {
    layout.leaders.emplace(leaders_raw, options);
    MPI_Comm_free(&leaders_raw);
  }
  // Every rank learns its node's number from its leader and every node's size.
  std::int64_t node = layout.leaders ? layout.leaders->rank() : 0;
  node = layout.node_comm->max(node);
  layout.node = static_cast<int>(node);
  const std::vector<std::int64_t> nodes_of = world.allgather(node);
  layout.nodes = static_cast<int>(*std::max_element(nodes_of.begin(), nodes_of.end())) + 1;
  layout.node_sizes.assign(static_cast<std::size_t>(layout.nodes), 0);
  for (const std::int64_t n : nodes_of) ++layout.node_sizes[static_cast<std::size_t>(n)];
  return layout;
}

Comm reorder_leaders(const Comm& leaders, int key) {
  // The split below has no deadline: every leader shows up here first.
  leaders.agree({.operation = "local level: ordering the nodes by the parts they hold"});
  MPI_Comm raw = MPI_COMM_NULL;
  detail::check_mpi(MPI_Comm_split(leaders.get(), 0, key, &raw), "MPI_Comm_split (parts)");
  Comm ordered(raw, CommOptions{.barrier_timeout = leaders.options().barrier_timeout});
  MPI_Comm_free(&raw);
  return ordered;
}

}  // namespace cairn::levels
