// Incremental saves through the checkpoint layers: a CheckpointManager with
// CheckpointManagerOptions::incremental refers each step to the newest committed one (also
// after a restart), retention deletes the older steps and the kept ones still restore exactly;
// items of a Composite refer to the same item of the base; a Checkpointer given
// CheckpointSaveOptions::incremental_base does the same, item by item.
#include <gtest/gtest.h>

#include <cairn/checkpointer.hpp>
#include <cairn/handlers.hpp>
#include <cairn/manager.hpp>
#include <cairn/storage.hpp>

#include <boost/json.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "support/test_support.hpp"

using namespace cairn;
using cairn::testing::SharedTempDir;

namespace {

namespace fs = std::filesystem;

using Steps = std::vector<std::int64_t>;

constexpr std::int64_t kRows = 256;
constexpr std::int64_t kCols = 512;
const std::vector<std::int64_t> kShape = {kRows, kCols};
// One checksum chunk is one row of the field (kCols float64).
constexpr std::size_t kChunkBytes = kCols * sizeof(double);
// Step k (1..4) changes the rows [k * 50, k * 50 + 25) of the field, about 10% of it.
constexpr std::int64_t kBandRows = 25;
// The chunks an incremental step refers to: every row but those of its band (the boxes are row
// slabs of whole rows, so each chunk is one row, whatever the ranks).
constexpr std::uint64_t kReferencedPerStep = kRows - kBandRows;

std::int64_t band_of(std::int64_t i) {
  return i % 50 < kBandRows ? i / 50 : 0;  // band 0: never changed
}

// Element (i, j) of the field at `step`: bands 1..step carry their step's mark.
double value(std::int64_t step, std::int64_t i, std::int64_t j) {
  const double base = static_cast<double>(i * kCols + j) + 0.5;
  const std::int64_t band = band_of(i);
  return band >= 1 && band <= step ? base + 1e7 * static_cast<double>(band) : base;
}

std::vector<double> field(std::int64_t step, const Box& box) {
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(volume(box)));
  for (std::int64_t i = box.offset[0]; i < box.offset[0] + box.extent[0]; ++i) {
    for (std::int64_t j = box.offset[1]; j < box.offset[1] + box.extent[1]; ++j)
      out.push_back(value(step, i, j));
  }
  return out;
}

Box row_box(const Comm& comm) {
  const std::int64_t begin = kRows * comm.rank() / comm.size();
  const std::int64_t end = kRows * (comm.rank() + 1) / comm.size();
  return Box{{begin, 0}, {end - begin, kCols}};
}

Box column_box(const Comm& comm) {
  const std::int64_t begin = kCols * comm.rank() / comm.size();
  const std::int64_t end = kCols * (comm.rank() + 1) / comm.size();
  return Box{{0, begin}, {kRows, end - begin}};
}

TreeSaveOptions save_options() { return {.fsync = false, .checksum_chunk_bytes = kChunkBytes}; }

// The saved state of one step: the field in row slabs.
struct State {
  State(const Comm& comm, std::int64_t step) : box(row_box(comm)), values(field(step, box)) {}
  [[nodiscard]] ArrayTree tree() const {
    ArrayTree t;
    t.add_array("u", ArrayShard::host(values.data(), kShape, box));
    return t;
  }
  Box box;
  std::vector<double> values;
};

// A restore target in column slabs (another decomposition than the save's).
struct Target {
  explicit Target(const Comm& comm)
      : box(column_box(comm)), values(static_cast<std::size_t>(volume(box)), -1.0) {}
  [[nodiscard]] ArrayTree tree() {
    ArrayTree t;
    t.add_array("u", ArrayShard::host(values.data(), kShape, box));
    return t;
  }
  // Elements that differ from the field at `step`.
  [[nodiscard]] std::size_t mismatches(std::int64_t step) const {
    const auto want = field(step, box);
    std::size_t bad = 0;
    for (std::size_t k = 0; k < want.size(); ++k) bad += values[k] != want[k] ? 1 : 0;
    return bad;
  }
  Box box;
  std::vector<double> values;
};

SavedLeafInfo leaf_u(const Comm& comm, const fs::path& dir) {
  const SavedTreeInfo info = read_tree_info(comm, dir);
  for (const auto& leaf : info.leaves) {
    if (leaf.path == "u") return leaf;
  }
  ADD_FAILURE() << "no leaf u in " << dir;
  return {};
}

void expect_step(const Comm& comm, CheckpointManager& manager, std::int64_t step) {
  Target target(comm);
  const ArrayTreeRestore args(target.tree());
  (void)manager.restore(step, &args);
  EXPECT_EQ(target.mismatches(step), 0U) << "step " << step << " on rank " << comm.rank();
}

void expect_intact(const Comm& comm, const fs::path& dir) {
  const TreeVerifyReport report = verify_tree(comm, dir);
  EXPECT_TRUE(report.problems.empty()) << dir << ": " << report.problems.front();
}

Composite composite_save(const State& state, std::int64_t step) {
  return Composite{{"field", std::make_shared<ArrayTreeSave>(state.tree(), save_options())},
                   {"meta", std::make_shared<JsonSave>(boost::json::value{{"step", step}})}};
}

// Restores the composite at `step` through `restore` (a manager's or a checkpointer's) and
// checks both items.
template <class Restore>
void expect_composite(const Comm& comm, std::int64_t step, Restore restore) {
  Target target(comm);
  const Composite args{{"field", std::make_shared<ArrayTreeRestore>(target.tree())},
                       {"meta", std::make_shared<JsonRestore>()}};
  const CompositeResult result = Checkpointer::result_as<CompositeResult>(restore(&args));
  EXPECT_EQ(result.get<boost::json::value>("meta").at("step").as_int64(), step);
  EXPECT_EQ(target.mismatches(step), 0U) << "step " << step << " on rank " << comm.rank();
}

}  // namespace

TEST(IncrementalManager, EachStepRefersToTheNewestAndKeptStepsRestoreAfterRetention) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  for (const bool async : {false, true}) {
    SCOPED_TRACE(async ? "async" : "sync");
    const auto root = tmp / (async ? "async" : "sync");
    {
      CheckpointManager manager(comm, root,
                                {.max_to_keep = 2, .incremental = true, .enable_async = async});
      for (std::int64_t step = 0; step < 5; ++step) {
        SCOPED_TRACE("step " + std::to_string(step));
        const State state(comm, step);
        ASSERT_TRUE(manager.save(step, ArrayTreeSave(state.tree(), save_options())));
        manager.wait_until_finished();
        const SavedLeafInfo u = leaf_u(comm, manager.step_path(step));
        EXPECT_EQ(u.referenced_chunks, step == 0 ? 0U : kReferencedPerStep);
        EXPECT_EQ(u.referenced_bytes, step == 0 ? 0U : kReferencedPerStep * kChunkBytes);
        expect_step(comm, manager, step);
      }
      EXPECT_EQ(manager.all_steps(), (Steps{3, 4}));
      comm.barrier("saved");
      for (const std::int64_t gone : {0, 1, 2}) EXPECT_FALSE(fs::exists(manager.step_path(gone)));
      // Steps 3 and 4 refer to bytes first written by the deleted steps 0..2.
      expect_step(comm, manager, 3);
      expect_step(comm, manager, 4);
      EXPECT_GT(leaf_u(comm, manager.step_path(4)).referenced_chunks, 0U);
      expect_intact(comm, manager.step_path(3));
      expect_intact(comm, manager.step_path(4));
    }
    // A restarted job's first save refers to the newest committed step.
    CheckpointManager restarted(comm, root,
                                {.max_to_keep = 2, .incremental = true, .enable_async = async});
    const State state(comm, 4);  // nothing changed since step 4
    ASSERT_TRUE(restarted.save(5, ArrayTreeSave(state.tree(), save_options())));
    restarted.wait_until_finished();
    EXPECT_EQ(leaf_u(comm, restarted.step_path(5)).referenced_chunks,
              static_cast<std::uint64_t>(kRows));
    EXPECT_EQ(restarted.all_steps(), (Steps{4, 5}));
    Target target(comm);
    const ArrayTreeRestore args(target.tree());
    (void)restarted.restore(5, &args);
    EXPECT_EQ(target.mismatches(4), 0U);
  }
}

TEST(IncrementalManager, WithoutTheOptionEveryStepIsWholeAndWithItTheFirstIs) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  for (const bool incremental : {false, true}) {
    CheckpointManager manager(comm, tmp / (incremental ? "on" : "off"),
                              {.incremental = incremental, .enable_async = false});
    for (std::int64_t step = 0; step < 2; ++step) {
      const State state(comm, step);
      ASSERT_TRUE(manager.save(step, ArrayTreeSave(state.tree(), save_options())));
    }
    EXPECT_EQ(leaf_u(comm, manager.step_path(0)).referenced_chunks, 0U);
    EXPECT_EQ(leaf_u(comm, manager.step_path(1)).referenced_chunks,
              incremental ? kReferencedPerStep : 0U);
    expect_step(comm, manager, 1);
  }
}

// Every incremental_full_every-th save writes whole, also counting on after a restart (the
// depth is in each step's metadata), so that one damaged chunk reaches a bounded number of
// steps: damage to a chunk of step 0 that steps 1 and 2 refer to leaves steps 3..5 intact, and
// a restart restores the newest; without whole saves it breaks every step.
TEST(IncrementalManager, AWholeSaveEveryKStepsBoundsWhatADamagedChunkBreaks) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  for (const std::int64_t every : {3, 100}) {
    SCOPED_TRACE("incremental_full_every " + std::to_string(every));
    const auto root = tmp / ("every" + std::to_string(every));
    const CheckpointManagerOptions options{
        .incremental = true, .incremental_full_every = every, .enable_async = false};
    {
      CheckpointManager manager(comm, root, options);
      for (std::int64_t step = 0; step < 5; ++step) {
        const State state(comm, step);
        ASSERT_TRUE(manager.save(step, ArrayTreeSave(state.tree(), save_options())));
        const bool whole = step % every == 0;
        EXPECT_EQ(leaf_u(comm, manager.step_path(step)).referenced_chunks,
                  whole ? 0U : kReferencedPerStep)
            << "step " << step;
      }
    }
    std::int64_t newest = 4;
    if (every == 3) {
      // A restarted job counts on from the depth stored with step 4 (1): step 5 refers to it
      // (nothing changed), step 6 writes whole.
      CheckpointManager restarted(comm, root, options);
      const State state(comm, 4);
      ASSERT_TRUE(restarted.save(5, ArrayTreeSave(state.tree(), save_options())));
      EXPECT_EQ(leaf_u(comm, restarted.step_path(5)).referenced_chunks,
                static_cast<std::uint64_t>(kRows));
      ASSERT_TRUE(restarted.save(6, ArrayTreeSave(state.tree(), save_options())));
      EXPECT_EQ(leaf_u(comm, restarted.step_path(6)).referenced_chunks, 0U);
      EXPECT_EQ(read_step_metadata(restarted.step_path(5)).at("custom").at("incremental_depth"), 2);
      EXPECT_EQ(read_step_metadata(restarted.step_path(6)).at("custom").at("incremental_depth"), 0);
      newest = 6;
    }
    // Row 30 never changes (band 0): step 0 wrote it, steps 1 and 2 refer to it.
    if (comm.is_primary()) {
      std::fstream file(root / "0" / "shards" / "p0.bin",
                        std::ios::in | std::ios::out | std::ios::binary);
      const std::streamoff at = static_cast<std::streamoff>(30 * kChunkBytes + 100);
      char byte = 0;
      file.seekg(at);
      file.read(&byte, 1);
      byte = static_cast<char>(~byte);
      file.seekp(at);
      file.write(&byte, 1);
    }
    comm.barrier("damaged");
    CheckpointManager reader(comm, root, {.read_only = true});
    Target target(comm);
    const ArrayTreeRestore args(target.tree());
    if (every == 3) {
      const auto restored = reader.restore_latest_intact(&args);
      ASSERT_TRUE(restored.has_value());
      EXPECT_EQ(restored->step, newest);
      EXPECT_EQ(target.mismatches(4), 0U);
      EXPECT_TRUE(restored->quarantined.empty());
      EXPECT_THROW((void)reader.restore(2, &args), FormatError);
      (void)reader.restore(3, &args);  // the whole save after the damaged chain
      EXPECT_EQ(target.mismatches(3), 0U);
    } else {
      EXPECT_THROW((void)reader.restore_latest_intact(&args), FormatError);
    }
  }
}

TEST(IncrementalManager, CompositeItemsReferToTheSameItemOfTheNewestStep) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  CheckpointManager manager(comm, tmp / "run",
                            {.max_to_keep = 2, .incremental = true, .enable_async = false}, {},
                            {"field", "meta"});
  for (std::int64_t step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const State state(comm, step);
    ASSERT_TRUE(manager.save(step, composite_save(state, step)));
    const SavedLeafInfo u = leaf_u(comm, manager.step_path(step) / "field");
    EXPECT_EQ(u.referenced_chunks, step == 0 ? 0U : kReferencedPerStep);
    expect_composite(comm, step,
                     [&](const CheckpointArgs* args) { return manager.restore(step, args); });
  }
  EXPECT_EQ(manager.all_steps(), (Steps{1, 2}));
  comm.barrier("saved");
  EXPECT_FALSE(fs::exists(manager.step_path(0)));
  // Step 1 referred to step 0, which is gone.
  for (const std::int64_t step : {1, 2}) {
    expect_composite(comm, step,
                     [&](const CheckpointArgs* args) { return manager.restore(step, args); });
    expect_intact(comm, manager.step_path(step) / "field");
  }
}

TEST(IncrementalManager, ACheckpointerRefersToItsBaseItemByItem) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  {
    SCOPED_TRACE("composite");
    Checkpointer ck(comm, std::make_shared<CompositeHandler>());
    const auto a = tmp / "composite-a";
    const auto b = tmp / "composite-b";
    const State zero(comm, 0);
    const State one(comm, 1);
    ck.save(a, composite_save(zero, 0));
    ck.save(b, composite_save(one, 1), {.incremental_base = a});
    EXPECT_EQ(leaf_u(comm, b / "field").referenced_chunks, kReferencedPerStep);
    if (comm.is_primary()) fs::remove_all(a);
    comm.barrier("removed");
    expect_composite(comm, 1, [&](const CheckpointArgs* args) { return ck.restore(b, args); });
  }
  {
    SCOPED_TRACE("array tree");
    Checkpointer ck(comm, std::make_shared<ArrayTreeHandler>());
    const auto a = tmp / "tree-a";
    const auto b = tmp / "tree-b";
    const State zero(comm, 0);
    const State one(comm, 1);
    ck.save(a, ArrayTreeSave(zero.tree(), save_options()));
    ck.save(b, ArrayTreeSave(one.tree(), save_options()), {.incremental_base = a});
    EXPECT_EQ(leaf_u(comm, b).referenced_chunks, kReferencedPerStep);
    if (comm.is_primary()) fs::remove_all(a);
    comm.barrier("removed");
    Target target(comm);
    const ArrayTreeRestore args(target.tree());
    (void)ck.restore(b, &args);
    EXPECT_EQ(target.mismatches(1), 0U);
  }
}
