// cairn — the hand-off between an async save's staging (caller's thread) and its writer
// (background thread): a queue of pieces, each the data of one item of work (internal).
#pragma once

#include <cairn/tree.hpp>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <optional>

namespace cairn::handlers {

/// One unit of data to write. `data` is either staged (kept alive by `owner`) or pinned
/// caller memory, in which case `written` is fulfilled once it has been written (or skipped).
struct Piece {
  std::size_t index = 0;
  const void* data = nullptr;
  MemoryKind memory = MemoryKind::host;  ///< where `data` is (device: a snapshot or pinned)
  std::shared_ptr<void> owner = {};
  std::shared_ptr<std::promise<void>> written = {};
};

/// An unbounded single-producer, single-consumer queue closed by close(), whose pieces are
/// handed out only once it is started (start(), or close()): the writer starts when staging
/// is done, unless staging must wait for the writer first (a staging budget smaller than the
/// data, see ArrayTreePendingSave). The caller waits for staging and not for writing, so the
/// two do not share the cores while the caller waits (on a node with fewer cores than
/// threads, writing alongside the copies made the caller wait up to twice as long). Pinned
/// pieces are waited for after close(). Thread-safe.
class PieceQueue {
 public:
  /// Adds a piece. Never blocks.
  void push(Piece piece) {
    {
      std::lock_guard lock(mutex_);
      pieces_.push_back(std::move(piece));
    }
    ready_.notify_one();
  }
  /// Pieces may be handed out from now on. Idempotent.
  void start() {
    {
      std::lock_guard lock(mutex_);
      started_ = true;
    }
    ready_.notify_one();
  }
  /// No more pieces will come (and the queue is started). Idempotent.
  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
      started_ = true;
    }
    ready_.notify_one();
  }
  /// The next piece once the queue is started, waiting for one; std::nullopt once closed and
  /// drained.
  std::optional<Piece> pop() {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return started_ && (closed_ || !pieces_.empty()); });
    if (pieces_.empty()) return std::nullopt;
    Piece piece = std::move(pieces_.front());
    pieces_.pop_front();
    return piece;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Piece> pieces_;
  bool started_ = false;
  bool closed_ = false;
};

/// Fulfils a pinned piece's promise when it goes out of scope (written or skipped).
class WrittenSignal {
 public:
  explicit WrittenSignal(std::shared_ptr<std::promise<void>> promise)
      : promise_(std::move(promise)) {}
  ~WrittenSignal() {
    if (promise_) promise_->set_value();
  }
  WrittenSignal(const WrittenSignal&) = delete;
  WrittenSignal& operator=(const WrittenSignal&) = delete;

 private:
  std::shared_ptr<std::promise<void>> promise_;
};

}  // namespace cairn::handlers
