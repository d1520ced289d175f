// Compression of posix leaves (TreeSaveOptions::compression, LeafSaveArgs::compression): each
// checksum chunk is compressed on its own and stored back to back; the index records the
// compression and each chunk's stored size, the checksums cover the stored bytes. zstd restores
// exactly, N->M; zfp restores within its absolute or relative bound and stores fewer bytes on
// smooth data; compressed and plain leaves mix; a damaged compressed chunk is found naming the
// leaf; misuse fails on every rank.
#include <gtest/gtest.h>

#include <cairn/config.hpp>
#include <cairn/error.hpp>
#include <cairn/storage.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "storage/index/binary.hpp"
#include "storage/index/tree_index.hpp"
#include "storage/storage_test_util.hpp"
#include "support/test_support.hpp"

namespace cairn::testing {
namespace {

const std::vector<std::int64_t> kShape = {37, 23};

// A smooth field: zfp compresses it well.
double smooth_at(std::int64_t y, std::int64_t x) {
  return 3.0 * std::sin(0.11 * static_cast<double>(y)) * std::cos(0.07 * static_cast<double>(x)) +
         0.5;
}

template <typename T>
std::vector<T> smooth_box(const Box& box) {
  std::vector<T> out;
  for (std::int64_t y = box.offset[0]; y < box.offset[0] + box.extent[0]; ++y) {
    for (std::int64_t x = box.offset[1]; x < box.offset[1] + box.extent[1]; ++x) {
      out.push_back(static_cast<T>(smooth_at(y, x)));
    }
  }
  return out;
}

storage::TreeIndex read_index(const std::filesystem::path& dir) {
  return storage::read_full_index(dir);
}

// Saves the reference arrays "a" (float64), "i" (int32) and "u" (uint8) from at most two ranks
// (row slabs), with checksum chunks of `chunk` bytes and `compression` for every leaf.
void save_reference(const std::filesystem::path& dir, const Compression& compression,
                    std::size_t chunk) {
  const Comm world(MPI_COMM_WORLD);
  const std::optional<Comm> savers = first_ranks(std::min(world.size(), 2));
  if (savers) {
    const Box box = slab_box(kShape, savers->rank(), savers->size());
    auto a = reference_box(DType::float64, kShape, box);
    auto i = reference_box(DType::int32, kShape, box);
    auto u = reference_box(DType::uint8, kShape, box);
    ArrayTree tree;
    tree.add_array("a",
                   {.dtype = DType::float64, .global_shape = kShape, .box = box, .data = a.data()});
    tree.add_array("i",
                   {.dtype = DType::int32, .global_shape = kShape, .box = box, .data = i.data()});
    tree.add_array("u",
                   {.dtype = DType::uint8, .global_shape = kShape, .box = box, .data = u.data()});
    save_tree(*savers, dir, tree,
              {.fsync = false, .checksum_chunk_bytes = chunk, .compression = compression});
  }
  world.barrier("compression test save");
}

// Restores every leaf of `dir` over the world in a block decomposition and compares the bytes.
void expect_exact(const std::filesystem::path& dir) {
  const Comm world(MPI_COMM_WORLD);
  const Box box = block_box(kShape, world.rank(), world.size());
  for (const DType dtype : {DType::float64, DType::int32, DType::uint8}) {
    const std::string path = dtype == DType::float64 ? "a" : dtype == DType::int32 ? "i" : "u";
    for (const bool verify : {true, false}) {
      ArrayTree target;
      auto* got = static_cast<std::byte*>(target.add_owned_array(path, dtype, kShape, box));
      restore_tree(world, dir, target, {.verify_checksums = verify});
      const auto want = reference_box(dtype, kShape, box);
      ASSERT_EQ(std::memcmp(got, want.data(), want.size()), 0)
          << "leaf " << path << " verify " << verify;
    }
  }
}

TEST(Compression, ZstdRestoresExactlyNToM) {
  if (!CAIRN_HAVE_ZSTD) GTEST_SKIP() << "this build has no zstd";
  const SharedTempDir tmp;
  // Chunks of 1 MiB (one per shard) and of 40 bytes (chunks cut across rows and elements of
  // the target's boxes).
  // Shuffled (the default) and not: the index says which, and a shuffled leaf needs index
  // version 7.
  for (const bool shuffle : {true, false}) {
    for (const std::size_t chunk : {std::size_t{1} << 20, std::size_t{40}}) {
      const auto dir = tmp / ("zstd_" + std::to_string(chunk) + (shuffle ? "_shuffled" : ""));
      save_reference(dir, Compression::zstd(5, shuffle), chunk);
      const storage::TreeIndex index = read_index(dir);
      EXPECT_EQ(index.version, shuffle ? storage::kTreeFormatVersionShuffled
                                       : storage::kTreeFormatVersionSections);
      for (const auto& leaf : index.leaves) {
        EXPECT_EQ(leaf.compression, Compression::zstd(5, shuffle)) << leaf.path;
        for (const auto& shard : leaf.shards) {
          EXPECT_TRUE(shard.compressed()) << leaf.path;
          EXPECT_EQ(shard.chunk_sizes.size(), shard.checksums.size()) << leaf.path;
        }
      }
      expect_exact(dir);
      const TreeVerifyReport report = verify_tree(Comm(MPI_COMM_WORLD), dir);
      EXPECT_TRUE(report.problems.empty()) << report.problems.front();
    }
  }
}

// Saves "f" (float64) and "g" (float32), smooth, from every rank in row slabs with `c`.
void save_smooth(const Comm& comm, const std::filesystem::path& dir, const Compression& c) {
  const Box box = slab_box(kShape, comm.rank(), comm.size());
  auto f = smooth_box<double>(box);
  auto g = smooth_box<float>(box);
  ArrayTree tree;
  tree.add_array("f", ArrayShard::host(f.data(), kShape, box));
  tree.add_array("g", ArrayShard::host(g.data(), kShape, box));
  save_tree(comm, dir, tree, {.fsync = false, .checksum_chunk_bytes = 1000, .compression = c});
}

// The largest |restored - saved| of "f" and "g" over this rank's block box, on every rank.
double max_error(const Comm& comm, const std::filesystem::path& dir) {
  const Box box = block_box(kShape, comm.rank(), comm.size());
  std::vector<double> f(static_cast<std::size_t>(volume(box)));
  std::vector<float> g(f.size());
  ArrayTree target;
  target.add_array("f", ArrayShard::host(f.data(), kShape, box));
  target.add_array("g", ArrayShard::host(g.data(), kShape, box));
  restore_tree(comm, dir, target);
  const auto want_f = smooth_box<double>(box);
  const auto want_g = smooth_box<float>(box);
  double worst = 0;
  for (std::size_t i = 0; i < f.size(); ++i) {
    worst = std::max(worst, std::fabs(f[i] - want_f[i]));
    worst = std::max(worst, std::fabs(static_cast<double>(g[i]) - want_g[i]));
  }
  double all = 0;
  MPI_Allreduce(&worst, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return all;
}

TEST(Compression, ZfpHonoursItsBoundsAndStoresLess) {
  if (!CAIRN_HAVE_ZFP) GTEST_SKIP() << "this build has no ZFP";
  const SharedTempDir tmp;
  const Comm comm(MPI_COMM_WORLD);
  // The largest magnitude of the field is below 3.5, so the relative bound is at most 3.5e-4.
  const struct {
    const char* name;
    Compression compression;
    double bound;
  } cases[] = {{"absolute", Compression::zfp_absolute(1e-3), 1e-3},
               {"relative", Compression::zfp_relative(1e-4), 3.5e-4}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto dir = tmp / c.name;
    save_smooth(comm, dir, c.compression);
    const double error = max_error(comm, dir);
    EXPECT_LE(error, c.bound);
    EXPECT_GT(error, 0.0) << "zfp at this bound is lossy on this field";
    const SavedTreeInfo info = read_tree_info(comm, dir);
    for (const SavedLeafInfo& leaf : info.leaves) {
      EXPECT_EQ(leaf.compression, c.compression) << leaf.path;
      EXPECT_LT(leaf.stored_bytes, leaf.bytes) << leaf.path << ": zfp stores less than raw";
    }
    const TreeVerifyReport report = verify_tree(comm, dir);
    EXPECT_TRUE(report.problems.empty()) << report.problems.front();
  }
}

TEST(Compression, ShuffleStoresASmoothFieldInFewerBytesAndRestoresItExactly) {
  if (!CAIRN_HAVE_ZSTD) GTEST_SKIP() << "this build has no zstd";
  const SharedTempDir tmp;
  const Comm comm(MPI_COMM_WORLD);
  std::uint64_t stored[2] = {0, 0};
  for (const bool shuffle : {false, true}) {
    const auto dir = tmp / (shuffle ? "shuffled" : "plain");
    save_smooth(comm, dir, Compression::zstd(3, shuffle));
    EXPECT_EQ(max_error(comm, dir), 0.0) << "shuffle " << shuffle;
    for (const SavedLeafInfo& leaf : read_tree_info(comm, dir).leaves) {
      EXPECT_EQ(leaf.compression, Compression::zstd(3, shuffle)) << leaf.path;
      if (leaf.path == "f") stored[shuffle ? 1 : 0] = leaf.stored_bytes;
    }
  }
  // zstd finds the alike high-order bytes of neighbouring values once they are regrouped.
  EXPECT_LT(stored[1], stored[0]);
}

TEST(Compression, PerLeafCompressionMixesWithPlainLeaves) {
  if (!CAIRN_HAVE_ZSTD || !CAIRN_HAVE_ZFP) GTEST_SKIP() << "this build lacks zstd or ZFP";
  const SharedTempDir tmp;
  const Comm comm(MPI_COMM_WORLD);
  const Box box = slab_box(kShape, comm.rank(), comm.size());
  auto a = reference_box(DType::float64, kShape, box);
  auto f = smooth_box<double>(box);
  auto p = reference_box(DType::int64, kShape, box);
  ArrayTree tree;
  tree.add_array("a",
                 {.dtype = DType::float64, .global_shape = kShape, .box = box, .data = a.data()});
  tree.add_array("f", ArrayShard::host(f.data(), kShape, box));
  tree.add_array("p",
                 {.dtype = DType::int64, .global_shape = kShape, .box = box, .data = p.data()});
  const auto dir = tmp / "mixed";
  // Leaf "p" is stored as it is; it is saved between two compressed leaves in each rank's file.
  save_tree(comm, dir, tree,
            {.fsync = false,
             .checksum_chunk_bytes = 512,
             .save_args = {{"f", {.compression = Compression::zfp_absolute(1e-6)}},
                           {"p", {.compression = Compression::none()}}},
             .compression = Compression::zstd()});
  const storage::TreeIndex index = read_index(dir);
  ASSERT_EQ(index.leaves.size(), 3U);
  EXPECT_EQ(index.leaves[0].compression.kind, Compression::Kind::zstd);
  EXPECT_EQ(index.leaves[1].compression.kind, Compression::Kind::zfp);
  EXPECT_EQ(index.leaves[2].compression.kind, Compression::Kind::none);
  for (const auto& shard : index.leaves[2].shards) EXPECT_FALSE(shard.compressed());

  const Box other = block_box(kShape, comm.rank(), comm.size());
  ArrayTree target;
  auto* ga = static_cast<std::byte*>(target.add_owned_array("a", DType::float64, kShape, other));
  auto* gf = static_cast<double*>(target.add_owned_array("f", DType::float64, kShape, other));
  auto* gp = static_cast<std::byte*>(target.add_owned_array("p", DType::int64, kShape, other));
  restore_tree(comm, dir, target);
  const auto want_a = reference_box(DType::float64, kShape, other);
  const auto want_f = smooth_box<double>(other);
  const auto want_p = reference_box(DType::int64, kShape, other);
  EXPECT_EQ(std::memcmp(ga, want_a.data(), want_a.size()), 0);
  EXPECT_EQ(std::memcmp(gp, want_p.data(), want_p.size()), 0);
  for (std::size_t i = 0; i < want_f.size(); ++i) ASSERT_LE(std::fabs(gf[i] - want_f[i]), 1e-6);
  const TreeVerifyReport report = verify_tree(comm, dir);
  EXPECT_TRUE(report.problems.empty()) << report.problems.front();
}

TEST(Compression, UncompressedSavesWriteNoCompressionFields) {
  const SharedTempDir tmp;
  const Comm comm(MPI_COMM_WORLD);
  const Box box = slab_box(kShape, comm.rank(), comm.size());
  auto a = reference_box(DType::float64, kShape, box);
  ArrayTree tree;
  tree.add_array("a",
                 {.dtype = DType::float64, .global_shape = kShape, .box = box, .data = a.data()});
  save_tree(comm, tmp / "plain", tree, {.fsync = false});
  if (comm.is_primary()) {
    std::ifstream in(tmp / "plain" / storage::kTreeIndexFile);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_NE(text.str().find("\"version\":6"), std::string::npos) << text.str();
    EXPECT_EQ(text.str().find("compression"), std::string::npos) << text.str();
    EXPECT_EQ(text.str().find("chunk_sizes"), std::string::npos) << text.str();
  }
}

TEST(Compression, DamagedCompressedChunkIsFoundNamingTheLeaf) {
  if (!CAIRN_HAVE_ZSTD) GTEST_SKIP() << "this build has no zstd";
  const SharedTempDir tmp;
  const Comm comm(MPI_COMM_WORLD);
  const auto dir = tmp / "damaged";
  save_reference(dir, Compression::zstd(), 200);
  if (comm.is_primary()) {
    // One byte inside the second stored chunk of rank 0's shard of "i".
    const storage::TreeIndex index = read_index(dir);
    const auto& shard = index.find("i")->shards.at(0);
    ASSERT_GE(shard.chunk_sizes.size(), 2U);
    flip_byte(dir / shard.file, shard.byte_offset + shard.chunk_sizes[0] + 1);
  }
  comm.barrier("compression test damage");
  const TreeVerifyReport report = verify_tree(comm, dir);
  ASSERT_EQ(report.problems.size(), 1U);
  EXPECT_NE(report.problems.front().find("leaf 'i'"), std::string::npos) << report.problems.front();
  EXPECT_NE(report.problems.front().find("chunk 1 of"), std::string::npos)
      << report.problems.front();
  // Every rank restores the whole leaf, so every rank reads the damaged chunk.
  ArrayTree target;
  target.add_owned_array("i", DType::int32, kShape, whole_box(kShape));
  try {
    restore_tree(comm, dir, target);
    ADD_FAILURE() << "the damaged chunk was restored";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("'i'"), std::string::npos) << e.what();
  }
}

TEST(Compression, MisuseIsInvalidArgumentOnEveryRank) {
  if (!CAIRN_HAVE_ZFP) GTEST_SKIP() << "this build has no ZFP";
  const SharedTempDir tmp;
  const Comm comm(MPI_COMM_WORLD);
  const Box box = slab_box(kShape, comm.rank(), comm.size());
  auto i = reference_box(DType::int32, kShape, box);
  auto f = smooth_box<double>(box);
  ArrayTree tree;
  tree.add_array("f", ArrayShard::host(f.data(), kShape, box));
  tree.add_array("i",
                 {.dtype = DType::int32, .global_shape = kShape, .box = box, .data = i.data()});
  const auto expect_invalid = [&](const TreeSaveOptions& options, const std::string& what) {
    try {
      save_tree(comm, tmp / "misuse", tree, options);
      ADD_FAILURE() << what << ": the save succeeded";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  // zfp on an int leaf.
  expect_invalid({.save_args = {{"i", {.compression = Compression::zfp_absolute(0.1)}}}},
                 "leaf 'i'");
  // Non-positive bounds.
  expect_invalid({.save_args = {{"f", {.compression = Compression::zfp_absolute(0)}}}}, "leaf 'f'");
  expect_invalid({.save_args = {{"f", {.compression = Compression::zfp_relative(-1e-3)}}}},
                 "leaf 'f'");
}

// An index whose compression fields disagree is refused naming the field.
TEST(Compression, IndexRefusesInconsistentCompressionFields) {
  const std::string leaf_head =
      R"({"path": "u", "kind": "array", "format": "posix", "dtype": "float64", "shape": [4],
          "replicated": false, "order": "C", "chunk_bytes": 16)";
  const auto index = [&](int version, const std::string& compression, const std::string& sizes) {
    return R"({"format": "cairn-tree", "version": )" + std::to_string(version) +
           R"(, "world_size": 1, "leaves": [)" + leaf_head + compression +
           R"(, "shards": [{"rank": 0, "offset": [0], "extent": [4], "file": "shards/p0.bin",
           "byte_offset": 0, "bytes": 32, "xxh3": ")" +
           std::string(32, 'a') + "\"" + sizes + "}]}]}";
  };
  const std::string zstd = R"(, "compression": {"kind": "zstd", "level": 3})";
  const std::string sizes = R"(, "chunk_sizes": [10, 12])";
  EXPECT_NO_THROW((void)storage::parse_index(index(3, zstd, sizes), "t.json"));
  const struct {
    std::string text;
    const char* field;
  } bad[] = {{index(2, zstd, sizes), "compression"},
             {index(3, "", sizes), "chunk_sizes"},
             {index(3, zstd, ""), "chunk_sizes"},
             {index(3, zstd, R"(, "chunk_sizes": [10])"), "chunk_sizes"},
             {index(3, zstd, R"(, "chunk_sizes": [10, 0])"), "chunk_sizes"},
             {index(3, R"(, "compression": {"kind": "lz4"})", sizes), "kind"},
             {index(3, R"(, "compression": {"kind": "zfp", "absolute_error": -1})", sizes),
              "absolute_error"},
             {index(7, zstd, sizes), "version"}};
  for (const auto& b : bad) {
    try {
      (void)storage::parse_index(b.text, "t.json");
      ADD_FAILURE() << "accepted: " << b.text;
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(b.field), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace cairn::testing
