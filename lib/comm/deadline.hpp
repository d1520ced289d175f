// cairn — waiting on MPI with a deadline (internal): the back-off poll loop, and the
// graveyard of the buffers that a timed-out nonblocking operation may still write into.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace cairn::detail {

using Clock = std::chrono::steady_clock;

/// Keeps `buffers` alive for the life of the process: MPI owns the buffers of an operation
/// abandoned by a timeout until it completes, which may be never. Thread-safe; throws only
/// std::bad_alloc.
void abandon(std::shared_ptr<void> buffers);

/// "12.5 s". Throws only std::bad_alloc.
[[nodiscard]] std::string format_seconds(std::chrono::milliseconds timeout);

/// `bytes` as an MPI count. Throws InvalidArgument naming `what` above 2 GiB.
[[nodiscard]] int checked_count(std::size_t bytes, std::string_view what);

/// Fills `displacements` with the offsets of blocks of `sizes` bytes laid end to end and
/// returns their total. Throws InvalidArgument naming `what` when an offset or the total
/// exceeds 2 GiB.
std::size_t displacements_of(std::span<const int> sizes, std::vector<int>& displacements,
                             std::string_view what);

/// Calls `done()` until it returns true (then returns true) or `deadline` passes (then
/// returns false), backing off from a yield to sleeps of up to 1 ms: ranks are often
/// oversubscribed. Throws what `done()` throws.
template <class Done>
[[nodiscard]] bool poll_until(Clock::time_point deadline, Done&& done) {
  auto pause = std::chrono::microseconds(0);
  for (;;) {
    if (done()) return true;
    if (Clock::now() >= deadline) return false;
    if (pause.count() == 0) {
      std::this_thread::yield();
      pause = std::chrono::microseconds(1);
    } else {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
  }
}

}  // namespace cairn::detail
