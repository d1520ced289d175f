#include "cuda/nccl_comm.hpp"

#include <cairn/error.hpp>
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include <cstring>
#include <utility>

#include "base/log.hpp"

namespace cairn::cuda {
namespace {

void check(ncclResult_t status, std::string_view call, std::string_view what) {
  if (status == ncclSuccess) return;
  throw IoError({}, fmt::format("{}: {} failed: {}", what, call, ncclGetErrorString(status)));
}

}  // namespace

NcclComm::NcclComm(const Comm& comm, std::string_view what) {
  ncclUniqueId id{};
  std::string problem;
  if (comm.is_primary()) {
    const ncclResult_t rc = ncclGetUniqueId(&id);
    if (rc != ncclSuccess)
      problem = fmt::format("ncclGetUniqueId failed: {}", ncclGetErrorString(rc));
  }
  // Every rank learns whether the id exists before any of them waits inside NCCL.
  comm.all_ok(problem.empty(), fmt::format("{}: {}", what, problem));
  const auto shared = comm.broadcast_bytes(std::as_bytes(std::span(&id, 1)));
  std::memcpy(&id, shared.data(), sizeof(id));
  ncclComm_t nccl = nullptr;
  check(ncclCommInitRank(&nccl, comm.size(), id, comm.rank()), "ncclCommInitRank", what);
  comm_ = nccl;
}

NcclComm::~NcclComm() {
  if (!comm_) return;
  const ncclResult_t rc = ncclCommDestroy(static_cast<ncclComm_t>(comm_));
  if (rc != ncclSuccess) {
    base::log::error("cuda.release", "call=ncclCommDestroy error=\"{}\"", ncclGetErrorString(rc));
  }
}

NcclComm::NcclComm(NcclComm&& other) noexcept : comm_(std::exchange(other.comm_, nullptr)) {}

NcclComm& NcclComm::operator=(NcclComm&& other) noexcept {
  if (this != &other) {
    NcclComm old(std::move(*this));
    comm_ = std::exchange(other.comm_, nullptr);
  }
  return *this;
}

void NcclComm::broadcast(void* buffer, std::size_t bytes, int root, const Stream& stream,
                         std::string_view what) {
  if (bytes == 0) return;
  check(ncclBroadcast(buffer, buffer, bytes, ncclChar, root, static_cast<ncclComm_t>(comm_),
                      static_cast<cudaStream_t>(stream.native())),
        "ncclBroadcast", what);
  stream.synchronize(what);
}

}  // namespace cairn::cuda
