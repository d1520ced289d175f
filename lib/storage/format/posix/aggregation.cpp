#include "storage/format/posix/aggregation.hpp"

#include <mpi.h>

#include <cairn/error.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "storage/index/tree_index.hpp"
#include "storage/stream/checksum.hpp"
#include "storage/stream/compress.hpp"

namespace cairn::storage {
namespace {

std::uint64_t aligned(std::uint64_t bytes) {
  return (bytes + kShardAlignment - 1) / kShardAlignment * kShardAlignment;
}

// The name of this rank's node (MPI_Get_processor_name), or "" when MPI cannot say.
std::string node_name() {
  std::string name(MPI_MAX_PROCESSOR_NAME, '\0');
  int length = 0;
  if (MPI_Get_processor_name(name.data(), &length) != MPI_SUCCESS) return {};
  name.resize(static_cast<std::size_t>(std::max(length, 0)));
  return name;
}

// The group of every rank: groups numbered by their first rank, in rank order. Throws
// InvalidArgument (on every rank alike) when `aggregation` ships through shared memory and a
// group spans nodes.
std::vector<int> groups_of(const Comm& comm, const PosixAggregation& aggregation) {
  const int size = comm.size();
  std::vector<int> group(static_cast<std::size_t>(size));
  const bool ships = aggregation.writers == PosixAggregation::Writers::aggregator;
  // Ranks with the same processor name share a node. The names go through the Comm's
  // allgather, with its deadline.
  std::vector<std::string> names;
  if (aggregation.kind == PosixAggregation::Kind::per_node || ships) {
    names = comm.allgather(node_name());
  }
  if (aggregation.kind == PosixAggregation::Kind::count) {
    const std::int64_t n = std::min(aggregation.count, size);
    for (int r = 0; r < size; ++r) {
      group[static_cast<std::size_t>(r)] = static_cast<int>(std::int64_t{r} * n / size);
    }
  } else {
    std::vector<std::string> seen;
    for (std::size_t r = 0; r < names.size(); ++r) {
      const auto it = std::find(seen.begin(), seen.end(), names[r]);
      group[r] = static_cast<int>(it - seen.begin());
      if (it == seen.end()) seen.push_back(names[r]);
    }
  }
  if (ships) check_groups_on_one_node(group, names);
  return group;
}

}  // namespace

void check_groups_on_one_node(std::span<const int> group, std::span<const std::string> nodes) {
  std::vector<std::size_t> first;  // by group: its first rank
  for (std::size_t r = 0; r < group.size() && r < nodes.size(); ++r) {
    const auto g = static_cast<std::size_t>(group[r]);
    if (g >= first.size()) first.resize(g + 1, r);
    if (nodes[r] == nodes[first[g]]) continue;
    throw InvalidArgument(fmt::format(
        "TreeSaveOptions::posix.aggregation: writers = aggregator ships through node shared "
        "memory, but group {} spans nodes '{}' (rank {}) and '{}' (rank {}); use per_node "
        "groups, more groups, or writers = every_rank",
        g, nodes[first[g]], first[g], nodes[r], r));
  }
}

std::string shipping_segment_name(const std::filesystem::path& dir, int group) {
  std::error_code error;  // no working directory: the path as given
  const std::filesystem::path absolute = std::filesystem::absolute(dir, error);
  const std::string where = (error ? dir : absolute).lexically_normal().string();
  return fmt::format("/cairn-{}-{}", checksum_to_hex(checksum_of(std::as_bytes(std::span(where)))),
                     group);
}

std::string aggregate_file_name(int group) { return fmt::format("shards/a{}.bin", group); }
std::string shard_file_name(int rank) { return fmt::format("shards/p{}.bin", rank); }

void check_posix_aggregation(const PosixAggregation& aggregation) {
  using Kind = PosixAggregation::Kind;
  using Writers = PosixAggregation::Writers;
  if (aggregation.writers != Writers::every_rank && aggregation.writers != Writers::aggregator) {
    throw InvalidArgument(fmt::format("TreeSaveOptions::posix.aggregation: unknown writers {}",
                                      static_cast<int>(aggregation.writers)));
  }
  switch (aggregation.kind) {
    case Kind::per_rank:
    case Kind::per_node: return;
    case Kind::count:
      if (aggregation.count < 1) {
        throw InvalidArgument(fmt::format(
            "TreeSaveOptions::posix.aggregation: count is {}; give at least 1 file (aggregator)",
            aggregation.count));
      }
      return;
  }
  throw InvalidArgument(fmt::format("TreeSaveOptions::posix.aggregation: unknown kind {}",
                                    static_cast<int>(aggregation.kind)));
}

std::uint64_t posix_region_bytes(std::span<const ArrayToWrite> arrays) {
  std::uint64_t bytes = 0;
  for (const ArrayToWrite& a : arrays) {
    if (!a.box) continue;
    const std::uint64_t raw = static_cast<std::uint64_t>(volume(*a.box)) * dtype_size(a.dtype);
    bytes += aligned(max_stored_bytes(a.compression, a.dtype, raw, a.chunk_bytes));
  }
  return bytes;
}

PosixTarget plan_posix_target(const Comm& comm, const PosixAggregation& aggregation,
                              std::uint64_t region, const std::filesystem::path& dir) {
  check_posix_aggregation(aggregation);
  if (aggregation.kind == PosixAggregation::Kind::per_rank) {
    return {.file = shard_file_name(comm.rank())};
  }
  const std::vector<int> group = groups_of(comm, aggregation);
  const std::vector<std::int64_t> regions =
      comm.allgather(static_cast<std::int64_t>(aligned(region)));
  const int me = comm.rank();
  const int mine = group[static_cast<std::size_t>(me)];
  PosixTarget target{.file = aggregate_file_name(mine), .shared = true};
  std::uint64_t total = 0;
  int leader = -1;
  ShippingPlan shipping{.file = (dir / target.file).string(),
                        .timeout = comm.options().barrier_timeout};
  for (int r = 0; r < comm.size(); ++r) {
    if (group[static_cast<std::size_t>(r)] != mine) continue;
    const auto bytes = static_cast<std::uint64_t>(regions[static_cast<std::size_t>(r)]);
    if (leader < 0) {
      leader = r;
    } else {
      if (r == me) target.member = static_cast<int>(shipping.members.size());
      shipping.members.push_back({.rank = r, .base = total, .limit = bytes});
    }
    if (r < me) target.base += bytes;
    total += bytes;
  }
  target.limit = aligned(region);
  target.creates = me == leader && total > 0;
  shipping.aggregator = leader;
  if (aggregation.writers == PosixAggregation::Writers::aggregator && total > 0 &&
      !shipping.members.empty()) {
    shipping.segment = shipping_segment_name(dir, mine);
    target.shipping = std::move(shipping);
  }
  return target;
}

}  // namespace cairn::storage
