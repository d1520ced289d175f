// The storage conformance suite: the same cases, through the public API only, for every
// format this build has (posix always, hdf5 with CAIRN_HAVE_HDF5). Each case is a TEST_P
// instantiated once per format as "Formats/Conformance.<Case>/<format>".
//
// Cases that save on N ranks and restore on M use sub-communicators over the first N (M)
// world ranks; a case needing more ranks than the world has is skipped, saying how many it
// needs. At 4 ranks nothing skips.
#include <cairn/storage.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <complex>
#include <cstring>
#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "../storage/storage_test_util.hpp"
#include "support/test_support.hpp"

namespace cairn {
// Test names and failure messages show a format by its name.
void PrintTo(StorageFormat format, std::ostream* out) { *out << storage_format_name(format); }
}  // namespace cairn

namespace cairn::testing {
namespace {

// Uneven extents, so that no decomposition's boundaries line up with another's.
const std::vector<std::int64_t> kPlane = {37, 23};
const std::vector<std::int64_t> kCube = {11, 7, 5};

using Decompose = std::function<Box(const std::vector<std::int64_t>&, int, int)>;

// Rank r's box when dimension 1 is split over n ranks (column slabs of a matrix).
Box column_box(const std::vector<std::int64_t>& shape, int r, int n) {
  Box box{std::vector<std::int64_t>(shape.size(), 0), shape};
  box.offset[1] = shape[1] * r / n;
  box.extent[1] = shape[1] * (r + 1) / n - box.offset[1];
  return box;
}

// Rank r's box when dimensions 0 and 1 are split over a regular grid (as block_box's): equal
// blocks of ceil(extent / parts), the last ones smaller. The hdf5 format stores such shards as
// one chunk each when they are not runs of the array.
Box regular_block_box(const std::vector<std::int64_t>& shape, int r, int n) {
  int rows = 1;
  for (int d = 1; d * d <= n; ++d) {
    if (n % d == 0) rows = d;
  }
  const int cols = n / rows;
  const int coordinate[2] = {r / cols, r % cols};
  const int parts[2] = {rows, cols};
  Box box{std::vector<std::int64_t>(shape.size(), 0), shape};
  for (std::size_t d = 0; d < 2; ++d) {
    const std::int64_t step = (shape[d] + parts[d] - 1) / parts[d];
    box.offset[d] = std::min(shape[d], step * coordinate[d]);
    box.extent[d] = std::min(shape[d], step * (coordinate[d] + 1)) - box.offset[d];
  }
  return box;
}

// Column slabs of a regular grid (ceil(extent / n) columns each, the last ones fewer).
Box regular_column_box(const std::vector<std::int64_t>& shape, int r, int n) {
  Box box{std::vector<std::int64_t>(shape.size(), 0), shape};
  const std::int64_t step = (shape[1] + n - 1) / n;
  box.offset[1] = std::min(shape[1], step * r);
  box.extent[1] = std::min(shape[1], step * (r + 1)) - box.offset[1];
  return box;
}

// Every rank gets the whole array.
Box whole(const std::vector<std::int64_t>& shape, int /*r*/, int /*n*/) { return whole_box(shape); }

std::string name_of(StorageFormat format) { return std::string(storage_format_name(format)); }

std::size_t bytes_of(DType dtype, const Box& box) {
  return static_cast<std::size_t>(volume(box)) * dtype_size(dtype);
}

// Index of the first differing byte of two buffers, as text for a failure message.
std::string first_difference(const std::vector<std::byte>& got,
                             const std::vector<std::byte>& want) {
  if (got.size() != want.size()) {
    return "sizes differ: " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
  }
  const auto at = std::mismatch(got.begin(), got.end(), want.begin());
  if (at.first == got.end()) return "equal";
  return "first difference at byte " + std::to_string(at.first - got.begin());
}

#define SKIP_UNLESS_RANKS(n)                                                           \
  do {                                                                                 \
    if (world_size() < (n)) {                                                          \
      GTEST_SKIP() << "needs " << (n) << " MPI ranks, the world has " << world_size(); \
    }                                                                                  \
  } while (false)

// Runs `fn` on the first `n` world ranks with their Comm; an exception thrown there becomes a
// test failure on the ranks that saw it, and every world rank leaves together.
void on_first(int n, const std::function<void(const Comm&)>& fn) {
  if (auto comm = first_ranks(n)) {
    try {
      fn(*comm);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "on " << n << " rank(s), rank " << comm->rank() << ": " << e.what();
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// One array leaf of the reference data, described independently of any rank.
struct LeafSpec {
  std::string path;
  DType dtype;
  std::vector<std::int64_t> shape;
};

const std::vector<LeafSpec> kMatrixLeaves = {{"fields/plane", DType::float64, kPlane},
                                             {"fields/cube", DType::int16, kCube}};

// Saves the reference arrays `leaves`, rank r of `comm` holding decompose(shape, r, size).
void save_reference(const Comm& comm, const std::filesystem::path& dir, StorageFormat format,
                    const std::vector<LeafSpec>& leaves, const Decompose& decompose,
                    TreeSaveOptions options = {}) {
  std::vector<std::vector<std::byte>> buffers;
  ArrayTree tree;
  for (const LeafSpec& leaf : leaves) {
    const Box box = decompose(leaf.shape, comm.rank(), comm.size());
    buffers.push_back(reference_box(leaf.dtype, leaf.shape, box));
    tree.add_array(leaf.path, {.dtype = leaf.dtype,
                               .global_shape = leaf.shape,
                               .box = box,
                               .data = buffers.back().data()});
  }
  options.format = format;
  save_tree(comm, dir, tree, options);
}

// Restores `leaves` into targets of decompose(shape, r, size) prefilled with 0xEE and checks
// that every byte equals the reference.
void expect_restores(const Comm& comm, const std::filesystem::path& dir,
                     const std::vector<LeafSpec>& leaves, const Decompose& decompose,
                     const TreeRestoreOptions& options = {}) {
  std::vector<std::vector<std::byte>> buffers;
  std::vector<Box> boxes;
  ArrayTree target;
  for (const LeafSpec& leaf : leaves) {
    boxes.push_back(decompose(leaf.shape, comm.rank(), comm.size()));
    buffers.emplace_back(bytes_of(leaf.dtype, boxes.back()), std::byte{0xEE});
    target.add_array(leaf.path, {.dtype = leaf.dtype,
                                 .global_shape = leaf.shape,
                                 .box = boxes.back(),
                                 .data = buffers.back().data()});
  }
  restore_tree(comm, dir, target, options);
  for (std::size_t k = 0; k < leaves.size(); ++k) {
    const auto want = reference_box(leaves[k].dtype, leaves[k].shape, boxes[k]);
    EXPECT_TRUE(buffers[k] == want)
        << "leaf '" << leaves[k].path << "' on rank " << comm.rank() << " of " << comm.size()
        << ", box " << to_string(boxes[k]) << ": " << first_difference(buffers[k], want);
  }
}

// The read settings each N->M case runs with: the defaults, checksum chunks and read buffers
// much smaller than a shard (so reads cross chunks and buffers), and no verification.
struct Variant {
  std::string name;
  TreeSaveOptions save;
  TreeRestoreOptions restore;
};

std::vector<Variant> variants() {
  return {
      {"defaults", {}, {}},
      {"chunk64_buffer4096", {.checksum_chunk_bytes = 64}, {.restore_concurrent_bytes = 4096}},
      {"chunk1000_buffer4096", {.checksum_chunk_bytes = 1000}, {.restore_concurrent_bytes = 4096}},
      {"chunk1000_unverified",
       {.checksum_chunk_bytes = 1000},
       {.verify_checksums = false, .restore_concurrent_bytes = 4096}},
  };
}

class Conformance : public ::testing::TestWithParam<StorageFormat> {
 protected:
  [[nodiscard]] StorageFormat format() const { return GetParam(); }

  // Saves kMatrixLeaves on the first n world ranks with `save_as` and restores them on the
  // first m with `restore_as`, once per variant; then verify_tree on the m ranks finds the
  // tree intact.
  void reshard(int n, const Decompose& save_as, int m, const Decompose& restore_as) {
    for (const Variant& v : variants()) {
      SCOPED_TRACE(name_of(format()) + " " + std::to_string(n) + "->" + std::to_string(m) + " " +
                   v.name);
      const auto dir = tmp_ / v.name;
      on_first(n, [&](const Comm& comm) {
        save_reference(comm, dir, format(), kMatrixLeaves, save_as, v.save);
      });
      on_first(m, [&](const Comm& comm) {
        expect_restores(comm, dir, kMatrixLeaves, restore_as, v.restore);
        const TreeVerifyReport report = verify_tree(comm, dir);
        EXPECT_TRUE(report.problems.empty()) << report.problems.front();
        EXPECT_EQ(report.leaves, kMatrixLeaves.size());
      });
    }
  }

  SharedTempDir tmp_;
};

TEST_P(Conformance, EveryDtypeRoundTripsBitIdentical) {
  // One array leaf per dtype (arbitrary bit patterns, valid bytes for bool) and one scalar
  // leaf per dtype holding 3 (1 for bool).
  const std::vector<std::int64_t> shape = {13, 9};
  std::vector<LeafSpec> leaves;
  for (DType dtype : all_dtypes()) {
    leaves.push_back({"arrays/" + std::string(dtype_name(dtype)), dtype, shape});
  }
  const auto dir = tmp_ / "dtypes";
  std::vector<Scalar> scalars;
  for (DType dtype : all_dtypes()) {
    std::vector<std::byte> bytes(dtype_size(dtype));
    const std::int64_t value = dtype == DType::boolean ? 1 : 3;
    convert(DType::int64, &value, dtype, bytes.data(), 1);
    scalars.emplace_back(dtype, bytes.data());
  }
  on_first(world_size(), [&](const Comm& comm) {
    std::vector<std::vector<std::byte>> buffers;
    ArrayTree tree;
    for (const LeafSpec& leaf : leaves) {
      const Box box = block_box(leaf.shape, comm.rank(), comm.size());
      buffers.push_back(reference_box(leaf.dtype, leaf.shape, box));
      tree.add_array(leaf.path, {.dtype = leaf.dtype,
                                 .global_shape = leaf.shape,
                                 .box = box,
                                 .data = buffers.back().data()});
    }
    for (const Scalar& s : scalars) {
      tree.add_scalar("scalars/" + std::string(dtype_name(s.dtype())), s);
    }
    save_tree(comm, dir, tree, {.format = format()});
  });
  on_first(world_size(), [&](const Comm& comm) {
    // Same decomposition, then another one.
    expect_restores(comm, dir, leaves, block_box);
    expect_restores(comm, dir, leaves, slab_box);

    ArrayTree target;
    for (const Scalar& s : scalars) {
      target.add_scalar("scalars/" + std::string(dtype_name(s.dtype())), Scalar(std::int8_t{0}));
    }
    restore_tree(comm, dir, target);
    for (const Scalar& s : scalars) {
      const std::string path = "scalars/" + std::string(dtype_name(s.dtype()));
      EXPECT_TRUE(target.at(path).as_scalar() == s) << "scalar leaf '" << path << "'";
    }

    const ArrayTree back = restore_tree_as_saved(comm, dir, {.whole_arrays = true});
    for (const LeafSpec& leaf : leaves) {
      const ArrayShard& a = back.at(leaf.path).as_array();
      EXPECT_EQ(a.dtype, leaf.dtype) << leaf.path;
      EXPECT_EQ(a.global_shape, leaf.shape) << leaf.path;
      const auto want = reference_box(leaf.dtype, leaf.shape, whole_box(leaf.shape));
      EXPECT_EQ(a.box, whole_box(leaf.shape)) << leaf.path;
      if (a.box != whole_box(leaf.shape)) continue;
      EXPECT_EQ(0, std::memcmp(a.data, want.data(), want.size()))
          << "leaf '" << leaf.path << "' restored as saved differs";
    }
    const TreeVerifyReport report = verify_tree(comm, dir);
    EXPECT_TRUE(report.problems.empty()) << report.problems.front();
    EXPECT_EQ(report.leaves, 2 * all_dtypes().size());
  });
}

TEST_P(Conformance, OneToFour) {
  SKIP_UNLESS_RANKS(4);
  reshard(1, slab_box, 4, block_box);
}

TEST_P(Conformance, FourToOne) {
  SKIP_UNLESS_RANKS(4);
  reshard(4, block_box, 1, whole);
}

TEST_P(Conformance, FourToThree) {
  SKIP_UNLESS_RANKS(4);
  reshard(4, block_box, 3, slab_box);
}

TEST_P(Conformance, ThreeToFour) {
  SKIP_UNLESS_RANKS(4);
  reshard(3, slab_box, 4, block_box);
}

// The decomposition cases run on the whole world: at 4 ranks 2 x 2 blocks against 4 slabs.
TEST_P(Conformance, BlocksToRowSlabs) { reshard(world_size(), block_box, world_size(), slab_box); }

TEST_P(Conformance, RowSlabsToBlocks) { reshard(world_size(), slab_box, world_size(), block_box); }

TEST_P(Conformance, BlocksToColumnSlabs) {
  reshard(world_size(), block_box, world_size(), column_box);
}

TEST_P(Conformance, ColumnSlabsToBlocks) {
  reshard(world_size(), column_box, world_size(), block_box);
}

TEST_P(Conformance, ColumnSlabsToRowSlabsOnFewerRanks) {
  SKIP_UNLESS_RANKS(2);
  reshard(world_size(), column_box, world_size() - 1, slab_box);
}

// Regular grids: in hdf5, one chunk per shard, read back on other decompositions.
TEST_P(Conformance, RegularBlocksToRowSlabsOnThreeAndToOne) {
  SKIP_UNLESS_RANKS(4);
  reshard(4, regular_block_box, 3, slab_box);
  reshard(4, regular_block_box, 1, whole);
}

TEST_P(Conformance, RegularColumnSlabsToBlocks) {
  reshard(world_size(), regular_column_box, world_size(), block_box);
}

TEST_P(Conformance, BlocksToRegularBlocksAndBack) {
  reshard(world_size(), block_box, world_size(), regular_block_box);
  reshard(world_size(), regular_block_box, world_size(), column_box);
}

TEST_P(Conformance, RestoresASubsetOfLeaves) {
  const auto dir = tmp_ / "subset";
  on_first(world_size(), [&](const Comm& comm) {
    const Box box = slab_box(kPlane, comm.rank(), comm.size());
    auto plane = reference_box(DType::float64, kPlane, box);
    const Box cube_box = block_box(kCube, comm.rank(), comm.size());
    auto cube = reference_box(DType::int16, kCube, cube_box);
    ArrayTree tree;
    tree.add_array(
        "fields/plane",
        {.dtype = DType::float64, .global_shape = kPlane, .box = box, .data = plane.data()});
    tree.add_array(
        "fields/cube",
        {.dtype = DType::int16, .global_shape = kCube, .box = cube_box, .data = cube.data()});
    tree.add_scalar("time", Scalar(0.25));
    tree.add_string("run/name", "conformance");
    save_tree(comm, dir, tree, {.format = format()});
  });
  on_first(world_size(), [&](const Comm& comm) {
    // The cube and the time only, in another decomposition.
    const Box box = slab_box(kCube, comm.rank(), comm.size());
    std::vector<std::byte> cube(bytes_of(DType::int16, box), std::byte{0xEE});
    ArrayTree target;
    target.add_array(
        "fields/cube",
        {.dtype = DType::int16, .global_shape = kCube, .box = box, .data = cube.data()});
    target.add_scalar("time", Scalar(-1.0));
    restore_tree(comm, dir, target);
    EXPECT_TRUE(cube == reference_box(DType::int16, kCube, box))
        << "rank " << comm.rank() << " box " << to_string(box);
    EXPECT_EQ(target.at("time").as_scalar().as<double>(), 0.25);
    EXPECT_EQ(target.size(), 2U) << "a partial restore adds no leaves to the target";

    // A leaf that was never saved is refused by name, on every rank, unless optional.
    ArrayTree missing;
    missing.add_scalar("time", Scalar(-1.0));
    missing.add_string("run/absent", "kept");
    try {
      restore_tree(comm, dir, missing);
      ADD_FAILURE() << "expected NotFound for 'run/absent'";
    } catch (const NotFound& e) {
      EXPECT_NE(std::string(e.what()).find("run/absent"), std::string::npos) << e.what();
    }
    restore_tree(comm, dir, missing, {.optional_leaves = {"run/absent"}});
    EXPECT_EQ(missing.at("run/absent").as_string(), "kept");
    EXPECT_EQ(missing.at("time").as_scalar().as<double>(), 0.25);
  });
}

TEST_P(Conformance, RestoresAnInteriorSubBoxOfOneShard) {
  for (const Variant& v : variants()) {
    SCOPED_TRACE(name_of(format()) + " " + v.name);
    const auto dir = tmp_ / v.name;
    on_first(world_size(), [&](const Comm& comm) {
      save_reference(comm, dir, format(), kMatrixLeaves, block_box, v.save);
    });
    on_first(world_size(), [&](const Comm& comm) {
      // Rank r reads the middle of saved shard r: at most 3 elements per dimension, one
      // element in from the shard's edges wherever the shard is wide enough.
      const Decompose interior = [](const std::vector<std::int64_t>& shape, int r, int n) {
        Box box = block_box(shape, r, n);
        for (std::size_t d = 0; d < box.rank(); ++d) {
          if (box.extent[d] >= 3) {
            box.offset[d] += 1;
            box.extent[d] = std::min<std::int64_t>(3, box.extent[d] - 2);
          }
        }
        return box;
      };
      expect_restores(comm, dir, kMatrixLeaves, interior, v.restore);
    });
  }
}

TEST_P(Conformance, CastsWhenAllowed) {
  const auto dir = tmp_ / "casts";
  const std::vector<std::int64_t> shape = kPlane;
  // float32 values that float64 holds exactly.
  const auto f32_value = [&](const Box& box) {
    std::vector<float> out;
    for (std::int64_t i = 0; i < box.extent[0]; ++i) {
      for (std::int64_t j = 0; j < box.extent[1]; ++j) {
        const auto g = (box.offset[0] + i) * shape[1] + box.offset[1] + j;
        out.push_back(0.5f * static_cast<float>(g) - 100.0f);
      }
    }
    return out;
  };
  on_first(world_size(), [&](const Comm& comm) {
    const Box box = slab_box(shape, comm.rank(), comm.size());
    auto i16 = reference_box(DType::int16, shape, box);
    auto f32 = f32_value(box);
    ArrayTree tree;
    tree.add_array("i16",
                   {.dtype = DType::int16, .global_shape = shape, .box = box, .data = i16.data()});
    tree.add_array("f32", ArrayShard::host(f32.data(), shape, box));
    save_tree(comm, dir, tree, {.format = format()});
  });
  on_first(world_size(), [&](const Comm& comm) {
    const Box box = block_box(shape, comm.rank(), comm.size());
    const auto n = static_cast<std::size_t>(volume(box));
    const auto i16_bytes = reference_box(DType::int16, shape, box);
    std::vector<std::int16_t> i16(n);
    std::memcpy(i16.data(), i16_bytes.data(), i16_bytes.size());
    const auto f32 = f32_value(box);

    std::vector<std::int32_t> as_i32(n, -7);
    std::vector<double> as_f64(n, -7.0);
    std::vector<double> f32_as_f64(n, -7.0);
    ArrayTree target;
    target.add_array("i16", ArrayShard::host(as_i32.data(), shape, box));
    restore_tree(comm, dir, target, {.allow_cast = true});
    ArrayTree target2;
    target2.add_array("i16", ArrayShard::host(as_f64.data(), shape, box));
    target2.add_array("f32", ArrayShard::host(f32_as_f64.data(), shape, box));
    restore_tree(comm, dir, target2, {.restore_concurrent_bytes = 4096, .allow_cast = true});
    for (std::size_t k = 0; k < n; ++k) {
      EXPECT_EQ(as_i32[k], i16[k]) << "int16 -> int32, element " << k << " of " << to_string(box);
      EXPECT_EQ(as_f64[k], i16[k]) << "int16 -> float64, element " << k << " of " << to_string(box);
      EXPECT_EQ(f32_as_f64[k], static_cast<double>(f32[k]))
          << "float32 -> float64, element " << k << " of " << to_string(box);
    }

    // int16 values outside int8's range: the cast is refused, naming the leaf, on every rank.
    std::vector<std::int8_t> as_i8(n);
    ArrayTree narrow;
    narrow.add_array("i16", ArrayShard::host(as_i8.data(), shape, box));
    try {
      restore_tree(comm, dir, narrow, {.allow_cast = true});
      ADD_FAILURE() << "expected InvalidArgument for int16 values that int8 cannot hold";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("i16"), std::string::npos) << e.what();
    }
  });
}

TEST_P(Conformance, CastWithoutAllowCastIsRefused) {
  const auto dir = tmp_ / "nocast";
  const std::vector<LeafSpec> saved = {{"counts", DType::int16, kPlane}};
  on_first(world_size(),
           [&](const Comm& comm) { save_reference(comm, dir, format(), saved, slab_box); });
  on_first(world_size(), [&](const Comm& comm) {
    const Box box = block_box(kPlane, comm.rank(), comm.size());
    const auto n = static_cast<std::size_t>(volume(box));
    std::vector<std::int32_t> as_i32(n, -7);
    ArrayTree target;
    target.add_array("counts", ArrayShard::host(as_i32.data(), kPlane, box));
    try {
      restore_tree(comm, dir, target);
      ADD_FAILURE() << "expected InvalidArgument: int16 saved, int32 target, no allow_cast";
    } catch (const InvalidArgument& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("'counts'"), std::string::npos) << message;
      EXPECT_NE(message.find("int16"), std::string::npos) << message;
      EXPECT_NE(message.find("int32"), std::string::npos) << message;
    }
    EXPECT_TRUE(std::all_of(as_i32.begin(), as_i32.end(), [](std::int32_t x) { return x == -7; }))
        << "a refused restore wrote into the target";

    // float32 into float64 is refused just the same.
    const std::vector<std::int64_t> shape = {5};
    std::vector<float> f = {1, 2, 3, 4, 5};
    ArrayTree tree;
    tree.add_array("f", ArrayShard::host(f.data(), shape, {}, true));
    save_tree(comm, tmp_ / "nocast_f32", tree, {.format = format()});
    std::vector<double> d(5, -7.0);
    ArrayTree wide;
    wide.add_array("f", ArrayShard::host(d.data(), shape, {}, true));
    EXPECT_THROW(restore_tree(comm, tmp_ / "nocast_f32", wide), InvalidArgument);
    restore_tree(comm, tmp_ / "nocast_f32", wide, {.allow_cast = true});
    EXPECT_EQ(d, (std::vector<double>{1, 2, 3, 4, 5}));
  });
}

TEST_P(Conformance, ReplicatedLeavesRestoreWholeOnEveryRank) {
  // Saved replicated on the first n ranks, restored whole on the first m, both ways round.
  const std::vector<std::int64_t> shape = {9, 4};
  const std::vector<std::pair<int, int>> counts = {{std::min(2, world_size()), world_size()},
                                                   {world_size(), 1}};
  for (auto [n, m] : counts) {
    SCOPED_TRACE(name_of(format()) + " replicated " + std::to_string(n) + "->" + std::to_string(m));
    const auto dir = tmp_ / ("replicated_" + std::to_string(n) + "_" + std::to_string(m));
    const auto all = reference_box(DType::complex64, shape, whole_box(shape));
    on_first(n, [&](const Comm& comm) {
      auto mine = all;
      ArrayTree tree;
      tree.add_array("table", {.dtype = DType::complex64,
                               .global_shape = shape,
                               .data = mine.data(),
                               .replicated = true});
      save_tree(comm, dir, tree, {.format = format()});
      const SavedTreeInfo info = read_tree_info(comm, dir);
      ASSERT_EQ(info.leaves.size(), 1U);
      EXPECT_TRUE(info.leaves[0].replicated);
      EXPECT_EQ(info.leaves[0].shard_count, 1U) << "a replicated leaf is written once";
    });
    on_first(m, [&](const Comm& comm) {
      for (bool broadcast : {false, true}) {
        for (bool replicated_target : {true, false}) {
          std::vector<std::byte> out(all.size(), std::byte{0xEE});
          ArrayTree target;
          target.add_array("table", {.dtype = DType::complex64,
                                     .global_shape = shape,
                                     .data = out.data(),
                                     .replicated = replicated_target});
          restore_tree(comm, dir, target, {.load_and_broadcast = broadcast});
          EXPECT_TRUE(out == all) << "rank " << comm.rank() << " load_and_broadcast=" << broadcast
                                  << " replicated target=" << replicated_target << ": "
                                  << first_difference(out, all);
        }
      }
      const ArrayTree back = restore_tree_as_saved(comm, dir);
      const ArrayShard& table = back.at("table").as_array();
      EXPECT_TRUE(table.replicated);
      ASSERT_EQ(table.box, whole_box(shape));
      EXPECT_EQ(0, std::memcmp(table.data, all.data(), all.size())) << "rank " << comm.rank();
    });
  }
}

TEST_P(Conformance, RestoresIntoStridedViewsAcrossAReshard) {
  // Saved as blocks on the world, restored as slabs on one rank fewer (the world when it has
  // one rank) into two views: the box inside a buffer with a halo of 1 row and 2 columns, and
  // the box stored column-major (a transposed view).
  const int m = std::max(1, world_size() - 1);
  for (const Variant& v : variants()) {
    SCOPED_TRACE(name_of(format()) + " " + v.name);
    const auto dir = tmp_ / v.name;
    const std::vector<LeafSpec> leaves = {{"u", DType::float64, kPlane}};
    on_first(world_size(), [&](const Comm& comm) {
      save_reference(comm, dir, format(), leaves, block_box, v.save);
    });
    on_first(m, [&](const Comm& comm) {
      const Box box = slab_box(kPlane, comm.rank(), comm.size());
      const std::int64_t rows = box.extent[0];
      const std::int64_t cols = box.extent[1];
      const std::int64_t padded = cols + 4;
      std::vector<double> halo(static_cast<std::size_t>((rows + 2) * padded), -1.0);
      std::vector<double> transposed(static_cast<std::size_t>(rows * cols), -1.0);
      ArrayTree target;
      target.add_array("u", {.dtype = DType::float64,
                             .global_shape = kPlane,
                             .box = box,
                             .data = halo.data() + padded + 2,
                             .strides = {padded, 1}});
      restore_tree(comm, dir, target, v.restore);
      ArrayTree target_t;
      target_t.add_array("u", {.dtype = DType::float64,
                               .global_shape = kPlane,
                               .box = box,
                               .data = transposed.data(),
                               .strides = {1, rows}});
      restore_tree(comm, dir, target_t, v.restore);

      const auto want_bytes = reference_box(DType::float64, kPlane, box);
      std::vector<double> want(static_cast<std::size_t>(rows * cols));
      std::memcpy(want.data(), want_bytes.data(), want_bytes.size());
      std::size_t wrong_inside = 0;
      std::size_t wrong_halo = 0;
      std::size_t wrong_transposed = 0;
      for (std::int64_t i = -1; i <= rows; ++i) {
        for (std::int64_t j = -2; j < cols + 2; ++j) {
          const double got = halo[static_cast<std::size_t>((i + 1) * padded + j + 2)];
          const bool inside = i >= 0 && i < rows && j >= 0 && j < cols;
          if (!inside) {
            wrong_halo += got == -1.0 ? 0 : 1;
            continue;
          }
          const double expected = want[static_cast<std::size_t>(i * cols + j)];
          wrong_inside += std::memcmp(&got, &expected, sizeof got) == 0 ? 0 : 1;
          const double t = transposed[static_cast<std::size_t>(j * rows + i)];
          wrong_transposed += std::memcmp(&t, &expected, sizeof t) == 0 ? 0 : 1;
        }
      }
      EXPECT_EQ(wrong_inside, 0U) << "rank " << comm.rank() << " box " << to_string(box);
      EXPECT_EQ(wrong_halo, 0U) << "the restore wrote outside the view, rank " << comm.rank();
      EXPECT_EQ(wrong_transposed, 0U) << "rank " << comm.rank() << " box " << to_string(box);
    });
  }
}

// The cases this binary was registered for (CAIRN_CONFORMANCE_FORMATS, from CMake) are the
// formats the library reports: a format registered but missing would run no case at all.
TEST(ConformanceSetup, RegisteredFormatsAreTheAvailableOnes) {
  std::string available;
  for (StorageFormat format : available_formats()) {
    available += (available.empty() ? "" : ",") + name_of(format);
  }
  EXPECT_EQ(available, CAIRN_CONFORMANCE_FORMATS);
}

INSTANTIATE_TEST_SUITE_P(Formats, Conformance, ::testing::ValuesIn(available_formats()),
                         [](const ::testing::TestParamInfo<StorageFormat>& info) {
                           return name_of(info.param);
                         });

}  // namespace
}  // namespace cairn::testing
