// cairn — preemption detection: notice that a job is about to be stopped (a signal such as
// the one Slurm sends with `--signal`, or the job's time limit drawing near) and make every
// rank agree on the step at which to save a last checkpoint.
//
//   cairn::PreemptionWatcher watcher;  // SIGTERM and SIGUSR1, SLURM_JOB_END_TIME, 5 minutes
//   for (std::int64_t step = 0;; ++step) {
//     simulate(step);
//     if (watcher.reached_preemption(comm, step)) { save(step); break; }
//   }
#pragma once

#include <chrono>
#include <csignal>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace cairn {

class Comm;

/// How a PreemptionWatcher decides that the job is about to end. Aggregate: use designated
/// initializers, e.g. `PreemptionWatcher w({.signals = {SIGUSR1}, .margin = 10min});`.
struct PreemptionOptions {
  /// Signals that announce preemption. Slurm sends SIGTERM before it kills a job and the
  /// signal of `--signal` (SIGUSR1 in `--signal=B:USR1@300`) ahead of the time limit. Empty:
  /// install no handler (only the deadline counts). SIGKILL, SIGSTOP and the fault signals
  /// (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS) are refused.
  std::vector<int> signals = {SIGTERM, SIGUSR1};
  /// When the job must be done, if the caller knows it. Combined with the Slurm end time:
  /// the earlier of the two counts.
  std::optional<std::chrono::system_clock::time_point> deadline = {};
  /// Read the end time of the job from the environment variable SLURM_JOB_END_TIME (Unix
  /// seconds, set by Slurm ≥ 21.08) when the watcher is constructed. A value that is not a
  /// plain decimal number of seconds (or is 0) is ignored with a warning.
  bool use_slurm_end_time = true;
  /// Preemption is reached once less than this much time remains before the deadline: the
  /// time a final checkpoint needs, with room to spare. Must not be negative.
  std::chrono::seconds margin = std::chrono::minutes(5);
  /// Where "now" comes from; empty means std::chrono::system_clock::now. Tests inject a fake
  /// clock here. It is called on every rank at each reached_preemption() call.
  std::function<std::chrono::system_clock::time_point()> clock = {};
  /// An injected preemption check, called instead of looking at signals and the deadline:
  /// when set, no signal handler is installed, `signals`, `deadline` and the Slurm end time
  /// are ignored, and reached_preemption() asks `check(step)` on every rank (true on any rank
  /// is preemption on every rank). For schedulers that announce preemption in their own way
  /// and for tests that drive preemption without raising a signal (as Orbax's tests drive
  /// `reached_preemption` through its multihost sync point). An exception from it on any rank
  /// is an InvalidArgument on every rank (see PreemptionWatcher::reached_preemption()).
  std::function<bool(std::int64_t step)> check = {};
};

/// Watches for preemption: signals (opt-in, through the handler it installs) and a deadline.
///
/// Signal handling. The constructor installs one process-wide handler per signal in
/// PreemptionOptions::signals, with sigaction. The handler is async-signal-safe: it only sets
/// lock-free atomic flags (recording the first signal each watcher received) and then calls
/// the handler that was installed before it, if that was a function. If the previous
/// disposition was SIG_IGN or SIG_DFL, nothing else happens: in particular the default
/// action (terminating the process) is *not* carried out, since the point is to survive long
/// enough to write a checkpoint. The signal may be delivered to any thread.
///
/// Several watchers may watch the same signal: the handler is installed once, by the first;
/// later watchers join it and every watcher of the signal sees each delivery (as if each one
/// chained to the one before). The previous disposition is restored when the last watcher
/// of the signal is destroyed, in whatever order the watchers go. If some other code
/// replaced cairn's handler in between, cairn leaves that handler in place and logs a warning;
/// such a handler should call the one it replaced. At most 64 watchers that watch signals
/// exist at a time.
///
/// Move-only. The member functions are not thread-safe (call them from one thread), except
/// local_signal_received() and signal(), which may be called from any thread.
class PreemptionWatcher {
 public:
  /// Installs the signal handlers and, when asked, reads SLURM_JOB_END_TIME. Not
  /// collective. Throws InvalidArgument for a signal that cannot be watched, a negative
  /// margin or more than 64 watchers of signals; on a throw no handler stays installed.
  explicit PreemptionWatcher(PreemptionOptions options = {});
  /// Stops watching; restores the previous signal dispositions (see the class comment).
  /// Never throws.
  ~PreemptionWatcher();
  /// Takes over `other`'s handlers and state; `other` then watches nothing. Never throws.
  PreemptionWatcher(PreemptionWatcher&& other) noexcept;
  /// Stops watching, then takes over `other`'s handlers and state. Never throws.
  PreemptionWatcher& operator=(PreemptionWatcher&& other) noexcept;
  PreemptionWatcher(const PreemptionWatcher&) = delete;
  PreemptionWatcher& operator=(const PreemptionWatcher&) = delete;

  /// Whether one of the watched signals reached this process since the watcher was
  /// constructed. Local (not collective); never throws; safe from any thread.
  [[nodiscard]] bool local_signal_received() const noexcept;
  /// The first watched signal this process received, if any. Local; never throws.
  [[nodiscard]] std::optional<int> signal() const noexcept;

  /// The deadline in force: the earlier of PreemptionOptions::deadline and the Slurm end time
  /// read at construction; std::nullopt when neither is known. Local; never throws.
  [[nodiscard]] std::optional<std::chrono::system_clock::time_point> deadline() const noexcept;
  /// Whether less than the margin remains before the deadline at time `now` (false without a
  /// deadline). Local; never throws.
  [[nodiscard]] bool deadline_near(std::chrono::system_clock::time_point now) const noexcept;
  /// "Now" from the configured clock. Local; throws whatever a user-supplied clock throws.
  [[nodiscard]] std::chrono::system_clock::time_point now() const;

  /// Whether the job should save now and stop: true on every rank when any rank received a
  /// watched signal or sees the deadline near, or, with PreemptionOptions::check, when it
  /// returns true on any rank (so that all ranks save the same step).
  /// Collective over `comm` (one small allreduce); every rank must call it with the same
  /// `step`, which is not checked here (the save that follows agrees on it).
  ///
  /// The first call that returns true remembers `step` (see preemption_step()); from then on
  /// the answer stays true and later calls return at once without communicating, on every
  /// rank alike, since all ranks turned at the same call.
  ///
  /// Throws TimeoutError when the ranks do not all arrive in time (Comm's barrier timeout),
  /// and InvalidArgument on every rank naming the rank when the clock or the check of
  /// PreemptionOptions threw on some rank.
  [[nodiscard]] bool reached_preemption(const Comm& comm, std::int64_t step);
  /// The step at which reached_preemption() first returned true, if it has. Local; never
  /// throws.
  [[nodiscard]] std::optional<std::int64_t> preemption_step() const noexcept {
    return preemption_step_;
  }

  /// The options the watcher was built with (signals without duplicates). Never throws.
  [[nodiscard]] const PreemptionOptions& options() const noexcept { return options_; }

 private:
  void release() noexcept;

  PreemptionOptions options_;
  int slot_ = -1;  // index of this watcher's flags in the process-wide table; -1: none
  std::optional<std::chrono::system_clock::time_point> deadline_;
  std::optional<std::int64_t> preemption_step_;
};

}  // namespace cairn
