// AsyncCheckpointer: the caller may modify its data once save() returns (copy mode), the
// staging budget bounds the copies and their memory is kept for the next save, leaves larger
// than the budget and zero-copy saves write from the caller's memory, nothing is committed
// before the write ended, a second save waits for the first, and the destructor commits what
// is in flight. Registered twice: with
// MPI_THREAD_MULTIPLE and with CAIRN_TEST_THREAD_LEVEL=funneled (commit on the caller's thread).
#include <cairn/checkpointer.hpp>
#include <cairn/handlers.hpp>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_test_util.hpp"
#include "support/test_support.hpp"

using namespace cairn;
using namespace cairn::testing;

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

std::string format_name(StorageFormat format) { return std::string(storage_format_name(format)); }

// `count` float64 leaves "big/<i>" of exactly `leaf_bytes` per rank (slabs of rows of 1024
// values), with reference contents depending on i and a salt.
class BigState {
 public:
  BigState(const Comm& comm, int count, std::size_t leaf_bytes, int salt)
      : rows_(static_cast<std::int64_t>(leaf_bytes / (1024 * sizeof(double)))),
        shape_{rows_ * comm.size(), 1024},
        box_{{rows_ * comm.rank(), 0}, {rows_, 1024}} {
    for (int i = 0; i < count; ++i) data_.push_back(expected(i, salt));
  }

  [[nodiscard]] ArrayTree tree() {
    ArrayTree tree;
    for (std::size_t i = 0; i < data_.size(); ++i) {
      tree.add_array(
          "big/" + std::to_string(i),
          {.dtype = DType::float64, .global_shape = shape_, .box = box_, .data = data_[i].data()});
    }
    return tree;
  }
  // Overwrites every buffer (what a simulation does right after save() returns).
  void scribble() {
    for (auto& d : data_) std::memset(d.data(), 0x5A, d.size());
  }
  [[nodiscard]] std::vector<std::byte> expected(int i, int salt) const {
    auto bytes = reference_box(DType::float64, shape_, box_);
    for (auto& b : bytes) b ^= static_cast<std::byte>(salt + 17 * i);
    return bytes;
  }
  // Restores into fresh buffers and checks every leaf against `salt`.
  void expect_saved(AsyncCheckpointer& ck, const std::filesystem::path& dir, int salt) {
    std::vector<std::vector<std::byte>> out(data_.size(), std::vector<std::byte>(data_[0].size()));
    ArrayTree target;
    for (std::size_t i = 0; i < out.size(); ++i) {
      target.add_array(
          "big/" + std::to_string(i),
          {.dtype = DType::float64, .global_shape = shape_, .box = box_, .data = out[i].data()});
    }
    const ArrayTreeRestore args(target);
    (void)ck.restore(dir, &args);
    for (std::size_t i = 0; i < out.size(); ++i) {
      EXPECT_TRUE(out[i] == expected(static_cast<int>(i), salt)) << "leaf big/" << i;
    }
  }

 private:
  std::int64_t rows_;
  std::vector<std::int64_t> shape_;
  Box box_;
  std::vector<std::vector<std::byte>> data_;
};

}  // namespace

TEST(Async, ThreadLevelDecidesWhetherTheBackgroundUsesMpi) {
  Comm comm(MPI_COMM_WORLD);
  AsyncCheckpointer ck(comm, std::make_shared<ArrayTreeHandler>());
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  EXPECT_EQ(ck.background_mpi(), provided >= MPI_THREAD_MULTIPLE);
  if (funneled_mode()) {
    EXPECT_FALSE(ck.background_mpi());
  }
  EXPECT_FALSE(ck.is_saving_in_progress());
  (void)error_of<InvalidArgument>([&] { AsyncCheckpointer bad(comm, nullptr); });
}

TEST(Async, CallerMayOverwriteItsDataWhenSaveReturns) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  for (StorageFormat format : available_formats()) {
    SCOPED_TRACE(format_name(format));
    const auto dir = tmp / format_name(format);
    AsyncCheckpointer ck(comm, std::make_shared<CompositeHandler>());
    Field field(block_box(kFieldShape, comm.rank(), comm.size()), 3);
    {
      const Composite args = full_save(field, format, comm.rank(), 3);
      ck.save(dir, args);
    }
    // The arguments are gone and the field is overwritten while the save is in flight.
    std::memset(field.data.data(), 0x5A, field.data.size());
    field.time = -1;
    if (funneled_mode()) {
      // Without background MPI the commit can only happen at the next collective call.
      EXPECT_FALSE(is_committed(dir));
      EXPECT_TRUE(ck.is_saving_in_progress());
    }
    ck.wait_until_finished();
    EXPECT_FALSE(ck.is_saving_in_progress());
    EXPECT_TRUE(is_committed(dir));
    EXPECT_FALSE(std::filesystem::exists(tmp_of(dir)));

    FieldTarget target(slab_box(kFieldShape, comm.rank(), comm.size()));
    const Composite args = full_restore(target);
    expect_full(std::any_cast<CompositeResult>(ck.restore(dir, &args)), target, comm.rank(), 3);
  }
}

TEST(Async, NothingIsCommittedBeforeTheWriteEnds) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  for (StorageFormat format : available_formats()) {
    SCOPED_TRACE(format_name(format));
    const auto dir = tmp / format_name(format);
    auto gated = std::make_shared<GatedHandler>(std::make_shared<ArrayTreeHandler>());
    AsyncCheckpointer ck(comm, gated);
    GateOpener opener(*gated);
    Field field(block_box(kFieldShape, comm.rank(), comm.size()), 2);
    ck.save(dir, ArrayTreeSave(field.tree(), {.format = format}));

    // The background write is held at the gate: the save is in flight and not committed.
    EXPECT_TRUE(ck.is_saving_in_progress());
    EXPECT_FALSE(is_committed(dir));
    EXPECT_FALSE(std::filesystem::exists(dir));
    EXPECT_TRUE(std::filesystem::is_directory(tmp_of(dir)));
    ck.check_for_errors();  // a save that runs fine is left alone
    EXPECT_TRUE(ck.is_saving_in_progress());
    EXPECT_FALSE(is_committed(dir));
    MPI_Barrier(MPI_COMM_WORLD);

    gated->open();
    ck.wait_until_finished();
    EXPECT_FALSE(ck.is_saving_in_progress());
    EXPECT_TRUE(is_committed(dir));
    EXPECT_FALSE(std::filesystem::exists(tmp_of(dir)));
    FieldTarget target(slab_box(kFieldShape, comm.rank(), comm.size()));
    const ArrayTreeRestore args(target.tree);
    expect_field(target, std::any_cast<ArrayTree>(ck.restore(dir, &args)), 2);
  }
}

TEST(Async, StagingBudgetSmallerThanTheData) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const std::size_t budget = 5 * kMiB / 2;
  for (StorageFormat format : available_formats()) {
    SCOPED_TRACE(format_name(format));
    const auto dir = tmp / format_name(format);
    AsyncCheckpointer ck(comm, std::make_shared<ArrayTreeHandler>(), {.staging_bytes = budget});
    EXPECT_EQ(ck.staging().capacity(), budget);
    BigState state(comm, 4, kMiB, 1);
    ck.save(dir, ArrayTreeSave(state.tree(), {.format = format}));
    state.scribble();
    ck.wait_until_finished();
    EXPECT_LE(ck.staging().peak(), budget);
    // Staged copies were made, in every format at any MPI thread level (writes are local).
    EXPECT_GE(ck.staging().peak(), kMiB);
    EXPECT_EQ(ck.staging().in_use(), 0u);
    state.expect_saved(ck, dir, 1);
  }
}

TEST(Async, RepeatedSavesReuseTheStagingMemory) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  AsyncCheckpointer ck(comm, std::make_shared<ArrayTreeHandler>(), {.staging_bytes = 16 * kMiB});
  for (int salt = 0; salt < 3; ++salt) {
    BigState state(comm, 3, 2 * kMiB, salt);
    const auto dir = tmp / std::to_string(salt);
    ck.save(dir, ArrayTreeSave(state.tree(), {.format = StorageFormat::posix}));
    state.scribble();
    ck.wait_until_finished();
    // The copies' memory stays mapped for the next save and is reused by it: at most the
    // three leaves' 6 MiB (fewer when the writer returned a buffer before the next copy),
    // where buffers mapped anew at each save would reach the 16 MiB budget.
    EXPECT_GE(ck.staging().held(), 2 * kMiB);
    EXPECT_LE(ck.staging().held(), 6 * kMiB);
    EXPECT_EQ(ck.staging().in_use(), 0u);
    state.expect_saved(ck, dir, salt);
  }
  ck.trim_staging();
  EXPECT_EQ(ck.staging().held(), 0u);
}

TEST(Async, LeafLargerThanTheBudgetIsWrittenFromTheCallersMemory) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const std::size_t budget = kMiB / 2;
  for (StorageFormat format : available_formats()) {
    SCOPED_TRACE(format_name(format));
    const auto dir = tmp / format_name(format);
    AsyncCheckpointer ck(comm, std::make_shared<ArrayTreeHandler>(), {.staging_bytes = budget});
    BigState big(comm, 2, kMiB, 4);  // each leaf twice the budget
    ck.save(dir, ArrayTreeSave(big.tree(), {.format = format}));
    // save() returned: the big leaves were written already, so overwriting them is fine.
    big.scribble();
    EXPECT_LE(ck.staging().peak(), budget);
    ck.wait_until_finished();
    EXPECT_TRUE(is_committed(dir));
    big.expect_saved(ck, dir, 4);
  }
}

TEST(Async, ZeroCopyWritesFromBuffersLeftAloneUntilWait) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  for (StorageFormat format : available_formats()) {
    SCOPED_TRACE(format_name(format));
    const auto dir = tmp / format_name(format);
    AsyncCheckpointer ck(comm, std::make_shared<ArrayTreeHandler>(), {.zero_copy = true});
    BigState state(comm, 3, kMiB / 4, 6);
    ck.save(dir, ArrayTreeSave(state.tree(), {.format = format}));
    ck.wait_until_finished();
    EXPECT_EQ(ck.staging().peak(), 0u) << "zero-copy saves stage nothing";
    EXPECT_TRUE(is_committed(dir));
    state.scribble();
    state.expect_saved(ck, dir, 6);
  }
}

TEST(Async, ASecondSaveWaitsForTheFirst) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const Box box = block_box(kFieldShape, comm.rank(), comm.size());
  for (StorageFormat format : available_formats()) {
    SCOPED_TRACE(format_name(format));
    const auto first = tmp / (format_name(format) + "_1");
    const auto second = tmp / (format_name(format) + "_2");
    AsyncCheckpointer ck(comm, std::make_shared<ArrayTreeHandler>());
    Field field(box, 1);
    ck.save(first, ArrayTreeSave(field.tree(), {.format = format}));
    field.data = field_bytes(box, 2);  // same buffer size: the tree's view stays valid
    field.time = Field::time_of(2);
    ck.save(second, ArrayTreeSave(field.tree(), {.format = format}));
    // The first save was committed before the second started.
    EXPECT_TRUE(is_committed(first));
    ck.wait_until_finished();
    EXPECT_TRUE(is_committed(second));
    for (auto [dir, salt] : {std::pair{first, 1}, std::pair{second, 2}}) {
      FieldTarget target(slab_box(kFieldShape, comm.rank(), comm.size()));
      const ArrayTreeRestore args(target.tree);
      expect_field(target, std::any_cast<ArrayTree>(ck.restore(dir, &args)), salt);
    }
  }
}

TEST(Async, RestoreAndMetadataWaitForTheSaveInFlight) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const auto dir = tmp / "ckpt";
  AsyncCheckpointer ck(comm, std::make_shared<CompositeHandler>());
  Field field(block_box(kFieldShape, comm.rank(), comm.size()), 5);
  ck.save(dir, full_save(field, StorageFormat::posix, comm.rank(), 5),
          {.custom_metadata = {{"step", 5}}});
  const boost::json::value meta = ck.metadata(dir);  // no wait_until_finished() before
  EXPECT_FALSE(ck.is_saving_in_progress());
  EXPECT_EQ(meta.at("handler"), "cairn.composite");
  EXPECT_EQ(meta.at("custom").at("step"), 5);
  EXPECT_EQ(meta.at("items").at("state"), "cairn.array_tree");
  EXPECT_GT(boost::json::value_to<std::uint64_t>(meta.at("bytes")), 13u * 10 * sizeof(double));
  EXPECT_TRUE(meta.at("timings").is_object()) << meta;

  Field other(block_box(kFieldShape, comm.rank(), comm.size()), 6);
  const auto dir2 = tmp / "ckpt2";
  ck.save(dir2, full_save(other, StorageFormat::posix, comm.rank(), 6));
  FieldTarget target(slab_box(kFieldShape, comm.rank(), comm.size()));
  const Composite args = full_restore(target);
  expect_full(std::any_cast<CompositeResult>(ck.restore(dir2, &args)), target, comm.rank(), 6);
  // Missing and existing directories behave as with a Checkpointer.
  (void)error_of<NotFound>([&] { (void)ck.restore(tmp / "absent"); });
  const std::string exists = error_of<InvalidArgument>(
      [&] { ck.save(dir, full_save(other, StorageFormat::posix, comm.rank(), 6)); });
  EXPECT_TRUE(mentions(exists, {dir.string(), "force"})) << exists;
  EXPECT_FALSE(ck.is_saving_in_progress());
}

TEST(Async, DestructorCommitsTheSaveInFlight) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  for (StorageFormat format : available_formats()) {
    SCOPED_TRACE(format_name(format));
    const auto dir = tmp / format_name(format);
    Field field(block_box(kFieldShape, comm.rank(), comm.size()), 8);
    {
      AsyncCheckpointer ck(comm, std::make_shared<ArrayTreeHandler>());
      ck.save(dir, ArrayTreeSave(field.tree(), {.format = format}));
    }
    EXPECT_TRUE(is_committed(dir));
    Checkpointer sync(comm, std::make_shared<ArrayTreeHandler>());
    FieldTarget target(slab_box(kFieldShape, comm.rank(), comm.size()));
    const ArrayTreeRestore args(target.tree);
    expect_field(target, sync.restore_as<ArrayTree>(dir, &args), 8);
  }
}

TEST(Async, MixedFormatsInOneTree) {
  // hdf5 and posix leaves in one item: without background MPI the hdf5 leaves are written
  // on the caller's thread while the posix ones are written in the background, and the two
  // threads finish at nearly the same time (which exposed a race on the step's timings).
  if (!storage_format_available(StorageFormat::hdf5)) GTEST_SKIP() << "no hdf5 in this build";
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const auto dir = tmp / "mixed";
  AsyncCheckpointer ck(comm, std::make_shared<ArrayTreeHandler>());
  BigState state(comm, 8, kMiB / 8, 9);
  TreeSaveOptions options{.format = StorageFormat::posix};
  for (int i = 0; i < 8; i += 2) {
    options.leaf_formats["big/" + std::to_string(i)] = StorageFormat::hdf5;
  }
  ck.save(dir, ArrayTreeSave(state.tree(), options));
  state.scribble();
  ck.wait_until_finished();
  state.expect_saved(ck, dir, 9);
}
