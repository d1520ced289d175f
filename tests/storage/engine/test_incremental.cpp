// Incremental saves (TreeSaveOptions::incremental_base): a save that names an earlier save of
// the same tree writes only the checksum chunks of posix leaves whose bytes changed and refers
// to the earlier save's bytes for the others (read_tree_info's referenced_chunks and
// referenced_bytes, exactly the unchanged chunks); the files it refers to are hard links in its
// own shards/, so it restores N->M, verifies, and survives remove_all() of its base (and of a
// chain of bases); compressed and aggregated leaves refer likewise; hdf5 leaves, a missing
// base, another decomposition or another compression refer to nothing and still restore; damage
// in a referenced chunk of the base is found by verify_tree() and restore_tree() of the new save.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cairn/config.hpp>
#include <cairn/error.hpp>
#include <cairn/storage.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "base/durable_file.hpp"
#include "storage/index/binary.hpp"
#include "storage/storage_test_util.hpp"
#include "support/test_support.hpp"

namespace cairn::testing {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kRows = 256;
constexpr std::int64_t kCols = 512;
const std::vector<std::int64_t> kShape = {kRows, kCols};
constexpr std::size_t kChunkBytes = 4096;
// The rows a version > 0 of the field changes: about 10% of the array, in one place.
constexpr std::int64_t kChangedBegin = 100;
constexpr std::int64_t kChangedEnd = 126;

using BoxOf = Box (*)(const std::vector<std::int64_t>&, int, int);

// Rank r's box in a decomposition of dimension 1 (column slabs) over n ranks.
Box column_box(const std::vector<std::int64_t>& shape, int r, int n) {
  Box box{std::vector<std::int64_t>(shape.size(), 0), shape};
  const std::int64_t begin = shape[1] * r / n;
  const std::int64_t end = shape[1] * (r + 1) / n;
  box.offset[1] = begin;
  box.extent[1] = end - begin;
  return box;
}

// Row slabs, except on one rank, where a slab cannot differ from the whole array: the top half
// only (a sparse save), so that the boxes differ from those of column_box() at every size.
Box rows_or_top_half(const std::vector<std::int64_t>& shape, int r, int n) {
  if (n > 1) return slab_box(shape, r, n);
  Box box = whole_box(shape);
  box.extent[0] = shape[0] / 2;
  return box;
}

double base_value(std::int64_t i, std::int64_t j) {
  return static_cast<double>(i * kCols + j) + 0.5;
}

// Element (i, j) of version `version` of the field "u": version 0 is the base; every later
// version differs from it (and from each other) in rows [kChangedBegin, kChangedEnd) only.
double field_value(int version, std::int64_t i, std::int64_t j) {
  if (version == 0 || i < kChangedBegin || i >= kChangedEnd) return base_value(i, j);
  return -base_value(i, j) - 0.25 * version;
}

std::vector<double> field(int version, const Box& box) {
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(volume(box)));
  for (std::int64_t i = box.offset[0]; i < box.offset[0] + box.extent[0]; ++i) {
    for (std::int64_t j = box.offset[1]; j < box.offset[1] + box.extent[1]; ++j)
      out.push_back(field_value(version, i, j));
  }
  return out;
}

// Elements of `got` (n of them) that differ from `want`.
std::size_t mismatches(const double* got, const std::vector<double>& want) {
  std::size_t bad = 0;
  for (std::size_t k = 0; k < want.size(); ++k) bad += got[k] != want[k] ? 1 : 0;
  return bad;
}

// Checksum chunks of a leaf of `elem_size`-byte elements saved by `n` ranks in `box_of`'s
// decomposition: all of them, and those (and their bytes) holding no element of the rows
// [changed_begin, changed_end).
struct ChunkCount {
  std::uint64_t total = 0;
  std::uint64_t unchanged = 0;
  std::uint64_t unchanged_bytes = 0;
};

ChunkCount count_chunks(BoxOf box_of, int n, std::size_t elem_size, std::int64_t changed_begin,
                        std::int64_t changed_end) {
  ChunkCount count;
  const auto per_chunk = static_cast<std::int64_t>(kChunkBytes / elem_size);
  for (int r = 0; r < n; ++r) {
    const Box box = box_of(kShape, r, n);
    const std::int64_t elements = volume(box);
    for (std::int64_t first = 0; first < elements; first += per_chunk) {
      const std::int64_t last = std::min(elements, first + per_chunk) - 1;
      const std::int64_t row_first = box.offset[0] + first / box.extent[1];
      const std::int64_t row_last = box.offset[0] + last / box.extent[1];
      ++count.total;
      if (row_last < changed_begin || row_first >= changed_end) {
        ++count.unchanged;
        count.unchanged_bytes += static_cast<std::uint64_t>(last - first + 1) * elem_size;
      }
    }
  }
  return count;
}

TreeSaveOptions options_with(TreeSaveOptions options, const fs::path& base) {
  options.fsync = false;
  options.checksum_chunk_bytes = kChunkBytes;
  options.incremental_base = base;
  return options;
}

// Saves version `version` of "u" (float64) and the unchanging "v" (int32 reference values),
// both in `box_of`'s decomposition over `comm`, against `base` (empty: a whole save).
void save_state(const Comm& comm, const fs::path& dir, int version, BoxOf box_of,
                const fs::path& base, TreeSaveOptions options = {}) {
  const Box box = box_of(kShape, comm.rank(), comm.size());
  const auto u = field(version, box);
  auto v = reference_box(DType::int32, kShape, box);
  ArrayTree tree;
  tree.add_array("u", ArrayShard::host(u.data(), kShape, box));
  tree.add_array("v",
                 {.dtype = DType::int32, .global_shape = kShape, .box = box, .data = v.data()});
  save_tree(comm, dir, tree, options_with(std::move(options), base));
}

// Restores "u" and "v" over `comm` in `box_of`'s decomposition and compares every element.
void expect_state(const Comm& comm, const fs::path& dir, int version, BoxOf box_of) {
  const Box box = box_of(kShape, comm.rank(), comm.size());
  std::vector<double> u(static_cast<std::size_t>(volume(box)), -1.0);
  ArrayTree target;
  target.add_array("u", ArrayShard::host(u.data(), kShape, box));
  auto* v = static_cast<std::byte*>(target.add_owned_array("v", DType::int32, kShape, box));
  restore_tree(comm, dir, target);
  EXPECT_EQ(mismatches(u.data(), field(version, box)), 0U)
      << "leaf u of " << dir << " on rank " << comm.rank() << " of " << comm.size();
  const auto v_want = reference_box(DType::int32, kShape, box);
  EXPECT_EQ(std::memcmp(v, v_want.data(), v_want.size()), 0) << "leaf v of " << dir;
}

// Every restore of `dir` this file makes: the decomposition of the save and another one on
// every rank, row slabs on fewer ranks (N->M), and every array whole as saved.
void expect_everywhere(const Comm& world, const fs::path& dir, int version, BoxOf saved_as) {
  {
    SCOPED_TRACE("as saved");
    expect_state(world, dir, version, saved_as);
  }
  {
    SCOPED_TRACE("column slabs");
    expect_state(world, dir, version, column_box);
  }
  {
    SCOPED_TRACE("fewer ranks, row slabs");
    const int m = std::max(1, world.size() - 1);
    if (const std::optional<Comm> fewer = first_ranks(m))
      expect_state(*fewer, dir, version, slab_box);
  }
  {
    SCOPED_TRACE("restore_tree_as_saved whole_arrays");
    const ArrayTree got = restore_tree_as_saved(world, dir, {.whole_arrays = true});
    const auto& u = got.at("u").as_array();
    ASSERT_EQ(u.dtype, DType::float64);
    EXPECT_EQ(mismatches(static_cast<const double*>(u.data), field(version, whole_box(kShape))),
              0U);
    const auto& v = got.at("v").as_array();
    const auto v_want = reference_box(DType::int32, kShape, whole_box(kShape));
    EXPECT_EQ(std::memcmp(v.data, v_want.data(), v_want.size()), 0);
  }
  world.barrier("restores done");
}

void expect_intact(const Comm& comm, const fs::path& dir) {
  const TreeVerifyReport report = verify_tree(comm, dir);
  EXPECT_EQ(report.leaves, 2U) << dir;
  EXPECT_TRUE(report.problems.empty()) << dir << ": " << report.problems.front();
}

SavedLeafInfo leaf_of(const SavedTreeInfo& info, const std::string& path) {
  for (const auto& leaf : info.leaves) {
    if (leaf.path == path) return leaf;
  }
  ADD_FAILURE() << "no leaf " << path;
  return {};
}

// Names in `dir` that start with `prefix`.
std::vector<fs::path> files_starting(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().starts_with(prefix)) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Bytes the file system may hold for the files of `dir/shards` that a save wrote itself (not
// the r<k>.bin links) beyond the chunks it wrote: a little per file (metadata blocks, a file
// system that allocates more than one block at a time), nothing for the holes of referenced
// chunks.
constexpr std::uint64_t kSlackPerFile = 64 * 1024;

// Bytes the file system holds for the files of `dir/shards` that the save wrote itself, and
// how many there are.
std::pair<std::uint64_t, std::uint64_t> allocated_own_bytes(const fs::path& dir) {
  std::uint64_t total = 0;
  std::uint64_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir / "shards")) {
    if (entry.path().filename().string().starts_with("r")) continue;
    struct stat st {};
    if (::stat(entry.path().c_str(), &st) == 0)
      total += static_cast<std::uint64_t>(st.st_blocks) * 512;
    ++files;
  }
  return {total, files};
}

void remove_on_primary(const Comm& world, const fs::path& dir) {
  if (world.is_primary()) fs::remove_all(dir);
  world.barrier("removed");
  ASSERT_FALSE(fs::exists(dir));
}

TEST(Incremental, AChangedBandIsWrittenAndTheRestIsReferredTo) {
  const SharedTempDir tmp;
  const Comm world(MPI_COMM_WORLD);
  const auto a = tmp / "A";
  const auto b = tmp / "B";
  save_state(world, a, 0, block_box, {});
  const SavedTreeInfo a_info = read_tree_info(world, a);
  EXPECT_EQ(leaf_of(a_info, "u").referenced_chunks, 0U);
  EXPECT_EQ(leaf_of(a_info, "u").referenced_bytes, 0U);
  EXPECT_TRUE(files_starting(a / "shards", "r").empty());

  save_state(world, b, 1, block_box, a);
  const SavedTreeInfo info = read_tree_info(world, b);
  const SavedLeafInfo u = leaf_of(info, "u");
  const ChunkCount u_count = count_chunks(block_box, world.size(), 8, kChangedBegin, kChangedEnd);
  ASSERT_GT(u_count.unchanged, 0U);
  ASSERT_LT(u_count.unchanged, u_count.total);
  EXPECT_EQ(u.bytes, static_cast<std::uint64_t>(kRows * kCols * 8));
  EXPECT_EQ(u.referenced_chunks, u_count.unchanged) << "of " << u_count.total << " chunks";
  EXPECT_EQ(u.referenced_bytes, u_count.unchanged_bytes);
  EXPECT_GE(static_cast<double>(u.referenced_bytes), 0.7 * static_cast<double>(u.bytes));
  EXPECT_LT(u.referenced_bytes, u.bytes);
  // "v" did not change: every chunk is referred to.
  const SavedLeafInfo v = leaf_of(info, "v");
  const ChunkCount v_count = count_chunks(block_box, world.size(), 4, 0, 0);
  EXPECT_EQ(v.referenced_chunks, v_count.total);
  EXPECT_EQ(v.referenced_bytes, v.bytes);

  // The referenced files are in B itself, and B's own files hold little more than the band.
  EXPECT_FALSE(files_starting(b / "shards", "r").empty());
  const std::uint64_t written = u.bytes - u.referenced_bytes + v.bytes - v.referenced_bytes;
  const auto [allocated, files] = allocated_own_bytes(b);
  EXPECT_LE(allocated, written + kSlackPerFile * files)
      << "B's own shard files are not sparse where chunks are referenced; it wrote " << written
      << " bytes of chunks into " << files << " files";

  expect_everywhere(world, b, 1, block_box);
  expect_intact(world, b);
  expect_intact(world, a);

  // Without A, B still restores and verifies (its links keep A's bytes).
  remove_on_primary(world, a);
  expect_everywhere(world, b, 1, block_box);
  expect_intact(world, b);
}

TEST(Incremental, AnUnchangedSaveRefersToEveryChunkAndOutlivesAChainOfBases) {
  const SharedTempDir tmp;
  const Comm world(MPI_COMM_WORLD);
  const auto a = tmp / "A";
  const auto b = tmp / "B";
  const auto c = tmp / "C";
  save_state(world, a, 0, slab_box, {});
  save_state(world, b, 1, slab_box, a);
  save_state(world, c, 1, slab_box, b);  // nothing changed since B
  const SavedTreeInfo info = read_tree_info(world, c);
  for (const char* path : {"u", "v"}) {
    SCOPED_TRACE(path);
    const SavedLeafInfo leaf = leaf_of(info, path);
    const ChunkCount count =
        count_chunks(slab_box, world.size(), std::string(path) == "u" ? 8 : 4, 0, 0);
    EXPECT_EQ(leaf.referenced_chunks, count.total);
    EXPECT_EQ(leaf.referenced_bytes, leaf.bytes);
    EXPECT_EQ(leaf.stored_bytes, leaf.bytes);
  }
  const auto [allocated, files] = allocated_own_bytes(c);
  EXPECT_LE(allocated, kSlackPerFile * files) << "C wrote no chunk but holds " << allocated;
  expect_everywhere(world, c, 1, slab_box);
  // C refers to bytes of both A (through B) and B; it needs neither.
  remove_on_primary(world, a);
  remove_on_primary(world, b);
  expect_everywhere(world, c, 1, slab_box);
  expect_intact(world, c);
}

TEST(Incremental, ZstdLeavesReferToTheirUnchangedCompressedChunks) {
  if (!CAIRN_HAVE_ZSTD)
    GTEST_SKIP()
        << "this build of cairn has no zstd (libzstd-dev): it cannot write compressed leaves";
  const SharedTempDir tmp;
  const Comm world(MPI_COMM_WORLD);
  const auto a = tmp / "A";
  const auto b = tmp / "B";
  const TreeSaveOptions zstd{.compression = Compression::zstd(3)};
  save_state(world, a, 0, block_box, {}, zstd);
  save_state(world, b, 1, block_box, a, zstd);
  const SavedTreeInfo info = read_tree_info(world, b);
  const SavedLeafInfo u = leaf_of(info, "u");
  EXPECT_EQ(u.compression, Compression::zstd(3));
  const ChunkCount count = count_chunks(block_box, world.size(), 8, kChangedBegin, kChangedEnd);
  EXPECT_EQ(u.referenced_chunks, count.unchanged) << "of " << count.total << " chunks";
  EXPECT_GT(u.referenced_bytes, 0U);
  EXPECT_LT(u.referenced_bytes, u.stored_bytes);
  EXPECT_EQ(leaf_of(info, "v").referenced_chunks,
            count_chunks(block_box, world.size(), 4, 0, 0).total);
  EXPECT_EQ(leaf_of(info, "v").referenced_bytes, leaf_of(info, "v").stored_bytes);
  expect_everywhere(world, b, 1, block_box);

  // The same tree stored without compression cannot use A's compressed chunks.
  const auto d = tmp / "D";
  save_state(world, d, 1, block_box, a);
  const SavedTreeInfo d_info = read_tree_info(world, d);
  EXPECT_EQ(leaf_of(d_info, "u").referenced_chunks, 0U);
  EXPECT_EQ(leaf_of(d_info, "v").referenced_chunks, 0U);
  expect_state(world, d, 1, column_box);

  remove_on_primary(world, a);
  expect_everywhere(world, b, 1, block_box);
  expect_intact(world, b);
}

TEST(Incremental, AnAggregatedSaveRefersToItsBase) {
  const SharedTempDir tmp;
  const Comm world(MPI_COMM_WORLD);
  for (const auto writers :
       {PosixAggregation::Writers::every_rank, PosixAggregation::Writers::aggregator}) {
    // The skipped chunks leave gaps: a shipping rank hands each run of chunks on as its own.
    const auto a = tmp / ("A" + std::to_string(static_cast<int>(writers)));
    const auto b = tmp / ("B" + std::to_string(static_cast<int>(writers)));
    const TreeSaveOptions one_file{
        .posix = {.aggregation = {
                      .kind = PosixAggregation::Kind::count, .count = 1, .writers = writers}}};
    save_state(world, a, 0, block_box, {}, one_file);
    save_state(world, b, 1, block_box, a, one_file);
    const SavedTreeInfo info = read_tree_info(world, b);
    const ChunkCount count = count_chunks(block_box, world.size(), 8, kChangedBegin, kChangedEnd);
    EXPECT_EQ(leaf_of(info, "u").referenced_chunks, count.unchanged) << "of " << count.total;
    EXPECT_EQ(leaf_of(info, "u").referenced_bytes, count.unchanged_bytes);
    EXPECT_EQ(leaf_of(info, "v").referenced_bytes, leaf_of(info, "v").bytes);
    // B wrote one group file of its own and links A's.
    EXPECT_EQ(files_starting(b / "shards", "a").size(), 1U);
    EXPECT_TRUE(files_starting(b / "shards", "p").empty());
    EXPECT_FALSE(files_starting(b / "shards", "r").empty());
    expect_everywhere(world, b, 1, block_box);
    remove_on_primary(world, a);
    expect_everywhere(world, b, 1, block_box);
    expect_intact(world, b);
  }
}

TEST(Incremental, Hdf5LeavesAreWrittenWhole) {
  if (!CAIRN_HAVE_HDF5)
    GTEST_SKIP()
        << "this build of cairn has no HDF5 (the no-hdf5 build): it cannot write hdf5 leaves";
  const SharedTempDir tmp;
  const Comm world(MPI_COMM_WORLD);
  const auto a = tmp / "A";
  const auto b = tmp / "B";
  // "u" in data.h5, "v" posix.
  const TreeSaveOptions hdf5{.format = StorageFormat::hdf5,
                             .leaf_formats = {{"v", StorageFormat::posix}}};
  save_state(world, a, 0, block_box, {}, hdf5);
  save_state(world, b, 1, block_box, a, hdf5);
  const SavedTreeInfo info = read_tree_info(world, b);
  const SavedLeafInfo u = leaf_of(info, "u");
  EXPECT_EQ(u.format, StorageFormat::hdf5);
  EXPECT_EQ(u.referenced_chunks, 0U);
  EXPECT_EQ(u.referenced_bytes, 0U);
  // The posix leaf of the same tree still refers to A.
  EXPECT_EQ(leaf_of(info, "v").referenced_chunks,
            count_chunks(block_box, world.size(), 4, 0, 0).total);
  expect_everywhere(world, b, 1, block_box);
  remove_on_primary(world, a);
  expect_everywhere(world, b, 1, block_box);
  expect_intact(world, b);
}

// A base that is missing, an empty directory, or whose index section of "u" is damaged gives a
// whole save. The damaged byte is in the last rank's last chunk checksum: only that rank reads
// it for its own shard, and without the whole-section check the other ranks would still refer
// to the base.
TEST(Incremental, AMissingEmptyOrDamagedBaseWritesEverything) {
  const SharedTempDir tmp;
  const Comm world(MPI_COMM_WORLD);
  const auto empty = tmp / "empty";
  const auto damaged = tmp / "damaged";
  save_state(world, damaged, 0, block_box, {});
  if (world.is_primary()) {
    fs::create_directories(empty);
    const storage::TreeIndex index =
        storage::parse_index(base::read_small_file(damaged / storage::kTreeIndexFile),
                             damaged / storage::kTreeIndexFile);
    const storage::BinarySection& section = *index.find("u")->section;
    flip_byte(damaged / storage::kTreeIndexBinaryFile, section.offset + section.length - 1);
  }
  world.barrier("empty and damaged bases made");
  for (const fs::path& base : {tmp / "missing", empty, damaged}) {
    SCOPED_TRACE(base.string());
    const auto dir = tmp / ("from-" + base.filename().string());
    save_state(world, dir, 1, block_box, base);
    const SavedTreeInfo info = read_tree_info(world, dir);
    for (const auto& leaf : info.leaves) {
      EXPECT_EQ(leaf.referenced_chunks, 0U) << leaf.path;
      EXPECT_EQ(leaf.referenced_bytes, 0U) << leaf.path;
    }
    EXPECT_TRUE(files_starting(dir / "shards", "r").empty());
    expect_everywhere(world, dir, 1, block_box);
    expect_intact(world, dir);
  }
  EXPECT_FALSE(fs::exists(tmp / "missing"));
}

TEST(Incremental, TheDirectoryBeingWrittenIsNoBase) {
  const SharedTempDir tmp;
  const Comm world(MPI_COMM_WORLD);
  const auto dir = tmp / "a";
  save_state(world, dir, 0, block_box, {});
  try {
    save_state(world, dir, 1, block_box, tmp / "." / "a");
    FAIL() << "a save into its own base went through";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("incremental_base is the directory being written"),
              std::string::npos)
        << e.what();
  }
  expect_everywhere(world, dir, 0, block_box);  // nothing was written
}

TEST(Incremental, AnotherDecompositionRefersToNothing) {
  const SharedTempDir tmp;
  const Comm world(MPI_COMM_WORLD);
  const auto a = tmp / "A";
  const auto b = tmp / "B";
  save_state(world, a, 0, rows_or_top_half, {}, {.allow_sparse = world.size() == 1});
  // The same values (and the changed band) saved in boxes that A does not have.
  save_state(world, b, 1, column_box, a);
  const SavedTreeInfo info = read_tree_info(world, b);
  for (const auto& leaf : info.leaves) {
    EXPECT_EQ(leaf.referenced_chunks, 0U) << leaf.path;
    EXPECT_EQ(leaf.referenced_bytes, 0U) << leaf.path;
  }
  expect_everywhere(world, b, 1, column_box);
  expect_intact(world, b);
}

TEST(Incremental, DamageInAReferencedChunkOfTheBaseIsFoundThroughTheNewSave) {
  const SharedTempDir tmp;
  const Comm world(MPI_COMM_WORLD);
  const auto a = tmp / "A";
  const auto b = tmp / "B";
  save_state(world, a, 0, block_box, {});
  save_state(world, b, 1, block_box, a);
  ASSERT_GT(leaf_of(read_tree_info(world, b), "u").referenced_chunks, 0U);
  int damaged = 0;  // 1: a byte of A was flipped; 2: B's file is no link of A's
  std::string what;
  if (world.is_primary()) {
    // The first referenced chunk of "u" in B's index, and the file of A that B's r<k>.bin is.
    const storage::TreeIndex index = storage::read_full_index(b);
    const storage::LeafRecord* leaf = index.find("u");
    for (const auto& shard : leaf != nullptr ? leaf->shards : std::vector<storage::ShardRecord>{}) {
      for (const auto& ref : shard.chunk_refs) {
        if (!ref.referenced() || damaged != 0) continue;
        const fs::path linked = b / shard.ref_files.at(ref.file);
        fs::path original;
        for (const auto& entry : fs::directory_iterator(a / "shards")) {
          if (fs::equivalent(entry.path(), linked)) original = entry.path();
        }
        if (original.empty()) {
          damaged = 2;
          what = linked.string();
          continue;
        }
        what = original.string();
        try {
          flip_byte(original, ref.byte_offset + 17);
          damaged = 1;
        } catch (const std::runtime_error&) {
          damaged = 3;
        }
      }
    }
  }
  MPI_Bcast(&damaged, 1, MPI_INT, 0, MPI_COMM_WORLD);
  world.barrier("damaged");
  ASSERT_NE(damaged, 0) << "B's index has no referenced chunk of u";
  ASSERT_NE(damaged, 2) << what << " is not a hard link of a file of A";
  ASSERT_EQ(damaged, 1) << "could not flip a byte of " << what;
  const TreeVerifyReport report = verify_tree(world, b);
  ASSERT_FALSE(report.problems.empty());
  EXPECT_NE(report.problems[0].find("'u'"), std::string::npos) << report.problems[0];
  ArrayTree target;
  target.add_owned_array("u", DType::float64, kShape, whole_box(kShape));
  EXPECT_THROW(restore_tree(world, b, target), FormatError);
  // The damaged bytes are A's own.
  EXPECT_FALSE(verify_tree(world, a).problems.empty());
}

}  // namespace
}  // namespace cairn::testing
