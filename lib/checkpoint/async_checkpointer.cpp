// AsyncCheckpointer: stage on the caller's thread, write and commit in the background.
#include <atomic>
#include <cairn/checkpointer.hpp>
#include <fmt/format.h>
#include <future>
#include <thread>

#include "base/fault.hpp"
#include "base/log.hpp"
#include "checkpoint/bounded_write.hpp"
#include "checkpoint/commit.hpp"
#include "checkpoint/file_options.hpp"

namespace cairn {

struct AsyncCheckpointer::Impl {
  // One save from the return of save() to its commit.
  struct Flight {
    std::filesystem::path dir;
    std::filesystem::path tmp;
    bool force = false;
    checkpoint::StepRecord record;
    std::unique_ptr<PendingSave> pending;
    std::thread thread;
    std::atomic<bool> done{false};
    // Seconds stage() took, set by the caller's thread once it returns: `record` belongs to
    // the background thread from its start, so the caller never touches it directly.
    std::promise<double> staged;
    std::optional<std::pair<ErrorCode, std::string>> error;  // set by the background thread
    // Whether the local writes returned within the write deadline (set by the background
    // thread before `done`).
    bool writes_returned = true;
    // The temporary directory to remove once the writes returned (a failed save whose writes
    // were stuck), with the Comm that says whether this rank is the primary.
    const Comm* discard_with = nullptr;
    // The local writes, on a thread of their own.
    std::unique_ptr<checkpoint::BoundedWrite> writing;

    Flight() = default;
    Flight(const Flight&) = delete;
    Flight& operator=(const Flight&) = delete;
    ~Flight() {
      writing.reset();  // waits for writes that missed their deadline
      if (discard_with) checkpoint::discard(*discard_with, tmp);
    }
  };

  Impl(const Comm& c, std::shared_ptr<CheckpointHandler> h, AsyncOptions o, CheckpointerOptions co)
      : comm(c.get(), c.options()),
        background(c.get(), c.options()),
        handler(std::move(h)),
        options(o),
        common(std::move(co)),
        staging(o.staging_bytes) {
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    background_mpi = level >= MPI_THREAD_MULTIPLE;
  }

  // Runs on the background thread. The local writes run on a thread of their own: when they
  // miss their deadline, this thread still reaches the verdict in time, and the writes are
  // waited for when the flight is destroyed.
  void run(Flight& flight) {
    try {
      const auto start = std::chrono::steady_clock::now();
      PendingSave& pending = *flight.pending;
      flight.writing = std::make_unique<checkpoint::BoundedWrite>([&pending] {
        pending.write(nullptr);
        base::fault::point("checkpoint.async_drain");
      });
      flight.writes_returned = flight.writing->wait_for(write_deadline());
      if (flight.writes_returned) flight.writing->join();
      flight.record.timings["write_s"] = checkpoint::seconds_since(start);
      flight.record.timings["stage_s"] = flight.staged.get_future().get();
      if (background_mpi) complete(flight, background);
    } catch (const std::exception& e) {
      flight.error.emplace(error_code_of(e), e.what());
    }
    flight.done = true;
  }

  std::chrono::milliseconds write_deadline() const {
    return checkpoint::write_deadline(comm, common.write_timeout);
  }

  // The collective end of a save: the verdict on the local writes, the handler's finish,
  // then the commit. Throws on every rank of `with`; removes the temporary directory on
  // failure.
  void complete(Flight& flight, const Comm& with) {
    try {
      checkpoint::agree_writes_returned(with, flight.writes_returned, flight.dir, write_deadline());
      const auto start = std::chrono::steady_clock::now();
      flight.pending->finish(with);
      flight.record.timings["finish_s"] = checkpoint::seconds_since(start);
      flight.record.bytes = static_cast<std::uint64_t>(
          with.sum(static_cast<std::int64_t>(flight.pending->bytes_written())));
      flight.record.item_metadata = flight.pending->step_metadata();
      checkpoint::commit(with, flight.tmp, flight.dir, std::move(flight.record), flight.force,
                         common.file_options);
    } catch (...) {
      // Stuck writes may still add files to the temporary directory: it is removed once they
      // returned, when the flight goes (after every rank learnt of the failure).
      if (flight.writes_returned) {
        checkpoint::discard(with, flight.tmp);
      } else {
        flight.discard_with = &with;
      }
      throw;
    }
    handler->finalize(with, flight.dir);
  }

  // Waits for the save in flight and, without background MPI, completes it here. Throws on
  // every rank when it failed on any rank. Collective.
  void land() {
    const bool flying = flight != nullptr;
    if (!comm.any(flying)) return;
    std::optional<std::pair<ErrorCode, std::string>> error;
    if (flying) {
      flight->thread.join();
      error = flight->error;
      if (!background_mpi && !error) {
        try {
          complete(*flight, comm);
        } catch (const std::exception& e) {
          error.emplace(error_code_of(e), e.what());
        }
      } else if (!background_mpi) {
        // The local writes failed: the collective end still runs so every rank learns it.
        if (flight->writes_returned) flight->pending->fail(std::runtime_error(error->second));
        try {
          complete(*flight, comm);
        } catch (const std::exception&) {
        }
      }
      if (error) {
        error->second = fmt::format("async save of '{}': {}", flight->dir.string(), error->second);
      }
    }
    // A rank whose writes are stuck waits for them only after the verdict (when `landed`
    // goes), so that the other ranks learn of the failure without waiting for it.
    const std::unique_ptr<Flight> landed = std::move(flight);
    comm.all_ok(!error, error ? error->second : std::string(),
                error ? error->first : ErrorCode::internal);
  }

  Comm comm;
  Comm background;
  std::shared_ptr<CheckpointHandler> handler;
  AsyncOptions options;
  CheckpointerOptions common;
  StagingArea staging;
  bool background_mpi = true;
  std::unique_ptr<Flight> flight;
};

AsyncCheckpointer::AsyncCheckpointer(const Comm& comm, std::shared_ptr<CheckpointHandler> handler,
                                     AsyncOptions options, CheckpointerOptions common) {
  if (!handler) throw InvalidArgument("cairn::AsyncCheckpointer: the handler is null");
  impl_ = std::make_unique<Impl>(comm, std::move(handler), options, std::move(common));
  impl_->comm.run_all("cairn::AsyncCheckpointer:",
                      [&] { (void)checkpoint::resolve_group(impl_->common.file_options.group); });
}

AsyncCheckpointer::~AsyncCheckpointer() {
  try {
    impl_->land();
  } catch (const std::exception& e) {
    base::log::error("checkpoint.async_failed", "error=\"{}\"", e.what());
  }
}

void AsyncCheckpointer::save(const std::filesystem::path& dir, const CheckpointArgs& args,
                             const CheckpointSaveOptions& options) {
  Impl& m = *impl_;
  m.land();
  auto flight = std::make_unique<Impl::Flight>();
  flight->dir = dir;
  flight->force = options.force;
  flight->record = {.handler_type = std::string(m.handler->type_name()),
                    .custom = options.custom_metadata,
                    .started = std::chrono::system_clock::now()};
  flight->tmp = checkpoint::begin_save(m.comm, dir, options.force, m.handler->type_name());
  try {
    flight->pending = m.handler->async_save(m.comm, flight->tmp, args,
                                            {.staging = m.options.zero_copy ? nullptr : &m.staging,
                                             .zero_copy = m.options.zero_copy,
                                             .background_mpi = m.background_mpi,
                                             .device_staging = m.options.device_staging,
                                             .provenance = options.provenance});
  } catch (...) {
    checkpoint::discard(m.comm, flight->tmp);
    throw;
  }
  Impl::Flight& f = *flight;
  m.flight = std::move(flight);
  f.thread = std::thread([&m, &f] { m.run(f); });
  const auto start = std::chrono::steady_clock::now();
  try {
    f.pending->stage();
  } catch (const std::exception& e) {
    f.pending->fail(e);
  } catch (...) {
    f.pending->fail(Error(ErrorCode::internal, "unknown exception while staging"));
  }
  f.staged.set_value(checkpoint::seconds_since(start));
}

std::any AsyncCheckpointer::restore(const std::filesystem::path& dir, const CheckpointArgs* args) {
  impl_->land();
  (void)checkpoint::open_committed(impl_->comm, dir, args);
  return impl_->handler->restore(impl_->comm, dir, args);
}

boost::json::value AsyncCheckpointer::metadata(const std::filesystem::path& dir) {
  impl_->land();
  boost::json::object step = checkpoint::open_committed(impl_->comm, dir);
  step["item"] = impl_->handler->metadata(impl_->comm, dir);
  return step;
}

void AsyncCheckpointer::wait_until_finished() { impl_->land(); }

bool AsyncCheckpointer::is_saving_in_progress() const noexcept {
  const auto& flight = impl_->flight;
  // Without background MPI a save is committed only at the next call: until then it is in
  // progress even after its local writes ended.
  return flight != nullptr && (!flight->done || !impl_->background_mpi);
}

void AsyncCheckpointer::check_for_errors() {
  Impl& m = *impl_;
  const bool done = m.flight && m.flight->done;
  const bool failed = done && m.flight->error.has_value();
  if (m.background_mpi ? m.comm.any(failed) : m.comm.all(m.flight == nullptr || done)) m.land();
}

const StagingArea& AsyncCheckpointer::staging() const noexcept { return impl_->staging; }

void AsyncCheckpointer::trim_staging() noexcept { impl_->staging.trim(); }

bool AsyncCheckpointer::background_mpi() const noexcept { return impl_->background_mpi; }

}  // namespace cairn
