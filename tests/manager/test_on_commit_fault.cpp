// The on_commit report of a CheckpointManager when an async save fails after save() returned.
// Run with CAIRN_FAULT=storage.posix_write@0#2: the second async save fails on rank 0 only,
// in the background, after save() returned.
#include <cairn/manager.hpp>
#include <gtest/gtest.h>

#include <mutex>

#include "support/test_support.hpp"

using namespace cairn;
using cairn::testing::SharedTempDir;

TEST(OnCommitFault, AFailedAsyncSaveIsNeverReportedAsSaved) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  std::mutex mutex;
  std::vector<std::int64_t> reported;
  CheckpointManager mgr(comm, tmp / "run", {.on_commit = [&](std::int64_t step, const auto&) {
                          const std::lock_guard lock(mutex);
                          reported.push_back(step);
                        }});
  std::vector<double> u(4, 1.0);
  const auto args = [&] {
    ArrayTree tree;
    tree.add_array("u",
                   ArrayShard::host(u.data(), {comm.size(), 4}, Box{{comm.rank(), 0}, {1, 4}}));
    return ArrayTreeSave(std::move(tree));
  };
  ASSERT_TRUE(mgr.save(1, args()));
  mgr.wait_until_finished();
  ASSERT_TRUE(mgr.save(2, args()));  // started; fails in the background on rank 0
  EXPECT_THROW(mgr.wait_until_finished(), Error);
  {
    const std::lock_guard lock(mutex);
    EXPECT_EQ(reported, (std::vector<std::int64_t>{1}));
  }
  EXPECT_EQ(mgr.all_steps(/*read=*/true), (std::vector<std::int64_t>{1}));
  ASSERT_TRUE(mgr.save(3, args()));
  mgr.wait_until_finished();
  const std::lock_guard lock(mutex);
  EXPECT_EQ(reported, (std::vector<std::int64_t>{1, 3}));
}
