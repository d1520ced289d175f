// cairn — one save from its start to its commit (internal): the commit protocol that
// Checkpointer and AsyncCheckpointer both run. The caller chooses the threads: the stage on
// its own, the local writes on a thread of their own (waited for with a deadline), the
// collective end on a thread that may call MPI.
#pragma once

#include <cairn/checkpointer.hpp>
#include <cairn/comm.hpp>
#include <cairn/handler.hpp>

#include <chrono>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>

#include "checkpoint/bounded_write.hpp"
#include "checkpoint/commit.hpp"

namespace cairn::checkpoint {

/// One save of one item into one checkpoint directory.
class SaveFlight {
 public:
  /// Agrees on the save, has the primary create the temporary directory (begin_save()) and
  /// starts the handler's save of `args` there with `context` (its provenance taken from
  /// `options`). `comm` must outlive the
  /// flight. Collective. Throws as Checkpointer::save() for problems found before any byte is
  /// written; the temporary directory is then removed.
  SaveFlight(const Comm& comm, std::shared_ptr<CheckpointHandler> handler,
             const std::filesystem::path& dir, const CheckpointArgs& args,
             const CheckpointSaveOptions& options, const AsyncContext& context);
  /// Waits for local writes that missed their deadline, then removes the temporary directory
  /// unless the save was committed (primary only). Not collective; never throws.
  ~SaveFlight();
  SaveFlight(const SaveFlight&) = delete;
  SaveFlight& operator=(const SaveFlight&) = delete;

  /// Runs the handler's stage() and returns its seconds; a failure is recorded so that the
  /// collective end reports it on every rank. Never throws.
  double stage() noexcept;
  /// Starts the local writes on a thread of their own; `after` runs on that thread once they
  /// returned (e.g. a fault point). Local. Throws std::system_error when no thread starts.
  void start_writes(std::function<void()> after = {});
  /// Waits at most `deadline` for the local writes and returns whether they returned; when
  /// they did, rethrows what they threw. Local.
  bool await_writes(std::chrono::milliseconds deadline);
  /// The collective end of the save: the verdict on the local writes (TimeoutError naming
  /// the stuck ranks after `deadline`), the handler's finish(), the handler's finalize() in
  /// the temporary directory, then the commit with `files`. Collective over `with` (same ranks
  /// as the constructor's Comm).
  /// Throws on every rank when any rank failed; the temporary directory is then removed, at
  /// once or, on a rank whose writes are stuck, once they returned.
  void complete(const Comm& with, const FileOptions& files, std::chrono::milliseconds deadline);
  /// Records a failure from outside (the local writes failed) for finish() to report. Never
  /// throws.
  void fail(const std::exception& error) noexcept { pending_->fail(error); }

  /// What cairn-step.json will record (timings may be added until complete()).
  [[nodiscard]] StepRecord& record() noexcept { return record_; }
  /// The checkpoint directory. Never throws.
  [[nodiscard]] const std::filesystem::path& dir() const noexcept { return dir_; }
  /// Whether the local writes returned within their deadline (true before they started).
  [[nodiscard]] bool writes_returned() const noexcept { return writes_returned_; }

 private:
  const Comm& comm_;
  std::shared_ptr<CheckpointHandler> handler_;
  std::filesystem::path dir_;
  std::filesystem::path tmp_;
  bool force_;
  StepRecord record_;
  std::unique_ptr<PendingSave> pending_;
  std::unique_ptr<BoundedWrite> writing_;
  bool writes_returned_ = true;
  bool settled_ = false;  // committed, or the temporary directory removed
};

}  // namespace cairn::checkpoint
