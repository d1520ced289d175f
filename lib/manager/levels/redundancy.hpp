// cairn — the redundancy of the node-local checkpoint level (internal): what each node stores
// besides its own archive of a step (levels/step_archive.hpp) so that the archives of lost
// nodes can be rebuilt, and the rebuild itself.
//
// Both functions are collective over `leaders`: one rank per node, the rank being the node id.
// A node's "redundancy file" is self-describing: the 8 bytes "CAIRNRED", then (lib/base/
// packed.hpp numbers) the version, the scheme, the node id, the number of nodes, the nodes it
// protects with the size and XXH3-64 of each one's archive, the size and XXH3-64 of the
// payload, the XXH3-64 of the header before it, and the payload.
//
//   partner     node n stores a copy of the archive of node (n - d) mod N, d = partner_distance.
//   xor_parity  nodes form groups of xor_group consecutive ids (a last group of one node joins
//               the one before); in a group of m, every archive is padded with zeros to the
//               largest one (rounded up to a multiple of m - 1) and cut into m - 1 chunks;
//               member k stores P_k, the XOR over the other members i of their chunk
//               (k - i - 1) mod m. Each node stores about 1 / (m - 1) of the group's largest
//               archive; one lost node per group can be rebuilt.
//
// A node's archive and redundancy file travel from where they lie (mapped files) in messages of
// at most 256 MiB; a redundancy file is received or reduced straight into the file being
// written (levels/file_map.hpp); xor parity copies 256 MiB of the archive at a time into a
// buffer for each reduction; a rebuilt archive is received whole into memory. Every wait polls with
// the deadline CommOptions::barrier_timeout of `leaders`, except MPI_Comm_split into xor groups,
// which comes right after an exchange in which every node showed up. After a TimeoutError the nodes
// may be at different points: build a new Comm to continue.
#pragma once

#include <cairn/comm.hpp>

#include "manager/levels/step_archive.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cairn::levels {

/// How the node-local level protects a step against losing nodes.
enum class RedundancyKind : std::uint8_t { none, partner, xor_parity };

/// A redundancy scheme. Aggregate: use designated initializers.
struct Redundancy {
  /// Which scheme; the other fields matter only to theirs.
  RedundancyKind kind = RedundancyKind::none;
  /// partner: node n keeps the copy of node (n - partner_distance) mod N; 1 <= it < N.
  int partner_distance = 1;
  /// xor_parity: nodes per parity group; at least 2.
  int xor_group = 4;
};

/// What a redundancy file is made for, recorded in it and checked before it is used: a copy or
/// parity of another step, of another run, or of archives other than those the level recorded
/// counts as missing. Aggregate.
struct Binding {
  /// The step it protects.
  std::int64_t step = 0;
  /// The run it belongs to: XXH3-64 of the persistent root the level serves.
  std::uint64_t source = 0;
  /// Per node, the XXH3-64 of its archive of `step` as the level recorded it (std::nullopt, or
  /// a shorter vector, where not known).
  std::vector<std::optional<std::uint64_t>> archives = {};
};

/// Writes at `file` (durably, through `<file>.cairn-tmp`) the redundancy file that this node
/// stores for a step whose archive on this node is `my_archive`. partner and xor_parity
/// exchange data with the other nodes; none writes nothing and returns at once, without
/// communication (a node that passes another scheme then fails with TimeoutError). Collective
/// over `leaders`. Throws CollectiveMismatch on every node when the nodes pass different
/// schemes, InvalidArgument on every node when the scheme does not fit the number of nodes
/// (partner needs 1 <= partner_distance < N, so at least 2 nodes; xor_parity needs
/// xor_group >= 2 and at least 2 nodes), TimeoutError naming the node or group that did not
/// take part, IoError naming `file` when it cannot be written (a full file system) or when
/// MPI fails.
void encode_redundancy(const Comm& leaders, const Redundancy& scheme, const Binding& binding,
                       const ArchiveBytes& my_archive, const std::filesystem::path& file);

/// What rebuild_lost() did.
struct RebuildOutcome {
  /// Whether every lost archive was rebuilt and checked. Same on every node.
  bool recoverable = true;
  /// The nodes whose archive was rebuilt, ascending (empty when !recoverable). Same on every
  /// node.
  std::vector<int> rebuilt_nodes;
  /// When !recoverable: which nodes are lost and which copies or parities are missing, e.g.
  /// "nodes 1 and 2 of xor group 0 (nodes 0-3) are both lost". Same on every node.
  std::string why;
  /// On a rebuilt node, when recoverable: its archive, checked against the checksum its
  /// protectors recorded.
  std::optional<std::vector<std::byte>> archive;
  /// On a node whose redundancy file was missing, damaged or stale (it disagrees with the
  /// archives it protects), when recoverable: true, the file was recomputed and written.
  bool redundancy_rewritten = false;
};

/// Rebuilds the archives of lost nodes from the redundancy files of the others, and recomputes
/// the redundancy files that are missing, in one call. `my_archive` is null when this node's
/// archive is missing or damaged; an archive whose XXH3 differs from `my_archive_checksum`
/// (when given) counts as damaged. `my_redundancy` is this node's redundancy file, or nullopt
/// when missing; one that does not check (magic, checksums, scheme, node id) counts as missing
/// and is recomputed at `redundancy_file`, as does one made for another `binding` (another
/// step or run, or from archives other than those recorded). Every node first shares what it holds;
/// whether the step is recoverable is then decided alike on every node: partner: a lost node n
/// needs a valid redundancy file on node (n + d) mod N; xor_parity: at most one lost node per
/// group, and valid redundancy files on the others of the group; none: no node lost. Only when it
/// is recoverable do the nodes exchange data. Collective over `leaders`. Throws CollectiveMismatch
/// on every node when the nodes pass different schemes, InvalidArgument on every node when the
/// scheme does not fit the number of nodes, TimeoutError naming the node or group that did not take
/// part, IoError naming `redundancy_file` when it cannot be written or when MPI fails.
[[nodiscard]] RebuildOutcome rebuild_lost(const Comm& leaders, const Redundancy& scheme,
                                          const Binding& binding, const ArchiveBytes* my_archive,
                                          std::optional<std::uint64_t> my_archive_checksum,
                                          std::optional<std::span<const std::byte>> my_redundancy,
                                          const std::filesystem::path& redundancy_file);

}  // namespace cairn::levels
