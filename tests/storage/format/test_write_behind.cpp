// Write-behind: a save that fsyncs starts the writeback of its shards while it writes them
// (base::PosixFile::write_behind), in every format; a save without fsync leaves writeback to
// the kernel; the bytes written either way are the bytes read back.
#include <gtest/gtest.h>

#include <cairn/storage.hpp>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "base/posix_file.hpp"
#include "storage/storage_test_util.hpp"
#include "support/test_support.hpp"

namespace cairn::testing {
namespace {

// 32 MiB of float64 over the ranks: several write-behind ranges on every rank.
const std::vector<std::int64_t> kShape{4096, 1024};

TEST(WriteBehind, AFsyncedSaveStartsWritebackWhileItWrites) {
  SharedTempDir tmp;
  Comm world(MPI_COMM_WORLD);
  const Box box = block_box(kShape, world.rank(), world.size());
  const auto data = reference_box(DType::float64, kShape, box);
  ArrayTree tree;
  tree.add_array("u", float64_shard(data, kShape, box));
  const auto local_bytes = static_cast<std::uint64_t>(data.size());
  for (StorageFormat format : available_formats()) {
    for (const bool fsync : {true, false}) {
      const std::string name =
          std::string(storage_format_name(format)) + (fsync ? "_fsync" : "_no_fsync");
      SCOPED_TRACE(name);
      const std::uint64_t before = base::written_behind_bytes();
      save_tree(world, tmp / name, tree, {.format = format, .fsync = fsync});
      const std::uint64_t handed = base::written_behind_bytes() - before;
      if (fsync) {
        // Every full range of this rank's shard; the rest goes at the fsync.
        EXPECT_GE(handed, local_bytes / base::kWriteBehindBytes * base::kWriteBehindBytes);
        EXPECT_GT(handed, 0U);
      } else {
        EXPECT_EQ(handed, 0U);
      }
      std::vector<std::byte> back(data.size());
      ArrayTree target;
      target.add_array(
          "u",
          ArrayShard{
              .dtype = DType::float64, .global_shape = kShape, .box = box, .data = back.data()});
      restore_tree(world, tmp / name, target);
      EXPECT_EQ(std::memcmp(back.data(), data.data(), data.size()), 0);
    }
  }
}

// Writes out of order and across a move of the file: every byte written is handed to
// writeback (in ranges of 4096 bytes here), and each lands where it was written.
TEST(WriteBehind, PosixFileHandsOverEveryWriteAndKeepsEachByteInPlace) {
  SharedTempDir tmp;
  Comm world(MPI_COMM_WORLD);
  const auto path = tmp / ("file-" + std::to_string(world.rank()));
  std::vector<std::byte> bytes(3 * 4096 + 100);
  for (std::size_t k = 0; k < bytes.size(); ++k) bytes[k] = static_cast<std::byte>(k * 7 + 3);
  const std::span<const std::byte> all(bytes);
  const std::uint64_t before = base::written_behind_bytes();
  {
    base::PosixFile file(path, base::PosixFile::Mode::write_new);
    file.write_behind(4096);
    file.write_at(4096, all.subspan(4096, 4096));  // the middle first: one whole range
    file.write_at(0, all.first(1000));             // pending when the file moves
    base::PosixFile moved(std::move(file));
    moved.write_at(1000, all.subspan(1000, 3096));  // with the 1000 before: a range
    moved.write_at(8192, all.subspan(8192, 50));
    moved.write_behind(0);  // hands over the 50 pending bytes, then stops
    moved.write_at(8242, all.subspan(8242));
    moved.sync();
    moved.close();
  }
  EXPECT_EQ(base::written_behind_bytes() - before, 8192U + 50U);
  std::vector<std::byte> back(bytes.size());
  base::PosixFile(path, base::PosixFile::Mode::read).read_at(0, std::span(back));
  EXPECT_EQ(back, bytes);
}

}  // namespace
}  // namespace cairn::testing
