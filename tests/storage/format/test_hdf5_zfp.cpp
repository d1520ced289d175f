// zfp in the hdf5 format (H5Z-ZFP's filter 32013): with an absolute bound, and with a relative
// bound (one tolerance per dataset: the bound times the leaf's largest finite magnitude), every
// restored element lies within the bound, N->M and with checksums verified (the index holds
// the checksums of the decompressed values); verify_tree() passes on an intact file and finds a
// zfp chunk with flipped bytes. With CAIRN_SAMPLE_DIR set, the absolute round trip leaves its
// data.h5 there as zfp.h5 for h5py_zfp_test.sh.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <cairn/checkpointer.hpp>
#include <cairn/config.hpp>
#include <cairn/error.hpp>
#include <cairn/handlers.hpp>
#include <cairn/storage.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "storage/format/hdf5/zfp_filter.hpp"
#include "storage/storage_test_util.hpp"
#include "support/test_support.hpp"

namespace cairn::testing {
namespace {

const std::vector<std::int64_t> kShape = {48, 40};
// Checksum chunks of 64 float64 values: every shard has several, and N->M reads verify parts.
constexpr std::size_t kChecksumChunk = 512;

#define SKIP_WITHOUT_ZFP() \
  if (!CAIRN_HAVE_ZFP) GTEST_SKIP() << "this build has no zfp"

// A smooth field with a large magnitude in places (up to about 2000): a relative bound and an
// absolute one differ. h5py_zfp_test.sh recomputes it.
double u_at(std::int64_t y, std::int64_t x) {
  return std::sin(0.1 * static_cast<double>(y)) * std::cos(0.07 * static_cast<double>(x)) +
         (y >= 40 ? 2000.0 * std::cos(0.05 * static_cast<double>(x)) : 0.0);
}

template <typename T>
std::vector<T> field_of(const Box& box) {
  std::vector<T> values;
  for (std::int64_t y = box.offset[0]; y < box.offset[0] + box.extent[0]; ++y) {
    for (std::int64_t x = box.offset[1]; x < box.offset[1] + box.extent[1]; ++x) {
      values.push_back(static_cast<T>(u_at(y, x)));
    }
  }
  return values;
}

// Saves u (of T) in row slabs over `comm` with `compression` (and `chunk_shape`) in hdf5.
template <typename T>
void save_u(const Comm& comm, const std::filesystem::path& dir, const Compression& compression,
            std::vector<std::int64_t> chunk_shape = {}) {
  const Box box = slab_box(kShape, comm.rank(), comm.size());
  std::vector<T> u = field_of<T>(box);
  ArrayTree tree;
  tree.add_array("u", ArrayShard::host(u.data(), kShape, box));
  save_tree(comm, dir, tree,
            {.format = StorageFormat::hdf5,
             .checksum_chunk_bytes = kChecksumChunk,
             .save_args = {{"u", {.compression = compression, .chunk_shape = chunk_shape}}}});
}

// Restores u over `comm` in blocks, checksums verified (the default), and returns the largest
// difference from the saved values over every rank of `comm`.
template <typename T>
double restore_error(const Comm& comm, const std::filesystem::path& dir) {
  const Box mine = block_box(kShape, comm.rank(), comm.size());
  std::vector<T> got(static_cast<std::size_t>(volume(mine)), T(-99));
  ArrayTree target;
  target.add_array("u", ArrayShard::host(got.data(), kShape, mine));
  restore_tree(comm, dir, target);
  const std::vector<T> want = field_of<T>(mine);
  double error = 0;
  for (std::size_t k = 0; k < got.size(); ++k) {
    error = std::max(error, std::fabs(static_cast<double>(got[k]) - static_cast<double>(want[k])));
  }
  double largest = 0;
  MPI_Allreduce(&error, &largest, 1, MPI_DOUBLE, MPI_MAX, comm.get());
  return largest;
}

// The filters of dataset u of `dir`/data.h5 and its storage size, read on this rank alone.
struct Stored {
  std::vector<H5Z_filter_t> filters;
  std::uint64_t storage_bytes = 0;
  std::string compression;  // the attribute cairn_compression
  haddr_t first_chunk = HADDR_UNDEF;
  hsize_t first_chunk_bytes = 0;
};

Stored stored(const std::filesystem::path& dir) {
  Stored out;
  const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_fapl_sec2(fapl);
  const hid_t file = H5Fopen((dir / "data.h5").c_str(), H5F_ACC_RDONLY, fapl);
  H5Pclose(fapl);
  if (file < 0) return out;
  const hid_t dataset = H5Dopen2(file, "u", H5P_DEFAULT);
  const hid_t dcpl = H5Dget_create_plist(dataset);
  for (int k = 0; k < H5Pget_nfilters(dcpl); ++k) {
    unsigned flags = 0;
    std::size_t count = 0;
    out.filters.push_back(H5Pget_filter2(dcpl, static_cast<unsigned>(k), &flags, &count, nullptr, 0,
                                         nullptr, nullptr));
  }
  out.storage_bytes = H5Dget_storage_size(dataset);
  const hid_t attribute = H5Aopen(dataset, "cairn_compression", H5P_DEFAULT);
  const hid_t type = H5Aget_type(attribute);
  char* text = nullptr;
  if (H5Tis_variable_str(type) > 0 && H5Aread(attribute, type, &text) >= 0 && text != nullptr) {
    out.compression = text;
    H5free_memory(text);
  }
  const hid_t space = H5Dget_space(dataset);
  std::vector<hsize_t> offset(kShape.size());
  unsigned mask = 0;
  H5Dget_chunk_info(dataset, space, 0, offset.data(), &mask, &out.first_chunk,
                    &out.first_chunk_bytes);
  H5Sclose(space);
  H5Tclose(type);
  H5Aclose(attribute);
  H5Pclose(dcpl);
  H5Dclose(dataset);
  H5Fclose(file);
  return out;
}

TEST(Hdf5Zfp, AbsoluteBoundIsHonouredNToM) {
  SKIP_WITHOUT_ZFP();
  const SharedTempDir dir;
  const Comm world(MPI_COMM_WORLD);
  constexpr double kBound = 1e-3;
  save_u<double>(world, dir / "item", Compression::zfp_absolute(kBound));
  const double error = restore_error<double>(world, dir / "item");
  EXPECT_LE(error, kBound);
  EXPECT_GT(error, 0.0) << "zfp at 1e-3 is lossy";
  // Fewer ranks than wrote it.
  if (const std::optional<Comm> few = first_ranks((world.size() + 1) / 2)) {
    EXPECT_LE(restore_error<double>(*few, dir / "item"), kBound);
  }
  world.barrier("restored");
  const Stored s = stored(dir / "item");
  EXPECT_EQ(s.filters, std::vector<H5Z_filter_t>{storage::h5::kZfpFilterId});
  EXPECT_EQ(s.compression, "zfp absolute error 0.001");
  EXPECT_LT(s.storage_bytes, static_cast<std::uint64_t>(volume(kShape)) * sizeof(double) / 2);
  if (const char* sample = std::getenv("CAIRN_SAMPLE_DIR"); sample != nullptr) {
    if (world.is_primary()) {
      std::filesystem::copy_file(dir / "item" / "data.h5", std::filesystem::path(sample) / "zfp.h5",
                                 std::filesystem::copy_options::overwrite_existing);
    }
    world.barrier("sample copied");
  }
}

// A relative bound: the dataset's tolerance is the bound times the largest magnitude of the
// whole leaf (about 2000, on the last rank's rows only), so rows of magnitude 1 may err by
// more than the bound times their own magnitude, never by more than bound * max|u|.
TEST(Hdf5Zfp, RelativeBoundIsOfTheLeafsLargestMagnitude) {
  SKIP_WITHOUT_ZFP();
  const SharedTempDir dir;
  const Comm world(MPI_COMM_WORLD);
  constexpr double kBound = 1e-5;
  double largest = 0;
  for (const double v : field_of<float>(whole_box(kShape)))
    largest = std::max(largest, std::fabs(v));
  // Chunks of 5 x 8 that several ranks' row slabs share, float32.
  save_u<float>(world, dir / "f32", Compression::zfp_relative(kBound), {5, 8});
  const double error = restore_error<float>(world, dir / "f32");
  EXPECT_LE(error, kBound * largest);
  EXPECT_GT(error, 0.0);
  const Stored s = stored(dir / "f32");
  EXPECT_EQ(s.filters, std::vector<H5Z_filter_t>{storage::h5::kZfpFilterId});
  EXPECT_NE(s.compression.find("zfp relative error 1e-05 (absolute error 0.0199"),
            std::string::npos)
      << s.compression;
  if (const std::optional<Comm> few = first_ranks((world.size() + 1) / 2)) {
    EXPECT_LE(restore_error<float>(*few, dir / "f32"), kBound * largest);
  }
  world.barrier("restored");
  // float64 with cairn's own chunks.
  save_u<double>(world, dir / "f64", Compression::zfp_relative(kBound));
  EXPECT_LE(restore_error<double>(world, dir / "f64"), kBound * largest);
}

// The async checkpointer's background thread writes, reads back and checksums the zfp dataset
// in its close(); restores verify against those checksums.
TEST(Hdf5Zfp, AsyncSaveRecordsTheChecksumsOfTheDecompressedValues) {
  SKIP_WITHOUT_ZFP();
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  const Box box = slab_box(kShape, comm.rank(), comm.size());
  std::vector<double> u = field_of<double>(box);
  ArrayTree tree;
  tree.add_array("u", ArrayShard::host(u.data(), kShape, box));
  AsyncCheckpointer ck(comm, std::make_shared<ArrayTreeHandler>());
  ck.save(dir / "item", ArrayTreeSave(tree, {.format = StorageFormat::hdf5,
                                             .checksum_chunk_bytes = kChecksumChunk,
                                             .compression = Compression::zfp_absolute(1e-4)}));
  ck.wait_until_finished();
  EXPECT_LE(restore_error<double>(comm, dir / "item"), 1e-4);
}

TEST(Hdf5Zfp, VerifyPassesAndFindsAFlippedChunk) {
  SKIP_WITHOUT_ZFP();
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  save_u<double>(comm, dir / "item", Compression::zfp_absolute(1e-3));
  const TreeVerifyReport intact = verify_tree(comm, dir / "item");
  EXPECT_TRUE(intact.problems.empty()) << intact.problems.front();
  EXPECT_EQ(intact.shards, static_cast<std::size_t>(comm.size()));

  // Flip 16 bytes in the middle of the first stored zfp chunk.
  const Stored s = stored(dir / "item");
  ASSERT_NE(s.first_chunk, HADDR_UNDEF);
  ASSERT_GT(s.first_chunk_bytes, 32U);
  if (comm.is_primary()) {
    const int fd = ::open((dir / "item" / "data.h5").c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    const auto at = static_cast<off_t>(s.first_chunk + s.first_chunk_bytes / 2);
    unsigned char bytes[16] = {};
    ASSERT_EQ(::pread(fd, bytes, sizeof bytes, at), static_cast<ssize_t>(sizeof bytes));
    for (unsigned char& b : bytes) b = static_cast<unsigned char>(~b);
    ASSERT_EQ(::pwrite(fd, bytes, sizeof bytes, at), static_cast<ssize_t>(sizeof bytes));
    ::close(fd);
  }
  comm.barrier("damaged");
  const TreeVerifyReport damaged = verify_tree(comm, dir / "item");
  ASSERT_FALSE(damaged.problems.empty());
  EXPECT_NE(damaged.problems.front().find("'u'"), std::string::npos) << damaged.problems.front();
  // A restore with checksums verified refuses it; without, it reads what zfp decodes.
  EXPECT_THROW((void)restore_error<double>(comm, dir / "item"), Error);
}

}  // namespace
}  // namespace cairn::testing
