#include "storage/engine/broadcast_leaves.hpp"

#include <cairn/box.hpp>
#include <cairn/config.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <unistd.h>

#include "base/first_error.hpp"
#include "cuda/device_memory.hpp"
#include "cuda/staged_copy.hpp"
#if CAIRN_HAVE_NCCL
#include "cuda/nccl_comm.hpp"
#endif

namespace cairn::storage {
namespace {

// MPI broadcasts move at most this much at once (MPI counts are int).
constexpr std::size_t kMpiPiece = std::size_t{256} << 20;
// Pinned staging of device buffers for the MPI path.
constexpr std::size_t kStagingChunk = std::size_t{8} << 20;

#if CAIRN_HAVE_NCCL
// Whether NCCL can run over `comm`: every rank on its own device (NCCL refuses two ranks on
// one GPU). Collective.
bool distinct_devices(const Comm& comm) {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  const std::string id = cuda::current_device_id();
  const auto all = comm.allgather(id.empty() ? std::string() : std::string(host) + "/" + id);
  std::set<std::string> seen;
  for (const std::string& one : all) {
    if (one.empty() || !seen.insert(one).second) return false;
  }
  return true;
}
#endif

// What one broadcast keeps from leaf to leaf: the device staging and the NCCL
// communicator, made on first use, and the first local failure.
struct Broadcaster {
  explicit Broadcaster(const Comm& over) : comm(over) {}

  const Comm& comm;
  base::FirstError failure;
  std::unique_ptr<cuda::StagedCopier> copier;
#if CAIRN_HAVE_NCCL
  std::optional<cuda::NcclComm> nccl;
  std::optional<cuda::Stream> stream;
  std::optional<bool> nccl_usable;  // decided at the first leaf on devices everywhere
#endif

  // Whether the leaf, on devices everywhere, went over NCCL.
  bool over_nccl(const BroadcastLeaf& leaf, bool all_device, const std::string& what);
  // The leaf over MPI, staged through a contiguous host buffer when needed.
  void over_mpi(const BroadcastLeaf& leaf, const std::string& what);
};

bool Broadcaster::over_nccl([[maybe_unused]] const BroadcastLeaf& leaf,
                            [[maybe_unused]] bool all_device,
                            [[maybe_unused]] const std::string& what) {
#if CAIRN_HAVE_NCCL
  // NCCL only when every rank's buffer is on a device: its collectives need every rank.
  if (all_device && !nccl_usable) nccl_usable = distinct_devices(comm);
  if (!all_device || !*nccl_usable) return false;
  comm.run_all(what + ":", [&] {
    if (!stream) stream.emplace(what);
  });
  // Creation may fail on some ranks only (ncclCommInitRank): every rank then throws here,
  // none goes on into an ncclBroadcast that would wait for the failed ones. A separate
  // run_all from the stream's: NcclComm's constructor itself agrees over `comm`, so all
  // ranks must enter it together.
  comm.run_all(what + ":", [&] {
    if (!nccl) nccl.emplace(comm, what);
  });
  try {
    nccl->broadcast(leaf.shard->data, static_cast<std::size_t>(leaf.shard->local_bytes()),
                    comm.primary(), *stream, what);
  } catch (const std::exception& e) {
    failure.record(e);
  }
  return true;
#else
  return false;
#endif
}

void Broadcaster::over_mpi(const BroadcastLeaf& leaf, const std::string& what) {
  const auto bytes = static_cast<std::size_t>(leaf.shard->local_bytes());
  const bool device = leaf.memory == MemoryKind::cuda_device;
  // Device buffers and strided host views go through a contiguous host buffer on both ends.
  // `host` stays null on a rank whose staging failed: it still takes part, with nothing.
  std::unique_ptr<std::byte[]> staged;
  const bool strided = !device && !leaf.shard->contiguous();
  const std::size_t elem = dtype_size(leaf.shard->dtype);
  std::byte* host = device || strided ? nullptr : static_cast<std::byte*>(leaf.shard->data);
  try {
    if (strided) {
      staged.reset(new std::byte[bytes]);
      if (comm.is_primary()) {
        pack_strided(elem, leaf.shard->data, leaf.shard->box.extent, leaf.shard->strides,
                     staged.get());
      }
      host = staged.get();
    } else if (device) {
      if (!copier) copier = std::make_unique<cuda::StagedCopier>(kStagingChunk, what);
      staged.reset(new std::byte[bytes]);
      if (comm.is_primary()) copier->to_host(leaf.shard->data, bytes, staged.get(), what);
      host = staged.get();
    }
  } catch (const std::exception& e) {
    failure.record(e);
  }
  // Every rank takes part in every piece, even after a local failure, so none waits forever.
  for (std::size_t done = 0; done < bytes; done += kMpiPiece) {
    const std::size_t n = std::min(kMpiPiece, bytes - done);
    const auto piece =
        comm.broadcast_bytes(host != nullptr ? std::span<const std::byte>(host + done, n)
                                             : std::span<const std::byte>());
    if (comm.is_primary() || host == nullptr) continue;
    if (piece.size() == n) {
      std::memcpy(host + done, piece.data(), n);
    } else {
      failure.record(IoError({}, fmt::format("{}: the primary rank could not send it", what)));
    }
  }
  if (comm.is_primary() || host == nullptr) return;
  try {
    if (strided) {
      unpack_strided(elem, host, leaf.shard->box.extent, leaf.shard->strides, leaf.shard->data);
    }
    if (device) copier->to_device(host, bytes, leaf.shard->data, what);
  } catch (const std::exception& e) {
    failure.record(e);
  }
}

}  // namespace

void broadcast_leaves(const Comm& comm, const std::vector<BroadcastLeaf>& leaves) {
  if (leaves.empty()) return;
  Broadcaster broadcaster(comm);
  for (const BroadcastLeaf& leaf : leaves) {
    const std::string what = fmt::format("broadcasting leaf '{}'", leaf.path);
    const bool all_device = comm.all(leaf.memory == MemoryKind::cuda_device);
    if (!broadcaster.over_nccl(leaf, all_device, what)) broadcaster.over_mpi(leaf, what);
  }
  broadcaster.failure.report(comm);
}

}  // namespace cairn::storage
