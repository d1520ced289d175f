// cairn C ABI — plain checkpointers of array trees or composites (Checkpointer,
// AsyncCheckpointer).
#include <boost/json/serialize.hpp>
#include <cairn/checkpointer.hpp>
#include <cairn/handlers.hpp>

#include <memory>
#include <string>

#include "capi/handles.hpp"
#include "capi/items.hpp"
#include "capi/options.hpp"
#include "capi/status.hpp"

/// cairn_checkpointer: a Checkpointer or an AsyncCheckpointer of array trees or of composites.
struct cairn_checkpointer {
  std::unique_ptr<cairn::Checkpointer> checkpointer;
  bool composite = false;
};

using cairn::capi::deref;
using cairn::capi::guarded;
using cairn::capi::out_param;
using cairn::capi::text;

namespace {

cairn::CheckpointSaveOptions checkpoint_save_options(const cairn_save_options& c) {
  cairn::CheckpointSaveOptions o;
  o.force = c.force != 0;
  if (c.custom_metadata_json != nullptr) {
    o.custom_metadata = cairn::capi::parse_json(c.custom_metadata_json, "custom_metadata_json");
  }
  return o;
}

// A checkpointer handle over `comm` with `handler`, synchronous or not.
cairn_checkpointer* make_checkpointer(const cairn_comm* comm, int async,
                                      std::shared_ptr<cairn::CheckpointHandler> handler,
                                      bool composite) {
  const auto& c = deref(comm, "comm");
  auto handle = std::make_unique<cairn_checkpointer>();
  handle->checkpointer =
      async != 0 ? std::make_unique<cairn::AsyncCheckpointer>(*c.comm, std::move(handler))
                 : std::make_unique<cairn::Checkpointer>(*c.comm, std::move(handler));
  handle->composite = composite;
  return handle.release();
}

// The checkpointer `checkpointer`, which must be of composites (`composite`) or of trees.
cairn::Checkpointer& checkpointer_of(cairn_checkpointer* checkpointer, bool composite) {
  auto& handle = deref(checkpointer, "checkpointer");
  if (handle.composite != composite) {
    throw cairn::InvalidArgument(composite ? "this checkpointer saves one tree, not items "
                                             "(create it with cairn_checkpointer_create_composite)"
                                           : "this checkpointer saves items, not one tree "
                                             "(create it with cairn_checkpointer_create)");
  }
  return *handle.checkpointer;
}

}  // namespace

extern "C" {

cairn_status cairn_checkpointer_create(const cairn_comm* comm, int async,
                                       cairn_checkpointer** out) {
  return guarded(__func__, [&] {
    out_param(out, "out");
    *out = nullptr;
    *out = make_checkpointer(comm, async, std::make_shared<cairn::ArrayTreeHandler>(), false);
  });
}

cairn_status cairn_checkpointer_create_composite(const cairn_comm* comm, int async,
                                                 cairn_checkpointer** out) {
  return guarded(__func__, [&] {
    out_param(out, "out");
    *out = nullptr;
    *out = make_checkpointer(comm, async, std::make_shared<cairn::CompositeHandler>(), true);
  });
}

void cairn_checkpointer_free(cairn_checkpointer* checkpointer) { delete checkpointer; }

cairn_status cairn_checkpointer_save(cairn_checkpointer* checkpointer, const char* dir,
                                     const cairn_tree* tree, const cairn_save_options* options) {
  return guarded(__func__, [&] {
    auto& c = checkpointer_of(checkpointer, false);
    const std::string path(text(dir, "dir"));
    const auto& t = deref(tree, "tree");
    const auto o =
        cairn::capi::read_options(options, cairn::capi::default_save_options(), "options");
    const cairn::ArrayTreeSave args(t.to_save(), cairn::capi::tree_save_options(o));
    c.save(path, args, checkpoint_save_options(o));
  });
}

cairn_status cairn_checkpointer_restore(cairn_checkpointer* checkpointer, const char* dir,
                                        cairn_tree* target, const cairn_restore_options* options) {
  return guarded(__func__, [&] {
    auto& c = checkpointer_of(checkpointer, false);
    const std::string path(text(dir, "dir"));
    auto& t = deref(target, "target");
    const auto o =
        cairn::capi::read_options(options, cairn::capi::default_restore_options(), "options");
    t.before_restore();
    const cairn::ArrayTreeRestore args(t.tree, cairn::capi::tree_restore_options(o));
    t.tree = c.restore_as<cairn::ArrayTree>(path, &args);
    t.after_restore();
  });
}

cairn_status cairn_checkpointer_save_items(cairn_checkpointer* checkpointer, const char* dir,
                                           const cairn_items* items,
                                           const cairn_save_options* options) {
  return guarded(__func__, [&] {
    auto& c = checkpointer_of(checkpointer, true);
    const std::string path(text(dir, "dir"));
    const auto& set = deref(items, "items");
    const auto o =
        cairn::capi::read_options(options, cairn::capi::default_save_options(), "options");
    const auto args = cairn::capi::save_args(set, cairn::capi::tree_save_options(o));
    c.save(path, args, checkpoint_save_options(o));
  });
}

cairn_status cairn_checkpointer_restore_items(cairn_checkpointer* checkpointer, const char* dir,
                                              cairn_items* items,
                                              const cairn_restore_options* options) {
  return guarded(__func__, [&] {
    auto& c = checkpointer_of(checkpointer, true);
    const std::string path(text(dir, "dir"));
    auto& set = deref(items, "items");
    const auto o =
        cairn::capi::read_options(options, cairn::capi::default_restore_options(), "options");
    const auto args = cairn::capi::restore_args(set, cairn::capi::tree_restore_options(o),
                                                cairn::capi::as_saved_options(o));
    cairn::capi::take_results(set, c.restore_as<cairn::CompositeResult>(path, &args));
  });
}

cairn_status cairn_checkpointer_metadata(cairn_checkpointer* checkpointer, const char* dir,
                                         char** json_text) {
  return guarded(__func__, [&] {
    out_param(json_text, "json_text");
    *json_text = nullptr;
    auto& handle = deref(checkpointer, "checkpointer");
    const std::string path(text(dir, "dir"));
    const auto meta = handle.checkpointer->metadata(path);
    *json_text = cairn::capi::copy_out(boost::json::serialize(meta));
  });
}

cairn_status cairn_checkpointer_wait_until_finished(cairn_checkpointer* checkpointer) {
  return guarded(__func__,
                 [&] { deref(checkpointer, "checkpointer").checkpointer->wait_until_finished(); });
}

cairn_status cairn_checkpointer_is_saving_in_progress(const cairn_checkpointer* checkpointer,
                                                      int* result) {
  return guarded(__func__, [&] {
    const auto& handle = deref(checkpointer, "checkpointer");
    out_param(result, "result");
    *result = handle.checkpointer->is_saving_in_progress() ? 1 : 0;
  });
}

}  // extern "C"
