// list_step_directories() and root_lock_holder(): what a root holds in every state a manager
// leaves it in (committed, being deleted, moved to todelete_subdir, unfinished saves).
#include <cairn/manager.hpp>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/test_support.hpp"

using namespace cairn;
using cairn::testing::SharedTempDir;

namespace {

void save_steps(const Comm& comm, const std::filesystem::path& root,
                CheckpointManagerOptions options, std::int64_t last) {
  std::vector<double> u(4, 1.0);
  CheckpointManager manager(comm, root, std::move(options));
  for (std::int64_t step = 0; step <= last; ++step) {
    ArrayTree tree;
    tree.add_array("u", ArrayShard::host(u.data(), {4}));
    manager.save(step, ArrayTreeSave(tree), {.force = true});
  }
}

TEST(StepDirectories, ListsEveryStateAndSortsBySteps) {
  Comm comm(MPI_COMM_WORLD);
  SharedTempDir tmp;
  const auto root = tmp / "root";
  save_steps(
      comm, root,
      {.max_to_keep = 2, .step_prefix = "s", .todelete_subdir = "trash", .enable_async = false}, 3);
  // Leftovers of a save and a delete that did not finish, and a step without its marker.
  std::filesystem::create_directories(root / "s_4.cairn-tmp");
  std::filesystem::create_directories(root / "s_9.cairn-deleting");
  std::filesystem::copy(root / "s_3", root / "s_5", std::filesystem::copy_options::recursive);
  std::filesystem::remove(root / "s_5" / kCommitMarker);
  std::filesystem::create_directories(root / "not-a-step");

  const auto found = list_step_directories(root);
  std::vector<std::tuple<std::int64_t, std::string, std::string, bool>> seen;
  for (const auto& d : found) {
    seen.emplace_back(d.step, d.path.lexically_relative(root).string(),
                      std::string(step_status_name(d.status)), d.temporary);
  }
  const decltype(seen) expected = {{0, "trash/s_0", "being deleted", true},
                                   {1, "trash/s_1", "being deleted", true},
                                   {2, "s_2", "committed", false},
                                   {3, "s_3", "committed", false},
                                   {4, "s_4.cairn-tmp", "incomplete", true},
                                   {5, "s_5", "incomplete", false},
                                   {9, "s_9.cairn-deleting", "being deleted", true}};
  EXPECT_EQ(seen, expected);
}

TEST(StepDirectories, MissingRootIsNotFound) {
  SharedTempDir tmp;
  EXPECT_THROW((void)list_step_directories(tmp / "missing"), NotFound);
}

TEST(StepDirectories, LockHolderWhileAManagerWrites) {
  Comm comm(MPI_COMM_WORLD);
  SharedTempDir tmp;
  const auto root = tmp / "root";
  {
    CheckpointManager manager(comm, root, {.enable_async = false});
    const auto holder = root_lock_holder(root);
    ASSERT_TRUE(holder.has_value());
    EXPECT_NE(holder->find("pid " + std::to_string(::getpid())), std::string::npos) << *holder;
  }
  EXPECT_FALSE(root_lock_holder(root).has_value());
  std::ofstream(root / "cairn.lock") << "{broken";
  const auto damaged = root_lock_holder(root);
  ASSERT_TRUE(damaged.has_value());
  EXPECT_NE(damaged->find("damaged"), std::string::npos) << *damaged;
}

}  // namespace
