// cairn — the coordination layer: a communicator that every other layer uses to agree,
// wait and exchange small data, with deadlines so that misuse never hangs a job.
#pragma once

#include <mpi.h>

#include <cairn/error.hpp>

#include <boost/json/value.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cairn {

/// How a Comm is set up. Aggregate: use designated initializers.
struct CommOptions {
  /// Rank (in the caller's communicator) that does single-writer work.
  int primary_rank = 0;
  /// Ranks that take part in checkpointing (Orbax's active_processes). Empty: all ranks.
  /// Must contain the primary rank. Ranks not listed get a Comm with is_active() == false.
  std::vector<int> active_processes = {};
  /// Deadline of every barrier and collective exchange made through the Comm.
  std::chrono::milliseconds barrier_timeout = std::chrono::minutes(10);
};

/// What a rank says it is about to do; ranks compare it before a collective step.
struct Agreement {
  std::string operation;        ///< e.g. "save", "restore", or a barrier name
  std::int64_t step = -1;       ///< checkpoint step, or -1 when not applicable
  std::uint64_t options = 0;    ///< options every rank must pass alike (flags such as
                                ///< force, or their hash), or 0
  std::uint64_t structure = 0;  ///< hash of the item names / tree structure, or 0
};

/// Owns a duplicate of an MPI communicator and offers cairn's collective helpers.
///
/// Every member that is marked collective must be called by all ranks of the Comm in the
/// same order. Collective helpers run with a deadline (CommOptions::barrier_timeout): when
/// it passes they throw TimeoutError instead of waiting forever. After a timeout the Comm is
/// broken (ranks may be at different points) and every later collective call on it throws
/// TimeoutError at once; create a new Comm to continue.
///
/// Move-only. The destructor frees the duplicate unless MPI is already finalized.
class Comm {
 public:
  /// Duplicates `comm`. Collective over `comm`. Throws InvalidArgument when the options are
  /// inconsistent (primary out of range, primary not active, duplicate or out-of-range
  /// active ranks) and IoError when MPI fails. MPI must be initialized.
  explicit Comm(MPI_Comm comm, CommOptions options = {});
  ~Comm();
  /// Takes over `other`'s communicator; `other` is left empty. Not collective. Never throws.
  Comm(Comm&& other) noexcept;
  /// Frees this communicator and takes over `other`'s. Not collective. Never throws.
  Comm& operator=(Comm&& other) noexcept;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  /// The duplicated communicator (MPI_COMM_NULL after a move). Never throws.
  [[nodiscard]] MPI_Comm get() const noexcept { return comm_; }
  /// This process's rank. Never throws.
  [[nodiscard]] int rank() const noexcept { return rank_; }
  /// Number of ranks. Never throws.
  [[nodiscard]] int size() const noexcept { return size_; }
  /// The primary rank. Never throws.
  [[nodiscard]] int primary() const noexcept { return options_.primary_rank; }
  /// Whether this process is the primary rank. Never throws.
  [[nodiscard]] bool is_primary() const noexcept { return rank_ == options_.primary_rank; }
  /// Whether this process is one of the active processes. Never throws.
  [[nodiscard]] bool is_active() const noexcept;
  /// The options the Comm was built with. Never throws.
  [[nodiscard]] const CommOptions& options() const noexcept { return options_; }
  /// Whether an earlier timeout broke this Comm. Never throws.
  [[nodiscard]] bool broken() const noexcept { return broken_; }

  /// A Comm over the active processes only, with the primary mapped to its rank there.
  /// Collective over this Comm. Returns std::nullopt on processes that are not active.
  /// Throws TimeoutError, IoError.
  [[nodiscard]] std::optional<Comm> active() const;

  /// Named barrier with the default deadline. Collective. Throws CollectiveMismatch on every
  /// rank when ranks arrive with different names (naming the first differing rank and both
  /// names), TimeoutError when the deadline passes (naming the ranks that had not arrived,
  /// where known).
  void barrier(std::string_view name) const;
  /// Named barrier with an explicit deadline. Collective. Throws as barrier(name).
  void barrier(std::string_view name, std::chrono::milliseconds timeout) const;

  /// Checks that every rank passes the same Agreement. Collective. Throws CollectiveMismatch
  /// on every rank naming the first rank that differs from the primary and the first field
  /// that differs; TimeoutError as barrier().
  void agree(const Agreement& what) const;

  /// Turns a local success flag into a collective verdict. Collective. Returns when every
  /// rank passed `local_ok == true`; otherwise throws on every rank an Error whose code is
  /// the first failing rank's `code` and whose message says how many ranks failed and quotes
  /// the first few distinct messages with the ranges of ranks that sent each ("failed on 5 of
  /// 64 ranks: ranks 0-3,7: disk full ..."), in at most a few KB whatever the number of ranks.
  /// A message that already is such a combined error of every rank is passed on, not quoted
  /// again. Each failing rank logs its full message (warn level, event collective.failure).
  /// Throws TimeoutError as barrier().
  void all_ok(bool local_ok, std::string_view message, ErrorCode code = ErrorCode::io) const;

  /// Runs `fn` on this rank, then all_ok() with its outcome: an exception thrown by `fn` on
  /// any rank is rethrown (as the same ErrorCode, with the failing ranks' messages combined) on
  /// every rank. `what` prefixes the message ("save step 10"). Collective.
  void run_all(std::string_view what, const std::function<void()>& fn) const;

  /// True on every rank when `local` is true on any rank. Collective. Throws TimeoutError.
  [[nodiscard]] bool any(bool local) const;
  /// True on every rank when `local` is true on every rank. Collective. Throws TimeoutError.
  [[nodiscard]] bool all(bool local) const;

  /// Sum over ranks. Collective. Throws TimeoutError.
  [[nodiscard]] std::int64_t sum(std::int64_t local) const;
  /// Maximum over ranks. Collective. Throws TimeoutError.
  [[nodiscard]] std::int64_t max(std::int64_t local) const;
  /// Minimum over ranks. Collective. Throws TimeoutError.
  [[nodiscard]] std::int64_t min(std::int64_t local) const;
  /// Element-wise maximum over ranks: element k of the result is the largest element k of
  /// any rank's `local`. One reduction whatever the length (plus one of the lengths, checked
  /// first). Collective. Throws CollectiveMismatch on every rank when the ranks pass
  /// different lengths, TimeoutError.
  [[nodiscard]] std::vector<std::int64_t> max(std::span<const std::int64_t> local) const;

  /// Broadcasts bytes from `root` (default: primary); the argument is ignored on other
  /// ranks. Collective. Throws TimeoutError, IoError.
  [[nodiscard]] std::vector<std::byte> broadcast_bytes(std::span<const std::byte> data,
                                                       std::optional<int> root = {}) const;
  /// Broadcasts a string from `root` (default: primary). Collective.
  [[nodiscard]] std::string broadcast(std::string_view text, std::optional<int> root = {}) const;
  /// Broadcasts a JSON value from `root` (default: primary). Collective.
  [[nodiscard]] boost::json::value broadcast_json(const boost::json::value& value,
                                                  std::optional<int> root = {}) const;

  /// Gathers one byte string per rank at `root` (default: primary), in rank order; other
  /// ranks get an empty vector. Collective. Throws TimeoutError, IoError.
  [[nodiscard]] std::vector<std::vector<std::byte>> gather_bytes(
      std::span<const std::byte> data, std::optional<int> root = {}) const;
  /// Gathers one string per rank at `root` (default: primary). Collective.
  [[nodiscard]] std::vector<std::string> gather(std::string_view text,
                                                std::optional<int> root = {}) const;
  /// Gathers one JSON value per rank at `root` (default: primary). Collective.
  [[nodiscard]] std::vector<boost::json::value> gather_json(const boost::json::value& value,
                                                            std::optional<int> root = {}) const;

  /// Every rank gets every rank's bytes, in rank order. Collective.
  [[nodiscard]] std::vector<std::vector<std::byte>> allgather_bytes(
      std::span<const std::byte> data) const;
  /// Every rank gets every rank's string, in rank order. Collective.
  [[nodiscard]] std::vector<std::string> allgather(std::string_view text) const;
  /// Every rank gets every rank's JSON value, in rank order. Collective.
  [[nodiscard]] std::vector<boost::json::value> allgather_json(
      const boost::json::value& value) const;
  /// Every rank gets every rank's integer, in rank order. Collective.
  [[nodiscard]] std::vector<std::int64_t> allgather(std::int64_t value) const;
  /// Sends `to_each[r]` to rank r, for every rank r (`to_each` holds one byte string per
  /// rank), and returns what each rank sent this one, in rank order. Collective. Throws
  /// InvalidArgument when `to_each` does not hold size() strings (before any communication:
  /// the other ranks then fail with TimeoutError), TimeoutError, IoError.
  [[nodiscard]] std::vector<std::vector<std::byte>> alltoall_bytes(
      std::span<const std::vector<std::byte>> to_each) const;

  /// The steps present on every rank, sorted ascending. `local_steps` may be unsorted and
  /// hold duplicates. Collective. Throws TimeoutError.
  [[nodiscard]] std::vector<std::int64_t> common_steps(
      std::span<const std::int64_t> local_steps) const;

 private:
  void check_options();
  void check_usable(std::string_view what) const;
  std::int64_t reduce(std::int64_t local, MPI_Op op, std::string_view what) const;
  void wait(MPI_Request& request, std::string_view what, std::chrono::milliseconds timeout) const;
  void wait(MPI_Request& request, std::string_view what) const;
  // Starts a nonblocking operation (`start` returns its MPI error code) and waits for it;
  // when the wait fails, `buffers` (which the operation reads or writes) are abandoned.
  void start_and_wait(const std::shared_ptr<void>& buffers, std::string_view what,
                      const std::function<int(MPI_Request*)>& start) const;
  // gather_bytes() at `root`, or allgather_bytes() without one: sizes first, then the bytes.
  std::vector<std::vector<std::byte>> collect_bytes(std::span<const std::byte> data,
                                                    std::optional<int> root,
                                                    std::string_view what) const;
  void agree_impl(const Agreement& what, std::string_view kind,
                  std::chrono::milliseconds timeout) const;
  void release() noexcept;

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = -1;
  int size_ = 0;
  CommOptions options_;
  mutable bool broken_ = false;
  mutable std::uint64_t sequence_ = 0;  // number of agreement rounds so far
};

}  // namespace cairn
