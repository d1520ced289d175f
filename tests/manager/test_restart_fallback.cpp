// CheckpointManager when a checkpoint is damaged or misplaced: restoring the newest intact
// step and quarantining the damaged ones, retention that keeps the newest intact step,
// roots that are checkpoints or hold other files, and the on_commit report.
#include <cairn/manager.hpp>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fstream>
#include <iterator>
#include <mutex>
#include <span>
#include <string>

#include "storage/stream/checksum.hpp"
#include "support/test_support.hpp"

using namespace cairn;
using cairn::testing::SharedTempDir;

namespace {

constexpr std::int64_t kCols = 5;
using Steps = std::vector<std::int64_t>;

// Rank r owns row r of a (ranks x kCols) field; step s saves the values 10 * s + column.
struct State {
  std::vector<double> values = std::vector<double>(kCols, -1.0);
  ArrayTree tree(const Comm& comm) {
    ArrayTree t;
    t.add_array("u", ArrayShard::host(values.data(), {comm.size(), kCols},
                                      Box{{comm.rank(), 0}, {1, kCols}}));
    return t;
  }
  void fill(std::int64_t step) {
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = expected(step, i);
  }
  static double expected(std::int64_t step, std::size_t i) {
    return static_cast<double>(10 * step) + static_cast<double>(i);
  }
  [[nodiscard]] bool holds(std::int64_t step) const {
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (values[i] != expected(step, i)) return false;
    }
    return true;
  }
};

void save_steps(const Comm& comm, const std::filesystem::path& root, const Steps& steps,
                CheckpointManagerOptions options = {.enable_async = false}) {
  State state;
  CheckpointManager mgr(comm, root, std::move(options));
  for (const auto step : steps) {
    state.fill(step);
    ASSERT_TRUE(mgr.save(step, ArrayTreeSave(state.tree(comm))));
  }
  mgr.wait_until_finished();
}

// Rank 0 flips a byte in the middle of every file named `name` under `dir`; then every rank
// goes on.
void damage(const std::filesystem::path& dir, const std::string& name) {
  if (cairn::testing::world_rank() == 0) {
    int damaged = 0;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
      if (!entry.is_regular_file() || entry.path().filename() != name) continue;
      std::fstream file(entry.path(), std::ios::in | std::ios::out | std::ios::binary);
      const auto size = static_cast<std::streamoff>(entry.file_size());
      file.seekg(size / 2);
      char byte = 0;
      file.read(&byte, 1);
      byte = static_cast<char>(~byte);
      file.seekp(size / 2);
      file.write(&byte, 1);
      ++damaged;
    }
    EXPECT_GT(damaged, 0) << "no file named " << name << " under " << dir;
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// The shard file the last rank wrote: restoring the same decomposition, only that rank reads
// it.
std::string last_rank_shard() {
  return "p" + std::to_string(cairn::testing::world_size() - 1) + ".bin";
}

std::vector<std::string> names_in(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST(RestartFallback, RestoresTheNewestIntactStepAndQuarantinesTheDamagedOne) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const auto root = tmp / "run";
  save_steps(comm, root, {1, 2, 3});
  // Damage that only the last rank reads: every rank must still move on to step 2.
  damage(root / "3", last_rank_shard());

  CheckpointManager mgr(comm, root, {.max_to_keep = 1, .enable_async = false});
  State state;
  const ArrayTreeRestore into(state.tree(comm));
  const auto restored = mgr.restore_latest_intact(&into);
  ASSERT_TRUE(restored.has_value());
  EXPECT_EQ(restored->step, 2);
  EXPECT_EQ(restored->quarantined, (Steps{3}));
  EXPECT_TRUE(state.holds(2));
  EXPECT_EQ(mgr.all_steps(), (Steps{1, 2}));
  EXPECT_EQ(mgr.all_steps(/*read=*/true), (Steps{1, 2}));
  EXPECT_EQ(mgr.latest_step(), 2);
  MPI_Barrier(MPI_COMM_WORLD);
  // Moved aside within the root, never deleted, and listed as quarantined.
  EXPECT_FALSE(std::filesystem::exists(root / "3"));
  EXPECT_TRUE(std::filesystem::exists(root / "3.damaged-1" / kCommitMarker));
  const auto dirs = list_step_directories(root);
  const auto quarantined = std::find_if(dirs.begin(), dirs.end(), [](const StepDirectory& d) {
    return d.status == StepStatus::quarantined;
  });
  ASSERT_NE(quarantined, dirs.end());
  EXPECT_EQ(quarantined->step, 3);
  EXPECT_EQ(quarantined->path.filename(), "3.damaged-1");
  EXPECT_FALSE(quarantined->temporary);
  EXPECT_EQ(step_status_name(StepStatus::quarantined), "quarantined");

  // The run goes on from step 2: step 3 is saved again, and retention (max_to_keep 1) deletes
  // step 2 only now that a newer intact step exists; the quarantined step stays.
  state.fill(3);
  ASSERT_TRUE(mgr.save(3, ArrayTreeSave(state.tree(comm))));
  state.fill(4);
  ASSERT_TRUE(mgr.save(4, ArrayTreeSave(state.tree(comm))));
  EXPECT_EQ(mgr.all_steps(), (Steps{4}));
  mgr.close();
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(names_in(root), (std::vector<std::string>{"3.damaged-1", "4", "cairn-root.json"}));

  // A second damaged step 4 goes next to the first quarantined one, and cleaning up
  // temporary directories leaves both alone.
  damage(root / "4", last_rank_shard());
  CheckpointManager again(comm, root, {.cleanup_tmp_directories = true, .enable_async = false});
  EXPECT_THROW((void)again.restore_latest_intact(&into), FormatError);  // nothing older
  EXPECT_EQ(again.all_steps(), (Steps{4}));  // nothing moved aside when nothing restores
  again.close();
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_TRUE(std::filesystem::exists(root / "4"));
  EXPECT_TRUE(std::filesystem::exists(root / "3.damaged-1"));
}

// A run record whose field has the wrong kind, in a step whose marker was resealed (so that
// every checksum matches): JsonRestore's expected shape finds it, naming the file and the
// field, and the manager restores the step before as it would past any damage.
TEST(RestartFallback, AFieldOfTheWrongKindIsDamageAlsoWhenResealed) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const auto root = tmp / "run";
  const boost::json::value shape = {{"nx", 48}, {"alpha", 0.5}, {"grid", {2, 1}}};
  {
    CheckpointManager mgr(comm, root, {.enable_async = false}, {}, {"run"});
    for (std::int64_t step : {1, 2}) {
      boost::json::value run = shape;
      run.as_object()["step"] = step;
      run.as_object()["big"] = std::uint64_t{1} << 63;  // above INT64_MAX
      ASSERT_TRUE(mgr.save(step, Composite{{"run", std::make_shared<JsonSave>(run)}}));
    }
  }
  const auto value_file = root / "2" / "run" / "value.json";
  if (comm.is_primary()) {
    std::ofstream(value_file, std::ios::trunc) << R"({"nx": null, "alpha": 1, "grid": [2, 1]})";
    // Reseal: the marker line of the changed file gets its new checksum.
    std::ifstream in(root / "2" / kCommitMarker);
    std::string text, line;
    while (std::getline(in, line)) {
      if (line.ends_with(" run/value.json")) {
        std::ifstream v(value_file);
        const std::string bytes((std::istreambuf_iterator<char>(v)),
                                std::istreambuf_iterator<char>());
        line = "xxh3 " +
               storage::checksum_to_hex(
                   storage::checksum_of(std::as_bytes(std::span(bytes.data(), bytes.size())))) +
               " run/value.json";
      }
      text += line + "\n";
    }
    in.close();
    std::ofstream(root / "2" / kCommitMarker, std::ios::trunc) << text;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  CheckpointManager mgr(comm, root, {.enable_async = false}, {}, {"run"});
  // Without an expected shape the value restores as it is: the marker matches.
  const Composite any{{"run", std::make_shared<JsonRestore>()}};
  EXPECT_TRUE(std::any_cast<CompositeResult>(mgr.restore(2, &any))
                  .get<boost::json::value>("run")
                  .at("nx")
                  .is_null());
  const Composite checked{{"run", std::make_shared<JsonRestore>(shape)}};
  try {
    (void)mgr.restore(2, &checked);
    ADD_FAILURE() << "a null nx was restored";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.path(), value_file.string());
    EXPECT_EQ(e.field(), "/nx");
    EXPECT_NE(std::string(e.what()).find("is null where an integer is expected"), std::string::npos)
        << e.what();
  }
  const auto restored = mgr.restore_latest_intact(&checked);
  ASSERT_TRUE(restored.has_value());
  EXPECT_EQ(restored->step, 1);
  EXPECT_EQ(restored->quarantined, (Steps{2}));
  ASSERT_EQ(restored->errors.size(), 1u);
  EXPECT_NE(restored->errors[0].find(value_file.string()), std::string::npos)
      << restored->errors[0];
  EXPECT_NE(restored->errors[0].find("/nx"), std::string::npos) << restored->errors[0];
  // A number where a double is expected, any length of array, missing keys and other kinds.
  const boost::json::value wide = {{"alpha", 1.5}, {"grid", {0}}};
  const auto fits = [&](boost::json::value expected) {
    const Composite args{{"run", std::make_shared<JsonRestore>(std::move(expected))}};
    try {
      (void)mgr.restore(1, &args);
      return std::string();
    } catch (const FormatError& e) {
      return e.field();
    }
  };
  EXPECT_EQ(fits(wide), "");
  EXPECT_EQ(fits(boost::json::value{{"missing", 1}}), "/missing");
  EXPECT_EQ(fits(boost::json::value{{"grid", {"text"}}}), "/grid/0");
  EXPECT_EQ(fits(boost::json::value{{"alpha", 1}}), "/alpha");  // 0.5 is no integer
  EXPECT_EQ(fits(boost::json::array{}), "/");
  // Exact kinds: an integer above INT64_MAX is no signed integer; an array of two or more
  // elements is a tuple of that length.
  EXPECT_EQ(fits(boost::json::value{{"big", 1}}), "/big");
  EXPECT_EQ(fits(boost::json::value{{"big", std::uint64_t{1}}}), "");
  EXPECT_EQ(fits(boost::json::value{{"nx", std::uint64_t{1}}}), "");
  EXPECT_EQ(fits(boost::json::value{{"grid", {1, 2}}}), "");
  EXPECT_EQ(fits(boost::json::value{{"grid", {1, 2, 3}}}), "/grid");
  EXPECT_EQ(fits(boost::json::value{{"grid", {1, "text"}}}), "/grid/1");
}

TEST(RestartFallback, SkipsSeveralDamagedStepsAndDamagedMetadata) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const auto root = tmp / "run";
  save_steps(comm, root, {1, 2, 3, 4});
  damage(root / "4", last_rank_shard());
  if (comm.rank() == 0) {
    std::ofstream(root / "3" / kStepMetadataFile, std::ios::trunc) << "{\"format\": ";
  }
  MPI_Barrier(MPI_COMM_WORLD);

  CheckpointManager mgr(comm, root, {.enable_async = false});
  State state;
  const ArrayTreeRestore into(state.tree(comm));
  const auto restored = mgr.restore_latest_intact(&into);
  ASSERT_TRUE(restored.has_value());
  EXPECT_EQ(restored->step, 2);
  EXPECT_EQ(restored->quarantined, (Steps{4, 3}));
  EXPECT_TRUE(state.holds(2));
  EXPECT_EQ(mgr.all_steps(), (Steps{1, 2}));
  // As saved (no target) takes the same path.
  const auto as_saved = mgr.restore_latest_intact();
  ASSERT_TRUE(as_saved.has_value());
  EXPECT_EQ(as_saved->step, 2);
  EXPECT_TRUE(as_saved->quarantined.empty());
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_TRUE(std::filesystem::exists(root / "3.damaged-1"));
  EXPECT_TRUE(std::filesystem::exists(root / "4.damaged-1"));
}

TEST(RestartFallback, ATargetThatDoesNotFitIsNotTakenForDamage) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const auto root = tmp / "run";
  save_steps(comm, root, {1, 2});
  CheckpointManager mgr(comm, root, {.enable_async = false});
  std::vector<double> wrong(kCols + 1);
  ArrayTree target;
  target.add_array("u", ArrayShard::host(wrong.data(), {comm.size(), kCols + 1},
                                         Box{{comm.rank(), 0}, {1, kCols + 1}}));
  const ArrayTreeRestore into(target);
  EXPECT_THROW((void)mgr.restore_latest_intact(&into), InvalidArgument);
  EXPECT_EQ(mgr.all_steps(/*read=*/true), (Steps{1, 2}));
  // An empty root has nothing to restore.
  CheckpointManager empty(comm, tmp / "empty", {.enable_async = false});
  EXPECT_FALSE(empty.restore_latest_intact().has_value());
}

TEST(RestartFallback, RetentionKeepsTheNewestIntactStepWhenANewerOneIsDamaged) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const auto root = tmp / "run";
  save_steps(comm, root, {1, 2, 5});
  if (comm.rank() == 0) {
    std::ofstream(root / "5" / kStepMetadataFile, std::ios::trunc) << "{ damaged";
  }
  MPI_Barrier(MPI_COMM_WORLD);
  // A run that went back to step 2 saves step 3 (force: it is older than the damaged step 5).
  CheckpointManager mgr(comm, root, {.max_to_keep = 1, .enable_async = false});
  State state;
  state.fill(3);
  ASSERT_TRUE(mgr.save(3, ArrayTreeSave(state.tree(comm)), {.force = true}));
  // Step 3 is the newest intact step and is kept; the damaged step 5 is neither counted nor
  // deleted.
  EXPECT_EQ(mgr.all_steps(), (Steps{3, 5}));
  state.fill(-1);
  const ArrayTreeRestore into(state.tree(comm));
  (void)mgr.restore(3, &into);
  EXPECT_TRUE(state.holds(3));
}

TEST(ManagerRoot, ACheckpointOrAnItemIsNotARoot) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const auto root = tmp / "run";
  {
    State state;
    state.fill(300);
    CheckpointManager mgr(comm, root, {.enable_async = false}, {}, {"state"});
    ASSERT_TRUE(
        mgr.save(300, Composite{{"state", std::make_shared<ArrayTreeSave>(state.tree(comm))}}));
  }
  const auto step = root / "300";
  const auto before = names_in(step);
  for (const auto& inside : {step, step / "state", step / "new", step / "state" / "deeper"}) {
    try {
      CheckpointManager mgr(comm, inside);
      ADD_FAILURE() << "a manager opened " << inside;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(inside.string()), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("checkpoint"), std::string::npos) << e.what();
    }
    // A read-only manager is refused too: there are no steps to find in a checkpoint.
    EXPECT_THROW(CheckpointManager(comm, inside, {.read_only = true}), InvalidArgument);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  // Nothing was written into the checkpoint.
  EXPECT_EQ(names_in(step), before);
  // The root itself still opens, and its step restores.
  CheckpointManager mgr(comm, root, {}, {}, {"state"});
  EXPECT_EQ(mgr.all_steps(), (Steps{300}));
}

TEST(ManagerRoot, ANonEmptyDirectoryThatIsNotARootIsRefusedUnlessAllowed) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const auto dir = tmp / "results";
  if (comm.rank() == 0) {
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "notes.txt") << "not a checkpoint\n";
  }
  MPI_Barrier(MPI_COMM_WORLD);
  try {
    CheckpointManager mgr(comm, dir);
    ADD_FAILURE() << "a manager opened " << dir;
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(dir.string()), std::string::npos) << what;
    EXPECT_NE(what.find("notes.txt"), std::string::npos) << what;
    EXPECT_NE(what.find("allow_non_empty_root"), std::string::npos) << what;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(names_in(dir), (std::vector<std::string>{"notes.txt"}));
  {
    // Reading writes nothing, and the caller may allow it.
    CheckpointManager reader(comm, dir, {.read_only = true});
    EXPECT_TRUE(reader.all_steps().empty());
  }
  {
    CheckpointManager allowed(comm, dir, {.allow_non_empty_root = true});
    State state;
    state.fill(1);
    ASSERT_TRUE(allowed.save(1, ArrayTreeSave(state.tree(comm))));
  }
  // Now a root: it opens without the option.
  CheckpointManager reopened(comm, dir);
  EXPECT_EQ(reopened.all_steps(), (Steps{1}));
  // An empty directory, and one that does not exist yet, are fine.
  if (comm.rank() == 0) std::filesystem::create_directories(tmp / "empty");
  MPI_Barrier(MPI_COMM_WORLD);
  CheckpointManager empty(comm, tmp / "empty");
  CheckpointManager fresh(comm, tmp / "fresh" / "run");
  EXPECT_TRUE(fresh.all_steps().empty());
}

TEST(OnCommit, ReportsEachStepOnceItIsCommitted) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  for (const bool async : {false, true}) {
    const auto root = tmp / (async ? "async" : "sync");
    std::mutex mutex;
    std::vector<std::pair<std::int64_t, double>> reported;
    Steps listed_when_reported;
    std::unique_ptr<CheckpointManager> mgr;
    CheckpointManagerOptions options{
        .max_to_keep = 1,
        .enable_async = async,
        .on_commit = [&](std::int64_t step, const boost::json::object& metrics) {
          const std::lock_guard lock(mutex);
          reported.emplace_back(step, metrics.at("residual").to_number<double>());
          // The step is listed, and retention has not run yet.
          listed_when_reported = mgr->all_steps();
        }};
    mgr = std::make_unique<CheckpointManager>(comm, root, std::move(options));
    State state;
    for (std::int64_t step = 1; step <= 3; ++step) {
      state.fill(step);
      ASSERT_TRUE(mgr->save(step, ArrayTreeSave(state.tree(comm)),
                            {.metrics = {{"residual", 0.5 * static_cast<double>(step)}}}));
      if (!async) {
        // A synchronous save is committed when save() returns.
        const std::lock_guard lock(mutex);
        ASSERT_EQ(reported.size(), static_cast<std::size_t>(step));
      }
    }
    mgr->wait_until_finished();
    // Before taking the test's lock: the callback takes it while the manager holds its own.
    EXPECT_EQ(mgr->all_steps(), (Steps{3}));
    const std::lock_guard lock(mutex);
    EXPECT_EQ(reported,
              (std::vector<std::pair<std::int64_t, double>>{{1, 0.5}, {2, 1.0}, {3, 1.5}}))
        << (async ? "async" : "sync");
    EXPECT_EQ(listed_when_reported, (Steps{2, 3}));
  }
}

TEST(OnCommit, AnExceptionOnOneRankIsThrownOnEveryRank) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const int thrower = comm.size() - 1;
  CheckpointManager mgr(comm, tmp / "run",
                        {.enable_async = false, .on_commit = [&](std::int64_t step, const auto&) {
                           if (comm.rank() == thrower && step == 2) {
                             throw std::runtime_error("report failed");
                           }
                         }});
  State state;
  state.fill(1);
  ASSERT_TRUE(mgr.save(1, ArrayTreeSave(state.tree(comm))));
  state.fill(2);
  try {
    (void)mgr.save(2, ArrayTreeSave(state.tree(comm)));
    ADD_FAILURE() << "the exception of on_commit was lost";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("report failed"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(thrower)), std::string::npos)
        << e.what();
  }
  // The step is committed all the same, and the manager goes on.
  EXPECT_EQ(mgr.all_steps(), (Steps{1, 2}));
  state.fill(3);
  ASSERT_TRUE(mgr.save(3, ArrayTreeSave(state.tree(comm))));
  EXPECT_EQ(mgr.all_steps(), (Steps{1, 2, 3}));
}
