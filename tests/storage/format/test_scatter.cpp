// Scattered reads: a range of a shard's stream read straight into buffers that lie apart (the
// rows of a wider target), through base::PosixFile, each format's ShardReader and restore_tree.
#include <gtest/gtest.h>
#include <sys/uio.h>

#include <cairn/error.hpp>
#include <cairn/storage.hpp>

#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "base/durable_file.hpp"
#include "base/posix_file.hpp"
#include "storage/format/format_table.hpp"
#include "storage/index/binary.hpp"
#include "storage/index/tree_index.hpp"
#include "storage/storage_test_util.hpp"
#include "storage/stream/shard_stream.hpp"
#include "support/test_support.hpp"

namespace cairn::testing {
namespace {

using storage::LeafRecord;
using storage::ShardRecord;

// Buffers of the given sizes cut from `storage`, one after the other.
std::vector<std::span<std::byte>> cut(std::vector<std::byte>& storage,
                                      const std::vector<std::size_t>& sizes) {
  storage.assign(std::accumulate(sizes.begin(), sizes.end(), std::size_t{0}), std::byte{0xEE});
  std::vector<std::span<std::byte>> pieces;
  std::size_t at = 0;
  for (std::size_t size : sizes) {
    pieces.emplace_back(storage.data() + at, size);
    at += size;
  }
  return pieces;
}

std::vector<std::byte> pattern(std::size_t bytes) {
  std::vector<std::byte> out(bytes);
  for (std::size_t i = 0; i < bytes; ++i)
    out[i] = static_cast<std::byte>((i * 131 + i / 251) & 0xFF);
  return out;
}

TEST(Scatter, SliceCutsTheFirstAndLastPieces) {
  std::vector<std::byte> storage;
  const auto pieces = cut(storage, {3, 0, 5, 8});
  const auto part = storage::scatter_slice(pieces, 2, 9);
  ASSERT_EQ(part.size(), 3U);
  EXPECT_EQ(part[0].data(), storage.data() + 2);
  EXPECT_EQ(part[0].size(), 1U);
  EXPECT_EQ(part[1].data(), storage.data() + 3);
  EXPECT_EQ(part[1].size(), 5U);
  EXPECT_EQ(part[2].data(), storage.data() + 8);
  EXPECT_EQ(part[2].size(), 3U);
  EXPECT_EQ(storage::scatter_bytes(part), 9U);
  EXPECT_TRUE(storage::scatter_slice(pieces, 16, 0).empty());
  EXPECT_THROW((void)storage::scatter_slice(pieces, 10, 7), InvalidArgument);
}

TEST(Scatter, RunCountMatchesTheRuns) {
  const Box box{{2, 0, 5}, {6, 4, 7}};
  const std::vector<Box> regions = {
      box,                        // whole: one run
      Box{{3, 0, 5}, {2, 4, 7}},  // whole trailing dimensions: one run
      Box{{3, 1, 5}, {2, 2, 7}},  // part of dimension 1: one run per index of dimension 0
      Box{{3, 1, 6}, {2, 2, 3}},  // part of the last dimension: one run per row
      Box{{4, 2, 8}, {1, 1, 1}},  // one element
      Box{{4, 2, 8}, {0, 1, 1}},  // empty
  };
  for (const Box& region : regions) {
    EXPECT_EQ(storage::stream_run_count(box, region),
              static_cast<std::int64_t>(storage::stream_runs(box, region).size()))
        << to_string(region);
  }
  EXPECT_EQ(storage::stream_run_count(Box{}, Box{}), 1);
  EXPECT_THROW((void)storage::stream_run_count(box, Box{{0, 0, 0}, {1, 1, 1}}), InvalidArgument);
}

TEST(Scatter, PosixFileFillsManyPiecesAndNamesATruncatedFile) {
  SharedTempDir tmp;
  Comm world(MPI_COMM_WORLD);
  const auto file = tmp / ("bytes-" + std::to_string(world.rank()));
  // More pieces than one readv takes, of uneven sizes (some empty), from an odd offset.
  std::vector<std::size_t> sizes;
  for (std::size_t k = 0; k < 3 * IOV_MAX + 7; ++k) sizes.push_back((k * 37) % 61);
  const std::size_t total = std::accumulate(sizes.begin(), sizes.end(), std::size_t{0});
  const auto bytes = pattern(total + 11);
  {
    std::ofstream out(file, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  }
  const base::PosixFile in(file, base::PosixFile::Mode::read);
  std::vector<std::byte> got;
  const auto pieces = cut(got, sizes);
  in.read_at(11, pieces);
  EXPECT_EQ(std::memcmp(got.data(), bytes.data() + 11, total), 0);

  std::vector<std::byte> past;
  const auto beyond = cut(past, {8, 16});
  try {
    in.read_at(total, beyond);
    ADD_FAILURE() << "a read past the end of the file was accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
}

// Every format's reader: read_scattered() into uneven pieces gives the bytes read() gives, for
// shards whose rows lie apart in the file (hdf5, odd columns: a contiguous dataset) and shards
// stored in one piece (posix; hdf5, even columns: one chunk per shard).
TEST(Scatter, ReadersScatterWhatTheyRead) {
  SharedTempDir tmp;
  Comm world(MPI_COMM_WORLD);
  for (const std::vector<std::int64_t>& shape :
       {std::vector<std::int64_t>{24, 37}, std::vector<std::int64_t>{24, 38}}) {
    const Box box = block_box(shape, world.rank(), world.size());
    const auto data = reference_box(DType::float64, shape, box);
    ArrayTree tree;
    tree.add_array("params/w", float64_shard(data, shape, box));
    for (StorageFormat format : available_formats()) {
      const std::string name =
          std::string(storage_format_name(format)) + "_" + std::to_string(shape[1]);
      SCOPED_TRACE(name);
      const auto dir = tmp / name;
      save_tree(world, dir, tree, {.format = format});
      const storage::TreeIndex index = storage::read_full_index(dir);
      const LeafRecord* leaf = index.find("params/w");
      ASSERT_NE(leaf, nullptr);
      const std::vector<const LeafRecord*> leaves = {leaf};
      auto reader = storage::format_row(format).open_reader(world, dir);
      reader->open(leaves);
      for (const ShardRecord& shard : leaf->shards) {
        SCOPED_TRACE("shard of rank " + std::to_string(shard.rank));
        // From the second element to one before the end, in pieces of 1, 3, 5, ... elements.
        const std::uint64_t first = 8;
        const std::uint64_t bytes = shard.bytes - 16;
        std::vector<std::size_t> sizes;
        for (std::uint64_t left = bytes, n = 1; left > 0; n += 2) {
          sizes.push_back(static_cast<std::size_t>(std::min(left, n * 8)));
          left -= sizes.back();
        }
        std::vector<std::byte> got;
        const auto pieces = cut(got, sizes);
        reader->read_scattered(*leaf, shard, first, pieces);
        std::vector<std::byte> want(bytes);
        reader->read(*leaf, shard, first, bytes, want.data());
        EXPECT_EQ(got, want);
        EXPECT_THROW(reader->read_scattered(*leaf, shard, shard.bytes - 8, cut(got, {16})),
                     InvalidArgument);
      }
      reader->close();
    }
  }
}

// restore_tree() reads rows of 4 KiB and more straight into a wider target: whole and
// partial, with checksum chunks that do not fall on rows (so the first and last chunks reach
// outside the target), more rows than one readv takes, and unverified.
TEST(Scatter, RestoresWideRowsStraightIntoTheTarget) {
  SharedTempDir tmp;
  Comm world(MPI_COMM_WORLD);
  // Column slabs of 2048 / size float64 columns: rows of 4 KiB or more at up to 4 ranks.
  const std::vector<std::int64_t> shape = {1100, 2048};
  const auto columns = [&](int r, int n) {
    const std::int64_t width = shape[1] / n;
    return Box{{0, r * width}, {shape[0], r == n - 1 ? shape[1] - r * width : width}};
  };
  const Box saved = columns(world.rank(), world.size());
  const auto data = reference_box(DType::float64, shape, saved);
  ArrayTree tree;
  tree.add_array("params/w", float64_shard(data, shape, saved));
  const std::vector<Box> targets = {Box{{0, 0}, shape}, Box{{3, 0}, {1087, shape[1]}},
                                    Box{{1099, 0}, {1, shape[1]}}};
  for (StorageFormat format : available_formats()) {
    for (std::uint64_t chunk : {std::uint64_t{0}, std::uint64_t{3000}}) {
      const std::string name =
          std::string(storage_format_name(format)) + "_" + std::to_string(chunk);
      const auto dir = tmp / name;
      TreeSaveOptions options{.format = format};
      if (chunk > 0) options.checksum_chunk_bytes = chunk;
      save_tree(world, dir, tree, options);
      for (const Box& box : targets) {
        for (bool verify : {true, false}) {
          SCOPED_TRACE(name + " target " + to_string(box) + (verify ? " verified" : " unverified"));
          std::vector<std::byte> got(static_cast<std::size_t>(volume(box)) * 8, std::byte{0xEE});
          ArrayTree target;
          target.add_array(
              "params/w",
              ArrayShard{
                  .dtype = DType::float64, .global_shape = shape, .box = box, .data = got.data()});
          restore_tree(world, dir, target,
                       {.verify_checksums = verify, .restore_concurrent_bytes = 1 << 16});
          EXPECT_TRUE(got == reference_box(DType::float64, shape, box));
        }
      }
    }
  }
}

}  // namespace
}  // namespace cairn::testing
