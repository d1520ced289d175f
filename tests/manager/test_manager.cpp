// CheckpointManager and MultihostCheckpoint: which steps exist after a series of saves,
// metrics, async commits, the root lock and metadata, and the multihost restart.
#include <cairn/manager.hpp>
#include <cairn/multihost.hpp>
#include <gtest/gtest.h>

#include <unistd.h>

#include <boost/json.hpp>
#include <csignal>
#include <fstream>
#include <thread>

#include "support/test_support.hpp"

using namespace cairn;
using cairn::testing::SharedTempDir;

namespace {

constexpr std::int64_t kRows = 6;

// A small state: rank r owns row r of a (ranks x kRows) field.
struct State {
  State() : values(kRows) {}
  std::vector<double> values;
  ArrayTree tree(const Comm& comm) {
    ArrayTree t;
    t.add_array("u", ArrayShard::host(values.data(), {comm.size(), kRows},
                                      Box{{comm.rank(), 0}, {1, kRows}}));
    return t;
  }
  void fill(double base) {
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = base + static_cast<double>(i);
  }
};

std::vector<std::int64_t> run(const Comm& comm, const std::filesystem::path& root,
                              CheckpointManagerOptions options, std::int64_t steps,
                              std::function<boost::json::object(std::int64_t)> metrics = {}) {
  State state;
  CheckpointManager manager(comm, root, std::move(options));
  for (std::int64_t step = 0; step < steps; ++step) {
    state.fill(static_cast<double>(step));
    ManagerSaveOptions save;
    if (metrics) save.metrics = metrics(step);
    (void)manager.save(step, ArrayTreeSave(state.tree(comm)), save);
  }
  manager.wait_until_finished();
  return manager.all_steps();
}

using Steps = std::vector<std::int64_t>;

// Saves steps 1..last of `state` (values 10 * step + i) with a MultihostCheckpoint at `base`.
void save_multihost_series(const Comm& comm, const std::filesystem::path& base, State& state,
                           std::int64_t last) {
  MultihostCheckpoint ckpt(comm, base);
  for (std::int64_t step = 1; step <= last; ++step) {
    state.fill(static_cast<double>(step * 10));
    ckpt.save(step, state.tree(comm));
  }
}

// The directory of rank `rank` of a MultihostCheckpoint at `base`.
std::filesystem::path process_directory(const std::filesystem::path& base, int rank) {
  return base.string() + "-" + std::to_string(rank);
}

}  // namespace

TEST(Manager, MaxToKeepKeepsTheLatest) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  EXPECT_EQ(run(comm, tmp / "sync", {.max_to_keep = 2, .enable_async = false}, 6), (Steps{4, 5}));
  EXPECT_EQ(run(comm, tmp / "async", {.max_to_keep = 3}, 6), (Steps{3, 4, 5}));
  // What is on disk agrees with what the manager reports.
  CheckpointManager reopened(comm, tmp / "async", {.read_only = true});
  EXPECT_EQ(reopened.all_steps(), (Steps{3, 4, 5}));
}

TEST(Manager, IntervalsSpecificStepsAndKeepPeriod) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  EXPECT_EQ(run(comm, tmp / "interval", {.save_interval_steps = 3}, 10), (Steps{0, 3, 6, 9}));
  EXPECT_EQ(run(comm, tmp / "on_steps", {.save_interval_steps = 100, .save_on_steps = {4, 7}}, 10),
            (Steps{0, 4, 7}));
  EXPECT_EQ(run(comm, tmp / "period", {.max_to_keep = 1, .keep_period = 4}, 10),
            (Steps{0, 4, 8, 9}));
  EXPECT_EQ(
      run(comm, tmp / "fn",
          {.save_interval_steps = 1000, .should_save_fn = [](std::int64_t s) { return s == 5; }},
          8),
      (Steps{5}));  // as in Orbax, should_save_fn replaces the interval
}

TEST(Manager, ADeferredTreeIsBuiltOnlyForTheStepsSaved) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  for (const bool async : {false, true}) {
    State state;
    CheckpointManager manager(comm, tmp / (async ? "async" : "sync"),
                              {.save_interval_steps = 3, .enable_async = async});
    Steps built;
    for (std::int64_t step = 0; step < 8; ++step) {
      state.fill(static_cast<double>(step));
      const bool saved = manager.save(step, ArrayTreeSave::deferred([&] {
                                        built.push_back(step);
                                        return state.tree(comm);
                                      }));
      EXPECT_EQ(saved, step % 3 == 0) << "step " << step;
    }
    manager.wait_until_finished();
    EXPECT_EQ(built, (Steps{0, 3, 6}));
    EXPECT_EQ(manager.all_steps(), (Steps{0, 3, 6}));
  }
}

TEST(Manager, BestNByMetricMinAndMax) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  // loss: 5, 3, 8, 1, 9, 4 for steps 0..5
  const std::vector<double> loss = {5, 3, 8, 1, 9, 4};
  auto metrics = [&](std::int64_t step) {
    return boost::json::object{{"loss", loss[static_cast<std::size_t>(step)]}};
  };
  auto by_loss = [](const boost::json::object& m) { return m.at("loss").to_number<double>(); };
  // Best two by min loss are steps 3 and 1; the newest (5) is always kept.
  EXPECT_EQ(run(comm, tmp / "min",
                {.max_to_keep = 2, .best_fn = by_loss, .best_mode = BestMode::min}, 6, metrics),
            (Steps{1, 3, 5}));
  EXPECT_EQ(run(comm, tmp / "max",
                {.max_to_keep = 2, .best_fn = by_loss, .best_mode = BestMode::max}, 6, metrics),
            (Steps{2, 4, 5}));
  CheckpointManager manager(comm, tmp / "min",
                            {.best_fn = by_loss, .best_mode = BestMode::min, .read_only = true});
  EXPECT_EQ(manager.best_step(), 3);
  EXPECT_EQ(manager.metrics(3).at("loss").to_number<double>(), 1.0);
}

TEST(Manager, AsyncStepsAreReportedOnlyOnceCommitted) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  State state;
  state.fill(1.0);
  CheckpointManager manager(comm, tmp.path());
  EXPECT_TRUE(manager.save(0, ArrayTreeSave(state.tree(comm))));
  state.fill(-1.0);  // the saved values must not change
  EXPECT_FALSE(manager.latest_step().has_value() && manager.is_saving_in_progress());
  manager.wait_until_finished();
  EXPECT_EQ(manager.latest_step(), 0);
  std::vector<double> back(kRows);
  ArrayTree target;
  target.add_array(
      "u", ArrayShard::host(back.data(), {comm.size(), kRows}, Box{{comm.rank(), 0}, {1, kRows}}));
  const ArrayTreeRestore args(target);
  (void)manager.restore(std::nullopt, &args);
  for (std::size_t i = 0; i < back.size(); ++i) EXPECT_EQ(back[i], 1.0 + static_cast<double>(i));
}

TEST(Manager, StepAlreadyExistsAndReadOnly) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  State state;
  {
    CheckpointManager manager(comm, tmp.path(), {.enable_async = false});
    ASSERT_TRUE(manager.save(3, ArrayTreeSave(state.tree(comm))));
    // As Orbax: not saved again without force; a forced save does not replace it.
    EXPECT_FALSE(manager.save(3, ArrayTreeSave(state.tree(comm))));
    EXPECT_THROW(manager.save(3, ArrayTreeSave(state.tree(comm)), {.force = true}),
                 StepAlreadyExists);
    EXPECT_FALSE(manager.save(2, ArrayTreeSave(state.tree(comm))));  // older than the latest
  }
  CheckpointManager reader(comm, tmp.path(), {.read_only = true});
  EXPECT_FALSE(reader.save(10, ArrayTreeSave(state.tree(comm))));
  EXPECT_EQ(reader.all_steps(), (Steps{3}));
  comm.barrier("checked");
  EXPECT_FALSE(std::filesystem::exists(reader.step_path(10)));
}

TEST(Manager, RootMetadataIsWrittenOnceAndStepMetadataHoldsMetrics) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  State state;
  {
    CheckpointManager manager(comm, tmp.path(),
                              {.step_prefix = "step",
                               .step_format_fixed_length = 6,
                               .metadata = {{"model", "heat"}, {"grid", 512}}});
    ASSERT_TRUE(manager.save(7, ArrayTreeSave(state.tree(comm)), {.metrics = {{"loss", 0.5}}}));
    manager.wait_until_finished();
    EXPECT_EQ(manager.step_path(7).filename(), "step_000007");
    EXPECT_EQ(manager.metadata().at("step_prefix").as_string(), "step");
    EXPECT_EQ(manager.metadata().at("user").at("model").as_string(), "heat");
    const auto step = manager.metadata(7);
    EXPECT_EQ(step.at("custom").at("metrics").at("loss").as_double(), 0.5);
    EXPECT_EQ(manager.item_metadata(7).at("world_size").as_int64(), comm.size());
  }
  // A second manager with other options keeps the first root metadata.
  CheckpointManager again(comm, tmp.path(),
                          {.step_prefix = "other", .metadata = {{"model", "other"}}});
  EXPECT_EQ(again.metadata().at("step_prefix").as_string(), "step");
  EXPECT_EQ(again.metadata().at("user").at("model").as_string(), "heat");
  EXPECT_EQ(again.metadata().at("user").at("grid").as_int64(), 512);
}

TEST(Manager, ANonZeroPrimaryHostDoesTheSingleWriterWork) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const int primary = comm.size() - 1;
  EXPECT_EQ(
      run(comm, tmp.path(), {.max_to_keep = 2, .primary_host = primary, .enable_async = false}, 4),
      (Steps{2, 3}));
  // The lock names the primary's process: it was the one that created it.
  CheckpointManager manager(comm, tmp.path(), {.primary_host = primary});
  const auto holder = root_lock_holder(tmp.path());
  ASSERT_TRUE(holder.has_value());
  const auto pids = comm.allgather(static_cast<std::int64_t>(::getpid()));
  const std::string pid = "pid " + std::to_string(pids[static_cast<std::size_t>(primary)]);
  const auto at = holder->find(pid);
  ASSERT_NE(at, std::string::npos) << *holder;
  const auto after = at + pid.size();
  EXPECT_TRUE(after == holder->size() || (*holder)[after] == ',') << *holder;
}

TEST(Manager, ReloadSeesStepsAnotherManagerCommitted) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  State state;
  CheckpointManager reader(comm, tmp.path(), {.read_only = true});
  EXPECT_EQ(reader.all_steps(), Steps{});
  EXPECT_EQ(run(comm, tmp.path(), {.enable_async = false}, 3), (Steps{0, 1, 2}));
  EXPECT_EQ(reader.all_steps(), Steps{});  // the cached listing
  reader.reload();
  EXPECT_EQ(reader.all_steps(), (Steps{0, 1, 2}));
  EXPECT_EQ(reader.latest_step(), std::optional<std::int64_t>(2));
}

TEST(Manager, DeleteToSubdirAndBackgroundDelete) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  EXPECT_EQ(run(comm, tmp / "sub", {.max_to_keep = 1, .todelete_subdir = "trash"}, 3), (Steps{2}));
  comm.barrier("saved");
  EXPECT_TRUE(std::filesystem::exists(tmp / "sub" / "trash" / "0"));
  EXPECT_TRUE(std::filesystem::exists(tmp / "sub" / "trash" / "1"));
  EXPECT_EQ(run(comm, tmp / "bg", {.max_to_keep = 1, .enable_background_delete = true}, 3),
            (Steps{2}));
  comm.barrier("deleted");
  EXPECT_FALSE(std::filesystem::exists(tmp / "bg" / "0"));
  EXPECT_FALSE(std::filesystem::exists(tmp / "bg" / "0.cairn-deleting"));
}

TEST(Manager, CleanupOfTemporaryDirectoriesAndSingleHostLoad) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  run(comm, tmp.path(), {.enable_async = false}, 2);
  if (comm.is_primary()) std::filesystem::create_directories(tmp / "5.cairn-tmp" / "x");
  comm.barrier("leftover made");
  CheckpointManager manager(
      comm, tmp.path(), {.cleanup_tmp_directories = true, .single_host_load_and_broadcast = true});
  EXPECT_EQ(manager.all_steps(), (Steps{0, 1}));
  comm.barrier("cleaned");
  EXPECT_FALSE(std::filesystem::exists(tmp / "5.cairn-tmp"));
}

TEST(Manager, ALockOfAnotherJobIsAClearError) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  if (comm.is_primary()) {
    std::ofstream(tmp / "cairn.lock") << R"({"host":"elsewhere","pid":1,"slurm_job_id":"999"})";
  }
  comm.barrier("lock made");
  try {
    CheckpointManager manager(comm, tmp.path());
    ADD_FAILURE() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("locked"), std::string::npos) << e.what();
  }
  // A read-only manager needs no lock.
  EXPECT_NO_THROW(CheckpointManager(comm, tmp.path(), {.read_only = true}));
}

// The host of a primary died: its lock is no longer renewed and, once its lease is over, a job
// on any host takes it over; a lock renewed within its lease is never taken over.
TEST(Manager, ALockOfAnotherHostIsTakenOverOnlyWhenItsLeaseExpired) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const auto lock_file = tmp / "cairn.lock";
  const auto write_lock =
      [&](std::chrono::seconds age) {
        if (comm.is_primary()) {
          std::ofstream(lock_file)
              << R"({"host":"elsewhere","pid":1,"slurm_job_id":"999","lease_seconds":5})";
          std::filesystem::last_write_time(lock_file,
                                           std::filesystem::file_time_type::clock::now() - age);
        }
        comm.barrier("lock made");
      };
  // The lock is read by the primary, which holds it; the others wait at each barrier.
  write_lock(std::chrono::seconds(0));
  EXPECT_THROW(CheckpointManager(comm, tmp.path()), InvalidArgument);
  if (comm.is_primary()) {
    EXPECT_FALSE(read_root_lock(tmp.path())->alive.has_value());
  }
  comm.barrier("lock judged");
  write_lock(std::chrono::hours(1));
  if (comm.is_primary()) {
    EXPECT_EQ(read_root_lock(tmp.path())->alive, std::optional<bool>(false));
  }
  {
    CheckpointManager manager(comm, tmp.path(), {.lock_lease = std::chrono::seconds(1)});
    if (comm.is_primary()) {
      const auto held = read_root_lock(tmp.path());
      ASSERT_TRUE(held.has_value());
      EXPECT_EQ(held->pid, ::getpid());
      EXPECT_EQ(held->lease, std::chrono::seconds(1));
      // The primary renews it while the manager is open.
      const auto taken = std::filesystem::last_write_time(lock_file);
      bool renewed = false;
      for (int i = 0; i < 600 && !renewed; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        renewed = std::filesystem::last_write_time(lock_file) > taken;
      }
      EXPECT_TRUE(renewed);
    }
    comm.barrier("renewal seen");
  }
  EXPECT_THROW(CheckpointManager(comm, tmp / "other", {.lock_lease = std::chrono::seconds(0)}),
               InvalidArgument);
}

TEST(Multihost, RestoresTheNewestCommonStepAndDropsFutureSteps) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  State state;
  const auto base = tmp / "node";
  {
    MultihostCheckpoint ckpt(comm, base);
    ArrayTree initial = state.tree(comm);
    EXPECT_EQ(ckpt.restore_or_initialize(initial), 0);  // nothing saved yet: step 0 is saved
  }
  save_multihost_series(comm, base, state, 3);
  // The last rank "died" during the save of step 3: its step 3 is gone.
  if (comm.rank() == comm.size() - 1) {
    std::filesystem::remove_all(process_directory(base, comm.rank()) / "ckpt-3");
  }
  comm.barrier("simulated crash");
  MultihostCheckpoint ckpt(comm, base);
  state.fill(-1.0);
  ArrayTree target = state.tree(comm);
  const std::int64_t expected = 2;
  EXPECT_EQ(ckpt.restore_or_initialize(target), expected);
  for (std::size_t i = 0; i < state.values.size(); ++i) {
    EXPECT_EQ(state.values[i], static_cast<double>(expected * 10) + static_cast<double>(i));
  }
  // The ranks that had finished step 3 dropped it.
  EXPECT_FALSE(std::filesystem::exists(ckpt.directory() / "ckpt-3"));
  EXPECT_THROW(MultihostCheckpoint(comm, tmp / "bad", {.max_to_keep = 1}), InvalidArgument);
}

TEST(Multihost, WithoutACommonStepEveryProcessDropsItsStepsAndInitializes) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  State state;
  const auto base = tmp / "node";
  save_multihost_series(comm, base, state, 2);
  // The last rank lost its steps (a replaced node-local disk): no step is common.
  if (comm.rank() == comm.size() - 1) {
    std::filesystem::remove_all(process_directory(base, comm.rank()) / "ckpt-1");
    std::filesystem::remove_all(process_directory(base, comm.rank()) / "ckpt-2");
  }
  comm.barrier("lost steps");
  MultihostCheckpoint ckpt(comm, base);
  state.fill(7.0);
  ArrayTree initial = state.tree(comm);
  EXPECT_EQ(ckpt.restore_or_initialize(initial, 0), 0);
  EXPECT_EQ(ckpt.latest_common_step(), std::optional<std::int64_t>(0));
  // No stale step is left to outrank the ones saved from now on.
  EXPECT_FALSE(std::filesystem::exists(ckpt.directory() / "ckpt-1"));
  EXPECT_FALSE(std::filesystem::exists(ckpt.directory() / "ckpt-2"));
  EXPECT_TRUE(std::filesystem::exists(ckpt.directory() / "ckpt-0" / "COMMITTED"));
}

TEST(Manager, APreemptionSignalOnOneRankSavesTheSameStepEverywhere) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  State state;
  CheckpointManager manager(
      comm, tmp.path(),
      {.save_interval_steps = 100,
       .enable_async = false,
       .preemption = PreemptionOptions{.signals = {SIGUSR1}, .use_slurm_end_time = false}});
  std::int64_t stopped = -1;
  for (std::int64_t step = 0; step < 10; ++step) {
    // Slurm's --signal reaches one rank first.
    if (step == 4 && comm.rank() == comm.size() - 1) std::raise(SIGUSR1);
    state.fill(static_cast<double>(step));
    (void)manager.save(step, ArrayTreeSave(state.tree(comm)));
    if (manager.reached_preemption(step)) {
      stopped = step;
      break;
    }
  }
  EXPECT_EQ(stopped, 4);
  EXPECT_EQ(manager.all_steps(), (Steps{0, 4}));  // the initial save and the preemption save
}

TEST(Manager, PolicyObjectsReplaceThePlainOptions) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  namespace sp = save_policy;
  namespace pp = preservation_policy;
  // Saves at multiples of 4 and at 5; keeps the latest two and step 0.
  const CheckpointManagerOptions composed{
      .save_interval_steps = 1,  // ignored: the policy object replaces it
      .save_decision_policy = std::make_shared<sp::AnyOf>(std::vector<SaveDecisionPolicyPtr>{
          std::make_shared<sp::FixedInterval>(4),
          std::make_shared<sp::SpecificSteps>(std::set<std::int64_t>{5})}),
      .preservation_policy = std::make_shared<pp::AnyOf>(std::vector<PreservationPolicyPtr>{
          std::make_shared<pp::LatestN>(2),
          std::make_shared<pp::CustomSteps>(std::set<std::int64_t>{0})}),
      .enable_async = false};
  EXPECT_EQ(run(comm, tmp / "composed", composed, 10), (Steps{0, 5, 8}));
  // Continuous checkpointing saves every step it is offered while no save is in flight (sync:
  // every step); with a one-hour minimum only the first.
  EXPECT_EQ(run(comm, tmp / "continuous",
                {.save_decision_policy = std::make_shared<sp::ContinuousCheckpointing>(),
                 .preservation_policy = std::make_shared<pp::LatestN>(3),
                 .enable_async = false},
                10),
            (Steps{7, 8, 9}));
  EXPECT_EQ(run(comm, tmp / "hourly",
                {.save_decision_policy =
                     std::make_shared<sp::ContinuousCheckpointing>(std::chrono::hours(1))},
                10),
            (Steps{0}));
}

TEST(Manager, APolicyObjectStillSavesOnPreemption) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  State state;
  CheckpointManager manager(
      comm, tmp.path(),
      {.save_decision_policy = std::make_shared<save_policy::FixedInterval>(100),
       .enable_async = false,
       .preemption = PreemptionOptions{.signals = {SIGUSR2}, .use_slurm_end_time = false}});
  for (std::int64_t step = 1; step <= 3; ++step) {
    if (step == 3 && comm.is_primary()) std::raise(SIGUSR2);
    state.fill(static_cast<double>(step));
    EXPECT_EQ(manager.save(step, ArrayTreeSave(state.tree(comm))), step == 3) << "step " << step;
  }
  EXPECT_EQ(manager.all_steps(), (Steps{3}));
}

TEST(Manager, ContinuousAsyncSavesAreDecidedAlikeOnEveryRank) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  State state;
  // Saves whenever no save is in flight, as Orbax's ContinuousCheckpointingPolicy does. Which
  // ranks still write the previous step when the next is offered varies; the decision must
  // not.
  CheckpointManager manager(
      comm, tmp.path(),
      {.save_decision_policy = std::make_shared<save_policy::ContinuousCheckpointing>()});
  std::int64_t saved = 0;
  for (std::int64_t step = 1; step <= 20; ++step) {
    state.fill(static_cast<double>(step));
    const bool busy = manager.is_saving_in_progress();
    const bool did = manager.save(step, ArrayTreeSave(state.tree(comm)));
    // The primary's view decides: with no save in flight it saves.
    if (comm.is_primary() && !busy) {
      EXPECT_TRUE(did) << "step " << step;
    }
    // Every rank got the same answer.
    EXPECT_EQ(comm.min(did ? 1 : 0), comm.max(did ? 1 : 0)) << "step " << step;
    saved += did ? 1 : 0;
  }
  manager.wait_until_finished();
  EXPECT_GE(saved, 1);
  EXPECT_EQ(static_cast<std::int64_t>(manager.all_steps().size()), saved);
}

TEST(Manager, KeepTimeIntervalKeepsOneCheckpointPerWindow) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  // The manager's clock: steps are saved half an hour apart.
  auto now = std::make_shared<std::chrono::system_clock::time_point>(std::chrono::hours(480000));
  const auto clock = [now] { return *now; };
  {
    State state;
    CheckpointManager manager(comm, tmp.path(), {.enable_async = false, .clock = clock});
    for (std::int64_t step = 0; step < 6; ++step) {
      ASSERT_TRUE(manager.save(step, ArrayTreeSave(state.tree(comm))));
      *now += std::chrono::minutes(30);
    }
    EXPECT_EQ(manager.all_steps(), (Steps{0, 1, 2, 3, 4, 5}));
  }
  // A restarted manager reads the step times back. Hour windows from the first checkpoint:
  // {0, 1}, {2, 3}, {4, 5}, then step 6 (now) alone.
  State state;
  CheckpointManager manager(comm, tmp.path(),
                            {.max_to_keep = 1,
                             .keep_time_interval = std::chrono::hours(1),
                             .enable_async = false,
                             .clock = clock});
  ASSERT_TRUE(manager.save(6, ArrayTreeSave(state.tree(comm))));
  EXPECT_EQ(manager.all_steps(), (Steps{0, 2, 4, 6}));
  EXPECT_EQ(manager.all_steps(/*read=*/true), (Steps{0, 2, 4, 6}));
}

TEST(Manager, OnlyTheActiveProcessesCheckpoint) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  // Even ranks are active; they split a (active ranks x kRows) field among themselves.
  std::vector<int> active;
  for (int r = 0; r < comm.size(); r += 2) active.push_back(r);
  const bool is_active = comm.rank() % 2 == 0;
  const auto n_active = static_cast<std::int64_t>(active.size());
  const std::int64_t row = comm.rank() / 2;
  std::vector<double> values(kRows);
  auto tree = [&](std::vector<double>& data) {
    ArrayTree t;
    if (is_active) {
      t.add_array("u", ArrayShard::host(data.data(), {n_active, kRows}, Box{{row, 0}, {1, kRows}}));
    }
    return t;
  };
  {
    CheckpointManager manager(comm, tmp.path(),
                              {.active_processes = active, .enable_async = false});
    EXPECT_EQ(manager.is_active(), is_active);
    for (std::int64_t step = 0; step < 2; ++step) {
      for (std::int64_t i = 0; i < kRows; ++i) {
        values[static_cast<std::size_t>(i)] = static_cast<double>(step * 100 + row * kRows + i);
      }
      // Inactive ranks may call save: it returns at once.
      EXPECT_EQ(manager.save(step, ArrayTreeSave(tree(values))), is_active);
    }
    if (is_active) {
      EXPECT_EQ(manager.all_steps(), (Steps{0, 1}));
      EXPECT_EQ(manager.item_metadata(1).at("world_size").as_int64(), n_active);
      std::vector<double> back(kRows, -1.0);
      const ArrayTreeRestore args(tree(back));
      (void)manager.restore(1, &args);
      EXPECT_EQ(back, values);
    } else {
      EXPECT_TRUE(manager.all_steps(/*read=*/true).empty());
      EXPECT_FALSE(manager.latest_step().has_value());
      EXPECT_THROW((void)manager.restore(), InvalidArgument);
    }
  }
  comm.barrier("checked");
  EXPECT_THROW(CheckpointManager(comm, tmp / "bad", {.primary_host = 1, .active_processes = {0}}),
               InvalidArgument);
}
