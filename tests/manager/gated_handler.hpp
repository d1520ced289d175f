// A JSON item handler whose async writes wait at a gate that the test opens: a save stays in
// flight, deterministically, for as long as a test needs it to (no sleeps).
#pragma once

#include <cairn/handlers.hpp>

#include <condition_variable>
#include <memory>
#include <mutex>

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

/// cairn.json items whose background write() passes the gate first.
class GatedJsonHandler final : public CheckpointHandler {
 public:
  explicit GatedJsonHandler(std::shared_ptr<Gate> gate) : gate_(std::move(gate)) {}
  std::string_view type_name() const noexcept override { return inner_.type_name(); }
  std::unique_ptr<PendingSave> async_save(const Comm& comm, const std::filesystem::path& dir,
                                          const CheckpointArgs& args,
                                          const AsyncContext& context) override {
    return std::make_unique<Pending>(inner_.async_save(comm, dir, args, context), gate_);
  }
  std::any restore(const Comm& comm, const std::filesystem::path& dir,
                   const CheckpointArgs* args) override {
    return inner_.restore(comm, dir, args);
  }
  boost::json::value metadata(const Comm& comm, const std::filesystem::path& dir) override {
    return inner_.metadata(comm, dir);
  }

 private:
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

  JsonHandler inner_;
  std::shared_ptr<Gate> gate_;
};

}  // namespace cairn::testing
