// save_tree / restore_tree: round trips of every dtype, N->M restores, partial restores,
// casts, replicated leaves and validation errors, for both formats.
#include <cairn/storage.hpp>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "storage/index/binary.hpp"
#include "storage/storage_test_util.hpp"
#include "support/test_support.hpp"

using namespace cairn;
using cairn::testing::available_formats;
using cairn::testing::block_box;
using cairn::testing::first_ranks;
using cairn::testing::reference_box;
using cairn::testing::SharedTempDir;
using cairn::testing::slab_box;
using cairn::testing::world_rank;
using cairn::testing::world_size;

namespace {

const std::vector<std::int64_t> kShape = {13, 10};

// Saves the reference array `leaf` of `dtype` on the first `n` world ranks with `decompose`.
template <class Decompose>
void save_reference(const std::filesystem::path& dir, StorageFormat format, int n, DType dtype,
                    Decompose decompose, const std::vector<std::int64_t>& shape = kShape) {
  auto comm = first_ranks(n);
  if (comm) {
    const Box box = decompose(shape, comm->rank(), comm->size());
    auto data = reference_box(dtype, shape, box);
    ArrayTree tree;
    tree.add_array("fields/u",
                   {.dtype = dtype, .global_shape = shape, .box = box, .data = data.data()});
    save_tree(*comm, dir, tree, {.format = format});
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// Restores on the first `m` world ranks with `decompose` and checks the bytes.
template <class Decompose>
void check_restore(const std::filesystem::path& dir, int m, DType dtype, Decompose decompose,
                   bool verify = true, const std::vector<std::int64_t>& shape = kShape) {
  auto comm = first_ranks(m);
  if (comm) {
    const Box box = decompose(shape, comm->rank(), comm->size());
    std::vector<std::byte> out(static_cast<std::size_t>(volume(box)) * dtype_size(dtype),
                               std::byte{0xEE});
    ArrayTree target;
    target.add_array("fields/u",
                     {.dtype = dtype, .global_shape = shape, .box = box, .data = out.data()});
    restore_tree(*comm, dir, target, {.verify_checksums = verify});
    EXPECT_EQ(out, reference_box(dtype, shape, box))
        << "rank " << comm->rank() << " of " << m << " box " << to_string(box);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace

TEST(Storage, EveryDtypeRoundTripsInBothFormats) {
  SharedTempDir tmp;
  for (StorageFormat format : available_formats()) {
    for (DType dtype : all_dtypes()) {
      SCOPED_TRACE(std::string(storage_format_name(format)) + " " + std::string(dtype_name(dtype)));
      const auto dir =
          tmp / (std::string(storage_format_name(format)) + "_" + std::string(dtype_name(dtype)));
      save_reference(dir, format, world_size(), dtype, block_box);
      check_restore(dir, world_size(), dtype, block_box);
    }
  }
}

TEST(Storage, RestoresWithAnyNumberOfRanksAndDecomposition) {
  // Every pair of the matrix needs a second rank on one side at least.
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  SharedTempDir tmp;
  int pairs = 0;
  const std::vector<std::pair<int, int>> matrix = {{1, 4}, {4, 1}, {4, 3}, {3, 4},
                                                   {2, 3}, {1, 2}, {2, 1}};
  for (StorageFormat format : available_formats()) {
    for (auto [n, m] : matrix) {
      if (n > world_size() || m > world_size()) continue;
      for (bool verify : {true, false}) {
        SCOPED_TRACE(::testing::Message() << storage_format_name(format) << " " << n << "->" << m
                                          << " verify=" << verify);
        const auto dir = tmp / ::testing::PrintToString(std::make_tuple(
                                   std::string(storage_format_name(format)), n, m, verify));
        // 2-D blocks saved, 1-D slabs restored, and the other way round.
        save_reference(dir / "block", format, n, DType::float64, block_box);
        check_restore(dir / "block", m, DType::float64, slab_box, verify);
        save_reference(dir / "slab", format, n, DType::int32, slab_box);
        check_restore(dir / "slab", m, DType::int32, block_box, verify);
        ++pairs;
      }
    }
  }
  // 2 ranks: 1->2 and 2->1; 4 ranks: every pair.
  EXPECT_GE(pairs, 2 * static_cast<int>(available_formats().size()));
}

TEST(Storage, ThreeDimensionalAndZeroDimensionalArrays) {
  SharedTempDir tmp;
  const std::vector<std::int64_t> cube = {5, 4, 3};
  for (StorageFormat format : available_formats()) {
    const auto dir = tmp / std::string(storage_format_name(format));
    save_reference(dir, format, world_size(), DType::uint16, slab_box, cube);
    check_restore(dir, world_size(), DType::uint16, block_box, true, cube);

    Comm comm(MPI_COMM_WORLD);
    double scalar_array = 42.5;
    ArrayTree tree;
    tree.add_array(
        "zero_d",
        {.dtype = DType::float64, .global_shape = {}, .data = &scalar_array, .replicated = true});
    save_tree(comm, dir / "zero", tree, {.format = format});
    double back = 0;
    ArrayTree target;
    target.add_array(
        "zero_d", {.dtype = DType::float64, .global_shape = {}, .data = &back, .replicated = true});
    restore_tree(comm, dir / "zero", target);
    EXPECT_EQ(back, 42.5);
  }
}

TEST(Storage, ValuesAndPartialRestore) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  for (StorageFormat format : available_formats()) {
    const auto dir = tmp / std::string(storage_format_name(format));
    const Box box = slab_box(kShape, comm.rank(), comm.size());
    auto u = reference_box(DType::float32, kShape, box);
    auto v = reference_box(DType::int64, kShape, box);
    ArrayTree tree;
    tree.add_array("u",
                   {.dtype = DType::float32, .global_shape = kShape, .box = box, .data = u.data()});
    tree.add_array("v",
                   {.dtype = DType::int64, .global_shape = kShape, .box = box, .data = v.data()});
    tree.add_scalar("time", Scalar(0.125));
    tree.add_scalar("step", Scalar(std::int32_t{17}));
    tree.add_string("run/name", "heat 2d");
    tree.add_json("run/config", boost::json::value{{"nx", 13}, {"scheme", "ftcs"}});
    save_tree(comm, dir, tree, {.format = format});

    // Only "v" and two values; "u" is never touched.
    std::vector<std::byte> v_out(v.size());
    ArrayTree target;
    target.add_array(
        "v", {.dtype = DType::int64, .global_shape = kShape, .box = box, .data = v_out.data()});
    target.add_scalar("time", Scalar(0.0));
    target.add_json("run/config", nullptr);
    target.add_string("run/missing", "default");
    restore_tree(comm, dir, target, {.optional_leaves = {"run/missing"}});
    EXPECT_EQ(v_out, v);
    EXPECT_EQ(target.at("time").as_scalar().as<double>(), 0.125);
    EXPECT_EQ(target.at("run/config").as_json().at("scheme").as_string(), "ftcs");
    EXPECT_EQ(target.at("run/missing").as_string(), "default");

    // A missing leaf that is not optional names the leaf, on every rank.
    ArrayTree missing;
    missing.add_scalar("nope", Scalar(1));
    try {
      restore_tree(comm, dir, missing);
      ADD_FAILURE() << "expected NotFound";
    } catch (const NotFound& e) {
      EXPECT_NE(std::string(e.what()).find("'nope'"), std::string::npos) << e.what();
    }

    // As saved: every rank gets its own boxes back, or everything whole.
    const ArrayTree mine = restore_tree_as_saved(comm, dir);
    const ArrayShard& u_back = mine.at("u").as_array();
    EXPECT_EQ(u_back.box, box);
    EXPECT_EQ(0, std::memcmp(u_back.data, u.data(), u.size()));
    EXPECT_EQ(mine.at("run/name").as_string(), "heat 2d");
    EXPECT_EQ(mine.at("step").as_scalar().as<int>(), 17);
    const ArrayTree whole =
        restore_tree_as_saved(comm, dir, {.whole_arrays = true, .select = {"v"}});
    EXPECT_FALSE(whole.contains("u"));
    const auto all_v = reference_box(DType::int64, kShape, whole_box(kShape));
    EXPECT_EQ(0, std::memcmp(whole.at("v").as_array().data, all_v.data(), all_v.size()));

    const SavedTreeInfo info = read_tree_info(comm, dir);
    EXPECT_EQ(info.world_size, comm.size());
    ASSERT_EQ(info.leaves.size(), 6u);
    EXPECT_EQ(info.leaves[0].path, "run/config");
    EXPECT_EQ(info.leaves[2].path, "step");
    EXPECT_EQ(info.leaves[4].shard_count, static_cast<std::size_t>(comm.size()));
  }
}

TEST(Storage, CastOnRestoreOnlyWhenAsked) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  for (StorageFormat format : available_formats()) {
    const auto dir = tmp / std::string(storage_format_name(format));
    const Box box = slab_box(kShape, comm.rank(), comm.size());
    std::vector<double> u(static_cast<std::size_t>(volume(box)));
    for (std::size_t i = 0; i < u.size(); ++i) u[i] = 0.5 * static_cast<double>(i) + box.offset[0];
    ArrayTree tree;
    tree.add_array("u", ArrayShard::host(u.data(), kShape, box));
    save_tree(comm, dir, tree, {.format = format});

    const Box other = block_box(kShape, comm.rank(), comm.size());
    std::vector<float> out(static_cast<std::size_t>(volume(other)));
    ArrayTree target;
    target.add_array("u", ArrayShard::host(out.data(), kShape, other));
    EXPECT_THROW(restore_tree(comm, dir, target), InvalidArgument);
    restore_tree(comm, dir, target, {.allow_cast = true});
    // Compare with the float64 reference restored without a cast.
    std::vector<double> exact(out.size());
    ArrayTree exact_target;
    exact_target.add_array("u", ArrayShard::host(exact.data(), kShape, other));
    restore_tree(comm, dir, exact_target);
    for (std::size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], static_cast<float>(exact[i]));
  }
}

TEST(Storage, ReplicatedLeavesAreWrittenOnce) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  for (StorageFormat format : available_formats()) {
    const auto dir = tmp / std::string(storage_format_name(format));
    std::vector<std::int64_t> table = {1, 2, 3, 4, 5};
    ArrayTree tree;
    tree.add_array("table", ArrayShard::host(table.data(), {5}, {}, true));
    save_tree(comm, dir, tree, {.format = format});
    const SavedTreeInfo info = read_tree_info(comm, dir);
    ASSERT_EQ(info.leaves.size(), 1u);
    EXPECT_EQ(info.leaves[0].shard_count, 1u);
    EXPECT_EQ(info.leaves[0].bytes, 5 * sizeof(std::int64_t));
    const ArrayTree back = restore_tree_as_saved(comm, dir);
    EXPECT_EQ(0, std::memcmp(back.at("table").as_array().data, table.data(), 40));
  }
}

TEST(Storage, InvalidLayoutsThrowOnEveryRankAndWriteNothing) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  std::vector<double> data(static_cast<std::size_t>(volume(kShape)), 1.0);
  const Box mine = slab_box(kShape, comm.rank(), comm.size());

  // Overlap: the last rank claims rank 0's rows too.
  Box overlapping = mine;
  if (comm.rank() == comm.size() - 1) overlapping = whole_box(kShape);
  ArrayTree a;
  a.add_array("u", ArrayShard::host(data.data(), kShape, overlapping));
  try {
    save_tree(comm, tmp / "overlap", a);
    ADD_FAILURE() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'u'"), std::string::npos) << e.what();
  }

  // Holes: rank 0 contributes nothing.
  ArrayTree b;
  Box empty{{0, 0}, {0, 0}};
  b.add_array("u", ArrayShard::host(data.data(), kShape, comm.rank() == 0 ? empty : mine));
  EXPECT_THROW(save_tree(comm, tmp / "holes", b), InvalidArgument);
  // ... which sparse saves allow: read as saved, the hole (rank 0's rows) is zeros and the
  // rest is what the other ranks wrote.
  ASSERT_NO_THROW(save_tree(comm, tmp / "sparse", b, {.allow_sparse = true}));
  {
    const ArrayTree saved = restore_tree_as_saved(comm, tmp / "sparse", {.whole_arrays = true});
    const ArrayShard& whole = saved.at("u").as_array();
    ASSERT_EQ(volume(whole.box), volume(kShape));
    const auto* back = static_cast<const double*>(whole.data);
    const Box hole = slab_box(kShape, 0, comm.size());
    for (std::int64_t row = 0; row < kShape[0]; ++row) {
      const bool in_hole = row >= hole.offset[0] && row < hole.offset[0] + hole.extent[0];
      for (std::int64_t col = 0; col < kShape[1]; ++col) {
        EXPECT_EQ(back[static_cast<std::size_t>(row * kShape[1] + col)], in_hole ? 0.0 : 1.0)
            << "row " << row << " col " << col << (in_hole ? " (in the hole)" : "");
      }
    }
  }

  // Disagreeing dtypes across ranks.
  std::vector<float> f(data.size());
  ArrayTree c;
  if (comm.rank() == 1) {
    c.add_array("u", ArrayShard::host(f.data(), kShape, mine));
  } else {
    c.add_array("u", ArrayShard::host(data.data(), kShape, mine));
  }
  EXPECT_THROW(save_tree(comm, tmp / "dtype", c), CollectiveMismatch);

  // Rank 1 alone marks the array a Fortran (column-major) one.
  ArrayTree d;
  ArrayShard shard = ArrayShard::host(data.data(), kShape, mine);
  shard.fortran_order = comm.rank() == 1;
  d.add_array("u", shard);
  try {
    save_tree(comm, tmp / "order", d);
    ADD_FAILURE() << "expected CollectiveMismatch";
  } catch (const CollectiveMismatch& e) {
    EXPECT_EQ(e.rank(), 1) << e.what();
    EXPECT_EQ(e.field(), "fortran_order") << e.what();
    EXPECT_NE(std::string(e.what()).find("'u'"), std::string::npos) << e.what();
  }

  comm.barrier("checked");
  for (const char* name : {"overlap", "holes", "dtype", "order"}) {
    EXPECT_FALSE(std::filesystem::exists(tmp / name)) << name << " was created";
  }
}

TEST(Storage, FortranOrderIsRecordedAndReturnedAsSaved) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  for (StorageFormat format : available_formats()) {
    const auto dir = tmp / std::string(storage_format_name(format));
    const Box box = slab_box(kShape, comm.rank(), comm.size());
    auto f = reference_box(DType::float64, kShape, box);
    auto c = reference_box(DType::float64, kShape, box);
    ArrayTree tree;
    tree.add_array("fields/u", {.dtype = DType::float64,
                                .global_shape = kShape,
                                .box = box,
                                .data = f.data(),
                                .fortran_order = true});
    tree.add_array("g",
                   {.dtype = DType::float64, .global_shape = kShape, .box = box, .data = c.data()});
    save_tree(comm, dir, tree, {.format = format});

    if (comm.is_primary()) {
      std::ifstream in(dir / "cairn-tree.json");
      const std::string text((std::istreambuf_iterator<char>(in)), {});
      const auto json = boost::json::parse(text);
      for (const auto& leaf : json.at("leaves").as_array()) {
        EXPECT_EQ(leaf.at("order"), leaf.at("path") == "fields/u" ? "F" : "C") << leaf;
      }
    }
    const SavedTreeInfo info = read_tree_info(comm, dir);
    ASSERT_EQ(info.leaves.size(), 2u);
    EXPECT_EQ(info.leaves[0].path, "fields/u");
    EXPECT_TRUE(info.leaves[0].fortran_order);
    EXPECT_FALSE(info.leaves[1].fortran_order);

    const ArrayTree back = restore_tree_as_saved(comm, dir);
    EXPECT_TRUE(back.at("fields/u").as_array().fortran_order);
    EXPECT_FALSE(back.at("g").as_array().fortran_order);
    EXPECT_EQ(back.at("fields/u").as_array().global_shape, kShape) << "stored in C order";
    // A C target (no flag) gets the Fortran array's bytes unchanged.
    check_restore(dir, world_size(), DType::float64, block_box);
  }
}

TEST(Storage, OutOfRangeBoxIsRejectedBeforeSaving) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  std::vector<double> data(200, 0.0);
  ArrayTree tree;
  EXPECT_THROW(tree.add_array("u", ArrayShard::host(data.data(), kShape, Box{{10, 0}, {5, 10}})),
               InvalidArgument);
}

TEST(Storage, DamagedFilesGiveErrorsNamingFileAndLeaf) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  for (StorageFormat format : available_formats()) {
    const auto dir = tmp / std::string(storage_format_name(format));
    save_reference(dir, format, world_size(), DType::float64, slab_box);

    // Flip one byte in the middle of rank 0's shard, in the file the index names for it: at
    // its byte_offset plus 8, or, in data.h5, where its first element's bytes are.
    const storage::ShardRecord shard =
        storage::read_full_index(dir).find("fields/u")->shards.front();
    if (comm.is_primary()) {
      const auto file = dir / shard.file;
      std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
      auto at = static_cast<std::streamoff>(shard.byte_offset + 8);
      if (format == StorageFormat::hdf5) {
        // Find the data: the first 8 reference bytes of element 0.
        const auto first = reference_box(DType::float64, kShape, Box{{0, 0}, {1, 1}});
        std::string content((std::istreambuf_iterator<char>(f)), {});
        at = static_cast<std::streamoff>(
            content.find(std::string(reinterpret_cast<const char*>(first.data()), 8)));
        ASSERT_NE(at, static_cast<std::streamoff>(std::string::npos));
        f.clear();
      }
      f.seekg(at);
      char c = 0;
      f.read(&c, 1);
      c = static_cast<char>(c ^ 0x10);
      f.seekp(at);
      f.write(&c, 1);
    }
    comm.barrier("flipped");
    std::vector<double> out(static_cast<std::size_t>(volume(whole_box(kShape))));
    ArrayTree target;
    target.add_array("fields/u", ArrayShard::host(out.data(), kShape));  // whole array everywhere
    try {
      restore_tree(comm, dir, target);
      ADD_FAILURE() << "expected FormatError";
    } catch (const FormatError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("checksum mismatch"), std::string::npos) << message;
      EXPECT_NE(message.find("fields/u"), std::string::npos) << message;
      EXPECT_NE(message.find(shard.file), std::string::npos) << message;
    }

    // Truncated index.
    if (comm.is_primary()) std::filesystem::resize_file(dir / "cairn-tree.json", 40);
    comm.barrier("truncated");
    try {
      restore_tree(comm, dir, target);
      ADD_FAILURE() << "expected FormatError";
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("cairn-tree.json"), std::string::npos) << e.what();
    }
  }
}

TEST(Storage, LoadAndBroadcastReadsReplicatedLeavesOnThePrimary) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const Box whole = whole_box(kShape);
  const Box mine = slab_box(kShape, comm.rank(), comm.size());
  for (StorageFormat format : available_formats()) {
    SCOPED_TRACE(std::string(storage_format_name(format)));
    const auto dir = tmp / std::string(storage_format_name(format));
    auto weights = reference_box(DType::float32, kShape, whole);
    auto field = reference_box(DType::int64, kShape, mine);
    ArrayTree tree;
    tree.add_array("weights", {.dtype = DType::float32,
                               .global_shape = kShape,
                               .data = weights.data(),
                               .replicated = true});
    tree.add_array(
        "field",
        {.dtype = DType::int64, .global_shape = kShape, .box = mine, .data = field.data()});
    save_tree(comm, dir, tree, {.format = format});

    std::vector<std::byte> weights_back(weights.size(), std::byte{0xEE});
    std::vector<std::byte> field_back(field.size(), std::byte{0xEE});
    ArrayTree target;
    target.add_array("weights", {.dtype = DType::float32,
                                 .global_shape = kShape,
                                 .data = weights_back.data(),
                                 .replicated = true});
    target.add_array(
        "field",
        {.dtype = DType::int64, .global_shape = kShape, .box = mine, .data = field_back.data()});
    restore_tree(comm, dir, target, {.load_and_broadcast = true});
    EXPECT_EQ(weights_back, weights);
    EXPECT_EQ(field_back, field);
  }
}

TEST(Storage, StridedViewsAreSavedRunByRun) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const int n = comm.size();
  const int r = comm.rank();
  // Staging runs of 4 KiB (512 float64): "rows" takes slabs of 12 rows of 40 elements;
  // "long" has rows of 1200 elements that do not fit, so its runs cut each row.
  const std::vector<std::int64_t> rows_shape = {64, 40};
  const std::vector<std::int64_t> long_shape = {3, 1200};
  const Box rows_box = slab_box(rows_shape, r, n);
  const Box long_box{{0, 1200 * r / n}, {3, 1200 * (r + 1) / n - 1200 * r / n}};
  // Even ranks save from column-major views with a padding element after each column, odd
  // ranks from row-major buffers: the ranks stream different numbers of runs.
  const auto view_of = [&](const std::vector<std::byte>& dense, const Box& box) {
    const std::vector<std::int64_t> strides = {1, box.extent[0] + 1};
    std::vector<std::byte> view(static_cast<std::size_t>(box.extent[1] * strides[1]) * 8,
                                std::byte{0xEE});
    unpack_strided(8, dense.data(), box.extent, strides, view.data());
    return std::make_pair(std::move(view), strides);
  };
  for (StorageFormat format : available_formats()) {
    SCOPED_TRACE(std::string(storage_format_name(format)));
    const auto dir = tmp / std::string(storage_format_name(format));
    auto rows = reference_box(DType::float64, rows_shape, rows_box);
    auto lines = reference_box(DType::float64, long_shape, long_box);
    auto [rows_view, rows_strides] = view_of(rows, rows_box);
    auto [long_view, long_strides] = view_of(lines, long_box);
    const bool strided = r % 2 == 0;
    ArrayTree tree;
    tree.add_array("rows", {.global_shape = rows_shape,
                            .box = rows_box,
                            .data = strided ? rows_view.data() : rows.data(),
                            .strides = strided ? rows_strides : std::vector<std::int64_t>{}});
    tree.add_array("long", {.global_shape = long_shape,
                            .box = long_box,
                            .data = strided ? long_view.data() : lines.data(),
                            .strides = strided ? long_strides : std::vector<std::int64_t>{}});
    save_tree(comm, dir, tree, {.format = format, .io_buffer_bytes = 8192});

    // The checksums of the streamed runs are those of the whole shards.
    const TreeVerifyReport report = verify_tree(comm, dir);
    EXPECT_TRUE(report.problems.empty()) << report.problems.front();
    EXPECT_EQ(report.shards, 2U * static_cast<std::size_t>(n));

    std::vector<std::byte> rows_back(static_cast<std::size_t>(volume(rows_shape)) * 8);
    std::vector<std::byte> long_back(static_cast<std::size_t>(volume(long_shape)) * 8);
    ArrayTree target;
    target.add_array("rows",
                     {.global_shape = rows_shape, .data = rows_back.data(), .replicated = true});
    target.add_array("long",
                     {.global_shape = long_shape, .data = long_back.data(), .replicated = true});
    restore_tree(comm, dir, target);
    EXPECT_EQ(rows_back, reference_box(DType::float64, rows_shape, whole_box(rows_shape)));
    EXPECT_EQ(long_back, reference_box(DType::float64, long_shape, whole_box(long_shape)));
  }
}

TEST(Storage, StridedViewsAreRestoredInPlace) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  constexpr std::size_t kElem = 8;  // float64
  const Box whole = whole_box(kShape);
  const Box mine = slab_box(kShape, comm.rank(), comm.size());
  // A column-major view of `box` with one padding element after each column: strides
  // (1, extent[0] + 1). Returns the buffer (padding 0xEE) and the strides.
  const auto column_major = [](const Box& box) {
    const std::vector<std::int64_t> strides = {1, box.extent[0] + 1};
    return std::make_pair(
        std::vector<std::byte>(static_cast<std::size_t>(box.extent[1] * strides[1]) * kElem,
                               std::byte{0xEE}),
        strides);
  };
  // Element (i, j) of the view holds element (i, j) of the row-major `expected`, and the
  // padding is untouched.
  const auto check_view = [&](const std::vector<std::byte>& view, const Box& box,
                              const std::vector<std::int64_t>& strides,
                              const std::vector<std::byte>& expected) {
    for (std::int64_t i = 0; i < box.extent[0]; ++i) {
      for (std::int64_t j = 0; j < box.extent[1]; ++j) {
        const auto at = static_cast<std::size_t>(i * strides[0] + j * strides[1]) * kElem;
        const auto want = static_cast<std::size_t>(i * box.extent[1] + j) * kElem;
        ASSERT_EQ(0, std::memcmp(view.data() + at, expected.data() + want, kElem))
            << "element (" << i << ", " << j << ") of box " << to_string(box);
      }
      const auto pad = static_cast<std::size_t>(box.extent[0]) * kElem;
      for (std::int64_t j = 0; j < box.extent[1] && box.extent[0] > 0; ++j) {
        const auto at = static_cast<std::size_t>(j * strides[1]) * kElem + pad;
        ASSERT_EQ(view[at], std::byte{0xEE}) << "padding after column " << j;
      }
    }
  };
  for (StorageFormat format : available_formats()) {
    SCOPED_TRACE(std::string(storage_format_name(format)));
    const auto dir = tmp / std::string(storage_format_name(format));
    // Saved from row-major blocks; restored into strided slabs, with the replicated leaf
    // read by the primary and broadcast.
    const Box saved = block_box(kShape, comm.rank(), comm.size());
    auto field = reference_box(DType::float64, kShape, saved);
    auto weights = reference_box(DType::float64, kShape, whole);
    ArrayTree tree;
    tree.add_array("field", {.global_shape = kShape, .box = saved, .data = field.data()});
    tree.add_array("weights", {.global_shape = kShape, .data = weights.data(), .replicated = true});
    save_tree(comm, dir, tree, {.format = format});

    for (bool broadcast : {false, true}) {
      SCOPED_TRACE(broadcast ? "load_and_broadcast" : "every rank reads");
      auto [field_view, field_strides] = column_major(mine);
      auto [weights_view, weights_strides] = column_major(whole);
      ArrayTree target;
      target.add_array("field", {.global_shape = kShape,
                                 .box = mine,
                                 .data = field_view.data(),
                                 .strides = field_strides});
      target.add_array("weights", {.global_shape = kShape,
                                   .data = weights_view.data(),
                                   .strides = weights_strides,
                                   .replicated = true});
      restore_tree(comm, dir, target, {.load_and_broadcast = broadcast});
      check_view(field_view, mine, field_strides, reference_box(DType::float64, kShape, mine));
      check_view(weights_view, whole, weights_strides, weights);
    }

    // A view whose elements overlap cannot be a restore target: an error on every rank.
    std::vector<double> one(static_cast<std::size_t>(mine.extent[1]));
    ArrayTree overlapping;
    overlapping.add_array(
        "field", {.global_shape = kShape, .box = mine, .data = one.data(), .strides = {0, 1}});
    try {
      restore_tree(comm, dir, overlapping);
      ADD_FAILURE() << "restoring into a view with stride 0 did not throw";
    } catch (const InvalidArgument& e) {
      if (mine.extent[0] > 1) {
        EXPECT_NE(std::string(e.what()).find("stride of dimension 0 is 0"), std::string::npos)
            << e.what();
      }
    }
  }
}
