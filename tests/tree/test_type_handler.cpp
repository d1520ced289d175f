// Tests of the type-handler registry: built-in handlers and a user-defined struct.
#include <cairn/type_handler.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <complex>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

// A user type, taught to cairn without touching the library.
namespace user {
struct Particles {
  std::vector<double> x;
  std::vector<double> v;
  int n = 0;
};
struct Unknown {};
}  // namespace user

template <>
struct cairn::TypeHandler<user::Particles> {
  static void to_leaves(const user::Particles& p, std::string_view prefix, ArrayTree& tree) {
    tree.add(join_path(prefix, "x"), p.x);
    tree.add(join_path(prefix, "v"), p.v);
    tree.add(join_path(prefix, "n"), p.n);
  }
  static void from_leaves(const ArrayTree& tree, std::string_view prefix, user::Particles& p) {
    tree.extract(join_path(prefix, "x"), p.x);
    tree.extract(join_path(prefix, "v"), p.v);
    tree.extract(join_path(prefix, "n"), p.n);
  }
};

namespace cairn {
namespace {

using ::testing::HasSubstr;

static_assert(Handled<user::Particles>);
static_assert(Handled<double>);
static_assert(Handled<std::string>);
static_assert(Handled<std::vector<std::int16_t>>);
static_assert(Handled<boost::json::value>);
static_assert(!Handled<user::Unknown>);
static_assert(!Handled<std::vector<bool>>);

TEST(TypeHandler, ScalarsStringsAndJsonRoundTrip) {
  ArrayTree tree;
  tree.add("i", 42);
  tree.add("b", true);
  tree.add("d", 2.5);
  tree.add("c", std::complex<float>(1, -1));
  tree.add("s", std::string("hello"));
  tree.add("literal", "world");
  tree.add("j", boost::json::value(boost::json::parse(R"({"lr": 0.1})")));
  EXPECT_EQ(tree.at("i").kind(), LeafKind::scalar);
  EXPECT_EQ(tree.get<int>("i"), 42);
  EXPECT_EQ(tree.get<std::int64_t>("i"), 42);  // widening is fine
  EXPECT_EQ(tree.get<bool>("b"), true);
  EXPECT_EQ(tree.get<double>("d"), 2.5);
  EXPECT_EQ(tree.get<std::complex<double>>("c"), std::complex<double>(1, -1));
  EXPECT_EQ(tree.get<std::string>("s"), "hello");
  EXPECT_EQ(tree.get<std::string>("literal"), "world");
  EXPECT_EQ(tree.get<boost::json::value>("j").at("lr").as_double(), 0.1);
  EXPECT_THROW((void)tree.get<std::string>("i"), InvalidArgument);
  EXPECT_THROW((void)tree.get<int>("missing"), NotFound);
}

TEST(TypeHandler, ScalarExtractionNeverTruncates) {
  ArrayTree tree;
  tree.add("n", std::int64_t{300});
  tree.add("x", 2.5);
  try {
    (void)tree.get<std::int8_t>("n");
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("'n'"));
    EXPECT_THAT(e.what(), HasSubstr("300"));
  }
  EXPECT_THROW((void)tree.get<int>("x"), InvalidArgument);
  // A one-element array reads as a scalar too.
  const float one = 7;
  tree.add_array("arr", ArrayShard::host(&one, {1}));
  EXPECT_EQ(tree.get<double>("arr"), 7.0);
}

TEST(TypeHandler, VectorIsAReplicatedViewNotACopy) {
  std::vector<double> v = {1, 2, 3};
  ArrayTree tree;
  tree.add("v", v);
  const ArrayShard& s = tree.at("v").as_array();
  EXPECT_EQ(s.data, v.data());  // a view: the vector must outlive the save
  EXPECT_EQ(s.dtype, DType::float64);
  EXPECT_EQ(s.global_shape, std::vector<std::int64_t>{3});
  EXPECT_TRUE(s.replicated);
  v[1] = 20;
  EXPECT_EQ(tree.get<std::vector<double>>("v"), (std::vector<double>{1, 20, 3}));
  EXPECT_EQ(tree.get<std::vector<float>>("v"), (std::vector<float>{1, 20, 3}));
  const std::vector<double> empty;
  tree.add("empty", empty);
  EXPECT_TRUE(tree.get<std::vector<double>>("empty").empty());
  v[0] = 0.5;
  EXPECT_THROW((void)tree.get<std::vector<int>>("v"), InvalidArgument);  // 0.5 is not an int
}

TEST(TypeHandler, VectorNeedsTheWholeOneDimensionalArray) {
  std::vector<std::int32_t> local = {1, 2};
  ArrayTree tree;
  tree.add_array("part", ArrayShard::host(local.data(), {4}, Box{{2}, {2}}));
  tree.add_array("matrix", ArrayShard::host(local.data(), {1, 2}));
  std::vector<std::int32_t> out;
  EXPECT_THROW(tree.extract("part", out), InvalidArgument);
  EXPECT_THROW(tree.extract("matrix", out), InvalidArgument);
  // A strided (transposed) view reads in row-major order.
  const std::vector<std::int32_t> m = {0, 1, 2, 3, 4, 5};  // 2x3
  ArrayShard t = ArrayShard::host(m.data(), {6});
  t.strides = {1};
  tree.add_array("strided", t);
  EXPECT_EQ(tree.get<std::vector<std::int64_t>>("strided"),
            std::vector<std::int64_t>(m.begin(), m.end()));
  ArrayShard transposed = ArrayShard::host(m.data(), {3, 2});
  transposed.strides = {1, 3};
  tree.add_array("transposed", transposed);
  std::vector<std::int32_t> packed(6);
  read_array_leaf(tree.at("transposed"), DType::int32, packed.data());
  EXPECT_EQ(packed, (std::vector<std::int32_t>{0, 3, 1, 4, 2, 5}));
  std::vector<double> as_double(6);
  read_array_leaf(tree.at("transposed"), DType::float64, as_double.data());
  EXPECT_EQ(as_double, (std::vector<double>{0, 3, 1, 4, 2, 5}));
  ArrayShard device = ArrayShard::host(m.data(), {6});
  device.memory = MemoryKind::cuda_device;
  tree.add_array("device", device);
  EXPECT_THROW(read_array_leaf(tree.at("device"), DType::int32, packed.data()), Unsupported);
}

TEST(TypeHandler, UserStructRoundTrips) {
  const user::Particles saved{{0.5, 1.5, 2.5}, {-1, -2, -3}, 3};
  ArrayTree tree;
  tree.add("particles", saved);
  EXPECT_EQ(tree.sorted_paths(),
            (std::vector<std::string>{"particles/n", "particles/v", "particles/x"}));
  EXPECT_TRUE(tree.is_group("particles"));

  // What storage hands back on restore: owning buffers with the saved shapes and dtypes.
  ArrayTree restored;
  for (const Leaf& leaf : tree) {
    if (leaf.kind() == LeafKind::array) {
      const ArrayShard& s = leaf.as_array();
      void* p = restored.add_owned_array(leaf.path(), s.dtype, s.global_shape, {}, true);
      std::memcpy(p, s.data, static_cast<std::size_t>(s.local_bytes()));
    } else {
      restored.add_scalar(leaf.path(), leaf.as_scalar());
    }
  }
  EXPECT_EQ(restored.structure_hash(), tree.structure_hash());
  user::Particles back;
  restored.extract("particles", back);
  EXPECT_EQ(back.x, saved.x);
  EXPECT_EQ(back.v, saved.v);
  EXPECT_EQ(back.n, 3);
  // A second add at the same prefix is refused, naming the leaf.
  try {
    tree.add("particles", saved);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("'particles/x'"));
  }
}

}  // namespace
}  // namespace cairn
