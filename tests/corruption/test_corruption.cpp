// Hostile input: for every file kind cairn writes (COMMITTED, cairn-step.json, cairn-root.json,
// cairn-tree.json, data.h5, shards/p<rank>.bin, JSON and bytes items), flipped bytes (seeded),
// truncation, deletion and files swapped between steps. Restore through the CheckpointManager
// and through restore_tree must throw a cairn::Error on every rank that names the damaged
// file (and the leaf where there is one), never crash, and never return damaged data; the
// step before the damaged one stays restorable.
//
// Every damaged checkpoint is also checked the way `cairn verify` checks it: verify_tree()
// (what the tool runs for an array tree item) in this process on every rank, for damage to
// item "state", and the tool itself (CAIRN_TOOL, one run per test over copies of every damaged
// checkpoint, as a separate one-process MPI job), which must exit with 1 and name the file
// (and the leaf) in its report on that checkpoint.
#include <cairn/checkpointer.hpp>
#include <cairn/config.hpp>
#include <cairn/manager.hpp>
#include <cairn/storage.hpp>
#include <gtest/gtest.h>

#include <algorithm>
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

  // What a report of damage must say: one problem that names `file` (relative to the
  // checkpoint directory; absolute for cairn-root.json), `leaf` and `text`, each when given.
  struct Expect {
    std::string file;
    std::string leaf = {};
    std::string text = {};
  };

  static bool matches(const std::string& problem, const std::filesystem::path& dir,
                      const Expect& e) {
    const auto has = [&](const std::string& s) {
      return s.empty() || problem.find(s) != std::string::npos;
    };
    return has(e.file.empty() ? e.file : (dir / e.file).string()) && has(e.leaf) && has(e.text);
  }

  static std::string listing(const std::vector<std::string>& problems) {
    std::string out;
    for (const auto& p : problems) out += "\n    " + p;
    return problems.empty() ? " (none)" : out;
  }

  static void expect_problem(const std::vector<std::string>& problems,
                             const std::filesystem::path& dir, const Expect& e) {
    EXPECT_TRUE(std::any_of(problems.begin(), problems.end(),
                            [&](const auto& p) { return matches(p, dir, e); }))
        << "no problem names" << (e.file.empty() ? "" : " file '" + (dir / e.file).string() + "'")
        << (e.leaf.empty() ? "" : " leaf '" + e.leaf + "'")
        << (e.text.empty() ? "" : " text '" + e.text + "'") << "; reported:" << listing(problems);
  }

  // verify_tree() on item "state" of `step` reports `e` (a file relative to the step).
  void expect_tree_verify_reports(std::int64_t step, const Expect& e, const std::string& what) {
    SCOPED_TRACE("verify_tree after " + what);
    const auto report = verify_tree(comm_, work() / std::to_string(step) / "state");
    expect_problem(report.problems, work() / std::to_string(step), e);
  }

  // Keeps a copy of checkpoint `step` of work() for check_with_cairn_verify(), which expects
  // the tool to report `e` on it (nullopt: to find it intact; may_be_intact: either). The
  // copies are steps of a root of their own, with the intact root metadata.
  void verify_later(std::int64_t step, const std::string& what, std::optional<Expect> e,
                    bool may_be_intact = false) {
    const auto root = tmp_ / "verify";
    // Named as the root names its steps (the bare step number).
    const auto dir = root / std::to_string(verify_cases_.size() + 1);
    if (comm_.is_primary() && !std::filesystem::exists(root)) {
      std::filesystem::create_directories(root);
      std::filesystem::copy_file(tmp_ / "pristine" / "cairn-root.json", root / "cairn-root.json");
    }
    copy_tree(comm_, work() / std::to_string(step), dir);
    verify_cases_.push_back(
        {dir, what + " of step " + std::to_string(step), std::move(e), may_be_intact});
  }

  // One run of `cairn verify --quiet` over every checkpoint kept by verify_later() (each run
  // of the tool is an MPI job of its own, about half a second): exit code 1 when any is
  // damaged, and for each the verdict expected.
  void check_with_cairn_verify() {
    const auto tool = cairn_tool();
    if (tool.empty()) {
      if (comm_.is_primary()) std::printf("CAIRN_TOOL is not set: `cairn verify` not run\n");
      return;
    }
    const auto root = tmp_ / "verify";
    const auto run = run_program(comm_, tool, {"verify", "--quiet", root.string()}, tmp_.path());
    const auto verdicts = parse_verify_output(run.out);
    std::size_t damaged = 0;
    for (const auto& c : verify_cases_) {
      SCOPED_TRACE("cairn verify after " + c.what + " (" + c.dir.string() + ")");
      const auto it = verdicts.find(c.dir.string());
      if (it == verdicts.end()) {
        ADD_FAILURE() << "no verdict in the output:\n" << run.out << run.err;
        continue;
      }
      if (it->second.damaged) ++damaged;
      if (!c.expect) {
        EXPECT_FALSE(it->second.damaged) << "intact, but reported:" << listing(it->second.problems);
      } else if (it->second.damaged) {
        expect_problem(it->second.problems, c.dir, *c.expect);
      } else {
        EXPECT_TRUE(c.may_be_intact) << "damage not reported";
      }
    }
    EXPECT_EQ(run.exit_code, damaged > 0 ? 1 : 0) << run.out << run.err;
    const auto summary = root.string() + ": " + std::to_string(verify_cases_.size()) +
                         " checkpoints verified, " + std::to_string(damaged) + " damaged";
    EXPECT_NE(run.out.find(summary), std::string::npos) << "no '" << summary << "' in:\n"
                                                        << run.out;
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

  struct VerifyCase {
    std::filesystem::path dir;
    std::string what;
    std::optional<Expect> expect;
    bool may_be_intact;
  };

  Comm comm_{MPI_COMM_WORLD};
  SharedTempDir tmp_;
  std::vector<StepFile> files_;
  std::vector<VerifyCase> verify_cases_;
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
  // Nothing to report on intact checkpoints.
  for (std::int64_t step : {1, 2}) {
    const auto report = verify_tree(comm_, work() / std::to_string(step) / "state");
    EXPECT_TRUE(report.problems.empty()) << listing(report.problems);
    EXPECT_EQ(report.shards, static_cast<std::size_t>(comm_.size() * (CAIRN_HAVE_HDF5 ? 2 : 1)));
    verify_later(step, "nothing", std::nullopt);
  }
  check_with_cairn_verify();
}

// Every byte of every JSON metadata file is covered by the checksums in COMMITTED, every byte
// of cairn-tree.bin by its header or its sections' checksums in cairn-tree.json, and every
// byte of a data file by the checksums in the metadata: any flip is found.
TEST_F(Corruption, FlippedBytesAreReported) {
  for (const auto& f : files_) {
    if (f.path == "COMMITTED" || f.path == "state/data.h5") continue;  // below
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
      fresh();
      flip_bytes(comm_, in_step(2, f.path), seed, static_cast<int>(seed));
      const std::string what = "flip seed " + std::to_string(seed) + " in " + f.path;
      expect_reported(restore_with_manager(comm_, work(), 2), in_step(2, f.path), f.leaf, what);
      if (seed == 1) expect_step1_intact();
      // cairn-tree.json has no checksum of its own (the marker lists it); cairn-tree.bin's
      // sections have theirs in cairn-tree.json, so verify_tree finds flips there too.
      if (f.path == "state/cairn-tree.bin") expect_tree_verify_reports(2, {f.path}, what);
      if (f.path.starts_with("state/shards/")) {
        expect_tree_verify_reports(2, {f.path, f.leaf, "checksum mismatch"}, what);
      }
      verify_later(2, what, Expect{f.path, f.leaf});
    }
  }
  check_with_cairn_verify();
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
    // `cairn verify` reports what restore refuses. It checks every file the marker lists,
    // where a restore checks those of the items it reads: it may find more.
    verify_later(2, "flip seed " + std::to_string(seed) + " in COMMITTED", Expect{"COMMITTED"},
                 /*may_be_intact=*/!out.threw);
  }
  // Past the header (45 bytes) are the checksum lines: flips there are always reported.
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    fresh();
    const auto marker = in_step(2, "COMMITTED");
    flip_bytes(comm_, marker, seed, 1, 48);
    expect_reported(restore_with_manager(comm_, work(), 2), marker, "", "flip past the header");
    verify_later(2, "flip past the header of COMMITTED", Expect{"COMMITTED"});
  }
  if (comm_.is_primary()) std::printf("COMMITTED: %d of 12 random flips reported\n", reported);
  check_with_cairn_verify();
}

// Flips in the raw data of a dataset in data.h5 fail the shard checksum; flips anywhere else
// in the file are reported by HDF5 or leave the data intact, and never crash.
TEST_F(Corruption, FlippedHdf5FileIsReportedOrHarmless) {
  if (!storage_format_available(StorageFormat::hdf5)) {
    GTEST_SKIP() << "cairn was built without HDF5: the steps have no data.h5";
  }
  const auto h5 = "state/data.h5";
  for (int rank = 0; rank < comm_.size(); ++rank) {
    fresh();
    const auto range = find_bytes(comm_, in_step(2, h5), v_row_bytes(2, rank));
    ASSERT_TRUE(range) << "rank " << rank << "'s row of fields/v is not in data.h5 ";
    flip_bytes(comm_, in_step(2, h5), 7 + static_cast<std::uint64_t>(rank), 3, range->first,
               range->second);
    expect_reported(restore_with_manager(comm_, work(), 2), in_step(2, h5), "fields/v",
                    "flip in the raw data");
    const Expect e{h5, "fields/v", "checksum mismatch"};
    const std::string what = "flip in rank " + std::to_string(rank) + "'s raw data in data.h5";
    expect_tree_verify_reports(2, e, what);
    verify_later(2, what, e);
  }
  int reported = 0;
  constexpr int kTrials = 16;
  for (std::uint64_t seed = 100; seed < 100 + kTrials; ++seed) {
    fresh();
    flip_bytes(comm_, in_step(2, h5), seed, 4);
    const auto out = restore_with_manager(comm_, work(), 2);
    const std::string what = "flip seed " + std::to_string(seed) + " in data.h5";
    if (out.threw) {
      ++reported;
      EXPECT_TRUE(out.cairn_error) << out.message;
      EXPECT_NE(out.message.find(in_step(2, h5).string()), std::string::npos) << out.message;
      expect_tree_verify_reports(2, {h5}, what);
      verify_later(2, what, Expect{h5});
    } else {
      EXPECT_TRUE(out.data_equal) << "seed " << seed << ": restore returned damaged data";
      // What restore reads intact, verify finds intact.
      const auto report = verify_tree(comm_, work() / "2" / "state");
      EXPECT_TRUE(report.problems.empty()) << what << ":" << listing(report.problems);
      verify_later(2, what, std::nullopt);
    }
  }
  if (comm_.is_primary()) {
    std::printf("data.h5: %d of %d random 4-byte flips reported, the rest harmless\n", reported,
                kTrials);
  }
  check_with_cairn_verify();
}

TEST_F(Corruption, TruncatedFilesAreReported) {
  for (const auto& f : files_) {
    for (const bool to_zero : {false, true}) {
      fresh();
      const auto file = in_step(2, f.path);
      const auto size = std::filesystem::file_size(file);
      truncate_file(comm_, file, to_zero ? 0 : size / 2);
      const std::string what =
          (to_zero ? "truncation to 0 bytes of " : "truncation to half of ") + f.path;
      expect_reported(restore_with_manager(comm_, work(), 2), file, f.leaf, what);
      if (f.path.starts_with("state/")) expect_tree_verify_reports(2, {f.path, f.leaf}, what);
      verify_later(2, what, Expect{f.path, f.leaf});
    }
    expect_step1_intact();
  }
  check_with_cairn_verify();
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
      // `cairn verify` checks the directory all the same and says why restore skips it.
      verify_later(2, "deletion of COMMITTED", Expect{"", "", "no COMMITTED marker"});
    } else {
      expect_reported(restore_with_manager(comm_, work(), 2), file, f.leaf, "deleted");
      if (f.path.starts_with("state/")) {
        expect_tree_verify_reports(2, {f.path, f.leaf}, "deletion of " + f.path);
      }
      verify_later(2, "deletion of " + f.path, Expect{f.path, f.leaf});
    }
    expect_step1_intact();
  }
  check_with_cairn_verify();
}

// The marker lists every metadata file of the step and nothing else, also when it was
// resealed (every checksum line recomputed) after the damage: a dropped line, an added JSON
// file, a line naming a file outside the step or a data file are damage, for restore and for
// `cairn verify` alike.
TEST_F(Corruption, MarkerThatDoesNotListEveryMetadataFileIsReported) {
  const auto step = [&] { return work() / "2"; };
  fresh();
  const auto listed = marker_files(step());
  ASSERT_GE(listed.size(), 4u);
  for (const auto& dropped : listed) {
    fresh();
    std::vector<std::string> kept;
    for (const auto& file : listed) {
      if (file != dropped) kept.push_back(file);
    }
    // The unlisted file is changed too: nothing else would notice.
    flip_bytes(comm_, step() / dropped, 7, 1);
    write_marker(comm_, step(), kept);
    expect_reported(restore_with_manager(comm_, work(), 2), step() / dropped, "",
                    "marker without " + dropped);
    verify_later(2, "marker without " + dropped, Expect{dropped, "", "not listed"});
    expect_step1_intact();
  }
  fresh();
  if (comm_.is_primary()) std::ofstream(step() / "state" / "extra.json") << "{}";
  write_marker(comm_, step(), listed);
  expect_reported(restore_with_manager(comm_, work(), 2), step() / "state" / "extra.json", "",
                  "an added JSON file");
  verify_later(2, "an added JSON file", Expect{"state/extra.json", "", "not listed"});
  for (const std::string extra : {"../1/cairn-step.json", "state/shards/p0.bin"}) {
    fresh();
    auto more = listed;
    more.push_back(extra);
    write_marker(comm_, step(), more);
    expect_reported(restore_with_manager(comm_, work(), 2), step() / "COMMITTED", "",
                    "a marker naming " + extra);
    verify_later(2, "a marker naming " + extra, Expect{"COMMITTED"});
  }
  check_with_cairn_verify();
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
      const std::string what = "swapped " + f.path;
      if (f.path.starts_with("state/shards/") || f.path == "state/data.h5") {
        expect_tree_verify_reports(step, {f.path, f.leaf, "checksum mismatch"}, what);
      } else if (f.path == "state/cairn-tree.json") {
        // The other step's index: this step's cairn-tree.bin is not the one it records.
        expect_tree_verify_reports(step, {"state/cairn-tree.bin", "", ""}, what);
      }
      verify_later(step, what, Expect{f.path, f.leaf});
    }
  }
  check_with_cairn_verify();
}

TEST_F(Corruption, RootMetadataDamageIsReportedAndSparesTheSteps) {
  const auto file = work() / "cairn-root.json";
  for (int mode = 0; mode < 3; ++mode) {
    fresh();
    if (mode == 0) flip_bytes(comm_, file, 5, 2);
    if (mode == 1) truncate_file(comm_, file, std::filesystem::file_size(file) / 2);
    if (mode == 2) delete_file(comm_, file);
    bool refused = false;
    {
      CheckpointManager manager(comm_, work(), {.read_only = true});
      try {
        (void)manager.metadata();
        // A flip can keep the JSON valid only by changing a value to another valid one; a
        // read-only manager of a root without cairn-root.json returns the metadata it was
        // given (Orbax's read-only manager).
        EXPECT_NE(mode, 1) << "truncated root metadata was accepted";
      } catch (const Error& e) {
        EXPECT_NE(mode, 2) << "a read-only manager refused a root without cairn-root.json";
        refused = true;
        EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
      }
    }
    expect_step1_intact();
    const auto out = restore_with_manager(comm_, work(), 2);
    EXPECT_TRUE(out.data_equal) << out.message;
    // `cairn verify ROOT` reports the root metadata that the manager refuses.
    if (const auto tool = cairn_tool(); !tool.empty() && refused) {
      SCOPED_TRACE("cairn verify after damage " + std::to_string(mode) + " to cairn-root.json");
      const auto run =
          run_program(comm_, tool, {"verify", "--quiet", work().string()}, tmp_.path());
      EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
      EXPECT_NE(run.out.find(file.string()), std::string::npos) << run.out << run.err;
    }
  }
}

// restore_tree alone (no manager, no commit marker): damaged data files and a damaged index
// are reported naming the file and the leaf.
TEST_F(Corruption, RestoreTreeReportsDamagedItemFiles) {
  for (const auto& f : files_) {
    if (!f.path.starts_with("state/")) continue;
    const auto file = in_step(2, f.path);
    const bool index = f.path == "state/cairn-tree.json" || f.path == "state/cairn-tree.bin";
    for (int mode = 0; mode < 4; ++mode) {
      // A flip in cairn-tree.json may change only a scalar value; one in cairn-tree.bin is
      // found by the rank that checks the section it falls in.
      if (f.path == "state/cairn-tree.json" && mode == 0) continue;
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
        // One of the two index files is step 1's: cairn-tree.bin's header does not carry the
        // checksum of the sections that cairn-tree.json records.
        ASSERT_TRUE(out.threw) << what;
        EXPECT_NE(out.message.find("cairn-tree.bin"), std::string::npos) << out.message;
        expect_tree_verify_reports(2, {"state/cairn-tree.bin", "", ""}, what);
        continue;
      }
      expect_reported(out, file, index ? "" : f.leaf, what);
      expect_tree_verify_reports(2, {f.path, index ? "" : f.leaf}, what + " of " + f.path);
    }
  }
}
