// CompositeHandler: several named items, each in its own sub-directory with its own handler.
#include <boost/json.hpp>
#include <cairn/handlers.hpp>
#include <fmt/format.h>

#include "base/durable_file.hpp"
#include "base/fnv1a.hpp"
#include "base/json_read.hpp"
#include "base/log.hpp"

namespace cairn {
namespace {

constexpr std::string_view kItemsKey = CompositeHandler::kItemsKey;
constexpr std::string_view kCustomMetadataKey = CompositeHandler::kItemCustomMetadataKey;

class CompositePendingSave final : public PendingSave {
 public:
  void add(std::string name, std::string type, std::unique_ptr<PendingSave> item) {
    items_.push_back({std::move(name), std::move(type), std::move(item)});
  }

  void stage() override {
    for (auto& item : items_) {
      try {
        item.pending->stage();
      } catch (const std::exception& e) {
        item.pending->fail(e);
      }
    }
  }

  void write(const Comm* comm) override {
    for (auto& item : items_) item.pending->write(comm);
  }

  void finish(const Comm& comm) override {
    for (auto& item : items_) item.pending->finish(comm);
  }

  std::uint64_t bytes_written() const noexcept override {
    std::uint64_t total = 0;
    for (const auto& item : items_) total += item.pending->bytes_written();
    return total;
  }

  void fail(const std::exception& error) noexcept override {
    for (auto& item : items_) item.pending->fail(error);
  }

  boost::json::object step_metadata() const override {
    boost::json::object items;
    for (const auto& item : items_) items[item.name] = item.type;
    boost::json::object out{{kItemsKey, std::move(items)}};
    if (!custom_.empty()) out[kCustomMetadataKey] = custom_;
    return out;
  }

  void set_custom_metadata(const Composite::CustomMetadata& custom) {
    for (const auto& [name, metadata] : custom) custom_[name] = metadata;
  }

 private:
  struct Item {
    std::string name;
    std::string type;
    std::unique_ptr<PendingSave> pending;
  };
  std::vector<Item> items_;
  boost::json::object custom_;
};

const Composite& composite_args(const CheckpointArgs& args) {
  if (const auto* typed = dynamic_cast<const Composite*>(&args)) return *typed;
  throw InvalidArgument(
      fmt::format("the cairn.composite handler takes cairn::Composite arguments, not arguments for "
                  "handler '{}'",
                  args.handler_type()));
}

std::uint64_t hash_names(const std::vector<std::string>& names) {
  base::Fnv1a h;
  for (const auto& name : names) h.str(name);
  return h.value();
}

}  // namespace

CompositeHandler::CompositeHandler(
    std::map<std::string, std::shared_ptr<CheckpointHandler>> handlers,
    std::set<std::string> item_names, std::shared_ptr<const HandlerRegistry> registry)
    : registry_(std::move(registry)) {
  for (auto& [name, handler] : handlers) {
    validate_item_name(name);
    if (!handler) throw InvalidArgument(fmt::format("item '{}' has a null handler", name));
    handlers_.emplace(name, std::move(handler));
  }
  for (const auto& name : item_names) {
    validate_item_name(name);
    names_.insert(name);
  }
  if (!names_.empty()) {
    for (const auto& [name, handler] : handlers_) {
      if (!names_.contains(name)) {
        throw InvalidArgument(
            fmt::format("item '{}' has a handler but is not one of the item "
                        "names",
                        name));
      }
    }
  }
}

const HandlerRegistry& CompositeHandler::registry() const noexcept {
  return registry_ ? *registry_ : HandlerRegistry::global();
}

std::shared_ptr<CheckpointHandler> CompositeHandler::handler(std::string_view name) const {
  auto it = handlers_.find(name);
  return it == handlers_.end() ? nullptr : it->second;
}

std::shared_ptr<CheckpointHandler> CompositeHandler::resolve(const std::string& name,
                                                             std::string_view type) {
  if (!names_.empty() && !names_.contains(name)) {
    throw InvalidArgument(
        fmt::format("item '{}' is not one of the items this checkpoint was "
                    "set up with",
                    name));
  }
  auto it = handlers_.find(name);
  if (it != handlers_.end()) {
    if (it->second->type_name() != type) {
      throw InvalidArgument(
          fmt::format("item '{}' is handled by '{}', but the arguments are for "
                      "'{}'; an item keeps the handler of its first use",
                      name, it->second->type_name(), type));
    }
    return it->second;
  }
  auto created = registry().create(name, type);
  handlers_.emplace(name, created);
  return created;
}

std::unique_ptr<PendingSave> CompositeHandler::async_save(const Comm& comm,
                                                          const std::filesystem::path& dir,
                                                          const CheckpointArgs& args,
                                                          const AsyncContext& context) {
  const Composite& composite = composite_args(args);
  // Items given null arguments are left out; which ones is part of what ranks agree on.
  std::vector<std::string> names;
  std::vector<std::string> agreed;
  for (const auto& [name, item] : composite.items()) {
    if (item) names.push_back(name);
    agreed.push_back(item ? name : name + "=null");
  }
  comm.agree({.operation = "composite save", .structure = hash_names(agreed)});

  // Resolving handlers and creating the item directories can fail on one rank only.
  std::vector<std::shared_ptr<CheckpointHandler>> handlers;
  comm.run_all("composite save:", [&] {
    for (const auto& [name, item] : composite.items()) {
      if (item) {
        handlers.push_back(resolve(name, item->handler_type()));
      } else if (!handler(name) && !names_.contains(name)) {
        throw InvalidArgument(fmt::format(
            "item '{}' is given no arguments, and no handler is configured for it: give it "
            "save arguments, or the CompositeHandler (the manager's item handlers) its handler",
            name));
      }
    }
    if (comm.is_primary()) {
      for (const auto& name : names) base::create_directories(dir / name);
    }
  });

  auto pending = std::make_unique<CompositePendingSave>();
  Composite::CustomMetadata custom;
  for (const auto& [name, metadata] : composite.custom_metadata()) {
    if (composite.find(name) != nullptr) custom[name] = metadata;
  }
  pending->set_custom_metadata(custom);
  std::size_t k = 0;
  for (const auto& [name, item] : composite.items()) {
    if (!item) {
      // Orbax leaves an item given None out of the save: there is nothing to write.
      base::log::debug("composite.item_skipped", "item=\"{}\" path=\"{}\"", name, dir.string());
      continue;
    }
    const auto& handler = handlers[k++];
    AsyncContext item_context = context;  // an incremental save: the same item of the base
    if (!context.incremental_base.empty()) item_context.incremental_base /= name;
    pending->add(name, std::string(handler->type_name()),
                 handler->async_save(comm, dir / name, *item, item_context));
  }
  return pending;
}

namespace {

// What a composite checkpoint directory holds: the item directories present, and what its
// cairn-step.json records of the items (handler types, custom metadata).
struct OnDisk {
  std::set<std::string> present;
  std::map<std::string, std::string> types;
  boost::json::object custom;
};

// The primary looks, every rank gets the verdict. Collective.
OnDisk look_at(const Comm& comm, const std::filesystem::path& dir) {
  boost::json::object seen;
  comm.run_all(fmt::format("composite checkpoint '{}':", dir.string()), [&] {
    if (!comm.is_primary()) return;
    boost::json::array present;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      if (entry.is_directory())
        present.push_back(boost::json::string(entry.path().filename().string()));
    }
    if (ec) {
      throw IoError(dir.string(),
                    fmt::format("listing '{}' failed: {}", dir.string(), ec.message()));
    }
    seen["present"] = std::move(present);
    const auto step_file = dir / kStepMetadataFile;
    if (std::filesystem::exists(step_file)) {
      boost::json::value meta;
      try {
        meta = base::parse_json(base::read_small_file(step_file), step_file, {.max_depth = 256});
      } catch (const FormatError&) {
        // Damaged: the handler types are then unknown, as when the file is absent.
      }
      if (meta.is_object()) {
        for (const std::string_view key : {kItemsKey, kCustomMetadataKey}) {
          if (const auto* value = meta.get_object().if_contains(key); value && value->is_object())
            seen[key] = *value;
        }
      }
    }
  });
  seen = comm.broadcast_json(seen).as_object();
  OnDisk out;
  for (const auto& name : seen["present"].as_array()) {
    out.present.insert(std::string(name.as_string()));
  }
  if (const auto* types = seen.if_contains(kItemsKey)) {
    for (const auto& [name, type] : types->as_object()) {
      if (type.is_string()) out.types[std::string(name)] = std::string(type.as_string());
    }
  }
  if (const auto* custom = seen.if_contains(kCustomMetadataKey)) {
    for (const auto& [name, metadata] : custom->as_object()) {
      if (metadata.is_object()) out.custom[name] = metadata;
    }
  }
  return out;
}

[[noreturn]] void throw_no_handler(const std::string& name, const std::filesystem::path& dir,
                                   const std::map<std::string, std::string>& recorded) {
  const auto it = recorded.find(name);
  throw InvalidArgument(fmt::format(
      "item '{}' of the checkpoint '{}' cannot be restored without arguments: its handler "
      "{}; pass restore arguments for it, give the CompositeHandler its handler, or "
      "register the handler type",
      name, dir.string(),
      it == recorded.end() ? std::string("is not recorded in cairn-step.json")
                           : fmt::format("'{}' is not registered", it->second)));
}

}  // namespace

std::shared_ptr<CheckpointHandler> CompositeHandler::known_or_recorded(
    const std::string& name, const std::map<std::string, std::string>& recorded) {
  if (auto known = handler(name)) return known;
  auto it = recorded.find(name);
  if (it == recorded.end() || !registry().contains(name, it->second)) return nullptr;
  return resolve(name, it->second);
}

std::any CompositeHandler::restore(const Comm& comm, const std::filesystem::path& dir,
                                   const CheckpointArgs* args) {
  const Composite* composite = args ? &composite_args(*args) : nullptr;
  if (composite && composite->items().empty()) composite = nullptr;  // every item, as null args

  const OnDisk disk = look_at(comm, dir);

  // Which items, and with which handler; the same decisions on every rank.
  std::vector<std::pair<std::string, std::shared_ptr<CheckpointHandler>>> plan;
  if (composite) {
    for (const auto& [name, item] : composite->items()) {
      if (!disk.present.contains(name)) {
        base::log::info("composite.item_absent", "item=\"{}\" path=\"{}\"", name, dir.string());
        continue;
      }
      if (!item) {
        // Orbax's None: the configured or recorded handler reads the item as saved.
        auto item_handler = known_or_recorded(name, disk.types);
        if (!item_handler) throw_no_handler(name, dir, disk.types);
        plan.emplace_back(name, std::move(item_handler));
        continue;
      }
      if (auto it = disk.types.find(name);
          it != disk.types.end() && it->second != item->handler_type()) {
        throw InvalidArgument(
            fmt::format("item '{}' was saved by '{}', but the arguments are for '{}'", name,
                        it->second, item->handler_type()));
      }
      plan.emplace_back(name, resolve(name, item->handler_type()));
    }
  } else {
    for (const auto& name : disk.present) {
      auto item_handler = known_or_recorded(name, disk.types);
      if (!item_handler) throw_no_handler(name, dir, disk.types);
      plan.emplace_back(name, std::move(item_handler));
    }
  }

  CompositeResult result;
  for (const auto& [name, item_handler] : plan) {
    const CheckpointArgs* item_args = composite ? composite->find(name) : nullptr;
    result.set(name, item_handler->restore(comm, dir / name, item_args));
    if (const auto* custom = disk.custom.if_contains(name)) {
      result.set_custom_metadata(name, custom->as_object());
    }
  }
  return result;
}

boost::json::value CompositeHandler::metadata(const Comm& comm, const std::filesystem::path& dir) {
  const OnDisk disk = look_at(comm, dir);
  boost::json::object items;
  for (const auto& name : disk.present) {
    auto item_handler = known_or_recorded(name, disk.types);
    items[name] = item_handler ? item_handler->metadata(comm, dir / name) : boost::json::value();
  }
  boost::json::object types;
  for (const auto& [name, item_handler] : handlers_) types[name] = item_handler->type_name();
  return {{"handler", type_name()},
          {"handlers", std::move(types)},
          {"items", std::move(items)},
          {"custom_metadata", disk.custom}};
}

void CompositeHandler::finalize(const Comm& comm, const std::filesystem::path& dir) {
  for (const auto& [name, handler] : handlers_) handler->finalize(comm, dir / name);
}

void CompositeHandler::close() {
  for (const auto& [name, handler] : handlers_) handler->close();
}

}  // namespace cairn
