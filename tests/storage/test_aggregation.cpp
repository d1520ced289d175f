// Aggregation of the posix format's shard files (TreeSaveOptions::posix_aggregation): per node,
// a count of groups and per rank save the same bytes, which restore identically N->M; a save
// writes at most one file per group; compressed leaves keep their chunks and checksums in their
// region of the group's file; verify finds damage in an aggregated file naming the leaf; a bad
// or disagreeing option fails on every rank.
#include <gtest/gtest.h>

#include <cairn/checkpointer.hpp>
#include <cairn/config.hpp>
#include <cairn/error.hpp>
#include <cairn/handlers.hpp>
#include <cairn/storage.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "storage/index_binary.hpp"
#include "storage/storage_test_util.hpp"
#include "support/test_support.hpp"

namespace cairn::testing {
namespace {

using Kind = PosixAggregation::Kind;

const std::vector<std::int64_t> kShape = {41, 29};

struct Mode {
  const char* name;
  PosixAggregation aggregation;
  int max_files;  // files per save at most, given the world size
};

std::vector<Mode> modes(int size) {
  return {{"per_rank", {.kind = Kind::per_rank}, size},
          {"per_node", {.kind = Kind::per_node}, 1},  // the tests run on one node
          {"count2", {.kind = Kind::count, .count = 2}, std::min(2, size)},
          {"count1", {.kind = Kind::count, .count = 1}, 1}};
}

storage::TreeIndex read_index(const std::filesystem::path& dir) {
  return storage::read_full_index(dir);
}

std::size_t files_in(const std::filesystem::path& dir) {
  const auto it = std::filesystem::directory_iterator(dir);
  return static_cast<std::size_t>(std::distance(begin(it), end(it)));
}

// Saves "a" (float64, block boxes), "i" (int32, row slabs, zstd when this build has it) and
// "u" (uint8, replicated) from every rank.
void save_reference(const Comm& comm, const std::filesystem::path& dir,
                    const PosixAggregation& aggregation) {
  const Box block = block_box(kShape, comm.rank(), comm.size());
  const Box slab = slab_box(kShape, comm.rank(), comm.size());
  auto a = reference_box(DType::float64, kShape, block);
  auto i = reference_box(DType::int32, kShape, slab);
  auto u = reference_box(DType::uint8, kShape, whole_box(kShape));
  ArrayTree tree;
  tree.add_array("a",
                 {.dtype = DType::float64, .global_shape = kShape, .box = block, .data = a.data()});
  tree.add_array("i",
                 {.dtype = DType::int32, .global_shape = kShape, .box = slab, .data = i.data()});
  tree.add_array("u", {.dtype = DType::uint8,
                       .global_shape = kShape,
                       .box = whole_box(kShape),
                       .data = u.data(),
                       .replicated = true});
  TreeSaveOptions options{
      .fsync = false, .checksum_chunk_bytes = 200, .posix_aggregation = aggregation};
  if (CAIRN_HAVE_ZSTD) options.save_args["i"] = {.compression = Compression::zstd()};
  save_tree(comm, dir, tree, options);
}

// Restores every leaf over `comm` in `box_of`'s decomposition and compares with the reference.
template <typename BoxOf>
void expect_reference(const Comm& comm, const std::filesystem::path& dir, BoxOf box_of) {
  const Box box = box_of(kShape, comm.rank(), comm.size());
  for (const auto& [path, dtype] : {std::pair{"a", DType::float64}, std::pair{"i", DType::int32},
                                    std::pair{"u", DType::uint8}}) {
    ArrayTree target;
    auto* got = static_cast<std::byte*>(target.add_owned_array(path, dtype, kShape, box));
    restore_tree(comm, dir, target);
    const auto want = reference_box(dtype, kShape, box);
    ASSERT_EQ(std::memcmp(got, want.data(), want.size()), 0) << "leaf " << path;
  }
}

TEST(Aggregation, EveryModeRestoresTheSameArraysNToM) {
  const SharedTempDir tmp;
  const Comm world(MPI_COMM_WORLD);
  for (const Mode& mode : modes(world.size())) {
    SCOPED_TRACE(mode.name);
    const auto dir = tmp / mode.name;
    save_reference(world, dir, mode.aggregation);
    // N->N in another decomposition, then N->M on fewer ranks.
    expect_reference(world, dir, slab_box);
    const int m = std::max(1, world.size() - 1);
    if (const std::optional<Comm> fewer = first_ranks(m)) expect_reference(*fewer, dir, block_box);
    const storage::TreeIndex index = read_index(dir);
    for (const auto& leaf : index.leaves) {
      for (const auto& shard : leaf.shards) {
        const bool aggregated = mode.aggregation.kind != Kind::per_rank;
        EXPECT_EQ(shard.file.starts_with("shards/a"), aggregated) << leaf.path << " " << shard.file;
        EXPECT_EQ(shard.byte_offset % storage::kShardAlignment, 0U) << leaf.path;
      }
    }
    EXPECT_LE(files_in(dir / "shards"), static_cast<std::size_t>(mode.max_files));
    const TreeVerifyReport report = verify_tree(world, dir);
    EXPECT_TRUE(report.problems.empty()) << report.problems.front();
    world.barrier("aggregation mode done");
  }
}

TEST(Aggregation, CompressedLeavesShareTheGroupFile) {
  if (!CAIRN_HAVE_ZSTD || !CAIRN_HAVE_ZFP) GTEST_SKIP() << "this build lacks zstd or ZFP";
  const SharedTempDir tmp;
  const Comm world(MPI_COMM_WORLD);
  const Box box = slab_box(kShape, world.rank(), world.size());
  auto z = reference_box(DType::int64, kShape, box);
  std::vector<double> f(static_cast<std::size_t>(volume(box)), 0.25);
  ArrayTree tree;
  tree.add_array("f", ArrayShard::host(f.data(), kShape, box));
  tree.add_array("z",
                 {.dtype = DType::int64, .global_shape = kShape, .box = box, .data = z.data()});
  const auto dir = tmp / "compressed";
  save_tree(world, dir, tree,
            {.fsync = false,
             .checksum_chunk_bytes = 512,
             .save_args = {{"f", {.compression = Compression::zfp_absolute(1e-6)}}},
             .compression = Compression::zstd(3),
             .posix_aggregation = {.kind = Kind::count, .count = 1}});
  EXPECT_EQ(files_in(dir / "shards"), 1U);
  const storage::TreeIndex index = read_index(dir);
  for (const auto& leaf : index.leaves) {
    for (const auto& shard : leaf.shards) {
      EXPECT_EQ(shard.file, "shards/a0.bin") << leaf.path;
      EXPECT_TRUE(shard.compressed()) << leaf.path;
    }
  }
  const Box other = block_box(kShape, world.rank(), world.size());
  std::vector<double> f_got(static_cast<std::size_t>(volume(other)));
  ArrayTree target;
  target.add_array("f", ArrayShard::host(f_got.data(), kShape, other));
  auto* z_got = static_cast<std::byte*>(target.add_owned_array("z", DType::int64, kShape, other));
  restore_tree(world, dir, target);
  const auto z_want = reference_box(DType::int64, kShape, other);
  EXPECT_EQ(std::memcmp(z_got, z_want.data(), z_want.size()), 0);
  for (const double v : f_got) ASSERT_NEAR(v, 0.25, 1e-6);
  const TreeVerifyReport report = verify_tree(world, dir);
  EXPECT_TRUE(report.problems.empty()) << report.problems.front();
}

TEST(Aggregation, VerifyNamesTheLeafOfADamagedAggregatedFile) {
  const SharedTempDir tmp;
  const Comm world(MPI_COMM_WORLD);
  const auto dir = tmp / "damaged";
  save_reference(world, dir, {.kind = Kind::count, .count = 1});
  if (world.is_primary()) {
    // One byte in the middle of the last rank's shard of "a".
    const storage::TreeIndex index = read_index(dir);
    const auto& leaf = *std::find_if(index.leaves.begin(), index.leaves.end(),
                                     [](const auto& l) { return l.path == "a"; });
    const auto& shard = leaf.shards.back();
    flip_byte(dir / shard.file, shard.byte_offset + shard.bytes / 2);
  }
  world.barrier("damaged");
  const TreeVerifyReport report = verify_tree(world, dir);
  ASSERT_EQ(report.problems.size(), 1U);
  EXPECT_NE(report.problems[0].find("'a'"), std::string::npos) << report.problems[0];
  EXPECT_NE(report.problems[0].find("a0.bin"), std::string::npos) << report.problems[0];
  ArrayTree target;
  target.add_owned_array("a", DType::float64, kShape, whole_box(kShape));
  EXPECT_THROW(restore_tree(world, dir, target), FormatError);
}

TEST(Aggregation, AnAsyncSaveWritesTheGroupFileFromItsBackgroundThread) {
  const SharedTempDir tmp;
  const Comm world(MPI_COMM_WORLD);
  const Box box = block_box(kShape, world.rank(), world.size());
  auto a = reference_box(DType::float64, kShape, box);
  ArrayTree tree;
  tree.add_array("a",
                 {.dtype = DType::float64, .global_shape = kShape, .box = box, .data = a.data()});
  const auto dir = tmp / "async";
  {
    AsyncCheckpointer ck(world, std::make_shared<ArrayTreeHandler>());
    ck.save(dir, ArrayTreeSave(tree, {.fsync = false,
                                      .posix_aggregation = {.kind = Kind::count, .count = 1}}));
    ck.wait_until_finished();
  }
  EXPECT_EQ(files_in(dir / "shards"), 1U);
  const Box other = slab_box(kShape, world.rank(), world.size());
  ArrayTree target;
  auto* got = static_cast<std::byte*>(target.add_owned_array("a", DType::float64, kShape, other));
  restore_tree(world, dir, target);
  const auto want = reference_box(DType::float64, kShape, other);
  EXPECT_EQ(std::memcmp(got, want.data(), want.size()), 0);
}

TEST(Aggregation, ABadOrDisagreeingOptionFailsOnEveryRank) {
  const SharedTempDir tmp;
  const Comm world(MPI_COMM_WORLD);
  try {
    save_reference(world, tmp / "zero", {.kind = Kind::count, .count = 0});
    ADD_FAILURE() << "a count of 0 was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("posix_aggregation"), std::string::npos) << e.what();
  }
  if (world.size() < 2) return;
  const PosixAggregation mine = world.rank() == 0
                                    ? PosixAggregation{.kind = Kind::per_node}
                                    : PosixAggregation{.kind = Kind::count, .count = 1};
  EXPECT_THROW(save_reference(world, tmp / "differ", mine), CollectiveMismatch);
}

}  // namespace
}  // namespace cairn::testing
