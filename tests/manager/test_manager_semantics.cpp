// CheckpointManager answers as Orbax's does: a read-only manager, saves of existing steps,
// step name formats (and roots named before them), options that exclude each other, and the
// best step without a metric, and close() with a save in flight.
#include <cairn/manager.hpp>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fstream>
#include <iterator>

#include "support/test_support.hpp"

using namespace cairn;
using cairn::testing::SharedTempDir;
using Steps = std::vector<std::int64_t>;

namespace {

// Rank r owns element r of a field of `ranks` values.
struct Field {
  explicit Field(const Comm& comm, double value) : comm_(comm), values(1, value) {}
  ArrayTree tree() {
    ArrayTree t;
    t.add_array("u", ArrayShard::host(values.data(), {comm_.size()}, Box{{comm_.rank()}, {1}}));
    return t;
  }
  const Comm& comm_;
  std::vector<double> values;
};

double restored(CheckpointManager& manager, std::int64_t step) {
  Comm comm(MPI_COMM_WORLD);
  Field field(comm, -1.0);
  const ArrayTreeRestore args(field.tree());
  (void)manager.restore(step, &args);
  return field.values[0];
}

std::vector<std::string> entries(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

template <class F>
std::string invalid_argument_of(F&& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(no InvalidArgument)";
}

}  // namespace

TEST(ManagerSemantics, AReadOnlyManagerWritesNothingAndAnswersFromItsOptions) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const auto root = tmp / "empty";
  if (comm.is_primary()) std::filesystem::create_directories(root);
  comm.barrier("root created");
  Field field(comm, 1.0);
  CheckpointManager reader(comm, root, {.metadata = {{"model", "heat"}}, .read_only = true});
  EXPECT_FALSE(reader.should_save(0));
  EXPECT_FALSE(reader.should_save(100));
  EXPECT_FALSE(reader.save(0, ArrayTreeSave(field.tree())));
  EXPECT_FALSE(reader.save(1, ArrayTreeSave(field.tree()), {.force = true}));
  const auto meta = reader.metadata();
  EXPECT_EQ(meta.at("user").at("model").as_string(), "heat");
  EXPECT_EQ(meta.at("world_size").as_int64(), comm.size());
  reader.wait_until_finished();
  reader.close();
  comm.barrier("closed");
  // No lock, no root metadata, no step.
  EXPECT_EQ(entries(root), std::vector<std::string>{});
}

// As Orbax: a writing manager that saves no root metadata has none to report; a read_only one
// reports what it was given; a root that has the file reports the file.
TEST(ManagerSemantics, WithoutRootMetadataAWritingManagerReportsNone) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  Field field(comm, 1.0);
  {
    CheckpointManager manager(comm, tmp / "none",
                              {.metadata = {{"run", 7}}, .save_root_metadata = false});
    ASSERT_TRUE(manager.save(0, ArrayTreeSave(field.tree())));
    manager.wait_until_finished();
    EXPECT_FALSE(std::filesystem::exists(tmp / "none" / "cairn-root.json"));
    EXPECT_EQ(manager.metadata(), boost::json::object{});
  }
  comm.barrier("closed");
  CheckpointManager reader(comm, tmp / "none", {.metadata = {{"run", 8}}, .read_only = true});
  EXPECT_EQ(reader.metadata().at("user").at("run").as_int64(), 8);
  { CheckpointManager first(comm, tmp / "saved", {.metadata = {{"run", 9}}}); }
  comm.barrier("written");
  CheckpointManager later(comm, tmp / "saved",
                          {.metadata = {{"run", 10}}, .save_root_metadata = false});
  EXPECT_EQ(later.metadata().at("user").at("run").as_int64(), 9);
}

// The restart idiom: a job that restarts from its newest step and repeats it goes on.
TEST(ManagerSemantics, SavingAnExistingStepReturnsFalseAndAForcedSaveThrows) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  {
    CheckpointManager manager(comm, tmp.path());
    for (std::int64_t step = 0; step < 4; ++step) {
      Field field(comm, static_cast<double>(step));
      ASSERT_TRUE(manager.save(step, ArrayTreeSave(field.tree())));
    }
  }
  CheckpointManager manager(comm, tmp.path());
  Field other(comm, 99.0);
  EXPECT_FALSE(manager.save(3, ArrayTreeSave(other.tree())));
  EXPECT_FALSE(manager.save(1, ArrayTreeSave(other.tree())));
  try {
    (void)manager.save(3, ArrayTreeSave(other.tree()), {.force = true});
    ADD_FAILURE() << "a forced save of an existing step did not throw";
  } catch (const StepAlreadyExists& e) {
    EXPECT_EQ(e.step(), 3);
    EXPECT_NE(std::string(e.what()).find("delete_step(3)"), std::string::npos) << e.what();
  }
  EXPECT_EQ(manager.all_steps(), (Steps{0, 1, 2, 3}));
  EXPECT_EQ(restored(manager, 3), 3.0);  // not replaced
  // Replacing is delete then save.
  manager.delete_step(3);
  ASSERT_TRUE(manager.save(3, ArrayTreeSave(other.tree()), {.force = true}));
  manager.wait_until_finished();
  EXPECT_EQ(restored(manager, 3), 99.0);
}

TEST(ManagerSemantics, StepNameFormats) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  Field field(comm, 1.0);
  const auto name_of = [&](const std::string& dir, CheckpointManagerOptions options) {
    CheckpointManager manager(comm, tmp / dir, std::move(options));
    EXPECT_TRUE(manager.save(7, ArrayTreeSave(field.tree())));
    manager.wait_until_finished();
    EXPECT_EQ(manager.all_steps(/*read=*/true), (Steps{7}));
    return manager.step_path(7).filename().string();
  };
  EXPECT_EQ(name_of("plain", {}), "7");
  EXPECT_EQ(name_of("prefix", {.step_prefix = "checkpoint"}), "checkpoint_7");
  EXPECT_EQ(name_of("fixed", {.step_prefix = "checkpoint", .step_format_fixed_length = 8}),
            "checkpoint_00000007");
  EXPECT_EQ(name_of("fixed_only", {.step_format_fixed_length = 4}), "0007");
  EXPECT_EQ(name_of("clu", {.step_name_format = step_name_format::clu()}), "ckpt-7");

  // A format of the caller's own.
  class RunSteps final : public StepNameFormat {
   public:
    std::string build_name(std::int64_t step) const override {
      return "run-" + std::to_string(step) + "-done";
    }
    std::optional<std::int64_t> parse_name(std::string_view name) const override {
      if (!name.starts_with("run-") || !name.ends_with("-done")) return std::nullopt;
      const std::string digits(name.substr(4, name.size() - 9));
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) {
        return std::nullopt;
      }
      return std::stoll(digits);
    }
    std::string describe() const override { return "RunSteps"; }
  };
  EXPECT_EQ(name_of("custom", {.step_name_format = std::make_shared<RunSteps>()}), "run-7-done");

  const std::string both = invalid_argument_of([&] {
    CheckpointManager bad(comm, tmp / "bad",
                          {.step_prefix = "x", .step_name_format = step_name_format::clu()});
  });
  EXPECT_NE(both.find("step_name_format and step_prefix"), std::string::npos) << both;
  EXPECT_THROW(step_name_format::standard("a/b"), InvalidArgument);
  EXPECT_THROW(step_name_format::standard("a", 0), InvalidArgument);
}

// A root whose cairn-root.json records a step_prefix but no step_name_format named its steps
// <prefix><step>: a manager with that prefix still finds them, and names new steps alike.
TEST(ManagerSemantics, RootsWithJoinedStepNamesAreStillFound) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  {
    Field field(comm, 5.0);
    CheckpointManager old(comm, tmp.path(),
                          {.step_name_format = step_name_format::joined("step_")});
    ASSERT_TRUE(old.save(5, ArrayTreeSave(field.tree())));
  }
  if (comm.is_primary()) {
    const auto file = tmp / "cairn-root.json";
    std::ifstream in(file);
    auto meta = boost::json::parse(std::string(std::istreambuf_iterator<char>(in), {})).as_object();
    in.close();
    meta.erase("step_name_format");
    meta["step_prefix"] = "step_";
    std::ofstream(file, std::ios::trunc) << boost::json::serialize(meta);
  }
  comm.barrier("root metadata rewritten");
  CheckpointManager manager(comm, tmp.path(), {.step_prefix = "step_"});
  EXPECT_EQ(manager.all_steps(), (Steps{5}));
  EXPECT_EQ(restored(manager, 5), 5.0);
  Field field(comm, 6.0);
  ASSERT_TRUE(manager.save(6, ArrayTreeSave(field.tree())));
  manager.wait_until_finished();
  EXPECT_TRUE(std::filesystem::is_directory(tmp / "step_6"));
  EXPECT_EQ(manager.all_steps(/*read=*/true), (Steps{5, 6}));
}

// Orbax lightweight_initialize: opening reads no step metadata, so a root of many steps opens
// fast; the metadata is read when first needed. A step metadata file that cannot be read at
// all (here a directory in its place) shows when it is read.
TEST(ManagerSemantics, LightweightInitializeReadsStepMetadataOnlyWhenNeeded) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  {
    CheckpointManager writer(comm, tmp.path());
    for (std::int64_t step = 0; step < 2; ++step) {
      Field field(comm, static_cast<double>(step));
      ASSERT_TRUE(writer.save(step, ArrayTreeSave(field.tree()), {.metrics = {{"loss", 1.0}}}));
    }
  }
  if (comm.is_primary()) {
    std::filesystem::remove(tmp / "0" / "cairn-step.json");
    std::filesystem::create_directory(tmp / "0" / "cairn-step.json");
  }
  comm.barrier("step 0 metadata replaced");
  {
    // Step 0's metadata is not read: it still counts.
    CheckpointManager light(comm, tmp.path(), {.lightweight_initialize = true});
    EXPECT_EQ(light.all_steps(), (Steps{0, 1}));
    EXPECT_EQ(light.latest_step(), 1);
    EXPECT_EQ(restored(light, 1), 1.0);
  }
  // A manager that reads every step at open finds step 0's metadata damaged (a directory is
  // not a regular file): it says so and opens; step 0 does not restore, step 1 does.
  CheckpointManager full(comm, tmp.path());
  EXPECT_THROW((void)restored(full, 0), FormatError);
  EXPECT_EQ(restored(full, 1), 1.0);
}

TEST(ManagerSemantics, APreservationPolicyWithPlainRetentionOptionsIsAnError) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const auto policy = std::make_shared<preservation_policy::LatestN>(2);
  const auto message = [&](CheckpointManagerOptions options) {
    options.preservation_policy = policy;
    return invalid_argument_of([&] { CheckpointManager m(comm, tmp.path(), std::move(options)); });
  };
  for (const auto& [field, text] : std::vector<std::pair<std::string, std::string>>{
           {"max_to_keep", message({.max_to_keep = 3})},
           {"keep_period", message({.keep_period = 10})},
           {"keep_time_interval", message({.keep_time_interval = std::chrono::hours(1)})}}) {
    EXPECT_NE(text.find("preservation_policy and " + field), std::string::npos) << text;
  }
  // Nothing was written by the refused managers.
  comm.barrier("refused");
  EXPECT_EQ(entries(tmp.path()), std::vector<std::string>{});
}

TEST(ManagerSemantics, BestStepWithoutBestFnIsTheLatest) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  Field field(comm, 1.0);
  CheckpointManager manager(comm, tmp / "plain");
  EXPECT_EQ(manager.best_step(), std::nullopt);
  for (std::int64_t step = 0; step < 3; ++step) {
    ASSERT_TRUE(manager.save(step, ArrayTreeSave(field.tree()), {.metrics = {{"loss", 1.0}}}));
  }
  manager.wait_until_finished();
  EXPECT_EQ(manager.best_step(), 2);

  // With best_fn, saves without metrics are made (Orbax logs them) and never the best.
  CheckpointManager ranked(comm, tmp / "ranked",
                           {.max_to_keep = 1,
                            .best_fn = [](const boost::json::object& m) -> std::optional<double> {
                              return m.at("loss").to_number<double>();
                            },
                            .best_mode = BestMode::min});
  for (std::int64_t step = 0; step < 3; ++step) {
    EXPECT_TRUE(ranked.save(step, ArrayTreeSave(field.tree())));
  }
  ranked.wait_until_finished();
  EXPECT_EQ(ranked.best_step(), std::nullopt);
  EXPECT_EQ(ranked.all_steps(), (Steps{0, 1, 2}));
}

// close() lands the save in flight, and that commit's retention still deletes the steps it
// drops (the C and Fortran quickstarts free their manager right after the last save).
TEST(ManagerSemantics, CloseWithASaveInFlightAppliesRetention) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  Field field(comm, 1.0);
  CheckpointManager manager(comm, tmp / "root", {.max_to_keep = 1});
  for (std::int64_t step = 0; step < 3; ++step) {
    ASSERT_TRUE(manager.save(step, ArrayTreeSave(field.tree())));
  }
  EXPECT_NO_THROW(manager.close());
  CheckpointManager reader(comm, tmp / "root", {.read_only = true});
  EXPECT_EQ(reader.all_steps(), (Steps{2}));
}
