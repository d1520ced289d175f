// cairn — aggregation of the posix format's shard files (internal): the ranks of a group
// (a node, or a block of consecutive ranks) share one file, shards/a<k>.bin, in which each
// rank writes its shards into its own region, as the ranks of an ADIOS2 BP5 aggregator share
// a subfile. The regions are sized before anything is written (a compressed shard by the
// bound of its compressor), so no rank waits for another while it writes; the file of a group
// is created by its aggregator, the group's first rank. With PosixAggregation::Writers::
// aggregator the other ranks ship their shards to the aggregator through node shared memory
// (shipping.hpp) and only the aggregator opens the file.
#pragma once

#include <cairn/comm.hpp>
#include <cairn/storage.hpp>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <span>
#include <string>

#include "storage/format/posix/shipping.hpp"
#include "storage/format/shard_writer.hpp"

namespace cairn::storage {

/// Where this rank writes its shards of the posix format.
struct PosixTarget {
  /// The file, relative to the item directory: shards/p<rank>.bin or shards/a<k>.bin.
  std::string file;
  /// The first byte of this rank's region of the file (4 KiB-aligned) and its length.
  std::uint64_t base = 0;
  std::uint64_t limit = std::numeric_limits<std::uint64_t>::max();
  /// The file is a group's: created by its aggregator, opened by the others without
  /// truncating.
  bool shared = false;
  /// This rank is the aggregator of its group and creates the group's file (not when no rank
  /// of the group writes a byte).
  bool creates = false;
  /// Writers::aggregator, in a group of more than one rank with bytes to write: how the group
  /// ships its shards to the aggregator.
  std::optional<ShippingPlan> shipping = std::nullopt;
  /// This rank's position in shipping->members; -1 on the aggregator.
  int member = -1;
};

/// Alignment of every shard inside a posix data file.
inline constexpr std::uint64_t kShardAlignment = 4096;

/// "shards/p<rank>.bin", the file of rank `rank` without aggregation. Never throws beyond
/// std::bad_alloc.
[[nodiscard]] std::string shard_file_name(int rank);

/// "shards/a<k>.bin", the file of group `group`. Never throws beyond std::bad_alloc.
[[nodiscard]] std::string aggregate_file_name(int group);

/// Throws InvalidArgument naming TreeSaveOptions::posix.aggregation, the group, both nodes and
/// ranks, when the ranks of a group (`group[r]`, numbered from 0 by first rank) are not all on
/// the node of its first rank (`nodes[r]`, the processor names). Local.
void check_groups_on_one_node(std::span<const int> group, std::span<const std::string> nodes);

/// The name of the shared memory through which group `group` of a save into `dir` ships
/// ("/cairn-<XXH3 of the absolute directory>-<group>"): unique while the save runs, since no
/// other save writes the same directory. Never throws beyond std::bad_alloc.
[[nodiscard]] std::string shipping_segment_name(const std::filesystem::path& dir, int group);

/// Throws InvalidArgument naming TreeSaveOptions::posix.aggregation when `aggregation` is not
/// valid (an unknown kind, a count below 1). Local.
void check_posix_aggregation(const PosixAggregation& aggregation);

/// The bytes of the region this rank's shards of `arrays` take (each shard 4 KiB-aligned, a
/// compressed one by its bound). Local. Throws Unsupported when this build lacks a compressor.
[[nodiscard]] std::uint64_t posix_region_bytes(std::span<const ArrayToWrite> arrays);

/// This rank's file and region under `aggregation` (validated), given `region` bytes of its
/// own, for a save into the item directory `dir` (which names the groups' shared memory).
/// Collective over `comm` for the aggregating kinds (an allgather of the regions, and one of
/// the node names for per_node or Writers::aggregator), local for per_rank.
/// Throws InvalidArgument on every rank when Writers::aggregator is asked of a group that spans
/// nodes, TimeoutError as Comm does.
[[nodiscard]] PosixTarget plan_posix_target(const Comm& comm, const PosixAggregation& aggregation,
                                            std::uint64_t region, const std::filesystem::path& dir);

}  // namespace cairn::storage
