#include <cairn/comm.hpp>

// Construction of a Comm: the duplicate, the check of the options on every rank, moves and
// release, and the Comm over the active processes.
#include <algorithm>
#include <array>
#include <fmt/format.h>

#include "base/fnv1a.hpp"
#include "base/log.hpp"
#include "comm/mpi_check.hpp"

namespace cairn {

namespace detail {
std::string mpi_error_string(int code) {
  std::array<char, MPI_MAX_ERROR_STRING> text{};
  int length = 0;
  if (MPI_Error_string(code, text.data(), &length) != MPI_SUCCESS) {
    return fmt::format("MPI error {}", code);
  }
  return std::string(text.data(), static_cast<std::size_t>(length));
}
}  // namespace detail

using detail::check_mpi;

Comm::Comm(MPI_Comm comm, CommOptions options) : options_(std::move(options)) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    throw InvalidArgument("cairn::Comm: MPI is not initialized; call MPI_Init_thread first");
  }
  if (comm == MPI_COMM_NULL) throw InvalidArgument("cairn::Comm: the communicator is null");
  check_mpi(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);

  try {
    check_options();
  } catch (...) {
    release();
    throw;
  }
}

void Comm::check_options() {
  // Options are checked on every rank and the verdict is shared, so a rank configured
  // differently is an error everywhere instead of a later hang.
  std::string problem;
  if (options_.primary_rank < 0 || options_.primary_rank >= size_) {
    problem = fmt::format("primary_rank {} is not a rank of a communicator of size {}",
                          options_.primary_rank, size_);
  } else if (options_.barrier_timeout.count() <= 0) {
    problem = "barrier_timeout must be positive";
  } else if (!options_.active_processes.empty()) {
    auto active = options_.active_processes;
    std::sort(active.begin(), active.end());
    if (std::adjacent_find(active.begin(), active.end()) != active.end()) {
      problem = "active_processes lists a rank twice";
    } else if (active.front() < 0 || active.back() >= size_) {
      problem = fmt::format("active_processes must be ranks in [0, {})", size_);
    } else if (!std::binary_search(active.begin(), active.end(), options_.primary_rank)) {
      problem =
          fmt::format("the primary rank {} must be one of active_processes", options_.primary_rank);
    }
    options_.active_processes = std::move(active);
  }
  const CommOptions requested = options_;
  if (!problem.empty()) options_ = CommOptions{};  // usable defaults for the exchange below
  all_ok(problem.empty(), "cairn::Comm: " + problem, ErrorCode::invalid_argument);
  options_ = requested;

  // The primary must be the same everywhere before it can referee agreements.
  const auto primaries = allgather(static_cast<std::int64_t>(options_.primary_rank));
  for (int r = 0; r < size_; ++r) {
    if (primaries[r] != primaries[0]) {
      throw CollectiveMismatch(
          r, "primary_rank",
          fmt::format("cairn::Comm: rank {} uses primary_rank {} but rank 0 uses {}; pass "
                      "the same CommOptions on every rank",
                      r, primaries[r], primaries[0]));
    }
  }
  base::Fnv1a active_hash;
  for (int r : options_.active_processes) active_hash.i64(r);
  agree_impl({.operation = "cairn::Comm options",
              .options = static_cast<std::uint64_t>(options_.barrier_timeout.count()),
              .structure = active_hash.value()},
             "construction", options_.barrier_timeout);
}

Comm::~Comm() { release(); }

Comm::Comm(Comm&& other) noexcept
    : comm_(std::exchange(other.comm_, MPI_COMM_NULL)),
      rank_(std::exchange(other.rank_, -1)),
      size_(std::exchange(other.size_, 0)),
      options_(std::move(other.options_)),
      broken_(other.broken_),
      sequence_(other.sequence_) {}

Comm& Comm::operator=(Comm&& other) noexcept {
  if (this != &other) {
    release();
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    rank_ = std::exchange(other.rank_, -1);
    size_ = std::exchange(other.size_, 0);
    options_ = std::move(other.options_);
    broken_ = other.broken_;
    sequence_ = other.sequence_;
  }
  return *this;
}

void Comm::release() noexcept {
  if (comm_ == MPI_COMM_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && !broken_) {
    // MPI_Comm_free is collective in spirit but local in effect: it marks the duplicate
    // for deallocation once pending operations complete.
    if (MPI_Comm_free(&comm_) != MPI_SUCCESS) {
      base::log::warn("comm.free", "result=failed");
    }
  } else if (broken_) {
    // Operations abandoned by a timeout may still be pending on it; leaving it allocated
    // is safer than freeing it under them.
    base::log::debug("comm.free", "result=kept_after_timeout");
  }
  comm_ = MPI_COMM_NULL;
}

bool Comm::is_active() const noexcept {
  if (options_.active_processes.empty()) return true;
  return std::binary_search(options_.active_processes.begin(), options_.active_processes.end(),
                            rank_);
}

std::optional<Comm> Comm::active() const {
  agree_impl({.operation = "Comm::active"}, "collective call", options_.barrier_timeout);
  const bool active_here = is_active();
  MPI_Comm split = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(comm_, active_here ? 0 : MPI_UNDEFINED, rank_, &split),
            "MPI_Comm_split (active processes)");
  if (!active_here) return std::nullopt;
  int primary_there = options_.primary_rank;
  if (!options_.active_processes.empty()) {
    primary_there =
        static_cast<int>(std::lower_bound(options_.active_processes.begin(),
                                          options_.active_processes.end(), options_.primary_rank) -
                         options_.active_processes.begin());
  }
  try {
    Comm result(split,
                {.primary_rank = primary_there, .barrier_timeout = options_.barrier_timeout});
    MPI_Comm_free(&split);
    return result;
  } catch (...) {
    MPI_Comm_free(&split);
    throw;
  }
}

}  // namespace cairn
