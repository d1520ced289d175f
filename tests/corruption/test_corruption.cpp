// Hostile input: for every file kind cairn writes (COMMITTED, cairn-step.json, cairn-root.json,
// cairn-tree.json, data.h5, shards/p<rank>.bin, JSON and bytes items), flipped bytes (seeded),
// truncation, deletion and files swapped between steps. Restore through the CheckpointManager
// and through restore_tree must throw a cairn::Error on every rank that names the damaged
// file (and the leaf where there is one), never crash, and never return damaged data; the
// step before the damaged one stays restorable.
#include <cairn/checkpointer.hpp>
#include <cairn/config.hpp>
#include <cairn/manager.hpp>
#include <gtest/gtest.h>

#include <cstdio>

#include "corruption/corruption_util.hpp"
#include "support/test_support.hpp"

using namespace cairn;
using namespace cairn::testing;

namespace {

// A pristine root with steps 1 and 2, and a scratch copy to damage.
class Corruption : public ::testing::Test {
 protected:
  void SetUp() override {
    save_two_steps(comm_, tmp_ / "pristine");
    files_ = step_files(comm_.size());
  }

  // A fresh copy of the pristine root.
  std::filesystem::path fresh() {
    copy_tree(comm_, tmp_ / "pristine", work());
    return work();
  }
  std::filesystem::path work() const { return tmp_ / "work"; }
  std::filesystem::path in_step(std::int64_t step, const std::string& file) const {
    return work() / std::to_string(step) / file;
  }

  // The outcome must be a cairn::Error naming `file` (and `leaf` when given).
  static void expect_reported(const Outcome& out, const std::filesystem::path& file,
                              const std::string& leaf, const std::string& what) {
    SCOPED_TRACE(what + " of " + file.string());
    ASSERT_TRUE(out.threw) << "restore succeeded (data equal: " << out.data_equal << ")";
    EXPECT_TRUE(out.cairn_error) << "not a cairn::Error: " << out.message;
    EXPECT_NE(out.message.find(file.string()), std::string::npos)
        << "the message does not name the file: " << out.message;
    if (!leaf.empty()) {
      EXPECT_NE(out.message.find(leaf), std::string::npos)
          << "the message does not name leaf '" << leaf << "': " << out.message;
    }
  }

  // After damage to step 2, step 1 (the last good one) restores intact.
  void expect_step1_intact() {
    const auto out = restore_with_manager(comm_, work(), 1);
    EXPECT_FALSE(out.threw) << out.message;
    EXPECT_TRUE(out.data_equal);
  }

  Comm comm_{MPI_COMM_WORLD};
  SharedTempDir tmp_;
  std::vector<StepFile> files_;
};

}  // namespace

TEST_F(Corruption, PristineStepsRestore) {
  copy_tree(comm_, tmp_ / "pristine", work());
  for (std::int64_t step : {1, 2}) {
    const auto out = restore_with_manager(comm_, work(), step);
    EXPECT_FALSE(out.threw) << out.message;
    EXPECT_TRUE(out.data_equal) << "step " << step;
  }
  const auto tree = restore_state_tree(comm_, work(), 2);
  EXPECT_FALSE(tree.threw) << tree.message;
  EXPECT_TRUE(tree.data_equal);
}

// Every byte of every metadata file is covered by the checksums in COMMITTED, and every byte
// of a data file by the checksums in the metadata: any flip is found.
TEST_F(Corruption, FlippedBytesAreReported) {
  for (const auto& f : files_) {
    if (f.path == "COMMITTED" || f.path == "state/data.h5") continue;  // below
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
      fresh();
      flip_bytes(comm_, in_step(2, f.path), seed, static_cast<int>(seed));
      expect_reported(restore_with_manager(comm_, work(), 2), in_step(2, f.path), f.leaf,
                      "flip seed " + std::to_string(seed));
      if (seed == 1) expect_step1_intact();
    }
  }
}

// The header line of COMMITTED carries only the commit time, which nothing depends on: a flip
// there may leave a good checkpoint. Any other flip is reported, naming the marker.
TEST_F(Corruption, FlippedCommitMarkerIsReportedOrHarmless) {
  int reported = 0;
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    fresh();
    const auto marker = in_step(2, "COMMITTED");
    flip_bytes(comm_, marker, seed);
    const auto out = restore_with_manager(comm_, work(), 2);
    if (out.threw) {
      ++reported;
      EXPECT_TRUE(out.cairn_error) << out.message;
      EXPECT_NE(out.message.find(marker.string()), std::string::npos) << out.message;
    } else {
      EXPECT_TRUE(out.data_equal) << "seed " << seed << ": restore returned damaged data";
    }
  }
  // Past the header (45 bytes) are the checksum lines: flips there are always reported.
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    fresh();
    const auto marker = in_step(2, "COMMITTED");
    flip_bytes(comm_, marker, seed, 1, 48);
    expect_reported(restore_with_manager(comm_, work(), 2), marker, "", "flip past the header");
  }
  if (comm_.is_primary()) std::printf("COMMITTED: %d of 12 random flips reported\n", reported);
}

#if CAIRN_HAVE_HDF5
// Flips in the raw data of a dataset in data.h5 fail the shard checksum; flips anywhere else
// in the file are reported by HDF5 or leave the data intact, and never crash.
TEST_F(Corruption, FlippedHdf5FileIsReportedOrHarmless) {
  const auto h5 = "state/data.h5";
  for (int rank = 0; rank < comm_.size(); ++rank) {
    fresh();
    const auto range = find_bytes(comm_, in_step(2, h5), v_row_bytes(2, rank));
    ASSERT_TRUE(range) << "rank " << rank << "'s row of fields/v is not in data.h5 ";
    flip_bytes(comm_, in_step(2, h5), 7 + static_cast<std::uint64_t>(rank), 3, range->first,
               range->second);
    expect_reported(restore_with_manager(comm_, work(), 2), in_step(2, h5), "fields/v",
                    "flip in the raw data");
  }
  int reported = 0;
  constexpr int kTrials = 16;
  for (std::uint64_t seed = 100; seed < 100 + kTrials; ++seed) {
    fresh();
    flip_bytes(comm_, in_step(2, h5), seed, 4);
    const auto out = restore_with_manager(comm_, work(), 2);
    if (out.threw) {
      ++reported;
      EXPECT_TRUE(out.cairn_error) << out.message;
      EXPECT_NE(out.message.find(in_step(2, h5).string()), std::string::npos) << out.message;
    } else {
      EXPECT_TRUE(out.data_equal) << "seed " << seed << ": restore returned damaged data";
    }
  }
  if (comm_.is_primary()) {
    std::printf("data.h5: %d of %d random 4-byte flips reported, the rest harmless\n", reported,
                kTrials);
  }
}
#endif

TEST_F(Corruption, TruncatedFilesAreReported) {
  for (const auto& f : files_) {
    for (const bool to_zero : {false, true}) {
      fresh();
      const auto file = in_step(2, f.path);
      const auto size = std::filesystem::file_size(file);
      truncate_file(comm_, file, to_zero ? 0 : size / 2);
      expect_reported(restore_with_manager(comm_, work(), 2), file, f.leaf,
                      to_zero ? "truncated to 0 bytes" : "truncated to half");
    }
    expect_step1_intact();
  }
}

TEST_F(Corruption, DeletedFilesAreReported) {
  for (const auto& f : files_) {
    fresh();
    const auto file = in_step(2, f.path);
    delete_file(comm_, file);
    if (f.path == "COMMITTED") {
      // Without its marker step 2 is not a checkpoint: the manager falls back to step 1, and
      // opening the directory itself names the missing marker.
      CheckpointManager manager(comm_, work(), {.read_only = true});
      EXPECT_EQ(manager.latest_step(), std::optional<std::int64_t>(1));
      Checkpointer direct(comm_, std::make_shared<CompositeHandler>());
      try {
        (void)direct.restore(work() / "2");
        ADD_FAILURE() << "an uncommitted directory was restored";
      } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("COMMITTED"), std::string::npos) << e.what();
      }
    } else {
      expect_reported(restore_with_manager(comm_, work(), 2), file, f.leaf, "deleted");
    }
    expect_step1_intact();
  }
}

// The same file from another step of the same run is still the wrong file.
TEST_F(Corruption, FilesSwappedBetweenStepsAreReported) {
  for (const auto& f : files_) {
    fresh();
    swap_files(comm_, in_step(1, f.path), in_step(2, f.path));
    for (std::int64_t step : {1, 2}) {
      const auto out = restore_with_manager(comm_, work(), step);
      // A swapped marker lists the other step's checksums: the first file checked against it
      // differs, and the message names both that file and the marker.
      expect_reported(out, in_step(step, f.path), f.leaf, "swapped");
    }
  }
}

TEST_F(Corruption, RootMetadataDamageIsReportedAndSparesTheSteps) {
  const auto file = work() / "cairn-root.json";
  for (int mode = 0; mode < 3; ++mode) {
    fresh();
    if (mode == 0) flip_bytes(comm_, file, 5, 2);
    if (mode == 1) truncate_file(comm_, file, std::filesystem::file_size(file) / 2);
    if (mode == 2) delete_file(comm_, file);
    CheckpointManager manager(comm_, work(), {.read_only = true});
    try {
      (void)manager.metadata();
      // A flip can keep the JSON valid only by changing a value to another valid one.
      EXPECT_EQ(mode, 0) << "damaged root metadata was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
    }
    expect_step1_intact();
    const auto out = restore_with_manager(comm_, work(), 2);
    EXPECT_TRUE(out.data_equal) << out.message;
  }
}

// restore_tree alone (no manager, no commit marker): damaged data files and a damaged index
// are reported naming the file and the leaf.
TEST_F(Corruption, RestoreTreeReportsDamagedItemFiles) {
  for (const auto& f : files_) {
    if (!f.path.starts_with("state/")) continue;
    const auto file = in_step(2, f.path);
    const bool index = f.path == "state/cairn-tree.json";
    for (int mode = 0; mode < 4; ++mode) {
      if (index && mode == 0) continue;  // a flip in the index may change only a scalar value
      fresh();
      std::string what;
      switch (mode) {
        case 0: {
          what = "flip";
          std::uint64_t begin = 0, end = 0;
#if CAIRN_HAVE_HDF5
          if (f.path == "state/data.h5") {
            const auto range = find_bytes(comm_, file, v_row_bytes(2, 0));
            ASSERT_TRUE(range);
            std::tie(begin, end) = *range;
          }
#endif
          flip_bytes(comm_, file, 11, 2, begin, end);
          break;
        }
        case 1:
          what = "truncate";
          truncate_file(comm_, file, std::filesystem::file_size(file) / 3);
          break;
        case 2:
          what = "delete";
          delete_file(comm_, file);
          break;
        case 3:
          what = "swap";
          swap_files(comm_, in_step(1, f.path), file);
          break;
      }
      const auto out = restore_state_tree(comm_, work(), 2);
      if (index && mode == 3) {
        // Step 1's index describes step 1's data: the checksums of step 2's data differ.
        ASSERT_TRUE(out.threw) << what;
        EXPECT_NE(out.message.find("checksum mismatch"), std::string::npos) << out.message;
        continue;
      }
      expect_reported(out, file, index ? "" : f.leaf, what);
    }
  }
}
