// Tests of shard layout validation and of its JSON form (tree layer; no MPI calls).
#include <cairn/layout.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace cairn {
namespace {

using ::testing::HasSubstr;
using Shape = std::vector<std::int64_t>;

LeafLayout shard(Shape shape, std::optional<Box> box, DType dtype = DType::float64,
                 bool replicated = false) {
  LeafLayout l;
  l.dtype = dtype;
  l.global_shape = std::move(shape);
  l.box = std::move(box);
  l.replicated = replicated;
  return l;
}

// An 8x8 array split into four 4x4 quadrants, one per rank.
std::vector<LeafLayout> quadrants() {
  return {shard({8, 8}, Box{{0, 0}, {4, 4}}), shard({8, 8}, Box{{0, 4}, {4, 4}}),
          shard({8, 8}, Box{{4, 0}, {4, 4}}), shard({8, 8}, Box{{4, 4}, {4, 4}})};
}

template <class E, class Fn>
E expect_throw(Fn&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected exception: " << e.what();
    throw;
  }
  ADD_FAILURE() << "nothing was thrown";
  throw std::logic_error("nothing was thrown");
}

TEST(Layout, ValidDecompositionReportsWriters) {
  const auto per_rank = quadrants();
  const LayoutSummary s = validate_layout("fields/u", per_rank);
  EXPECT_EQ(s.writers, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(s.global_volume, 64);
  EXPECT_EQ(s.covered_volume, 64);
}

TEST(Layout, RanksWithoutShardsAreFine) {
  std::vector<LeafLayout> per_rank = {shard({10}, Box{{0}, {6}}), shard({10}, std::nullopt),
                                      shard({10}, Box{{3}, {0}}), shard({10}, Box{{6}, {4}})};
  EXPECT_EQ(validate_layout("x", per_rank).writers, (std::vector<int>{0, 3}));
}

TEST(Layout, DisagreementIsACollectiveMismatchNamingRankAndValues) {
  auto per_rank = quadrants();
  per_rank[2].dtype = DType::float32;
  const auto e = expect_throw<CollectiveMismatch>([&] { validate_layout("fields/u", per_rank); });
  EXPECT_EQ(e.rank(), 2);
  EXPECT_EQ(e.field(), "dtype");
  EXPECT_THAT(e.what(), HasSubstr("'fields/u'"));
  EXPECT_THAT(e.what(), HasSubstr("float32"));
  EXPECT_THAT(e.what(), HasSubstr("float64"));

  per_rank = quadrants();
  per_rank[3].global_shape = {8, 9};
  const auto s = expect_throw<CollectiveMismatch>([&] { validate_layout("fields/u", per_rank); });
  EXPECT_EQ(s.rank(), 3);
  EXPECT_EQ(s.field(), "global_shape");
  EXPECT_THAT(s.what(), HasSubstr("(8, 9)"));
  EXPECT_THAT(s.what(), HasSubstr("(8, 8)"));

  per_rank = quadrants();
  per_rank[1].replicated = true;
  EXPECT_EQ(expect_throw<CollectiveMismatch>([&] { validate_layout("u", per_rank); }).field(),
            "replicated");
}

TEST(Layout, RanksDisagreeingOnFortranOrderAreACollectiveMismatch) {
  // Two ranks, each half of a Fortran u(4, 8) stored as the C-order (8, 4).
  std::vector<LeafLayout> per_rank = {shard({8, 4}, Box{{0, 0}, {4, 4}}),
                                      shard({8, 4}, Box{{4, 0}, {4, 4}})};
  for (auto& l : per_rank) l.fortran_order = true;
  EXPECT_NO_THROW(validate_layout("fields/u", per_rank));

  per_rank[1].fortran_order = false;
  const auto e = expect_throw<CollectiveMismatch>([&] { validate_layout("fields/u", per_rank); });
  EXPECT_EQ(e.rank(), 1);
  EXPECT_EQ(e.field(), "fortran_order");
  EXPECT_THAT(e.what(), HasSubstr("'fields/u'"));
  EXPECT_THAT(e.what(), HasSubstr("rank 1 does not mark it a Fortran (column-major) array"));

  per_rank[0].fortran_order = false;
  per_rank[1].fortran_order = true;
  EXPECT_EQ(expect_throw<CollectiveMismatch>([&] { validate_layout("u", per_rank); }).rank(), 1);
}

TEST(Layout, OutOfRangeBoxNamesRankBoxAndShape) {
  auto per_rank = quadrants();
  per_rank[1].box = Box{{0, 5}, {4, 4}};
  const auto e = expect_throw<InvalidArgument>([&] { validate_layout("fields/u", per_rank); });
  EXPECT_THAT(e.what(), HasSubstr("'fields/u'"));
  EXPECT_THAT(e.what(), HasSubstr("rank 1"));
  EXPECT_THAT(e.what(), HasSubstr("[0:4, 5:9]"));
  EXPECT_THAT(e.what(), HasSubstr("(8, 8)"));
  per_rank[1].box = Box{{0}, {4}};  // wrong number of dimensions
  expect_throw<InvalidArgument>([&] { validate_layout("fields/u", per_rank); });
}

TEST(Layout, OverlapNamesBothRanksAndTheRegion) {
  auto per_rank = quadrants();
  per_rank[3].box = Box{{3, 3}, {5, 5}};
  const auto e = expect_throw<InvalidArgument>([&] { validate_layout("fields/u", per_rank); });
  EXPECT_THAT(e.what(), HasSubstr("'fields/u'"));
  EXPECT_THAT(e.what(), HasSubstr("rank 0"));
  EXPECT_THAT(e.what(), HasSubstr("rank 3"));
  EXPECT_THAT(e.what(), HasSubstr("overlap in [3:4, 3:4]"));
}

TEST(Layout, HoleIsReportedUnlessSparseIsAllowed) {
  auto per_rank = quadrants();
  per_rank[2].box = std::nullopt;
  const auto e = expect_throw<InvalidArgument>([&] { validate_layout("fields/u", per_rank); });
  EXPECT_THAT(e.what(), HasSubstr("'fields/u'"));
  EXPECT_THAT(e.what(), HasSubstr("48 of 64"));
  EXPECT_THAT(e.what(), HasSubstr("[4:8, 0:4]"));
  const LayoutSummary s = validate_layout("fields/u", per_rank, /*allow_sparse=*/true);
  EXPECT_EQ(s.covered_volume, 48);
  EXPECT_EQ(s.writers, (std::vector<int>{0, 1, 3}));
}

TEST(Layout, ReplicatedLeavesHoldTheWholeArray) {
  const Box whole{{0, 0}, {3, 4}};
  std::vector<LeafLayout> per_rank = {shard({3, 4}, whole, DType::int32, true),
                                      shard({3, 4}, whole, DType::int32, true),
                                      shard({3, 4}, whole, DType::int32, true)};
  const LayoutSummary s = validate_layout("params", per_rank);
  EXPECT_EQ(s.writers, std::vector<int>{0});  // one rank writes it
  per_rank[0].box = std::nullopt;
  EXPECT_EQ(validate_layout("params", per_rank).writers, std::vector<int>{1});
  per_rank[2].box = Box{{0, 0}, {3, 3}};
  const auto e = expect_throw<InvalidArgument>([&] { validate_layout("params", per_rank); });
  EXPECT_THAT(e.what(), HasSubstr("rank 2"));
  EXPECT_THAT(e.what(), HasSubstr("replicated"));
  for (auto& l : per_rank) l.box = std::nullopt;  // nobody holds it: a hole
  expect_throw<InvalidArgument>([&] { validate_layout("params", per_rank); });
  EXPECT_EQ(validate_layout("params", per_rank, true).writers, std::vector<int>{});
}

TEST(Layout, ZeroDimensionalAndEmptyArrays) {
  std::vector<LeafLayout> per_rank = {shard({}, std::nullopt), shard({}, Box{})};
  EXPECT_EQ(validate_layout("t", per_rank).writers, std::vector<int>{1});
  per_rank[0].box = Box{};
  EXPECT_THAT(expect_throw<InvalidArgument>([&] { validate_layout("t", per_rank); }).what(),
              HasSubstr("overlap"));
  per_rank = {shard({}, std::nullopt)};
  EXPECT_THAT(expect_throw<InvalidArgument>([&] { validate_layout("t", per_rank); }).what(),
              HasSubstr("0 of 1"));
  per_rank = {shard({0, 5}, std::nullopt), shard({0, 5}, Box{{0, 0}, {0, 5}})};
  EXPECT_EQ(validate_layout("empty", per_rank).global_volume, 0);
  expect_throw<InvalidArgument>([] { validate_layout("x", {}); });
}

TEST(Layout, ManyRanksSlabDecomposition) {
  std::vector<LeafLayout> per_rank;
  for (int r = 0; r < 4096; ++r)
    per_rank.push_back(shard({4096 * 10, 7}, Box{{r * 10, 0}, {10, 7}}));
  EXPECT_EQ(validate_layout("big", per_rank).covered_volume, 4096 * 10 * 7);
  per_rank[1234].box->extent[1] = 6;  // a one-column hole at the end of rank 1234's rows
  const auto e = expect_throw<InvalidArgument>([&] { validate_layout("big", per_rank); });
  EXPECT_THAT(e.what(), HasSubstr("[12340:12350, 6:7]"));
}

TEST(Layout, ReportedHoleIsReallyUncovered) {
  // Random grid decompositions of a 3-d array with some cells dropped.
  std::mt19937 rng(99);
  const Shape shape = {12, 10, 9};
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<std::vector<std::int64_t>> cuts(3);
    for (std::size_t d = 0; d < 3; ++d) {
      cuts[d] = {0, shape[d]};
      for (int k = 0; k < 3; ++k) {
        cuts[d].push_back(std::uniform_int_distribution<std::int64_t>(1, shape[d] - 1)(rng));
      }
      std::sort(cuts[d].begin(), cuts[d].end());
      cuts[d].erase(std::unique(cuts[d].begin(), cuts[d].end()), cuts[d].end());
    }
    std::vector<LeafLayout> per_rank;
    std::bernoulli_distribution drop(0.1);
    for (std::size_t i = 0; i + 1 < cuts[0].size(); ++i)
      for (std::size_t j = 0; j + 1 < cuts[1].size(); ++j)
        for (std::size_t k = 0; k + 1 < cuts[2].size(); ++k) {
          Box b{{cuts[0][i], cuts[1][j], cuts[2][k]},
                {cuts[0][i + 1] - cuts[0][i], cuts[1][j + 1] - cuts[1][j],
                 cuts[2][k + 1] - cuts[2][k]}};
          per_rank.push_back(shard(shape, drop(rng) ? std::nullopt : std::optional<Box>(b)));
        }
    std::shuffle(per_rank.begin(), per_rank.end(), rng);
    std::int64_t covered = 0;
    for (const auto& l : per_rank) covered += l.box ? volume(*l.box) : 0;
    if (covered == volume(shape)) {
      EXPECT_NO_THROW(validate_layout("g", per_rank));
      continue;
    }
    const auto e = expect_throw<InvalidArgument>([&] { validate_layout("g", per_rank); });
    // Parse the reported region "[a:b, c:d, e:f]" and check it against every shard.
    const std::string m = e.what();
    const auto open = m.find("region [");
    ASSERT_NE(open, std::string::npos) << m;
    Box hole;
    const char* p = m.c_str() + open + 8;
    for (int d = 0; d < 3; ++d) {
      char* end = nullptr;
      const std::int64_t lo = std::strtoll(p, &end, 10);
      const std::int64_t hi = std::strtoll(end + 1, &end, 10);
      hole.offset.push_back(lo);
      hole.extent.push_back(hi - lo);
      p = end + 2;
    }
    ASSERT_GT(volume(hole), 0) << m;
    ASSERT_FALSE(box_problem(hole, shape).has_value()) << m;
    for (const auto& l : per_rank) {
      if (l.box) {
        ASSERT_FALSE(intersect(hole, *l.box).has_value()) << m;
      }
    }
  }
}

TEST(LayoutJson, RoundTrips) {
  for (const LeafLayout& l :
       {shard({8, 8}, Box{{4, 0}, {4, 8}}, DType::bfloat16),
        shard({}, Box{}, DType::complex128, true), shard({5}, std::nullopt, DType::uint64)}) {
    const boost::json::value j = l.to_json();
    EXPECT_EQ(LeafLayout::from_json(boost::json::parse(boost::json::serialize(j))), l) << j;
  }
  LeafLayout fortran = shard({6, 8}, Box{{0, 0}, {3, 8}});
  fortran.fortran_order = true;
  EXPECT_EQ(LeafLayout::from_json(boost::json::parse(boost::json::serialize(fortran.to_json()))),
            fortran);
  // Without "fortran_order" (written before it existed): false.
  EXPECT_FALSE(LeafLayout::from_json(boost::json::parse(R"({"dtype":"int8","shape":[4],"box":null,)"
                                                        R"("replicated":false})"))
                   .fortran_order);
}

// Expects FormatError from parsing `text`; returns the error's field.
std::string bad_field(std::string_view text) {
  try {
    (void)LeafLayout::from_json(boost::json::parse(text), "/ckpt/cairn-tree.json", "leaves[3]");
  } catch (const FormatError& e) {
    EXPECT_EQ(e.path(), "/ckpt/cairn-tree.json");
    EXPECT_THAT(e.what(), HasSubstr(e.field()));
    return e.field();
  } catch (const std::exception& e) {
    ADD_FAILURE() << text << ": unexpected exception " << e.what();
    return {};
  }
  ADD_FAILURE() << text << ": accepted";
  return {};
}

TEST(LayoutJson, HostileInputIsAFormatErrorNamingTheField) {
  const std::string ok_box = R"("box":{"offset":[0],"extent":[4]})";
  EXPECT_EQ(bad_field("[]"), "leaves[3]");
  EXPECT_EQ(bad_field(R"({"shape":[4],"box":null,"replicated":false})"), "leaves[3].dtype");
  EXPECT_EQ(bad_field(R"({"dtype":7,"shape":[4],"box":null,"replicated":false})"),
            "leaves[3].dtype");
  EXPECT_EQ(bad_field(R"({"dtype":"float128","shape":[4],"box":null,"replicated":false})"),
            "leaves[3].dtype");
  EXPECT_EQ(bad_field(R"({"dtype":"int8","shape":"4","box":null,"replicated":false})"),
            "leaves[3].shape");
  EXPECT_EQ(bad_field(R"({"dtype":"int8","shape":[4,-1],"box":null,"replicated":false})"),
            "leaves[3].shape[1]");
  EXPECT_EQ(bad_field(R"({"dtype":"int8","shape":[4.5],"box":null,"replicated":false})"),
            "leaves[3].shape[0]");
  EXPECT_EQ(bad_field(R"({"dtype":"int8","shape":[18446744073709551615],"box":null,)"
                      R"("replicated":false})"),
            "leaves[3].shape[0]");
  EXPECT_EQ(bad_field(R"({"dtype":"int8","shape":[4294967296,4294967296],"box":null,)"
                      R"("replicated":false})"),
            "leaves[3].shape");
  std::string many = R"({"dtype":"int8","shape":[)";
  for (int k = 0; k < 33; ++k) many += k ? ",1" : "1";
  EXPECT_EQ(bad_field(many + R"(],"box":null,"replicated":false})"), "leaves[3].shape");
  EXPECT_EQ(bad_field(R"({"dtype":"int8","shape":[4],"replicated":false})"), "leaves[3].box");
  EXPECT_EQ(bad_field(R"({"dtype":"int8","shape":[4],"box":[0,4],"replicated":false})"),
            "leaves[3].box");
  EXPECT_EQ(bad_field(R"({"dtype":"int8","shape":[4],"box":{"extent":[4]},"replicated":false})"),
            "leaves[3].box.offset");
  EXPECT_EQ(bad_field(R"({"dtype":"int8","shape":[4],"box":{"offset":[0],"extent":[-4]},)"
                      R"("replicated":false})"),
            "leaves[3].box.extent[0]");
  EXPECT_EQ(bad_field(R"({"dtype":"int8","shape":[4],"box":{"offset":[0,0],"extent":[4,1]},)"
                      R"("replicated":false})"),
            "leaves[3].box");
  EXPECT_EQ(bad_field(R"({"dtype":"int8","shape":[4],"box":{"offset":[2],"extent":[4]},)"
                      R"("replicated":false})"),
            "leaves[3].box");
  EXPECT_EQ(bad_field(R"({"dtype":"int8","shape":[4],)" + ok_box + "}"), "leaves[3].replicated");
  EXPECT_EQ(bad_field(R"({"dtype":"int8","shape":[4],)" + ok_box + R"(,"replicated":1})"),
            "leaves[3].replicated");
  EXPECT_EQ(bad_field(R"({"dtype":"int8","shape":[4],)" + ok_box +
                      R"(,"replicated":false,"fortran_order":"F"})"),
            "leaves[3].fortran_order");
}

}  // namespace
}  // namespace cairn
