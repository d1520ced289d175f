// What a data.h5 says about itself, read back with the HDF5 C API: the root attributes (step,
// metrics, versions, world size, write time) of a save_tree() and of a CheckpointManager step
// (sync and async), each array dataset's cairn_decomposition (a grid, or the list of shards),
// and strings as variable-length UTF-8. With CAIRN_SAMPLE_DIR set, the save_tree() case also
// leaves its data.h5 and cairn-tree.json there for h5py_context_test.sh.
#include <hdf5.h>

#include <cairn/comm.hpp>
#include <cairn/config.hpp>
#include <cairn/handlers.hpp>
#include <cairn/manager.hpp>
#include <cairn/storage.hpp>
#include <cairn/tree.hpp>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value_from.hpp>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "hdf5_test_util.hpp"
#include "storage/format/hdf5/context.hpp"
#include "support/test_support.hpp"

namespace cairn::storage {
namespace {

using namespace hdf5_test;
using testing::SharedTempDir;

/// An open data.h5 (read-only), closed at the end of the scope.
class OpenFile {
 public:
  explicit OpenFile(const std::filesystem::path& file)
      : id_(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT)) {}
  ~OpenFile() {
    if (id_ >= 0) H5Fclose(id_);
  }
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  [[nodiscard]] hid_t get() const { return id_; }

 private:
  hid_t id_;
};

/// Whether `object` (a path below `file`, "." for the root) has the attribute `name`.
bool has_attribute(hid_t file, const char* object, const char* name) {
  return H5Aexists_by_name(file, object, name, H5P_DEFAULT) > 0;
}

/// The string attribute `name` of `object`; fails the test unless it is a scalar
/// variable-length UTF-8 string.
std::string string_attribute(hid_t file, const char* object, const char* name) {
  const hid_t attribute = H5Aopen_by_name(file, object, name, H5P_DEFAULT, H5P_DEFAULT);
  EXPECT_GE(attribute, 0) << object << " has no attribute " << name;
  if (attribute < 0) return {};
  const hid_t type = H5Aget_type(attribute);
  EXPECT_EQ(H5Tget_class(type), H5T_STRING) << name;
  EXPECT_GT(H5Tis_variable_str(type), 0) << name << " is not a variable-length string";
  EXPECT_EQ(H5Tget_cset(type), H5T_CSET_UTF8) << name << " is not UTF-8";
  std::string value;
  if (H5Tis_variable_str(type) > 0) {
    char* text = nullptr;
    EXPECT_GE(H5Aread(attribute, type, &text), 0) << name;
    if (text != nullptr) value = text;
    const hid_t space = H5Aget_space(attribute);
    H5Dvlen_reclaim(type, space, H5P_DEFAULT, &text);
    H5Sclose(space);
  }
  H5Tclose(type);
  H5Aclose(attribute);
  return value;
}

/// The 64-bit integer attribute `name` of the root group.
std::int64_t int_attribute(hid_t file, const char* name) {
  const hid_t attribute = H5Aopen_by_name(file, ".", name, H5P_DEFAULT, H5P_DEFAULT);
  EXPECT_GE(attribute, 0) << "no root attribute " << name;
  std::int64_t value = -1;
  if (attribute >= 0) {
    EXPECT_GE(H5Aread(attribute, H5T_NATIVE_INT64, &value), 0) << name;
    H5Aclose(attribute);
  }
  return value;
}

/// The current time as cairn_write_time writes it.
std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  return std::string(text, std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc));
}

/// Checks the root attributes every data.h5 has: versions, world size, a write time between
/// `before` and `after` (ISO 8601 strings compare as times).
void expect_common_attributes(hid_t file, int world_size, const std::string& before,
                              const std::string& after) {
  EXPECT_EQ(string_attribute(file, ".", "cairn_version"), CAIRN_VERSION_STRING);
  EXPECT_EQ(int_attribute(file, "cairn_format_version"), 6);
  EXPECT_EQ(int_attribute(file, "cairn_world_size"), world_size);
  const std::string written = string_attribute(file, ".", "cairn_write_time");
  EXPECT_EQ(written.size(), before.size()) << written;
  EXPECT_LE(before, written);
  EXPECT_LE(written, after);
}

/// The single data.h5 below `dir`.
std::filesystem::path find_data_file(const std::filesystem::path& dir) {
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.path().filename() == "data.h5") return entry.path();
  }
  ADD_FAILURE() << "no data.h5 below " << dir;
  return {};
}

TEST(Hdf5Context, SaveTreeRecordsProvenanceDecompositionAndUtf8Strings) {
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  const int n = comm.size();
  const int r = comm.rank();
  // A 2-d block grid, a leaf only rank 0 writes part of (not a grid), a replicated leaf.
  const std::vector<std::int64_t> shape = {2 * n + 1, 5};
  const std::vector<int> grid = grid_2d(n);
  const Owned blocks = make_leaf("fields/u", DType::float64, shape, block_of(shape, grid, r));
  std::vector<std::int32_t> part(3, r);
  std::vector<float> whole(4, 1.5F);
  ArrayTree tree;
  tree.add_array("fields/u", blocks.shard);
  tree.add_array("part",
                 ArrayShard::host(part.data(), {10}, r == 0 ? Box{{2}, {3}} : Box{{0}, {0}}));
  tree.add_array("whole", ArrayShard::host(whole.data(), {4}, {}, true));
  tree.add_string("meta/name", "température");
  tree.add_string("meta/nul", std::string("a\0b", 3));
  tree.add_json("meta/config", boost::json::parse(R"({"a": [1, 2]})"));
  const std::string before = utc_now();
  save_tree(comm, dir / "tree", tree,
            {.format = StorageFormat::hdf5,
             .allow_sparse = true,
             .sparse_leaves = {"part"},
             .provenance = {.step = 1234, .metrics = {{"loss", 0.25}, {"tag", "é"}}}});
  const std::string after = utc_now();

  const OpenFile file(dir / "tree" / "data.h5");
  ASSERT_GE(file.get(), 0);
  expect_common_attributes(file.get(), n, before, after);
  EXPECT_EQ(int_attribute(file.get(), "cairn_step"), 1234);
  EXPECT_EQ(boost::json::parse(string_attribute(file.get(), ".", "cairn_metrics")),
            boost::json::parse(R"({"loss": 0.25, "tag": "é"})"));

  // The block grid: the cuts of block_of() along each dimension.
  std::vector<std::vector<std::int64_t>> cuts(2);
  for (int q = 0; q < n; ++q) {
    const Box b = block_of(shape, grid, q);
    for (std::size_t d = 0; d < 2; ++d) cuts[d].push_back(b.offset[d]);
  }
  boost::json::array expected_cuts, expected_grid;
  for (std::size_t d = 0; d < 2; ++d) {
    std::sort(cuts[d].begin(), cuts[d].end());
    cuts[d].erase(std::unique(cuts[d].begin(), cuts[d].end()), cuts[d].end());
    expected_grid.push_back(static_cast<std::int64_t>(cuts[d].size()));
    cuts[d].push_back(shape[d]);
    expected_cuts.push_back(boost::json::value_from(cuts[d]));
  }
  EXPECT_EQ(boost::json::parse(string_attribute(file.get(), "fields/u", "cairn_decomposition")),
            (boost::json::object{{"grid", expected_grid}, {"cuts", expected_cuts}}));
  EXPECT_EQ(boost::json::parse(string_attribute(file.get(), "part", "cairn_decomposition")),
            boost::json::parse(R"({"shards": [{"rank": 0, "offset": [2], "extent": [3]}]})"));
  EXPECT_EQ(boost::json::parse(string_attribute(file.get(), "whole", "cairn_decomposition")),
            boost::json::parse(R"({"grid": [1], "cuts": [[0, 4]]})"));
  EXPECT_EQ(string_attribute(file.get(), "fields/u", "cairn_dtype"), "float64");
  EXPECT_EQ(string_attribute(file.get(), "fields/u", "cairn_order"), "C");
  EXPECT_EQ(string_attribute(file.get(), "meta/name", "cairn_kind"), "string");

  // String leaves: variable-length UTF-8, except one holding a NUL byte (fixed-length, whole).
  for (const auto& [path, want] : std::vector<std::pair<std::string, std::string>>{
           {"meta/name", "température"}, {"meta/config", R"({"a":[1,2]})"}}) {
    const hid_t dataset = H5Dopen2(file.get(), path.c_str(), H5P_DEFAULT);
    ASSERT_GE(dataset, 0) << path;
    const hid_t type = H5Dget_type(dataset);
    EXPECT_GT(H5Tis_variable_str(type), 0) << path;
    EXPECT_EQ(H5Tget_cset(type), H5T_CSET_UTF8) << path;
    char* text = nullptr;
    EXPECT_GE(H5Dread(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, &text), 0) << path;
    EXPECT_EQ(std::string(text != nullptr ? text : ""), want) << path;
    const hid_t space = H5Dget_space(dataset);
    H5Dvlen_reclaim(type, space, H5P_DEFAULT, &text);
    H5Sclose(space);
    H5Tclose(type);
    H5Dclose(dataset);
  }
  const hid_t nul = H5Dopen2(file.get(), "meta/nul", H5P_DEFAULT);
  ASSERT_GE(nul, 0);
  const hid_t nul_type = H5Dget_type(nul);
  EXPECT_EQ(H5Tis_variable_str(nul_type), 0);
  EXPECT_EQ(H5Tget_size(nul_type), 3U);
  H5Tclose(nul_type);
  H5Dclose(nul);
  if (const char* sample = std::getenv("CAIRN_SAMPLE_DIR"); sample != nullptr) {
    if (comm.is_primary()) {
      for (const char* name : {"data.h5", "cairn-tree.json"}) {
        std::filesystem::copy_file(dir / "tree" / name, std::filesystem::path(sample) / name,
                                   std::filesystem::copy_options::overwrite_existing);
      }
    }
    comm.barrier("sample copied");
  }
}

TEST(Hdf5Context, ATreeSavedAloneHasNoStepOrMetrics) {
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  std::vector<double> x(4, 1.0);
  ArrayTree tree;
  tree.add_array("x", ArrayShard::host(x.data(), {4 * comm.size()}, {{4 * comm.rank()}, {4}}));
  const std::string before = utc_now();
  save_tree(comm, dir / "tree", tree, {.format = StorageFormat::hdf5});
  const std::string after = utc_now();
  const OpenFile file(dir / "tree" / "data.h5");
  ASSERT_GE(file.get(), 0);
  expect_common_attributes(file.get(), comm.size(), before, after);
  EXPECT_FALSE(has_attribute(file.get(), ".", "cairn_step"));
  EXPECT_FALSE(has_attribute(file.get(), ".", "cairn_metrics"));
  // Equal slabs: a grid of comm.size() cells along the first dimension.
  boost::json::array cuts;
  for (int q = 0; q <= comm.size(); ++q) cuts.push_back(4 * q);
  boost::json::object expected;
  expected["grid"] = boost::json::array{comm.size()};
  expected["cuts"] = boost::json::array{cuts};
  EXPECT_EQ(boost::json::parse(string_attribute(file.get(), "x", "cairn_decomposition")), expected);
}

TEST(Hdf5Context, ManagerStepsCarryTheirStepAndMetrics) {
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  std::vector<double> x(3, 2.0);
  ArrayTree tree;
  tree.add_array("x", ArrayShard::host(x.data(), {3 * comm.size()}, {{3 * comm.rank()}, {3}}));
  for (const bool async : {false, true}) {
    const auto root = dir / (async ? "async" : "sync");
    const std::string before = utc_now();
    {
      CheckpointManager manager(comm, root, {.enable_async = async});
      for (const std::int64_t step : {7, 9}) {
        ASSERT_TRUE(manager.save(step, ArrayTreeSave(tree, {.format = StorageFormat::hdf5}),
                                 {.metrics = {{"loss", 1.0 / static_cast<double>(step)}}}));
      }
      manager.wait_until_finished();
    }
    const std::string after = utc_now();
    for (const std::int64_t step : {7, 9}) {
      const OpenFile file(find_data_file(root / std::to_string(step)));
      ASSERT_GE(file.get(), 0);
      expect_common_attributes(file.get(), comm.size(), before, after);
      EXPECT_EQ(int_attribute(file.get(), "cairn_step"), step) << "async " << async;
      const boost::json::value metrics =
          boost::json::parse(string_attribute(file.get(), ".", "cairn_metrics"));
      EXPECT_EQ(metrics, (boost::json::object{{"loss", 1.0 / static_cast<double>(step)}}));
    }
  }
}

TEST(Hdf5Context, DecompositionIsAGridOnlyWhenTheShardsAreItsCells) {
  using h5::decomposition_text;
  const std::vector<std::int64_t> shape = {4, 4};
  // Uneven cuts are a grid.
  const std::vector<RankBox> uneven = {{0, {{0, 0}, {3, 4}}}, {1, {{3, 0}, {1, 4}}}};
  EXPECT_EQ(decomposition_text(shape, uneven), R"({"grid":[2,1],"cuts":[[0,3,4],[0,4]]})");
  // Three blocks of a 2 x 2 grid whose first spans two cells: not a grid.
  const std::vector<RankBox> merged = {
      {0, {{0, 0}, {2, 4}}}, {1, {{2, 0}, {2, 2}}}, {2, {{2, 2}, {2, 2}}}};
  EXPECT_EQ(boost::json::parse(decomposition_text(shape, merged)).at("shards").as_array().size(),
            3U);
  // Overlapping shards: not a grid.
  const std::vector<RankBox> overlap = {{0, {{0, 0}, {4, 4}}}, {1, {{0, 0}, {4, 4}}}};
  EXPECT_TRUE(
      boost::json::parse(decomposition_text(shape, overlap)).as_object().contains("shards"));
  // A 0-d array written by one rank.
  const std::vector<RankBox> scalar = {{0, {{}, {}}}};
  EXPECT_EQ(decomposition_text({}, scalar), R"({"grid":[],"cuts":[]})");
}

}  // namespace
}  // namespace cairn::storage
