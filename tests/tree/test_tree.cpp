// Tests of leaf paths, array shards, scalars and the ArrayTree container (no MPI calls).
#include <cairn/tree.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <complex>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace cairn {
namespace {

using ::testing::HasSubstr;
using Shape = std::vector<std::int64_t>;

std::string invalid_argument_message(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const InvalidArgument& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected InvalidArgument, got: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected InvalidArgument, nothing was thrown";
  return {};
}

TEST(LeafPath, AcceptsSafeNames) {
  for (const char* ok : {"u", "fields/u", "particles/x", "a.b/c-d/e_f/g+h", "step.0/..a", "-x",
                         "A9/...", "x/y/z/w"}) {
    EXPECT_FALSE(leaf_path_problem(ok).has_value()) << ok << ": " << *leaf_path_problem(ok);
    EXPECT_NO_THROW(validate_leaf_path(ok));
  }
  EXPECT_NO_THROW(validate_leaf_path(std::string(kMaxPathLength, 'a')));
}

TEST(LeafPath, RejectsUnsafePathsNamingThem) {
  const std::vector<std::string> bad = {"",
                                        "/a",
                                        "a/",
                                        "a//b",
                                        "..",
                                        ".",
                                        "a/../b",
                                        "a/./b",
                                        "a b",
                                        "a\\b",
                                        "a:b",
                                        "caf\xc3\xa9",
                                        "a*",
                                        "x/\"y\"",
                                        std::string("a\0b", 3),
                                        std::string(kMaxPathLength + 1, 'a')};
  for (const std::string& path : bad) {
    EXPECT_TRUE(leaf_path_problem(path).has_value()) << path;
    const std::string message = invalid_argument_message([&] { validate_leaf_path(path); });
    EXPECT_THAT(message, HasSubstr("invalid leaf path '")) << path;
  }
  EXPECT_THAT(invalid_argument_message([] { validate_leaf_path("a//b"); }), HasSubstr("'a//b'"));
  EXPECT_THAT(invalid_argument_message([] { validate_leaf_path("a/../b"); }), HasSubstr("'..'"));
  EXPECT_THAT(invalid_argument_message([] { validate_leaf_path(std::string("a\0b", 3)); }),
              HasSubstr("a\\x00b"));
  EXPECT_THAT(*leaf_path_problem("/a"), HasSubstr("starts with"));
  EXPECT_THAT(*leaf_path_problem("a/"), HasSubstr("ends with"));
  EXPECT_EQ(join_path("", "x"), "x");
  EXPECT_EQ(join_path("a/b", "x"), "a/b/x");
}

TEST(ArrayTree, RejectsDuplicatesAndLeafGroupConflicts) {
  ArrayTree tree;
  tree.add("fields/u", 1.0);
  EXPECT_THAT(invalid_argument_message([&] { tree.add("fields/u", 2.0); }),
              HasSubstr("'fields/u'"));
  // A leaf cannot become a group...
  EXPECT_THAT(invalid_argument_message([&] { tree.add("fields/u/x", 2.0); }),
              HasSubstr("'fields/u' is already a leaf"));
  // ...and a group cannot become a leaf.
  EXPECT_THAT(invalid_argument_message([&] { tree.add("fields", 2.0); }),
              HasSubstr("already a group"));
  EXPECT_THAT(invalid_argument_message([&] { tree.add("fields//v", 2.0); }),
              HasSubstr("'fields//v'"));
  EXPECT_EQ(tree.size(), 1u);  // failed adds leave nothing behind
  EXPECT_FALSE(tree.is_group("fields/u"));
  tree.add("fields/v", 2.0);
  tree.add("fieldsX", 3.0);  // a sibling sharing a name prefix is not a child
  EXPECT_TRUE(tree.is_group("fields"));
  EXPECT_FALSE(tree.is_group("field"));
}

TEST(ArrayTree, KeepsInsertionOrderAndSortsOnRequest) {
  ArrayTree tree;
  tree.add("zeta", 1);
  tree.add("alpha/b", std::string("text"));
  tree.add_json("alpha/a", boost::json::parse(R"({"k": [1, 2]})"));
  EXPECT_EQ(tree.paths(), (std::vector<std::string>{"zeta", "alpha/b", "alpha/a"}));
  EXPECT_EQ(tree.sorted_paths(), (std::vector<std::string>{"alpha/a", "alpha/b", "zeta"}));
  std::vector<std::string> iterated;
  for (const Leaf& leaf : tree) iterated.push_back(leaf.path());
  EXPECT_EQ(iterated, tree.paths());
  const auto under = tree.leaves_under("alpha");
  ASSERT_EQ(under.size(), 2u);
  EXPECT_EQ(under[0]->path(), "alpha/a");
  EXPECT_EQ(tree.leaves_under("").size(), 3u);
  EXPECT_EQ(tree.leaves_under("zeta").size(), 1u);
  EXPECT_EQ(tree.at("alpha/a").as_json().at("k").as_array().size(), 2u);
  EXPECT_EQ(tree.at("alpha/a").kind(), LeafKind::json);
}

TEST(ArrayTree, LookupErrorsNameThePath) {
  ArrayTree tree;
  tree.add("a/b", 1);
  try {
    (void)tree.at("a/c");
    FAIL() << "expected NotFound";
  } catch (const NotFound& e) {
    EXPECT_EQ(e.what_missing(), "a/c");
    EXPECT_THAT(e.what(), HasSubstr("'a/c'"));
  }
  EXPECT_THROW((void)tree.at("a"), NotFound);
  EXPECT_EQ(tree.find("a"), nullptr);
  EXPECT_THAT(invalid_argument_message([&] { (void)tree.at("a/b").as_array(); }),
              HasSubstr("'a/b' is scalar, not array"));
}

double data[24];

ArrayShard quarter(Box box, DType dtype = DType::float64, Shape shape = {8, 8}) {
  ArrayShard s;
  s.dtype = dtype;
  s.global_shape = std::move(shape);
  s.box = std::move(box);
  s.data = data;
  return s;
}

TEST(ArrayTree, StructureHashDependsOnGlobalStructureOnly) {
  // Two "ranks" with different boxes, pointers and insertion order describe one tree.
  double other[16];
  ArrayTree rank0;
  rank0.add_array("fields/u", quarter(Box{{0, 0}, {4, 8}}));
  rank0.add("step", std::int64_t{10});
  rank0.add("name", std::string("run-a"));
  ArrayTree rank1;
  rank1.add("name", std::string("run-b"));
  rank1.add("step", std::int64_t{11});
  ArrayShard s = quarter(Box{{4, 0}, {4, 8}});
  s.data = other;
  rank1.add_array("fields/u", s);
  EXPECT_EQ(rank0.structure_hash(), rank1.structure_hash());

  const auto hash_with = [](ArrayShard shard, const char* path = "fields/u") {
    ArrayTree t;
    t.add_array(path, std::move(shard));
    t.add("step", std::int64_t{10});
    t.add("name", std::string("x"));
    return t.structure_hash();
  };
  const std::uint64_t base = hash_with(quarter(Box{{0, 0}, {4, 8}}));
  EXPECT_EQ(base, rank0.structure_hash());
  EXPECT_NE(base, hash_with(quarter(Box{{0, 0}, {4, 8}}, DType::float32)));
  EXPECT_NE(base, hash_with(quarter(Box{{0, 0}, {4, 8}}, DType::float64, {8, 9})));
  EXPECT_NE(base, hash_with(quarter(Box{{0, 0}, {4, 8}}), "fields/v"));
  ArrayShard replicated = quarter(Box{});
  replicated.replicated = true;
  EXPECT_NE(base, hash_with(replicated));
  ArrayTree empty;
  // FNV-1a 64 of the eight zero bytes that encode "no leaves": pinned, because metadata and
  // agreement checks compare hashes made by different builds.
  EXPECT_EQ(empty.structure_hash(), 0xa8c7f832281a39c5ULL);
}

TEST(ArrayTree, AddArrayValidatesTheShard) {
  ArrayTree tree;
  const auto fails = [&](ArrayShard s) {
    return invalid_argument_message([&] { tree.add_array("fields/u", std::move(s)); });
  };
  EXPECT_THAT(fails(quarter(Box{{6, 0}, {4, 8}})), HasSubstr("[6:10, 0:8]"));
  EXPECT_THAT(fails(quarter(Box{{0}, {4}})), HasSubstr("'fields/u'"));
  ArrayShard s = quarter(Box{{0, 0}, {4, 8}});
  s.replicated = true;
  EXPECT_THAT(fails(s), HasSubstr("replicated"));
  s = quarter(Box{{0, 0}, {4, 8}});
  s.data = nullptr;
  EXPECT_THAT(fails(s), HasSubstr("null"));
  s = quarter(Box{{0, 0}, {4, 8}});
  s.strides = {1};
  EXPECT_THAT(fails(s), HasSubstr("strides"));
  EXPECT_THAT(fails(quarter(Box{}, DType::float64, Shape(33, 1))), HasSubstr("32"));
  EXPECT_THAT(fails(quarter(Box{}, DType::float64, {1 << 30, 1 << 30, 1 << 30})),
              HasSubstr("int64"));
  s = quarter(Box{{0, 0}, {4, 8}});
  s.memory = MemoryKind::cuda_device;
  s.strides = {8, 1};
  EXPECT_THROW(tree.add_array("fields/u", s), Unsupported);
  EXPECT_TRUE(tree.empty());
  // An empty box may have a null pointer; an omitted box means the whole array.
  s = quarter(Box{{0, 0}, {0, 8}});
  s.data = nullptr;
  tree.add_array("empty", s);
  tree.add_array("whole", quarter(Box{}, DType::float64, {4, 6}));
  EXPECT_EQ(tree.at("whole").as_array().box, (Box{{0, 0}, {4, 6}}));
  EXPECT_EQ(tree.at("whole").as_array().local_bytes(), 4 * 6 * 8);
}

TEST(ArrayTree, OwnedArraysAreZeroedAndShared) {
  ArrayTree tree;
  auto* p = static_cast<std::int32_t*>(
      tree.add_owned_array("restored/u", DType::int32, {10, 4}, Box{{2, 0}, {3, 4}}));
  for (int k = 0; k < 12; ++k) EXPECT_EQ(p[k], 0);
  p[11] = 42;
  ArrayTree copy = tree;
  tree = ArrayTree();  // the copy keeps the buffer alive
  const ArrayShard& s = copy.at("restored/u").as_array();
  EXPECT_EQ(static_cast<std::int32_t*>(s.data)[11], 42);
  EXPECT_NE(copy.at("restored/u").owner(), nullptr);
  EXPECT_NE(tree.add_owned_array("none", DType::int8, {0}), nullptr);
  EXPECT_THROW(tree.add_owned_array("bad", DType::int8, {4}, Box{{3}, {2}}), InvalidArgument);
}

TEST(ArrayShard, ContiguityAndLayout) {
  ArrayShard s = ArrayShard::host(data, {4, 6}, Box{{0, 0}, {4, 6}});
  EXPECT_TRUE(s.contiguous());
  s.strides = {6, 1};
  EXPECT_TRUE(s.contiguous());
  s.strides = {1, 4};
  EXPECT_FALSE(s.contiguous());
  s.box = Box{{0, 0}, {1, 6}};
  s.strides = {99, 1};  // the stride of a length-1 axis does not matter
  EXPECT_TRUE(s.contiguous());
  const LeafLayout l = s.layout();
  EXPECT_EQ(l.dtype, DType::float64);
  EXPECT_EQ(l.global_shape, (Shape{4, 6}));
  EXPECT_EQ(l.box, (Box{{0, 0}, {1, 6}}));
  s.box = Box{{0, 0}, {0, 6}};
  EXPECT_FALSE(s.layout().box.has_value());
  const std::int16_t value = 3;
  EXPECT_EQ(ArrayShard::host(&value, {}).local_volume(), 1);
}

TEST(Scalar, HoldsAnyDtypeAndConvertsWithChecks) {
  EXPECT_EQ(Scalar(std::int8_t{-5}).dtype(), DType::int8);
  EXPECT_EQ(Scalar(2.5).as<float>(), 2.5f);
  EXPECT_EQ(Scalar(std::int64_t{300}).as<std::int32_t>(), 300);
  EXPECT_THAT(
      invalid_argument_message([] { (void)Scalar(std::int64_t{300}).as<std::int8_t>("leaf 'n'"); }),
      HasSubstr("leaf 'n'"));
  const std::uint16_t half = float16_from_double(0.5);
  EXPECT_EQ(Scalar(DType::float16, &half).as<double>(), 0.5);
  EXPECT_THROW(Scalar(DType::float16, nullptr), InvalidArgument);
  EXPECT_EQ(Scalar(true), Scalar(true));
  EXPECT_FALSE(Scalar(1) == Scalar(1.0));
}

TEST(Scalar, JsonRoundTripIncludingSpecialValues) {
  const std::uint16_t bf = bfloat16_from_double(-1.5);
  const std::vector<Scalar> values = {Scalar(true),
                                      Scalar(std::int8_t{-128}),
                                      Scalar(std::numeric_limits<std::uint64_t>::max()),
                                      Scalar(std::numeric_limits<std::int64_t>::min()),
                                      Scalar(0.1f),
                                      Scalar(1e300),
                                      Scalar(std::numeric_limits<double>::infinity()),
                                      Scalar(-std::numeric_limits<float>::infinity()),
                                      Scalar(std::complex<double>(1.25, -3)),
                                      Scalar(DType::bfloat16, &bf)};
  for (const Scalar& s : values) {
    const std::string text = boost::json::serialize(s.to_json());
    EXPECT_EQ(Scalar::from_json(boost::json::parse(text)), s) << text;
  }
  const Scalar nan = Scalar::from_json(Scalar(std::nan("")).to_json());
  EXPECT_TRUE(std::isnan(nan.as<double>()));
}

TEST(Scalar, HostileJsonIsAFormatError) {
  const auto field = [](std::string_view text) -> std::string {
    try {
      (void)Scalar::from_json(boost::json::parse(text), "meta.json", "leaves[0]");
    } catch (const FormatError& e) {
      EXPECT_EQ(e.path(), "meta.json");
      return e.field();
    }
    ADD_FAILURE() << text << " was accepted";
    return {};
  };
  EXPECT_EQ(field("3"), "leaves[0]");
  EXPECT_EQ(field(R"({"value": 3})"), "leaves[0].dtype");
  EXPECT_EQ(field(R"({"dtype": "int9", "value": 3})"), "leaves[0].dtype");
  EXPECT_EQ(field(R"({"dtype": "int8"})"), "leaves[0].value");
  EXPECT_EQ(field(R"({"dtype": "int8", "value": 300})"), "leaves[0].value");
  EXPECT_EQ(field(R"({"dtype": "uint8", "value": -1})"), "leaves[0].value");
  EXPECT_EQ(field(R"({"dtype": "int32", "value": 1.5})"), "leaves[0].value");
  EXPECT_EQ(field(R"({"dtype": "bool", "value": 1})"), "leaves[0].value");
  EXPECT_EQ(field(R"({"dtype": "float32", "value": 1e300})"), "leaves[0].value");
  EXPECT_EQ(field(R"({"dtype": "float64", "value": "pi"})"), "leaves[0].value");
  EXPECT_EQ(field(R"({"dtype": "complex64", "value": [1]})"), "leaves[0].value");
}

}  // namespace
}  // namespace cairn
