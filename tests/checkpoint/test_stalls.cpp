// A rank whose writes block (a hung file system), injected with a fault point that stalls
// for 1.5 s on one rank (CAIRN_FAULT `<point>@<rank>:stall=1500#1`, set per suite by
// CMakeLists.txt, which also puts the files in /dev/shm), while a rank's writes may take
// 0.5 s (write_timeout). The save fails on every rank with a TimeoutError naming the stuck
// rank instead of hanging; the stuck rank throws the same error once its writes returned;
// nothing of the failed save is left; the next save and a restore of the checkpoint committed
// before work.
#include <cairn/checkpointer.hpp>
#include <cairn/handlers.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_test_util.hpp"
#include "support/test_support.hpp"

using namespace cairn;
using namespace cairn::testing;

namespace {

constexpr auto kWriteTimeout = std::chrono::milliseconds(500);

#define REQUIRE_STALL(point, rank_var)                                                  \
  const std::optional<int> rank_var = armed_fault_rank(point);                          \
  if (!rank_var) {                                                                      \
    GTEST_SKIP() << "needs CAIRN_FAULT=" << (point)                                     \
                 << "@<rank>:stall=<ms> and a build with CAIRN_FAULT_INJECTION (ctest " \
                    "sets it)";                                                         \
  }

Composite meta_only(int salt) {
  return Composite{{"meta", std::make_shared<JsonSave>(meta_value(salt))}};
}

Composite with_field(Field& field, StorageFormat format, int salt) {
  return Composite{
      {"meta", std::make_shared<JsonSave>(meta_value(salt))},
      {"state", std::make_shared<ArrayTreeSave>(field.tree(), TreeSaveOptions{.format = format})}};
}

// The error of a stalled save names the stuck rank and the deadline.
void expect_names_stuck_rank(const std::string& message, int stuck, const Comm& comm,
                             const std::filesystem::path& dir) {
  const std::string rank = "on rank " + std::to_string(stuck < 0 ? comm.rank() : stuck);
  EXPECT_TRUE(mentions(message, {rank, "did not return within 0.5 s", dir.string()})) << message;
}

// After the failed save of `failed`: nothing of it is left, the checkpoint `committed`
// (meta_only(1)) still restores, and a new save of the field commits and restores.
template <class Ck>
void expect_recovered(Ck& ck, Field& field, StorageFormat format,
                      const std::filesystem::path& committed, const std::filesystem::path& failed,
                      const std::filesystem::path& next) {
  expect_no_checkpoint(failed);
  const auto before = std::any_cast<CompositeResult>(ck.restore(committed, nullptr));
  EXPECT_EQ(before.template get<boost::json::value>("meta"), meta_value(1));

  ck.save(next, with_field(field, format, 3));
  ck.wait_until_finished();
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_TRUE(is_committed(next));
  FieldTarget target(field.box);
  const Composite args{{"state", std::make_shared<ArrayTreeRestore>(target.tree)}};
  const auto after = std::any_cast<CompositeResult>(ck.restore(next, &args));
  expect_field(target, after.template get<ArrayTree>("state"), 2);
}

// Adapts a Checkpointer to expect_recovered(), which also serves AsyncCheckpointer.
struct SyncCk {
  Checkpointer ck;
  void save(const std::filesystem::path& dir, const Composite& args) { ck.save(dir, args); }
  std::any restore(const std::filesystem::path& dir, const CheckpointArgs* args) {
    return ck.restore(dir, args);
  }
  void wait_until_finished() {}
};

void sync_stall(StorageFormat format, std::string_view point, int stuck) {
  if (!storage_format_available(format)) GTEST_SKIP() << "format not in this build";
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  SyncCk ck{
      Checkpointer(comm, std::make_shared<CompositeHandler>(), {.write_timeout = kWriteTimeout})};
  ck.save(tmp / "1", meta_only(1));
  Field field(block_box(kFieldShape, comm.rank(), comm.size()), 2);
  const std::string message =
      error_of<TimeoutError>([&] { ck.save(tmp / "2", with_field(field, format, 2)); });
  expect_names_stuck_rank(message, stuck, comm, tmp / "2");
  EXPECT_FALSE(mentions(message, {"injected fault"})) << point << ": " << message;
  expect_recovered(ck, field, format, tmp / "1", tmp / "2", tmp / "3");
}

void async_stall(StorageFormat format, int stuck) {
  if (!storage_format_available(format)) GTEST_SKIP() << "format not in this build";
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  AsyncCheckpointer ck(comm, std::make_shared<CompositeHandler>(), {},
                       {.write_timeout = kWriteTimeout});
  ck.save(tmp / "1", meta_only(1));
  ck.wait_until_finished();
  Field field(block_box(kFieldShape, comm.rank(), comm.size()), 2);
  EXPECT_NO_THROW(ck.save(tmp / "2", with_field(field, format, 2)));
  const std::string message = error_of<TimeoutError>([&] { ck.wait_until_finished(); });
  expect_names_stuck_rank(message, stuck, comm, tmp / "2");
  EXPECT_FALSE(ck.is_saving_in_progress());
  EXPECT_NO_THROW(ck.wait_until_finished()) << "a failure is reported once";
  expect_recovered(ck, field, format, tmp / "1", tmp / "2", tmp / "3");
}

}  // namespace

// ------------------------------------------------------------------ a posix shard write

TEST(PosixStallFault, SyncSaveFailsNamingTheStuckRank) {
  REQUIRE_STALL("storage.posix_write", rank);
  sync_stall(StorageFormat::posix, "storage.posix_write", *rank);
}

TEST(PosixStallFault, AsyncSaveFailsNamingTheStuckRank) {
  REQUIRE_STALL("storage.posix_write", rank);
  async_stall(StorageFormat::posix, *rank);
}

// ------------------------------------------------------------------ an hdf5 write

TEST(Hdf5StallFault, SyncSaveFailsNamingTheStuckRank) {
  REQUIRE_STALL("storage.hdf5_write", rank);
  sync_stall(StorageFormat::hdf5, "storage.hdf5_write", *rank);
}

TEST(Hdf5StallFault, AsyncSaveFailsNamingTheStuckRank) {
  REQUIRE_STALL("storage.hdf5_write", rank);
  async_stall(StorageFormat::hdf5, *rank);
}

// ------------------------------------------------------------------ the primary, async

TEST(DrainStallFault, AsyncSaveFailsNamingThePrimary) {
  // The primary's writes returned late: the ranks cannot wait for its verdict.
  REQUIRE_STALL("checkpoint.async_drain", rank);
  async_stall(StorageFormat::posix, *rank);
}
