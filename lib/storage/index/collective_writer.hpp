// cairn — the index of a save, written by every rank (internal). Each array leaf's section of
// cairn-tree.bin is built and written by one rank, the leaf's section owner, from the shard
// records that every rank sends it in one all-to-all; the primary writes the header of
// cairn-tree.bin and cairn-tree.json from one summary per section. What a rank receives grows
// with the records of the leaves it owns, the data file names and the leaves, never with
// ranks x leaves on one rank, and the number of collective calls does not grow with leaves.
#pragma once

#include <cairn/comm.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "storage/index/tree_index.hpp"

namespace cairn::storage {

/// Called on the primary with the files of earlier saves that the new index's shards refer to
/// (ShardRecord::ref_files), before the index is written.
using LinkReferencedFiles = std::function<void(const std::set<std::string>&)>;

/// Writes the index of the tree saved in `dir` (a version-6 index: cairn-tree.bin, then
/// cairn-tree.json, each fsynced) from every rank's part of it:
///   1. every rank sends the names of the data files its records name to every rank
///      (allgather): the index's "files", numbered alike everywhere;
///   2. every rank sends each of its `records` (array index: the leaf's position among the
///      array leaves; the record) to the leaf's section owner (section_owner(), all-to-all);
///   3. each owner encodes its leaves' sections, and the primary creates cairn-tree.bin;
///   4. every rank learns every section's length, hence its offset (allgather), and each owner
///      writes its sections at their offsets;
///   5. the primary gathers one summary per section, calls `link`, writes the header and
///      cairn-tree.json, and with `sync_dir` syncs `dir` itself.
/// `index`: on every rank, the tree's leaves in order without shards (the values of scalar,
/// string and JSON leaves are taken from the primary's), and its world_size and empty_nodes.
/// Collective: every step's failure is agreed (Comm::run_all), so every rank throws the same
/// error (IoError naming the file, Error(internal)) or TimeoutError. Returns the bytes of the
/// index on the primary, 0 on the other ranks.
std::uint64_t write_index_collectively(const Comm& comm, const std::filesystem::path& dir,
                                       TreeIndex index,
                                       std::vector<std::pair<std::size_t, ShardRecord>> records,
                                       bool sync_dir, const LinkReferencedFiles& link);

/// Bytes of packed shard records this process has received as a section owner in saves
/// (write_index_collectively(), step 2), for tests and benchmarks. Thread-safe; never throws.
[[nodiscard]] std::uint64_t index_records_received() noexcept;

}  // namespace cairn::storage
