// Checkpoints of format version 1 (tests/data/v1, one checksum per shard, written on 2 ranks
// by make_v1.cpp there) still restore, restore as saved and verify, on any number of ranks
// and in another decomposition; a damaged byte in one of their shards is reported by
// verify_tree and refused by a restore that reads it.
//
// The TEST_P cases run once per format this build has, as "Formats/FormatV1.<Case>/<format>";
// each works on a copy of the item directory, never on tests/data/v1 itself.
#include <cairn/storage.hpp>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
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

const std::filesystem::path kDataDir = CAIRN_V1_DATA_DIR;

// The saved tree (tests/data/v1/README.md): the shapes, and each leaf's value formula.
const std::vector<std::int64_t> kTemperatureShape = {6, 5};
const std::vector<std::int64_t> kIdsShape = {7};
const std::vector<std::int64_t> kWeightsShape = {4};
double temperature(std::int64_t i, std::int64_t j) { return 100.0 * static_cast<double>(i) + j; }
std::int32_t id(std::int64_t k) { return static_cast<std::int32_t>(10 * k - 30); }
float weight(std::int64_t k) { return 0.25f * static_cast<float>(k) + 1.0f; }
constexpr std::int64_t kStep = 42;
constexpr const char* kName = "cairn v1 sample";

std::vector<double> temperature_box(const Box& box) {
  std::vector<double> out;
  for (std::int64_t i = 0; i < box.extent[0]; ++i) {
    for (std::int64_t j = 0; j < box.extent[1]; ++j) {
      out.push_back(temperature(box.offset[0] + i, box.offset[1] + j));
    }
  }
  return out;
}

std::vector<std::int32_t> ids_box(const Box& box) {
  std::vector<std::int32_t> out;
  for (std::int64_t k = 0; k < box.extent[0]; ++k) out.push_back(id(box.offset[0] + k));
  return out;
}

std::vector<float> all_weights() {
  std::vector<float> out;
  for (std::int64_t k = 0; k < kWeightsShape[0]; ++k) out.push_back(weight(k));
  return out;
}

// Rank r's box when the columns of a matrix are split over n ranks.
Box column_box(const std::vector<std::int64_t>& shape, int r, int n) {
  Box box{std::vector<std::int64_t>(shape.size(), 0), shape};
  box.offset[1] = shape[1] * r / n;
  box.extent[1] = shape[1] * (r + 1) / n - box.offset[1];
  return box;
}

template <class T>
bool same_bytes(const void* data, const std::vector<T>& want) {
  return std::memcmp(data, want.data(), want.size() * sizeof(T)) == 0;
}

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

class FormatV1 : public ::testing::TestWithParam<StorageFormat> {
 protected:
  // Copies tests/data/v1/<format> to a temporary item directory (rank 0 copies).
  void SetUp() override {
    source_ = kDataDir / std::string(storage_format_name(GetParam()));
    ASSERT_TRUE(std::filesystem::exists(source_ / "cairn-tree.json"))
        << source_ << " is missing: tests/data/v1 should hold every format";
    dir_ = tmp_ / "item";
    int copied = 1;
    if (world_rank() == 0) {
      std::error_code error;
      std::filesystem::copy(source_, dir_, std::filesystem::copy_options::recursive, error);
      for (const auto& entry : std::filesystem::recursive_directory_iterator(dir_, error)) {
        std::filesystem::permissions(entry.path(), std::filesystem::perms::owner_write,
                                     std::filesystem::perm_options::add, error);
      }
      copied = error ? 0 : 1;
    }
    MPI_Bcast(&copied, 1, MPI_INT, 0, MPI_COMM_WORLD);
    ASSERT_EQ(copied, 1) << "copying " << source_ << " to " << dir_ << " failed";
  }

  // The data file holding rank 1's shard of "fields/temperature".
  [[nodiscard]] std::filesystem::path damaged_file() const {
    return dir_ / (GetParam() == StorageFormat::posix ? "shards/p1.bin" : "data.h5");
  }

  SharedTempDir tmp_;
  std::filesystem::path source_;
  std::filesystem::path dir_;
};

// Both items are there, and their index says format version 1: a regenerated item (by a newer
// cairn) would not test reading old checkpoints.
TEST(FormatV1Data, EveryItemIsFormatVersionOne) {
  for (const char* format : {"posix", "hdf5"}) {
    const auto index = kDataDir / format / "cairn-tree.json";
    ASSERT_TRUE(std::filesystem::exists(index)) << index;
    const auto json = boost::json::parse(read_text(index));
    EXPECT_EQ(json.at("version").to_number<std::int64_t>(), 1) << index;
    EXPECT_EQ(json.at("leaves").as_array().size(), 5U) << index;
  }
  EXPECT_TRUE(std::filesystem::exists(kDataDir / "posix" / "shards" / "p0.bin"));
  EXPECT_TRUE(std::filesystem::exists(kDataDir / "posix" / "shards" / "p1.bin"));
  EXPECT_TRUE(std::filesystem::exists(kDataDir / "hdf5" / "data.h5"));
}

TEST_P(FormatV1, RestoresIntoTheDecompositionOfThisWorld) {
  Comm comm(MPI_COMM_WORLD);
  // The save had 2 ranks with row slabs; here the columns (and the ids) are split over this
  // world, so at every size some rank reads from both saved shards.
  for (bool verify : {true, false}) {
    SCOPED_TRACE(::testing::Message() << "verify_checksums=" << verify);
    const Box t_box = column_box(kTemperatureShape, comm.rank(), comm.size());
    const Box row_box = slab_box(kTemperatureShape, comm.rank(), comm.size());
    const Box i_box = slab_box(kIdsShape, comm.rank(), comm.size());
    std::vector<double> t(static_cast<std::size_t>(volume(t_box)), -1.0);
    std::vector<double> rows(static_cast<std::size_t>(volume(row_box)), -1.0);
    std::vector<std::int32_t> ids(static_cast<std::size_t>(volume(i_box)), -1);
    std::vector<float> weights(4, -1.0f);
    ArrayTree target;
    target.add_array("fields/temperature", ArrayShard::host(t.data(), kTemperatureShape, t_box));
    target.add_array("particles/ids", ArrayShard::host(ids.data(), kIdsShape, i_box));
    target.add_array("mesh/weights", ArrayShard::host(weights.data(), kWeightsShape, {}, true));
    target.add_scalar("step", Scalar(std::int64_t{0}));
    target.add_string("run/name", "");
    restore_tree(comm, dir_, target,
                 {.verify_checksums = verify, .restore_concurrent_bytes = 4096});
    EXPECT_EQ(t, temperature_box(t_box)) << "rank " << comm.rank() << " " << to_string(t_box);
    EXPECT_EQ(ids, ids_box(i_box)) << "rank " << comm.rank() << " " << to_string(i_box);
    EXPECT_EQ(weights, all_weights());
    EXPECT_EQ(target.at("step").as_scalar(), Scalar(kStep));
    EXPECT_EQ(target.at("run/name").as_string(), kName);

    ArrayTree by_rows;
    by_rows.add_array("fields/temperature",
                      ArrayShard::host(rows.data(), kTemperatureShape, row_box));
    restore_tree(comm, dir_, by_rows, {.verify_checksums = verify});
    EXPECT_EQ(rows, temperature_box(row_box))
        << "rank " << comm.rank() << " " << to_string(row_box);
  }
}

TEST_P(FormatV1, RestoresAsSaved) {
  Comm comm(MPI_COMM_WORLD);
  const SavedTreeInfo info = read_tree_info(comm, dir_);
  EXPECT_EQ(info.world_size, 2);
  ASSERT_EQ(info.leaves.size(), 5U);
  EXPECT_EQ(info.leaves[0].path, "fields/temperature");
  EXPECT_EQ(info.leaves[0].format, GetParam());
  EXPECT_EQ(info.leaves[0].dtype, DType::float64);
  EXPECT_EQ(info.leaves[0].shape, kTemperatureShape);
  EXPECT_EQ(info.leaves[0].shard_count, 2U);
  EXPECT_EQ(info.leaves[1].path, "mesh/weights");
  EXPECT_TRUE(info.leaves[1].replicated);
  EXPECT_EQ(info.leaves[2].path, "particles/ids");
  EXPECT_EQ(info.leaves[2].dtype, DType::int32);

  const ArrayTree whole = restore_tree_as_saved(comm, dir_, {.whole_arrays = true});
  const ArrayShard& t = whole.at("fields/temperature").as_array();
  EXPECT_EQ(t.dtype, DType::float64);
  EXPECT_EQ(t.box, whole_box(kTemperatureShape));
  if (t.box == whole_box(kTemperatureShape)) {
    EXPECT_TRUE(same_bytes(t.data, temperature_box(t.box))) << "fields/temperature";
  }
  const ArrayShard& ids = whole.at("particles/ids").as_array();
  EXPECT_EQ(ids.dtype, DType::int32);
  EXPECT_EQ(ids.box, whole_box(kIdsShape));
  if (ids.box == whole_box(kIdsShape)) {
    EXPECT_TRUE(same_bytes(ids.data, ids_box(ids.box))) << "particles/ids";
  }
  const ArrayShard& w = whole.at("mesh/weights").as_array();
  EXPECT_EQ(w.dtype, DType::float32);
  EXPECT_TRUE(w.replicated);
  EXPECT_EQ(w.box, whole_box(kWeightsShape));
  if (w.box == whole_box(kWeightsShape)) {
    EXPECT_TRUE(same_bytes(w.data, all_weights())) << "mesh/weights";
  }
  EXPECT_EQ(whole.at("step").as_scalar(), Scalar(kStep));
  EXPECT_EQ(whole.at("run/name").as_string(), kName);

  // Without whole_arrays, ranks 0 and 1 get back the boxes they wrote.
  const ArrayTree mine = restore_tree_as_saved(comm, dir_);
  if (comm.rank() < 2) {
    const Box saved_rows{{comm.rank() == 0 ? 0 : 3, 0}, {3, 5}};
    const ArrayShard& part = mine.at("fields/temperature").as_array();
    EXPECT_EQ(part.box, saved_rows);
    if (part.box == saved_rows) {
      EXPECT_TRUE(same_bytes(part.data, temperature_box(saved_rows))) << "rank " << comm.rank();
    }
    const Box saved_ids{{comm.rank() == 0 ? 0 : 2}, {comm.rank() == 0 ? 2 : 5}};
    const ArrayShard& id_part = mine.at("particles/ids").as_array();
    EXPECT_EQ(id_part.box, saved_ids);
    if (id_part.box == saved_ids) {
      EXPECT_TRUE(same_bytes(id_part.data, ids_box(saved_ids))) << "rank " << comm.rank();
    }
  }
}

TEST_P(FormatV1, VerifiesIntact) {
  Comm comm(MPI_COMM_WORLD);
  const TreeVerifyReport report = verify_tree(comm, dir_);
  EXPECT_TRUE(report.problems.empty()) << report.problems.front();
  EXPECT_EQ(report.leaves, 5U);
  EXPECT_EQ(report.shards, 5U) << "2 temperature, 2 ids and 1 replicated weights shard";
  EXPECT_EQ(report.bytes, 6U * 5 * 8 + 7 * 4 + 4 * 4);
}

TEST_P(FormatV1, DamagedShardIsReportedAndRefused) {
  Comm comm(MPI_COMM_WORLD);
  // Flip the lowest bit of temperature(3, 1) = 301.0, found as the bytes of 300.0 and 301.0
  // (row 3 of the matrix, the start of rank 1's shard).
  int flipped = 0;
  if (comm.is_primary()) {
    const double pattern[2] = {temperature(3, 0), temperature(3, 1)};
    const std::string needle(reinterpret_cast<const char*>(pattern), sizeof pattern);
    const std::string content = read_text(damaged_file());
    const auto at = content.find(needle);
    if (at != std::string::npos && content.rfind(needle) == at) {
      std::fstream f(damaged_file(), std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(static_cast<std::streamoff>(at + sizeof(double)));
      f.put(static_cast<char>(content[at + sizeof(double)] ^ 0x01));
      flipped = f.good() ? 1 : 0;
    }
  }
  MPI_Bcast(&flipped, 1, MPI_INT, 0, MPI_COMM_WORLD);
  ASSERT_EQ(flipped, 1) << "the bytes of 300.0, 301.0 are not in " << damaged_file()
                        << " exactly once";

  // verify_tree names the file and the leaf, and nothing else is damaged.
  const TreeVerifyReport report = verify_tree(comm, dir_);
  ASSERT_EQ(report.problems.size(), 1U);
  const std::string& problem = report.problems.front();
  EXPECT_NE(problem.find("fields/temperature"), std::string::npos) << problem;
  EXPECT_NE(problem.find(damaged_file().filename().string()), std::string::npos) << problem;

  // A restore that reads the damaged shard throws FormatError on every rank, naming the leaf
  // (each rank reads a row slab; at 4 ranks only some of them read rows 3..5).
  const Box box = slab_box(kTemperatureShape, comm.rank(), comm.size());
  std::vector<double> t(static_cast<std::size_t>(volume(box)), -1.0);
  ArrayTree target;
  target.add_array("fields/temperature", ArrayShard::host(t.data(), kTemperatureShape, box));
  try {
    restore_tree(comm, dir_, target);
    ADD_FAILURE() << "expected FormatError on rank " << comm.rank();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("fields/temperature"), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected FormatError, got: " << e.what();
  }

  // Without verification the same restore reads the flipped value, and only that one.
  std::vector<double> raw(static_cast<std::size_t>(volume(whole_box(kTemperatureShape))), -1.0);
  ArrayTree unverified;
  unverified.add_array("fields/temperature", ArrayShard::host(raw.data(), kTemperatureShape));
  restore_tree(comm, dir_, unverified, {.verify_checksums = false});
  auto want = temperature_box(whole_box(kTemperatureShape));
  EXPECT_NE(raw[3 * 5 + 1], want[3 * 5 + 1]) << "the flipped byte is not temperature(3, 1)";
  raw[3 * 5 + 1] = want[3 * 5 + 1];
  EXPECT_EQ(raw, want) << "more than temperature(3, 1) changed";

  // Intact shards still restore: rows 0..2 and the ids.
  const Box first_rows{{0, 0}, {3, 5}};
  std::vector<double> top(15, -1.0);
  std::vector<std::int32_t> ids(7, -1);
  ArrayTree intact;
  intact.add_array("fields/temperature",
                   ArrayShard::host(top.data(), kTemperatureShape, first_rows));
  intact.add_array("particles/ids", ArrayShard::host(ids.data(), kIdsShape));
  restore_tree(comm, dir_, intact);
  EXPECT_EQ(top, temperature_box(first_rows));
  EXPECT_EQ(ids, ids_box(whole_box(kIdsShape)));
}

INSTANTIATE_TEST_SUITE_P(Formats, FormatV1, ::testing::ValuesIn(available_formats()),
                         [](const ::testing::TestParamInfo<StorageFormat>& info) {
                           return std::string(storage_format_name(info.param));
                         });

}  // namespace
}  // namespace cairn::testing
