// Links and permissions. A checkpoint whose files or item directories are symbolic links
// leading outside it is refused on restore (FormatError naming the path, on every rank), and
// verify reports it; new files honour the umask, or get the mode and group of FileOptions.
#include <grp.h>
#include <sys/stat.h>

#include <cairn/checkpointer.hpp>
#include <cairn/handlers.hpp>
#include <cairn/manager.hpp>
#include <cairn/storage.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_test_util.hpp"
#include "support/test_support.hpp"

using namespace cairn;
using namespace cairn::testing;
namespace fs = std::filesystem;

namespace {

Composite with_field(Field& field, StorageFormat format) {
  return Composite{
      {"meta", std::make_shared<JsonSave>(meta_value(1))},
      {"state", std::make_shared<ArrayTreeSave>(field.tree(), TreeSaveOptions{.format = format})}};
}

// On the primary: moves `inside` to `outside` and puts a link to it in its place (the data
// stays the same, so only the link can make a restore fail). Collective over MPI_COMM_WORLD.
void replace_with_link_outside(const fs::path& inside, const fs::path& outside) {
  MPI_Barrier(MPI_COMM_WORLD);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    fs::create_directories(outside.parent_path());
    fs::rename(inside, outside);
    if (fs::is_directory(outside)) {
      fs::create_directory_symlink(outside, inside);
    } else {
      fs::create_symlink(outside, inside);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// Saves the field in `format`, replaces `what` (relative to the checkpoint) by a link to a
// place outside it, and checks that restore and verify refuse it on every rank.
void expect_link_refused(StorageFormat format, const std::string& what) {
  if (!storage_format_available(format)) GTEST_SKIP() << "format not in this build";
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  Checkpointer ck(comm, std::make_shared<CompositeHandler>());
  Field field(block_box(kFieldShape, comm.rank(), comm.size()), 1);
  const fs::path dir = tmp / "root" / "10";
  ck.save(dir, with_field(field, format));
  replace_with_link_outside(dir / what, tmp / "elsewhere" / fs::path(what).filename());

  FieldTarget target(field.box);
  const Composite args{{"state", std::make_shared<ArrayTreeRestore>(target.tree)}};
  const std::string message = error_of<FormatError>([&] { (void)ck.restore(dir, &args); });
  EXPECT_TRUE(mentions(message, {(dir / what).string(), "outside the checkpoint"})) << message;

  // The storage engine alone refuses links out of the item, too (and verify reports them).
  if (what.starts_with("state/")) {
    const std::string direct =
        error_of<FormatError>([&] { (void)restore_tree_as_saved(comm, dir / "state"); });
    EXPECT_TRUE(mentions(direct, {(dir / what).string(), "symbolic link"})) << direct;
    const TreeVerifyReport report = verify_tree(comm, dir / "state");
    ASSERT_FALSE(report.problems.empty());
    EXPECT_TRUE(mentions(report.problems.front(), {(dir / what).string()}))
        << report.problems.front();
  }
}

// Modes of every file and directory under `dir` (itself included).
std::vector<std::pair<fs::path, mode_t>> modes_under(const fs::path& dir) {
  std::vector<std::pair<fs::path, mode_t>> out;
  struct stat st {};
  ::stat(dir.c_str(), &st);
  out.emplace_back(dir, st.st_mode);
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    ::lstat(entry.path().c_str(), &st);
    out.emplace_back(entry.path(), st.st_mode);
  }
  return out;
}

void expect_modes(const fs::path& dir, mode_t file_mode, mode_t dir_mode) {
  for (const auto& [path, mode] : modes_under(dir)) {
    EXPECT_EQ(mode & 07777, S_ISDIR(mode) ? dir_mode : file_mode)
        << path << " has mode " << std::oct << (mode & 07777);
  }
}

}  // namespace

// ------------------------------------------------------------------ links out are refused

TEST(FileLinks, LinkedPosixShardFileIsRefused) {
  expect_link_refused(StorageFormat::posix, "state/shards/p0.bin");
}

TEST(FileLinks, LinkedHdf5DataFileIsRefused) {
  expect_link_refused(StorageFormat::hdf5, "state/data.h5");
}

TEST(FileLinks, LinkedItemDirectoryIsRefused) {
  expect_link_refused(StorageFormat::posix, "state");
}

TEST(FileLinks, LinkedMetadataFileIsRefused) {
  expect_link_refused(StorageFormat::posix, kStepMetadataFile);
}

TEST(FileLinks, LinkInsideTheCheckpointIsRead) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  Checkpointer ck(comm, std::make_shared<CompositeHandler>());
  Field field(block_box(kFieldShape, comm.rank(), comm.size()), 1);
  const fs::path dir = tmp / "10";
  ck.save(dir, with_field(field, StorageFormat::posix));
  replace_with_link_outside(dir / "state/shards/p0.bin", dir / "state/moved/p0.bin");
  FieldTarget target(field.box);
  const Composite args{{"state", std::make_shared<ArrayTreeRestore>(target.tree)}};
  const auto result = std::any_cast<CompositeResult>(ck.restore(dir, &args));
  expect_field(target, result.get<ArrayTree>("state"), 1);
}

// ------------------------------------------------------------------ modes and group

TEST(FileModes, NewFilesHonourTheUmask) {
  // 002 is the umask of a shared project directory: the group may write what cairn creates.
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  for (const mode_t mask : {mode_t{077}, mode_t{002}}) {
    const mode_t old = ::umask(mask);
    for (StorageFormat format : {StorageFormat::posix, StorageFormat::hdf5}) {
      if (!storage_format_available(format)) continue;
      Checkpointer ck(comm, std::make_shared<CompositeHandler>());
      Field field(block_box(kFieldShape, comm.rank(), comm.size()), 1);
      const fs::path dir =
          tmp / ((mask == 077 ? "077-" : "002-") + std::string(storage_format_name(format)));
      ck.save(dir, with_field(field, format));
      MPI_Barrier(MPI_COMM_WORLD);
      SCOPED_TRACE(dir.string());
      expect_modes(dir, 0666 & ~mask, 0777 & ~mask);
    }
    ::umask(old);
  }
}

TEST(FileModes, ExplicitModeAndGroupAreApplied) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const struct group* users = ::getgrnam("users");
  if (users == nullptr) GTEST_SKIP() << "no group 'users' on this system";
  const gid_t gid = users->gr_gid;
  const mode_t old = ::umask(077);
  for (bool async : {false, true}) {
    const CheckpointerOptions options{
        .file_options = {.path_permission_mode = fs::perms{0640}, .group = "users"}};
    Field field(block_box(kFieldShape, comm.rank(), comm.size()), 1);
    const fs::path dir = tmp / (async ? "async" : "sync");
    if (async) {
      AsyncCheckpointer ck(comm, std::make_shared<CompositeHandler>(), {}, options);
      ck.save(dir, with_field(field, StorageFormat::posix));
      ck.wait_until_finished();
    } else {
      Checkpointer ck(comm, std::make_shared<CompositeHandler>(), options);
      ck.save(dir, with_field(field, StorageFormat::posix));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    expect_modes(dir, 0640, 0750);
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      struct stat st {};
      ::lstat(entry.path().c_str(), &st);
      EXPECT_EQ(st.st_gid, gid) << entry.path();
    }
  }
  ::umask(old);
}

TEST(FileModes, TheManagerPassesTheOptionsOn) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  for (bool async : {false, true}) {
    const fs::path root = tmp / (async ? "async" : "sync");
    CheckpointManager manager(
        comm, root,
        {.enable_async = async,
         .checkpointer = {.file_options = {.path_permission_mode = fs::perms{0604}}}});
    const boost::json::value value = meta_value(1);
    manager.save(1, JsonSave(value));
    manager.wait_until_finished();
    MPI_Barrier(MPI_COMM_WORLD);
    expect_modes(root / "1", 0604, 0705);
  }
}

TEST(FileModes, AnUnknownGroupIsRefusedOnEveryRank) {
  Comm comm(MPI_COMM_WORLD);
  const std::string message = error_of<InvalidArgument>([&] {
    Checkpointer ck(comm, std::make_shared<CompositeHandler>(),
                    {.file_options = {.group = "no-such-group-cairn"}});
  });
  EXPECT_TRUE(mentions(message, {"no-such-group-cairn"})) << message;
}
