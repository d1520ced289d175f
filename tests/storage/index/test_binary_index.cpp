// The two-file index (version 6): cairn-tree.json with what grows with the leaves, cairn-tree.bin
// with the shard records and checksums. Round trips of block grids (equal and unequal blocks,
// slabs), lists of shards, replicated and compressed leaves and many leaves; a damaged or
// truncated cairn-tree.bin is a FormatError naming it; a rank that restores its part reads only
// the records of the shards it meets (bytes counted) and checks its share of the sections whole,
// so damage anywhere in a read section is refused; an index of the old JSON form restores. The
// index as every rank writes it: test_index_writer.cpp.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cairn/error.hpp>
#include <cairn/storage.hpp>

#include <boost/json.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/durable_file.hpp"
#include "storage/index/binary.hpp"
#include "storage/index/tree_index.hpp"
#include "storage/storage_test_util.hpp"
#include "support/test_support.hpp"

namespace cairn::testing {
namespace {
using storage::LeafRecord;
using storage::ShardRecord;
using storage::TreeIndex;

// A shard of `box` of a float64 leaf with chunks of 64 bytes and made-up checksums.
ShardRecord shard(int rank, Box box, std::string file = "", std::uint64_t byte_offset = 0) {
  ShardRecord s;
  s.rank = rank;
  s.file = file.empty() ? "shards/p" + std::to_string(rank) + ".bin" : file;
  s.byte_offset = byte_offset;
  s.bytes = static_cast<std::uint64_t>(volume(box)) * 8;
  for (std::uint64_t c = 0; c < (s.bytes + 63) / 64; ++c) {
    s.checksums.push_back(0x9e3779b97f4a7c15ULL * (c + 1) + static_cast<std::uint64_t>(rank));
  }
  s.box = std::move(box);
  return s;
}

LeafRecord array_leaf(std::string path, std::vector<std::int64_t> shape,
                      std::vector<ShardRecord> shards) {
  LeafRecord leaf;
  leaf.path = std::move(path);
  leaf.shape = std::move(shape);
  leaf.chunk_bytes = 64;
  leaf.shards = std::move(shards);
  return leaf;
}

// Shards of a grid of `shape` cut at `rows` and `cols` (cut points, 0 and the extent included),
// ranks in column-major order of the cells (not the grid's own order).
std::vector<ShardRecord> grid(const std::vector<std::int64_t>& rows,
                              const std::vector<std::int64_t>& cols) {
  std::vector<ShardRecord> out;
  for (std::size_t j = 0; j + 1 < cols.size(); ++j) {
    for (std::size_t i = 0; i + 1 < rows.size(); ++i) {
      out.push_back(shard(static_cast<int>(out.size()),
                          Box{{rows[i], cols[j]}, {rows[i + 1] - rows[i], cols[j + 1] - cols[j]}},
                          "", 4096 * (out.size() + 1)));
    }
  }
  return out;
}

TreeIndex sample_index() {
  TreeIndex index;
  index.world_size = 16;
  // Equal blocks (the last ones shorter), unequal blocks, slabs, a list of shards, a replicated
  // leaf, a compressed leaf, an hdf5 leaf, a 0-d array and a scalar.
  index.leaves.push_back(array_leaf("a/cuts", {10, 9}, grid({0, 4, 8, 10}, {0, 3, 9})));
  index.leaves.push_back(array_leaf("a/equal", {10, 9}, grid({0, 4, 8, 10}, {0, 3, 6, 9})));
  index.leaves.push_back(array_leaf("a/slabs", {12, 5}, grid({0, 3, 6, 9, 12}, {0, 5})));
  index.leaves.push_back(
      array_leaf("b/irregular", {4, 4},
                 {shard(0, Box{{0, 0}, {2, 4}}), shard(1, Box{{2, 0}, {2, 1}}),
                  shard(2, Box{{2, 1}, {2, 3}}), shard(3, Box{{0, 0}, {0, 0}})}));
  LeafRecord replicated = array_leaf("c/replicated", {6}, {shard(0, Box{{0}, {6}})});
  replicated.replicated = true;
  index.leaves.push_back(replicated);
  LeafRecord compressed = array_leaf("d/compressed", {8, 8}, grid({0, 4, 8}, {0, 8}));
  compressed.compression = {.kind = Compression::Kind::zstd, .level = 3};
  for (ShardRecord& s : compressed.shards) {
    for (std::size_t c = 0; c < s.checksums.size(); ++c) s.chunk_sizes.push_back(17 + c);
  }
  index.leaves.push_back(compressed);
  LeafRecord h5 = array_leaf("e/hdf5", {6, 6}, grid({0, 3, 6}, {0, 6}));
  h5.format = StorageFormat::hdf5;
  for (ShardRecord& s : h5.shards) s.file = "data.h5";
  index.leaves.push_back(h5);
  index.leaves.push_back(array_leaf("f/zero_d", {}, {shard(5, Box{})}));
  LeafRecord scalar;
  scalar.path = "g/n";
  scalar.kind = LeafKind::scalar;
  scalar.dtype = DType::int64;
  scalar.value = Scalar(std::int64_t{7}).to_json();
  index.leaves.push_back(scalar);
  return index;
}

void expect_same_shards(const std::vector<ShardRecord>& got, std::vector<ShardRecord> want) {
  std::ranges::stable_sort(want, [](const auto& a, const auto& b) { return a.rank < b.rank; });
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t k = 0; k < got.size(); ++k) {
    EXPECT_EQ(got[k].rank, want[k].rank);
    EXPECT_EQ(got[k].box, want[k].box) << to_string(got[k].box);
    EXPECT_EQ(got[k].file, want[k].file);
    EXPECT_EQ(got[k].byte_offset, want[k].byte_offset);
    EXPECT_EQ(got[k].bytes, want[k].bytes);
    EXPECT_EQ(got[k].checksums, want[k].checksums);
    EXPECT_EQ(got[k].chunk_sizes, want[k].chunk_sizes);
  }
}

// A directory of this rank's own under a shared temporary one.
std::filesystem::path own_dir(const SharedTempDir& tmp, const std::string& name) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const auto dir = tmp / (name + "_" + std::to_string(rank));
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(BinaryIndex, RoundTripsEveryDecomposition) {
  SharedTempDir tmp;
  const auto dir = own_dir(tmp, "round");
  const TreeIndex index = sample_index();
  (void)storage::write_index(dir, index);
  const TreeIndex back = storage::read_full_index(dir);
  // A shuffled zstd leaf (the default of Compression) needs version 7.
  EXPECT_EQ(back.version, storage::kTreeFormatVersionShuffled);
  int files = 0;  // write_index wrote the two files of the index, nothing else
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    EXPECT_TRUE(is_tree_index_file(entry.path().filename().string())) << entry.path();
    ++files;
  }
  EXPECT_EQ(files, 2);
  EXPECT_FALSE(is_tree_index_file("cairn-step.json"));
  ASSERT_EQ(back.leaves.size(), index.leaves.size());
  for (std::size_t i = 0; i < index.leaves.size(); ++i) {
    SCOPED_TRACE(index.leaves[i].path);
    EXPECT_EQ(back.leaves[i].path, index.leaves[i].path);
    EXPECT_EQ(back.leaves[i].compression, index.leaves[i].compression);
    expect_same_shards(back.leaves[i].shards, index.leaves[i].shards);
  }
  // Grids are stored as grids: equal blocks without cuts, the others with their cuts.
  EXPECT_EQ(back.find("a/equal")->section->block, (std::vector<std::int64_t>{4, 3}));
  // Equal blocks along the first dimension, not the second.
  EXPECT_EQ(back.find("a/cuts")->section->blocks, (std::vector<std::int64_t>{3, 2}));
  EXPECT_TRUE(back.find("a/cuts")->section->block.empty());
  EXPECT_EQ(back.find("a/slabs")->section->block, (std::vector<std::int64_t>{3, 5}));
  EXPECT_TRUE(back.find("b/irregular")->section->blocks.empty());
  EXPECT_TRUE(back.find("d/compressed")->section->chunk_sizes);
  // The totals of read_tree_info() come from cairn-tree.json alone.
  const TreeIndex head = storage::parse_index(base::read_small_file(dir / storage::kTreeIndexFile),
                                              dir / storage::kTreeIndexFile);
  const SavedLeafInfo info = storage::leaf_info(*head.find("d/compressed"));
  EXPECT_EQ(info.shard_count, 2u);
  EXPECT_EQ(info.bytes, 8u * 8 * 8);
  EXPECT_EQ(info.stored_bytes, storage::leaf_info(*index.find("d/compressed")).stored_bytes);
}

TEST(BinaryIndex, GridsCostNoBoxes) {
  SharedTempDir tmp;
  const auto dir = own_dir(tmp, "size");
  TreeIndex index;
  index.world_size = 64;
  std::vector<std::int64_t> rows = {0}, cols = {0};
  for (int k = 1; k <= 8; ++k) rows.push_back(8 * k), cols.push_back(8 * k);
  for (int l = 0; l < 50; ++l) {
    index.leaves.push_back(
        array_leaf("leaf" + std::to_string(100 + l), {64, 64}, grid(rows, cols)));
  }
  (void)storage::write_index(dir, index);
  // 64 shards of 512 bytes, 8 checksums each: 16 bytes of record and 64 of checksums per shard.
  const auto binary = std::filesystem::file_size(dir / storage::kTreeIndexBinaryFile);
  EXPECT_EQ(binary, storage::kTreeIndexBinaryHeaderBytes + 50u * 64 * (16 + 8 * 8));
  // The JSON part grows with the leaves only: well under 400 bytes per leaf (plus the files).
  EXPECT_LT(std::filesystem::file_size(dir / storage::kTreeIndexFile), 50u * 400 + 64u * 20);
}

TEST(BinaryIndex, PartsOfAGridAreReadAlone) {
  SharedTempDir tmp;
  const auto dir = own_dir(tmp, "part");
  const TreeIndex index = sample_index();
  (void)storage::write_index(dir, index);
  const TreeIndex head = storage::parse_index(base::read_small_file(dir / storage::kTreeIndexFile),
                                              dir / storage::kTreeIndexFile);
  storage::IndexSections sections(dir, head);
  for (const char* path : {"a/equal", "a/cuts", "b/irregular", "d/compressed"}) {
    SCOPED_TRACE(path);
    const LeafRecord& leaf = *head.find(path);
    const Box region{{3, 2}, {3, 5}};
    std::vector<ShardRecord> want;
    for (const ShardRecord& s : index.find(path)->shards) {
      if (intersect(s.box, region)) want.push_back(s);
    }
    expect_same_shards(sections.shards_meeting(leaf, region), want);
  }
  // One block of the equal grid: its record and its checksums, nothing else.
  const std::uint64_t before = storage::index_bytes_read();
  const auto one = sections.shards_meeting(*head.find("a/equal"), Box{{4, 3}, {4, 3}});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(storage::index_bytes_read() - before, 16 + 8 * one[0].checksums.size());
  // A region beyond the saved shape (a resized restore) meets the last blocks.
  EXPECT_EQ(sections.shards_meeting(*head.find("a/slabs"), Box{{10, 0}, {6, 5}}).size(), 1u);
}

TEST(BinaryIndex, DamagedOrTruncatedBinaryIsAFormatErrorNamingIt) {
  SharedTempDir tmp;
  const auto dir = own_dir(tmp, "damaged");
  const auto bin = dir / storage::kTreeIndexBinaryFile;
  const auto size = storage::write_index(dir, sample_index()) -
                    std::filesystem::file_size(dir / storage::kTreeIndexFile);
  const auto expect_format_error = [&](const std::string& what) {
    SCOPED_TRACE(what);
    try {
      (void)storage::read_full_index(dir);
      ADD_FAILURE() << "a damaged cairn-tree.bin was accepted";
    } catch (const FormatError& e) {
      EXPECT_EQ(e.path(), bin.string()) << e.what();
      EXPECT_NE(std::string(e.what()).find(bin.string()), std::string::npos) << e.what();
    }
  };
  for (std::uint64_t at : {std::uint64_t{3}, size / 2, size - 1}) {
    (void)storage::write_index(dir, sample_index());
    flip_byte(bin, at, 0x20);
    expect_format_error("flip at " + std::to_string(at));
  }
  (void)storage::write_index(dir, sample_index());
  std::filesystem::resize_file(bin, size - 9);
  expect_format_error("truncated");
  // The partial reader says the same of a truncated file.
  const TreeIndex head = storage::parse_index(base::read_small_file(dir / storage::kTreeIndexFile),
                                              dir / storage::kTreeIndexFile);
  storage::IndexSections sections(dir, head);
  EXPECT_THROW((void)sections.shards_meeting(*head.find("f/zero_d"), Box{}), FormatError);
}

// Saves `leaves` float64 leaves of 64 x 32 in blocks over the world, checksum chunks of 128
// bytes; restores them as row slabs (N->M) and checks the values and the index bytes read.
TEST(BinaryIndex, RestoreReadsOnlyItsPart) {
  const Comm world(MPI_COMM_WORLD);
  const std::vector<std::int64_t> shape = {64, 32};
  constexpr int kLeaves = 12;
  SharedTempDir tmp;
  for (StorageFormat format : available_formats()) {
    SCOPED_TRACE(storage_format_name(format));
    const auto dir = tmp / std::string(storage_format_name(format));
    const Box saved = block_box(shape, world.rank(), world.size());
    const std::vector<std::byte> data = reference_box(DType::float64, shape, saved);
    ArrayTree tree;
    for (int l = 0; l < kLeaves; ++l) {
      tree.add_array("leaf" + std::to_string(10 + l), float64_shard(data, shape, saved));
    }
    save_tree(world, dir, tree, {.format = format, .checksum_chunk_bytes = 128});
    const auto binary = std::filesystem::file_size(dir / storage::kTreeIndexBinaryFile);

    const Box mine = slab_box(shape, world.rank(), world.size());
    std::vector<std::vector<std::byte>> out(
        kLeaves, std::vector<std::byte>(static_cast<std::size_t>(volume(mine)) * 8));
    ArrayTree target;
    for (int l = 0; l < kLeaves; ++l) {
      target.add_array("leaf" + std::to_string(10 + l),
                       {.dtype = DType::float64,
                        .global_shape = shape,
                        .box = mine,
                        .data = out[static_cast<std::size_t>(l)].data()});
    }
    const std::uint64_t before = storage::index_bytes_read();
    const std::uint64_t checked_before = storage::index_bytes_checked();
    restore_tree(world, dir, target);
    const std::uint64_t read = storage::index_bytes_read() - before;
    const auto checked = static_cast<std::int64_t>(storage::index_bytes_checked() - checked_before);
    const auto want = reference_box(DType::float64, shape, mine);
    for (const auto& o : out) EXPECT_EQ(o, want);
    const std::uint64_t share =
        (binary - storage::kTreeIndexBinaryHeaderBytes) / static_cast<std::uint64_t>(world.size());
    EXPECT_GT(read, 0u);
    EXPECT_LE(read, 2 * share + storage::kTreeIndexBinaryHeaderBytes)
        << "of " << binary << " bytes at " << world.size() << " ranks";
    // The saved blocks are columns (2 and 3 ranks) or quarters (4), so each row slab crosses
    // several of them; only the checksums of the chunks that hold its rows are read, not
    // every crossed shard's: about one share, where whole records took one share per block
    // crossed.
    if (world.size() > 1) {
      EXPECT_LE(read, share * 5 / 4 + storage::kTreeIndexBinaryHeaderBytes)
          << "of " << binary << " bytes at " << world.size() << " ranks";
    }
    // Every section is checked whole once, by one rank: ceil(leaves / ranks) of them here.
    EXPECT_EQ(world.sum(checked),
              static_cast<std::int64_t>(binary - storage::kTreeIndexBinaryHeaderBytes));
    const std::uint64_t section = (binary - storage::kTreeIndexBinaryHeaderBytes) / kLeaves;
    const int first = (world.rank() + world.size() - 1) % world.size();  // leaf j: (j+1) mod P
    const int mine_checked = (kLeaves - first + world.size() - 1) / world.size();
    EXPECT_EQ(checked, static_cast<std::int64_t>(section) * mine_checked);
  }
}

// Damage in a part of cairn-tree.bin that no rank reads for its own records is refused by
// every restore, naming cairn-tree.bin and the leaf: the rank that checks that section whole
// finds it. The ranks restore the first half of the rows, so on 2 and 4 ranks the records and
// checksums of the blocks of the second half (the end of each section) are read by no one; on
// 1 rank the one shard is read whole, and the check, made before any data is read, names the
// index rather than the shard file whose checksum would no longer match.
TEST(BinaryIndex, DamageOutsideEveryRanksPartIsRefused) {
  const Comm world(MPI_COMM_WORLD);
  const std::vector<std::int64_t> shape = {32, 16};
  constexpr int kLeaves = 5;
  SharedTempDir tmp;
  const auto dir = tmp / "damaged";
  const Box saved = block_box(shape, world.rank(), world.size());
  const std::vector<std::byte> data = reference_box(DType::float64, shape, saved);
  const Box mine = slab_box({16, 16}, world.rank(), world.size());  // in the first 16 rows
  const std::vector<std::byte> want = reference_box(DType::float64, shape, mine);
  std::vector<std::vector<std::byte>> out(kLeaves, std::vector<std::byte>(want.size()));
  ArrayTree tree;
  ArrayTree target;
  for (int l = 0; l < kLeaves; ++l) {
    const std::string path = "leaf" + std::to_string(l);
    tree.add_array(path, float64_shard(data, shape, saved));
    target.add_array(path, {.dtype = DType::float64,
                            .global_shape = shape,
                            .box = mine,
                            .data = out[static_cast<std::size_t>(l)].data()});
  }
  save_tree(world, dir, tree, {.format = StorageFormat::posix, .checksum_chunk_bytes = 64});
  const auto bin = dir / storage::kTreeIndexBinaryFile;
  const TreeIndex index = storage::parse_index(base::read_small_file(dir / storage::kTreeIndexFile),
                                               dir / storage::kTreeIndexFile);
  for (const int l : {1, kLeaves - 1}) {
    const std::string leaf = "leaf" + std::to_string(l);
    SCOPED_TRACE(leaf);
    const storage::BinarySection& section = *index.find(leaf)->section;
    // Flips (and flipped again, mends) a byte of the last checksum of the last block.
    const auto flip = [&] {
      world.barrier("test");
      if (world.is_primary()) flip_byte(bin, section.offset + section.length - 3);
      world.barrier("test");
    };
    flip();
    try {
      restore_tree(world, dir, target);
      ADD_FAILURE() << "restored through a damaged section of cairn-tree.bin";
    } catch (const FormatError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(bin.string()), std::string::npos) << what;
      EXPECT_NE(what.find(leaf), std::string::npos) << what;
    }
    const auto report = verify_tree(world, dir);
    EXPECT_FALSE(report.problems.empty());
    flip();
  }
  restore_tree(world, dir, target);
  for (const auto& o : out) EXPECT_EQ(o, want);
}

// An index of the JSON form (version 3, no cairn-tree.bin) still restores; so does a version 4
// index whose cairn-tree.bin is truncated not, with a FormatError naming it on every rank.
TEST(BinaryIndex, OldJsonIndexRestoresAndTruncatedBinaryFails) {
  const Comm world(MPI_COMM_WORLD);
  const std::vector<std::int64_t> shape = {16, 8};
  SharedTempDir tmp;
  for (StorageFormat format : available_formats()) {
    SCOPED_TRACE(storage_format_name(format));
    const auto dir = tmp / std::string(storage_format_name(format));
    const Box box = slab_box(shape, world.rank(), world.size());
    std::vector<std::byte> data = reference_box(DType::float64, shape, box);
    ArrayTree tree;
    tree.add_array(
        "u", {.dtype = DType::float64, .global_shape = shape, .box = box, .data = data.data()});
    save_tree(world, dir, tree, {.format = format});
    const auto bin = dir / storage::kTreeIndexBinaryFile;
    std::vector<std::byte> out(data.size());
    ArrayTree target;
    target.add_array(
        "u", {.dtype = DType::float64, .global_shape = shape, .box = box, .data = out.data()});
    if (world.is_primary()) std::filesystem::resize_file(bin, 20);
    world.barrier("test");
    try {
      restore_tree(world, dir, target);
      ADD_FAILURE() << "restored through a truncated cairn-tree.bin";
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(bin.string()), std::string::npos) << e.what();
    }
    // The same shards as an index of version 3, in cairn-tree.json alone.
    save_tree(world, dir, tree, {.format = format});
    if (world.is_primary()) {
      TreeIndex index = storage::read_full_index(dir);
      index.version = storage::kTreeFormatVersionCompressed;
      index.files.clear();
      for (LeafRecord& leaf : index.leaves) leaf.section.reset();
      base::write_file_durably(dir / storage::kTreeIndexFile,
                               boost::json::serialize(storage::to_json(index)));
      std::filesystem::remove(bin);
    }
    world.barrier("test");
    restore_tree(world, dir, target);
    EXPECT_EQ(out, data);
    EXPECT_EQ(read_tree_info(world, dir).leaves.at(0).shard_count,
              static_cast<std::size_t>(world.size()));
  }
}

}  // namespace
}  // namespace cairn::testing
