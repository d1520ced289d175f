// Compressed and explicitly chunked hdf5 datasets: zstd round trips exactly and restores N->M
// into other decompositions, the chunk shape asked for is the dataset's (read back with the
// HDF5 API), a bad one fails on every rank, uncompressed leaves stay contiguous, compressible
// data takes less space, and cairn's own chunk choice follows the decomposition (zfp:
// test_hdf5_zfp.cpp). With CAIRN_SAMPLE_DIR set, the round trip also leaves its data.h5 there
// for h5py_zstd_test.sh.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cairn/checkpointer.hpp>
#include <cairn/config.hpp>
#include <cairn/error.hpp>
#include <cairn/handlers.hpp>
#include <cairn/storage.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "storage/format/hdf5/compression.hpp"
#include "storage/format/hdf5/zstd_filter.hpp"
#include "storage/storage_test_util.hpp"
#include "support/test_support.hpp"

namespace cairn::testing {
namespace {

const std::vector<std::int64_t> kShape = {48, 40};

// Smooth (compressible) float64 values and integers with few distinct values; exact in any
// format. h5py_zstd_test.sh recomputes both.
double u_at(std::int64_t y, std::int64_t x) { return 0.25 * static_cast<double>(y) + 0.5 * x; }
std::int32_t w_at(std::int64_t y, std::int64_t x) {
  return static_cast<std::int32_t>((y * 3 + x) % 11);
}

struct Fields {
  std::vector<double> u;
  std::vector<std::int32_t> w;
  std::vector<double> v;  // u again, saved without compression
};

Fields fields_of(const Box& box) {
  Fields f;
  for (std::int64_t y = box.offset[0]; y < box.offset[0] + box.extent[0]; ++y) {
    for (std::int64_t x = box.offset[1]; x < box.offset[1] + box.extent[1]; ++x) {
      f.u.push_back(u_at(y, x));
      f.w.push_back(w_at(y, x));
      f.v.push_back(u_at(y, x));
    }
  }
  return f;
}

// Saves u and w compressed with zstd (u with `u_args` on top) and v as it is, in row slabs.
void save_fields(const Comm& comm, const std::filesystem::path& dir,
                 LeafSaveArgs u_args = {.compression = Compression::zstd(3)}) {
  const Box box = slab_box(kShape, comm.rank(), comm.size());
  Fields f = fields_of(box);
  ArrayTree tree;
  tree.add_array("u", ArrayShard::host(f.u.data(), kShape, box));
  tree.add_array("w", ArrayShard::host(f.w.data(), kShape, box));
  tree.add_array("v", ArrayShard::host(f.v.data(), kShape, box));
  save_tree(comm, dir, tree,
            {.format = StorageFormat::hdf5,
             .save_args = {{"u", u_args}, {"w", {.compression = Compression::zstd()}}}});
}

// Restores u, w and v over `comm` in `box_of`'s decomposition and compares every element.
template <typename BoxOf>
void expect_fields(const Comm& comm, const std::filesystem::path& dir, BoxOf box_of) {
  const Box box = box_of(kShape, comm.rank(), comm.size());
  const Fields want = fields_of(box);
  Fields got{std::vector<double>(want.u.size(), -1.0), std::vector<std::int32_t>(want.w.size(), -1),
             std::vector<double>(want.v.size(), -1.0)};
  ArrayTree target;
  target.add_array("u", ArrayShard::host(got.u.data(), kShape, box));
  target.add_array("w", ArrayShard::host(got.w.data(), kShape, box));
  target.add_array("v", ArrayShard::host(got.v.data(), kShape, box));
  restore_tree(comm, dir, target);
  EXPECT_EQ(got.u, want.u);
  EXPECT_EQ(got.w, want.w);
  EXPECT_EQ(got.v, want.v);
}

// What the HDF5 API says of dataset `name` of `dir`/data.h5, read on this rank alone.
struct Stored {
  H5D_layout_t layout = H5D_LAYOUT_ERROR;
  std::vector<std::int64_t> chunk;
  std::vector<H5Z_filter_t> filters;
  std::uint64_t storage_bytes = 0;
};

Stored stored(const std::filesystem::path& dir, const char* name) {
  Stored out;
  const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_fapl_sec2(fapl);
  const hid_t file = H5Fopen((dir / "data.h5").c_str(), H5F_ACC_RDONLY, fapl);
  H5Pclose(fapl);
  if (file < 0) return out;
  const hid_t dataset = H5Dopen2(file, name, H5P_DEFAULT);
  const hid_t dcpl = H5Dget_create_plist(dataset);
  out.layout = H5Pget_layout(dcpl);
  if (out.layout == H5D_CHUNKED) {
    std::vector<hsize_t> dims(kShape.size());
    H5Pget_chunk(dcpl, static_cast<int>(dims.size()), dims.data());
    out.chunk.assign(dims.begin(), dims.end());
  }
  for (int k = 0; k < H5Pget_nfilters(dcpl); ++k) {
    unsigned flags = 0;
    std::size_t count = 0;
    out.filters.push_back(H5Pget_filter2(dcpl, static_cast<unsigned>(k), &flags, &count, nullptr, 0,
                                         nullptr, nullptr));
  }
  out.storage_bytes = H5Dget_storage_size(dataset);
  H5Pclose(dcpl);
  H5Dclose(dataset);
  H5Fclose(file);
  return out;
}

// The tests save with zstd: a build without it refuses them (Unsupported, test_save_args).
#define SKIP_WITHOUT_ZSTD() \
  if (!CAIRN_HAVE_ZSTD) GTEST_SKIP() << "this build has no zstd"

TEST(Hdf5Compression, ZstdRoundTripsExactly) {
  SKIP_WITHOUT_ZSTD();
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  save_fields(comm, dir / "item");
  expect_fields(comm, dir / "item", slab_box);
  const Stored u = stored(dir / "item", "u");
  EXPECT_EQ(u.layout, H5D_CHUNKED);
  // HDF5's shuffle filter first (Compression::shuffle is on by default), then zstd.
  EXPECT_EQ(u.filters, (std::vector<H5Z_filter_t>{H5Z_FILTER_SHUFFLE, storage::h5::kZstdFilterId}));
  if (const char* sample = std::getenv("CAIRN_SAMPLE_DIR"); sample != nullptr) {
    if (comm.is_primary()) {
      std::filesystem::copy_file(dir / "item" / "data.h5",
                                 std::filesystem::path(sample) / "data.h5",
                                 std::filesystem::copy_options::overwrite_existing);
    }
    comm.barrier("sample copied");
  }
}

TEST(Hdf5Compression, ZstdWithoutShuffleHasTheZstdFilterAlone) {
  SKIP_WITHOUT_ZSTD();
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  save_fields(comm, dir / "item", {.compression = Compression::zstd(3, /*shuffle=*/false)});
  expect_fields(comm, dir / "item", block_box);
  EXPECT_EQ(stored(dir / "item", "u").filters,
            std::vector<H5Z_filter_t>{storage::h5::kZstdFilterId});
  EXPECT_EQ(stored(dir / "item", "w").filters,
            (std::vector<H5Z_filter_t>{H5Z_FILTER_SHUFFLE, storage::h5::kZstdFilterId}));
}

TEST(Hdf5Compression, RestoresNToMInAnotherDecomposition) {
  SKIP_WITHOUT_ZSTD();
  const SharedTempDir dir;
  const Comm world(MPI_COMM_WORLD);
  save_fields(world, dir / "item");
  expect_fields(world, dir / "item", block_box);
  // Fewer ranks than wrote it, in blocks.
  if (const std::optional<Comm> few = first_ranks((world.size() + 1) / 2)) {
    expect_fields(*few, dir / "item", block_box);
  }
  world.barrier("restored");
}

TEST(Hdf5Compression, ChunkShapeIsHonouredAndUncompressedLeavesStayContiguous) {
  SKIP_WITHOUT_ZSTD();
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  // u: chunks asked for without compression; the second extent is capped at the array's.
  save_fields(comm, dir / "item", {.chunk_shape = {5, 64}});
  expect_fields(comm, dir / "item", block_box);
  const Stored u = stored(dir / "item", "u");
  EXPECT_EQ(u.layout, H5D_CHUNKED);
  EXPECT_EQ(u.chunk, (std::vector<std::int64_t>{5, 40}));
  EXPECT_TRUE(u.filters.empty());
  EXPECT_EQ(stored(dir / "item", "v").layout, H5D_CONTIGUOUS) << "no compression, no chunk shape";
  // Compressed chunks of 5 rows, which several ranks' row slabs share.
  save_fields(comm, dir / "zstd", {.compression = Compression::zstd(), .chunk_shape = {5, 8}});
  expect_fields(comm, dir / "zstd", block_box);
  const Stored z = stored(dir / "zstd", "u");
  EXPECT_EQ(z.chunk, (std::vector<std::int64_t>{5, 8}));
  EXPECT_EQ(z.filters, (std::vector<H5Z_filter_t>{H5Z_FILTER_SHUFFLE, storage::h5::kZstdFilterId}));
}

TEST(Hdf5Compression, ReplicatedLeafWrittenByOneRank) {
  SKIP_WITHOUT_ZSTD();
  // One rank writes a replicated leaf; the others take part in its collective write with
  // nothing selected.
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  const std::vector<std::int64_t> shape = {6, 5};
  std::vector<double> data(30);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = 0.5 * static_cast<double>(i % 4);
  ArrayTree tree;
  tree.add_array("r", ArrayShard::host(data.data(), shape, whole_box(shape), true));
  save_tree(comm, dir / "item", tree,
            {.format = StorageFormat::hdf5, .compression = Compression::zstd(1)});
  std::vector<double> got(30, -1.0);
  ArrayTree target;
  target.add_array("r", ArrayShard::host(got.data(), shape, whole_box(shape)));
  restore_tree(comm, dir / "item", target);
  EXPECT_EQ(got, data);
  EXPECT_EQ(stored(dir / "item", "r").filters,
            (std::vector<H5Z_filter_t>{H5Z_FILTER_SHUFFLE, storage::h5::kZstdFilterId}));
}

// The async checkpointer's background thread stages the shards and writes the compressed
// datasets collectively in its close().
TEST(Hdf5Compression, AsyncSaveCompressesInTheBackground) {
  SKIP_WITHOUT_ZSTD();
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  const Box box = slab_box(kShape, comm.rank(), comm.size());
  Fields f = fields_of(box);
  ArrayTree tree;
  tree.add_array("u", ArrayShard::host(f.u.data(), kShape, box));
  tree.add_array("v", ArrayShard::host(f.v.data(), kShape, box));
  tree.add_array("w", ArrayShard::host(f.w.data(), kShape, box));
  AsyncCheckpointer ck(comm, std::make_shared<ArrayTreeHandler>());
  ck.save(dir / "item",
          ArrayTreeSave(tree, {.format = StorageFormat::hdf5, .compression = Compression::zstd()}));
  ck.wait_until_finished();
  expect_fields(comm, dir / "item", block_box);
  EXPECT_EQ(stored(dir / "item", "v").filters,
            (std::vector<H5Z_filter_t>{H5Z_FILTER_SHUFFLE, storage::h5::kZstdFilterId}));
}

TEST(Hdf5Compression, BadChunkShapeFailsOnEveryRank) {
  SKIP_WITHOUT_ZSTD();
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  EXPECT_THROW(save_fields(comm, dir / "three", {.chunk_shape = {4, 4, 4}}), InvalidArgument);
  EXPECT_THROW(save_fields(comm, dir / "zero", {.chunk_shape = {0, 4}}), InvalidArgument);
}

TEST(Hdf5Compression, CompressibleDataTakesLessSpace) {
  SKIP_WITHOUT_ZSTD();
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  save_fields(comm, dir / "item");
  const std::uint64_t raw = static_cast<std::uint64_t>(kShape[0] * kShape[1]) * sizeof(double);
  const Stored u = stored(dir / "item", "u");
  const Stored w = stored(dir / "item", "w");
  EXPECT_GT(u.storage_bytes, 0U);
  EXPECT_LT(u.storage_bytes, raw / 2) << "smooth float64 values";
  EXPECT_LT(w.storage_bytes, raw / 2 / 4) << "int32 values of 11 kinds";
  EXPECT_EQ(stored(dir / "item", "v").storage_bytes, raw);
}

TEST(Hdf5Compression, DefaultChunksFollowTheDecomposition) {
  // A 32 MiB shard of 1024 rows: cut into 1 MiB chunks of whole rows, 32 per shard.
  EXPECT_EQ(storage::h5::default_chunk(std::vector<std::int64_t>{4096, 4096},
                                       std::vector<std::int64_t>{1024, 4096}, 8),
            (std::vector<std::int64_t>{32, 4096}));
  // Small shards are chunks themselves.
  EXPECT_EQ(storage::h5::default_chunk(std::vector<std::int64_t>{48, 40},
                                       std::vector<std::int64_t>{12, 40}, 8),
            (std::vector<std::int64_t>{12, 40}));
  // A prime extent is halved (rounded up); rows of 2^18 float64 are split further.
  EXPECT_EQ(storage::h5::default_chunk(std::vector<std::int64_t>{7, 1 << 18},
                                       std::vector<std::int64_t>{7, 1 << 18}, 8),
            (std::vector<std::int64_t>{1, 1 << 17}));
  // Nobody holds the array: cut from its shape.
  EXPECT_EQ(storage::h5::default_chunk(std::vector<std::int64_t>{10, 10},
                                       std::vector<std::int64_t>{0, 0}, 4),
            (std::vector<std::int64_t>{10, 10}));
  // In a save: one chunk per row slab (48 rows over n ranks).
  SKIP_WITHOUT_ZSTD();
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  save_fields(comm, dir / "item");
  const Box box = slab_box(kShape, 0, comm.size());
  EXPECT_EQ(stored(dir / "item", "u").chunk, box.extent);
}

}  // namespace
}  // namespace cairn::testing
