#include "checkpoint/bounded_write.hpp"

#include <fmt/format.h>

#include "base/log.hpp"

namespace cairn::checkpoint {

BoundedWrite::BoundedWrite(std::function<void()> work) : result_(returned_.get_future()) {
  thread_ = std::thread([this, work = std::move(work)] {
    try {
      work();
      returned_.set_value();
    } catch (...) {
      returned_.set_exception(std::current_exception());
    }
  });
}

BoundedWrite::~BoundedWrite() {
  if (!thread_.joinable()) return;
  if (result_.valid() && result_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    base::log::warn("checkpoint.stuck_write_wait", "waiting for writes that missed their deadline");
  }
  thread_.join();
}

bool BoundedWrite::wait_for(std::chrono::milliseconds timeout) noexcept {
  return result_.wait_for(timeout) == std::future_status::ready;
}

void BoundedWrite::wait() noexcept {
  if (result_.valid()) result_.wait();
}

void BoundedWrite::join() {
  thread_.join();
  result_.get();
}

std::chrono::milliseconds write_deadline(const Comm& comm,
                                         std::chrono::milliseconds write_timeout) noexcept {
  if (write_timeout.count() > 0) return write_timeout;
  return std::max(comm.options().barrier_timeout / 2, std::chrono::milliseconds(1));
}

void agree_writes_returned(const Comm& comm, bool returned, const std::filesystem::path& dir,
                           std::chrono::milliseconds timeout) {
  std::string message;
  if (!returned) {
    message = fmt::format(
        "the writes of checkpoint '{}' on rank {} did not return within {:.1f} s (write_timeout): "
        "its file system may be hung; the save fails on every rank, and that rank waits for its "
        "writes to return before it goes on",
        dir.string(), comm.rank(), static_cast<double>(timeout.count()) / 1000.0);
  }
  comm.all_ok(returned, message, ErrorCode::timeout);
}

}  // namespace cairn::checkpoint
