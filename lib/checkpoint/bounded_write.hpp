// cairn — the local writes of a save on a thread of their own, waited for with a deadline
// (internal). A rank whose writes block (a hung file system) says so in the save's verdict in
// time, so that the other ranks fail the save with its name instead of waiting at a barrier.
#pragma once

#include <cairn/comm.hpp>

#include <chrono>
#include <exception>
#include <filesystem>
#include <functional>
#include <future>
#include <string>
#include <thread>

namespace cairn::checkpoint {

/// Runs `work` (the local writes of one save, no MPI) on a thread of its own from
/// construction on. The destructor waits for it however long it takes: a save that gave up
/// on its writes still waits for them before its memory, files and staging buffers go away.
class BoundedWrite {
 public:
  /// Starts `work`. Throws std::system_error when no thread can be started.
  explicit BoundedWrite(std::function<void()> work);
  ~BoundedWrite();
  BoundedWrite(const BoundedWrite&) = delete;
  BoundedWrite& operator=(const BoundedWrite&) = delete;

  /// Waits at most `timeout` for the work; whether it returned. Local; never throws.
  bool wait_for(std::chrono::milliseconds timeout) noexcept;
  /// Waits for the work however long it takes, ignoring what it threw. Local; never throws.
  void wait() noexcept;
  /// Waits for the work however long it takes and rethrows what it threw. Local.
  void join();

 private:
  std::promise<void> returned_;
  std::future<void> result_;
  std::thread thread_;
};

/// The deadline of a rank's local writes: `write_timeout`, or half the Comm's barrier timeout
/// when it is zero (so that a stuck rank reports before the others give up waiting).
std::chrono::milliseconds write_deadline(const Comm& comm,
                                         std::chrono::milliseconds write_timeout) noexcept;

/// The verdict on the local writes of a save into `dir`: every rank passes whether its writes
/// returned within `timeout`. Collective. Throws TimeoutError on every rank when some rank's
/// writes did not return, naming those ranks and the deadline.
void agree_writes_returned(const Comm& comm, bool returned, const std::filesystem::path& dir,
                           std::chrono::milliseconds timeout);

}  // namespace cairn::checkpoint
