#include "checkpoint/save_flight.hpp"

#include <cairn/error.hpp>
#include <fmt/format.h>

namespace cairn::checkpoint {

SaveFlight::SaveFlight(const Comm& comm, std::shared_ptr<CheckpointHandler> handler,
                       const std::filesystem::path& dir, const CheckpointArgs& args,
                       const CheckpointSaveOptions& options, const AsyncContext& context)
    : comm_(comm),
      handler_(std::move(handler)),
      dir_(dir),
      force_(options.force),
      record_{.handler_type = std::string(handler_->type_name()),
              .custom = options.custom_metadata,
              .started = std::chrono::system_clock::now()} {
  tmp_ = begin_save(comm, dir, options.force, handler_->type_name());
  try {
    AsyncContext with_provenance = context;
    with_provenance.provenance = options.provenance;
    with_provenance.incremental_base = options.incremental_base;
    pending_ = handler_->async_save(comm, tmp_, args, with_provenance);
  } catch (...) {
    discard(comm, tmp_);
    throw;
  }
}

SaveFlight::~SaveFlight() {
  writing_.reset();  // waits for writes that missed their deadline
  if (!settled_) discard(comm_, tmp_);
}

double SaveFlight::stage() noexcept {
  const auto start = std::chrono::steady_clock::now();
  try {
    pending_->stage();
  } catch (const std::exception& e) {
    pending_->fail(e);
  } catch (...) {
    pending_->fail(Error(ErrorCode::internal, "unknown exception while staging"));
  }
  return seconds_since(start);
}

void SaveFlight::start_writes(std::function<void()> after) {
  PendingSave& pending = *pending_;
  writing_ = std::make_unique<BoundedWrite>([&pending, after = std::move(after)] {
    pending.write(nullptr);
    if (after) after();
  });
}

bool SaveFlight::await_writes(std::chrono::milliseconds deadline) {
  writes_returned_ = writing_->wait_for(deadline);
  if (writes_returned_) writing_->join();
  return writes_returned_;
}

void SaveFlight::complete(const Comm& with, const FileOptions& files,
                          std::chrono::milliseconds deadline) {
  try {
    agree_writes_returned(with, writes_returned_, dir_, deadline);
    const auto start = std::chrono::steady_clock::now();
    pending_->finish(with);
    record_.timings["finish_s"] = seconds_since(start);
    record_.bytes =
        static_cast<std::uint64_t>(with.sum(static_cast<std::int64_t>(pending_->bytes_written())));
    record_.item_metadata = pending_->step_metadata();
    // As Orbax's checkpointers: the handler finalizes its item before the commit, in the
    // temporary directory, so that what it adds is committed with the rest and a failure
    // leaves nothing committed.
    const auto finalize_start = std::chrono::steady_clock::now();
    with.run_all(fmt::format("finalizing '{}':", dir_.string()),
                 [&] { handler_->finalize(with, tmp_); });
    record_.timings["finalize_s"] = seconds_since(finalize_start);
    commit(with, tmp_, dir_, std::move(record_), force_, files);
  } catch (...) {
    // Stuck writes may still add files to the temporary directory: it is removed once they
    // returned, when the flight goes (after every rank learnt of the failure).
    if (writes_returned_) {
      discard(with, tmp_);
      settled_ = true;
    }
    throw;
  }
  settled_ = true;
}

}  // namespace cairn::checkpoint
