// What the ranks of a save exchange (storage/save_exchange.hpp): a rank's layouts travel as a
// table of its distinct layouts and one position per leaf, so that what every rank receives
// does not grow with ranks x leaves x a layout; every rank gets back each rank's layout of
// each leaf; a bad position names the rank; shard records round-trip packed (chunk sizes and
// places kept, each file name sent once).
#include <gtest/gtest.h>

#include <cairn/error.hpp>
#include <cairn/tree.hpp>

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "base/packed.hpp"
#include "storage/engine/save_exchange.hpp"
#include "storage/index/record_packing.hpp"
#include "storage/storage_test_util.hpp"

namespace cairn::testing {
namespace {

using storage::ExchangedLayouts;
using storage::layouts_to_exchange;
using storage::pack_records;
using storage::ShardRecord;
using storage::unpack_records;

const std::vector<std::int64_t> kShape = {64, 32};
const std::vector<std::int64_t> kOther = {10};

// 40 leaves of one shape and 2 of another, plus a scalar, on this rank's slab.
struct Tree {
  std::vector<double> a, b;
  ArrayTree tree;
  Tree(int rank, int size)
      : a(static_cast<std::size_t>(volume(slab_box(kShape, rank, size)))),
        b(static_cast<std::size_t>(volume(slab_box(kOther, rank, size))) + 1) {
    for (int i = 0; i < 40; ++i) {
      tree.add_array("big/" + std::to_string(100 + i), {.dtype = DType::float64,
                                                        .global_shape = kShape,
                                                        .box = slab_box(kShape, rank, size),
                                                        .data = a.data()});
    }
    for (const char* name : {"small/x", "small/y"}) {
      tree.add_array(name, {.dtype = DType::float64,
                            .global_shape = kOther,
                            .box = slab_box(kOther, rank, size),
                            .data = b.data()});
    }
    tree.add_scalar("step", Scalar(std::int64_t{7}));
  }
};

TEST(SaveExchange, ALayoutIsSentOnceAndEveryLeafNamesIt) {
  Comm comm(MPI_COMM_WORLD);
  Tree t(comm.rank(), comm.size());
  const boost::json::object sent = layouts_to_exchange(t.tree.leaves_under(""));
  EXPECT_EQ(sent.at("table").as_array().size(), 2u) << boost::json::serialize(sent);
  ASSERT_EQ(sent.at("leaf").as_array().size(), 42u);  // array leaves only
  // Sorted paths: the 40 "big/..." leaves, then "small/x" and "small/y".
  for (std::size_t i = 0; i < 40; ++i)
    EXPECT_EQ(sent.at("leaf").as_array()[i].to_number<std::int64_t>(), 0);
  EXPECT_EQ(sent.at("leaf").as_array()[40].to_number<std::int64_t>(), 1);
  EXPECT_EQ(sent.at("leaf").as_array()[41].to_number<std::int64_t>(), 1);
  // What a rank sends stays far below one layout per leaf.
  const std::string one =
      boost::json::serialize(t.tree.leaves_under("").front()->as_array().layout().to_json());
  EXPECT_LT(boost::json::serialize(sent).size(), 4 * one.size() + 42 * 3);
}

TEST(SaveExchange, EveryRankGetsEachRanksLayoutOfEachLeaf) {
  Comm comm(MPI_COMM_WORLD);
  Tree t(comm.rank(), comm.size());
  const ExchangedLayouts layouts(comm.allgather_json(layouts_to_exchange(t.tree.leaves_under(""))),
                                 42);
  for (std::size_t i = 0; i < 42; ++i) {
    const std::vector<LeafLayout> per_rank = layouts.of_leaf(i);
    ASSERT_EQ(per_rank.size(), static_cast<std::size_t>(comm.size()));
    const auto& shape = i < 40 ? kShape : kOther;
    for (int r = 0; r < comm.size(); ++r) {
      EXPECT_EQ(per_rank[static_cast<std::size_t>(r)].global_shape, shape);
      ASSERT_TRUE(per_rank[static_cast<std::size_t>(r)].box.has_value());
      EXPECT_EQ(*per_rank[static_cast<std::size_t>(r)].box, slab_box(shape, r, comm.size()))
          << "leaf " << i << " rank " << r;
    }
  }
}

TEST(SaveExchange, APositionOutsideTheTableNamesTheRank) {
  Comm comm(MPI_COMM_WORLD);
  Tree t(comm.rank(), comm.size());
  boost::json::object sent = layouts_to_exchange(t.tree.leaves_under(""));
  std::vector<boost::json::value> all(2, sent);
  all[1].as_object()["leaf"].as_array()[3] = 9;
  try {
    (void)ExchangedLayouts(all, 42);
    FAIL() << "a position outside the table was taken";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 names layout 9 of 2"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)ExchangedLayouts(all, 41), FormatError);  // another number of leaves
}

// Numbers in one byte per seven bits, at the edges of each length; strings and checksums as
// they are; cut or overlong input refused.
TEST(SaveExchange, PackedNumbersRoundTrip) {
  const std::vector<std::uint64_t> numbers = {
      0, 1, 127, 128, 16383, 16384, 0xffffffffULL, 1ULL << 62, 1ULL << 63, 0xffffffffffffffffULL};
  base::Packed out;
  for (const std::uint64_t n : numbers) out.put(n);
  out.put(std::string_view("shards/p3.bin"));
  out.put_all(numbers);
  out.put_byte(7);
  std::vector<std::byte> bytes = out.bytes();
  EXPECT_EQ(bytes.size(), 1 + 1 + 1 + 2 + 2 + 3 + 5 + 9 + 10 + 10 + (1 + 13) + 8 * 10 + 1U);
  base::Unpacked in(bytes);
  for (const std::uint64_t n : numbers) EXPECT_EQ(in.take(), n);
  EXPECT_EQ(in.take_text(), "shards/p3.bin");
  EXPECT_EQ(in.take_all(numbers.size()), numbers);
  EXPECT_EQ(in.take_byte(), 7);
  EXPECT_TRUE(in.done());
  EXPECT_THROW((void)in.take(), Error);  // nothing left
  // A 10-byte number with bits beyond the 64th, a count of more numbers than bytes.
  std::vector<std::byte> overlong(9, std::byte{0xff});
  overlong.push_back(std::byte{0x02});
  EXPECT_THROW((void)base::Unpacked(overlong).take(), Error);
  EXPECT_THROW((void)base::Unpacked(bytes).take_all(std::uint64_t{1} << 61), Error);
}

TEST(SaveExchange, ShardRecordsRoundTripPacked) {
  const ShardRecord referring{
      .rank = 3,
      .box = {{0, 4}, {2, 4}},
      .file = "shards/p3.bin",
      .byte_offset = 8192,
      .bytes = 64,
      .checksums = {1, 2, 3},
      .chunk_refs = {{}, {.file = 0, .byte_offset = 4096}, {.file = 1, .byte_offset = 16}},
      .ref_files = {"shards/r0.bin", "shards/r5.bin"}};
  const ShardRecord compressed{.rank = 3,
                               .box = {{5}, {7}},
                               .file = "shards/p3.bin",
                               .byte_offset = 12288,
                               .bytes = 56,
                               .checksums = {0xffffffffffffffffULL, 9},
                               .chunk_sizes = {40, 3}};
  const ShardRecord scalar{.rank = 3, .box = {}, .file = "data.h5", .bytes = 8, .checksums = {42}};
  const std::vector<std::pair<std::size_t, ShardRecord>> sent = {
      {7, referring}, {0, compressed}, {12, scalar}};
  const std::vector<std::byte> bytes = pack_records(sent);
  std::vector<std::pair<std::size_t, ShardRecord>> back;
  unpack_records(
      bytes, [&](std::size_t array, ShardRecord&& s) { back.emplace_back(array, std::move(s)); });
  ASSERT_EQ(back.size(), sent.size());
  for (std::size_t i = 0; i < sent.size(); ++i) {
    SCOPED_TRACE(i);
    const ShardRecord& s = sent[i].second;
    const ShardRecord& b = back[i].second;
    EXPECT_EQ(back[i].first, sent[i].first);
    EXPECT_EQ(b.rank, s.rank);
    EXPECT_EQ(b.box, s.box);
    EXPECT_EQ(b.file, s.file);
    EXPECT_EQ(b.byte_offset, s.byte_offset);
    EXPECT_EQ(b.bytes, s.bytes);
    EXPECT_EQ(b.checksums, s.checksums);
    EXPECT_EQ(b.chunk_sizes, s.chunk_sizes);
    EXPECT_EQ(b.chunk_refs, s.chunk_refs);
    EXPECT_EQ(b.ref_files, s.ref_files);
  }
  // Each file name travels once per rank, not once per record.
  const std::string text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const std::string name = "shards/p3.bin";
  EXPECT_EQ(text.find(name), text.rfind(name));
  // A rank's record of a small 1-D shard with one checksum, as the scaling study saves them,
  // takes its checksum's 8 bytes and at most 24 for the rest.
  std::vector<std::pair<std::size_t, ShardRecord>> many;
  for (std::size_t l = 0; l < 1000; ++l) {
    many.push_back({l, ShardRecord{.rank = 700,
                                   .box = {{700 * 32}, {32}},
                                   .file = "shards/p700.bin",
                                   .byte_offset = 4096 * l,
                                   .bytes = 256,
                                   .checksums = {0x9e3779b97f4a7c15ULL * l}}});
  }
  EXPECT_LE(pack_records(many).size(), 1000u * 32);
  // Cut bytes are refused, not read past their end.
  const auto cut = std::span(bytes).first(bytes.size() - 5);
  EXPECT_THROW(unpack_records(cut, [](std::size_t, ShardRecord&&) {}), Error);
}

}  // namespace
}  // namespace cairn::testing
