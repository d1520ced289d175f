// PreemptionWatcher: signals (raised on one rank, on another thread, chained to and from
// other handlers), deadlines from the options and from SLURM_JOB_END_TIME, and the collective
// verdict of reached_preemption(). Signals are sent with raise(), which runs the handler
// before it returns, so no test waits for a signal.
#include <gtest/gtest.h>
#include <mpi.h>
#include <signal.h>

#include <cairn/comm.hpp>
#include <cairn/error.hpp>
#include <cairn/log.hpp>
#include <cairn/preemption.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/test_support.hpp"

namespace {

using cairn::Comm;
using cairn::PreemptionOptions;
using cairn::PreemptionWatcher;
using Clock = std::chrono::system_clock;
using namespace std::chrono_literals;

constexpr std::array<int, 3> kTestSignals = {SIGTERM, SIGUSR1, SIGUSR2};

std::atomic<int> plain_calls{0};
std::atomic<int> siginfo_calls{0};
std::atomic<int> siginfo_signo{0};

void count_plain(int) { plain_calls.fetch_add(1); }
void count_siginfo(int, siginfo_t* info, void*) {
  siginfo_calls.fetch_add(1);
  siginfo_signo.store(info != nullptr ? info->si_signo : -1);
}

struct sigaction current_action(int signo) {
  struct sigaction action {};
  sigaction(signo, nullptr, &action);
  return action;
}

void set_plain(int signo, void (*handler)(int)) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  ASSERT_EQ(sigaction(signo, &action, nullptr), 0);
}

bool is_plain(int signo, void (*handler)(int)) {
  const struct sigaction action = current_action(signo);
  return (action.sa_flags & SA_SIGINFO) == 0 && action.sa_handler == handler;
}

int last_rank() { return cairn::testing::world_size() - 1; }

// Every test starts with SIG_DFL for the test signals and no SLURM_JOB_END_TIME, and puts
// back what it found.
class Preemption : public ::testing::Test {
 protected:
  void SetUp() override {
    for (std::size_t i = 0; i < kTestSignals.size(); ++i) {
      ASSERT_EQ(sigaction(kTestSignals[i], nullptr, &saved_[i]), 0);
      set_plain(kTestSignals[i], SIG_DFL);
    }
    if (const char* end = std::getenv("SLURM_JOB_END_TIME")) saved_end_time_ = end;
    unsetenv("SLURM_JOB_END_TIME");
    plain_calls = 0;
    siginfo_calls = 0;
    siginfo_signo = 0;
  }
  void TearDown() override {
    for (std::size_t i = 0; i < kTestSignals.size(); ++i) {
      sigaction(kTestSignals[i], &saved_[i], nullptr);
    }
    if (saved_end_time_) {
      setenv("SLURM_JOB_END_TIME", saved_end_time_->c_str(), 1);
    } else {
      unsetenv("SLURM_JOB_END_TIME");
    }
  }

  Comm comm_{MPI_COMM_WORLD};

 private:
  std::array<struct sigaction, kTestSignals.size()> saved_{};
  std::optional<std::string> saved_end_time_;
};

// The options of a test that only looks at signals.
PreemptionOptions signals_only(std::vector<int> signals) {
  return {.signals = std::move(signals), .use_slurm_end_time = false};
}

TEST_F(Preemption, SignalOnOneRankStopsEveryRankAtTheSameStep) {
  PreemptionWatcher watcher(signals_only({SIGUSR1}));
  const bool signalled_here = comm_.rank() == last_rank();
  for (std::int64_t step = 0; step < 8; ++step) {
    if (step == 3 && signalled_here) {
      ASSERT_EQ(std::raise(SIGUSR1), 0);
    }
    EXPECT_EQ(watcher.reached_preemption(comm_, step), step >= 3) << "step " << step;
  }
  EXPECT_EQ(watcher.preemption_step(), std::optional<std::int64_t>(3));
  EXPECT_EQ(watcher.local_signal_received(), signalled_here);
  EXPECT_EQ(watcher.signal(), signalled_here ? std::optional<int>(SIGUSR1) : std::nullopt);
  const auto steps = comm_.allgather(watcher.preemption_step().value_or(-1));
  for (std::int64_t step : steps) EXPECT_EQ(step, 3);
}

TEST_F(Preemption, WithoutSignalOrDeadlineNoRankPreempts) {
  PreemptionWatcher watcher(signals_only({SIGTERM, SIGUSR1}));
  for (std::int64_t step = 0; step < 5; ++step) {
    EXPECT_FALSE(watcher.reached_preemption(comm_, step));
  }
  EXPECT_FALSE(watcher.local_signal_received());
  EXPECT_EQ(watcher.signal(), std::nullopt);
  EXPECT_EQ(watcher.preemption_step(), std::nullopt);
  EXPECT_EQ(watcher.deadline(), std::nullopt);
}

TEST_F(Preemption, DefaultsWatchSigtermAndSigusr1AndSurviveTheDefaultAction) {
  {
    PreemptionWatcher watcher({.use_slurm_end_time = false});
    EXPECT_EQ(watcher.options().signals, (std::vector<int>{SIGUSR1, SIGTERM}));
    EXPECT_EQ(watcher.options().margin, 5min);
    // The previous disposition is SIG_DFL, which would terminate: it must not run.
    if (comm_.is_primary()) {
      ASSERT_EQ(std::raise(SIGTERM), 0);
    }
    EXPECT_TRUE(watcher.reached_preemption(comm_, 7));
    EXPECT_EQ(watcher.signal(), comm_.is_primary() ? std::optional<int>(SIGTERM) : std::nullopt);
  }
  EXPECT_TRUE(is_plain(SIGTERM, SIG_DFL));
  EXPECT_TRUE(is_plain(SIGUSR1, SIG_DFL));
}

TEST_F(Preemption, SignalOnAnotherThreadSetsTheFlag) {
  PreemptionWatcher watcher(signals_only({SIGUSR1}));
  if (comm_.rank() == last_rank()) {
    // raise() on the helper thread runs the handler on that thread before it returns.
    std::thread sender([] { std::raise(SIGUSR1); });
    sender.join();
    EXPECT_TRUE(watcher.local_signal_received());
  }
  EXPECT_TRUE(watcher.reached_preemption(comm_, 0));
}

TEST_F(Preemption, ChainsToAPlainHandlerAndRestoresIt) {
  set_plain(SIGUSR1, &count_plain);
  {
    PreemptionWatcher watcher(signals_only({SIGUSR1}));
    EXPECT_FALSE(is_plain(SIGUSR1, &count_plain));
    ASSERT_EQ(std::raise(SIGUSR1), 0);
    EXPECT_TRUE(watcher.local_signal_received());
    EXPECT_EQ(plain_calls.load(), 1);
  }
  EXPECT_TRUE(is_plain(SIGUSR1, &count_plain));
  ASSERT_EQ(std::raise(SIGUSR1), 0);
  EXPECT_EQ(plain_calls.load(), 2);
}

TEST_F(Preemption, ChainsToASiginfoHandlerAndRestoresIt) {
  struct sigaction previous {};
  previous.sa_sigaction = &count_siginfo;
  previous.sa_flags = SA_SIGINFO;
  sigemptyset(&previous.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR2, &previous, nullptr), 0);
  {
    PreemptionWatcher watcher(signals_only({SIGUSR2}));
    ASSERT_EQ(std::raise(SIGUSR2), 0);
    EXPECT_EQ(watcher.signal(), std::optional<int>(SIGUSR2));
    EXPECT_EQ(siginfo_calls.load(), 1);
    EXPECT_EQ(siginfo_signo.load(), SIGUSR2);
  }
  const struct sigaction restored = current_action(SIGUSR2);
  EXPECT_NE(restored.sa_flags & SA_SIGINFO, 0);
  EXPECT_EQ(restored.sa_sigaction, &count_siginfo);
}

TEST_F(Preemption, IgnoredSignalStaysIgnoredAfterwards) {
  set_plain(SIGUSR1, SIG_IGN);
  {
    PreemptionWatcher watcher(signals_only({SIGUSR1}));
    ASSERT_EQ(std::raise(SIGUSR1), 0);
    EXPECT_TRUE(watcher.local_signal_received());
  }
  EXPECT_TRUE(is_plain(SIGUSR1, SIG_IGN));
}

TEST_F(Preemption, SecondWatcherChainsToTheFirstInAnyDestructionOrder) {
  set_plain(SIGUSR1, &count_plain);
  auto first = std::make_optional<PreemptionWatcher>(signals_only({SIGUSR1}));
  auto second = std::make_optional<PreemptionWatcher>(signals_only({SIGUSR1, SIGUSR2}));
  ASSERT_EQ(std::raise(SIGUSR1), 0);
  EXPECT_TRUE(first->local_signal_received());
  EXPECT_TRUE(second->local_signal_received());
  EXPECT_EQ(plain_calls.load(), 1);  // the original handler runs once per delivery

  // The first watcher goes first: the second must keep watching.
  first.reset();
  EXPECT_FALSE(is_plain(SIGUSR1, &count_plain));
  PreemptionWatcher third(signals_only({SIGUSR1}));
  ASSERT_EQ(std::raise(SIGUSR1), 0);
  EXPECT_TRUE(third.local_signal_received());
  EXPECT_EQ(plain_calls.load(), 2);

  second.reset();
  EXPECT_TRUE(is_plain(SIGUSR2, SIG_DFL));
  EXPECT_FALSE(is_plain(SIGUSR1, &count_plain));  // `third` still watches it
}

TEST_F(Preemption, HandlerInstalledOverTheWatcherIsNotThrownAway) {
  {
    PreemptionWatcher watcher(signals_only({SIGUSR1}));
    set_plain(SIGUSR1, &count_plain);  // e.g. a library the application loads later
  }
  EXPECT_TRUE(is_plain(SIGUSR1, &count_plain));
}

TEST_F(Preemption, MovedWatcherKeepsWatchingAndRestoresOnce) {
  set_plain(SIGUSR1, &count_plain);
  PreemptionWatcher moved_from(signals_only({SIGUSR1}));
  {
    PreemptionWatcher watcher(std::move(moved_from));
    ASSERT_EQ(std::raise(SIGUSR1), 0);
    EXPECT_TRUE(watcher.local_signal_received());
    EXPECT_FALSE(moved_from.local_signal_received());  // NOLINT(bugprone-use-after-move)

    PreemptionWatcher target(signals_only({SIGUSR2}));
    EXPECT_FALSE(is_plain(SIGUSR2, SIG_DFL));
    target = std::move(watcher);
    EXPECT_TRUE(is_plain(SIGUSR2, SIG_DFL));  // what `target` watched before is released
    EXPECT_EQ(target.signal(), std::optional<int>(SIGUSR1));
  }
  EXPECT_TRUE(is_plain(SIGUSR1, &count_plain));
}

TEST_F(Preemption, DeadlineFromOptionsWithInjectedClock) {
  const Clock::time_point start = Clock::time_point(std::chrono::seconds(1'700'000'000));
  Clock::time_point fake_now = start;
  PreemptionWatcher watcher({.signals = {},
                             .deadline = start + 10min,
                             .use_slurm_end_time = false,
                             .margin = 5min,
                             .clock = [&fake_now] { return fake_now; }});
  EXPECT_EQ(watcher.deadline(), std::optional(start + 10min));
  EXPECT_FALSE(watcher.deadline_near(start + 5min));  // exactly the margin left
  EXPECT_TRUE(watcher.deadline_near(start + 5min + 1ns));
  EXPECT_TRUE(watcher.deadline_near(start + 10min));
  EXPECT_TRUE(watcher.deadline_near(start + 1h));

  EXPECT_FALSE(watcher.reached_preemption(comm_, 0));
  fake_now = start + 4min;
  EXPECT_FALSE(watcher.reached_preemption(comm_, 1));
  fake_now = start + 5min + 1s;
  EXPECT_TRUE(watcher.reached_preemption(comm_, 2));
  EXPECT_EQ(watcher.preemption_step(), std::optional<std::int64_t>(2));
}

TEST_F(Preemption, DeadlineNearOnOneRankStopsEveryRank) {
  const Clock::time_point start = Clock::time_point(std::chrono::seconds(1'700'000'000));
  Clock::time_point fake_now = start;
  PreemptionOptions options{
      .signals = {}, .use_slurm_end_time = false, .margin = 1min, .clock = [&fake_now] {
        return fake_now;
      }};
  if (comm_.rank() == last_rank()) options.deadline = start + 2min;
  PreemptionWatcher watcher(std::move(options));
  EXPECT_FALSE(watcher.reached_preemption(comm_, 10));
  fake_now = start + 90s;
  EXPECT_TRUE(watcher.reached_preemption(comm_, 20));
  EXPECT_EQ(watcher.preemption_step(), std::optional<std::int64_t>(20));
}

std::string unix_seconds(Clock::time_point t) {
  return std::to_string(std::chrono::floor<std::chrono::seconds>(t.time_since_epoch()).count());
}

TEST_F(Preemption, SlurmEndTimeCloseToNowPreempts) {
  const std::string end = unix_seconds(Clock::now() + 60s);
  ASSERT_EQ(setenv("SLURM_JOB_END_TIME", end.c_str(), 1), 0);
  PreemptionWatcher watcher({.signals = {}});
  ASSERT_TRUE(watcher.deadline().has_value());
  EXPECT_EQ(unix_seconds(*watcher.deadline()), end);
  EXPECT_TRUE(watcher.reached_preemption(comm_, 5));

  PreemptionWatcher ignoring({.signals = {}, .use_slurm_end_time = false});
  EXPECT_EQ(ignoring.deadline(), std::nullopt);
  EXPECT_FALSE(ignoring.reached_preemption(comm_, 5));
}

TEST_F(Preemption, SlurmEndTimeFarAwayDoesNotPreempt) {
  const Clock::time_point end = Clock::now() + 24h;
  ASSERT_EQ(setenv("SLURM_JOB_END_TIME", unix_seconds(end).c_str(), 1), 0);
  PreemptionWatcher watcher({.signals = {}});
  EXPECT_FALSE(watcher.reached_preemption(comm_, 5));

  // An explicit deadline that is earlier wins over the Slurm end time.
  const Clock::time_point soon = Clock::now() + 2min;
  PreemptionWatcher earlier({.signals = {}, .deadline = soon});
  EXPECT_EQ(earlier.deadline(), std::optional(soon));
  EXPECT_TRUE(earlier.reached_preemption(comm_, 5));
}

TEST_F(Preemption, MalformedSlurmEndTimeIsIgnoredWithAWarning) {
  const cairn::LogLevel level = cairn::log_level();
  cairn::set_log_level(cairn::LogLevel::warn);
  for (const char* value : {"", "abc", "12x", "-5", "+5", " 5", "5 ", "0", "1.5e9",
                            "99999999999999999999999", "9223372036854775807"}) {
    ASSERT_EQ(setenv("SLURM_JOB_END_TIME", value, 1), 0);
    ::testing::internal::CaptureStderr();
    std::optional<PreemptionWatcher> watcher;
    watcher.emplace(PreemptionOptions{.signals = {}});
    const std::string printed = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(watcher->deadline(), std::nullopt) << "value '" << value << "'";
    EXPECT_NE(printed.find("SLURM_JOB_END_TIME"), std::string::npos) << "value '" << value << "'";
    EXPECT_FALSE(watcher->reached_preemption(comm_, 0)) << "value '" << value << "'";
  }
  cairn::set_log_level(level);
}

TEST_F(Preemption, RefusesSignalsItCannotWatchAndInstallsNothing) {
  for (int signo : {0, -1, 65, SIGKILL, SIGSTOP, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) {
    EXPECT_THROW(PreemptionWatcher(signals_only({SIGUSR1, signo})), cairn::InvalidArgument)
        << "signal " << signo;
  }
  EXPECT_THROW(PreemptionWatcher({.margin = -1s}), cairn::InvalidArgument);
  // glibc keeps signal 32 for itself: sigaction refuses it after SIGUSR1 was installed, and
  // the constructor must take SIGUSR1's handler back out.
  set_plain(SIGUSR1, &count_plain);
  EXPECT_THROW(PreemptionWatcher(signals_only({SIGUSR1, 32})), cairn::InvalidArgument);
  EXPECT_TRUE(is_plain(SIGUSR1, &count_plain));
  EXPECT_TRUE(is_plain(SIGUSR2, SIG_DFL));
}

TEST_F(Preemption, ClockThatThrowsOnOneRankFailsEveryRank) {
  const bool failing = comm_.rank() == last_rank();
  PreemptionWatcher watcher({.signals = {},
                             .deadline = Clock::now() + 1h,
                             .use_slurm_end_time = false,
                             .clock = [failing] {
                               if (failing) throw std::runtime_error("clock broke");
                               return Clock::now();
                             }});
  try {
    (void)watcher.reached_preemption(comm_, 3);
    ADD_FAILURE() << "reached_preemption did not throw";
  } catch (const cairn::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(last_rank())), std::string::npos)
        << e.what();
    if (failing) {
      EXPECT_NE(std::string(e.what()).find("clock broke"), std::string::npos);
    }
  }
  EXPECT_EQ(watcher.preemption_step(), std::nullopt);
}

}  // namespace
