#include <cairn/comm.hpp>
#include <cairn/error.hpp>
#include <cairn/preemption.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "base/log.hpp"

namespace cairn {
namespace {

using Clock = std::chrono::system_clock;
using SignalHandler = void (*)(int);
using SignalAction = void (*)(int, siginfo_t*, void*);

// Signals are numbered 1..64 on Linux; one bit each in a 64-bit mask.
constexpr int kMaxSignal = 64;
constexpr std::size_t kMaxWatchers = 64;

// The handler may only touch lock-free atomics.
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic<int>::is_always_lock_free);
static_assert(std::atomic<SignalHandler>::is_always_lock_free);
static_assert(std::atomic<SignalAction>::is_always_lock_free);

// One watcher's flags. The table lives in static storage and slots are reused, never freed,
// so a handler running on another thread while a watcher goes away never touches freed
// memory (at worst it flags a slot that a new watcher claims at that very moment).
struct WatcherSlot {
  std::atomic<std::uint64_t> signals{0};  // bit s-1 set: this watcher watches signal s
  std::atomic<int> received{0};           // first watched signal received; 0: none
  bool in_use = false;                    // guarded by registry_mutex
};

// What cairn's handler chains to for one signal, and what to restore.
struct SignalEntry {
  int watchers = 0;              // guarded by registry_mutex
  struct sigaction previous {};  // guarded by registry_mutex; restored by the last watcher
  // Read by the handler. Written before cairn's handler is installed and left in place after
  // it is removed, so a delivery in flight on another thread still chains correctly.
  std::atomic<SignalAction> chain_action{nullptr};
  std::atomic<SignalHandler> chain_handler{nullptr};
};

// Constant-initialized: the handler must never run a static initializer.
constinit std::mutex registry_mutex;
constinit std::array<WatcherSlot, kMaxWatchers> slots{};
constinit std::array<SignalEntry, kMaxSignal + 1> entries{};

std::uint64_t bit_of(int signo) noexcept { return std::uint64_t{1} << (signo - 1); }

void handle_signal(int signo, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  if (signo >= 1 && signo <= kMaxSignal) {
    for (auto& slot : slots) {
      if ((slot.signals.load(std::memory_order_acquire) & bit_of(signo)) == 0) continue;
      int none = 0;
      slot.received.compare_exchange_strong(none, signo, std::memory_order_acq_rel);
    }
    SignalEntry& entry = entries[static_cast<std::size_t>(signo)];
    // SIG_DFL and SIG_IGN are not chained to: the default action of SIGTERM and SIGUSR1 is
    // to terminate, and the watcher exists so that the process survives to checkpoint.
    if (SignalAction action = entry.chain_action.load(std::memory_order_acquire)) {
      errno = saved_errno;
      action(signo, info, context);
    } else if (SignalHandler handler = entry.chain_handler.load(std::memory_order_acquire)) {
      errno = saved_errno;
      handler(signo);
    }
  }
  errno = saved_errno;
}

bool is_cairn_handler(const struct sigaction& action) noexcept {
  return (action.sa_flags & SA_SIGINFO) != 0 && action.sa_sigaction == &handle_signal;
}

std::string signal_name(int signo) {
  switch (signo) {
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    case SIGQUIT: return "SIGQUIT";
    case SIGALRM: return "SIGALRM";
    case SIGXCPU: return "SIGXCPU";
    case SIGCONT: return "SIGCONT";
    default: return fmt::format("signal {}", signo);
  }
}

void check_signal(int signo) {
  if (signo < 1 || signo > kMaxSignal || signo >= NSIG) {
    throw InvalidArgument(fmt::format("PreemptionWatcher: {} is not a signal number (1 to {})",
                                      signo, std::min(kMaxSignal, NSIG - 1)));
  }
  switch (signo) {
    case SIGKILL:
    case SIGSTOP:
      throw InvalidArgument(
          fmt::format("PreemptionWatcher: signal {} (SIGKILL or SIGSTOP) cannot be caught", signo));
    case SIGSEGV:
    case SIGBUS:
    case SIGFPE:
    case SIGILL:
    case SIGTRAP:
    case SIGSYS:
      throw InvalidArgument(fmt::format(
          "PreemptionWatcher: signal {} reports a fault in the program, not a preemption; "
          "returning from its handler would repeat the fault",
          signo));
    default: break;
  }
}

// Installs cairn's handler for `signo`, or joins the one already installed. Caller holds
// registry_mutex. Throws InvalidArgument when sigaction refuses the signal.
void join_signal(int signo) {
  SignalEntry& entry = entries[static_cast<std::size_t>(signo)];
  struct sigaction current {};
  if (entry.watchers > 0) {
    if (sigaction(signo, nullptr, &current) == 0 && !is_cairn_handler(current)) {
      base::log::warn(
          "preemption.handler_replaced",
          "signal={}: another handler replaced cairn's; this watcher sees the signal only "
          "if that handler calls the one it replaced",
          signal_name(signo));
    }
    ++entry.watchers;
    return;
  }
  if (sigaction(signo, nullptr, &current) != 0) {
    throw InvalidArgument(fmt::format("PreemptionWatcher: cannot query the handler of {}: {}",
                                      signal_name(signo), std::strerror(errno)));
  }
  // A handler of ours still in place (left there because another handler had replaced it
  // and then put it back) keeps its chain; never chain to ourselves.
  if (!is_cairn_handler(current)) {
    const bool siginfo = (current.sa_flags & SA_SIGINFO) != 0;
    const SignalHandler handler = siginfo ? nullptr : current.sa_handler;
    const bool plain = handler != SIG_DFL && handler != SIG_IGN;
    entry.chain_action.store(siginfo ? current.sa_sigaction : nullptr, std::memory_order_release);
    entry.chain_handler.store(plain ? handler : nullptr, std::memory_order_release);
  }
  struct sigaction ours {};
  ours.sa_sigaction = &handle_signal;
  // Keep the previous mask so that a chained handler runs with the signals it expects
  // blocked; restart interrupted system calls so I/O in the application does not see EINTR.
  ours.sa_mask = current.sa_mask;
  ours.sa_flags = SA_SIGINFO | SA_RESTART | (current.sa_flags & SA_ONSTACK);
  if (sigaction(signo, &ours, nullptr) != 0) {
    throw InvalidArgument(fmt::format("PreemptionWatcher: cannot install a handler for {}: {}",
                                      signal_name(signo), std::strerror(errno)));
  }
  entry.previous = current;
  entry.watchers = 1;
}

// Undoes join_signal. Caller holds registry_mutex. Never throws.
void leave_signal(int signo) noexcept {
  SignalEntry& entry = entries[static_cast<std::size_t>(signo)];
  if (entry.watchers == 0 || --entry.watchers > 0) return;
  struct sigaction current {};
  if (sigaction(signo, nullptr, &current) == 0 && !is_cairn_handler(current)) {
    // Restoring would throw away whoever replaced us. Our handler, if they chain to it,
    // keeps chaining to the original disposition.
    base::log::warn("preemption.handler_replaced",
                    "signal={}: another handler replaced cairn's; leaving it in place",
                    signal_name(signo));
    return;
  }
  if (sigaction(signo, &entry.previous, nullptr) != 0) {
    base::log::error("preemption.restore_failed", "signal={} error='{}'", signal_name(signo),
                     std::strerror(errno));
  }
}

std::optional<Clock::time_point> slurm_end_time() {
  const char* value = std::getenv("SLURM_JOB_END_TIME");
  if (value == nullptr) return std::nullopt;
  const std::string_view text(value);
  // Strict: decimal digits only (no sign, no blanks), no overflow of the clock, not 0.
  const auto max_seconds =
      std::chrono::duration_cast<std::chrono::seconds>(Clock::duration::max()).count();
  std::int64_t seconds = 0;
  bool ok = !text.empty() &&
            std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (ok) {
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seconds);
    ok = error == std::errc() && end == text.data() + text.size() && seconds > 0 &&
         seconds <= max_seconds;
  }
  if (!ok) {
    base::log::warn(
        "preemption.bad_end_time",
        "SLURM_JOB_END_TIME='{}' is not a Unix time in whole seconds; ignored (the job's "
        "time limit will not trigger preemption)",
        text);
    return std::nullopt;
  }
  return Clock::time_point(std::chrono::seconds(seconds));
}

}  // namespace

PreemptionWatcher::PreemptionWatcher(PreemptionOptions options) : options_(std::move(options)) {
  if (options_.margin < std::chrono::seconds(0)) {
    throw InvalidArgument(
        fmt::format("PreemptionWatcher: margin {}s is negative", options_.margin.count()));
  }
  std::vector<int>& signals = options_.signals;
  // An injected check replaces the signals and the deadline: nothing is installed.
  if (options_.check) {
    signals.clear();
    options_.deadline.reset();
    options_.use_slurm_end_time = false;
  }
  std::sort(signals.begin(), signals.end());
  signals.erase(std::unique(signals.begin(), signals.end()), signals.end());
  for (int signo : signals) check_signal(signo);

  deadline_ = options_.deadline;
  if (options_.use_slurm_end_time) {
    if (auto end = slurm_end_time()) deadline_ = deadline_ ? std::min(*deadline_, *end) : *end;
  }

  std::string deadline_text = "none";
  if (deadline_) {
    deadline_text = fmt::format(
        "{}",
        std::chrono::duration_cast<std::chrono::seconds>(deadline_->time_since_epoch()).count());
  }
  std::vector<std::string> names;
  for (int signo : signals) names.push_back(signal_name(signo));
  base::log::debug("preemption.watch", "signals=[{}] deadline={} margin_seconds={}",
                   fmt::join(names, ","), deadline_text, options_.margin.count());

  if (!signals.empty()) {
    std::lock_guard lock(registry_mutex);
    const auto free = std::find_if(slots.begin(), slots.end(),
                                   [](const WatcherSlot& slot) { return !slot.in_use; });
    if (free == slots.end()) {
      throw InvalidArgument(
          fmt::format("PreemptionWatcher: more than {} watchers at once; share one", kMaxWatchers));
    }
    free->in_use = true;
    free->received.store(0, std::memory_order_release);
    slot_ = static_cast<int>(free - slots.begin());
    std::size_t joined = 0;
    try {
      for (; joined < signals.size(); ++joined) {
        // Watch before installing, so that no delivery after installation is missed.
        free->signals.fetch_or(bit_of(signals[joined]), std::memory_order_acq_rel);
        join_signal(signals[joined]);
      }
    } catch (...) {
      free->signals.store(0, std::memory_order_release);
      for (std::size_t i = 0; i < joined; ++i) leave_signal(signals[i]);
      free->in_use = false;
      slot_ = -1;
      throw;
    }
  }
}

PreemptionWatcher::~PreemptionWatcher() { release(); }

PreemptionWatcher::PreemptionWatcher(PreemptionWatcher&& other) noexcept
    : options_(std::move(other.options_)),
      slot_(std::exchange(other.slot_, -1)),
      deadline_(other.deadline_),
      preemption_step_(other.preemption_step_) {
  other.options_.signals.clear();
}

PreemptionWatcher& PreemptionWatcher::operator=(PreemptionWatcher&& other) noexcept {
  if (this != &other) {
    release();
    options_ = std::move(other.options_);
    other.options_.signals.clear();
    slot_ = std::exchange(other.slot_, -1);
    deadline_ = other.deadline_;
    preemption_step_ = other.preemption_step_;
  }
  return *this;
}

void PreemptionWatcher::release() noexcept {
  if (slot_ < 0) return;
  std::lock_guard lock(registry_mutex);
  WatcherSlot& slot = slots[static_cast<std::size_t>(slot_)];
  // Stop watching first: a delivery after the handler is gone must not be counted here.
  slot.signals.store(0, std::memory_order_release);
  for (int signo : options_.signals) leave_signal(signo);
  slot.in_use = false;
  slot_ = -1;
}

bool PreemptionWatcher::local_signal_received() const noexcept { return signal().has_value(); }

std::optional<int> PreemptionWatcher::signal() const noexcept {
  if (slot_ < 0) return std::nullopt;
  const int signo = slots[static_cast<std::size_t>(slot_)].received.load(std::memory_order_acquire);
  if (signo == 0) return std::nullopt;
  return signo;
}

std::optional<Clock::time_point> PreemptionWatcher::deadline() const noexcept { return deadline_; }

bool PreemptionWatcher::deadline_near(Clock::time_point now) const noexcept {
  if (!deadline_) return false;
  if (now >= *deadline_) return true;
  // floor(remaining) < margin  <=>  remaining < margin, since the margin is whole seconds;
  // flooring first keeps a huge margin from overflowing the clock's finer duration.
  return std::chrono::floor<std::chrono::seconds>(*deadline_ - now) < options_.margin;
}

Clock::time_point PreemptionWatcher::now() const {
  return options_.clock ? options_.clock() : Clock::now();
}

bool PreemptionWatcher::reached_preemption(const Comm& comm, std::int64_t step) {
  if (preemption_step_) return true;
  // One allreduce carries everything: 0 nothing, 1 preemption, 2 + r the clock threw on
  // rank r. A failure on one rank thus becomes an error on every rank instead of a hang.
  std::int64_t local = 0;
  std::string clock_error;
  bool near = false;
  bool checked = false;
  try {
    if (options_.check) {
      checked = options_.check(step);
    } else {
      near = deadline_near(now());
    }
    local = (near || checked || local_signal_received()) ? 1 : 0;
  } catch (const std::exception& e) {
    clock_error = e.what();
    local = 2 + comm.rank();
  } catch (...) {
    clock_error = "unknown exception";
    local = 2 + comm.rank();
  }
  const std::int64_t verdict = comm.max(local);
  if (verdict >= 2) {
    throw InvalidArgument(
        fmt::format("reached_preemption(step {}): PreemptionOptions::{} threw on rank {}{}", step,
                    options_.check ? "check" : "clock", verdict - 2,
                    clock_error.empty() ? std::string() : ": " + clock_error));
  }
  if (verdict == 0) return false;
  preemption_step_ = step;
  const std::optional<int> received = signal();
  base::log::info("preemption.reached",
                  "step={} local_signal={} local_deadline_near={} local_check={}", step,
                  received ? signal_name(*received) : "none", near, checked);
  return true;
}

}  // namespace cairn
