// CLU's MultihostCheckpoint (clu/checkpoint.py) behaviours, re-expressed against
// cairn::MultihostCheckpoint: per-process directories `<base>-<rank>` (a trailing '/' of the
// base dropped), `ckpt-<n>` step names, max_to_keep 5 by default and at least 2, restore of a
// given step, restart from the newest step every process has, and a save after the restore of
// an older step overwriting the steps after it.
#include <cairn/multihost.hpp>
#include <gtest/gtest.h>

#include "orbax_parity/parity_support.hpp"
#include "support/test_support.hpp"

using namespace cairn;
using cairn::parity::Field;
using cairn::parity::Steps;
using cairn::testing::SharedTempDir;

namespace {

Steps steps_in(const std::filesystem::path& dir) {
  Steps steps;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const auto name = e.path().filename().string();
    if (name.starts_with("ckpt-")) steps.push_back(std::stoll(name.substr(5)));
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

}  // namespace

// CLU: checkpoint names are `ckpt-<n>`, max_to_keep defaults to 5.
TEST(CluMultihostCheckpoint, NamesStepsCkptAndKeepsFiveByDefault) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  MultihostCheckpoint ckpt(comm, tmp / "ckpt");
  EXPECT_EQ(ckpt.directory(), (tmp / ("ckpt-" + std::to_string(comm.rank()))));
  for (std::int64_t step = 1; step <= 7; ++step) {
    Field field(comm, static_cast<double>(step));
    auto tree = field.tree();
    ckpt.save(step, tree);
  }
  EXPECT_EQ(steps_in(ckpt.directory()), (Steps{3, 4, 5, 6, 7}));
  EXPECT_EQ(ckpt.latest_common_step(), 7);
}

// CLU: multihost_base_directory.rstrip("/").
TEST(CluMultihostCheckpoint, ABaseWithOrWithoutTrailingSlashNamesTheSameDirectory) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  {
    MultihostCheckpoint with_slash(comm, (tmp / "run").string() + "//");
    Field field(comm, 1.0);
    with_slash.save(1, field.tree());
  }
  MultihostCheckpoint without(comm, tmp / "run");
  EXPECT_EQ(without.latest_common_step(), 1);
  EXPECT_TRUE(
      std::filesystem::is_directory(tmp / ("run-" + std::to_string(comm.rank())) / "ckpt-1"));
}

// CLU: "Requires multiple checkpoints (max_to_keep>=2)".
TEST(CluMultihostCheckpoint, MaxToKeepBelowTwoIsRefused) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  EXPECT_THROW(MultihostCheckpoint(comm, tmp / "bad", {.max_to_keep = 1}), InvalidArgument);
}

// CLU restore(state, checkpoint): a given step, here an older one still kept.
TEST(CluMultihostCheckpoint, RestoresAGivenStep) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  MultihostCheckpoint ckpt(comm, tmp / "ckpt");
  for (std::int64_t step = 1; step <= 3; ++step) {
    Field field(comm, 10.0 * static_cast<double>(step));
    ckpt.save(step, field.tree());
  }
  Field back(comm, -1.0);
  auto state = back.tree();
  ckpt.restore(2, state);
  EXPECT_EQ(back.values[0], 20.0);
  EXPECT_THROW(ckpt.restore(9, state), NotFound);
}

// CLU get_latest_checkpoint_to_restore_from: the newest step common to every process.
TEST(CluMultihostCheckpoint, RestartsFromTheNewestCommonStep) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  {
    MultihostCheckpoint ckpt(comm, tmp / "ckpt");
    for (std::int64_t step = 1; step <= 2; ++step) {
      Field field(comm, static_cast<double>(step));
      ckpt.save(step, field.tree());
    }
  }
  // The last process lost its step 2 (its save did not finish).
  if (comm.rank() == comm.size() - 1) {
    std::filesystem::remove_all(tmp / ("ckpt-" + std::to_string(comm.rank())) / "ckpt-2");
  }
  comm.barrier("step 2 lost");
  MultihostCheckpoint ckpt(comm, tmp / "ckpt");
  Field back(comm, -1.0);
  auto state = back.tree();
  EXPECT_EQ(ckpt.restore_or_initialize(state), 1);
  EXPECT_EQ(back.values[0], 1.0);
}

// CLU test_overwrite: with steps 1..5 saved, a restore of step 1 and the next save overwrite
// step 2 and delete 3, 4 and 5, on every process.
TEST(CluMultihostCheckpoint, test_overwrite) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  {
    MultihostCheckpoint ckpt(comm, tmp / "ckpt");
    for (std::int64_t step = 1; step <= 5; ++step) {
      Field field(comm, static_cast<double>(step));
      ckpt.save(step, field.tree());
    }
    EXPECT_EQ(ckpt.latest_common_step(), 5);
  }
  MultihostCheckpoint ckpt(comm, tmp / "ckpt");
  Field back(comm, -1.0);
  auto state = back.tree();
  ckpt.restore(1, state);
  EXPECT_EQ(back.values[0], 1.0);
  Field next(comm, 20.0);
  ckpt.save(2, next.tree());
  EXPECT_EQ(steps_in(ckpt.directory()), (Steps{1, 2}));
  EXPECT_EQ(ckpt.latest_common_step(), 2);
  Field restored(comm, -1.0);
  auto again = restored.tree();
  EXPECT_EQ(ckpt.restore_or_initialize(again), 2);
  EXPECT_EQ(restored.values[0], 20.0);  // the new step 2, not the one it replaced
}

// CLU deletes the checkpoints newer than the one the run goes on from, whatever number the
// next save takes: after restore(2), a save of step 4 also drops step 3.
TEST(CluMultihostCheckpoint, ASaveAfterARestoreDropsEveryNewerStep) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  MultihostCheckpoint ckpt(comm, tmp / "ckpt");
  for (std::int64_t step = 1; step <= 4; ++step) {
    Field field(comm, static_cast<double>(step));
    ckpt.save(step, field.tree());
  }
  Field back(comm, -1.0);
  auto state = back.tree();
  ckpt.restore(2, state);
  Field next(comm, 40.0);
  ckpt.save(4, next.tree());
  EXPECT_EQ(steps_in(ckpt.directory()), (Steps{1, 2, 4}));
  // Saves that go forward delete nothing.
  Field later(comm, 50.0);
  ckpt.save(5, later.tree());
  EXPECT_EQ(steps_in(ckpt.directory()), (Steps{1, 2, 4, 5}));
}
