// The index of a save as every rank writes it (version 6, storage/index_writer.hpp): each
// section, written by its owner rank, is the one a single writer makes of the same records, and
// each rank receives only the records of its own sections; a long section is checked page by
// page, spread over the ranks; indexes of versions 4 and 5 still restore.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cairn/error.hpp>
#include <cairn/storage.hpp>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "base/durable_file.hpp"
#include "storage/index/binary.hpp"
#include "storage/index/collective_writer.hpp"
#include "storage/index/tree_index.hpp"
#include "storage/storage_test_util.hpp"
#include "storage/stream/checksum.hpp"
#include "support/test_support.hpp"

namespace cairn::testing {
namespace {
using storage::LeafRecord;
using storage::TreeIndex;

// A save on every rank writes, section by section, the cairn-tree.bin and cairn-tree.json that
// write_index() makes from the same records in one process; each rank receives the records of
// the sections it owns (leaf j: rank (j + 1) mod P) and no others.
TEST(IndexWriter, SectionsWrittenByTheirOwnersAreThoseOfOneWriter) {
  const Comm world(MPI_COMM_WORLD);
  const std::vector<std::int64_t> shape = {24, 10};
  constexpr int kLeaves = 9;
  SharedTempDir tmp;
  for (StorageFormat format : available_formats()) {
    SCOPED_TRACE(storage_format_name(format));
    const auto dir = tmp / std::string(storage_format_name(format));
    // Blocks for most leaves; uneven slabs (rank r holds r + 1 parts of the rows) for the last.
    const Box block = block_box(shape, world.rank(), world.size());
    const std::int64_t parts = std::int64_t{world.size()} * (world.size() + 1) / 2;
    const std::int64_t first = std::int64_t{world.rank()} * (world.rank() + 1) / 2;
    const Box uneven{{first * 24 / parts, 0},
                     {(first + world.rank() + 1) * 24 / parts - first * 24 / parts, 10}};
    const std::vector<std::byte> data = reference_box(DType::float64, shape, block);
    const std::vector<std::byte> uneven_data = reference_box(DType::float64, shape, uneven);
    ArrayTree tree;
    for (int l = 0; l < kLeaves; ++l) {
      const bool last = l + 1 == kLeaves;
      tree.add_array("leaf" + std::to_string(l),
                     {.dtype = DType::float64,
                      .global_shape = shape,
                      .box = last ? uneven : block,
                      .data = const_cast<std::byte*>(last ? uneven_data.data() : data.data())});
    }
    tree.add_scalar("step", Scalar(std::int64_t{3}));
    const std::uint64_t received_before = storage::index_records_received();
    save_tree(world, dir, tree, {.format = format, .checksum_chunk_bytes = 64});
    const auto received =
        static_cast<std::int64_t>(storage::index_records_received() - received_before);
    // Leaves 0 to 7 have records of the same sizes; rank r owns the leaves j with
    // (j + 1) mod P == r.
    int owned = 0;
    for (int j = 0; j + 1 < kLeaves; ++j)
      owned += storage::section_owner(j, world.size()) == world.rank();
    const std::int64_t total = world.sum(received);
    EXPECT_GT(received, 0);
    if (storage::section_owner(kLeaves - 1, world.size()) != world.rank()) {
      EXPECT_LE(received, total * owned / (kLeaves - 1) + 64) << "of " << total;
    }
    if (world.size() > 1) {
      EXPECT_LT(received, total) << "one rank received every record";
    }

    const auto again = tmp / (std::string(storage_format_name(format)) + "_one_writer");
    if (world.is_primary()) {
      std::filesystem::create_directories(again);
      (void)storage::write_index(again, storage::read_full_index(dir));
    }
    world.barrier("test");
    for (const char* file : {storage::kTreeIndexBinaryFile, storage::kTreeIndexFile}) {
      EXPECT_EQ(base::read_small_file(dir / file, std::uint64_t{1} << 30),
                base::read_small_file(again / file, std::uint64_t{1} << 30))
          << file;
    }
    const TreeIndex back = storage::read_full_index(dir);
    EXPECT_EQ(back.version, storage::kTreeFormatVersionSections);
    EXPECT_EQ(back.binary_checksum, storage::sections_checksum(back));
    const LeafRecord* last = back.find("leaf" + std::to_string(kLeaves - 1));
    ASSERT_NE(last, nullptr);
    ASSERT_EQ(last->shards.size(), static_cast<std::size_t>(world.size()));
    for (int r = 0; r < world.size(); ++r) EXPECT_EQ(last->shards[r].rank, r);
  }
}

// Indexes of versions 4 and 5, whose binary_checksum is that of the sections' bytes, restore and
// verify; a version-6 cairn-tree.bin with bytes after its last section is refused, and so is a
// version-6 cairn-tree.json whose binary_checksum does not sum its sections' checksums.
TEST(IndexWriter, Versions4And5StillRestore) {
  const Comm world(MPI_COMM_WORLD);
  const std::vector<std::int64_t> shape = {16, 8};
  SharedTempDir tmp;
  const auto dir = tmp / "old";
  const Box box = block_box(shape, world.rank(), world.size());
  std::vector<std::byte> data = reference_box(DType::float64, shape, box);
  ArrayTree tree;
  for (const char* path : {"u", "v"}) {
    tree.add_array(
        path, {.dtype = DType::float64, .global_shape = shape, .box = box, .data = data.data()});
  }
  std::vector<std::byte> out_u(data.size());
  std::vector<std::byte> out_v(data.size());
  ArrayTree target;
  target.add_array(
      "u", {.dtype = DType::float64, .global_shape = shape, .box = box, .data = out_u.data()});
  target.add_array(
      "v", {.dtype = DType::float64, .global_shape = shape, .box = box, .data = out_v.data()});
  save_tree(world, dir, tree, {.format = StorageFormat::posix});
  const auto bin = dir / storage::kTreeIndexBinaryFile;
  // Rewrites the index as `version`, with the header and binary_checksum of that version.
  const auto rewrite_as = [&](std::int64_t version) {
    world.barrier("test");
    if (world.is_primary()) {
      TreeIndex index = storage::parse_index(base::read_small_file(dir / storage::kTreeIndexFile),
                                             dir / storage::kTreeIndexFile);
      std::string binary = base::read_small_file(bin, std::uint64_t{1} << 30);
      index.version = version;
      index.binary_checksum = storage::checksum_of(
          std::as_bytes(std::span(binary).subspan(storage::kTreeIndexBinaryHeaderBytes)));
      binary.replace(0, storage::kTreeIndexBinaryHeaderBytes, storage::index_header(index));
      base::write_file_durably(bin, binary);
      base::write_file_durably(dir / storage::kTreeIndexFile,
                               boost::json::serialize(storage::to_json(index)));
    }
    world.barrier("test");
  };
  for (const std::int64_t version :
       {storage::kTreeFormatVersionBinary, storage::kTreeFormatVersionIncremental}) {
    SCOPED_TRACE(version);
    rewrite_as(version);
    std::ranges::fill(out_u, std::byte{0});
    std::ranges::fill(out_v, std::byte{0});
    restore_tree(world, dir, target);
    EXPECT_EQ(out_u, data);
    EXPECT_EQ(out_v, data);
    EXPECT_TRUE(verify_tree(world, dir).problems.empty());
    EXPECT_EQ(storage::read_full_index(dir).version, version);
  }
  // Version 6 again, with 8 stray bytes after the last section: the sections no longer cover
  // the file.
  save_tree(world, dir, tree, {.format = StorageFormat::posix});
  world.barrier("test");
  if (world.is_primary()) {
    std::filesystem::resize_file(bin, std::filesystem::file_size(bin) + 8);
    try {
      (void)storage::read_full_index(dir);
      ADD_FAILURE() << "a cairn-tree.bin longer than its sections was accepted";
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("bytes of its header and sections"), std::string::npos)
          << e.what();
    }
  }
  // The sections' checksums summed in cairn-tree.json are checked when it is parsed.
  auto json = boost::json::parse(base::read_small_file(dir / storage::kTreeIndexFile));
  json.as_object()["binary_checksum"] = "0123456789abcdef";
  try {
    (void)storage::index_from_json(json, dir / storage::kTreeIndexFile);
    ADD_FAILURE() << "a binary_checksum that is not the sections' sum was accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("binary_checksum"), std::string::npos) << e.what();
  }
  world.barrier("test");
}

// A section of several pages (kSectionPageBytes each) is checked page by page, the pages spread
// over the ranks like whole sections: the ranks together check every byte once, each the pages
// u with (u + 1) mod P its rank; damage in any page is refused by every restore, naming
// cairn-tree.bin and the leaf, and verify_tree reports it.
TEST(IndexWriter, PagesOfALongSectionAreCheckedApart) {
  const Comm world(MPI_COMM_WORLD);
  const std::vector<std::int64_t> shape = {64, 96};  // 48 KiB, a checksum per element
  SharedTempDir tmp;
  const auto dir = tmp / "pages";
  const Box saved = block_box(shape, world.rank(), world.size());
  const std::vector<std::byte> data = reference_box(DType::float64, shape, saved);
  ArrayTree tree;
  tree.add_array("long", float64_shard(data, shape, saved));
  save_tree(world, dir, tree, {.format = StorageFormat::posix, .checksum_chunk_bytes = 8});
  const TreeIndex index = storage::parse_index(base::read_small_file(dir / storage::kTreeIndexFile),
                                               dir / storage::kTreeIndexFile);
  const storage::BinarySection& section = *index.find("long")->section;
  const std::size_t pages = section.page_checksums.size();
  ASSERT_GE(pages, 3u) << section.length << " bytes";
  ASSERT_EQ(pages, (section.length + storage::kSectionPageBytes - 1) / storage::kSectionPageBytes);

  const Box mine = slab_box(shape, world.rank(), world.size());
  const std::vector<std::byte> want = reference_box(DType::float64, shape, mine);
  std::vector<std::byte> out(want.size());
  ArrayTree target;
  target.add_array(
      "long", {.dtype = DType::float64, .global_shape = shape, .box = mine, .data = out.data()});
  const std::uint64_t before = storage::index_bytes_checked();
  restore_tree(world, dir, target);
  const auto checked = static_cast<std::int64_t>(storage::index_bytes_checked() - before);
  EXPECT_EQ(out, want);
  EXPECT_EQ(world.sum(checked), static_cast<std::int64_t>(section.length));
  std::uint64_t mine_checked = 0;
  for (std::size_t u = 0; u < pages; ++u) {
    if (storage::section_owner(u, world.size()) != world.rank()) continue;
    mine_checked +=
        std::min(storage::kSectionPageBytes, section.length - u * storage::kSectionPageBytes);
  }
  EXPECT_EQ(checked, static_cast<std::int64_t>(mine_checked));

  const auto bin = dir / storage::kTreeIndexBinaryFile;
  for (std::size_t page = 0; page < pages; ++page) {
    SCOPED_TRACE("page " + std::to_string(page));
    // Flips (and flipped again, mends) the last byte of the page.
    const auto flip = [&] {
      world.barrier("test");
      if (world.is_primary()) {
        flip_byte(bin, section.offset +
                           std::min(section.length, (page + 1) * storage::kSectionPageBytes) - 1);
      }
      world.barrier("test");
    };
    flip();
    try {
      restore_tree(world, dir, target);
      ADD_FAILURE() << "restored through a damaged page of cairn-tree.bin";
    } catch (const FormatError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(bin.string()), std::string::npos) << what;
      EXPECT_NE(what.find("long"), std::string::npos) << what;
    }
    EXPECT_FALSE(verify_tree(world, dir).problems.empty());
    flip();
  }
  restore_tree(world, dir, target);
  EXPECT_EQ(out, want);
}

}  // namespace
}  // namespace cairn::testing
