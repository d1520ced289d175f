// Checkpointer: the commit protocol around one synchronous handler save.
#include <cairn/checkpointer.hpp>
#include <fmt/format.h>

#include "checkpoint/bounded_write.hpp"
#include "checkpoint/commit.hpp"
#include "checkpoint/file_options.hpp"

namespace cairn {

bool is_committed(const std::filesystem::path& dir) noexcept {
  std::error_code ec;
  return std::filesystem::is_directory(dir, ec) && std::filesystem::exists(dir / kCommitMarker, ec);
}

Checkpointer::Checkpointer(const Comm& comm, std::shared_ptr<CheckpointHandler> handler,
                           CheckpointerOptions options)
    : comm_(comm.get(), comm.options()),
      handler_(std::move(handler)),
      options_(std::move(options)) {
  if (!handler_) throw InvalidArgument("cairn::Checkpointer: the handler is null");
  comm_.run_all("cairn::Checkpointer:",
                [&] { (void)checkpoint::resolve_group(options_.file_options.group); });
}

Checkpointer::~Checkpointer() = default;

void Checkpointer::save(const std::filesystem::path& dir, const CheckpointArgs& args,
                        const CheckpointSaveOptions& options) {
  checkpoint::StepRecord record{.handler_type = std::string(handler_->type_name()),
                                .custom = options.custom_metadata,
                                .started = std::chrono::system_clock::now()};
  const auto tmp = checkpoint::begin_save(comm_, dir, options.force, handler_->type_name());
  try {
    auto start = std::chrono::steady_clock::now();
    auto pending = handler_->async_save(comm_, tmp, args,
                                        {.zero_copy = true, .provenance = options.provenance});
    try {
      pending->stage();
    } catch (const std::exception& e) {
      pending->fail(e);
    }
    {
      // The writes run on a thread of their own so that a rank stuck in them still takes
      // part in the verdict in time; a stuck rank then waits for them (the destructor of
      // `writing`) before its save throws.
      checkpoint::BoundedWrite writing([&pending] { pending->write(nullptr); });
      const auto deadline = checkpoint::write_deadline(comm_, options_.write_timeout);
      checkpoint::agree_writes_returned(comm_, writing.wait_for(deadline), dir, deadline);
      writing.join();
    }
    record.timings["write_s"] = checkpoint::seconds_since(start);
    start = std::chrono::steady_clock::now();
    pending->finish(comm_);
    record.timings["finish_s"] = checkpoint::seconds_since(start);
    record.bytes =
        static_cast<std::uint64_t>(comm_.sum(static_cast<std::int64_t>(pending->bytes_written())));
    record.item_metadata = pending->step_metadata();
    checkpoint::commit(comm_, tmp, dir, std::move(record), options.force, options_.file_options);
  } catch (...) {
    checkpoint::discard(comm_, tmp);
    throw;
  }
  handler_->finalize(comm_, dir);
}

std::any Checkpointer::restore(const std::filesystem::path& dir, const CheckpointArgs* args) {
  (void)checkpoint::open_committed(comm_, dir, args);
  return handler_->restore(comm_, dir, args);
}

boost::json::value Checkpointer::metadata(const std::filesystem::path& dir) {
  boost::json::object step = checkpoint::open_committed(comm_, dir);
  step["item"] = handler_->metadata(comm_, dir);
  return step;
}

void Checkpointer::throw_wrong_result(const char* held, const char* wanted) {
  throw InvalidArgument(
      fmt::format("the handler restored a value of type {}, not the requested {}", held, wanted));
}

}  // namespace cairn
