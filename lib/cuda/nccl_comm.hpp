// cairn — an NCCL communicator over the ranks of a cairn::Comm (internal; built when
// CAIRN_HAVE_NCCL). The primary makes the unique id and broadcasts it over MPI.
#pragma once

#include <cairn/comm.hpp>

#include <cstddef>
#include <string_view>

#include "cuda/device_memory.hpp"

namespace cairn::cuda {

/// Move-only owner of an ncclComm_t; the destructor destroys it and logs a failure.
class NcclComm {
 public:
  /// ncclCommInitRank over every rank of `comm`, each on its current CUDA device. Collective
  /// over `comm`; every rank must have a usable device (agree on that first: NCCL's own
  /// initialisation waits for every rank). Throws IoError naming `what` with the NCCL error.
  NcclComm(const Comm& comm, std::string_view what);
  ~NcclComm();
  NcclComm(NcclComm&& other) noexcept;
  NcclComm& operator=(NcclComm&& other) noexcept;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  /// Broadcasts `bytes` of device memory at `buffer` from `root` to the same buffer on every
  /// rank, on `stream`, and waits for it. Collective. Throws IoError naming `what`.
  void broadcast(void* buffer, std::size_t bytes, int root, const Stream& stream,
                 std::string_view what);

 private:
  void* comm_ = nullptr;
};

}  // namespace cairn::cuda
