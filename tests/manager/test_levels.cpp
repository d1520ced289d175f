// CheckpointManager with a node-local level: local saves drained to the root, a lost or
// damaged node rebuilt from its partner or its XOR group, fallback to an older local step or
// to the persistent level, a restart at another world size, retention of both levels, paced
// and preemption drains, the Young/Daly interval; the drain of a step an earlier job saved,
// the drain cadence across restarts, and the leftovers of a killed drain. Every test runs with one
// simulated node per rank and, at 4 ranks, with two nodes of two ranks.
#include <cairn/manager.hpp>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "support/test_support.hpp"

using namespace cairn;
using cairn::testing::SharedTempDir;

namespace {

using Steps = std::vector<std::int64_t>;
constexpr std::int64_t kRows = 3;     // rows of the field per rank
constexpr std::int64_t kCols = 4096;  // 32 KiB per row of doubles

// Rank r owns rows [3r, 3r + 3) of a (3 * ranks x kCols) field; step s holds s * 1e6 + i.
struct State {
  std::vector<double> values = std::vector<double>(kRows * kCols, -1.0);
  ArrayTree tree(const Comm& comm) {
    ArrayTree t;
    t.add_array("u", ArrayShard::host(values.data(), {kRows * comm.size(), kCols},
                                      Box{{kRows * comm.rank(), 0}, {kRows, kCols}}));
    return t;
  }
  void fill(std::int64_t step) {
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = expected(step, i);
  }
  void clear() { std::fill(values.begin(), values.end(), -1.0); }
  static double expected(std::int64_t step, std::size_t i) {
    return static_cast<double>(step) * 1e6 + static_cast<double>(i);
  }
  [[nodiscard]] bool holds(std::int64_t step) const {
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (values[i] != expected(step, i)) return false;
    }
    return true;
  }
};

// The layouts a test runs with at this world size: ranks per node.
std::vector<int> layouts() {
  std::vector<int> out{1};
  if (cairn::testing::world_size() >= 4) out.push_back(2);
  return out;
}

int nodes_of(int ranks_per_node) { return cairn::testing::world_size() / ranks_per_node; }

CheckpointManagerOptions options(const SharedTempDir& tmp, int ranks_per_node,
                                 LocalRedundancy redundancy, std::int64_t persistent_every,
                                 int keep = 2) {
  return {.enable_async = true,
          .local_level = LocalLevelOptions{.directory = tmp / "local{node}",
                                           .redundancy = redundancy,
                                           .keep = keep,
                                           .persistent_every = persistent_every,
                                           .drain_at_close = false,
                                           .ranks_per_node = ranks_per_node}};
}

void save_steps(const Comm& comm, const SharedTempDir& tmp, CheckpointManagerOptions opts,
                const Steps& steps) {
  State state;
  CheckpointManager mgr(comm, tmp / "root", std::move(opts));
  for (const auto step : steps) {
    state.fill(step);
    ASSERT_TRUE(mgr.save(step, ArrayTreeSave(state.tree(comm))));
  }
  mgr.wait_until_finished();
}

// Rank 0 removes node `node`'s local directory (a replacement node, a wiped tmpfs).
void wipe(const SharedTempDir& tmp, int node) {
  MPI_Barrier(MPI_COMM_WORLD);  // every rank closed its managers first
  if (cairn::testing::world_rank() == 0) {
    ASSERT_GT(std::filesystem::remove_all(tmp / ("local" + std::to_string(node))), 0u);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// Rank 0 flips a byte in the middle of every shard file of `step` on node `node`, and with
// `copy` in the redundancy file that the node holds for others.
void flip(const SharedTempDir& tmp, int node, std::int64_t step, bool copy = false) {
  MPI_Barrier(MPI_COMM_WORLD);  // every rank closed its managers first
  if (cairn::testing::world_rank() == 0) {
    const auto node_dir = tmp / ("local" + std::to_string(node));
    const auto dir = node_dir / std::to_string(step);
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
      if (entry.is_regular_file() && entry.path().extension() == ".bin" &&
          entry.path().parent_path().filename() == "shards") {
        files.push_back(entry.path());
      }
    }
    if (copy) files.push_back(node_dir / "cairn-level" / (std::to_string(step) + ".copy"));
    int flipped = 0;
    for (const auto& path : files) {
      const std::filesystem::directory_entry entry(path);
      std::fstream file(entry.path(), std::ios::in | std::ios::out | std::ios::binary);
      const auto at = static_cast<std::streamoff>(entry.file_size() / 2);
      char byte = 0;
      file.seekg(at);
      file.read(&byte, 1);
      byte = static_cast<char>(~byte);
      file.seekp(at);
      file.write(&byte, 1);
      ++flipped;
    }
    EXPECT_GT(flipped, 0) << "no shard file under " << dir;
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// Restores the newest step a level can serve into a fresh State.
State restore_latest(const Comm& comm, CheckpointManager& mgr) {
  State state;
  ArrayTreeRestore target(state.tree(comm));
  (void)mgr.restore(std::nullopt, &target);
  return state;
}

}  // namespace

TEST(Levels, LocalSavesDrainEveryKthAndAtClose) {
  Comm comm(MPI_COMM_WORLD);
  for (const int per_node : layouts()) {
    SharedTempDir tmp;
    auto opts = options(tmp, per_node, LocalRedundancy::none(), 2);
    opts.local_level->drain_at_close = true;
    {
      State state;
      CheckpointManager mgr(comm, tmp / "root", opts);
      for (std::int64_t step = 1; step <= 5; ++step) {
        state.fill(step);
        ASSERT_TRUE(mgr.save(step, ArrayTreeSave(state.tree(comm))));
        // The local step counts at once; a drain is committed in the background.
        EXPECT_EQ(mgr.local_steps().back(), step);
      }
      mgr.wait_until_finished();
      EXPECT_EQ(mgr.local_steps(), (Steps{4, 5})) << per_node;
      EXPECT_EQ(mgr.persistent_steps(), (Steps{2, 4})) << per_node;
      EXPECT_EQ(mgr.all_steps(), (Steps{2, 4, 5}));
      EXPECT_EQ(mgr.latest_step(), 5);
      mgr.close();  // drains step 5
    }
    // The persistent level holds ordinary checkpoints: a manager without a local level reads
    // them.
    CheckpointManager plain(comm, tmp / "root", {.read_only = true});
    EXPECT_EQ(plain.all_steps(), (Steps{2, 4, 5}));
    for (const std::int64_t step : {2, 4, 5}) {
      State state;
      ArrayTreeRestore target(state.tree(comm));
      (void)plain.restore(step, &target);
      EXPECT_TRUE(state.holds(step)) << "step " << step << ", " << per_node << " ranks per node";
    }
    // Each node's directory holds its own part only, as an ordinary checkpoint.
    for (int node = 0; node < nodes_of(per_node); ++node) {
      const auto dir = tmp / ("local" + std::to_string(node));
      EXPECT_TRUE(std::filesystem::exists(dir / "5" / "COMMITTED")) << dir;
      EXPECT_FALSE(std::filesystem::exists(dir / "3")) << "local retention keeps 2";
    }
  }
}

TEST(Levels, RestoreReadsTheLocalLevelAndRebuildsALostNode) {
  Comm comm(MPI_COMM_WORLD);
  for (const int per_node : layouts()) {
    for (const auto redundancy :
         {LocalRedundancy::partner(), LocalRedundancy::xor_parity(nodes_of(per_node))}) {
      const std::string what =
          redundancy.describe() + ", " + std::to_string(per_node) + " ranks per node";
      SharedTempDir tmp;
      const auto opts = options(tmp, per_node, redundancy, 0);  // nothing persistent
      save_steps(comm, tmp, opts, {1, 2, 3});
      {
        CheckpointManager mgr(comm, tmp / "root", opts);
        EXPECT_TRUE(mgr.persistent_steps().empty());
        const State state = restore_latest(comm, mgr);
        EXPECT_TRUE(state.holds(3)) << what;
        EXPECT_EQ(mgr.last_restore().level, "local") << what;
        EXPECT_TRUE(mgr.last_restore().rebuilt_nodes.empty()) << what;
      }
      // The last node loses everything: it is rebuilt from its copies, bit for bit.
      const int lost = nodes_of(per_node) - 1;
      wipe(tmp, lost);
      {
        CheckpointManager mgr(comm, tmp / "root", opts);
        const State state = restore_latest(comm, mgr);
        EXPECT_TRUE(state.holds(3)) << what;
        EXPECT_EQ(mgr.last_restore().level, "local") << what;
        EXPECT_EQ(mgr.last_restore().rebuilt_nodes, std::vector<int>{lost}) << what;
      }
      // Rebuilt for good: the next restore needs no rebuild; then a flipped byte on node 0.
      flip(tmp, 0, 3);
      {
        CheckpointManager mgr(comm, tmp / "root", opts);
        const State state = restore_latest(comm, mgr);
        EXPECT_TRUE(state.holds(3)) << what;
        EXPECT_EQ(mgr.last_restore().rebuilt_nodes, std::vector<int>{0}) << what;
      }
    }
  }
}

// The value of cell (row, col) of the field at `step` (State: rank r saved rows [3r, 3r + 3)).
double cell(std::int64_t step, std::int64_t row, std::int64_t col) {
  return State::expected(step, static_cast<std::size_t>((row % kRows) * kCols + col));
}

// A target of the whole (3 * ranks x kCols) field in another decomposition than the save's.
struct OtherGrid {
  Box box;
  std::vector<double> values;
  OtherGrid(const Comm& comm, const std::string& grid) {
    const std::int64_t rows = kRows * comm.size();
    const std::int64_t r = comm.rank();
    const std::int64_t p = comm.size();
    if (grid == "columns") {  // rank r owns a band of columns of every row
      const std::int64_t first = kCols * r / p;
      box = Box{{0, first}, {rows, kCols * (r + 1) / p - first}};
    } else if (grid == "reversed") {  // rank r owns the rows rank p - 1 - r saved
      box = Box{{kRows * (p - 1 - r), 0}, {kRows, kCols}};
    } else {  // "blocks": 2 x (p / 2) blocks, or 1 x 1 on one rank
      const std::int64_t py = p >= 2 ? 2 : 1;
      const std::int64_t px = p / py;
      const std::int64_t i = r / px;
      const std::int64_t j = r % px;
      const std::int64_t row0 = rows * i / py;
      const std::int64_t col0 = kCols * j / px;
      box = Box{{row0, col0}, {rows * (i + 1) / py - row0, kCols * (j + 1) / px - col0}};
    }
    values.assign(static_cast<std::size_t>(volume(box)), -1.0);
  }
  ArrayTree tree(const Comm& comm) {
    ArrayTree t;
    t.add_array("u", ArrayShard::host(values.data(), {kRows * comm.size(), kCols}, box));
    return t;
  }
  // The first cell that differs from `step`'s, or an empty string.
  [[nodiscard]] std::string wrong_cell(std::int64_t step) const {
    std::size_t i = 0;
    for (std::int64_t row = box.offset[0]; row < box.offset[0] + box.extent[0]; ++row) {
      for (std::int64_t col = box.offset[1]; col < box.offset[1] + box.extent[1]; ++col, ++i) {
        if (values[i] != cell(step, row, col)) {
          return "cell (" + std::to_string(row) + ", " + std::to_string(col) +
                 ") = " + std::to_string(values[i]);
        }
      }
    }
    return {};
  }
};

TEST(Levels, AnotherDecompositionIsServedFromTheLocalLevelByTheExchange) {
  Comm comm(MPI_COMM_WORLD);
  for (const int per_node : layouts()) {
    for (const auto redundancy : {LocalRedundancy::none(), LocalRedundancy::partner()}) {
      if (redundancy.kind != LocalRedundancy::Kind::none && nodes_of(per_node) < 2) continue;
      SharedTempDir tmp;
      const auto opts = options(tmp, per_node, redundancy, 0);  // nothing persistent
      save_steps(comm, tmp, opts, {1, 2});
      if (redundancy.kind != LocalRedundancy::Kind::none) wipe(tmp, nodes_of(per_node) - 1);
      for (const std::string grid : {"columns", "reversed", "blocks"}) {
        const std::string what = grid + ", " + redundancy.describe() + ", " +
                                 std::to_string(per_node) + " ranks per node";
        CheckpointManager mgr(comm, tmp / "root", opts);
        OtherGrid target_state(comm, grid);
        ArrayTreeRestore target(target_state.tree(comm));
        (void)mgr.restore(std::nullopt, &target);
        EXPECT_EQ(mgr.last_restore().step, 2) << what;
        EXPECT_EQ(mgr.last_restore().level, "local") << what;
        // Cells move between nodes when some rank's box reaches beyond its node's rows.
        const std::int64_t node_rows = kRows * per_node;
        const Box node_box{{node_rows * (comm.rank() / per_node), 0}, {node_rows, kCols}};
        EXPECT_EQ(mgr.last_restore().exchanged, comm.any(!contains(node_box, target_state.box)))
            << what;
        EXPECT_EQ(target_state.wrong_cell(2), "") << what;
      }
      // The decomposition of the save needs no exchange.
      CheckpointManager mgr(comm, tmp / "root", opts);
      const State state = restore_latest(comm, mgr);
      EXPECT_TRUE(state.holds(2));
      EXPECT_EQ(mgr.last_restore().level, "local");
      EXPECT_FALSE(mgr.last_restore().exchanged);
    }
  }
}

TEST(Levels, CellsThatNoNodeHoldsAreNeverServedFromTheLocalLevel) {
  Comm comm(MPI_COMM_WORLD);
  SharedTempDir tmp;
  // Each rank saves only the first row of its three: the rest is in no node's part, and the
  // persistent copy of the same step serves it (as saved: cells no shard covers are kept).
  auto opts = options(tmp, 1, LocalRedundancy::none(), 1);
  {
    CheckpointManager mgr(comm, tmp / "root", opts);
    State state;
    state.fill(4);
    ArrayTree tree;
    tree.add_array("u", ArrayShard::host(state.values.data(), {kRows * comm.size(), kCols},
                                         Box{{kRows * comm.rank(), 0}, {1, kCols}}));
    ASSERT_TRUE(mgr.save(4, ArrayTreeSave(tree, {.allow_sparse = true})));
    mgr.wait_until_finished();
  }
  CheckpointManager mgr(comm, tmp / "root", opts);
  OtherGrid target_state(comm, "columns");
  ArrayTreeRestore target(target_state.tree(comm));
  (void)mgr.restore(std::nullopt, &target);
  EXPECT_EQ(mgr.last_restore().level, "persistent");
  EXPECT_NE(mgr.last_restore().why_not_local.find("in no node's part"), std::string::npos)
      << mgr.last_restore().why_not_local;
  EXPECT_NE(mgr.last_restore().why_not_local.find("leaf 'u'"), std::string::npos)
      << mgr.last_restore().why_not_local;
  // Saved rows hold the step; the others keep the target's -1.
  std::size_t i = 0;
  for (std::int64_t row = 0; row < target_state.box.extent[0]; ++row) {
    for (std::int64_t col = target_state.box.offset[1];
         col < target_state.box.offset[1] + target_state.box.extent[1]; ++col, ++i) {
      const double want = row % kRows == 0 ? cell(4, row, col) : -1.0;
      ASSERT_EQ(target_state.values[i], want) << row << ", " << col;
    }
  }
}

// Rank 0 puts `from` in place of node `node`'s redundancy file of `step`.
void replace_copy(const SharedTempDir& tmp, int node, std::int64_t step,
                  const std::filesystem::path& from) {
  MPI_Barrier(MPI_COMM_WORLD);  // every rank closed its managers first
  if (cairn::testing::world_rank() == 0) {
    const auto to =
        tmp / ("local" + std::to_string(node)) / "cairn-level" / (std::to_string(step) + ".copy");
    ASSERT_TRUE(std::filesystem::exists(to)) << to;
    ASSERT_TRUE(std::filesystem::exists(from)) << from;
    std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(Levels, AStaleOrForeignCopyNeverRebuildsANode) {
  Comm comm(MPI_COMM_WORLD);
  for (const int per_node : layouts()) {
    const int nodes = nodes_of(per_node);
    if (nodes < 2) continue;
    // Node `lost` is protected by node `holder` (partner at distance 1).
    const int lost = nodes - 1;
    const int holder = 0;
    const auto copy_of = [](const SharedTempDir& dir, const std::string& folder, int node,
                            std::int64_t step) {
      return dir / (folder + std::to_string(node)) / "cairn-level" /
             (std::to_string(step) + ".copy");
    };
    for (const std::string swap : {"stale", "another node's", "another run's"}) {
      const std::string what = swap + " copy, " + std::to_string(per_node) + " ranks per node";
      SharedTempDir tmp;
      auto opts = options(tmp, per_node, LocalRedundancy::partner(), 0, 3);
      save_steps(comm, tmp, opts, {1, 2, 3});
      SharedTempDir other;
      if (swap == "another run's") {
        // Another run (its own root and local directories) with other values at the same steps.
        auto other_opts = options(other, per_node, LocalRedundancy::partner(), 0, 3);
        save_steps(comm, other, other_opts, {3, 13});
      }
      if (swap == "stale") replace_copy(tmp, holder, 3, copy_of(tmp, "local", holder, 2));
      if (swap == "another node's") replace_copy(tmp, holder, 3, copy_of(tmp, "local", 1, 3));
      if (swap == "another run's") replace_copy(tmp, holder, 3, copy_of(other, "local", holder, 3));
      wipe(tmp, lost);
      CheckpointManager mgr(comm, tmp / "root", opts);
      const State state = restore_latest(comm, mgr);
      // Step 3 cannot be rebuilt: step 2, whose copies are intact, serves, bit for bit.
      EXPECT_EQ(mgr.last_restore().step, 2) << what;
      EXPECT_TRUE(state.holds(2)) << what;
      EXPECT_EQ(mgr.last_restore().level, "local") << what;
      EXPECT_EQ(mgr.last_restore().rebuilt_nodes, std::vector<int>{lost}) << what;
      EXPECT_NE(mgr.last_restore().why_not_local.find("3"), std::string::npos)
          << what << ": " << mgr.last_restore().why_not_local;
    }
  }
}

// Rank 0 models losing node `lost` and restarting with a spare appended to the host list:
// every later node moves up one place and takes its own directory with it, and the last
// place gets a fresh, empty directory.
void lose_and_append_a_spare(const SharedTempDir& tmp, int lost, int nodes) {
  MPI_Barrier(MPI_COMM_WORLD);  // every rank closed its managers first
  if (cairn::testing::world_rank() == 0) {
    const auto dir = [&](int node) { return tmp / ("local" + std::to_string(node)); };
    ASSERT_GT(std::filesystem::remove_all(dir(lost)), 0u);
    for (int node = lost + 1; node < nodes; ++node)
      std::filesystem::rename(dir(node), dir(node - 1));
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(Levels, ALostNodeIsRebuiltOnASpareAppendedToTheHostList) {
  Comm comm(MPI_COMM_WORLD);
  for (const int per_node : layouts()) {
    const int nodes = nodes_of(per_node);
    if (nodes < 2) continue;
    for (const auto redundancy : {LocalRedundancy::partner(), LocalRedundancy::xor_parity(nodes)}) {
      const std::string what =
          redundancy.describe() + ", " + std::to_string(per_node) + " ranks per node";
      SharedTempDir tmp;
      const auto opts = options(tmp, per_node, redundancy, 0);  // nothing persistent
      save_steps(comm, tmp, opts, {1, 2, 3});
      lose_and_append_a_spare(tmp, 0, nodes);
      {
        CheckpointManager mgr(comm, tmp / "root", opts);
        const State state = restore_latest(comm, mgr);
        EXPECT_EQ(mgr.last_restore().step, 3) << what;
        EXPECT_EQ(mgr.last_restore().level, "local") << what;
        EXPECT_EQ(mgr.last_restore().rebuilt_nodes, std::vector<int>{nodes - 1}) << what;
        EXPECT_TRUE(state.holds(3)) << what;
        // The next save and restore work in the new order.
        State next;
        next.fill(4);
        EXPECT_TRUE(mgr.save(4, ArrayTreeSave(next.tree(comm))));
        mgr.wait_until_finished();
      }
      // The parts found their nodes for good: no rebuild, and both steps restore exactly.
      CheckpointManager mgr(comm, tmp / "root", opts);
      State state = restore_latest(comm, mgr);
      EXPECT_EQ(mgr.last_restore().step, 4) << what;
      EXPECT_TRUE(state.holds(4)) << what;
      ArrayTreeRestore target(state.tree(comm));
      (void)mgr.restore(3, &target);
      EXPECT_EQ(mgr.last_restore().level, "local") << what;
      EXPECT_TRUE(mgr.last_restore().rebuilt_nodes.empty()) << what;
      EXPECT_TRUE(state.holds(3)) << what;
    }
  }
}

TEST(Levels, WithoutRedundancyALostNodeFallsBackToThePersistentLevel) {
  Comm comm(MPI_COMM_WORLD);
  for (const int per_node : layouts()) {
    SharedTempDir tmp;
    const auto opts = options(tmp, per_node, LocalRedundancy::none(), 2);
    save_steps(comm, tmp, opts, {1, 2, 3});
    wipe(tmp, nodes_of(per_node) - 1);
    CheckpointManager mgr(comm, tmp / "root", opts);
    const State state = restore_latest(comm, mgr);
    EXPECT_TRUE(state.holds(2)) << per_node;
    EXPECT_EQ(mgr.last_restore().step, 2);
    EXPECT_EQ(mgr.last_restore().level, "persistent");
    EXPECT_NE(mgr.last_restore().why_not_local.find("redundancy is none"), std::string::npos)
        << mgr.last_restore().why_not_local;
    // An explicit step that only the local level held cannot be served.
    State target_state;
    ArrayTreeRestore target(target_state.tree(comm));
    EXPECT_THROW((void)mgr.restore(3, &target), NotFound);
  }
}

TEST(Levels, TwoLossesInOneGroupFallBackToAnOlderIntactStep) {
  Comm comm(MPI_COMM_WORLD);
  for (const int per_node : layouts()) {
    const int nodes = nodes_of(per_node);
    if (nodes < 2) continue;
    for (const auto redundancy : {LocalRedundancy::partner(), LocalRedundancy::xor_parity(nodes)}) {
      const std::string what =
          redundancy.describe() + ", " + std::to_string(per_node) + " ranks per node";
      SharedTempDir tmp;
      const auto opts = options(tmp, per_node, redundancy, 2);
      save_steps(comm, tmp, opts, {1, 2, 3});
      // Step 3 is damaged on node 0 and on node 1, which holds node 0's copy (partner) or
      // shares its group (xor), copies included: it cannot be rebuilt, and local step 2
      // serves.
      flip(tmp, 0, 3, true);
      flip(tmp, 1, 3, true);
      {
        CheckpointManager mgr(comm, tmp / "root", opts);
        const State state = restore_latest(comm, mgr);
        EXPECT_TRUE(state.holds(2)) << what;
        EXPECT_EQ(mgr.last_restore().level, "local") << what;
        EXPECT_FALSE(mgr.last_restore().why_not_local.empty()) << what;
      }
      // Both nodes wiped: no local step survives, the persistent level serves step 2.
      wipe(tmp, 0);
      wipe(tmp, 1);
      CheckpointManager mgr(comm, tmp / "root", opts);
      const State state = restore_latest(comm, mgr);
      EXPECT_TRUE(state.holds(2)) << what;
      EXPECT_EQ(mgr.last_restore().level, "persistent") << what;
      // restore_latest_intact considers both levels and never returns a wrong result.
      State again;
      ArrayTreeRestore target(again.tree(comm));
      const auto restored = mgr.restore_latest_intact(&target);
      ASSERT_TRUE(restored.has_value());
      EXPECT_EQ(restored->step, 2);
      EXPECT_TRUE(again.holds(2)) << what;
    }
  }
}

TEST(Levels, ARestartAtAnotherWorldSizeReadsThePersistentLevel) {
  Comm comm(MPI_COMM_WORLD);
  SharedTempDir tmp;
  const auto opts = options(tmp, 1, LocalRedundancy::none(), 1);
  save_steps(comm, tmp, opts, {1, 2});
  // The ranks but the last restart alone, with the same local directories.
  MPI_Comm fewer_raw = MPI_COMM_NULL;
  const bool member = comm.rank() < comm.size() - 1 || comm.size() == 1;
  MPI_Comm_split(MPI_COMM_WORLD, member ? 0 : MPI_UNDEFINED, comm.rank(), &fewer_raw);
  if (!member) return;
  Comm fewer(fewer_raw);
  MPI_Comm_free(&fewer_raw);
  CheckpointManager mgr(fewer, tmp / "root", opts);
  if (comm.size() > 1) {
    EXPECT_TRUE(mgr.local_steps().empty()) << "recorded for another world size";
  }
  // The whole field, read N->M from the persistent step.
  const std::int64_t rows = kRows * comm.size();
  std::vector<double> all(static_cast<std::size_t>(rows * kCols));
  ArrayTree tree;
  tree.add_array("u", ArrayShard::host(all.data(), {rows, kCols}));
  ArrayTreeRestore target(tree);
  (void)mgr.restore(std::nullopt, &target);
  EXPECT_EQ(mgr.last_restore().level, comm.size() > 1 ? "persistent" : "local");
  for (std::size_t i = 0; i < all.size(); ++i) {
    ASSERT_EQ(all[i], State::expected(2, i % static_cast<std::size_t>(kRows * kCols))) << i;
  }
}

TEST(Levels, AnotherLayoutsNewerStepsAreKeptUntilANewerStepIsSaved) {
  Comm comm(MPI_COMM_WORLD);
  ASSERT_GE(comm.size(), 2) << "registered at 2 and 4 ranks";
  SharedTempDir tmp;
  // Steps 10, 20 and 30 locally, 20 also on the root.
  const auto opts = options(tmp, 1, LocalRedundancy::none(), 2, 3);
  save_steps(comm, tmp, opts, {10, 20, 30});
  const auto exists = [&](const std::string& relative) {
    return std::filesystem::exists(tmp / relative);
  };
  EXPECT_TRUE(exists("root/20"));
  EXPECT_FALSE(exists("root/30"));
  {
    // The ranks but the last restart alone: step 30 is another layout's, so the root's step
    // 20 serves; the job then saves step 25.
    MPI_Comm fewer_raw = MPI_COMM_NULL;
    const bool member = comm.rank() < comm.size() - 1;
    MPI_Comm_split(MPI_COMM_WORLD, member ? 0 : MPI_UNDEFINED, comm.rank(), &fewer_raw);
    if (member) {
      Comm fewer(fewer_raw);
      MPI_Comm_free(&fewer_raw);
      CheckpointManager mgr(fewer, tmp / "root", opts);
      State state;
      ArrayTree saved_shape;  // this rank's rows of the field the whole world saved
      saved_shape.add_array("u", ArrayShard::host(state.values.data(), {kRows * comm.size(), kCols},
                                                  Box{{kRows * fewer.rank(), 0}, {kRows, kCols}}));
      ArrayTreeRestore target(saved_shape);
      (void)mgr.restore(std::nullopt, &target);
      EXPECT_EQ(mgr.last_restore().step, 20);
      EXPECT_EQ(mgr.last_restore().level, "persistent");
      EXPECT_TRUE(state.holds(20));
      state.fill(25);
      EXPECT_TRUE(mgr.save(25, ArrayTreeSave(state.tree(fewer))));
      mgr.wait_until_finished();
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  // Node 0 still holds step 30 of the first layout (newer than 25), not its older steps.
  EXPECT_TRUE(exists("local0/30/COMMITTED"));
  EXPECT_TRUE(exists("local0/cairn-level/30.json"));
  EXPECT_TRUE(exists("local0/25/COMMITTED"));
  EXPECT_FALSE(exists("local0/10"));
  EXPECT_FALSE(exists("local0/cairn-level/10.json"));
  // The first layout restarts from its cached step 30, bit for bit.
  CheckpointManager mgr(comm, tmp / "root", opts);
  const State state = restore_latest(comm, mgr);
  EXPECT_EQ(mgr.last_restore().step, 30);
  EXPECT_EQ(mgr.last_restore().level, "local");
  EXPECT_TRUE(state.holds(30));
}

TEST(Levels, PacedDrainsPreemptionDrainsAndRetentionOfBothLevels) {
  Comm comm(MPI_COMM_WORLD);
  SharedTempDir tmp;
  auto opts = options(tmp, 1, LocalRedundancy::none(), 0, 1);
  opts.max_to_keep = 1;
  opts.local_level->drain_bytes_per_second = 4u << 20;  // 4 MiB/s: about 25 ms per rank
  opts.preemption =
      PreemptionOptions{.signals = {},
                        .deadline = std::chrono::system_clock::now() + std::chrono::hours(1),
                        .use_slurm_end_time = false,
                        .margin = std::chrono::seconds(0)};
  State state;
  {
    CheckpointManager mgr(comm, tmp / "root", opts);
    for (std::int64_t step = 1; step <= 3; ++step) {
      state.fill(step);
      ASSERT_TRUE(mgr.save(step, ArrayTreeSave(state.tree(comm))));
    }
    EXPECT_TRUE(mgr.persistent_steps().empty()) << "persistent_every 0";
    EXPECT_EQ(mgr.local_steps(), Steps{3}) << "local keep 1";
    EXPECT_TRUE(mgr.drain());  // paced
    EXPECT_EQ(mgr.persistent_steps(), Steps{3});
    EXPECT_FALSE(mgr.drain()) << "step 3 is persistent already";
  }
  // A preemption save is drained whatever persistent_every says.
  opts.preemption->deadline = std::chrono::system_clock::now() - std::chrono::seconds(1);
  {
    CheckpointManager mgr(comm, tmp / "root", opts);
    state.fill(4);
    ASSERT_TRUE(mgr.reached_preemption(4));
    ASSERT_TRUE(mgr.save(4, ArrayTreeSave(state.tree(comm))));
    mgr.wait_until_finished();
    EXPECT_EQ(mgr.persistent_steps(), Steps{4}) << "max_to_keep 1";
    EXPECT_EQ(mgr.local_steps(), Steps{4});
  }
  CheckpointManager plain(comm, tmp / "root", {.read_only = true});
  State restored;
  ArrayTreeRestore target(restored.tree(comm));
  (void)plain.restore(4, &target);
  EXPECT_TRUE(restored.holds(4));
}

TEST(Levels, CompositeItemsDrainFromTheLocalFiles) {
  Comm comm(MPI_COMM_WORLD);
  SharedTempDir tmp;
  auto opts = options(tmp, 1, LocalRedundancy::none(), 1);
  State state;
  state.fill(7);
  {
    CheckpointManager mgr(comm, tmp / "root", opts, {}, {"state", "meta"});
    ASSERT_TRUE(mgr.save(
        7, Composite{{"state", std::make_shared<ArrayTreeSave>(state.tree(comm))},
                     {"meta", std::make_shared<JsonSave>(boost::json::object{{"nx", 42}})}}));
    mgr.wait_until_finished();
    EXPECT_EQ(mgr.persistent_steps(), Steps{7});
  }
  CheckpointManager plain(comm, tmp / "root", {.read_only = true}, {}, {"state", "meta"});
  State restored;
  const Composite args{{"state", std::make_shared<ArrayTreeRestore>(restored.tree(comm))},
                       {"meta", std::make_shared<JsonRestore>()}};
  const auto result = std::any_cast<CompositeResult>(plain.restore(7, &args));
  EXPECT_TRUE(restored.holds(7));
  EXPECT_EQ(result.get<boost::json::value>("meta").at("nx").as_int64(), 42);
}

TEST(Levels, BadOptionsAreRefusedOnEveryRank) {
  Comm comm(MPI_COMM_WORLD);
  SharedTempDir tmp;
  const int nodes = comm.size();
  auto bad = [&](LocalLevelOptions level, const std::string& needle) {
    level.ranks_per_node = level.ranks_per_node == 0 ? 1 : level.ranks_per_node;
    try {
      CheckpointManager mgr(comm, tmp / "root", {.local_level = level});
      ADD_FAILURE() << "accepted: " << needle;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  bad({.directory = tmp / "l{node}", .keep = 0}, "keep");
  bad({.directory = tmp / "l{node}", .persistent_every = -1}, "persistent_every");
  bad({.directory = tmp / "root" / "local"}, "inside the root");
  bad({.directory = tmp / "l{node}", .redundancy = LocalRedundancy::partner(nodes)}, "partner");
  bad({.directory = tmp / "l{node}", .redundancy = LocalRedundancy::xor_parity(1)}, "xor");
  if (nodes > 1) bad({.directory = tmp / "shared"}, "share");
  // A local directory serves one root: a manager of another root is refused, on every rank,
  // and the first root's local step stays.
  save_steps(comm, tmp, options(tmp, 1, LocalRedundancy::none(), 0), {7});
  try {
    CheckpointManager other(comm, tmp / "other-root", options(tmp, 1, LocalRedundancy::none(), 0));
    ADD_FAILURE() << "a local directory of another root was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("holds the local steps of the root"), std::string::npos)
        << e.what();
  }
  CheckpointManager same(comm, tmp / "root", options(tmp, 1, LocalRedundancy::none(), 0));
  EXPECT_EQ(same.local_steps(), Steps{7});
  EXPECT_THROW((void)LocalRedundancy::parse("raid6"), InvalidArgument);
  EXPECT_EQ(LocalRedundancy::parse("xor=3").xor_group, 3);
  EXPECT_EQ(LocalRedundancy::parse("partner=2").partner_distance, 2);
}

TEST(Levels, YoungDalyIntervalFromTheMeasuredCost) {
  using namespace std::chrono_literals;
  EXPECT_DOUBLE_EQ(young_daly_interval(2s, 3600s).count(), 120.0);
  EXPECT_THROW((void)young_daly_interval(0s, 3600s), InvalidArgument);
  const save_policy::YoungDaly policy(3600s);
  const auto t0 = std::chrono::system_clock::time_point(std::chrono::hours(1000));
  SaveContext context{.step = 1, .now = t0};
  EXPECT_TRUE(policy.should_save(context)) << "nothing saved yet";
  context.last_saved_step = 0;
  context.last_saved_time = t0 - 100s;
  EXPECT_TRUE(policy.should_save(context)) << "no cost measured yet: save and measure";
  context.last_save_cost = 2s;
  EXPECT_FALSE(policy.should_save(context)) << "100 s < 120 s";
  context.now = t0 + 20s;
  EXPECT_TRUE(policy.should_save(context)) << "120 s reached";
  // In a manager: the cost is measured from its local saves.
  Comm comm(MPI_COMM_WORLD);
  SharedTempDir tmp;
  auto now = t0;
  auto opts = options(tmp, 1, LocalRedundancy::none(), 0);
  opts.save_decision_policy = std::make_shared<save_policy::YoungDaly>(3600s);
  opts.clock = [&now] { return now; };
  CheckpointManager mgr(comm, tmp / "root", opts);
  State state;
  EXPECT_TRUE(mgr.save(1, ArrayTreeSave(state.tree(comm))));
  now += 1s;  // far below sqrt(2 * cost * 3600 s) for any cost above 0.2 ms
  EXPECT_FALSE(mgr.should_save(2));
  now += 24h;
  EXPECT_TRUE(mgr.should_save(2));
}

TEST(Levels, ARunThatOnlyRestoresALocalStepDrainsItAtClose) {
  Comm comm(MPI_COMM_WORLD);
  for (const int per_node : layouts()) {
    SharedTempDir tmp;
    // A job that saved steps 1 to 3 on the local level alone and was killed.
    auto opts = options(tmp, per_node, LocalRedundancy::partner(), 0);
    save_steps(comm, tmp, opts, {1, 2, 3});
    {
      CheckpointManager mgr(comm, tmp / "root", opts);
      ASSERT_TRUE(mgr.persistent_steps().empty());
    }
    // The next job restores step 3 from the local level and ends at once, saving nothing.
    opts.local_level->drain_at_close = true;
    {
      CheckpointManager mgr(comm, tmp / "root", opts);
      const State state = restore_latest(comm, mgr);
      ASSERT_TRUE(state.holds(3));
      ASSERT_EQ(mgr.last_restore().level, "local");
      mgr.close();
      EXPECT_EQ(mgr.last_drain().step, 3) << mgr.last_drain().why_not;
    }
    CheckpointManager plain(comm, tmp / "root", {.read_only = true});
    EXPECT_EQ(plain.all_steps(), Steps{3}) << per_node << " ranks per node";
    State restored;
    ArrayTreeRestore target(restored.tree(comm));
    (void)plain.restore(3, &target);
    EXPECT_TRUE(restored.holds(3)) << per_node << " ranks per node";
  }
}

TEST(Levels, DrainRebuildsALostNodeAndReadsEveryItemBackFromTheLocalFiles) {
  Comm comm(MPI_COMM_WORLD);
  for (const int per_node : layouts()) {
    SharedTempDir tmp;
    const auto opts = options(tmp, per_node, LocalRedundancy::partner(), 0);
    const std::vector<std::byte> mine(static_cast<std::size_t>(100 + comm.rank()),
                                      static_cast<std::byte>(comm.rank() + 1));
    State state;
    state.fill(5);
    {
      CheckpointManager mgr(comm, tmp / "root", opts);
      ASSERT_TRUE(
          mgr.save(5,
                   Composite{{"state", std::make_shared<ArrayTreeSave>(state.tree(comm))},
                             {"meta", std::make_shared<JsonSave>(boost::json::object{{"nx", 42}})},
                             {"blob", std::make_shared<BytesSave>(mine)}},
                   {.metrics = {{"loss", 0.5}}}));
    }
    const int lost = nodes_of(per_node) - 1;
    wipe(tmp, lost);
    {
      // A job that neither saves nor restores: drain() rebuilds the lost node first.
      CheckpointManager mgr(comm, tmp / "root", opts);
      EXPECT_TRUE(mgr.drain()) << mgr.last_drain().why_not;
      EXPECT_EQ(mgr.last_drain().step, 5);
      EXPECT_EQ(mgr.last_drain().rebuilt_nodes, std::vector<int>{lost});
      EXPECT_EQ(mgr.persistent_steps(), Steps{5});
      EXPECT_FALSE(mgr.drain());
      EXPECT_FALSE(mgr.last_drain().failed);
    }
    CheckpointManager plain(comm, tmp / "root", {.read_only = true});
    State restored;
    const Composite args{{"state", std::make_shared<ArrayTreeRestore>(restored.tree(comm))},
                         {"meta", std::make_shared<JsonRestore>()},
                         {"blob", std::make_shared<BytesRestore>()}};
    const auto result = std::any_cast<CompositeResult>(plain.restore(5, &args));
    EXPECT_TRUE(restored.holds(5)) << per_node << " ranks per node";
    EXPECT_EQ(result.get<boost::json::value>("meta").at("nx").as_int64(), 42);
    EXPECT_EQ(result.get<std::vector<std::byte>>("blob"), mine);
    EXPECT_EQ(plain.metrics(5).at("loss").as_double(), 0.5);
  }
}

TEST(Levels, AStepLostBeyondRepairIsNotDrainedAndSaysWhy) {
  Comm comm(MPI_COMM_WORLD);
  SharedTempDir tmp;
  const auto opts = options(tmp, 1, LocalRedundancy::none(), 0);
  save_steps(comm, tmp, opts, {1, 2});
  wipe(tmp, nodes_of(1) - 1);
  CheckpointManager mgr(comm, tmp / "root", opts);
  EXPECT_FALSE(mgr.drain());
  EXPECT_TRUE(mgr.last_drain().failed);
  EXPECT_NE(mgr.last_drain().why_not.find("redundancy is none"), std::string::npos)
      << mgr.last_drain().why_not;
  EXPECT_TRUE(mgr.persistent_steps().empty());
}

TEST(Levels, TheDrainCadenceCountsOnAcrossARestart) {
  Comm comm(MPI_COMM_WORLD);
  for (const int per_node : layouts()) {
    SharedTempDir tmp;
    const auto opts = options(tmp, per_node, LocalRedundancy::none(), 3, 3);
    save_steps(comm, tmp, opts, {1, 2});  // local saves 1 and 2 of every 3: none drained
    {
      CheckpointManager mgr(comm, tmp / "root", opts);
      State state;
      for (std::int64_t step = 3; step <= 6; ++step) {
        state.fill(step);
        ASSERT_TRUE(mgr.save(step, ArrayTreeSave(state.tree(comm))));
      }
      mgr.wait_until_finished();
      // The job's 3rd and 6th local saves, not this manager's 3rd.
      EXPECT_EQ(mgr.persistent_steps(), (Steps{3, 6})) << per_node << " ranks per node";
    }
    // A node that lost its files counts on from the others.
    wipe(tmp, 0);
    CheckpointManager mgr(comm, tmp / "root", opts);
    State state;
    for (std::int64_t step = 7; step <= 9; ++step) {
      state.fill(step);
      ASSERT_TRUE(mgr.save(step, ArrayTreeSave(state.tree(comm))));
    }
    mgr.wait_until_finished();
    EXPECT_EQ(mgr.persistent_steps(), (Steps{3, 6, 9})) << per_node << " ranks per node";
  }
}

TEST(Levels, TheNextManagerRemovesWhatAKilledDrainLeftOnTheRoot) {
  Comm comm(MPI_COMM_WORLD);
  SharedTempDir tmp;
  const auto opts = options(tmp, 1, LocalRedundancy::none(), 2);
  save_steps(comm, tmp, opts, {1, 2, 3});
  // What a drain of step 3 killed midway leaves: its temporary directory, part written.
  const auto dead = tmp / "root" / "3.cairn-tmp";
  if (comm.is_primary()) {
    std::filesystem::create_directories(dead / "shards");
    std::ofstream(dead / "shards" / "r0.bin") << "part of a shard";
  }
  comm.barrier("a dead drain");
  {
    CheckpointManager mgr(comm, tmp / "root", opts);
    EXPECT_FALSE(std::filesystem::exists(dead));
    EXPECT_EQ(mgr.persistent_steps(), Steps{2});
    EXPECT_EQ(mgr.local_steps(), (Steps{2, 3}));
  }
  comm.barrier("checked");
  // A manager that only reads leaves the root as it is.
  if (comm.is_primary()) std::filesystem::create_directories(dead);
  comm.barrier("another dead drain");
  CheckpointManager mgr(comm, tmp / "root", {.read_only = true});
  EXPECT_TRUE(std::filesystem::exists(dead));
}
