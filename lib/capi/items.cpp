// cairn C ABI — named items of composite checkpoints: trees, JSON values, bytes and user items,
// with custom metadata per item.
#include <boost/json/serialize.hpp>
#include <cairn/handlers.hpp>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "capi/handles.hpp"
#include "capi/items.hpp"
#include "capi/status.hpp"
#include "capi/user_items.hpp"

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

cairn_items::Item& item_at(cairn_items& items, const char* name) {
  return const_cast<cairn_items::Item&>(item_at(std::as_const(items), name));
}

// "a tree", "JSON", "bytes" or "a user item": what an item holds, for messages.
const char* kind_name(cairn_items::Kind kind) {
  switch (kind) {
    case cairn_items::Kind::tree: return "a tree";
    case cairn_items::Kind::json: return "JSON";
    case cairn_items::Kind::bytes: return "bytes";
    case cairn_items::Kind::user: return "a user item";
  }
  return "an item";
}

// Throws InvalidArgument "item '<name>' is <kind>, not <want>" unless `item` is of kind `want`.
void expect_kind(const cairn_items::Item& item, const char* name, cairn_items::Kind want) {
  if (item.kind == want) return;
  throw InvalidArgument("item '" + std::string(name) + "' is " + kind_name(item.kind) + ", not " +
                        kind_name(want));
}

cairn_items::Item& add_item(cairn_items& items, const char* name) {
  const std::string key(text(name, "name"));
  validate_item_name(key);
  auto [it, inserted] = items.items.try_emplace(key);
  if (!inserted) throw InvalidArgument("item '" + key + "' was already added");
  return it->second;
}

std::shared_ptr<const CheckpointArgs> user_args(const std::string& name,
                                                const cairn_items::Item& item) {
  return std::make_shared<UserItemArgs>(name, item.user_type, item.user_save, item.user_restore,
                                        item.user_data);
}

}  // namespace

Composite save_args(const cairn_items& items, const TreeSaveOptions& tree_options) {
  Composite::Items args;
  Composite::CustomMetadata custom;
  for (const auto& [name, item] : items.items) {
    if (!item.metadata.empty()) custom.emplace(name, item.metadata);
    switch (item.kind) {
      case cairn_items::Kind::json:
        if (!item.json) throw InvalidArgument("JSON item '" + name + "' has no value to save");
        args.emplace(name, std::make_shared<JsonSave>(*item.json));
        break;
      case cairn_items::Kind::bytes:
        if (!item.bytes) {
          throw InvalidArgument("bytes item '" + name +
                                "' was added for a restore and has no bytes to save");
        }
        args.emplace(name, std::make_shared<BytesSave>(*item.bytes, item.replicated));
        break;
      case cairn_items::Kind::user: args.emplace(name, user_args(name, item)); break;
      case cairn_items::Kind::tree: {
        if (item.tree == nullptr) {
          throw InvalidArgument("item '" + name + "' has no tree to save");
        }
        // Logical leaves are converted only when a save starts, not at every call.
        const cairn_tree* tree = item.tree;
        args.emplace(name, std::make_shared<ArrayTreeSave>(ArrayTreeSave::deferred(
                               [tree] { return tree->to_save(); }, tree_options)));
        break;
      }
    }
  }
  return Composite(std::move(args), std::move(custom));
}

Composite restore_args(const cairn_items& items, const TreeRestoreOptions& target_options,
                       const AsSavedOptions& as_saved) {
  Composite::Items args;
  for (const auto& [name, item] : items.items) {
    switch (item.kind) {
      case cairn_items::Kind::json: args.emplace(name, std::make_shared<JsonRestore>()); break;
      case cairn_items::Kind::bytes:
        args.emplace(name, item.from_rank ? std::make_shared<BytesRestore>(*item.from_rank)
                                          : std::make_shared<BytesRestore>());
        break;
      case cairn_items::Kind::user: args.emplace(name, user_args(name, item)); break;
      case cairn_items::Kind::tree:
        if (item.tree != nullptr) {
          item.tree->before_restore();
          args.emplace(name, std::make_shared<ArrayTreeRestore>(item.tree->tree, target_options));
        } else {
          args.emplace(name, std::make_shared<ArrayTreeRestore>(as_saved));
        }
        break;
    }
  }
  return Composite(std::move(args));
}

void take_results(cairn_items& items, const CompositeResult& result) {
  for (auto& [name, item] : items.items) {
    switch (item.kind) {
      case cairn_items::Kind::json: item.json = result.get<boost::json::value>(name); break;
      case cairn_items::Kind::bytes: item.bytes = result.get<std::vector<std::byte>>(name); break;
      case cairn_items::Kind::user:
        (void)result.get<UserItemRestored>(name);  // NotFound naming an item not restored
        break;
      case cairn_items::Kind::tree:
        if (item.tree != nullptr) {
          item.tree->tree = result.get<ArrayTree>(name);
          item.tree->after_restore();
        } else {
          item.restored = result.get<ArrayTree>(name);
        }
        break;
    }
    item.metadata = result.custom_metadata(name);
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
    item.kind = cairn_items::Kind::json;
    item.json = std::move(value);
  });
}

cairn_status cairn_items_get_json(const cairn_items* items, const char* name, char** json_text) {
  return guarded(__func__, [&] {
    out_param(json_text, "json_text");
    const auto& item = cairn::capi::item_at(deref(items, "items"), name);
    cairn::capi::expect_kind(item, name, cairn_items::Kind::json);
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
    cairn::capi::expect_kind(item, name, cairn_items::Kind::tree);
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

cairn_status cairn_items_add_bytes(cairn_items* items, const char* name, const void* data,
                                   size_t size, int replicated) {
  return guarded(__func__, [&] {
    auto& set = deref(items, "items");
    if (data == nullptr && size != 0) {
      throw cairn::InvalidArgument("data is NULL but size is " + std::to_string(size));
    }
    const auto* first = static_cast<const std::byte*>(data);
    std::vector<std::byte> bytes(first, first == nullptr ? first : first + size);
    auto& item = cairn::capi::add_item(set, name);
    item.kind = cairn_items::Kind::bytes;
    item.bytes = std::move(bytes);
    item.replicated = replicated != 0;
  });
}

cairn_status cairn_items_add_bytes_target(cairn_items* items, const char* name, int from_rank) {
  return guarded(__func__, [&] {
    auto& set = deref(items, "items");
    if (from_rank < CAIRN_BYTES_OWN_RANK) {
      throw cairn::InvalidArgument("from_rank " + std::to_string(from_rank) +
                                   " is not a rank (or CAIRN_BYTES_OWN_RANK)");
    }
    auto& item = cairn::capi::add_item(set, name);
    item.kind = cairn_items::Kind::bytes;
    if (from_rank != CAIRN_BYTES_OWN_RANK) item.from_rank = from_rank;
  });
}

cairn_status cairn_items_get_bytes(const cairn_items* items, const char* name, void** data,
                                   size_t* size) {
  return guarded(__func__, [&] {
    out_param(data, "data");
    out_param(size, "size");
    *data = nullptr;
    *size = 0;
    const auto& item = cairn::capi::item_at(deref(items, "items"), name);
    cairn::capi::expect_kind(item, name, cairn_items::Kind::bytes);
    if (!item.bytes) {
      throw cairn::NotFound(name, "bytes item '" + std::string(name) + "' holds no bytes yet");
    }
    if (item.bytes->empty()) return;
    void* copy = std::malloc(item.bytes->size());
    if (copy == nullptr) throw std::bad_alloc();
    std::memcpy(copy, item.bytes->data(), item.bytes->size());
    *data = copy;
    *size = item.bytes->size();
  });
}

cairn_status cairn_items_add_user(cairn_items* items, const char* name, const char* type_name,
                                  cairn_user_item_save_fn save_fn,
                                  cairn_user_item_restore_fn restore_fn, void* user_data) {
  return guarded(__func__, [&] {
    auto& set = deref(items, "items");
    const std::string type(text(type_name, "type_name"));
    if (save_fn == nullptr && restore_fn == nullptr) {
      throw cairn::InvalidArgument("user item '" + std::string(text(name, "name")) +
                                   "' has neither a save_fn nor a restore_fn");
    }
    cairn::capi::register_user_item_type(type);
    auto& item = cairn::capi::add_item(set, name);
    item.kind = cairn_items::Kind::user;
    item.user_type = type;
    item.user_save = save_fn;
    item.user_restore = restore_fn;
    item.user_data = user_data;
  });
}

cairn_status cairn_items_set_metadata(cairn_items* items, const char* name,
                                      const char* json_object) {
  return guarded(__func__, [&] {
    auto& set = deref(items, "items");
    auto value = cairn::capi::parse_json(json_object, "json_object");
    if (!value.is_object()) {
      throw cairn::InvalidArgument("the custom metadata of item '" +
                                   std::string(text(name, "name")) + "' is not a JSON object");
    }
    cairn::capi::item_at(set, name).metadata = std::move(value.as_object());
  });
}

cairn_status cairn_items_get_metadata(const cairn_items* items, const char* name,
                                      char** json_text) {
  return guarded(__func__, [&] {
    out_param(json_text, "json_text");
    *json_text = nullptr;
    const auto& item = cairn::capi::item_at(deref(items, "items"), name);
    *json_text = cairn::capi::copy_out(boost::json::serialize(item.metadata));
  });
}

}  // extern "C"
