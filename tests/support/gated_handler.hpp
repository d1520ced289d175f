// A handler whose background writes wait at a gate that the test opens: a save stays in
// flight, deterministically, for as long as a test needs it to (no sleeps). Header-only.
#pragma once

#include <cairn/handlers.hpp>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <utility>

namespace cairn::testing {

/// Closed: background writes wait. Thread-safe.
class Gate {
 public:
  void close() {
    const std::scoped_lock lock(mutex_);
    open_ = false;
  }
  void open() {
    {
      const std::scoped_lock lock(mutex_);
      open_ = true;
    }
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = true;
};

/// Wraps a handler so that the background write() of its saves passes `gate` first: a test can
/// then look at the checkpoint while the save is certainly in flight. Reports the inner
/// handler's type, so what it saves restores with the inner handler. Opens the gate when
/// destroyed.
class GatedHandler final : public CheckpointHandler {
 public:
  /// `inner`'s writes wait at `gate`; without one, at a gate of its own that starts closed.
  explicit GatedHandler(std::shared_ptr<CheckpointHandler> inner,
                        std::shared_ptr<Gate> gate = closed_gate())
      : inner_(std::move(inner)), gate_(std::move(gate)) {}
  ~GatedHandler() override { open(); }
  GatedHandler(const GatedHandler&) = delete;
  GatedHandler& operator=(const GatedHandler&) = delete;

  /// Lets every waiting and future write() run (until the gate closes again).
  void open() { gate_->open(); }

  std::string_view type_name() const noexcept override { return inner_->type_name(); }
  std::unique_ptr<PendingSave> async_save(const Comm& comm, const std::filesystem::path& dir,
                                          const CheckpointArgs& args,
                                          const AsyncContext& context) override {
    return std::make_unique<Pending>(inner_->async_save(comm, dir, args, context), gate_);
  }
  std::any restore(const Comm& comm, const std::filesystem::path& dir,
                   const CheckpointArgs* args) override {
    return inner_->restore(comm, dir, args);
  }
  boost::json::value metadata(const Comm& comm, const std::filesystem::path& dir) override {
    return inner_->metadata(comm, dir);
  }
  void finalize(const Comm& comm, const std::filesystem::path& dir) override {
    inner_->finalize(comm, dir);
  }

 private:
  static std::shared_ptr<Gate> closed_gate() {
    auto gate = std::make_shared<Gate>();
    gate->close();
    return gate;
  }

  class Pending final : public PendingSave {
   public:
    Pending(std::unique_ptr<PendingSave> inner, std::shared_ptr<Gate> gate)
        : inner_(std::move(inner)), gate_(std::move(gate)) {}
    void stage() override { inner_->stage(); }
    void write(const Comm* comm) override {
      gate_->wait();
      inner_->write(comm);
    }
    void finish(const Comm& comm) override { inner_->finish(comm); }
    std::uint64_t bytes_written() const noexcept override { return inner_->bytes_written(); }
    void fail(const std::exception& error) noexcept override { inner_->fail(error); }
    boost::json::object step_metadata() const override { return inner_->step_metadata(); }

   private:
    std::unique_ptr<PendingSave> inner_;
    std::shared_ptr<Gate> gate_;
  };

  std::shared_ptr<CheckpointHandler> inner_;
  std::shared_ptr<Gate> gate_;
};

/// Opens a GatedHandler's gate when it goes out of scope. Declare it after the checkpointer
/// that uses the handler, so that a failing test does not leave the checkpointer's
/// destructor waiting for a write that waits for the gate.
class GateOpener {
 public:
  explicit GateOpener(GatedHandler& handler) : handler_(handler) {}
  ~GateOpener() { handler_.open(); }
  GateOpener(const GateOpener&) = delete;
  GateOpener& operator=(const GateOpener&) = delete;

 private:
  GatedHandler& handler_;
};

}  // namespace cairn::testing
