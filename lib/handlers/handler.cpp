// The handler interface's defaults, the registry, composite arguments and results.
#include <cairn/handler.hpp>
#include <cairn/handlers.hpp>
#include <fmt/format.h>

namespace cairn {

void CheckpointHandler::save(const Comm& comm, const std::filesystem::path& dir,
                             const CheckpointArgs& args) {
  // A sync save is an async save run to the end on this thread, writing from the caller's
  // memory.
  auto pending = async_save(comm, dir, args, {.staging = nullptr, .zero_copy = true});
  try {
    pending->stage();
  } catch (const std::exception& e) {
    pending->fail(e);
  }
  pending->write(&comm);
  pending->finish(comm);
}

void CheckpointHandler::finalize(const Comm&, const std::filesystem::path&) {}

HandlerRegistry::HandlerRegistry() : fallback_(&global()) {}

HandlerRegistry::HandlerRegistry(GlobalTag) noexcept {}

HandlerRegistry& HandlerRegistry::global() noexcept {
  static HandlerRegistry* registry = [] {
    // Never destroyed: handlers may be made during exit.
    auto* r = new HandlerRegistry(GlobalTag{});
    r->add(std::string(ArrayTreeHandler::kTypeName),
           [] { return std::make_shared<ArrayTreeHandler>(); });
    r->add(std::string(JsonHandler::kTypeName), [] { return std::make_shared<JsonHandler>(); });
    r->add(std::string(BytesHandler::kTypeName), [] { return std::make_shared<BytesHandler>(); });
    r->add(std::string(CompositeHandler::kTypeName),
           [] { return std::make_shared<CompositeHandler>(); });
    return r;
  }();
  return *registry;
}

void HandlerRegistry::add(std::string type_name, Factory factory) {
  std::lock_guard lock(mutex_);
  factories_.insert_or_assign(std::move(type_name), std::move(factory));
}

void HandlerRegistry::add(std::string item_name, std::string type_name, Factory factory) {
  std::lock_guard lock(mutex_);
  item_factories_.insert_or_assign({std::move(item_name), std::move(type_name)},
                                   std::move(factory));
}

HandlerRegistry::Factory HandlerRegistry::find(const std::string_view* item_name,
                                               std::string_view type_name) const {
  {
    std::lock_guard lock(mutex_);
    if (item_name != nullptr) {
      auto it = item_factories_.find({std::string(*item_name), std::string(type_name)});
      if (it != item_factories_.end()) return it->second;
    }
    auto it = factories_.find(type_name);
    if (it != factories_.end()) return it->second;
  }
  return fallback_ != nullptr ? fallback_->find(item_name, type_name) : Factory{};
}

std::shared_ptr<CheckpointHandler> HandlerRegistry::create(std::string_view type_name) const {
  Factory factory = find(nullptr, type_name);
  if (!factory) {
    throw NotFound(std::string(type_name),
                   fmt::format("no checkpoint handler is registered for type '{}'; register "
                               "one with cairn::HandlerRegistry::global().add()",
                               type_name));
  }
  return factory();
}

std::shared_ptr<CheckpointHandler> HandlerRegistry::create(std::string_view item_name,
                                                           std::string_view type_name) const {
  Factory factory = find(&item_name, type_name);
  if (!factory) {
    throw NotFound(std::string(type_name),
                   fmt::format("no checkpoint handler is registered for item '{}' of type '{}'; "
                               "register one with cairn::HandlerRegistry::add()",
                               item_name, type_name));
  }
  return factory();
}

bool HandlerRegistry::contains(std::string_view type_name) const noexcept {
  try {
    return static_cast<bool>(find(nullptr, type_name));
  } catch (...) {
    return false;
  }
}

bool HandlerRegistry::contains(std::string_view item_name,
                               std::string_view type_name) const noexcept {
  try {
    return static_cast<bool>(find(&item_name, type_name));
  } catch (...) {
    return false;
  }
}

void validate_item_name(std::string_view name) {
  if (name.starts_with("__")) {
    throw InvalidArgument(
        fmt::format("item name '{}' starts with \"__\", which cairn reserves", name));
  }
  if (name.find('/') != std::string_view::npos) {
    throw InvalidArgument(fmt::format("item name '{}' contains '/'; use a single name", name));
  }
  if (auto problem = leaf_path_problem(name)) {
    throw InvalidArgument(fmt::format("item name '{}' is not valid: {}", name, *problem));
  }
}

Composite::Composite(std::initializer_list<Items::value_type> items)
    : Composite(Items(items.begin(), items.end())) {}

Composite::Composite(Items items, CustomMetadata custom_metadata)
    : items_(std::move(items)), custom_(std::move(custom_metadata)) {
  for (const auto& [name, args] : items_) {
    validate_item_name(name);  // null arguments are allowed: the item's handler decides
  }
  for (const auto& [name, metadata] : custom_) {
    if (!items_.contains(name)) {
      throw InvalidArgument(fmt::format(
          "custom metadata is given for item '{}', which is not one of the items", name));
    }
  }
}

std::optional<std::set<std::string>> Composite::item_names() const {
  std::set<std::string> names;
  for (const auto& [name, item] : items_) names.insert(name);
  return names;
}

std::shared_ptr<const CheckpointArgs> Composite::with_load_and_broadcast() const {
  Items items = items_;
  bool changed = false;
  for (auto& [name, item] : items) {
    if (auto replaced = item ? item->with_load_and_broadcast() : nullptr) {
      item = std::move(replaced);
      changed = true;
    }
  }
  if (!changed) return nullptr;
  return std::make_shared<Composite>(std::move(items), custom_);
}

const CheckpointArgs* Composite::find(std::string_view name) const noexcept {
  auto it = items_.find(std::string(name));
  return it == items_.end() ? nullptr : it->second.get();
}

bool CompositeResult::contains(std::string_view name) const noexcept {
  return items_.find(name) != items_.end();
}

boost::json::object CompositeResult::custom_metadata(std::string_view name) const {
  auto it = custom_.find(name);
  return it == custom_.end() ? boost::json::object{} : it->second;
}

std::vector<std::string> CompositeResult::names() const {
  std::vector<std::string> out;
  for (const auto& [name, value] : items_) out.push_back(name);
  return out;
}

const std::any& CompositeResult::at(std::string_view name) const {
  auto it = items_.find(name);
  if (it == items_.end()) {
    throw NotFound(std::string(name),
                   fmt::format("item '{}' was not restored (it is not in the checkpoint or was "
                               "not asked for)",
                               name));
  }
  return it->second;
}

void CompositeResult::throw_wrong_type(std::string_view name) const {
  throw InvalidArgument(fmt::format("item '{}' was restored as {}, not the type asked for", name,
                                    at(name).type().name()));
}

}  // namespace cairn
