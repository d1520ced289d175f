// cairn — load-and-broadcast of replicated leaves (internal): the primary rank has read a
// leaf into its buffer; every other rank gets the same bytes in its own buffer.
#pragma once

#include <cairn/comm.hpp>
#include <cairn/tree.hpp>

#include <string>
#include <vector>

namespace cairn::storage {

/// One leaf to broadcast: its path, this rank's (whole-array) buffer and where it lives.
struct BroadcastLeaf {
  std::string path = {};
  const ArrayShard* shard = nullptr;
  MemoryKind memory = MemoryKind::host;
};

/// Broadcasts each leaf from the primary rank, in order. A leaf whose buffer is device memory
/// on every rank goes over NCCL (builds with NCCL); any other leaf over MPI, device buffers
/// staged through pinned host memory. Collective over `comm`; the same list (paths and sizes)
/// on every rank. Throws on every rank when any rank failed (IoError naming the leaf).
void broadcast_leaves(const Comm& comm, const std::vector<BroadcastLeaf>& leaves);

}  // namespace cairn::storage
