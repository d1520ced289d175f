// cairn C ABI — the checkpoint manager.
#include <boost/json/serialize.hpp>
#include <cairn/checkpointer.hpp>
#include <cairn/handlers.hpp>
#include <cairn/manager.hpp>

#include <any>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>

#include "capi/handles.hpp"
#include "capi/items.hpp"
#include "capi/options.hpp"
#include "capi/status.hpp"

using cairn::capi::deref;
using cairn::capi::guarded;
using cairn::capi::out_param;
using cairn::capi::text;

namespace {

cairn::CheckpointManager& manager_of(cairn_manager* manager) {
  auto& handle = deref(manager, "manager");
  return *handle.manager;
}

std::optional<std::int64_t> step_or_latest(int64_t step) {
  if (step == CAIRN_STEP_LATEST) return std::nullopt;
  return step;
}

void store_optional_step(const std::optional<std::int64_t>& value, int64_t* step, int* found) {
  out_param(step, "step");
  out_param(found, "found");
  *found = value ? 1 : 0;
  *step = value.value_or(0);
}

cairn_status json_out(const char* function, char** json_text,
                      const std::function<boost::json::value()>& read) {
  return guarded(function, [&] {
    out_param(json_text, "json_text");
    *json_text = nullptr;
    *json_text = cairn::capi::copy_out(boost::json::serialize(read()));
  });
}

// The restore options `options` points to, the defaults when it is NULL. Throws as
// read_options() does.
cairn_restore_options restore_options_of(const cairn_restore_options* options) {
  return cairn::capi::read_options(options, cairn::capi::default_restore_options(), "options");
}

// Restores into the tree handle `t` (before_restore() and after_restore() around it): `restore`
// runs the manager's restore with the tree's arguments and returns its result.
void restore_into(cairn_tree& t, const cairn_restore_options* options,
                  const std::function<std::any(const cairn::ArrayTreeRestore&)>& restore) {
  const auto o = restore_options_of(options);
  t.before_restore();
  const cairn::ArrayTreeRestore args(t.tree, cairn::capi::tree_restore_options(o));
  t.tree = cairn::Checkpointer::result_as<cairn::ArrayTree>(restore(args));
  t.after_restore();
}

}  // namespace

extern "C" {

cairn_status cairn_manager_options_init(cairn_manager_options* options, size_t struct_size) {
  return guarded(__func__, [&] {
    cairn::capi::init_options(options, struct_size, cairn::capi::default_manager_options(),
                              "options");
  });
}

cairn_status cairn_save_options_init(cairn_save_options* options, size_t struct_size) {
  return guarded(__func__, [&] {
    cairn::capi::init_options(options, struct_size, cairn::capi::default_save_options(), "options");
  });
}

cairn_status cairn_leaf_save_args_init(cairn_leaf_save_args* args, size_t struct_size) {
  return guarded(__func__, [&] {
    cairn::capi::init_options(args, struct_size, cairn::capi::default_leaf_save_args(), "args");
  });
}

cairn_status cairn_restore_options_init(cairn_restore_options* options, size_t struct_size) {
  return guarded(__func__, [&] {
    cairn::capi::init_options(options, struct_size, cairn::capi::default_restore_options(),
                              "options");
  });
}

cairn_status cairn_manager_create(const cairn_comm* comm, const char* root,
                                  const cairn_manager_options* options, cairn_manager** out) {
  return guarded(__func__, [&] {
    out_param(out, "out");
    *out = nullptr;
    const auto& c = deref(comm, "comm");
    const std::string dir(text(root, "root"));
    auto cpp_options = cairn::capi::manager_options(options);
    const auto full =
        cairn::capi::read_options(options, cairn::capi::default_manager_options(), "options");
    std::set<std::string> names;
    for (auto& name : cairn::capi::strings(full.item_names, full.item_names_count, "item_names")) {
      names.insert(std::move(name));
    }
    auto handle = std::make_unique<cairn_manager>();
    handle->manager = std::make_unique<cairn::CheckpointManager>(
        *c.comm, dir, std::move(cpp_options),
        std::map<std::string, std::shared_ptr<cairn::CheckpointHandler>>{}, std::move(names));
    *out = handle.release();
  });
}

cairn_status cairn_manager_free(cairn_manager* manager) {
  if (manager == nullptr) return CAIRN_OK;
  const cairn_status status = guarded(__func__, [&] { manager->manager->close(); });
  delete manager;
  return status;
}

cairn_status cairn_manager_save(cairn_manager* manager, int64_t step, const cairn_tree* tree,
                                const cairn_save_options* options, int* saved) {
  return guarded(__func__, [&] {
    auto& m = manager_of(manager);
    const auto& t = deref(tree, "tree");
    const auto o =
        cairn::capi::read_options(options, cairn::capi::default_save_options(), "options");
    // Logical leaves are converted only when the manager decides to save the step.
    const bool started = m.save(step,
                                cairn::ArrayTreeSave::deferred([&t] { return t.to_save(); },
                                                               cairn::capi::tree_save_options(o)),
                                cairn::capi::manager_save_options(o));
    if (saved != nullptr) *saved = started ? 1 : 0;
  });
}

cairn_status cairn_manager_save_items(cairn_manager* manager, int64_t step,
                                      const cairn_items* items, const cairn_save_options* options,
                                      int* saved) {
  return guarded(__func__, [&] {
    auto& m = manager_of(manager);
    const auto& set = deref(items, "items");
    const auto o =
        cairn::capi::read_options(options, cairn::capi::default_save_options(), "options");
    const bool started =
        m.save(step, cairn::capi::save_args(set, cairn::capi::tree_save_options(o)),
               cairn::capi::manager_save_options(o));
    if (saved != nullptr) *saved = started ? 1 : 0;
  });
}

cairn_status cairn_manager_restore(cairn_manager* manager, int64_t step, cairn_tree* target,
                                   const cairn_restore_options* options) {
  return guarded(__func__, [&] {
    auto& m = manager_of(manager);
    auto& t = deref(target, "target");
    restore_into(t, options, [&](const cairn::ArrayTreeRestore& args) {
      return m.restore(step_or_latest(step), &args);
    });
  });
}

cairn_status cairn_manager_restore_from(cairn_manager* manager, const char* directory, int64_t step,
                                        cairn_tree* target, const cairn_restore_options* options) {
  return guarded(__func__, [&] {
    auto& m = manager_of(manager);
    const std::string dir(text(directory, "directory"));
    auto& t = deref(target, "target");
    restore_into(t, options, [&](const cairn::ArrayTreeRestore& args) {
      return m.restore_from(dir, step_or_latest(step), &args);
    });
  });
}

cairn_status cairn_manager_restore_latest_intact(cairn_manager* manager, cairn_tree* target,
                                                 const cairn_restore_options* options,
                                                 int64_t* step, int* found) {
  return guarded(__func__, [&] {
    out_param(step, "step");
    out_param(found, "found");
    *found = 0;
    *step = 0;
    auto& m = manager_of(manager);
    auto& t = deref(target, "target");
    const auto o = restore_options_of(options);
    t.before_restore();
    const cairn::ArrayTreeRestore args(t.tree, cairn::capi::tree_restore_options(o));
    auto restored = m.restore_latest_intact(&args);
    if (!restored) return;
    t.tree = cairn::Checkpointer::result_as<cairn::ArrayTree>(std::move(restored->result));
    t.after_restore();
    *step = restored->step;
    *found = 1;
  });
}

cairn_status cairn_manager_restore_as_saved(cairn_manager* manager, int64_t step,
                                            const cairn_restore_options* options,
                                            cairn_tree** out) {
  return guarded(__func__, [&] {
    out_param(out, "out");
    *out = nullptr;
    auto& m = manager_of(manager);
    const auto o = restore_options_of(options);
    const cairn::ArrayTreeRestore args(cairn::capi::as_saved_options(o));
    auto tree = std::make_unique<cairn_tree>();
    tree->tree =
        cairn::Checkpointer::result_as<cairn::ArrayTree>(m.restore(step_or_latest(step), &args));
    *out = tree.release();
  });
}

cairn_status cairn_manager_restore_items(cairn_manager* manager, int64_t step, cairn_items* items,
                                         const cairn_restore_options* options) {
  return guarded(__func__, [&] {
    auto& m = manager_of(manager);
    auto& set = deref(items, "items");
    const auto o = restore_options_of(options);
    const auto args = cairn::capi::restore_args(set, cairn::capi::tree_restore_options(o),
                                                cairn::capi::as_saved_options(o));
    cairn::capi::take_results(set, cairn::Checkpointer::result_as<cairn::CompositeResult>(
                                       m.restore(step_or_latest(step), &args)));
  });
}

cairn_status cairn_manager_latest_step(cairn_manager* manager, int64_t* step, int* found) {
  return guarded(__func__,
                 [&] { store_optional_step(manager_of(manager).latest_step(), step, found); });
}

cairn_status cairn_manager_best_step(cairn_manager* manager, int64_t* step, int* found) {
  return guarded(__func__,
                 [&] { store_optional_step(manager_of(manager).best_step(), step, found); });
}

cairn_status cairn_manager_all_steps(cairn_manager* manager, int reload, int64_t** steps,
                                     size_t* count) {
  return guarded(__func__, [&] {
    out_param(steps, "steps");
    out_param(count, "count");
    *steps = nullptr;
    *count = 0;
    const auto all = manager_of(manager).all_steps(reload != 0);
    if (all.empty()) return;
    auto* copy = static_cast<int64_t*>(std::malloc(all.size() * sizeof(int64_t)));
    if (copy == nullptr) throw std::bad_alloc();
    std::memcpy(copy, all.data(), all.size() * sizeof(int64_t));
    *steps = copy;
    *count = all.size();
  });
}

cairn_status cairn_manager_local_steps(cairn_manager* manager, int64_t** steps, size_t* count) {
  return guarded(__func__, [&] {
    out_param(steps, "steps");
    out_param(count, "count");
    *steps = nullptr;
    *count = 0;
    const auto local = manager_of(manager).local_steps();
    if (local.empty()) return;
    auto* copy = static_cast<int64_t*>(std::malloc(local.size() * sizeof(int64_t)));
    if (copy == nullptr) throw std::bad_alloc();
    std::memcpy(copy, local.data(), local.size() * sizeof(int64_t));
    *steps = copy;
    *count = local.size();
  });
}

cairn_status cairn_manager_last_restore_level(const cairn_manager* manager, char* level,
                                              size_t size, int* rebuilt_nodes) {
  return guarded(__func__, [&] {
    out_param(level, "level");
    out_param(rebuilt_nodes, "rebuilt_nodes");
    if (size == 0) throw cairn::InvalidArgument("size is 0: no room for the level's name");
    const cairn::LevelRestore last = deref(manager, "manager").manager->last_restore();
    const std::size_t n = std::min(last.level.size(), size - 1);
    std::memcpy(level, last.level.data(), n);
    level[n] = '\0';
    *rebuilt_nodes = static_cast<int>(last.rebuilt_nodes.size());
  });
}

cairn_status cairn_manager_drain(cairn_manager* manager, int* drained) {
  return guarded(__func__, [&] {
    out_param(drained, "drained");
    *drained = manager_of(manager).drain() ? 1 : 0;
  });
}

cairn_status cairn_manager_reload(cairn_manager* manager) {
  return guarded(__func__, [&] { manager_of(manager).reload(); });
}

cairn_status cairn_manager_should_save(cairn_manager* manager, int64_t step, int* result) {
  return guarded(__func__, [&] {
    out_param(result, "result");
    *result = manager_of(manager).should_save(step) ? 1 : 0;
  });
}

cairn_status cairn_manager_reached_preemption(cairn_manager* manager, int64_t step, int* result) {
  return guarded(__func__, [&] {
    out_param(result, "result");
    *result = manager_of(manager).reached_preemption(step) ? 1 : 0;
  });
}

cairn_status cairn_manager_wait_until_finished(cairn_manager* manager) {
  return guarded(__func__, [&] { manager_of(manager).wait_until_finished(); });
}

cairn_status cairn_manager_check_for_errors(cairn_manager* manager) {
  return guarded(__func__, [&] { manager_of(manager).check_for_errors(); });
}

cairn_status cairn_manager_is_saving_in_progress(const cairn_manager* manager, int* result) {
  return guarded(__func__, [&] {
    out_param(result, "result");
    *result = deref(manager, "manager").manager->is_saving_in_progress() ? 1 : 0;
  });
}

cairn_status cairn_manager_delete_step(cairn_manager* manager, int64_t step) {
  return guarded(__func__, [&] { manager_of(manager).delete_step(step); });
}

cairn_status cairn_manager_metrics(cairn_manager* manager, int64_t step, char** json_text) {
  return json_out(__func__, json_text,
                  [&] { return boost::json::value(manager_of(manager).metrics(step)); });
}

cairn_status cairn_manager_custom_metadata(cairn_manager* manager, int64_t step, char** json_text) {
  return json_out(__func__, json_text, [&] {
    const auto meta = manager_of(manager).metadata(step);
    const auto* custom = meta.if_contains("custom");
    if (custom == nullptr || !custom->is_object()) return boost::json::value(nullptr);
    const auto* user = custom->as_object().if_contains(cairn::step_custom_key::kUser);
    return user != nullptr ? *user : boost::json::value(nullptr);
  });
}

cairn_status cairn_manager_step_metadata(cairn_manager* manager, int64_t step, char** json_text) {
  return json_out(__func__, json_text,
                  [&] { return boost::json::value(manager_of(manager).metadata(step)); });
}

cairn_status cairn_manager_root_metadata(cairn_manager* manager, char** json_text) {
  return json_out(__func__, json_text,
                  [&] { return boost::json::value(manager_of(manager).metadata()); });
}

cairn_status cairn_manager_item_metadata(cairn_manager* manager, int64_t step, char** json_text) {
  return json_out(__func__, json_text, [&] { return manager_of(manager).item_metadata(step); });
}

cairn_status cairn_manager_step_path(const cairn_manager* manager, int64_t step, char** path) {
  return guarded(__func__, [&] {
    out_param(path, "path");
    *path = cairn::capi::copy_out(deref(manager, "manager").manager->step_path(step).string());
  });
}

cairn_status cairn_manager_close(cairn_manager* manager) {
  return guarded(__func__, [&] { manager_of(manager).close(); });
}

}  // extern "C"
