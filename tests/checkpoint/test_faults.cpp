// Failures injected on one rank with the library's fault points (CAIRN_FAULT, set per suite
// by CMakeLists.txt: the write faults fire on the last rank, the JSON and commit faults on the
// primary). Whatever fails on one rank, every rank throws from the same call (save() for a
// Checkpointer, the next call for an AsyncCheckpointer), nothing is committed, no temporary
// directory is left, and a checkpoint committed before at the same path stays intact.
#include <cairn/checkpointer.hpp>
#include <cairn/handlers.hpp>
#include <gtest/gtest.h>

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

// The text of the injected error for `point` on its rank.
std::string injected(std::string_view point, int rank) {
  std::string text = "injected fault at " + std::string(point);
  if (rank >= 0) text += " on rank " + std::to_string(rank);
  return text;
}

#define REQUIRE_FAULT(point, rank_var)                                                \
  const std::optional<int> rank_var = armed_fault_rank(point);                        \
  if (!rank_var) {                                                                    \
    GTEST_SKIP() << "needs CAIRN_FAULT=" << (point)                                   \
                 << "@<rank> and a build with CAIRN_FAULT_INJECTION (ctest sets it)"; \
  }

Composite meta_only(int salt) {
  return Composite{{"meta", std::make_shared<JsonSave>(meta_value(salt))}};
}

Composite bytes_only(int rank, int salt) {
  return Composite{{"blob", std::make_shared<BytesSave>(rank_blob(rank, salt))}};
}

// Checks that `dir` is still the committed checkpoint holding meta_only(salt).
template <class Ck>
void expect_meta_checkpoint(Ck& ck, const std::filesystem::path& dir, int salt) {
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_TRUE(is_committed(dir));
  EXPECT_FALSE(std::filesystem::exists(tmp_of(dir)));
  const CompositeResult result = std::any_cast<CompositeResult>(ck.restore(dir, nullptr));
  EXPECT_EQ(result.names(), std::vector<std::string>{"meta"});
  EXPECT_EQ(result.get<boost::json::value>("meta"), meta_value(salt));
}

// A sync save of meta + a field in `format` that fails on one rank, over a committed
// checkpoint (force) and at a fresh path.
void sync_tree_fault(StorageFormat format, std::string_view point, int rank) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  Checkpointer ck(comm, std::make_shared<CompositeHandler>());
  const auto dir = tmp / "ckpt";
  ck.save(dir, meta_only(1));

  Field field(block_box(kFieldShape, comm.rank(), comm.size()), 2);
  const auto failing = [&] {
    return Composite{{"meta", std::make_shared<JsonSave>(meta_value(2))},
                     {"state", std::make_shared<ArrayTreeSave>(field.tree(),
                                                               TreeSaveOptions{.format = format})}};
  };
  const std::string over = error_of<IoError>([&] { ck.save(dir, failing(), {.force = true}); });
  EXPECT_TRUE(mentions(over, {injected(point, rank)})) << over;
  expect_meta_checkpoint(ck, dir, 1);

  const auto fresh = tmp / "fresh";
  const std::string message = error_of<IoError>([&] { ck.save(fresh, failing()); });
  EXPECT_TRUE(mentions(message, {injected(point, rank)})) << message;
  expect_no_checkpoint(fresh);
}

// The same through an AsyncCheckpointer: save() returns, wait_until_finished() throws on every
// rank, once; the checkpointer goes on working.
void async_tree_fault(StorageFormat format, std::string_view point, int rank) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  AsyncCheckpointer ck(comm, std::make_shared<CompositeHandler>());
  const auto dir = tmp / "ckpt";
  ck.save(dir, meta_only(1));
  ck.wait_until_finished();

  Field field(block_box(kFieldShape, comm.rank(), comm.size()), 2);
  {
    const Composite failing{{"meta", std::make_shared<JsonSave>(meta_value(2))},
                            {"state", std::make_shared<ArrayTreeSave>(
                                          field.tree(), TreeSaveOptions{.format = format})}};
    EXPECT_NO_THROW(ck.save(dir, failing, {.force = true}));
  }
  const std::string message = error_of<IoError>([&] { ck.wait_until_finished(); });
  EXPECT_TRUE(mentions(message, {injected(point, rank), dir.string()})) << message;
  EXPECT_FALSE(ck.is_saving_in_progress());
  EXPECT_NO_THROW(ck.wait_until_finished()) << "a failure is reported once";
  expect_meta_checkpoint(ck, dir, 1);

  const auto next = tmp / "next";
  ck.save(next, meta_only(3));
  ck.wait_until_finished();
  expect_meta_checkpoint(ck, next, 3);
}

}  // namespace

// ------------------------------------------------------------------ posix shard writes

TEST(PosixWriteFault, SyncSaveFailsOnEveryRank) {
  REQUIRE_FAULT("storage.posix_write", rank);
  sync_tree_fault(StorageFormat::posix, "storage.posix_write", *rank);
}

TEST(PosixWriteFault, AsyncSaveFailsAtWaitOnEveryRank) {
  REQUIRE_FAULT("storage.posix_write", rank);
  async_tree_fault(StorageFormat::posix, "storage.posix_write", *rank);
}

TEST(PosixWriteFault, AsyncFailureIsRethrownByTheNextSave) {
  REQUIRE_FAULT("storage.posix_write", rank);
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  AsyncCheckpointer ck(comm, std::make_shared<ArrayTreeHandler>());
  Field field(block_box(kFieldShape, comm.rank(), comm.size()), 1);
  const auto first = tmp / "first";
  const auto second = tmp / "second";
  ck.save(first, ArrayTreeSave(field.tree()));
  const std::string message =
      error_of<IoError>([&] { ck.save(second, ArrayTreeSave(field.tree())); });
  EXPECT_TRUE(mentions(message, {injected("storage.posix_write", *rank), first.string()}))
      << message;
  EXPECT_FALSE(ck.is_saving_in_progress());
  expect_no_checkpoint(first);
  expect_no_checkpoint(second);  // the second save did not start
}

TEST(PosixWriteFault, AsyncFailureOfALeafLargerThanTheBudget) {
  // The leaf is written from the caller's memory while save() waits: the failure must not
  // keep save() waiting, and surfaces at the next call.
  REQUIRE_FAULT("storage.posix_write", rank);
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  for (bool zero_copy : {false, true}) {
    SCOPED_TRACE(zero_copy ? "zero copy" : "copy");
    AsyncCheckpointer ck(comm, std::make_shared<ArrayTreeHandler>(),
                         {.staging_bytes = 64, .zero_copy = zero_copy});
    Field field(block_box(kFieldShape, comm.rank(), comm.size()), 1);
    const auto dir = tmp / (zero_copy ? "zero_copy" : "copy");
    ck.save(dir, ArrayTreeSave(field.tree()));
    const std::string message = error_of<IoError>([&] {
      ck.check_for_errors();
      ck.wait_until_finished();
    });
    EXPECT_TRUE(mentions(message, {injected("storage.posix_write", *rank)})) << message;
    expect_no_checkpoint(dir);
  }
}

TEST(PosixWriteFault, AsyncDestructorDoesNotThrowAndCommitsNothing) {
  REQUIRE_FAULT("storage.posix_write", rank);
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const auto dir = tmp / "ckpt";
  Field field(block_box(kFieldShape, comm.rank(), comm.size()), 1);
  EXPECT_NO_THROW({
    AsyncCheckpointer ck(comm, std::make_shared<ArrayTreeHandler>());
    ck.save(dir, ArrayTreeSave(field.tree()));
  });
  expect_no_checkpoint(dir);
}

// ------------------------------------------------------------------ hdf5 writes

TEST(Hdf5WriteFault, SyncSaveFailsOnEveryRank) {
  REQUIRE_FAULT("storage.hdf5_write", rank);
  if (!storage_format_available(StorageFormat::hdf5)) GTEST_SKIP() << "no hdf5 in this build";
  sync_tree_fault(StorageFormat::hdf5, "storage.hdf5_write", *rank);
}

TEST(Hdf5WriteFault, AsyncSaveFailsAtWaitOnEveryRank) {
  REQUIRE_FAULT("storage.hdf5_write", rank);
  if (!storage_format_available(StorageFormat::hdf5)) GTEST_SKIP() << "no hdf5 in this build";
  async_tree_fault(StorageFormat::hdf5, "storage.hdf5_write", *rank);
}

// ------------------------------------------------------------------ bytes and JSON items

TEST(BytesWriteFault, SyncAndAsyncSavesFailOnEveryRank) {
  REQUIRE_FAULT("handler.bytes_write", rank);
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const auto dir = tmp / "ckpt";
  {
    Checkpointer ck(comm, std::make_shared<CompositeHandler>());
    ck.save(dir, meta_only(1));
    const std::string message =
        error_of<IoError>([&] { ck.save(dir, bytes_only(comm.rank(), 2), {.force = true}); });
    EXPECT_TRUE(mentions(message, {injected("handler.bytes_write", *rank)})) << message;
    expect_meta_checkpoint(ck, dir, 1);
  }
  AsyncCheckpointer ck(comm, std::make_shared<CompositeHandler>());
  ck.save(dir, bytes_only(comm.rank(), 3), {.force = true});
  const std::string message = error_of<IoError>([&] { ck.wait_until_finished(); });
  EXPECT_TRUE(mentions(message, {injected("handler.bytes_write", *rank)})) << message;
  expect_meta_checkpoint(ck, dir, 1);
}

TEST(JsonWriteFault, SyncAndAsyncSavesFailOnEveryRank) {
  REQUIRE_FAULT("handler.json_write", rank);
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const auto dir = tmp / "ckpt";
  {
    Checkpointer ck(comm, std::make_shared<CompositeHandler>());
    ck.save(dir, bytes_only(comm.rank(), 1));
    const std::string message =
        error_of<IoError>([&] { ck.save(dir, meta_only(2), {.force = true}); });
    EXPECT_TRUE(mentions(message, {injected("handler.json_write", *rank)})) << message;
  }
  AsyncCheckpointer ck(comm, std::make_shared<CompositeHandler>());
  ck.save(dir, meta_only(3), {.force = true});
  const std::string message = error_of<IoError>([&] { ck.wait_until_finished(); });
  EXPECT_TRUE(mentions(message, {injected("handler.json_write", *rank)})) << message;
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_FALSE(std::filesystem::exists(tmp_of(dir)));
  const auto result = std::any_cast<CompositeResult>(ck.restore(dir, nullptr));
  EXPECT_EQ(result.names(), std::vector<std::string>{"blob"});
  EXPECT_EQ(result.get<std::vector<std::byte>>("blob"), rank_blob(comm.rank(), 1));
}

// ------------------------------------------------------------------ the commit itself

TEST(CommitFault, AFailedRenameCommitsNothing) {
  // The primary fails after writing cairn-step.json and COMMITTED into the temporary
  // directory, before renaming it: the marker must not survive anywhere.
  REQUIRE_FAULT("checkpoint.before_rename", rank);
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const auto dir = tmp / "sync";
  Checkpointer ck(comm, std::make_shared<CompositeHandler>());
  const std::string message = error_of<IoError>([&] { ck.save(dir, meta_only(1)); });
  EXPECT_TRUE(mentions(message, {injected("checkpoint.before_rename", *rank)})) << message;
  expect_no_checkpoint(dir);
  (void)error_of<NotFound>([&] { (void)ck.restore(dir); });

  const auto async_dir = tmp / "async";
  AsyncCheckpointer async(comm, std::make_shared<CompositeHandler>());
  Field field(block_box(kFieldShape, comm.rank(), comm.size()), 1);
  async.save(async_dir, Composite{{"state", std::make_shared<ArrayTreeSave>(field.tree())}});
  const std::string later = error_of<IoError>([&] { async.wait_until_finished(); });
  EXPECT_TRUE(mentions(later, {injected("checkpoint.before_rename", *rank)})) << later;
  expect_no_checkpoint(async_dir);
}
