#include "checkpoint/checkpoint_test_util.hpp"

#include <mpi.h>

#include <cairn/config.hpp>

#include <cstdlib>
#include <cstring>
#include <string>

#include "support/test_support.hpp"

namespace cairn::testing {
namespace {

// Fails every test of the binary when it runs on another number of ranks than ctest
// registered it for (CAIRN_TEST_RANKS_EXPECTED), e.g. when a harness forgets mpiexec.
class RankCountCheck final : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* expected = std::getenv("CAIRN_TEST_RANKS_EXPECTED");
    if (expected == nullptr) return;
    ASSERT_EQ(world_size(), std::atoi(expected))
        << "the case is registered for " << expected << " ranks but runs on " << world_size();
  }
};

[[maybe_unused]] ::testing::Environment* const rank_count_check =
    ::testing::AddGlobalTestEnvironment(new RankCountCheck);

}  // namespace

std::vector<std::byte> field_bytes(const Box& box, int salt) {
  auto bytes = reference_box(DType::float64, kFieldShape, box);
  for (auto& b : bytes) b ^= static_cast<std::byte>(salt);
  return bytes;
}

Field::Field(Box box_, int salt)
    : box(std::move(box_)), data(field_bytes(box, salt)), time(time_of(salt)) {}

ArrayTree Field::tree() {
  ArrayTree tree;
  tree.add_array(
      "fields/u",
      {.dtype = DType::float64, .global_shape = kFieldShape, .box = box, .data = data.data()});
  tree.add_scalar("time", Scalar(time));
  return tree;
}

FieldTarget::FieldTarget(Box box_)
    : box(std::move(box_)),
      out(static_cast<std::size_t>(volume(box)) * sizeof(double), std::byte{0xEE}) {
  tree.add_array(
      "fields/u",
      {.dtype = DType::float64, .global_shape = kFieldShape, .box = box, .data = out.data()});
  tree.add_scalar("time", Scalar(0.0));
}

void expect_field(const FieldTarget& target, const ArrayTree& restored, int salt) {
  EXPECT_EQ(target.out, field_bytes(target.box, salt)) << "box " << to_string(target.box);
  EXPECT_EQ(restored.at("time").as_scalar(), Scalar(Field::time_of(salt)));
}

void expect_field_as_saved(const ArrayTree& restored, const Box& box, int salt) {
  const ArrayShard& u = restored.at("fields/u").as_array();
  EXPECT_EQ(u.dtype, DType::float64);
  EXPECT_EQ(u.global_shape, kFieldShape);
  ASSERT_EQ(u.box, box);
  const auto expected = field_bytes(box, salt);
  ASSERT_NE(u.data, nullptr);
  EXPECT_EQ(std::memcmp(u.data, expected.data(), expected.size()), 0) << to_string(box);
  EXPECT_EQ(restored.at("time").as_scalar(), Scalar(Field::time_of(salt)));
}

std::vector<std::byte> rank_blob(int rank, int salt) {
  std::vector<std::byte> out(static_cast<std::size_t>(1000 + 37 * rank + salt));
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<std::byte>(
        (static_cast<std::size_t>(rank) * 31 + i * 7 + static_cast<std::size_t>(salt)) & 0xff);
  }
  return out;
}

std::vector<std::byte> shared_blob(int salt) {
  std::vector<std::byte> out(777);
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<std::byte>((i * 13 + static_cast<std::size_t>(salt)) & 0xff);
  }
  return out;
}

boost::json::value meta_value(int salt) {
  return {{"solver", "cg"},
          {"tolerance", 1e-8},
          {"salt", salt},
          {"levels", {1, 2, 3}},
          {"name", "heat 2d \xc3\xbc"}};
}

Composite full_save(Field& field, StorageFormat format, int rank, int salt) {
  return Composite{
      {"state", std::make_shared<ArrayTreeSave>(field.tree(), TreeSaveOptions{.format = format})},
      {"meta", std::make_shared<JsonSave>(meta_value(salt))},
      {"blob", std::make_shared<BytesSave>(rank_blob(rank, salt))},
      {"rep", std::make_shared<BytesSave>(shared_blob(salt), true)}};
}

Composite full_restore(FieldTarget& target) {
  return Composite{{"state", std::make_shared<ArrayTreeRestore>(target.tree)},
                   {"meta", std::make_shared<JsonRestore>()},
                   {"blob", std::make_shared<BytesRestore>()},
                   {"rep", std::make_shared<BytesRestore>()}};
}

void expect_full(const CompositeResult& result, const FieldTarget& target, int rank, int salt) {
  EXPECT_EQ(result.names(), (std::vector<std::string>{"blob", "meta", "rep", "state"}));
  expect_field(target, result.get<ArrayTree>("state"), salt);
  EXPECT_EQ(result.get<boost::json::value>("meta"), meta_value(salt));
  EXPECT_EQ(result.get<std::vector<std::byte>>("blob"), rank_blob(rank, salt));
  EXPECT_EQ(result.get<std::vector<std::byte>>("rep"), shared_blob(salt));
}

std::filesystem::path tmp_of(const std::filesystem::path& dir) {
  std::filesystem::path tmp = dir;
  tmp += kTmpSuffix;
  return tmp;
}

void expect_no_checkpoint(const std::filesystem::path& dir) {
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_FALSE(std::filesystem::exists(dir)) << dir;
  EXPECT_FALSE(std::filesystem::exists(tmp_of(dir))) << tmp_of(dir);
  MPI_Barrier(MPI_COMM_WORLD);
}

bool mentions(std::string_view text, std::initializer_list<std::string_view> parts) {
  for (std::string_view part : parts) {
    if (text.find(part) == std::string_view::npos) return false;
  }
  return true;
}

bool funneled_mode() {
  const char* level = std::getenv("CAIRN_TEST_THREAD_LEVEL");
  return level != nullptr && std::string_view(level) == "funneled";
}

std::optional<int> armed_fault_rank([[maybe_unused]] std::string_view point) {
#if CAIRN_HAVE_FAULT_INJECTION
  const char* value = std::getenv("CAIRN_FAULT");
  if (value == nullptr) return std::nullopt;
  const std::string rules(value);
  const std::string key = std::string(point) + "@";
  for (std::size_t at = rules.find(key); at != std::string::npos; at = rules.find(key, at + 1)) {
    if (at != 0 && rules[at - 1] != ',') continue;
    const std::string rank = rules.substr(at + key.size(), rules.find(',', at) - at - key.size());
    if (rank.ends_with(":kill")) continue;
    return rank == "*" ? -1 : std::atoi(rank.c_str());
  }
#endif
  return std::nullopt;
}

}  // namespace cairn::testing
