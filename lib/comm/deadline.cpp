// Waiting on MPI with a deadline: every nonblocking operation of a Comm completes through
// Comm::wait(), whose timeout breaks the Comm and abandons the operation's buffers.
#include "comm/deadline.hpp"

#include <cairn/comm.hpp>

#include <climits>
#include <fmt/format.h>
#include <mutex>
#include <vector>

#include "comm/mpi_check.hpp"

namespace cairn {

namespace detail {

void abandon(std::shared_ptr<void> buffers) {
  static std::mutex mutex;
  static std::vector<std::shared_ptr<void>> graveyard;
  std::lock_guard lock(mutex);
  graveyard.push_back(std::move(buffers));
}

std::string format_seconds(std::chrono::milliseconds timeout) {
  return fmt::format("{:.1f} s", static_cast<double>(timeout.count()) / 1000.0);
}

int checked_count(std::size_t bytes, std::string_view what) {
  if (bytes > static_cast<std::size_t>(INT_MAX)) {
    throw InvalidArgument(fmt::format(
        "{}: {} bytes exceed the 2 GiB limit of one collective exchange; split the data", what,
        bytes));
  }
  return static_cast<int>(bytes);
}

std::size_t displacements_of(std::span<const int> sizes, std::vector<int>& displacements,
                             std::string_view what) {
  displacements.resize(sizes.size());
  std::size_t total = 0;
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    displacements[r] = checked_count(total, what);
    total += static_cast<std::size_t>(sizes[r]);
  }
  (void)checked_count(total, what);
  return total;
}

}  // namespace detail

void Comm::check_usable(std::string_view what) const {
  if (comm_ == MPI_COMM_NULL) {
    throw InvalidArgument(fmt::format("{}: the cairn::Comm was moved from", what));
  }
  if (broken_) {
    throw TimeoutError({}, fmt::format("{}: this cairn::Comm was broken by an earlier "
                                       "timeout; ranks may be at different points. Create a "
                                       "new Comm (or restart the job) to continue",
                                       what));
  }
}

void Comm::wait(MPI_Request& request, std::string_view what) const {
  wait(request, what, options_.barrier_timeout);
}

void Comm::wait(MPI_Request& request, std::string_view what,
                std::chrono::milliseconds timeout) const {
  const bool done = detail::poll_until(detail::Clock::now() + timeout, [&] {
    int complete = 0;
    detail::check_mpi(MPI_Test(&request, &complete, MPI_STATUS_IGNORE), what);
    return complete != 0;
  });
  if (done) return;
  broken_ = true;
  throw TimeoutError(
      {}, fmt::format("{} did not complete within {} on rank {} of {}: some rank did not make "
                      "the same call. Check that every rank calls cairn's collective functions "
                      "in the same order, or raise barrier_timeout",
                      what, detail::format_seconds(timeout), rank_, size_));
}

void Comm::start_and_wait(const std::shared_ptr<void>& buffers, std::string_view what,
                          const std::function<int(MPI_Request*)>& start) const {
  MPI_Request request = MPI_REQUEST_NULL;
  detail::check_mpi(start(&request), what);
  try {
    wait(request, what);
  } catch (...) {
    detail::abandon(buffers);
    throw;
  }
}

}  // namespace cairn
