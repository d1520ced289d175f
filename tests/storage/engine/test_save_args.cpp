// Per-leaf save arguments (TreeSaveOptions::save_args, Orbax's SaveArgs): a float64 leaf saved
// as float32 or bfloat16 stores that dtype in the index and the data file, its checksums cover
// the stored bytes, and it restores N->M into its stored dtype as it is and into float64 with
// a restore-time cast, in every format; a per-leaf checksum chunk size; misuse and a value the
// stored dtype cannot hold fail the save on every rank.
#include <gtest/gtest.h>

#include <cairn/checkpointer.hpp>
#include <cairn/error.hpp>
#include <cairn/handlers.hpp>
#include <cairn/storage.hpp>

#include <complex>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "storage/index/binary.hpp"
#include "storage/index/tree_index.hpp"
#include "storage/storage_test_util.hpp"
#include "support/test_support.hpp"

namespace cairn::testing {
namespace {

const std::vector<std::int64_t> kShape = {12, 7};

// The float64 value of element `i`: not representable in float32 or bfloat16.
double value_at(std::int64_t i) { return static_cast<double>(i - 40) * 0.37 + 1.0 / 3.0; }

// `value` rounded to `stored`, as float64.
double rounded(double value, DType stored) {
  if (stored == DType::float32) return static_cast<double>(static_cast<float>(value));
  return bfloat16_to_double(bfloat16_from_double(value));
}

// This rank's box of the reference array, as float64.
std::vector<double> values_of(const Box& box) {
  std::vector<double> out;
  for (std::int64_t y = 0; y < box.extent[0]; ++y) {
    for (std::int64_t x = 0; x < box.extent[1]; ++x) {
      out.push_back(value_at((box.offset[0] + y) * kShape[1] + box.offset[1] + x));
    }
  }
  return out;
}

// Saves "u" (cast to `stored`, checksum chunks of `chunk` bytes) and "v" (as it is), both
// float64 row slabs over `comm`.
void save_cast(const Comm& comm, const std::filesystem::path& dir, StorageFormat format,
               DType stored, std::size_t chunk = 0) {
  const Box box = slab_box(kShape, comm.rank(), comm.size());
  std::vector<double> data = values_of(box);
  ArrayTree tree;
  tree.add_array("u", ArrayShard::host(data.data(), kShape, box));
  tree.add_array("v", ArrayShard::host(data.data(), kShape, box));
  save_tree(comm, dir, tree,
            {.format = format, .save_args = {{"u", {.dtype = stored, .chunk_bytes = chunk}}}});
}

// Restores "u" over `comm` (block decomposition) into float64 with a cast and into `stored`
// without one, and checks every element against the rounded reference.
void expect_restored(const Comm& comm, const std::filesystem::path& dir, DType stored) {
  const Box box = block_box(kShape, comm.rank(), comm.size());
  const std::vector<double> want = values_of(box);
  {
    std::vector<double> got(want.size(), -7.0);
    ArrayTree target;
    target.add_array("u", ArrayShard::host(got.data(), kShape, box));
    EXPECT_THROW(restore_tree(comm, dir, target), InvalidArgument)
        << "a float64 target of a leaf stored as " << dtype_name(stored) << " needs allow_cast";
    restore_tree(comm, dir, target, {.allow_cast = true});
    for (std::size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[i], rounded(want[i], stored)) << "element " << i << " of this rank's box";
    }
  }
  ArrayTree target;
  auto* raw = static_cast<std::byte*>(target.add_owned_array("u", stored, kShape, box));
  restore_tree(comm, dir, target);
  const std::size_t size = dtype_size(stored);
  for (std::size_t i = 0; i < want.size(); ++i) {
    std::vector<std::byte> expected(size);
    convert(DType::float64, &want[i], stored, expected.data(), 1);
    ASSERT_EQ(std::memcmp(raw + i * size, expected.data(), size), 0) << "element " << i;
  }
}

std::string fmt_name(StorageFormat format, DType stored) {
  return std::string(storage_format_name(format)) + "_" + std::string(dtype_name(stored));
}

storage::TreeIndex read_index(const std::filesystem::path& dir) {
  return storage::read_full_index(dir);
}

TEST(SaveArgs, CastLeavesStoreTheirDtypeAndRestoreNToM) {
  const SharedTempDir tmp;
  const Comm comm(MPI_COMM_WORLD);
  for (StorageFormat format : available_formats()) {
    for (DType stored : {DType::float32, DType::bfloat16}) {
      const std::string name = fmt_name(format, stored);
      SCOPED_TRACE(name);
      const auto dir = tmp / name;
      save_cast(comm, dir, format, stored);
      const SavedTreeInfo info = read_tree_info(comm, dir);
      ASSERT_EQ(info.leaves.size(), 2U);
      EXPECT_EQ(info.leaves[0].dtype, stored);
      EXPECT_EQ(info.leaves[0].bytes, 12U * 7U * dtype_size(stored));
      EXPECT_EQ(info.leaves[1].dtype, DType::float64);
      // The checksums cover the stored bytes: a full re-read finds nothing wrong.
      const TreeVerifyReport report = verify_tree(comm, dir);
      EXPECT_TRUE(report.problems.empty()) << report.problems.front();
      EXPECT_EQ(report.bytes, 12U * 7U * (dtype_size(stored) + 8U));
      // N -> M for every M up to the number of ranks.
      for (int m = 1; m <= comm.size(); ++m) {
        SCOPED_TRACE("restored by " + std::to_string(m) + " ranks");
        if (auto sub = first_ranks(m)) expect_restored(*sub, dir, stored);
      }
    }
    // 1 -> N.
    const auto dir = tmp / ("one_" + std::string(storage_format_name(format)));
    if (auto one = first_ranks(1)) save_cast(*one, dir, format, DType::float32);
    expect_restored(comm, dir, DType::float32);
  }
}

TEST(SaveArgs, PerLeafChecksumChunks) {
  const SharedTempDir tmp;
  const Comm comm(MPI_COMM_WORLD);
  for (StorageFormat format : available_formats()) {
    SCOPED_TRACE(std::string(storage_format_name(format)));
    const auto dir = tmp / std::string(storage_format_name(format));
    save_cast(comm, dir, format, DType::float32, 42);  // 10 float32 elements
    const storage::TreeIndex index = read_index(dir);
    ASSERT_EQ(index.leaves.size(), 2U);
    const storage::LeafRecord& u = index.leaves[0];
    EXPECT_EQ(u.chunk_bytes, 40U);
    EXPECT_EQ(index.leaves[1].chunk_bytes, std::uint64_t{1} << 20);  // the default
    for (const storage::ShardRecord& shard : u.shards) {
      EXPECT_EQ(shard.checksums.size(), (shard.bytes + 39) / 40) << "shard of rank " << shard.rank;
    }
    EXPECT_TRUE(verify_tree(comm, dir).problems.empty());
    for (int m = 1; m <= comm.size(); ++m) {
      if (auto sub = first_ranks(m)) expect_restored(*sub, dir, DType::float32);
    }
  }
}

// The async checkpointer casts while its background thread writes, from a staged copy (a
// large budget) or from the caller's memory (a budget smaller than the shard).
TEST(SaveArgs, AsyncSavesCastInTheBackground) {
  const SharedTempDir tmp;
  const Comm comm(MPI_COMM_WORLD);
  const Box box = slab_box(kShape, comm.rank(), comm.size());
  std::vector<double> data = values_of(box);
  ArrayTree tree;
  tree.add_array("u", ArrayShard::host(data.data(), kShape, box));
  for (StorageFormat format : available_formats()) {
    for (std::size_t staging : {std::size_t{1} << 20, std::size_t{8}}) {
      const std::string name = fmt_name(format, DType::float32) + std::to_string(staging);
      SCOPED_TRACE(name);
      const auto dir = tmp / name;
      AsyncCheckpointer ck(comm, std::make_shared<ArrayTreeHandler>(), {.staging_bytes = staging});
      ck.save(dir, ArrayTreeSave(
                       tree, {.format = format, .save_args = {{"u", {.dtype = DType::float32}}}}));
      ck.wait_until_finished();
      const Box mine = block_box(kShape, comm.rank(), comm.size());
      std::vector<double> got(static_cast<std::size_t>(volume(mine)), -1.0);
      ArrayTree target;
      target.add_array("u", ArrayShard::host(got.data(), kShape, mine));
      const ArrayTreeRestore args(target, {.allow_cast = true});
      (void)ck.restore(dir, &args);
      const std::vector<double> want = values_of(mine);
      for (std::size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(got[i], rounded(want[i], DType::float32)) << "element " << i;
      }
    }
  }
}

TEST(SaveArgs, MisuseAndOverflowFailOnEveryRank) {
  const SharedTempDir tmp;
  const Comm comm(MPI_COMM_WORLD);
  const Box box = slab_box(kShape, comm.rank(), comm.size());
  std::vector<double> data = values_of(box);
  // Only the primary's shard holds a value float32 cannot hold; every rank throws.
  if (comm.rank() == 0 && !data.empty()) data[0] = 1e300;
  std::vector<std::complex<double>> complex_data(data.size());
  ArrayTree tree;
  tree.add_array("u", ArrayShard::host(data.data(), kShape, box));
  tree.add_array("z", ArrayShard::host(complex_data.data(), kShape, box));
  for (StorageFormat format : available_formats()) {
    SCOPED_TRACE(std::string(storage_format_name(format)));
    const auto dir = tmp / std::string(storage_format_name(format));
    try {
      save_tree(comm, dir, tree,
                {.format = format, .save_args = {{"u", {.dtype = DType::float32}}}});
      ADD_FAILURE() << "1e300 was saved as float32";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("leaf 'u' (saved as float32)"), std::string::npos)
          << e.what();
    }
    EXPECT_THROW(save_tree(comm, dir, tree,
                           {.format = format, .save_args = {{"w", {.dtype = DType::float32}}}}),
                 InvalidArgument);
    EXPECT_THROW(save_tree(comm, dir, tree,
                           {.format = format, .save_args = {{"z", {.dtype = DType::float64}}}}),
                 InvalidArgument);
  }
}

}  // namespace
}  // namespace cairn::testing
