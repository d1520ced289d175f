// Aggregation of the posix format's shard files (TreeSaveOptions::posix.aggregation): per node,
// a count of groups and per rank save the same bytes, which restore identically N->M; a save
// writes at most one file per group; the ranks shipping their shards to the aggregator write
// byte for byte the files of every rank writing its own, through a ring that wraps many times,
// and leave nothing in /dev/shm; compressed leaves keep their chunks and checksums in their
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
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "storage/format/posix/aggregation.hpp"
#include "storage/format/posix/shipping.hpp"
#include "storage/index/binary.hpp"
#include "storage/storage_test_util.hpp"
#include "support/test_support.hpp"

namespace cairn::testing {
namespace {

using Kind = PosixAggregation::Kind;
using Writers = PosixAggregation::Writers;

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
          {"count1", {.kind = Kind::count, .count = 1}, 1},
          {"per_node_shipped", {.kind = Kind::per_node, .writers = Writers::aggregator}, 1},
          {"count2_shipped",
           {.kind = Kind::count, .count = 2, .writers = Writers::aggregator},
           std::min(2, size)}};
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
      .fsync = false, .checksum_chunk_bytes = 200, .posix = {.aggregation = aggregation}};
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

std::vector<char> file_bytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Every file under `dir`, relative to it, in order.
std::vector<std::filesystem::path> files_under(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) files.push_back(entry.path().lexically_relative(dir));
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(Aggregation, ShippedShardsAreTheBytesEveryRankWritesItself) {
  const SharedTempDir tmp;
  const Comm world(MPI_COMM_WORLD);
  // Besides the reference leaves, a large strided leaf and the smallest slots (io_buffer_bytes
  // of 4 KiB gives slots of 16 KiB): a member ships 384 KB at 4 ranks, so that its ring of four
  // slots wraps about six times, and strided runs arrive in pieces.
  const std::vector<std::int64_t> big_shape = {96, 2000};
  const Box box = slab_box(big_shape, world.rank(), world.size());
  std::vector<double> wide(static_cast<std::size_t>(volume(box)) * 2);
  for (std::size_t i = 0; i < wide.size(); ++i)
    wide[i] = static_cast<double>(i) * 0.5 + world.rank();
  for (const int count : {1, 2}) {
    SCOPED_TRACE(count);
    std::vector<std::filesystem::path> dirs;
    for (const Writers writers : {Writers::every_rank, Writers::aggregator}) {
      const auto dir =
          tmp / ("c" + std::to_string(count) + "w" + std::to_string(static_cast<int>(writers)));
      const PosixAggregation aggregation{.kind = Kind::count, .count = count, .writers = writers};
      const storage::ShippedBytes before = storage::shipped_bytes();
      save_reference(world, dir / "reference", aggregation);
      ArrayTree tree;
      tree.add_array("wide", {.dtype = DType::float64,
                              .global_shape = big_shape,
                              .box = box,
                              .data = wide.data(),
                              .strides = {2 * box.extent[1], 2}});
      save_tree(world, dir / "wide", tree,
                {.fsync = false, .io_buffer_bytes = 4096, .posix = {.aggregation = aggregation}});
      dirs.push_back(dir);
      // The aggregators wrote what the others shipped, and only with Writers::aggregator. Rank
      // 0 is an aggregator; with one group every other rank ships.
      const auto shipped =
          static_cast<std::int64_t>(storage::shipped_bytes().shipped - before.shipped);
      const auto received =
          static_cast<std::int64_t>(storage::shipped_bytes().received - before.received);
      EXPECT_EQ(world.sum(shipped), world.sum(received));
      if (world.rank() == 0) {
        EXPECT_EQ(shipped, 0);
      }
      if (writers == Writers::every_rank) {
        EXPECT_EQ(shipped + received, 0);
      } else if (count == 1 && world.size() > 1) {
        EXPECT_GT(world.rank() == 0 ? received : shipped, 384'000);
      }
      // Nothing of the groups' shared memory is left once the save returns.
      for (int g = 0; g < count; ++g) {
        for (const char* item : {"reference", "wide"}) {
          const std::string name = storage::shipping_segment_name(dir / item, g);
          EXPECT_FALSE(std::filesystem::exists("/dev/shm" + name)) << name;
        }
      }
    }
    world.barrier("aggregation saved");
    if (world.is_primary()) {
      const auto files = files_under(dirs[0]);
      ASSERT_EQ(files, files_under(dirs[1]));
      for (const auto& file : files) {
        EXPECT_EQ(file_bytes(dirs[0] / file), file_bytes(dirs[1] / file)) << file;
      }
    }
    // The strided leaf restores N->M from the shipped save.
    ArrayTree target;
    const Box other = block_box(big_shape, world.rank(), world.size());
    const auto* got = static_cast<const double*>(
        target.add_owned_array("wide", DType::float64, big_shape, other));
    restore_tree(world, dirs[1] / "wide", target);
    for (std::int64_t r = 0; r < other.extent[0]; ++r) {
      const std::int64_t row = other.offset[0] + r;
      int owner = 0;
      while (row >= slab_box(big_shape, owner, world.size()).offset[0] +
                        slab_box(big_shape, owner, world.size()).extent[0]) {
        ++owner;
      }
      const Box slab = slab_box(big_shape, owner, world.size());
      for (std::int64_t c = 0; c < other.extent[1]; ++c) {
        const std::int64_t i = ((row - slab.offset[0]) * slab.extent[1] + other.offset[1] + c) * 2;
        ASSERT_EQ(got[r * other.extent[1] + c], static_cast<double>(i) * 0.5 + owner)
            << "row " << row << ", column " << other.offset[1] + c;
      }
    }
  }
}

TEST(Aggregation, AGroupThatSpansNodesCannotShip) {
  const std::vector<std::string> nodes = {"n0", "n0", "n1", "n1"};
  EXPECT_NO_THROW(storage::check_groups_on_one_node(std::vector<int>{0, 0, 1, 1}, nodes));
  EXPECT_NO_THROW(storage::check_groups_on_one_node(std::vector<int>{0, 1, 2, 3}, nodes));
  try {
    storage::check_groups_on_one_node(std::vector<int>{0, 0, 0, 1}, nodes);
    ADD_FAILURE() << "a group over two nodes was accepted";
  } catch (const InvalidArgument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("posix.aggregation"), std::string::npos) << message;
    EXPECT_NE(message.find("group 0 spans nodes 'n0' (rank 0) and 'n1' (rank 2)"),
              std::string::npos)
        << message;
  }
  // On one node (these tests), one group per rank ships nothing and one group for all ships
  // every rank's shards: both save one file per group and restore.
  const SharedTempDir tmp;
  const Comm world(MPI_COMM_WORLD);
  for (const int count : {world.size(), 1}) {
    const auto dir = tmp / ("c" + std::to_string(count));
    save_reference(world, dir,
                   {.kind = Kind::count, .count = count, .writers = Writers::aggregator});
    EXPECT_EQ(files_in(dir / "shards"), static_cast<std::size_t>(count));
    expect_reference(world, dir, block_box);
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
             .posix = {.aggregation = {.kind = Kind::count, .count = 1}}});
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

TEST(Aggregation, AnAsyncSaveWritesOrShipsFromItsBackgroundThread) {
  const SharedTempDir tmp;
  const Comm world(MPI_COMM_WORLD);
  const Box box = block_box(kShape, world.rank(), world.size());
  auto a = reference_box(DType::float64, kShape, box);
  ArrayTree tree;
  tree.add_array("a",
                 {.dtype = DType::float64, .global_shape = kShape, .box = box, .data = a.data()});
  for (const Writers writers : {Writers::every_rank, Writers::aggregator}) {
    const auto dir = tmp / ("async" + std::to_string(static_cast<int>(writers)));
    {
      AsyncCheckpointer ck(world, std::make_shared<ArrayTreeHandler>());
      ck.save(dir, ArrayTreeSave(tree, {.fsync = false,
                                        .posix = {.aggregation = {.kind = Kind::count,
                                                                  .count = 1,
                                                                  .writers = writers}}}));
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
}

TEST(Aggregation, ABadOrDisagreeingOptionFailsOnEveryRank) {
  const SharedTempDir tmp;
  const Comm world(MPI_COMM_WORLD);
  try {
    save_reference(world, tmp / "zero", {.kind = Kind::count, .count = 0});
    ADD_FAILURE() << "a count of 0 was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("posix.aggregation"), std::string::npos) << e.what();
  }
  if (world.size() < 2) return;
  const PosixAggregation mine = world.rank() == 0
                                    ? PosixAggregation{.kind = Kind::per_node}
                                    : PosixAggregation{.kind = Kind::count, .count = 1};
  EXPECT_THROW(save_reference(world, tmp / "differ", mine), CollectiveMismatch);
}

}  // namespace
}  // namespace cairn::testing
