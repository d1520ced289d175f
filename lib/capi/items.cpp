// cairn C ABI — named items of composite checkpoints.
#include <boost/json/serialize.hpp>
#include <cairn/handlers.hpp>

#include "capi/handles.hpp"
#include "capi/items.hpp"
#include "capi/status.hpp"

using cairn::capi::deref;
using cairn::capi::guarded;
using cairn::capi::out_param;
using cairn::capi::text;

namespace cairn::capi {
namespace {

const cairn_items::Item& item_at(const cairn_items& items, const char* name) {
  const auto key = text(name, "name");
  const auto it = items.items.find(key);
  if (it == items.items.end()) {
    throw NotFound(std::string(key), "there is no item '" + std::string(key) + "'");
  }
  return it->second;
}

cairn_items::Item& add_item(cairn_items& items, const char* name) {
  const std::string key(text(name, "name"));
  validate_item_name(key);
  auto [it, inserted] = items.items.try_emplace(key);
  if (!inserted) throw InvalidArgument("item '" + key + "' was already added");
  return it->second;
}

}  // namespace

Composite save_args(const cairn_items& items, const TreeSaveOptions& tree_options) {
  Composite::Items args;
  for (const auto& [name, item] : items.items) {
    if (item.is_json) {
      if (!item.json) throw InvalidArgument("JSON item '" + name + "' has no value to save");
      args.emplace(name, std::make_shared<JsonSave>(*item.json));
    } else {
      if (item.tree == nullptr) throw InvalidArgument("item '" + name + "' has no tree to save");
      // Logical leaves are converted only when a save starts, not at every call.
      const cairn_tree* tree = item.tree;
      args.emplace(name, std::make_shared<ArrayTreeSave>(ArrayTreeSave::deferred(
                             [tree] { return tree->to_save(); }, tree_options)));
    }
  }
  return Composite(std::move(args));
}

Composite restore_args(const cairn_items& items, const TreeRestoreOptions& target_options,
                       const AsSavedOptions& as_saved) {
  Composite::Items args;
  for (const auto& [name, item] : items.items) {
    if (item.is_json) {
      args.emplace(name, std::make_shared<JsonRestore>());
    } else if (item.tree != nullptr) {
      item.tree->before_restore();
      args.emplace(name, std::make_shared<ArrayTreeRestore>(item.tree->tree, target_options));
    } else {
      args.emplace(name, std::make_shared<ArrayTreeRestore>(as_saved));
    }
  }
  return Composite(std::move(args));
}

void take_results(cairn_items& items, const CompositeResult& result) {
  for (auto& [name, item] : items.items) {
    if (item.is_json) {
      item.json = result.get<boost::json::value>(name);
    } else if (item.tree != nullptr) {
      item.tree->tree = result.get<ArrayTree>(name);
      item.tree->after_restore();
    } else {
      item.restored = result.get<ArrayTree>(name);
    }
  }
}

}  // namespace cairn::capi

extern "C" {

cairn_status cairn_items_create(cairn_items** out) {
  return guarded(__func__, [&] {
    out_param(out, "out");
    *out = new cairn_items();
  });
}

void cairn_items_free(cairn_items* items) { delete items; }

cairn_status cairn_items_add_tree(cairn_items* items, const char* name, cairn_tree* tree) {
  return guarded(__func__, [&] {
    auto& item = cairn::capi::add_item(deref(items, "items"), name);
    item.tree = tree;
  });
}

cairn_status cairn_items_add_json(cairn_items* items, const char* name, const char* json_text) {
  return guarded(__func__, [&] {
    auto& set = deref(items, "items");
    std::optional<boost::json::value> value;
    if (json_text != nullptr) value = cairn::capi::parse_json(json_text, "json_text");
    auto& item = cairn::capi::add_item(set, name);
    item.is_json = true;
    item.json = std::move(value);
  });
}

cairn_status cairn_items_get_json(const cairn_items* items, const char* name, char** json_text) {
  return guarded(__func__, [&] {
    out_param(json_text, "json_text");
    const auto& item = cairn::capi::item_at(deref(items, "items"), name);
    if (!item.is_json) throw cairn::InvalidArgument("item '" + std::string(name) + "' is a tree");
    if (!item.json) {
      throw cairn::NotFound(name, "JSON item '" + std::string(name) + "' holds no value yet");
    }
    *json_text = cairn::capi::copy_out(boost::json::serialize(*item.json));
  });
}

cairn_status cairn_items_get_tree(const cairn_items* items, const char* name, cairn_tree** tree) {
  return guarded(__func__, [&] {
    out_param(tree, "tree");
    const auto& item = cairn::capi::item_at(deref(items, "items"), name);
    if (item.is_json) throw cairn::InvalidArgument("item '" + std::string(name) + "' is JSON");
    auto copy = std::make_unique<cairn_tree>();
    if (item.tree != nullptr) {
      copy->tree = item.tree->tree;
      copy->logical = item.tree->logical;
    } else if (item.restored) {
      copy->tree = *item.restored;
    } else {
      throw cairn::NotFound(name, "tree item '" + std::string(name) + "' holds no tree yet");
    }
    *tree = copy.release();
  });
}

}  // extern "C"
