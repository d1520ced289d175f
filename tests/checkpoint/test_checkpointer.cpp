// Checkpointer: the commit protocol seen from outside. Overwrite only with force, incomplete
// and missing checkpoints on restore, step metadata, stale temporary directories, and
// arguments that are wrong (on every rank or on one rank only) commit nothing, and the handler's
// hooks in Orbax's order (finalize() before the commit, close() forwarded).
#include <cairn/checkpointer.hpp>
#include <cairn/handlers.hpp>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_test_util.hpp"
#include "support/json_forwarding_handler.hpp"
#include "support/test_support.hpp"

using namespace cairn;
using namespace cairn::testing;

namespace {

std::string format_name(StorageFormat format) { return std::string(storage_format_name(format)); }

// Restores "fields/u" and "time" of `dir` in slabs and checks them against `salt`.
void expect_restores(Checkpointer& ck, const std::filesystem::path& dir, int salt) {
  const Comm& comm = ck.comm();
  FieldTarget target(slab_box(kFieldShape, comm.rank(), comm.size()));
  const ArrayTreeRestore args(target.tree);
  expect_field(target, ck.restore_as<ArrayTree>(dir, &args), salt);
}

// A JSON handler that records its hooks as Orbax's checkpointers call them: where finalize()
// ran and what the checkpoint looked like then, and how often close() was called. Its
// finalize() adds a file next to the item (the primary) and throws on `fail_rank`.
class HookRecorder final : public cairn::testing::JsonForwardingHandler {
 public:
  struct Finalized {
    std::filesystem::path dir;
    bool committed_then = false;  // the final directory was committed when finalize() ran
    bool marker_then = false;     // `dir` held the COMMITTED marker
  };

  void finalize(const Comm& comm, const std::filesystem::path& dir) override {
    finalized.push_back({.dir = dir,
                         .committed_then = is_committed(final_dir),
                         .marker_then = std::filesystem::exists(dir / kCommitMarker)});
    if (comm.is_primary()) std::ofstream(dir / "finalized.txt") << "added by finalize";
    if (comm.rank() == fail_rank) throw IoError(dir.string(), "finalize failed on purpose");
  }
  void close() override { ++closed; }

  std::filesystem::path final_dir;  // the checkpoint being saved
  int fail_rank = -1;
  std::vector<Finalized> finalized;
  int closed = 0;
};

}  // namespace

// Orbax's Checkpointer and AsyncCheckpointer call the handler's finalize() before the commit
// (in the temporary directory) and forward close(); what finalize() adds is committed with the
// checkpoint, and a finalize() that fails on one rank commits nothing.
TEST(Checkpointer, FinalizeRunsBeforeTheCommitAndCloseIsForwarded) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  for (const bool async : {false, true}) {
    SCOPED_TRACE(async ? "async" : "sync");
    auto handler = std::make_shared<HookRecorder>();
    std::unique_ptr<Checkpointer> ck = async ? std::make_unique<AsyncCheckpointer>(comm, handler)
                                             : std::make_unique<Checkpointer>(comm, handler);
    const auto dir = tmp / (async ? "async" : "sync");
    handler->final_dir = dir;
    ck->save(dir, JsonSave(meta_value(1)));
    ck->wait_until_finished();
    ASSERT_EQ(handler->finalized.size(), 1U);
    EXPECT_EQ(handler->finalized[0].dir, tmp_of(dir));
    EXPECT_FALSE(handler->finalized[0].committed_then);
    EXPECT_FALSE(handler->finalized[0].marker_then);
    EXPECT_TRUE(is_committed(dir));
    EXPECT_TRUE(std::filesystem::exists(dir / "finalized.txt"));  // committed with the rest

    const auto failing = tmp / (async ? "async_failing" : "sync_failing");
    handler->final_dir = failing;
    handler->fail_rank = comm.size() - 1;
    const std::string message = error_of<Error>([&] {
      ck->save(failing, JsonSave(meta_value(2)));
      ck->wait_until_finished();
    });
    EXPECT_TRUE(mentions(message, {"finalize failed on purpose"})) << message;
    MPI_Barrier(MPI_COMM_WORLD);
    expect_no_checkpoint(failing);
    EXPECT_EQ(handler->closed, 0);  // the destructor does not close a handler it may share
    ck->close();
    ck->close();
    EXPECT_EQ(handler->closed, 1);
  }
}

TEST(Checkpointer, SavesAndRestoresAnArrayTree) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  for (StorageFormat format : available_formats()) {
    SCOPED_TRACE(format_name(format));
    const auto dir = tmp / format_name(format);
    Field field(block_box(kFieldShape, comm.rank(), comm.size()), 1);
    Checkpointer ck(comm, std::make_shared<ArrayTreeHandler>());
    ck.save(dir, ArrayTreeSave(field.tree(), {.format = format}));
    EXPECT_TRUE(is_committed(dir));
    EXPECT_TRUE(std::filesystem::exists(dir / kStepMetadataFile));
    EXPECT_FALSE(std::filesystem::exists(tmp_of(dir)));
    expect_restores(ck, dir, 1);
    // Without arguments: as saved, each rank the box it wrote.
    expect_field_as_saved(ck.restore_as<ArrayTree>(dir, nullptr), field.box, 1);
  }
}

TEST(Checkpointer, OverwritesACommittedCheckpointOnlyWithForce) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const Box box = block_box(kFieldShape, comm.rank(), comm.size());
  for (StorageFormat format : available_formats()) {
    SCOPED_TRACE(format_name(format));
    const auto dir = tmp / format_name(format);
    Checkpointer ck(comm, std::make_shared<ArrayTreeHandler>());
    Field first(box, 1);
    ck.save(dir, ArrayTreeSave(first.tree(), {.format = format}));

    Field second(box, 2);
    const std::string message = error_of<InvalidArgument>(
        [&] { ck.save(dir, ArrayTreeSave(second.tree(), {.format = format})); });
    EXPECT_TRUE(mentions(message, {dir.string(), "force"})) << message;
    EXPECT_TRUE(is_committed(dir));
    EXPECT_FALSE(std::filesystem::exists(tmp_of(dir)));
    expect_restores(ck, dir, 1);

    ck.save(dir, ArrayTreeSave(second.tree(), {.format = format}), {.force = true});
    EXPECT_TRUE(is_committed(dir));
    expect_restores(ck, dir, 2);
    MPI_Barrier(MPI_COMM_WORLD);
    // Nothing of the replaced checkpoint or of the save is left next to it.
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir.parent_path())) {
      if (entry.path().filename().string().starts_with(dir.filename().string())) {
        names.push_back(entry.path().filename().string());
      }
    }
    EXPECT_EQ(names, std::vector<std::string>{dir.filename().string()});
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

TEST(Checkpointer, ForceReplacesOnlyACheckpoint) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const Box box = block_box(kFieldShape, comm.rank(), comm.size());
  Field field(box, 1);
  Checkpointer ck(comm, std::make_shared<ArrayTreeHandler>());
  // A root of several checkpoints, a directory of the user's files, a plain file, and a link
  // to a checkpoint: a forced save refuses each on every rank and leaves it as it was.
  const auto root = tmp / "root";
  const auto user = tmp / "user";
  const auto file = tmp / "file.txt";
  const auto link = tmp / "link";
  if (comm.is_primary()) {
    std::filesystem::create_directories(root);
    std::filesystem::create_directories(user / "notes");
    std::ofstream(user / "notes" / "a.txt") << "keep";
    std::ofstream(file) << "keep";
  }
  MPI_Barrier(MPI_COMM_WORLD);
  ck.save(root / "10", ArrayTreeSave(field.tree()));
  if (comm.is_primary()) {
    std::ofstream(root / "cairn-root.json") << "{}";
    std::filesystem::create_directory_symlink(root / "10", link);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  for (const auto& [dir, what] :
       std::vector<std::pair<std::filesystem::path, std::string>>{{root, "not a cairn checkpoint"},
                                                                  {user, "not a cairn checkpoint"},
                                                                  {file, "is a file"},
                                                                  {link, "symbolic link"}}) {
    SCOPED_TRACE(dir.string());
    const std::string message = error_of<InvalidArgument>(
        [&] { ck.save(dir, ArrayTreeSave(field.tree()), {.force = true}); });
    EXPECT_TRUE(mentions(message, {dir.string(), what, "nothing was changed"})) << message;
    EXPECT_FALSE(std::filesystem::exists(tmp_of(dir)));
  }
  EXPECT_TRUE(std::filesystem::is_regular_file(user / "notes" / "a.txt"));
  EXPECT_TRUE(std::filesystem::is_regular_file(file));
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_TRUE(std::filesystem::is_regular_file(root / "cairn-root.json"));
  EXPECT_TRUE(is_committed(root / "10"));
  expect_restores(ck, root / "10", 1);
  EXPECT_TRUE(is_checkpoint_directory(root / "10"));
  EXPECT_FALSE(is_checkpoint_directory(root));
  EXPECT_FALSE(is_checkpoint_directory(file));
  MPI_Barrier(MPI_COMM_WORLD);
}

// A directory of the user's files that holds a file named COMMITTED or cairn-step.json is no
// checkpoint: a forced save replaces a directory only when its marker is one cairn wrote and
// lists files that are there (or, without a marker, its cairn-step.json is cairn's), and
// refuses anything else on every rank, with every file left as it was.
TEST(Checkpointer, ForceRefusesADirectoryWithAForeignMarker) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  Field field(block_box(kFieldShape, comm.rank(), comm.size()), 1);
  Checkpointer ck(comm, std::make_shared<ArrayTreeHandler>());
  const auto real = tmp / "real";
  ck.save(real, ArrayTreeSave(field.tree()));
  const std::string marker_text = [&] {
    std::ifstream in(real / kCommitMarker);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }();
  // name -> {file name, content} of the one cairn-like file in a directory of notes.
  const std::vector<std::pair<std::string, std::pair<std::string, std::string>>> foreign = {
      {"empty_marker", {kCommitMarker, ""}},
      {"text_marker", {kCommitMarker, "done\n"}},
      {"header_only_marker", {kCommitMarker, "cairn checkpoint committed today\nend\n"}},
      // cairn's own marker, copied without the files it lists.
      {"copied_marker", {kCommitMarker, marker_text}},
      {"empty_step_file", {kStepMetadataFile, ""}},
      {"other_step_file", {kStepMetadataFile, R"({"format": "mine"})"}},
  };
  if (comm.is_primary()) {
    for (const auto& [name, file] : foreign) {
      std::filesystem::create_directories(tmp / name);
      std::ofstream(tmp / name / "notes.txt") << "precious";
      std::ofstream(tmp / name / file.first) << file.second;
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  for (const auto& [name, file] : foreign) {
    SCOPED_TRACE(name);
    const auto dir = tmp / name;
    EXPECT_TRUE(looks_like_checkpoint_directory(dir));
    EXPECT_FALSE(is_checkpoint_directory(dir));
    const std::string message = error_of<InvalidArgument>(
        [&] { ck.save(dir, ArrayTreeSave(field.tree()), {.force = true}); });
    EXPECT_TRUE(mentions(message, {dir.string(), "not a cairn checkpoint", "nothing was changed"}))
        << message;
    EXPECT_FALSE(std::filesystem::exists(tmp_of(dir)));
    std::ifstream notes(dir / "notes.txt");
    std::string kept;
    notes >> kept;
    EXPECT_EQ(kept, "precious");
  }
  // The checkpoint the marker was copied from is one, and is replaced.
  EXPECT_TRUE(is_checkpoint_directory(real));
  Field second(block_box(kFieldShape, comm.rank(), comm.size()), 2);
  ck.save(real, ArrayTreeSave(second.tree()), {.force = true});
  expect_restores(ck, real, 2);
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(Checkpointer, RestoringAnIncompleteCheckpointIsAFormatError) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  for (StorageFormat format : available_formats()) {
    SCOPED_TRACE(format_name(format));
    const auto dir = tmp / format_name(format);
    Checkpointer ck(comm, std::make_shared<ArrayTreeHandler>());
    Field field(block_box(kFieldShape, comm.rank(), comm.size()), 1);
    ck.save(dir, ArrayTreeSave(field.tree(), {.format = format}));
    MPI_Barrier(MPI_COMM_WORLD);
    // A save that died between writing the data and the commit marker looks like this.
    if (comm.is_primary()) std::filesystem::remove(dir / kCommitMarker);
    MPI_Barrier(MPI_COMM_WORLD);
    EXPECT_FALSE(is_committed(dir));

    const std::string on_restore = error_of<FormatError>([&] { (void)ck.restore(dir); });
    EXPECT_TRUE(mentions(on_restore, {dir.string(), "incomplete"})) << on_restore;
    const std::string on_metadata = error_of<FormatError>([&] { (void)ck.metadata(dir); });
    EXPECT_TRUE(mentions(on_metadata, {"incomplete"})) << on_metadata;

    // Saving over it needs force too, and then gives a valid checkpoint.
    const std::string on_save = error_of<InvalidArgument>(
        [&] { ck.save(dir, ArrayTreeSave(field.tree(), {.format = format})); });
    EXPECT_TRUE(mentions(on_save, {"incomplete", "force"})) << on_save;
    ck.save(dir, ArrayTreeSave(field.tree(), {.format = format}), {.force = true});
    EXPECT_TRUE(is_committed(dir));
    expect_restores(ck, dir, 1);
  }
}

TEST(Checkpointer, RestoringAMissingCheckpointIsNotFound) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const auto dir = tmp / "never_saved";
  Checkpointer ck(comm, std::make_shared<CompositeHandler>());
  const std::string on_restore = error_of<NotFound>([&] { (void)ck.restore(dir); });
  EXPECT_TRUE(mentions(on_restore, {dir.string()})) << on_restore;
  (void)error_of<NotFound>([&] { (void)ck.metadata(dir); });
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST(Checkpointer, MetadataDescribesTheStep) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  for (StorageFormat format : available_formats()) {
    SCOPED_TRACE(format_name(format));
    const auto dir = tmp / format_name(format);
    Field field(block_box(kFieldShape, comm.rank(), comm.size()), 3);
    Checkpointer ck(comm, std::make_shared<CompositeHandler>());
    const boost::json::value custom = {{"run", "heat"}, {"step", 7}, {"tags", {"a", "b"}}};
    ck.save(dir, full_save(field, format, comm.rank(), 3), {.custom_metadata = custom});

    const boost::json::value meta = ck.metadata(dir);
    ASSERT_TRUE(meta.is_object()) << meta;
    const auto& m = meta.as_object();
    EXPECT_EQ(m.at("format"), "cairn-step");
    EXPECT_EQ(m.at("version"), 1);
    EXPECT_EQ(m.at("handler"), "cairn.composite");
    EXPECT_EQ(m.at("world_size"), comm.size());
    EXPECT_EQ(m.at("custom"), custom);
    EXPECT_TRUE(m.at("init_time").is_string());
    EXPECT_TRUE(m.at("commit_time").is_string());
    // Every byte of item data, summed over ranks.
    std::uint64_t expected_bytes = 13 * 10 * sizeof(double) +
                                   boost::json::serialize(meta_value(3)).size() +
                                   shared_blob(3).size();
    for (int r = 0; r < comm.size(); ++r) expected_bytes += rank_blob(r, 3).size();
    EXPECT_EQ(boost::json::value_to<std::uint64_t>(m.at("bytes")), expected_bytes) << meta;
    const auto& timings = m.at("timings").as_object();
    for (const char* phase : {"write_s", "finish_s", "commit_s"}) {
      ASSERT_TRUE(timings.contains(phase)) << phase << " in " << meta;
      EXPECT_GE(timings.at(phase).to_number<double>(), 0.0) << phase;
    }
    const boost::json::value items = {{"blob", "cairn.bytes"},
                                      {"meta", "cairn.json"},
                                      {"rep", "cairn.bytes"},
                                      {"state", "cairn.array_tree"}};
    EXPECT_EQ(m.at("items"), items);

    // The handler's description of the items.
    const auto& item = m.at("item").as_object();
    EXPECT_EQ(item.at("handler"), "cairn.composite");
    const auto& state = item.at("items").at("state").as_object();
    EXPECT_EQ(state.at("handler"), "cairn.array_tree");
    EXPECT_EQ(state.at("world_size"), comm.size());
    EXPECT_EQ(boost::json::value_to<std::uint64_t>(state.at("bytes")), 13 * 10 * sizeof(double));
    EXPECT_EQ(item.at("items").at("meta").at("handler"), "cairn.json");
    EXPECT_EQ(boost::json::value_to<std::uint64_t>(item.at("items").at("rep").at("bytes")),
              shared_blob(3).size());

    // The same on disk, where cairn-step.json is readable without cairn.
    std::ifstream file(dir / kStepMetadataFile);
    std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    const boost::json::value on_disk = boost::json::parse(text);
    EXPECT_EQ(on_disk.at("items"), items);
    EXPECT_EQ(on_disk.at("custom"), custom);
  }
}

TEST(Checkpointer, StepMetadataReadsTheFieldsTyped) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const auto dir = tmp / "typed";
  Checkpointer ck(comm, std::make_shared<CompositeHandler>());
  const boost::json::value custom = {{"metrics", {{"loss", 0.5}}}};
  const Composite args{{"meta", std::make_shared<JsonSave>(boost::json::value{{"k", 1}})},
                       {"blob", std::make_shared<BytesSave>(std::vector<std::byte>(5))}};
  ck.save(dir, args, {.custom_metadata = custom});

  const StepMetadata step = StepMetadata::read(dir);
  EXPECT_EQ(step.handler, CompositeHandler::kTypeName);
  EXPECT_EQ(step.world_size, comm.size());
  EXPECT_EQ(step.bytes, boost::json::serialize(boost::json::value{{"k", 1}}).size() +
                            5 * static_cast<std::uint64_t>(comm.size()));
  EXPECT_EQ(step.custom, custom);
  EXPECT_FALSE(step.init_time.empty());
  EXPECT_FALSE(step.commit_time.empty());
  const std::map<std::string, std::string> items = {{"blob", std::string(BytesHandler::kTypeName)},
                                                    {"meta", std::string(JsonHandler::kTypeName)}};
  EXPECT_EQ(step.items, items);
  // The whole file, as read_step_metadata() returns it.
  EXPECT_EQ(step.json, read_step_metadata(dir));
  EXPECT_EQ(step.json.at("commit_time").as_string(), step.commit_time);
}

TEST(Checkpointer, MetadataOfACompositeWithAFreshHandlerDescribesItsItems) {
  // A new process (e.g. `cairn ls`) asks for the metadata of a composite checkpoint: the
  // item handlers recorded in cairn-step.json describe the items, as restore-all finds them.
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const auto dir = tmp / "ckpt";
  {
    Field field(block_box(kFieldShape, comm.rank(), comm.size()), 3);
    Checkpointer ck(comm, std::make_shared<CompositeHandler>());
    ck.save(dir, full_save(field, StorageFormat::posix, comm.rank(), 3));
  }
  Checkpointer fresh(comm, std::make_shared<CompositeHandler>());
  const boost::json::value meta = fresh.metadata(dir);
  const auto& items = meta.at("item").at("items").as_object();
  for (const char* name : {"blob", "meta", "rep", "state"}) {
    EXPECT_TRUE(items.contains(name)) << name << " missing in " << meta;
  }
  if (items.contains("state")) {
    EXPECT_EQ(boost::json::value_to<std::uint64_t>(items.at("state").at("bytes")),
              13 * 10 * sizeof(double));
  }
}

TEST(Checkpointer, ReplacesAStaleTemporaryDirectory) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const auto dir = tmp / "ckpt";
  // What a save that died before its commit leaves behind.
  if (comm.is_primary()) {
    std::filesystem::create_directories(tmp_of(dir) / "state");
    std::ofstream(tmp_of(dir) / "state" / "junk.bin") << "junk";
  }
  MPI_Barrier(MPI_COMM_WORLD);
  Checkpointer ck(comm, std::make_shared<ArrayTreeHandler>());
  Field field(block_box(kFieldShape, comm.rank(), comm.size()), 4);
  ck.save(dir, ArrayTreeSave(field.tree()));
  EXPECT_TRUE(is_committed(dir));
  EXPECT_FALSE(std::filesystem::exists(tmp_of(dir)));
  EXPECT_FALSE(std::filesystem::exists(dir / "state"));
  expect_restores(ck, dir, 4);
}

TEST(Checkpointer, WrongArgumentsCommitNothing) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  (void)error_of<InvalidArgument>([&] { Checkpointer bad(comm, nullptr); });

  Checkpointer ck(comm, std::make_shared<ArrayTreeHandler>());
  const auto dir = tmp / "ckpt";
  // Arguments of another handler.
  const std::string other =
      error_of<InvalidArgument>([&] { ck.save(dir, JsonSave(meta_value(0))); });
  EXPECT_TRUE(mentions(other, {"cairn.json"})) << other;
  expect_no_checkpoint(dir);

  // A path without a final component.
  Field field(block_box(kFieldShape, comm.rank(), comm.size()), 1);
  (void)error_of<InvalidArgument>(
      [&] { ck.save(tmp.path() / "trailing/", ArrayTreeSave(field.tree())); });
  (void)error_of<InvalidArgument>([&] { ck.save("", ArrayTreeSave(field.tree())); });

  // A restore result of another type.
  ck.save(dir, ArrayTreeSave(field.tree()));
  const std::string cast =
      error_of<InvalidArgument>([&] { (void)ck.restore_as<std::string>(dir, nullptr); });
  EXPECT_FALSE(cast.empty());
}

TEST(Checkpointer, ATreeThatIsWrongOnOneRankFailsOnEveryRank) {
  // Only the last rank's box is wrong (it repeats rank 0's box, or with one rank covers half
  // the array): only the collective validation can see it, and every rank throws. Saved over
  // an existing checkpoint with force, the old one stays intact.
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const int last = comm.size() - 1;
  for (StorageFormat format : available_formats()) {
    SCOPED_TRACE(format_name(format));
    const auto dir = tmp / format_name(format);
    Checkpointer ck(comm, std::make_shared<ArrayTreeHandler>());
    Field good(block_box(kFieldShape, comm.rank(), comm.size()), 1);
    ck.save(dir, ArrayTreeSave(good.tree(), {.format = format}));

    Box box = block_box(kFieldShape, comm.rank(), comm.size());
    if (comm.rank() == last) {
      box = comm.size() > 1 ? block_box(kFieldShape, 0, comm.size()) : slab_box(kFieldShape, 0, 2);
    }
    Field bad(box, 2);
    const std::string message = error_of<Error>(
        [&] { ck.save(dir, ArrayTreeSave(bad.tree(), {.format = format}), {.force = true}); });
    EXPECT_TRUE(mentions(message, {"fields/u"})) << message;
    MPI_Barrier(MPI_COMM_WORLD);
    EXPECT_FALSE(std::filesystem::exists(tmp_of(dir)));
    EXPECT_TRUE(is_committed(dir));
    expect_restores(ck, dir, 1);
  }
}

TEST(Checkpointer, RanksThatDisagreeOnThePathFailTogether) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  if (comm.size() == 1) GTEST_SKIP() << "needs two ranks";
  Checkpointer ck(comm, std::make_shared<ArrayTreeHandler>());
  Field field(block_box(kFieldShape, comm.rank(), comm.size()), 1);
  const auto mine = tmp / ("rank" + std::to_string(comm.rank()));
  const std::string message =
      error_of<CollectiveMismatch>([&] { ck.save(mine, ArrayTreeSave(field.tree())); });
  EXPECT_FALSE(message.empty());
  for (int r = 0; r < comm.size(); ++r) expect_no_checkpoint(tmp / ("rank" + std::to_string(r)));
}
