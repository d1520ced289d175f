// MPI-IO hints of the hdf5 format (TreeSaveOptions::hdf5.mpi_info_hints): they reach the MPI-IO
// file-access property list (read back with H5Pget_fapl_mpio), a save of compressed datasets
// with hints (known, unknown and striping ones) restores exactly, and an empty hint fails on
// every rank naming the option.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <mpi.h>

#include <cairn/config.hpp>
#include <cairn/error.hpp>
#include <cairn/storage.hpp>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "storage/format/hdf5/compression.hpp"
#include "storage/storage_test_util.hpp"
#include "support/test_support.hpp"

namespace cairn::testing {
namespace {

const std::vector<std::int64_t> kShape = {24, 18};

// The value of `key` in `info`, or "" when it has none.
std::string info_value(MPI_Info info, const char* key) {
  char value[MPI_MAX_INFO_VAL + 1] = {};
  int found = 0;
  MPI_Info_get(info, key, MPI_MAX_INFO_VAL, value, &found);
  return found != 0 ? std::string(value) : std::string();
}

TEST(Hdf5Hints, ReachTheMpioFileAccess) {
  const Comm comm(MPI_COMM_WORLD);
  const std::map<std::string, std::string> hints = {
      {"cb_nodes", "1"}, {"romio_cb_write", "enable"}, {"cairn_unknown_hint", "ignored"}};
  const storage::h5::PropertyList fapl = storage::h5::mpio_access(comm, hints, {"hints.h5", {}});
  MPI_Comm got_comm = MPI_COMM_NULL;
  MPI_Info got = MPI_INFO_NULL;
  ASSERT_GE(H5Pget_fapl_mpio(fapl.get(), &got_comm, &got), 0);
  ASSERT_NE(got, MPI_INFO_NULL);
  EXPECT_EQ(info_value(got, "cb_nodes"), "1");
  EXPECT_EQ(info_value(got, "romio_cb_write"), "enable");
  MPI_Info_free(&got);
  MPI_Comm_free(&got_comm);
}

TEST(Hdf5Hints, ACompressedSaveWithHintsRestoresExactly) {
  if (!CAIRN_HAVE_ZSTD) GTEST_SKIP() << "this build has no zstd";
  const SharedTempDir tmp;
  const Comm comm(MPI_COMM_WORLD);
  const Box box = slab_box(kShape, comm.rank(), comm.size());
  auto a = reference_box(DType::int32, kShape, box);
  ArrayTree tree;
  tree.add_array("a",
                 {.dtype = DType::int32, .global_shape = kShape, .box = box, .data = a.data()});
  const auto dir = tmp / "hinted";
  save_tree(comm, dir, tree,
            {.format = StorageFormat::hdf5,
             .fsync = false,
             .compression = Compression::zstd(),
             .hdf5 = {.mpi_info_hints = {{"striping_factor", "2"},
                                         {"striping_unit", "1048576"},
                                         {"cb_nodes", "1"},
                                         {"romio_cb_write", "enable"},
                                         {"cairn_unknown_hint", "ignored"}}}});
  const Box other = block_box(kShape, comm.rank(), comm.size());
  ArrayTree target;
  auto* got = static_cast<std::byte*>(target.add_owned_array("a", DType::int32, kShape, other));
  restore_tree(comm, dir, target);
  const auto want = reference_box(DType::int32, kShape, other);
  EXPECT_EQ(std::memcmp(got, want.data(), want.size()), 0);
}

TEST(Hdf5Hints, AnEmptyHintFailsOnEveryRank) {
  const SharedTempDir tmp;
  const Comm comm(MPI_COMM_WORLD);
  std::vector<std::int32_t> a(4, 7);
  ArrayTree tree;
  tree.add_array("a", ArrayShard::host(a.data(), {4}, {}, true));
  try {
    save_tree(comm, tmp / "empty", tree,
              {.format = StorageFormat::hdf5,
               .fsync = false,
               .hdf5 = {.mpi_info_hints = {{"cb_nodes", ""}}}});
    ADD_FAILURE() << "an empty hint was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("mpi_info_hints"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cairn::testing
