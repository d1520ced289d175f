// CheckpointManager members called from several threads at once: wait_until_finished() from a
// training thread and logger threads while an async save is in flight (run under
// ThreadSanitizer by scripts/test.sh), and the wait of a save for the previous one: recorded,
// and a warning only when it is long.
#include <cairn/log.hpp>
#include <cairn/manager.hpp>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/gated_handler.hpp"
#include "support/test_support.hpp"

using namespace cairn;
using cairn::testing::Gate;
using cairn::testing::GatedHandler;
using cairn::testing::SharedTempDir;

namespace {

Composite item(std::int64_t step) {
  return Composite{{"state", std::make_shared<JsonSave>(boost::json::value{{"step", step}})}};
}

std::int64_t restored_step(CheckpointManager& manager, std::int64_t step) {
  const Composite args{{"state", std::make_shared<JsonRestore>()}};
  const auto result = Checkpointer::result_as<CompositeResult>(manager.restore(step, &args));
  return result.get<boost::json::value>("state").at("step").as_int64();
}

}  // namespace

// Orbax test_save_restore_with_concurrent_wait_until_finished: ten waiters and the main
// thread wait for one save in flight; none hangs or fails, the step is committed once.
TEST(ManagerThreads, WaitUntilFinishedFromSeveralThreadsAtOnce) {
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  if (level < MPI_THREAD_MULTIPLE) GTEST_SKIP() << "needs MPI_THREAD_MULTIPLE";
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  auto gate = std::make_shared<Gate>();
  int commits = 0;
  CheckpointManager manager(
      comm, tmp.path(), {.on_commit = [&](std::int64_t, const boost::json::object&) { ++commits; }},
      {{"state", std::make_shared<GatedHandler>(std::make_shared<cairn::JsonHandler>(), gate)}});
  gate->close();
  ASSERT_TRUE(manager.save(1, item(1)));
  EXPECT_TRUE(manager.is_saving_in_progress());  // its write waits at the gate
  constexpr int kWaiters = 10;
  std::vector<std::exception_ptr> failures(kWaiters + 1);
  std::vector<std::thread> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&, i] {
      try {
        manager.wait_until_finished();
        (void)manager.is_saving_in_progress();
      } catch (...) {
        failures[static_cast<std::size_t>(i)] = std::current_exception();
      }
    });
  }
  gate->open();
  try {
    manager.wait_until_finished();
  } catch (...) {
    failures.back() = std::current_exception();
  }
  for (auto& t : waiters) t.join();
  for (const auto& failure : failures) {
    if (failure) {
      try {
        std::rethrow_exception(failure);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "wait_until_finished threw: " << e.what();
      }
    }
  }
  EXPECT_FALSE(manager.is_saving_in_progress());
  EXPECT_EQ(commits, 1);
  EXPECT_EQ(manager.all_steps(), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(restored_step(manager, 1), 1);
}

namespace {

// What the wait of step 3 for step 2 left: the wait recorded with step 3 (std::nullopt when
// none) and what this rank printed during save(3).
struct Waited {
  std::optional<double> recorded;
  std::string printed;
};

// Saves steps 1, 2 and 3 at `root`, step 3 while step 2 is in flight, on a manager clock that
// advances `tick` per call. Step 2's write waits at a gate that opens when the saving thread
// reads the clock to time its wait, so that the previous save is still in flight then; the
// wait measured is two ticks on the primary: the retention of the landed step 2 reads the
// manager's clock once (the present of LatestDuration) before the wait ends.
Waited wait_for_previous(const std::filesystem::path& root, const Comm& comm,
                         std::chrono::milliseconds tick) {
  auto gate = std::make_shared<Gate>();
  auto now = std::make_shared<std::chrono::system_clock::time_point>(std::chrono::hours(480000));
  // Clock calls, counted once the gate closed: the primary reads the clock to decide on step 2
  // (1) and step 3 (2), then to start timing the wait (3); the other ranks only for that (1).
  auto calls = std::make_shared<int>(-1);
  const int opening_call = comm.is_primary() ? 3 : 1;
  const auto clock = [=] {
    if (*calls >= 0 && ++*calls == opening_call) gate->open();
    *now += tick;
    return *now;
  };
  CheckpointManager manager(
      comm, root, {.clock = clock},
      {{"state", std::make_shared<GatedHandler>(std::make_shared<cairn::JsonHandler>(), gate)}});
  EXPECT_TRUE(manager.save(1, item(1)));
  manager.wait_until_finished();
  gate->close();
  *calls = 0;
  EXPECT_TRUE(manager.save(2, item(2)));
  Waited waited;
  ::testing::internal::CaptureStderr();
  const bool saved = manager.save(3, item(3));  // waits for step 2
  waited.printed = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(saved);
  manager.wait_until_finished();
  EXPECT_EQ(manager.all_steps(), (std::vector<std::int64_t>{1, 2, 3}));
  const auto custom = manager.metadata(3).at("custom").as_object();
  if (const auto* w = custom.if_contains("waited_for_previous_save_s")) {
    waited.recorded = w->to_number<double>();
  }
  // Step 2 did not wait: nothing was in flight when it started.
  EXPECT_FALSE(manager.metadata(2).at("custom").as_object().contains("waited_for_previous_save_s"));
  return waited;
}

// Sets the log level (and every rank printing) for the life of the object.
class LogLevelFor {
 public:
  explicit LogLevelFor(LogLevel level) : saved_(log_level()) {
    set_log_level(level);
    set_log_all_ranks(true);
  }
  ~LogLevelFor() {
    set_log_level(saved_);
    set_log_all_ranks(false);
  }
  LogLevelFor(const LogLevelFor&) = delete;
  LogLevelFor& operator=(const LogLevelFor&) = delete;

 private:
  LogLevel saved_;
};

bool has_line(const std::string& printed, const std::string& level) {
  return printed.find("level=" + level + " event=manager.waited_for_previous_save") !=
         std::string::npos;
}

}  // namespace

// A save that must wait for the previous one records the wait in its step metadata.
TEST(ManagerThreads, ASaveThatWaitsForThePreviousOneRecordsTheWait) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const Waited waited = wait_for_previous(tmp.path(), comm, std::chrono::seconds(1));
  ASSERT_TRUE(waited.recorded.has_value());
  EXPECT_EQ(*waited.recorded, 2.0);
}

// As Orbax: a wait of more than 1 s is a warning; a shorter one is not, so that an async loop
// that outpaces its commits does not fill the log; it is logged at debug level.
TEST(ManagerThreads, OnlyALongWaitForThePreviousSaveIsAWarning) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  {
    const LogLevelFor warn(LogLevel::warn);
    const Waited brief = wait_for_previous(tmp / "brief", comm, std::chrono::milliseconds(400));
    ASSERT_TRUE(brief.recorded.has_value());
    EXPECT_DOUBLE_EQ(*brief.recorded, 0.8);
    EXPECT_FALSE(has_line(brief.printed, "warn")) << brief.printed;
    const Waited longer = wait_for_previous(tmp / "long", comm, std::chrono::seconds(1));
    EXPECT_EQ(longer.recorded, std::optional(2.0));
    // Printed once per job, by the primary (the other ranks log it at debug level).
    EXPECT_EQ(has_line(longer.printed, "warn"), comm.is_primary()) << longer.printed;
    if (comm.is_primary()) {
      EXPECT_NE(longer.printed.find("consider saving less frequently"), std::string::npos)
          << longer.printed;
    }
  }
  const LogLevelFor debug(LogLevel::debug);
  const Waited brief = wait_for_previous(tmp / "brief_debug", comm, std::chrono::milliseconds(400));
  EXPECT_TRUE(has_line(brief.printed, "debug")) << brief.printed;
  EXPECT_FALSE(has_line(brief.printed, "warn")) << brief.printed;
}
