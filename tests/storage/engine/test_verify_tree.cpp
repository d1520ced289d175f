// verify_tree(): intact trees verify clean in every format and on any number of ranks; every
// kind of damage is reported (naming the file and leaf) on every rank, never thrown.
#include <gtest/gtest.h>

#include <cairn/storage.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "storage/storage_test_util.hpp"
#include "support/test_support.hpp"

namespace cairn::testing {
namespace {

const std::vector<std::int64_t> kShape = {24, 10};

// Saves a tree of two float64 arrays and a scalar, each rank a slab, into `dir`.
void save_reference(const Comm& comm, const std::filesystem::path& dir, StorageFormat format) {
  const Box box = slab_box(kShape, comm.rank(), comm.size());
  const auto data = reference_box(DType::float64, kShape, box);
  ArrayTree tree;
  tree.add_array("fields/u", float64_shard(data, kShape, box));
  tree.add_array("fields/v", float64_shard(data, kShape, box));
  tree.add_scalar("time", Scalar(1.5));
  save_tree(comm, dir, tree, {.format = format});
}

bool mentions(const TreeVerifyReport& report, const std::string& text) {
  for (const auto& p : report.problems) {
    if (p.find(text) != std::string::npos) return true;
  }
  return false;
}

// Every rank must hold the same report.
void expect_same_everywhere(const Comm& comm, const TreeVerifyReport& report) {
  std::string all;
  for (const auto& p : report.problems) all += p + "\n";
  const auto texts = comm.allgather(all);
  for (const auto& t : texts) EXPECT_EQ(t, all);
}

TEST(VerifyTree, IntactTreesVerifyCleanInEveryFormat) {
  Comm comm(MPI_COMM_WORLD);
  SharedTempDir tmp;
  for (const auto format : available_formats()) {
    const auto dir = tmp / std::string(storage_format_name(format));
    save_reference(comm, dir, format);
    std::atomic<std::size_t> calls = 0;
    const auto report = verify_tree(comm, dir, [&](std::size_t done, std::size_t total) {
      EXPECT_LE(done, total);
      ++calls;
    });
    EXPECT_TRUE(report.problems.empty()) << report.problems.front();
    EXPECT_EQ(report.leaves, 3U);
    EXPECT_EQ(report.shards, static_cast<std::size_t>(2 * comm.size()));
    EXPECT_EQ(report.bytes, 2U * 24 * 10 * 8);
    EXPECT_EQ(comm.sum(static_cast<std::int64_t>(calls.load())), 2 * comm.size());
  }
}

TEST(VerifyTree, ReportsCorruptedAndMissingShardsOfPosixTrees) {
  Comm comm(MPI_COMM_WORLD);
  SharedTempDir tmp;
  const auto dir = tmp / "tree";
  save_reference(comm, dir, StorageFormat::posix);
  if (comm.is_primary()) {
    // Flip one byte of rank 0's first shard; remove the last rank's file.
    std::fstream f(dir / "shards/p0.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(3);
    f.put('\x7f');
    f.close();
    if (comm.size() > 1) {
      std::filesystem::remove(dir / ("shards/p" + std::to_string(comm.size() - 1) + ".bin"));
    }
  }
  comm.barrier("damaged");
  const auto report = verify_tree(comm, dir);
  expect_same_everywhere(comm, report);
  EXPECT_TRUE(mentions(report, "checksum mismatch")) << ::testing::PrintToString(report.problems);
  EXPECT_TRUE(mentions(report, "p0.bin"));
  EXPECT_TRUE(mentions(report, "fields/u"));
  if (comm.size() > 1) {
    EXPECT_TRUE(mentions(report, "p" + std::to_string(comm.size() - 1) + ".bin"));
  }
}

TEST(VerifyTree, ReportsADamagedOrMissingIndexWithoutThrowing) {
  Comm comm(MPI_COMM_WORLD);
  SharedTempDir tmp;
  const auto dir = tmp / "tree";
  save_reference(comm, dir, StorageFormat::posix);
  if (comm.is_primary()) std::ofstream(dir / "cairn-tree.json") << "{\"version\": 1, \"leaves\": [";
  comm.barrier("damaged");
  auto report = verify_tree(comm, dir);
  expect_same_everywhere(comm, report);
  ASSERT_EQ(report.problems.size(), 1U);
  EXPECT_TRUE(mentions(report, "cairn-tree.json"));
  EXPECT_EQ(report.leaves, 0U);

  report = verify_tree(comm, tmp / "nothing");
  ASSERT_EQ(report.problems.size(), 1U);
  EXPECT_TRUE(mentions(report, "nothing"));
}

TEST(VerifyTree, ReportsATruncatedHdf5File) {
  if (!storage_format_available(StorageFormat::hdf5)) GTEST_SKIP() << "no HDF5 in this build";
  Comm comm(MPI_COMM_WORLD);
  SharedTempDir tmp;
  const auto dir = tmp / "tree";
  save_reference(comm, dir, StorageFormat::hdf5);
  if (comm.is_primary()) std::filesystem::resize_file(dir / "data.h5", 2048);
  comm.barrier("damaged");
  const auto report = verify_tree(comm, dir);
  expect_same_everywhere(comm, report);
  EXPECT_FALSE(report.problems.empty());
  EXPECT_TRUE(mentions(report, "data.h5"));
}

}  // namespace
}  // namespace cairn::testing
