// Orbax's composite items and handler registries, re-expressed against cairn's
// CheckpointManager: items given no arguments (Orbax's None), handler types a user registers,
// a registry per manager (Orbax's handler_registry option), and the item metadata of a step
// (Orbax's StepMetadata.item_metadata). Each TEST names the Orbax test or code path it mirrors.
#include <cairn/manager.hpp>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "orbax_parity/parity_support.hpp"
#include "support/test_support.hpp"

using namespace cairn;
using cairn::parity::Field;
using cairn::testing::SharedTempDir;

namespace {

bool on_disk(const std::filesystem::path& p) { return std::filesystem::exists(p); }

double value_of(const ArrayTree& tree) {
  return static_cast<const double*>(tree.at("x").as_array().data)[0];
}

// A handler type that cairn does not provide: JSON stored with a tag that names the handler
// which wrote it, so that a test sees which of two handlers of one type an item got.
constexpr std::string_view kTaggedType = "parity.tagged_json";

struct TaggedSave final : CheckpointArgs {
  explicit TaggedSave(boost::json::value value_) : value(std::move(value_)) {}
  std::string_view handler_type() const noexcept override { return kTaggedType; }
  boost::json::value value;
};

class TaggedHandler final : public CheckpointHandler {
 public:
  explicit TaggedHandler(std::string tag) : tag_(std::move(tag)) {}
  std::string_view type_name() const noexcept override { return kTaggedType; }
  std::unique_ptr<PendingSave> async_save(const Comm& comm, const std::filesystem::path& dir,
                                          const CheckpointArgs& args,
                                          const AsyncContext& context) override {
    const auto* typed = dynamic_cast<const TaggedSave*>(&args);
    if (typed == nullptr) throw InvalidArgument("TaggedHandler takes TaggedSave arguments");
    // Alive until the save's stage() returned, as async_save() asks.
    saving_ =
        std::make_shared<JsonSave>(boost::json::value{{"tag", tag_}, {"value", typed->value}});
    return inner_.async_save(comm, dir, *saving_, context);
  }
  std::any restore(const Comm& comm, const std::filesystem::path& dir,
                   const CheckpointArgs*) override {
    return inner_.restore(comm, dir, nullptr);
  }
  boost::json::value metadata(const Comm& comm, const std::filesystem::path& dir) override {
    return inner_.metadata(comm, dir);
  }

 private:
  std::string tag_;
  JsonHandler inner_;
  std::shared_ptr<JsonSave> saving_;
};

HandlerRegistry::Factory tagged(std::string tag) {
  return [tag = std::move(tag)] { return std::make_shared<TaggedHandler>(tag); };
}

}  // namespace

// Orbax: restore(step, args=Composite(params=None)) and a Composite save with an item set to
// None (CompositeCheckpointHandler: a None item takes the handler configured for it, or the
// one its step recorded). A None item of a save is left out of the step; one of a restore is
// read as saved. A None item no handler is known for is refused.
TEST(OrbaxCheckpointManager, test_composite_none_items) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  {
    CheckpointManager manager(comm, tmp / "run", {.enable_async = false},
                              {{"meta", std::make_shared<JsonHandler>()}}, {"params", "meta"});
    Field field(comm, 3.0);
    const Composite items{{"params", std::make_shared<ArrayTreeSave>(field.tree())},
                          {"meta", std::make_shared<JsonSave>(boost::json::value{{"lr", 0.5}})}};
    ASSERT_TRUE(manager.save(1, items));
    Field next(comm, 4.0);
    const Composite without_meta{{"params", std::make_shared<ArrayTreeSave>(next.tree())},
                                 {"meta", nullptr}};
    ASSERT_TRUE(manager.save(2, without_meta));
    EXPECT_TRUE(on_disk(manager.step_path(2) / "params"));
    EXPECT_FALSE(on_disk(manager.step_path(2) / "meta"));

    Field back(comm, -1.0);
    const Composite read{{"params", std::make_shared<ArrayTreeRestore>(back.tree())},
                         {"meta", nullptr}};
    const auto result = Checkpointer::result_as<CompositeResult>(manager.restore(1, &read));
    EXPECT_EQ(back.values[0], 3.0);
    EXPECT_EQ(result.get<boost::json::value>("meta").at("lr").as_double(), 0.5);
  }
  // A manager given no handlers: the handler types recorded in the step serve None items.
  CheckpointManager fresh(comm, tmp / "run", {.read_only = true});
  const Composite all_none{{"params", nullptr}, {"meta", nullptr}};
  const auto result = Checkpointer::result_as<CompositeResult>(fresh.restore(1, &all_none));
  EXPECT_EQ(result.get<boost::json::value>("meta").at("lr").as_double(), 0.5);
  EXPECT_EQ(value_of(result.get<ArrayTree>("params")), 3.0);  // this rank's box, as saved

  // A None item of a save that no handler is configured for names the item, on every rank.
  CheckpointManager other(comm, tmp / "other", {.enable_async = false},
                          {{"params", std::make_shared<ArrayTreeHandler>()}});
  Field field(comm, 1.0);
  const Composite unknown{{"params", std::make_shared<ArrayTreeSave>(field.tree())},
                          {"extra", nullptr}};
  try {
    (void)other.save(1, unknown);
    ADD_FAILURE() << "a None item without a handler was saved";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'extra'"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(other.all_steps().empty());
}

// Orbax handler_registration (`register_with_handler`, DefaultCheckpointHandlerRegistry.add):
// a handler type the user registers process-wide is used through a manager, on save and on a
// restore without arguments (from the type its step recorded).
TEST(OrbaxCheckpointManager, test_registered_handler_type) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  HandlerRegistry::global().add(std::string(kTaggedType), tagged("global"));
  {
    CheckpointManager manager(comm, tmp.path(), {.enable_async = false}, {}, {"state"});
    const Composite items{{"state", std::make_shared<TaggedSave>(boost::json::value(7))}};
    ASSERT_TRUE(manager.save(1, items));
  }
  CheckpointManager fresh(comm, tmp.path(), {.read_only = true});
  const auto result = Checkpointer::result_as<CompositeResult>(fresh.restore(1));
  const auto& state = result.get<boost::json::value>("state");
  EXPECT_EQ(state.at("tag").as_string(), "global");
  EXPECT_EQ(state.at("value").as_int64(), 7);
}

// Orbax CheckpointManager(handler_registry=...): each manager takes its handlers from its
// own registry, so two managers of one program map the same item name (of the same handler
// type) to different handlers; what neither registry holds comes from the global one.
TEST(OrbaxCheckpointManager, test_per_manager_handler_registry) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  auto first = std::make_shared<HandlerRegistry>();
  first->add("state", std::string(kTaggedType), tagged("first"));
  first->add("other", std::string(kTaggedType), tagged("first-other"));
  auto second = std::make_shared<HandlerRegistry>();
  second->add("state", std::string(kTaggedType), tagged("second"));
  second->add("other", std::string(kTaggedType), tagged("second-other"));
  CheckpointManager a(comm, tmp / "a", {.enable_async = false, .handler_registry = first});
  CheckpointManager b(comm, tmp / "b", {.enable_async = false, .handler_registry = second});
  Field field(comm, 2.0);
  const Composite items{{"state", std::make_shared<TaggedSave>(boost::json::value(1))},
                        {"other", std::make_shared<TaggedSave>(boost::json::value(2))},
                        {"params", std::make_shared<ArrayTreeSave>(field.tree())}};
  ASSERT_TRUE(a.save(1, items));
  ASSERT_TRUE(b.save(1, items));
  const auto tag = [](CheckpointManager& m, const char* item) {
    const auto result = Checkpointer::result_as<CompositeResult>(m.restore(1));
    return std::string(result.get<boost::json::value>(item).at("tag").as_string());
  };
  EXPECT_EQ(tag(a, "state"), "first");
  EXPECT_EQ(tag(b, "state"), "second");
  EXPECT_EQ(tag(a, "other"), "first-other");
  EXPECT_EQ(tag(b, "other"), "second-other");
  // A manager opened later with the second registry reads the first root's items with the
  // handlers of its own registry.
  CheckpointManager c(comm, tmp / "a", {.read_only = true, .handler_registry = second});
  Field back(comm, -1.0);
  const Composite read{{"params", std::make_shared<ArrayTreeRestore>(back.tree())},
                       {"state", nullptr}};
  const auto result = Checkpointer::result_as<CompositeResult>(c.restore(1, &read));
  EXPECT_EQ(back.values[0], 2.0);
  EXPECT_EQ(result.get<boost::json::value>("state").at("value").as_int64(), 1);
}

// Orbax test_metadata / StepMetadata.item_metadata: metadata(step) holds the items'
// metadata besides the step's own (for a composite, per item).
TEST(OrbaxCheckpointManager, test_step_metadata_item_metadata) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  CheckpointManager manager(comm, tmp.path(), {.enable_async = false}, {}, {"params", "meta"});
  Field field(comm, 1.0);
  const Composite items{{"params", std::make_shared<ArrayTreeSave>(field.tree())},
                        {"meta", std::make_shared<JsonSave>(boost::json::value{{"a", 1}})}};
  ASSERT_TRUE(manager.save(3, items, {.metrics = {{"loss", 0.25}}}));
  const auto meta = manager.metadata(3);
  EXPECT_EQ(meta.at("custom").at("metrics").at("loss").as_double(), 0.25);
  const auto& item_metadata = meta.at(CheckpointManager::kItemMetadataKey);
  EXPECT_EQ(item_metadata, manager.item_metadata(3));
  const auto& per_item = item_metadata.at("items").as_object();
  EXPECT_EQ(per_item.at("params").at("world_size").as_int64(), comm.size());
  EXPECT_TRUE(per_item.contains("meta"));
  EXPECT_THROW((void)manager.metadata(4), NotFound);
}
