// Orbax's retention by predicate and by age, and its preemption check, re-expressed against
// cairn's CheckpointManager: should_keep_fn, LatestDuration on the manager's clock, and a
// preemption check the test drives instead of raising a signal. Each TEST names the Orbax
// test or code path it mirrors.
#include <cairn/manager.hpp>
#include <gtest/gtest.h>

#include <csignal>

#include "orbax_parity/parity_support.hpp"
#include "support/test_support.hpp"

using namespace cairn;
using cairn::parity::FakeClock;
using cairn::parity::save;
using cairn::parity::Steps;
using cairn::testing::SharedTempDir;
using namespace std::chrono_literals;

// Orbax checkpoint_manager_test with should_keep_fn (CheckpointManagerOptions.should_keep_fn):
// a step the predicate keeps survives max_to_keep.
TEST(OrbaxCheckpointManager, test_should_keep_fn) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  CheckpointManager manager(
      comm, tmp.path(),
      {.max_to_keep = 2, .should_keep_fn = [](std::int64_t step) { return step % 4 == 0; }});
  for (std::int64_t step = 1; step <= 10; ++step) EXPECT_TRUE(save(manager, comm, step));
  manager.wait_until_finished();
  EXPECT_EQ(manager.all_steps(), (Steps{4, 8, 9, 10}));
  // With a preservation policy object instead of max_to_keep, the same union.
  SharedTempDir other;
  CheckpointManager with_policy(
      comm, other.path(),
      {.should_keep_fn = [](std::int64_t step) { return step == 2; },
       .preservation_policy = std::make_shared<preservation_policy::LatestN>(1)});
  for (std::int64_t step = 1; step <= 5; ++step) EXPECT_TRUE(save(with_policy, comm, step));
  with_policy.wait_until_finished();
  EXPECT_EQ(with_policy.all_steps(), (Steps{2, 5}));
}

// Orbax preservation_policy.py LatestDuration, whose "now" Orbax's tests mock: in a manager,
// now is the manager's clock (the clock the step times come from), not a clock of the
// policy's own. On the system clock every fake-clock step would be years old.
TEST(OrbaxCheckpointManager, test_latest_duration_on_the_manager_clock) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  FakeClock clock;
  CheckpointManager manager(
      comm, tmp.path(),
      {.preservation_policy = std::make_shared<preservation_policy::LatestDuration>(100s),
       .enable_async = false,
       .clock = clock.fn()});
  for (std::int64_t step = 1; step <= 4; ++step) {
    EXPECT_TRUE(save(manager, comm, step));
    clock.advance(60s);
  }
  // Saved at 0, 60, 120 and 180 s; the last retention ran at 180 s.
  EXPECT_EQ(manager.all_steps(), (Steps{3, 4}));
  clock.advance(1000s);
  EXPECT_TRUE(save(manager, comm, 5));
  EXPECT_EQ(manager.all_steps(), (Steps{5}));
}

namespace {

int handled_signals = 0;
void count_signal(int) { ++handled_signals; }

}  // namespace

// Orbax test_reached_preemption (its tests drive reached_preemption through a mocked
// multihost sync point): a preemption check injected into the manager decides, on one rank
// for all, without a signal; the manager then saves from that step on whatever its interval
// says, and installs no signal handler.
TEST(OrbaxCheckpointManager, test_reached_preemption_injected) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  struct sigaction previous {};
  struct sigaction mine {};
  mine.sa_handler = count_signal;
  sigemptyset(&mine.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR1, &mine, &previous), 0);
  const int last = comm.size() - 1;
  {
    CheckpointManager manager(comm, tmp.path(),
                              {.save_interval_steps = 100,
                               .preemption = PreemptionOptions{.check = [&](std::int64_t step) {
                                 return comm.rank() == last && step >= 5;
                               }}});
    // The manager's watcher left SIGUSR1 to the handler installed before it.
    struct sigaction now {};
    ASSERT_EQ(sigaction(SIGUSR1, nullptr, &now), 0);
    EXPECT_EQ(now.sa_handler, &count_signal);
    for (std::int64_t step = 0; step <= 6; ++step) {
      const bool saved = save(manager, comm, step);
      // As in Orbax, every step from the preemption on is saved (a job stops after the first).
      EXPECT_EQ(saved, step == 0 || step >= 5) << "step " << step;
    }
    EXPECT_TRUE(manager.reached_preemption(6));
    manager.wait_until_finished();
    EXPECT_EQ(manager.all_steps(), (Steps{0, 5, 6}));
  }
  // A check that throws on one rank is an error on every rank, naming the rank.
  {
    SharedTempDir other;
    CheckpointManager manager(comm, other.path(),
                              {.preemption = PreemptionOptions{.check = [&](std::int64_t) -> bool {
                                 if (comm.rank() == last) throw std::runtime_error("sync failed");
                                 return false;
                               }}});
    try {
      (void)manager.reached_preemption(1);
      ADD_FAILURE() << "the check's failure was not reported";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(last)), std::string::npos)
          << e.what();
    }
  }
  ASSERT_EQ(sigaction(SIGUSR1, &previous, nullptr), 0);
  EXPECT_EQ(handled_signals, 0);
}
