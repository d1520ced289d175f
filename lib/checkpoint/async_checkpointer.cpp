// AsyncCheckpointer: stage on the caller's thread, write and commit in the background.
#include <atomic>
#include <cairn/checkpointer.hpp>
#include <fmt/format.h>
#include <future>
#include <thread>

#include "base/fault.hpp"
#include "base/first_error.hpp"
#include "base/log.hpp"
#include "checkpoint/commit.hpp"
#include "checkpoint/save_flight.hpp"

namespace cairn {

struct AsyncCheckpointer::Impl {
  // One save from the return of save() to its commit.
  struct Flight {
    Flight(const Comm& comm, std::shared_ptr<CheckpointHandler> handler,
           const std::filesystem::path& dir, const CheckpointArgs& args,
           const CheckpointSaveOptions& options, const AsyncContext& context)
        : save(comm, std::move(handler), dir, args, options, context) {}

    // Destroyed last: waits for writes that missed their deadline, then removes the temporary
    // directory of a save that was not committed.
    checkpoint::SaveFlight save;
    std::thread thread;
    std::atomic<bool> done{false};
    // Seconds stage() took, set by the caller's thread once it returns: the record belongs to
    // the background thread from its start, so the caller never touches it directly.
    std::promise<double> staged;
    base::FirstError error;  // recorded by the background thread before `done`
  };

  // `self` is the Checkpointer that owns this Impl: its Comm serves the caller's thread.
  Impl(const Comm& given, const Checkpointer& self, const CheckpointerOptions& co, AsyncOptions o)
      : comm(self.comm()),
        background(given.get(), given.options()),
        handler(self.handler()),
        options(o),
        common(co),
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
      flight.save.start_writes([] { base::fault::point("checkpoint.async_drain"); });
      (void)flight.save.await_writes(write_deadline());
      flight.save.record().timings["write_s"] = checkpoint::seconds_since(start);
      flight.save.record().timings["stage_s"] = flight.staged.get_future().get();
      if (background_mpi) flight.save.complete(background, common.file_options, write_deadline());
    } catch (const std::exception& e) {
      flight.error.record(e);
    }
    flight.done = true;
  }

  std::chrono::milliseconds write_deadline() const {
    return checkpoint::write_deadline(comm, common.write_timeout);
  }

  // Without background MPI, the collective end of a save on the caller's thread. When the
  // local writes failed, it still runs so that every rank learns it.
  void complete_here(Flight& landing) {
    if (!landing.error.failed()) {
      try {
        landing.save.complete(comm, common.file_options, write_deadline());
      } catch (const std::exception& e) {
        landing.error.record(e);
      }
      return;
    }
    if (landing.save.writes_returned()) {
      try {
        landing.error.throw_if_failed();
      } catch (const std::exception& e) {
        landing.save.fail(e);
      }
    }
    try {
      landing.save.complete(comm, common.file_options, write_deadline());
    } catch (const std::exception&) {
    }
  }

  // Waits for the save in flight and, without background MPI, completes it here. Throws on
  // every rank when it failed on any rank. Collective.
  void land() {
    if (!comm.any(flight != nullptr)) return;
    if (flight) {
      flight->thread.join();
      if (!background_mpi) complete_here(*flight);
    }
    // A rank whose writes are stuck waits for them only after the verdict (when `landed`
    // goes), so that the other ranks learn of the failure without waiting for it.
    const std::unique_ptr<Flight> landed = std::move(flight);
    const base::FirstError none;
    const base::FirstError& error = landed ? landed->error : none;
    error.report(comm, landed ? fmt::format("async save of '{}': ", landed->save.dir().string())
                              : std::string());
  }

  const Comm& comm;  // the caller's thread's, owned by the Checkpointer base
  Comm background;
  std::shared_ptr<CheckpointHandler> handler;
  AsyncOptions options;
  const CheckpointerOptions& common;  // owned by the Checkpointer base
  StagingArea staging;
  bool background_mpi = true;
  std::unique_ptr<Flight> flight;
};

AsyncCheckpointer::AsyncCheckpointer(const Comm& comm, std::shared_ptr<CheckpointHandler> handler,
                                     AsyncOptions options, CheckpointerOptions common)
    : Checkpointer(comm, std::move(handler), std::move(common), "cairn::AsyncCheckpointer"),
      impl_(std::make_unique<Impl>(comm, *this, checkpointer_options(), options)) {}

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
  m.flight = std::make_unique<Impl::Flight>(
      m.comm, m.handler, dir, args, options,
      AsyncContext{.staging = m.options.zero_copy ? nullptr : &m.staging,
                   .zero_copy = m.options.zero_copy,
                   .background_mpi = m.background_mpi,
                   .device_staging = m.options.device_staging});
  Impl::Flight& f = *m.flight;
  f.thread = std::thread([&m, &f] { m.run(f); });
  f.staged.set_value(f.save.stage());
}

std::any AsyncCheckpointer::restore(const std::filesystem::path& dir, const CheckpointArgs* args) {
  impl_->land();
  return Checkpointer::restore(dir, args);
}

boost::json::value AsyncCheckpointer::metadata(const std::filesystem::path& dir) {
  impl_->land();
  return Checkpointer::metadata(dir);
}

void AsyncCheckpointer::wait_until_finished() { impl_->land(); }

void AsyncCheckpointer::close() {
  impl_->land();
  Checkpointer::close();
}

bool AsyncCheckpointer::is_saving_in_progress() const noexcept {
  const auto& flight = impl_->flight;
  // Without background MPI a save is committed only at the next call: until then it is in
  // progress even after its local writes ended.
  return flight != nullptr && (!flight->done || !impl_->background_mpi);
}

void AsyncCheckpointer::check_for_errors() {
  Impl& m = *impl_;
  const bool done = m.flight && m.flight->done;
  const bool failed = done && m.flight->error.failed();
  if (m.background_mpi ? m.comm.any(failed) : m.comm.all(m.flight == nullptr || done)) m.land();
}

const StagingArea& AsyncCheckpointer::staging() const noexcept { return impl_->staging; }

void AsyncCheckpointer::trim_staging() noexcept { impl_->staging.trim(); }

bool AsyncCheckpointer::background_mpi() const noexcept { return impl_->background_mpi; }

}  // namespace cairn
