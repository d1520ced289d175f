// Checkpointer: the commit protocol around one synchronous handler save.
#include <cairn/checkpointer.hpp>
#include <fmt/format.h>

#include "base/durable_file.hpp"
#include "checkpoint/commit.hpp"
#include "checkpoint/file_options.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/save_flight.hpp"

namespace cairn {

bool is_committed(const std::filesystem::path& dir) noexcept {
  std::error_code ec;
  return std::filesystem::is_directory(dir, ec) && std::filesystem::exists(dir / kCommitMarker, ec);
}

bool is_checkpoint_directory(const std::filesystem::path& dir) noexcept {
  try {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) return false;
    const auto marker = dir / kCommitMarker;
    if (std::filesystem::exists(std::filesystem::symlink_status(marker, ec))) {
      // The marker's own reader: a file that only bears the name is no marker.
      if (!std::filesystem::is_regular_file(marker, ec)) return false;
      const auto listed =
          checkpoint::parse_commit_marker(base::read_small_file(marker, 1 << 24), marker);
      bool step_listed = false;
      for (const auto& entry : listed) {
        if (!std::filesystem::is_regular_file(dir / entry.path, ec)) return false;
        step_listed = step_listed || entry.path == kStepMetadataFile;
      }
      return step_listed;
    }
    // A save that died before its marker, or lost it: cairn's own step metadata.
    if (!std::filesystem::is_regular_file(dir / kStepMetadataFile, ec)) return false;
    (void)read_step_metadata(dir);
    return true;
  } catch (...) {
    return false;
  }
}

bool looks_like_checkpoint_directory(const std::filesystem::path& dir) noexcept {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return false;
  return std::filesystem::is_regular_file(dir / kCommitMarker, ec) ||
         std::filesystem::is_regular_file(dir / kStepMetadataFile, ec);
}

Checkpointer::Checkpointer(const Comm& comm, std::shared_ptr<CheckpointHandler> handler,
                           CheckpointerOptions options)
    : Checkpointer(comm, std::move(handler), std::move(options), "cairn::Checkpointer") {}

Checkpointer::Checkpointer(const Comm& comm, std::shared_ptr<CheckpointHandler> handler,
                           CheckpointerOptions options, std::string_view who)
    : comm_(comm.get(), comm.options()),
      handler_(std::move(handler)),
      options_(std::move(options)) {
  if (!handler_) throw InvalidArgument(fmt::format("{}: the handler is null", who));
  comm_.run_all(fmt::format("{}:", who),
                [&] { (void)checkpoint::resolve_group(options_.file_options.group); });
}

Checkpointer::~Checkpointer() = default;

void Checkpointer::save(const std::filesystem::path& dir, const CheckpointArgs& args,
                        const CheckpointSaveOptions& options) {
  // The async pipeline, waited for: the writes run on a thread of their own so that a rank
  // stuck in them still takes part in the verdict in time; a stuck rank then waits for them
  // (when `flight` goes) before its save throws.
  checkpoint::SaveFlight flight(comm_, handler_, dir, args, options, {.zero_copy = true});
  const auto start = std::chrono::steady_clock::now();
  (void)flight.stage();
  flight.start_writes();
  const auto deadline = checkpoint::write_deadline(comm_, options_.write_timeout);
  (void)flight.await_writes(deadline);
  flight.record().timings["write_s"] = checkpoint::seconds_since(start);
  flight.complete(comm_, options_.file_options, deadline);
}

std::any Checkpointer::restore(const std::filesystem::path& dir, const CheckpointArgs* args) {
  (void)checkpoint::open_committed(comm_, dir, args);
  return handler_->restore(comm_, dir, args);
}

boost::json::value Checkpointer::metadata(const std::filesystem::path& dir) {
  boost::json::object step = checkpoint::open_committed(comm_, dir).json;
  step["item"] = handler_->metadata(comm_, dir);
  return step;
}

// A synchronous save is committed when save() returns: nothing is ever in flight.
void Checkpointer::wait_until_finished() {}

bool Checkpointer::is_saving_in_progress() const noexcept { return false; }

void Checkpointer::check_for_errors() {}

void Checkpointer::close() {
  if (closed_) return;
  closed_ = true;
  handler_->close();
}

void Checkpointer::throw_wrong_result(const char* held, const char* wanted) {
  throw InvalidArgument(
      fmt::format("the handler restored a value of type {}, not the requested {}", held, wanted));
}

}  // namespace cairn
