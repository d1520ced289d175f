// The shard index (cairn-tree.json) of one saved tree: the array order field ("order": "C" or
// "F") round trips, is "C" when missing (files written before it) and is validated.
#include <cairn/error.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <functional>
#include <string>

#include "storage/index/tree_index.hpp"

namespace cairn::storage {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// An index of a Fortran array "f", a C array "g" (both from 1 rank) and a scalar.
TreeIndex two_arrays() {
  TreeIndex index;
  index.world_size = 1;
  for (const bool fortran : {true, false}) {
    LeafRecord leaf;
    leaf.path = fortran ? "f" : "g";
    leaf.dtype = DType::float64;
    leaf.shape = {8, 6};  // a Fortran f(6, 8), stored with its dimensions reversed
    leaf.fortran_order = fortran;
    leaf.chunk_bytes = 160;  // 384 bytes: chunks of 160, 160 and 64
    leaf.shards.push_back(
        {.rank = 0,
         .box = Box{{0, 0}, {8, 6}},
         .file = "shards/p0.bin",
         .byte_offset = 0,
         .bytes = 8 * 6 * 8,
         .checksums = {0x0123456789abcdefULL, 0xfedcba9876543210ULL, 0x0011223344556677ULL}});
    index.leaves.push_back(std::move(leaf));
  }
  LeafRecord scalar;
  scalar.path = "n";
  scalar.kind = LeafKind::scalar;
  scalar.value = boost::json::parse(R"({"dtype": "int32", "value": 3})");
  index.leaves.insert(index.leaves.begin() + 2, std::move(scalar));
  return index;
}

// The index text with leaf `i`'s "order" replaced by `order` (erased when null).
std::string with_order(std::size_t i, const boost::json::value& order) {
  boost::json::value json = to_json(two_arrays());
  auto& leaf = json.at("leaves").as_array().at(i).as_object();
  if (order.is_null()) {
    leaf.erase("order");
  } else {
    leaf["order"] = order;
  }
  return boost::json::serialize(json);
}

TEST(TreeIndex, OrderRoundTrips) {
  const boost::json::value json = to_json(two_arrays());
  const auto& leaves = json.at("leaves").as_array();
  EXPECT_EQ(leaves.at(0).at("order"), "F");
  EXPECT_EQ(leaves.at(1).at("order"), "C");
  EXPECT_FALSE(leaves.at(2).as_object().contains("order")) << "only arrays have an order";

  const TreeIndex back = parse_index(boost::json::serialize(json), "ckpt/cairn-tree.json");
  ASSERT_EQ(back.leaves.size(), 3u);
  EXPECT_TRUE(back.find("f")->fortran_order);
  EXPECT_FALSE(back.find("g")->fortran_order);
  EXPECT_EQ(back.find("f")->shape, (std::vector<std::int64_t>{8, 6}));
}

TEST(TreeIndex, MissingOrderIsC) {
  const TreeIndex back = parse_index(with_order(0, nullptr), "old/cairn-tree.json");
  EXPECT_FALSE(back.find("f")->fortran_order);
}

TEST(TreeIndex, BadOrderIsAFormatErrorNamingTheField) {
  for (const boost::json::value& bad :
       {boost::json::value("c"), boost::json::value("Fortran"), boost::json::value(""),
        boost::json::value(1), boost::json::value(true)}) {
    try {
      (void)parse_index(with_order(1, bad), "ckpt/cairn-tree.json");
      ADD_FAILURE() << "accepted order " << bad;
    } catch (const FormatError& e) {
      EXPECT_EQ(e.path(), "ckpt/cairn-tree.json");
      EXPECT_EQ(e.field(), "tree.leaves[1].order") << e.what();
      EXPECT_THAT(e.what(), HasSubstr("'tree.leaves[1].order'"));
    }
  }
}

TEST(TreeIndex, ChunkChecksumsRoundTrip) {
  const TreeIndex index = parse_index(boost::json::serialize(to_json(two_arrays())), "t.json");
  ASSERT_EQ(index.version, 2);
  const LeafRecord* f = index.find("f");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->chunk_bytes, 160u);
  EXPECT_EQ(f->shards.at(0).checksums,
            (std::vector<std::uint64_t>{0x0123456789abcdefULL, 0xfedcba9876543210ULL,
                                        0x0011223344556677ULL}));
}

TEST(TreeIndex, ChunkFieldsAreValidated) {
  const auto damaged = [](const std::function<void(boost::json::object&)>& change) {
    boost::json::value json = to_json(two_arrays());
    change(json.at("leaves").as_array().at(0).as_object());
    return boost::json::serialize(json);
  };
  // Two checksums where the chunk size asks for three.
  EXPECT_THAT(
      [&] {
        (void)parse_index(damaged([](boost::json::object& leaf) {
                            leaf["shards"].as_array()[0].as_object()["xxh3"] =
                                "0123456789abcdef0123456789abcdef";
                          }),
                          "t.json");
      },
      ThrowsMessage<FormatError>(HasSubstr("does not hold 3 checksums")));
  // A chunk that splits an element.
  EXPECT_THAT(
      [&] {
        (void)parse_index(damaged([](boost::json::object& leaf) { leaf["chunk_bytes"] = 12; }),
                          "t.json");
      },
      ThrowsMessage<FormatError>(HasSubstr("chunk_bytes")));
  EXPECT_THAT(
      [&] {
        (void)parse_index(damaged([](boost::json::object& leaf) { leaf.erase("chunk_bytes"); }),
                          "t.json");
      },
      ThrowsMessage<FormatError>(HasSubstr("chunk_bytes")));
}

TEST(TreeIndex, Version1HasOneChecksumPerShard) {
  boost::json::value json = to_json(two_arrays());
  json.as_object()["version"] = 1;
  for (auto& leaf : json.at("leaves").as_array()) {
    auto& o = leaf.as_object();
    if (!o.contains("shards")) continue;
    o.erase("chunk_bytes");
    o["shards"].as_array()[0].as_object()["xxh3"] = "0123456789abcdef";
  }
  const TreeIndex index = parse_index(boost::json::serialize(json), "t.json");
  const LeafRecord* g = index.find("g");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->chunk_bytes, 0u);
  EXPECT_EQ(g->shards.at(0).checksums, std::vector<std::uint64_t>{0x0123456789abcdefULL});
  EXPECT_EQ(g->chunk_bytes_of(g->shards.at(0)), 384u) << "one chunk: the whole shard";
}

}  // namespace
}  // namespace cairn::storage
