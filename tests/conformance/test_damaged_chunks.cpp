// One damaged checksum chunk, through the public API, for every format this build has (posix
// always, hdf5 with CAIRN_HAVE_HDF5): a 64 x 32 float64 array saved as row slabs over the world
// with checksum chunks of 1024 bytes (4 rows each), then one bit flipped in one element of a
// chunk in the middle of rank 0's shard (the only shard at 1 rank).
//
//  * restores whose targets avoid that chunk (other rows of the same shard, rows of other
//    shards, partial columns, small read buffers) succeed with checksums verified;
//  * verify_tree reports exactly that chunk, naming the file, the leaf and its byte range;
//  * a restore whose target touches the chunk (even one intact element of it) throws
//    FormatError on every rank, naming the file, the leaf and the chunk's byte range on the
//    ranks that read it and the leaf everywhere;
//  * without verification the same restores succeed and exactly the damaged element differs.
//
// The TEST_P cases run once per format as "Formats/DamagedChunks.<Case>/<format>".
#include <cairn/storage.hpp>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdint>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../storage/storage_test_util.hpp"
#include "storage/index/binary.hpp"
#include "support/test_support.hpp"

namespace cairn {
// Test names and failure messages show a format by its name.
void PrintTo(StorageFormat format, std::ostream* out) { *out << storage_format_name(format); }
}  // namespace cairn

namespace cairn::testing {
namespace {

namespace json = boost::json;

constexpr const char* kLeaf = "fields/u";
constexpr std::int64_t kRows = 64;
constexpr std::int64_t kCols = 32;
const std::vector<std::int64_t> kShape = {kRows, kCols};
constexpr std::int64_t kElem = sizeof(double);
// 4 rows of 32 doubles per checksum chunk.
constexpr std::size_t kChunkBytes = 1024;
constexpr std::int64_t kRowsPerChunk = static_cast<std::int64_t>(kChunkBytes) / (kCols * kElem);
// The bit flipped in the first byte of the damaged element.
constexpr unsigned char kFlip = 0x01;
// What a target holds before a restore.
constexpr double kUnset = -1.0;

std::string name_of(StorageFormat format) { return std::string(storage_format_name(format)); }

// Distinctive values: no 8-byte pattern of one element occurs twice in the array.
double value_at(std::int64_t g) { return 1.0e6 + static_cast<double>(g); }

std::string bytes_of(double value) {
  std::string out(sizeof value, '\0');
  std::memcpy(out.data(), &value, sizeof value);
  return out;
}

// `value` with kFlip applied to its first byte in memory (the damage done to the file).
double flipped(double value) {
  unsigned char bytes[sizeof value];
  std::memcpy(bytes, &value, sizeof value);
  bytes[0] = static_cast<unsigned char>(bytes[0] ^ kFlip);
  double out = 0;
  std::memcpy(&out, bytes, sizeof out);
  return out;
}

// Rows [begin, end) and columns [col_begin, col_end) of the array.
Box rows_box(std::int64_t begin, std::int64_t end, std::int64_t col_begin = 0,
             std::int64_t col_end = kCols) {
  return Box{{begin, col_begin}, {end - begin, col_end - col_begin}};
}

// The saved values of `box`, row-major.
std::vector<double> values_of(const Box& box) {
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(volume(box)));
  for (std::int64_t i = 0; i < box.extent[0]; ++i) {
    for (std::int64_t j = 0; j < box.extent[1]; ++j) {
      out.push_back(value_at((box.offset[0] + i) * kCols + box.offset[1] + j));
    }
  }
  return out;
}

// Global linear indices of the elements of `got` (holding `box`) whose bytes differ from the
// saved values.
std::vector<std::int64_t> differing(const std::vector<double>& got, const Box& box) {
  std::vector<std::int64_t> out;
  const std::vector<double> want = values_of(box);
  if (got.size() != want.size()) return {-1};
  for (std::int64_t i = 0; i < box.extent[0]; ++i) {
    for (std::int64_t j = 0; j < box.extent[1]; ++j) {
      const auto k = static_cast<std::size_t>(i * box.extent[1] + j);
      if (std::memcmp(&got[k], &want[k], sizeof(double)) != 0) {
        out.push_back((box.offset[0] + i) * kCols + box.offset[1] + j);
      }
    }
  }
  return out;
}

// "<n> element(s) differ, the first at <index>" for a failure message.
std::string describe(const std::vector<std::int64_t>& wrong) {
  if (wrong.empty()) return "no element differs";
  return std::to_string(wrong.size()) + " element(s) differ, the first at " +
         std::to_string(wrong.front());
}

std::string read_file_bytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::vector<std::int64_t> dims_of(const json::value& value) {
  std::vector<std::int64_t> out;
  for (const json::value& d : value.as_array()) out.push_back(d.to_number<std::int64_t>());
  return out;
}

// The record of leaf `path` in a parsed cairn-tree.json, or nullptr.
const json::object* leaf_record(const json::value& index, std::string_view path) {
  for (const json::value& leaf : index.at("leaves").as_array()) {
    if (leaf.at("path").as_string() == path) return &leaf.as_object();
  }
  return nullptr;
}

// The shard that rank `rank` saved in a leaf record, or nullptr.
const json::object* shard_record(const json::object& leaf, int rank) {
  for (const json::value& shard : leaf.at("shards").as_array()) {
    if (shard.at("rank").to_number<int>() == rank) return &shard.as_object();
  }
  return nullptr;
}

// True on every rank when `local` is true on every world rank.
bool on_every_rank(bool local) {
  int mine = local ? 1 : 0;
  int all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

// What a restore expected to fail did on this rank.
struct Outcome {
  bool format_error = false;  ///< threw cairn::FormatError
  std::string message;        ///< what it threw, or why that is not what was expected
};

class DamagedChunks : public ::testing::TestWithParam<StorageFormat> {
 protected:
  // Saves the array on every world rank, checks the index, then damages one element.
  void SetUp() override {
    dir_ = tmp_ / "item";
    const int n = comm_.size();
    const Box mine = slab_box(kShape, comm_.rank(), n);
    std::vector<double> data = values_of(mine);
    ArrayTree tree;
    tree.add_array(kLeaf, ArrayShard::host(data.data(), kShape, mine));
    save_tree(comm_, dir_, tree, {.format = GetParam(), .checksum_chunk_bytes = kChunkBytes});

    // Every rank reads the index: the chunk size, rank 0's shard, its file and offset.
    // The full view of the index: cairn-tree.json with the shards of cairn-tree.bin.
    const json::value index = storage::to_json(storage::read_full_index(dir_));
    ASSERT_EQ(index.at("version").to_number<std::int64_t>(), storage::kTreeFormatVersionSections);
    const json::object* leaf = leaf_record(index, kLeaf);
    ASSERT_NE(leaf, nullptr) << "no leaf '" << kLeaf << "' in the index";
    ASSERT_EQ(std::string(leaf->at("format").as_string()), name_of(GetParam()));
    ASSERT_EQ(leaf->at("chunk_bytes").to_number<std::uint64_t>(), kChunkBytes);
    ASSERT_EQ(leaf->at("shards").as_array().size(), static_cast<std::size_t>(n));
    const json::object* shard = shard_record(*leaf, 0);
    ASSERT_NE(shard, nullptr) << "no shard of rank 0 in the index";
    shard_box_ = Box{dims_of(shard->at("offset")), dims_of(shard->at("extent"))};
    ASSERT_EQ(shard_box_, slab_box(kShape, 0, n)) << to_string(shard_box_);
    const std::int64_t shard_rows = shard_box_.extent[0];
    const std::int64_t chunks = (shard_rows + kRowsPerChunk - 1) / kRowsPerChunk;
    ASSERT_EQ(shard->at("xxh3").as_string().size(), static_cast<std::size_t>(16 * chunks))
        << "one checksum of 16 hex digits per 4 rows of the shard " << to_string(shard_box_);
    ASSERT_GE(chunks, 3) << "rank 0's shard needs chunks before and after the damaged one";
    file_ = dir_ / std::string(shard->at("file").as_string());
    if (GetParam() == StorageFormat::posix || GetParam() == StorageFormat::hdf5) {
      ASSERT_EQ(file_.filename().string(),
                GetParam() == StorageFormat::posix ? "p0.bin" : "data.h5");
    } else {  // another format's data file need only be there
      ASSERT_TRUE(std::filesystem::is_regular_file(file_)) << file_;
    }
    const auto byte_offset = shard->at("byte_offset").to_number<std::uint64_t>();
    byte_offset_ = byte_offset;

    // The damaged chunk is in the middle of the shard (never its last, possibly short, one),
    // the damaged element in its second row.
    const std::int64_t k = chunks / 2;
    chunk_first_row_ = shard_box_.offset[0] + k * kRowsPerChunk;
    chunk_end_row_ = chunk_first_row_ + kRowsPerChunk;
    chunk_begin_ = static_cast<std::uint64_t>(k) * kChunkBytes;
    chunk_end_ = chunk_begin_ + kChunkBytes;
    const std::int64_t row = chunk_first_row_ + 1;
    const std::int64_t col = 5;
    damaged_ = row * kCols + col;
    const std::int64_t in_shard = (row - shard_box_.offset[0]) * kCols + col;

    // The save is intact before the damage.
    const TreeVerifyReport before = verify_tree(comm_, dir_);
    ASSERT_TRUE(before.problems.empty()) << before.problems.front();

    std::string problem;
    if (comm_.is_primary()) {
      problem = damage(byte_offset + static_cast<std::uint64_t>(in_shard * kElem));
    }
    int done = problem.empty() ? 1 : 0;
    MPI_Bcast(&done, 1, MPI_INT, 0, MPI_COMM_WORLD);
    ASSERT_EQ(done, 1) << problem;
  }

  // Flips kFlip in the first byte of the damaged element in file_: posix at `posix_at` (from
  // the index), hdf5 where the element's bytes occur (they must occur exactly once). Returns
  // what went wrong, or "".
  std::string damage(std::uint64_t posix_at) const {
    const std::string content = read_file_bytes(file_);
    const std::string want = bytes_of(value_at(damaged_));
    std::uint64_t at = 0;
    if (GetParam() == StorageFormat::posix) {
      at = posix_at;
      if (at + want.size() > content.size()) {
        return "byte " + std::to_string(at) + " is past the end of " + file_.string();
      }
      if (content.compare(at, want.size(), want) != 0) {
        return "the bytes at " + std::to_string(at) + " of " + file_.string() +
               " are not those of element " + std::to_string(damaged_);
      }
    } else {
      const auto first = content.find(want);
      if (first == std::string::npos) {
        return "the bytes of element " + std::to_string(damaged_) + " are not in " + file_.string();
      }
      if (content.find(want, first + 1) != std::string::npos) {
        return "the bytes of element " + std::to_string(damaged_) + " occur more than once in " +
               file_.string();
      }
      at = first;
    }
    std::fstream f(file_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(at));
    f.put(static_cast<char>(static_cast<unsigned char>(content[at]) ^ kFlip));
    f.flush();
    if (!f.good())
      return "writing byte " + std::to_string(at) + " of " + file_.string() + " failed";
    return "";
  }

  // Whether `box` touches a row of the damaged chunk (a chunk spans whole rows).
  [[nodiscard]] bool touches_chunk(const Box& box) const {
    return box.extent[0] > 0 && box.extent[1] > 0 && box.offset[0] < chunk_end_row_ &&
           box.offset[0] + box.extent[0] > chunk_first_row_;
  }

  // "bytes [<begin>, <end>) of the shard" of the damaged chunk, and for posix (a shard stored
  // contiguously) where they lie in the file.
  [[nodiscard]] std::string chunk_range() const {
    return "bytes [" + std::to_string(chunk_begin_) + ", " + std::to_string(chunk_end_) +
           ") of the shard";
  }
  [[nodiscard]] std::string file_range() const {
    if (GetParam() != StorageFormat::posix) return {};
    return "file offsets [" + std::to_string(byte_offset_ + chunk_begin_) + ", " +
           std::to_string(byte_offset_ + chunk_end_) + ")";
  }

  // Restores `box` of the leaf on this rank (collective over the world).
  std::vector<double> restore_box(const Box& box, const TreeRestoreOptions& options) {
    std::vector<double> out(static_cast<std::size_t>(volume(box)), kUnset);
    ArrayTree target;
    target.add_array(kLeaf, ArrayShard::host(out.data(), kShape, box));
    restore_tree(comm_, dir_, target, options);
    return out;
  }

  Outcome try_restore(const Box& box, const TreeRestoreOptions& options = {}) {
    try {
      (void)restore_box(box, options);
      return {false, "restore_tree returned normally"};
    } catch (const FormatError& e) {
      return {true, e.what()};
    } catch (const std::exception& e) {
      return {false, std::string("threw something other than FormatError: ") + e.what()};
    }
  }

  // Checks a restore into `box` (this rank's target) that must fail: FormatError on every
  // rank; its message names the leaf everywhere, and also the file and the chunk's range where
  // `box` touches the damaged chunk.
  void expect_refused(const Box& box) {
    SCOPED_TRACE("rank " + std::to_string(comm_.rank()) + " target " + to_string(box));
    const Outcome outcome = try_restore(box);
    EXPECT_TRUE(outcome.format_error) << outcome.message;
    EXPECT_TRUE(on_every_rank(outcome.format_error)) << "some rank did not throw FormatError";
    if (!outcome.format_error) return;
    const std::string& m = outcome.message;
    EXPECT_NE(m.find("leaf '" + std::string(kLeaf) + "'"), std::string::npos) << m;
    if (touches_chunk(box)) {
      EXPECT_NE(m.find(file_.string()), std::string::npos) << m;
      EXPECT_NE(m.find(chunk_range()), std::string::npos) << m;
      EXPECT_NE(m.find(file_range()), std::string::npos) << m;
    }
  }

  SharedTempDir tmp_;
  Comm comm_{MPI_COMM_WORLD};
  std::filesystem::path dir_;
  std::filesystem::path file_;  // the data file of rank 0's shard
  Box shard_box_;               // rank 0's shard
  std::int64_t chunk_first_row_ = 0;
  std::int64_t chunk_end_row_ = 0;  // the damaged chunk's rows: [first, end)
  std::uint64_t chunk_begin_ = 0;
  std::uint64_t byte_offset_ = 0;  // of rank 0's shard in its file
  std::uint64_t chunk_end_ = 0;    // its bytes in the shard's stream: [begin, end)
  std::int64_t damaged_ = 0;       // global linear index of the damaged element
};

TEST_P(DamagedChunks, RestoresAvoidingTheChunkReadTheSavedValues) {
  const std::int64_t shard_first = shard_box_.offset[0];
  const std::int64_t shard_end = shard_first + shard_box_.extent[0];
  const std::vector<Box> boxes = {
      // Inside the first chunk of rank 0's shard.
      rows_box(shard_first + 1, shard_first + 3),
      // The rows just before the damaged chunk, part of the columns.
      rows_box(chunk_first_row_ - 3, chunk_first_row_, 0, 17),
      // The rows just after it (into rank 1's shard at 4 ranks), part of the columns.
      rows_box(chunk_end_row_, std::min(chunk_end_row_ + 6, kRows), 3, 29),
      // Across the end of rank 0's shard, and the last rows of the array (other shards when
      // there is more than one rank).
      rows_box(shard_end - 2, std::min(shard_end + 2, kRows)),
      rows_box(kRows - 5, kRows),
  };
  for (const Box& box : boxes) {
    ASSERT_FALSE(touches_chunk(box)) << to_string(box) << " touches the damaged chunk";
  }
  for (const TreeRestoreOptions& options :
       {TreeRestoreOptions{}, TreeRestoreOptions{.restore_concurrent_bytes = 4096}}) {
    // Round t: rank r restores boxes[(r + t) % size], so every rank restores every box.
    for (std::size_t t = 0; t < boxes.size(); ++t) {
      const Box& box = boxes[(static_cast<std::size_t>(comm_.rank()) + t) % boxes.size()];
      SCOPED_TRACE("rank " + std::to_string(comm_.rank()) + " target " + to_string(box) +
                   " restore_concurrent_bytes " + std::to_string(options.restore_concurrent_bytes));
      std::vector<double> got;
      try {
        got = restore_box(box, options);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "the restore failed: " << e.what();
        continue;
      }
      const std::vector<std::int64_t> wrong = differing(got, box);
      EXPECT_TRUE(wrong.empty()) << describe(wrong);
    }
  }
}

TEST_P(DamagedChunks, VerifyTreeReportsTheChunkOnly) {
  const TreeVerifyReport report = verify_tree(comm_, dir_);
  std::string all;
  for (const std::string& p : report.problems) all += "\n  " + p;
  ASSERT_EQ(report.problems.size(), 1U) << all;
  const std::string& problem = report.problems.front();
  EXPECT_NE(problem.find(file_.string()), std::string::npos) << problem;
  EXPECT_NE(problem.find("leaf '" + std::string(kLeaf) + "'"), std::string::npos) << problem;
  EXPECT_NE(problem.find("bytes ["), std::string::npos) << problem;
  EXPECT_NE(problem.find(chunk_range()), std::string::npos) << problem;
  EXPECT_NE(problem.find(file_range()), std::string::npos) << problem;
  EXPECT_EQ(report.leaves, 1U);
  EXPECT_EQ(report.shards, static_cast<std::size_t>(comm_.size()));
  EXPECT_EQ(report.bytes, static_cast<std::uint64_t>(kRows * kCols * kElem));
}

TEST_P(DamagedChunks, RestoresTouchingTheChunkThrowOnEveryRank) {
  {
    SCOPED_TRACE("every rank restores the whole array");
    expect_refused(whole_box(kShape));
  }
  {
    // Only the ranks whose slab holds the chunk's rows read it (rank 0); the others learn of
    // it through the collective verdict.
    SCOPED_TRACE("every rank restores its row slab");
    expect_refused(slab_box(kShape, comm_.rank(), comm_.size()));
  }
  {
    // An intact element of the damaged chunk: verification reads the whole chunk.
    SCOPED_TRACE("rank 0 restores one intact element of the chunk, the others the last rows");
    expect_refused(comm_.rank() == 0 ? rows_box(chunk_end_row_ - 1, chunk_end_row_, kCols - 1)
                                     : rows_box(kRows - 5, kRows));
  }
}

TEST_P(DamagedChunks, UnverifiedRestoresReadTheFlippedElementOnly) {
  const std::vector<std::pair<std::string, Box>> targets = {
      {"whole array", whole_box(kShape)},
      {"row slab", slab_box(kShape, comm_.rank(), comm_.size())},
  };
  for (const auto& [what, box] : targets) {
    SCOPED_TRACE("rank " + std::to_string(comm_.rank()) + " " + what + " " + to_string(box));
    std::vector<double> got;
    try {
      got = restore_box(box, {.verify_checksums = false});
    } catch (const std::exception& e) {
      ADD_FAILURE() << "the unverified restore failed: " << e.what();
      continue;
    }
    const std::vector<std::int64_t> wrong = differing(got, box);
    if (!touches_chunk(box)) {
      EXPECT_TRUE(wrong.empty()) << describe(wrong);
      continue;
    }
    // No ASSERT here: the other ranks go on to the next (collective) restore.
    EXPECT_EQ(wrong.size(), 1U) << describe(wrong);
    if (wrong.size() != 1U) continue;
    EXPECT_EQ(wrong.front(), damaged_) << describe(wrong);
    if (wrong.front() != damaged_) continue;
    const std::int64_t row = damaged_ / kCols - box.offset[0];
    const std::int64_t col = damaged_ % kCols - box.offset[1];
    const double value = got[static_cast<std::size_t>(row * box.extent[1] + col)];
    const double want = flipped(value_at(damaged_));
    EXPECT_EQ(std::memcmp(&value, &want, sizeof value), 0)
        << "read " << value << ", the flipped value is " << want;
  }
}

// The cases this binary was registered for (CAIRN_DAMAGED_CHUNKS_FORMATS, from CMake) are the
// formats the library reports: a format registered but missing would run no case at all.
TEST(DamagedChunksSetup, RegisteredFormatsAreTheAvailableOnes) {
  std::string available;
  for (StorageFormat format : available_formats()) {
    available += (available.empty() ? "" : ",") + name_of(format);
  }
  EXPECT_EQ(available, CAIRN_DAMAGED_CHUNKS_FORMATS);
}

INSTANTIATE_TEST_SUITE_P(Formats, DamagedChunks, ::testing::ValuesIn(available_formats()),
                         [](const ::testing::TestParamInfo<StorageFormat>& info) {
                           return name_of(info.param);
                         });

}  // namespace
}  // namespace cairn::testing
