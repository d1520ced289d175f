// cairn C ABI — user items: a checkpoint handler whose save and restore are C callbacks
// (cairn_items_add_user). The handler is stateless beyond its type name; the callbacks and the
// caller's pointer travel in the arguments, so one handler type serves every set of callbacks.
#pragma once

#include <cairn/cairn.h>
#include <cairn/handler.hpp>

#include <string>
#include <string_view>

namespace cairn::capi {

/// Save and restore arguments of a user item: its name (for messages), the type name it is
/// registered under, and the C callbacks with their user data (either callback may be null;
/// the handler then refuses the direction that needs it).
struct UserItemArgs final : CheckpointArgs {
  UserItemArgs(std::string item_, std::string type_, cairn_user_item_save_fn save_,
               cairn_user_item_restore_fn restore_, void* user_data_)
      : item(std::move(item_)),
        type(std::move(type_)),
        save(save_),
        restore(restore_),
        user_data(user_data_) {}
  std::string_view handler_type() const noexcept override { return type; }
  std::string item;
  std::string type;
  cairn_user_item_save_fn save;
  cairn_user_item_restore_fn restore;
  void* user_data;
};

/// What the handler of a user item restores: nothing but the fact that every rank's restore
/// callback succeeded (the callback put the values where the caller wanted them).
struct UserItemRestored {};

/// Registers the user-item handler under `type_name` in HandlerRegistry::global(), once. Not
/// collective. Throws InvalidArgument when the name is empty, starts with "cairn.", or is
/// registered for a handler of another kind.
void register_user_item_type(const std::string& type_name);

}  // namespace cairn::capi
