// list_step_directories(), root_lock_holder() and read_root_lock(): what a root holds in every
// state a manager leaves it in (committed, being deleted, moved to todelete_subdir, unfinished
// saves).
#include <cairn/manager.hpp>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>

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

TEST(StepDirectories, RootLockIsStructuredAndJudged) {
  Comm comm(MPI_COMM_WORLD);
  SharedTempDir tmp;
  const auto root = tmp / "root";
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof(host) - 1), 0);
  {
    CheckpointManager manager(comm, root, {.enable_async = false});
    const auto lock = read_root_lock(root);
    ASSERT_TRUE(lock.has_value());
    EXPECT_EQ(lock->host, host);
    EXPECT_EQ(lock->pid, ::getpid());
    EXPECT_EQ(lock->alive, std::optional<bool>(true));
    EXPECT_TRUE(lock->problem.empty()) << lock->problem;
  }
  EXPECT_FALSE(read_root_lock(root).has_value());
  // A process of this host that is gone: the lock is stale, as the manager judges it.
  long gone = 4194303;  // the largest pid_max of Linux; a free pid below it
  while (gone > 1 && ::kill(static_cast<pid_t>(gone), 0) == 0) --gone;
  std::ofstream(root / "cairn.lock") << R"({"host": ")" << host << R"(", "pid": )" << gone
                                     << R"(, "start_time": "", "slurm_job_id": "12"})";
  auto lock = read_root_lock(root);
  ASSERT_TRUE(lock.has_value());
  EXPECT_EQ(lock->alive, std::optional<bool>(false));
  EXPECT_EQ(lock->slurm_job_id, "12");
  // Another host: cannot be told here.
  std::ofstream(root / "cairn.lock") << R"({"host": "elsewhere", "pid": 1, "slurm_job_id": ""})";
  lock = read_root_lock(root);
  ASSERT_TRUE(lock.has_value());
  EXPECT_FALSE(lock->alive.has_value());
  std::ofstream(root / "cairn.lock") << "{broken";
  lock = read_root_lock(root);
  ASSERT_TRUE(lock.has_value());
  EXPECT_NE(lock->problem.find("damaged lock file"), std::string::npos) << lock->problem;
  EXPECT_EQ(lock->text, "{broken");
  // Locks are written whole and then linked: a damaged one is no running job's, for `cairn gc`
  // and for a manager alike, which takes it over.
  EXPECT_EQ(lock->alive, std::optional<bool>(false));
  for (const char* damaged : {"", "[]", "{broken"}) {
    SCOPED_TRACE(std::string("lock '") + damaged + "'");
    std::ofstream(root / "cairn.lock") << damaged;
    CheckpointManager manager(comm, root, {.enable_async = false});
    lock = read_root_lock(root);
    ASSERT_TRUE(lock.has_value());
    EXPECT_EQ(lock->pid, ::getpid());
  }
}

// Only directories that cairn's own files make steps, and whose names the root's step name
// format parses, are steps: a user's `lib32`, a copy named `copy30` or `007`, or an empty `30`
// are not; a directory that holds a root, or only other files, is not a root.
TEST(StepDirectories, OnlyCairnsOwnDirectoriesAreSteps) {
  Comm comm(MPI_COMM_WORLD);
  SharedTempDir tmp;
  const auto root = tmp / "root";
  save_steps(comm, root, {.enable_async = false}, 1);
  if (comm.is_primary()) {
    std::filesystem::create_directories(root / "lib32");
    std::filesystem::create_directories(root / "30");
    for (const char* copy : {"copy30", "007", "step_5"}) {
      std::filesystem::copy(root / "1", root / copy, std::filesystem::copy_options::recursive);
    }
    std::filesystem::create_directories(tmp / "scratch" / "run.0");
    std::filesystem::create_directories(tmp / "scratch" / "results_2024");
    std::ofstream(tmp / "scratch" / "results_2024" / "notes.txt") << "mine";
  }
  MPI_Barrier(MPI_COMM_WORLD);
  std::vector<std::string> names;
  for (const auto& d : list_step_directories(root)) {
    names.push_back(d.path.lexically_relative(root).string());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"0", "1"}));
  EXPECT_TRUE(is_checkpoint_root(root));
  EXPECT_FALSE(is_checkpoint_root(root / "1"));
  EXPECT_FALSE(is_checkpoint_root(root / "1" / "u"));
  EXPECT_FALSE(is_checkpoint_root(tmp.path()));
  EXPECT_FALSE(is_checkpoint_root(tmp / "scratch"));
  EXPECT_FALSE(is_checkpoint_root(tmp / "missing"));
  EXPECT_TRUE(list_step_directories(tmp / "scratch").empty());
  EXPECT_TRUE(is_checkpoint_directory(root / "1"));
  EXPECT_FALSE(is_checkpoint_directory(root / "30"));
  MPI_Barrier(MPI_COMM_WORLD);
}

// enclosing_cairn_directory(): the one judgement of where nothing is written. A checkpoint
// (or a save in progress) anywhere above wins over a root; a root is found by its metadata;
// links are followed. A manager whose root or local level directory lies in a step of another
// root is refused on every rank, and nothing is written into that step.
TEST(StepDirectories, NothingIsWrittenInsideACheckpoint) {
  Comm comm(MPI_COMM_WORLD);
  SharedTempDir tmp;
  const auto root = tmp / "root";
  save_steps(comm, root, {.enable_async = false}, 1);
  const auto canonical_root = std::filesystem::canonical(root);
  if (comm.is_primary()) {
    std::filesystem::create_directories(tmp / "plain" / "deeper");
    std::filesystem::create_directories(root / "2.cairn-tmp");
    std::filesystem::create_directory_symlink(root / "1", tmp / "link");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const auto expect_in = [&](const std::filesystem::path& path, CairnDirectoryKind kind,
                             const std::filesystem::path& dir, bool itself) {
    SCOPED_TRACE(path.string());
    const auto in = enclosing_cairn_directory(path);
    ASSERT_TRUE(in.has_value());
    EXPECT_EQ(in->kind, kind);
    EXPECT_EQ(in->path, dir);
    EXPECT_EQ(in->is_given_path, itself);
  };
  using Kind = CairnDirectoryKind;
  expect_in(root / "1", Kind::checkpoint, canonical_root / "1", true);
  expect_in(root / "1" / "u.bin", Kind::checkpoint, canonical_root / "1", false);
  expect_in(root / "1" / "new" / "dir", Kind::checkpoint, canonical_root / "1", false);
  expect_in(tmp / "link" / "x.npy", Kind::checkpoint, canonical_root / "1", false);
  expect_in(root / "2.cairn-tmp" / "x", Kind::temporary, canonical_root / "2.cairn-tmp", false);
  expect_in(root, Kind::root, canonical_root, true);
  expect_in(root / "u.npy", Kind::root, canonical_root, false);
  expect_in(root / "1" / "u" / ".." / "v", Kind::checkpoint, canonical_root / "1", false);
  EXPECT_FALSE(enclosing_cairn_directory(tmp / "plain" / "deeper" / "x.npy").has_value());
  EXPECT_FALSE(enclosing_cairn_directory(tmp / "missing" / "root").has_value());

  // The manager's root and its local level directory, in a step of another root.
  const std::string on_root = [&] {
    try {
      CheckpointManager manager(comm, root / "1" / "runs", {.enable_async = false});
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  }();
  EXPECT_NE(on_root.find("inside the checkpoint"), std::string::npos) << on_root;
  const std::string on_local = [&] {
    try {
      CheckpointManager manager(
          comm, tmp / "other",
          {.enable_async = false,
           .local_level = LocalLevelOptions{.directory = root / "1" / "{node}"}});
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  }();
  EXPECT_NE(on_local.find("local_level.directory"), std::string::npos) << on_local;
  EXPECT_NE(on_local.find("inside the checkpoint"), std::string::npos) << on_local;
  EXPECT_FALSE(std::filesystem::exists(root / "1" / "runs"));
  EXPECT_FALSE(std::filesystem::exists(root / "1" / "0"));
  // Step 1 is as it was saved.
  CheckpointManager reader(comm, root, {.read_only = true});
  EXPECT_EQ(reader.all_steps(), (std::vector<std::int64_t>{0, 1}));
  std::vector<double> u(4, 0.0);
  ArrayTree target;
  target.add_array("u", ArrayShard::host(u.data(), {4}));
  const ArrayTreeRestore args(target);
  (void)reader.restore(1, &args);
  EXPECT_EQ(u, std::vector<double>(4, 1.0));
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(StepDirectories, FormatVersionsAreThoseWritten) {
  Comm comm(MPI_COMM_WORLD);
  SharedTempDir tmp;
  const auto root = tmp / "root";
  // Step 1 saves the data of step 0 again, incrementally: its index refers to step 0's chunks.
  save_steps(comm, root, {.incremental = true, .enable_async = false}, 1);
  const auto versions = format_versions();
  EXPECT_EQ(read_root_metadata(root).at("version").as_int64(), versions.root);
  EXPECT_EQ(read_step_metadata(root / "0").at("version").as_int64(), versions.step);
  const auto tree_version = [&](const char* step) {
    std::ifstream in(root / step / "cairn-tree.json");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return boost::json::parse(text).at("version").as_int64();
  };
  // Every save writes the newest version, one with chunks in earlier saves and one without.
  EXPECT_EQ(tree_version("1"), versions.tree);
  EXPECT_EQ(tree_version("0"), versions.tree);
}

}  // namespace
