// Misuse of CheckpointManager's collective calls: ranks that save different steps or different
// trees, a rank that skips a save, a rank that restores while the others save. Every rank
// must get an error (a mismatch, or a timeout after the short barrier deadline these tests
// set) instead of hanging, nothing may be committed, and the earlier steps stay restorable.
// A rank that skipped a call learns of it at its next collective call.
// (Checkpointer-level cases, a different path or a wrong box on one rank, are in
// tests/checkpoint/test_checkpointer.cpp; Comm-level timeouts in tests/comm/test_comm.cpp.)
#include <cairn/manager.hpp>
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "fault/job_state.hpp"
#include "support/test_support.hpp"

using namespace cairn;
using cairn::fault_test::State;
using cairn::testing::SharedTempDir;

namespace {

// The barrier deadline of the misused managers: short, so that a misuse costs little time,
// long enough for the calls that come before it on an oversubscribed machine.
constexpr auto kDeadline = std::chrono::milliseconds(2000);

struct Mode {
  const char* name;
  bool async;
  StorageFormat format;
};

// Sync and async, posix and (when built) hdf5. A skipped or foreign call is caught by the
// agreement that starts every save, before any data is written, so the cases that end in a
// timeout run with one format only.
std::vector<Mode> modes(bool every_format = true) {
  std::vector<Mode> out = {{"sync posix", false, StorageFormat::posix},
                           {"async posix", true, StorageFormat::posix}};
  if (every_format && storage_format_available(StorageFormat::hdf5)) {
    out.push_back({"sync hdf5", false, StorageFormat::hdf5});
    out.push_back({"async hdf5", true, StorageFormat::hdf5});
  }
  return out;
}

bool is_last_rank() { return cairn::testing::world_rank() == cairn::testing::world_size() - 1; }

// Saves steps 0 and 1 under `root` (with the default deadline), then returns a manager of
// the root with the short deadline.
std::unique_ptr<CheckpointManager> with_two_steps(const Comm& comm,
                                                  const std::filesystem::path& root,
                                                  const Mode& mode, State& state) {
  {
    CheckpointManager setup(comm, root, {.enable_async = mode.async});
    for (std::int64_t step = 0; step < 2; ++step) {
      state.compute(step);
      (void)setup.save(step, ArrayTreeSave(state.tree(), {.format = mode.format}));
    }
  }
  return std::make_unique<CheckpointManager>(
      comm, root,
      CheckpointManagerOptions{.barrier_timeout = kDeadline, .enable_async = mode.async});
}

// Runs this rank's calls; returns the message of the cairn::Error the first of them threw.
std::optional<std::string> error_of(const std::vector<std::function<void()>>& calls) {
  try {
    for (const auto& call : calls) call();
  } catch (const Error& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

// Expects that every rank got an error, then that the root holds exactly steps 0 and 1,
// nothing else, and that step 1 restores. Collective over MPI_COMM_WORLD.
void expect_failed_everywhere_and_intact(const std::optional<std::string>& error,
                                         const std::filesystem::path& root, State& state) {
  int threw = error ? 1 : 0;
  int everywhere = 0;
  MPI_Allreduce(&threw, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  EXPECT_TRUE(error.has_value()) << "this rank got no error";
  EXPECT_EQ(everywhere, 1) << "some rank got no error";
  if (error && cairn::testing::world_rank() == 0) std::printf("  rank 0: %.300s\n", error->c_str());

  MPI_Barrier(MPI_COMM_WORLD);
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"0", "1", "cairn-root.json"}));

  Comm comm(MPI_COMM_WORLD);
  CheckpointManager reader(comm, root, {.read_only = true});
  EXPECT_EQ(reader.all_steps(), (std::vector<std::int64_t>{0, 1}));
  state.scramble();
  const ArrayTreeRestore args(state.tree());
  (void)reader.restore(1, &args);
  EXPECT_TRUE(state.equals(1));
}

}  // namespace

namespace {

// For each mode: saves steps 0 and 1, then has every rank call `save` (a save after step 2
// that some rank misuses) and wait for it; checks that it failed on every rank, naming
// `expected`, with the steps saved before intact.
void expect_misused_save_fails_together(
    const std::vector<Mode>& cases, std::string_view expected,
    const std::function<void(CheckpointManager&, const Mode&, State&)>& save) {
  SharedTempDir tmp;
  for (const Mode& mode : cases) {
    SCOPED_TRACE(mode.name);
    const auto root = tmp / mode.name;
    State state{.rank = cairn::testing::world_rank(), .size = cairn::testing::world_size()};
    std::optional<std::string> error;
    {
      Comm comm(MPI_COMM_WORLD);
      auto manager = with_two_steps(comm, root, mode, state);
      state.compute(2);
      error =
          error_of({[&] { save(*manager, mode, state); }, [&] { manager->wait_until_finished(); }});
    }
    if (error) {
      EXPECT_NE(error->find(expected), std::string::npos) << *error;
    }
    expect_failed_everywhere_and_intact(error, root, state);
  }
}

}  // namespace

TEST(Misuse, RanksSavingDifferentStepsFailTogether) {
  expect_misused_save_fails_together(
      modes(), "step", [](CheckpointManager& manager, const Mode& mode, State& state) {
        const std::int64_t step = is_last_rank() ? 3 : 2;
        (void)manager.save(step, ArrayTreeSave(state.tree(), {.format = mode.format}));
      });
}

TEST(Misuse, RanksSavingDifferentTreesFailTogether) {
  expect_misused_save_fails_together(
      modes(), "structure", [](CheckpointManager& manager, const Mode& mode, State& state) {
        ArrayTree tree = state.tree();
        // The last rank has one more leaf.
        double extra = 1.0;
        if (is_last_rank()) tree.add_array("extra", ArrayShard::host(&extra, {1}, Box{{0}, {1}}));
        (void)manager.save(2, ArrayTreeSave(tree, {.format = mode.format}));
      });
}

TEST(Misuse, RanksStoringALeafInDifferentFormatsFailTogether) {
  if (!storage_format_available(StorageFormat::hdf5)) {
    GTEST_SKIP() << "needs two formats; this build has no HDF5";
  }
  expect_misused_save_fails_together(
      modes(), "leaf formats", [](CheckpointManager& manager, const Mode& mode, State& state) {
        // The last rank stores every leaf in the other format.
        const StorageFormat other =
            mode.format == StorageFormat::posix ? StorageFormat::hdf5 : StorageFormat::posix;
        const StorageFormat mine = is_last_rank() ? other : mode.format;
        (void)manager.save(2, ArrayTreeSave(state.tree(), {.format = mine}));
      });
}

TEST(Misuse, ARankSkippingASaveFailsEveryRank) {
  // The skipping rank moves on to its next collective call (re-listing the steps): it gets
  // the error there, the others in save().
  SharedTempDir tmp;
  for (const Mode& mode : modes(false)) {
    SCOPED_TRACE(mode.name);
    for (const bool primary_skips : {false, true}) {
      SCOPED_TRACE(primary_skips ? "the primary skips" : "the last rank skips");
      const auto root = tmp / (std::string(mode.name) + (primary_skips ? " primary" : " last"));
      State state{.rank = cairn::testing::world_rank(), .size = cairn::testing::world_size()};
      std::optional<std::string> error;
      {
        Comm comm(MPI_COMM_WORLD);
        auto manager = with_two_steps(comm, root, mode, state);
        state.compute(2);
        const bool skips = primary_skips ? comm.is_primary() : is_last_rank();
        std::vector<std::function<void()>> calls;
        if (!skips) {
          calls.emplace_back([&] {
            (void)manager->save(2, ArrayTreeSave(state.tree(), {.format = mode.format}));
          });
        }
        calls.emplace_back([&] { manager->wait_until_finished(); });
        calls.emplace_back([&] { (void)manager->all_steps(true); });
        error = error_of(calls);
      }
      expect_failed_everywhere_and_intact(error, root, state);
    }
  }
}

TEST(Misuse, ARankRestoringWhileOthersSaveFailsEveryRank) {
  SharedTempDir tmp;
  for (const Mode& mode : modes(false)) {
    SCOPED_TRACE(mode.name);
    const auto root = tmp / mode.name;
    State state{.rank = cairn::testing::world_rank(), .size = cairn::testing::world_size()};
    std::optional<std::string> error;
    {
      Comm comm(MPI_COMM_WORLD);
      auto manager = with_two_steps(comm, root, mode, state);
      state.compute(2);
      if (is_last_rank()) {
        const ArrayTreeRestore args(state.tree());
        error = error_of({[&] { (void)manager->restore(1, &args); }});
      } else {
        error = error_of(
            {[&] { (void)manager->save(2, ArrayTreeSave(state.tree(), {.format = mode.format})); },
             [&] { manager->wait_until_finished(); }});
      }
    }
    expect_failed_everywhere_and_intact(error, root, state);
  }
}
