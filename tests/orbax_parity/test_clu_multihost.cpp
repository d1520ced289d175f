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

// ---- CLU's Checkpoint API as CLU users write it (clu/checkpoint_test.py) ----

namespace {

double value_of(const ArrayTree& tree) {
  const ArrayShard& shard = tree.at("x").as_array();
  return static_cast<const double*>(shard.data)[0];
}

}  // namespace

// CLU test_restores_flax_state: save(state) numbers the checkpoints itself (ckpt-1 first, as
// restore_or_initialize saves it, then the next), restore(state) reads the newest, and
// restore(state, path) a given one.
TEST(CluCheckpoint, test_save_restore) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  MultihostCheckpoint ckpt(comm, tmp / "ckpt", {.max_to_keep = 2});
  EXPECT_EQ(ckpt.current_checkpoint(), std::nullopt);
  EXPECT_EQ(ckpt.latest_checkpoint(), std::nullopt);
  Field one(comm, 1.0);
  auto state = one.tree();
  EXPECT_EQ(ckpt.restore_or_initialize(state, 1), 1);  // initializes ckpt-1
  EXPECT_EQ(ckpt.current_checkpoint(), 1);
  EXPECT_EQ(ckpt.latest_checkpoint(), 1);
  Field zero(comm, 0.0);
  auto back = zero.tree();
  EXPECT_EQ(ckpt.restore_or_initialize(back), 1);
  EXPECT_EQ(zero.values[0], 1.0);
  Field two(comm, 2.0);
  EXPECT_EQ(ckpt.save(two.tree()), 2);
  EXPECT_TRUE(std::filesystem::is_directory(ckpt.step_path(2)));
  EXPECT_EQ(ckpt.step_path(2).filename(), "ckpt-2");
  zero.values[0] = 0.0;
  EXPECT_EQ(ckpt.restore(back), 2);
  EXPECT_EQ(zero.values[0], 2.0);
  Field three(comm, 3.0);
  EXPECT_EQ(ckpt.save(three.tree()), 3);
  zero.values[0] = 0.0;
  ckpt.restore(2, back);
  EXPECT_EQ(zero.values[0], 2.0);
  EXPECT_EQ(ckpt.restored_from(), 2);
}

// CLU test_overwrite, through save(state) without step numbers: with 1..5 saved, a new object
// restores 1 (current 1, latest 5), and its next save writes 2 and deletes 3, 4, 5.
TEST(CluCheckpoint, test_overwrite) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  {
    MultihostCheckpoint ckpt(comm, tmp / "ckpt");
    Field field(comm, 1.0);
    auto state = field.tree();
    EXPECT_EQ(ckpt.restore_or_initialize(state, 1), 1);
    for (int i = 0; i < 4; ++i) {
      field.values[0] += 1.0;
      (void)ckpt.save(field.tree());
    }
    EXPECT_EQ(ckpt.current_checkpoint(), 5);
    EXPECT_EQ(ckpt.latest_checkpoint(), 5);
  }
  MultihostCheckpoint ckpt(comm, tmp / "ckpt");
  EXPECT_EQ(ckpt.current_checkpoint(), std::nullopt);
  Field field(comm, 0.0);
  auto state = field.tree();
  ckpt.restore(1, state);
  EXPECT_EQ(field.values[0], 1.0);
  EXPECT_EQ(ckpt.current_checkpoint(), 1);
  EXPECT_EQ(ckpt.restored_from(), 1);
  EXPECT_EQ(ckpt.latest_checkpoint(), 5);
  field.values[0] = 2.0;
  EXPECT_EQ(ckpt.save(field.tree()), 2);
  EXPECT_EQ(ckpt.current_checkpoint(), 2);
  EXPECT_EQ(ckpt.latest_checkpoint(), 2);
  EXPECT_EQ(steps_in(ckpt.directory()), (Steps{1, 2}));
}

// CLU test_restore_dict: restore_dict() reads the state as saved, without a template; it
// fails when there is no checkpoint, or no such one.
TEST(CluCheckpoint, test_restore_dict) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  MultihostCheckpoint ckpt(comm, tmp / "ckpt");
  EXPECT_THROW((void)ckpt.restore_dict(), NotFound);
  EXPECT_THROW((void)ckpt.restore_dict(9), NotFound);
  Field first(comm, 1.0);
  EXPECT_EQ(ckpt.save(first.tree()), 1);
  EXPECT_EQ(value_of(ckpt.restore_dict()), 1.0);
  const auto first_checkpoint = ckpt.latest_checkpoint();
  Field second(comm, 2.0);
  EXPECT_EQ(ckpt.save(second.tree()), 2);
  const ArrayTree as_saved = ckpt.restore_dict(first_checkpoint);
  EXPECT_EQ(value_of(as_saved), 1.0);
  // Each process gets the box it saved.
  EXPECT_EQ(as_saved.at("x").as_array().box, (Box{{comm.rank()}, {1}}));
  EXPECT_EQ(ckpt.restored_from(), 1);
  EXPECT_EQ(value_of(ckpt.restore_dict()), 2.0);
  EXPECT_EQ(value_of(ckpt.restore_dict(ckpt.latest_checkpoint())), 2.0);
}

// CLU test_preemption: MultihostCheckpoint(base, host_id=...) names the directory by the
// given host id instead of the process index.
TEST(CluMultihostCheckpoint, AHostIdOverridesTheRankInTheDirectoryName) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const int host = comm.size() - 1 - comm.rank();
  MultihostCheckpoint ckpt(comm, tmp / "ckpt", {.host_id = host});
  EXPECT_EQ(ckpt.directory(), tmp / ("ckpt-" + std::to_string(host)));
  Field field(comm, 1.0);
  auto state = field.tree();
  EXPECT_EQ(ckpt.restore_or_initialize(state, 1), 1);
  EXPECT_TRUE(std::filesystem::is_directory(tmp / ("ckpt-" + std::to_string(host)) / "ckpt-1"));
  // A negative host id, or one two processes share, is refused on every rank.
  EXPECT_THROW(MultihostCheckpoint(comm, tmp / "neg", {.host_id = comm.rank() == 0 ? -1 : 5}),
               InvalidArgument);
  if (comm.size() > 1) {
    EXPECT_THROW(MultihostCheckpoint(comm, tmp / "dup", {.host_id = 0}), InvalidArgument);
  }
}

// CLU test_synchronize_multiple_hosts: latest_checkpoint is per host and may be newer than
// the checkpoint every host has, which restore_or_initialize() restores.
TEST(CluMultihostCheckpoint, test_synchronize_multiple_hosts) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  {
    MultihostCheckpoint ckpt(comm, tmp / "ckpt");
    Field field(comm, 1.0);
    auto state = field.tree();
    (void)ckpt.restore_or_initialize(state, 1);
    field.values[0] = 2.0;
    EXPECT_EQ(ckpt.save(field.tree()), 2);
  }
  // Every process but the first lost its step 2 (at one rank: the only process keeps it).
  if (comm.rank() != 0) {
    std::filesystem::remove_all(tmp / ("ckpt-" + std::to_string(comm.rank())) / "ckpt-2");
  }
  comm.barrier("step 2 lost");
  MultihostCheckpoint ckpt(comm, tmp / "ckpt");
  EXPECT_EQ(ckpt.latest_checkpoint(), comm.rank() == 0 ? 2 : 1);
  const std::int64_t common = comm.size() == 1 ? 2 : 1;
  EXPECT_EQ(ckpt.latest_common_step(), common);
  Field back(comm, 0.0);
  auto state = back.tree();
  EXPECT_EQ(ckpt.restore_or_initialize(state), common);
  EXPECT_EQ(back.values[0], static_cast<double>(common));
  // The next numbered save follows the step restored.
  EXPECT_EQ(ckpt.save(back.tree()), common + 1);
}
