// cairn tests — a handler that stores JSON items exactly as JsonHandler does, for tests that
// override its hooks (finalize(), close()) to see how the checkpointers call them.
#pragma once

#include <cairn/handlers.hpp>

#include <any>
#include <filesystem>
#include <memory>
#include <string_view>

namespace cairn::testing {

/// JsonHandler's save, restore and metadata, with the hooks left to a subclass.
class JsonForwardingHandler : public CheckpointHandler {
 public:
  std::string_view type_name() const noexcept override { return inner_.type_name(); }
  std::unique_ptr<PendingSave> async_save(const Comm& comm, const std::filesystem::path& dir,
                                          const CheckpointArgs& args,
                                          const AsyncContext& context) override {
    return inner_.async_save(comm, dir, args, context);
  }
  std::any restore(const Comm& comm, const std::filesystem::path& dir,
                   const CheckpointArgs* args) override {
    return inner_.restore(comm, dir, args);
  }
  boost::json::value metadata(const Comm& comm, const std::filesystem::path& dir) override {
    return inner_.metadata(comm, dir);
  }

 private:
  JsonHandler inner_;
};

}  // namespace cairn::testing
