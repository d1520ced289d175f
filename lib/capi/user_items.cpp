// cairn C ABI — user items: the handler that calls a user item's C callbacks, and its
// registration under the user's type name.
#include "capi/user_items.hpp"

#include <boost/json/object.hpp>
#include <cairn/error.hpp>
#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <system_error>

#include "base/durable_file.hpp"
#include "base/first_error.hpp"

namespace cairn::capi {
namespace {

const UserItemArgs& user_args(const CheckpointArgs& args, std::string_view type) {
  if (const auto* typed = dynamic_cast<const UserItemArgs*>(&args)) return *typed;
  throw InvalidArgument(fmt::format(
      "the user-item handler '{}' cannot take arguments for handler '{}'; add the item with "
      "cairn_items_add_user",
      type, args.handler_type()));
}

// Every rank's save callback runs in stage(), on the caller's thread, so that the caller's
// data may change once the save call returns; finish() agrees on the outcome.
class UserItemPendingSave final : public PendingSave {
 public:
  UserItemPendingSave(const Comm& comm, std::filesystem::path dir, const UserItemArgs& args)
      : rank_(comm.rank()), dir_(std::move(dir)), args_(args) {}

  void stage() override {
    if (error_.failed()) return;
    const int status = args_.save(dir_.c_str(), rank_, args_.user_data);
    if (status != 0) {
      throw IoError(dir_.string(),
                    fmt::format("item '{}' (user type '{}'): the save callback returned {} on "
                                "rank {}",
                                args_.item, args_.type, status, rank_));
    }
  }

  void write(const Comm*) override {}

  void finish(const Comm& comm) override {
    error_.report(comm);
    comm.run_all(fmt::format("item '{}':", args_.item), [&] {
      if (comm.is_primary()) base::sync_directory(dir_);
    });
  }

  std::uint64_t bytes_written() const noexcept override { return 0; }

  void fail(const std::exception& error) noexcept override { error_.record(error); }

 private:
  int rank_;
  std::filesystem::path dir_;
  UserItemArgs args_;
  base::FirstError error_;
};

// Saves and restores a user item by calling the C callbacks its arguments carry.
class UserItemHandler final : public CheckpointHandler {
 public:
  explicit UserItemHandler(std::string type) : type_(std::move(type)) {}

  std::string_view type_name() const noexcept override { return type_; }

  std::unique_ptr<PendingSave> async_save(const Comm& comm, const std::filesystem::path& dir,
                                          const CheckpointArgs& args,
                                          const AsyncContext&) override {
    const auto& typed = user_args(args, type_);
    comm.agree({.operation = "user item save " + typed.item + " of type " + type_});
    comm.run_all(fmt::format("item '{}':", typed.item), [&] {
      if (typed.save == nullptr) {
        throw InvalidArgument(fmt::format(
            "user item '{}' has no save callback (it was added with a NULL save_fn)", typed.item));
      }
    });
    return std::make_unique<UserItemPendingSave>(comm, dir, typed);
  }

  std::any restore(const Comm& comm, const std::filesystem::path& dir,
                   const CheckpointArgs* args) override {
    const UserItemArgs* typed = args ? &user_args(*args, type_) : nullptr;
    const std::string item = dir.filename().string();
    comm.run_all(fmt::format("item '{}':", item), [&] {
      if (typed == nullptr || typed->restore == nullptr) {
        throw InvalidArgument(fmt::format(
            "user item '{}' of type '{}' is restored by its restore callback: add it with "
            "cairn_items_add_user and a restore_fn",
            item, type_));
      }
      const int status = typed->restore(dir.c_str(), comm.rank(), typed->user_data);
      if (status != 0) {
        throw IoError(dir.string(),
                      fmt::format("item '{}' (user type '{}'): the restore callback returned {} "
                                  "on rank {}",
                                  typed->item, type_, status, comm.rank()));
      }
    });
    return UserItemRestored{};
  }

  // The files and bytes under the item's directory, counted by the primary.
  boost::json::value metadata(const Comm& comm, const std::filesystem::path& dir) override {
    boost::json::object counts;
    comm.run_all(fmt::format("metadata of '{}':", dir.string()), [&] {
      if (!comm.is_primary()) return;
      std::uint64_t files = 0;
      std::uint64_t bytes = 0;
      std::error_code ec;
      for (const auto& entry : std::filesystem::recursive_directory_iterator(dir, ec)) {
        if (!entry.is_regular_file()) continue;
        ++files;
        bytes += entry.file_size();
      }
      if (ec) {
        throw IoError(dir.string(),
                      fmt::format("listing '{}' failed: {}", dir.string(), ec.message()));
      }
      counts = {{"files", files}, {"bytes", bytes}};
    });
    auto shared = comm.broadcast_json(counts).as_object();
    shared["handler"] = type_;
    return shared;
  }

 private:
  std::string type_;
};

}  // namespace

void register_user_item_type(const std::string& type_name) {
  static std::mutex mutex;
  static std::set<std::string, std::less<>> registered;
  if (type_name.empty()) throw InvalidArgument("type_name is empty");
  if (type_name.starts_with("cairn.")) {
    throw InvalidArgument(fmt::format(
        "type_name '{}' starts with \"cairn.\", which names cairn's own handlers", type_name));
  }
  std::lock_guard lock(mutex);
  if (registered.contains(type_name)) return;
  auto& registry = HandlerRegistry::global();
  if (registry.contains(type_name)) {
    throw InvalidArgument(fmt::format(
        "type_name '{}' is already registered for another checkpoint handler", type_name));
  }
  registry.add(type_name, [type_name] { return std::make_shared<UserItemHandler>(type_name); });
  registered.insert(type_name);
}

}  // namespace cairn::capi
