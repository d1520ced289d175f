// The handlers through a Checkpointer: composites of array-tree, JSON and bytes items saved and
// restored byte-exactly (other decomposition, other rank counts, subsets, everything on disk,
// with a fresh handler), items absent on disk, handler resolution and item names.
#include <cairn/checkpointer.hpp>
#include <cairn/handlers.hpp>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_test_util.hpp"
#include "support/test_support.hpp"

using namespace cairn;
using namespace cairn::testing;

namespace {

std::string format_name(StorageFormat format) { return std::string(storage_format_name(format)); }

// Saves full_save(salt) at `dir` with a Checkpointer over world and a new composite handler.
void save_full(const std::filesystem::path& dir, StorageFormat format, int salt) {
  Comm comm(MPI_COMM_WORLD);
  Field field(block_box(kFieldShape, comm.rank(), comm.size()), salt);
  Checkpointer ck(comm, std::make_shared<CompositeHandler>());
  ck.save(dir, full_save(field, format, comm.rank(), salt));
}

}  // namespace

TEST(Composite, SavesAndRestoresArrayJsonAndBytesItemsByteExactly) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  for (StorageFormat format : available_formats()) {
    SCOPED_TRACE(format_name(format));
    const auto dir = tmp / format_name(format);
    Field field(block_box(kFieldShape, comm.rank(), comm.size()), 3);
    Checkpointer ck(comm, std::make_shared<CompositeHandler>());
    ck.save(dir, full_save(field, format, comm.rank(), 3));
    EXPECT_TRUE(is_committed(dir));
    for (const char* item : {"state", "meta", "blob", "rep"}) {
      EXPECT_TRUE(std::filesystem::is_directory(dir / item)) << item;
    }

    // The field comes back in another decomposition (slabs instead of blocks).
    FieldTarget target(slab_box(kFieldShape, comm.rank(), comm.size()));
    const Composite args = full_restore(target);
    const auto result = ck.restore_as<CompositeResult>(dir, &args);
    expect_full(result, target, comm.rank(), 3);
  }
}

TEST(Composite, RestoresOnOtherRankCounts) {
  SharedTempDir tmp;
  const int n = world_size();
  for (StorageFormat format : available_formats()) {
    SCOPED_TRACE(format_name(format));
    // N -> M: saved on every rank, restored on fewer ranks in slabs.
    const auto many = tmp / (format_name(format) + "_many");
    save_full(many, format, 5);
    for (int m : std::set<int>{1, (n + 1) / 2}) {
      if (auto sub = first_ranks(m)) {
        SCOPED_TRACE(::testing::Message() << n << " -> " << m);
        Checkpointer ck(*sub, std::make_shared<CompositeHandler>());
        FieldTarget target(slab_box(kFieldShape, sub->rank(), sub->size()));
        const Composite args = full_restore(target);
        expect_full(ck.restore_as<CompositeResult>(many, &args), target, sub->rank(), 5);
      }
      MPI_Barrier(MPI_COMM_WORLD);
    }

    // 1 -> N: saved on rank 0 alone, restored on every rank in blocks; the per-rank bytes of
    // rank 0 are what every rank asks for.
    const auto one = tmp / (format_name(format) + "_one");
    if (auto sub = first_ranks(1)) {
      Field field(block_box(kFieldShape, 0, 1), 6);
      Checkpointer ck(*sub, std::make_shared<CompositeHandler>());
      ck.save(one, full_save(field, format, 0, 6));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    Comm comm(MPI_COMM_WORLD);
    Checkpointer ck(comm, std::make_shared<CompositeHandler>());
    FieldTarget target(block_box(kFieldShape, comm.rank(), comm.size()));
    const Composite args{{"state", std::make_shared<ArrayTreeRestore>(target.tree)},
                         {"blob", std::make_shared<BytesRestore>(0)},
                         {"rep", std::make_shared<BytesRestore>()}};
    const auto result = ck.restore_as<CompositeResult>(one, &args);
    expect_field(target, result.get<ArrayTree>("state"), 6);
    EXPECT_EQ(result.get<std::vector<std::byte>>("blob"), rank_blob(0, 6));
    EXPECT_EQ(result.get<std::vector<std::byte>>("rep"), shared_blob(6));
    if (n > 1) {
      // Rank 1 has no bytes of its own in a one-rank save: NotFound on every rank.
      const Composite own{{"blob", std::make_shared<BytesRestore>()}};
      const std::string message = error_of<NotFound>([&] { (void)ck.restore(one, &own); });
      EXPECT_TRUE(mentions(message, {"rank 1"})) << message;
    }
  }
}

TEST(Composite, RestoresOnlyTheItemsAskedFor) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  for (StorageFormat format : available_formats()) {
    SCOPED_TRACE(format_name(format));
    const auto dir = tmp / format_name(format);
    save_full(dir, format, 7);
    // Damage the items that are not asked for: a subset restore must not read them.
    if (comm.is_primary()) {
      std::filesystem::remove_all(dir / "blob");
      std::filesystem::create_directory(dir / "blob");
      for (const auto& entry : std::filesystem::directory_iterator(dir / "state")) {
        if (entry.is_regular_file()) std::filesystem::resize_file(entry.path(), 3);
      }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    Checkpointer ck(comm, std::make_shared<CompositeHandler>());
    const Composite only_meta{{"meta", std::make_shared<JsonRestore>()}};
    const auto result = ck.restore_as<CompositeResult>(dir, &only_meta);
    EXPECT_EQ(result.names(), std::vector<std::string>{"meta"});
    EXPECT_EQ(result.get<boost::json::value>("meta"), meta_value(7));
    EXPECT_TRUE(result.contains("meta"));
    EXPECT_FALSE(result.contains("state"));
    const std::string message = error_of<NotFound>([&] { (void)result.get<ArrayTree>("state"); });
    EXPECT_TRUE(mentions(message, {"'state'"})) << message;
    // Asking for the wrong type names the item.
    const std::string wrong =
        error_of<InvalidArgument>([&] { (void)result.get<std::vector<std::byte>>("meta"); });
    EXPECT_TRUE(mentions(wrong, {"'meta'"})) << wrong;

    const Composite only_rep{{"rep", std::make_shared<BytesRestore>()}};
    EXPECT_EQ(ck.restore_as<CompositeResult>(dir, &only_rep).get<std::vector<std::byte>>("rep"),
              shared_blob(7));
  }
}

TEST(Composite, RestoreAllReturnsEveryItemOnDisk) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const Box box = block_box(kFieldShape, comm.rank(), comm.size());
  for (StorageFormat format : available_formats()) {
    SCOPED_TRACE(format_name(format));
    const auto dir = tmp / format_name(format);
    Field field(box, 9);
    auto handler = std::make_shared<CompositeHandler>();
    Checkpointer ck(comm, handler);
    ck.save(dir, full_save(field, format, comm.rank(), 9));

    const auto check = [&](const CompositeResult& result) {
      EXPECT_EQ(result.names(), (std::vector<std::string>{"blob", "meta", "rep", "state"}));
      // As saved: each rank gets the box it wrote.
      expect_field_as_saved(result.get<ArrayTree>("state"), box, 9);
      EXPECT_EQ(result.get<boost::json::value>("meta"), meta_value(9));
      EXPECT_EQ(result.get<std::vector<std::byte>>("blob"), rank_blob(comm.rank(), 9));
      EXPECT_EQ(result.get<std::vector<std::byte>>("rep"), shared_blob(9));
    };
    {
      SCOPED_TRACE("the handler that saved");
      check(ck.restore_as<CompositeResult>(dir, nullptr));
    }
    {
      // A new process knows no items: their handlers come from cairn-step.json "items".
      SCOPED_TRACE("a fresh handler");
      Checkpointer fresh(comm, std::make_shared<CompositeHandler>());
      check(fresh.restore_as<CompositeResult>(dir, nullptr));
    }
  }
}

TEST(Composite, ItemsAbsentOnDisk) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const auto full = tmp / "full";
  const auto meta_only = tmp / "meta_only";
  Field field(block_box(kFieldShape, comm.rank(), comm.size()), 1);
  auto handler = std::make_shared<CompositeHandler>();
  Checkpointer ck(comm, handler);
  ck.save(full, full_save(field, StorageFormat::posix, comm.rank(), 1));
  ck.save(meta_only, Composite{{"meta", std::make_shared<JsonSave>(meta_value(2))}});

  // Not asked for: simply not in the result, even though the handler knows the items.
  const auto all = ck.restore_as<CompositeResult>(meta_only, nullptr);
  EXPECT_EQ(all.names(), std::vector<std::string>{"meta"});
  EXPECT_FALSE(all.contains("state"));
  EXPECT_EQ(all.get<boost::json::value>("meta"), meta_value(2));
  Checkpointer fresh(comm, std::make_shared<CompositeHandler>());
  EXPECT_EQ(fresh.restore_as<CompositeResult>(meta_only, nullptr).names(),
            std::vector<std::string>{"meta"});

  // Asked for (Orbax's partial restore): absent from the result, not an error, with the saving
  // or a fresh handler; get() of it is NotFound naming the item.
  const Composite want_blob{{"meta", std::make_shared<JsonRestore>()},
                            {"blob", std::make_shared<BytesRestore>()}};
  for (Checkpointer* restorer : {&ck, &fresh}) {
    const auto result = restorer->restore_as<CompositeResult>(meta_only, &want_blob);
    EXPECT_EQ(result.names(), std::vector<std::string>{"meta"});
    EXPECT_FALSE(result.contains("blob"));
    EXPECT_EQ(result.get<boost::json::value>("meta"), meta_value(2));
    const std::string message =
        error_of<NotFound>([&] { (void)result.get<std::vector<std::byte>>("blob"); });
    EXPECT_TRUE(mentions(message, {"'blob'"})) << message;
  }
}

// Orbax's test_no_restore_args: an empty Composite restores every item on disk, as null
// arguments do.
TEST(Composite, AnEmptyCompositeRestoresEveryItem) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const auto dir = tmp / "full";
  save_full(dir, StorageFormat::posix, 3);
  Checkpointer fresh(comm, std::make_shared<CompositeHandler>());
  const Composite empty;
  const auto result = fresh.restore_as<CompositeResult>(dir, &empty);
  EXPECT_EQ(result.names(), (std::vector<std::string>{"blob", "meta", "rep", "state"}));
  EXPECT_EQ(result.get<boost::json::value>("meta"), meta_value(3));
  EXPECT_EQ(result.get<std::vector<std::byte>>("blob"), rank_blob(comm.rank(), 3));
}

// Orbax's test_no_restore_args_handler_unspecified: restoring everything when an item's handler
// cannot be determined (a directory cairn-step.json does not record) is an error naming the
// item on every rank; naming the items to restore still works.
TEST(Composite, RestoreAllWithAnUndeterminedHandlerThrows) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const auto dir = tmp / "with_stray";
  Checkpointer ck(comm, std::make_shared<CompositeHandler>());
  ck.save(dir, Composite{{"meta", std::make_shared<JsonSave>(meta_value(6))}});
  if (comm.rank() == 0) std::filesystem::create_directory(dir / "stray");
  comm.barrier("stray item made");

  Checkpointer fresh(comm, std::make_shared<CompositeHandler>());
  for (Checkpointer* restorer : {&ck, &fresh}) {
    const std::string all = error_of<InvalidArgument>([&] { (void)restorer->restore(dir); });
    EXPECT_TRUE(mentions(all, {"'stray'", "not recorded"})) << all;
    const Composite empty;
    const std::string empty_args =
        error_of<InvalidArgument>([&] { (void)restorer->restore(dir, &empty); });
    EXPECT_TRUE(mentions(empty_args, {"'stray'"})) << empty_args;
  }
  const Composite only_meta{{"meta", std::make_shared<JsonRestore>()}};
  EXPECT_EQ(fresh.restore_as<CompositeResult>(dir, &only_meta).get<boost::json::value>("meta"),
            meta_value(6));
  // metadata() lists the stray item with null metadata instead of failing.
  const auto metadata = CompositeHandler().metadata(comm, dir).as_object();
  EXPECT_TRUE(metadata.at("items").as_object().at("stray").is_null());
  EXPECT_TRUE(metadata.at("items").as_object().at("meta").is_object());
}

// Per-item custom metadata: saved in cairn-step.json, returned with the restored items and by
// metadata(), also to a fresh handler; metadata for an item that is not saved is refused.
TEST(Composite, PerItemCustomMetadata) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const auto dir = tmp / "custom";
  const boost::json::object about_meta{{"source", "run 7"}, {"revision", 3}};
  Checkpointer ck(comm, std::make_shared<CompositeHandler>());
  ck.save(dir, Composite({{"meta", std::make_shared<JsonSave>(meta_value(7))},
                          {"blob", std::make_shared<BytesSave>(rank_blob(comm.rank(), 7))}},
                         {{"meta", about_meta}}));

  Checkpointer fresh(comm, std::make_shared<CompositeHandler>());
  const auto result = fresh.restore_as<CompositeResult>(dir, nullptr);
  EXPECT_EQ(result.custom_metadata("meta"), about_meta);
  EXPECT_TRUE(result.custom_metadata("blob").empty());
  const auto metadata = CompositeHandler().metadata(comm, dir).as_object();
  EXPECT_EQ(metadata.at("custom_metadata").as_object().at("meta"), about_meta);

  const std::string bad = error_of<InvalidArgument>([&] {
    (void)Composite({{"meta", std::make_shared<JsonSave>(meta_value(7))}},
                    {{"other", boost::json::object{}}});
  });
  EXPECT_TRUE(mentions(bad, {"'other'"})) << bad;
}

TEST(Composite, AnItemKeepsTheHandlerOfItsFirstUse) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  Checkpointer ck(comm, std::make_shared<CompositeHandler>());
  const auto json_dir = tmp / "json";
  ck.save(json_dir, Composite{{"x", std::make_shared<JsonSave>(meta_value(4))}});

  // Saving "x" as an array tree now: InvalidArgument on every rank naming the item and both
  // handler types; nothing is written.
  Field field(block_box(kFieldShape, comm.rank(), comm.size()), 4);
  const auto tree_dir = tmp / "tree";
  const std::string on_save = error_of<InvalidArgument>([&] {
    ck.save(tree_dir, Composite{{"x", std::make_shared<ArrayTreeSave>(field.tree())}});
  });
  EXPECT_TRUE(mentions(on_save, {"'x'", "cairn.json", "cairn.array_tree"})) << on_save;
  expect_no_checkpoint(tree_dir);

  // Restoring "x" with bytes arguments: the same.
  const Composite as_bytes{{"x", std::make_shared<BytesRestore>()}};
  const std::string on_restore =
      error_of<InvalidArgument>([&] { (void)ck.restore(json_dir, &as_bytes); });
  EXPECT_TRUE(mentions(on_restore, {"'x'", "cairn.json", "cairn.bytes"})) << on_restore;

  // The handler is unharmed: "x" still saves and restores as JSON.
  const auto again = tmp / "again";
  ck.save(again, Composite{{"x", std::make_shared<JsonSave>(meta_value(5))}});
  const Composite as_json{{"x", std::make_shared<JsonRestore>()}};
  EXPECT_EQ(ck.restore_as<CompositeResult>(again, &as_json).get<boost::json::value>("x"),
            meta_value(5));
}

TEST(Composite, AFreshHandlerChecksRestoreArgumentsAgainstTheRecordedHandler) {
  // A new process restores item "x" (saved as JSON) with bytes arguments: cairn-step.json
  // records "x" -> cairn.json, so the mistake is an InvalidArgument naming the item and both
  // handler types, not a confusing error about a missing cairn-bytes.json.
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const auto dir = tmp / "json";
  {
    Checkpointer ck(comm, std::make_shared<CompositeHandler>());
    ck.save(dir, Composite{{"x", std::make_shared<JsonSave>(meta_value(4))}});
  }
  Checkpointer fresh(comm, std::make_shared<CompositeHandler>());
  const Composite as_bytes{{"x", std::make_shared<BytesRestore>()}};
  const std::string message =
      error_of<InvalidArgument>([&] { (void)fresh.restore(dir, &as_bytes); });
  EXPECT_TRUE(mentions(message, {"'x'", "cairn.json", "cairn.bytes"})) << message;
}

TEST(Composite, ReservedAndInvalidItemNamesAreRejected) {
  const auto json = std::make_shared<JsonSave>(meta_value(0));
  for (const char* name : {"__meta", "__", "a/b", "", "..", "with space"}) {
    SCOPED_TRACE(name);
    const std::string message = error_of<InvalidArgument>([&] { validate_item_name(name); });
    EXPECT_TRUE(mentions(message, {name})) << message;
    (void)error_of<InvalidArgument>([&] { Composite bad{{name, json}}; });
    (void)error_of<InvalidArgument>([&] {
      CompositeHandler bad({{name, std::make_shared<JsonHandler>()}});
    });
    (void)error_of<InvalidArgument>([&] { CompositeHandler bad({}, {name}); });
  }
  const std::string reserved = error_of<InvalidArgument>([&] { Composite bad{{"__x", json}}; });
  EXPECT_TRUE(mentions(reserved, {"__x", "\"__\""})) << reserved;
  // A null argument is an item without arguments (Orbax's None), not an error.
  EXPECT_NO_THROW(Composite({{"x", nullptr}}));
  (void)error_of<InvalidArgument>([&] { CompositeHandler bad({{"x", nullptr}}); });
  // A fixed handler must be one of the fixed names.
  (void)error_of<InvalidArgument>([&] {
    CompositeHandler bad({{"x", std::make_shared<JsonHandler>()}}, {"y"});
  });
  EXPECT_NO_THROW(validate_item_name("state_2.v-1+x"));
}

TEST(Composite, FixedItemNamesAndHandlers) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  auto json = std::make_shared<JsonHandler>();
  auto handler = std::make_shared<CompositeHandler>(
      std::map<std::string, std::shared_ptr<CheckpointHandler>>{{"meta", json}},
      std::set<std::string>{"meta", "blob"});
  EXPECT_EQ(handler->handler("meta"), json);
  EXPECT_EQ(handler->handler("blob"), nullptr);
  Checkpointer ck(comm, handler);

  // Another name: InvalidArgument naming it, nothing committed.
  const auto other = tmp / "other";
  const std::string message = error_of<InvalidArgument>([&] {
    ck.save(other, Composite{{"meta", std::make_shared<JsonSave>(meta_value(1))},
                             {"extra", std::make_shared<JsonSave>(meta_value(1))}});
  });
  EXPECT_TRUE(mentions(message, {"'extra'"})) << message;
  expect_no_checkpoint(other);

  // The fixed handler's type is enforced.
  const auto wrong = tmp / "wrong";
  const std::string mismatch = error_of<InvalidArgument>([&] {
    ck.save(wrong, Composite{{"meta", std::make_shared<BytesSave>(shared_blob(1), true)}});
  });
  EXPECT_TRUE(mentions(mismatch, {"'meta'", "cairn.json", "cairn.bytes"})) << mismatch;
  expect_no_checkpoint(wrong);

  // A subset of the names, then all of them, save and restore.
  const auto good = tmp / "good";
  ck.save(good, Composite{{"meta", std::make_shared<JsonSave>(meta_value(2))},
                          {"blob", std::make_shared<BytesSave>(rank_blob(comm.rank(), 2))}});
  const auto result = ck.restore_as<CompositeResult>(good, nullptr);
  EXPECT_EQ(result.names(), (std::vector<std::string>{"blob", "meta"}));
  EXPECT_EQ(result.get<boost::json::value>("meta"), meta_value(2));
  EXPECT_EQ(result.get<std::vector<std::byte>>("blob"), rank_blob(comm.rank(), 2));
}

TEST(Bytes, HostileSizesInTheIndexAreFormatErrorsNamingTheFile) {
  // A bytes index whose blob size is negative, not an integer or larger than the file is
  // damage reported on every rank naming the file, never a crash or a huge allocation.
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const auto dir = tmp / "blob";
  Checkpointer ck(comm, std::make_shared<BytesHandler>());
  ck.save(dir, BytesSave(std::vector<std::byte>(16, std::byte{7}), true));
  const auto index = dir / "cairn-bytes.json";
  std::string pristine;
  {
    std::ifstream in(index);
    pristine.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  for (const char* bytes : {"-5", "1e300", "18446744073709551615"}) {
    SCOPED_TRACE(bytes);
    if (comm.is_primary()) {
      auto value = boost::json::parse(pristine);
      value.at("blobs").at(0).as_object()["bytes"] = boost::json::parse(bytes);
      std::ofstream(index, std::ios::trunc) << boost::json::serialize(value);
    }
    comm.barrier("index rewritten");
    BytesHandler handler;
    const std::string message =
        error_of<FormatError>([&] { (void)handler.restore(comm, dir, nullptr); });
    // The index names the field; a size that is a valid number but not the file's names the
    // blob file.
    const bool valid_number = std::string_view(bytes) == "18446744073709551615";
    EXPECT_TRUE(mentions(message, {dir.string(), valid_number ? "index says" : "blobs[].bytes"}))
        << message;
    comm.barrier("index read");
  }
}
