#include <cairn/comm.hpp>

#include <algorithm>
#include <array>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <climits>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <mutex>
#include <set>
#include <thread>

#include "comm/combined_error.hpp"
#include "comm/fnv1a.hpp"
#include "comm/log.hpp"
#include "comm/mpi_check.hpp"

namespace cairn {

namespace detail {
std::string mpi_error_string(int code) {
  std::array<char, MPI_MAX_ERROR_STRING> text{};
  int length = 0;
  if (MPI_Error_string(code, text.data(), &length) != MPI_SUCCESS) {
    return fmt::format("MPI error {}", code);
  }
  return std::string(text.data(), static_cast<std::size_t>(length));
}
}  // namespace detail

using detail::check_mpi;

namespace {

using Clock = std::chrono::steady_clock;

// Tags of the point-to-point agreement protocol on cairn's private duplicate.
constexpr int kTagRecord = 0x6361;
constexpr int kTagVerdict = 0x6362;

constexpr std::size_t kOperationBytes = 192;
constexpr std::size_t kVerdictBytes = 1024;

// What each rank sends to the primary at an agreement round.
struct Record {
  std::uint64_t sequence;
  std::int64_t step;
  std::uint64_t structure;
  char kind[32];
  char operation[kOperationBytes];
};

enum class VerdictStatus : std::int32_t { ok = 0, mismatch = 1, timeout = 2 };

// What the primary answers.
struct Verdict {
  VerdictStatus status;
  std::int32_t rank;
  char field[32];
  char message[kVerdictBytes];
  std::int32_t missing_count;
  std::int32_t missing[64];
};

template <std::size_t N>
void copy_text(char (&destination)[N], std::string_view text) {
  std::memset(destination, 0, N);
  std::memcpy(destination, text.data(), std::min(text.size(), N - 1));
}

// Buffers that a timed-out nonblocking operation may still write into. They are kept alive
// for the life of the process: MPI owns them until the late operation completes, which may
// be never.
void abandon(std::shared_ptr<void> buffers) {
  static std::mutex mutex;
  static std::vector<std::shared_ptr<void>> graveyard;
  std::lock_guard lock(mutex);
  graveyard.push_back(std::move(buffers));
}

std::string format_seconds(std::chrono::milliseconds timeout) {
  return fmt::format("{:.1f} s", static_cast<double>(timeout.count()) / 1000.0);
}

int checked_count(std::size_t bytes, std::string_view what) {
  if (bytes > static_cast<std::size_t>(INT_MAX)) {
    throw InvalidArgument(fmt::format(
        "{}: {} bytes exceed the 2 GiB limit of one collective exchange; split the data", what,
        bytes));
  }
  return static_cast<int>(bytes);
}

std::span<const std::byte> as_bytes(std::string_view text) {
  return {reinterpret_cast<const std::byte*>(text.data()), text.size()};
}

std::string as_string(const std::vector<std::byte>& bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

boost::json::value parse_json(const std::string& text, std::string_view what) {
  boost::system::error_code ec;
  auto value = boost::json::parse(text, ec);
  if (ec) {
    throw Error(ErrorCode::internal,
                fmt::format("{}: received JSON does not parse: {}", what, ec.message()));
  }
  return value;
}

}  // namespace

// ---------------------------------------------------------------- construction

Comm::Comm(MPI_Comm comm, CommOptions options) : options_(std::move(options)) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    throw InvalidArgument("cairn::Comm: MPI is not initialized; call MPI_Init_thread first");
  }
  if (comm == MPI_COMM_NULL) throw InvalidArgument("cairn::Comm: the communicator is null");
  check_mpi(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);

  try {
    check_options();
  } catch (...) {
    release();
    throw;
  }
}

void Comm::check_options() {
  // Options are checked on every rank and the verdict is shared, so a rank configured
  // differently is an error everywhere instead of a later hang.
  std::string problem;
  if (options_.primary_rank < 0 || options_.primary_rank >= size_) {
    problem = fmt::format("primary_rank {} is not a rank of a communicator of size {}",
                          options_.primary_rank, size_);
  } else if (options_.barrier_timeout.count() <= 0) {
    problem = "barrier_timeout must be positive";
  } else if (!options_.active_processes.empty()) {
    auto active = options_.active_processes;
    std::sort(active.begin(), active.end());
    if (std::adjacent_find(active.begin(), active.end()) != active.end()) {
      problem = "active_processes lists a rank twice";
    } else if (active.front() < 0 || active.back() >= size_) {
      problem = fmt::format("active_processes must be ranks in [0, {})", size_);
    } else if (!std::binary_search(active.begin(), active.end(), options_.primary_rank)) {
      problem =
          fmt::format("the primary rank {} must be one of active_processes", options_.primary_rank);
    }
    options_.active_processes = std::move(active);
  }
  const CommOptions requested = options_;
  if (!problem.empty()) options_ = CommOptions{};  // usable defaults for the exchange below
  all_ok(problem.empty(), "cairn::Comm: " + problem, ErrorCode::invalid_argument);
  options_ = requested;

  // The primary must be the same everywhere before it can referee agreements.
  const auto primaries = allgather(static_cast<std::int64_t>(options_.primary_rank));
  for (int r = 0; r < size_; ++r) {
    if (primaries[r] != primaries[0]) {
      throw CollectiveMismatch(
          r, "primary_rank",
          fmt::format("cairn::Comm: rank {} uses primary_rank {} but rank 0 uses {}; pass "
                      "the same CommOptions on every rank",
                      r, primaries[r], primaries[0]));
    }
  }
  detail::Fnv1a active_hash;
  for (int r : options_.active_processes) active_hash.i64(r);
  agree_impl({.operation = "cairn::Comm options",
              .step = options_.barrier_timeout.count(),
              .structure = active_hash.value()},
             "construction", options_.barrier_timeout);
}

Comm::~Comm() { release(); }

Comm::Comm(Comm&& other) noexcept
    : comm_(std::exchange(other.comm_, MPI_COMM_NULL)),
      rank_(std::exchange(other.rank_, -1)),
      size_(std::exchange(other.size_, 0)),
      options_(std::move(other.options_)),
      broken_(other.broken_),
      sequence_(other.sequence_) {}

Comm& Comm::operator=(Comm&& other) noexcept {
  if (this != &other) {
    release();
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    rank_ = std::exchange(other.rank_, -1);
    size_ = std::exchange(other.size_, 0);
    options_ = std::move(other.options_);
    broken_ = other.broken_;
    sequence_ = other.sequence_;
  }
  return *this;
}

void Comm::release() noexcept {
  if (comm_ == MPI_COMM_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && !broken_) {
    // MPI_Comm_free is collective in spirit but local in effect: it marks the duplicate
    // for deallocation once pending operations complete.
    if (MPI_Comm_free(&comm_) != MPI_SUCCESS) {
      log::warn("comm.free", "result=failed");
    }
  } else if (broken_) {
    // Operations abandoned by a timeout may still be pending on it; leaving it allocated
    // is safer than freeing it under them.
    log::debug("comm.free", "result=kept_after_timeout");
  }
  comm_ = MPI_COMM_NULL;
}

bool Comm::is_active() const noexcept {
  if (options_.active_processes.empty()) return true;
  return std::binary_search(options_.active_processes.begin(), options_.active_processes.end(),
                            rank_);
}

std::optional<Comm> Comm::active() const {
  agree_impl({.operation = "Comm::active"}, "collective call", options_.barrier_timeout);
  const bool active_here = is_active();
  MPI_Comm split = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(comm_, active_here ? 0 : MPI_UNDEFINED, rank_, &split),
            "MPI_Comm_split (active processes)");
  if (!active_here) return std::nullopt;
  int primary_there = options_.primary_rank;
  if (!options_.active_processes.empty()) {
    primary_there =
        static_cast<int>(std::lower_bound(options_.active_processes.begin(),
                                          options_.active_processes.end(), options_.primary_rank) -
                         options_.active_processes.begin());
  }
  try {
    Comm result(split,
                {.primary_rank = primary_there, .barrier_timeout = options_.barrier_timeout});
    MPI_Comm_free(&split);
    return result;
  } catch (...) {
    MPI_Comm_free(&split);
    throw;
  }
}

// ---------------------------------------------------------------- waiting with a deadline

void Comm::check_usable(std::string_view what) const {
  if (comm_ == MPI_COMM_NULL) {
    throw InvalidArgument(fmt::format("{}: the cairn::Comm was moved from", what));
  }
  if (broken_) {
    throw TimeoutError({}, fmt::format("{}: this cairn::Comm was broken by an earlier "
                                       "timeout; ranks may be at different points. Create a "
                                       "new Comm (or restart the job) to continue",
                                       what));
  }
}

void Comm::wait(MPI_Request& request, std::string_view what) const {
  wait(request, what, options_.barrier_timeout);
}

void Comm::wait(MPI_Request& request, std::string_view what,
                std::chrono::milliseconds timeout) const {
  const auto deadline = Clock::now() + timeout;
  auto pause = std::chrono::microseconds(0);
  for (;;) {
    int done = 0;
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
    if (done) return;
    if (Clock::now() >= deadline) {
      broken_ = true;
      throw TimeoutError(
          {}, fmt::format("{} did not complete within {} on rank {} of {}: some rank did not "
                          "make the same call. Check that every rank calls cairn's collective "
                          "functions in the same order, or raise barrier_timeout",
                          what, format_seconds(timeout), rank_, size_));
    }
    // Back off from spinning to short sleeps: ranks are often oversubscribed.
    if (pause.count() == 0) {
      std::this_thread::yield();
      pause = std::chrono::microseconds(1);
    } else {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
  }
}

// ---------------------------------------------------------------- agreement

void Comm::barrier(std::string_view name) const { barrier(name, options_.barrier_timeout); }

void Comm::barrier(std::string_view name, std::chrono::milliseconds timeout) const {
  agree_impl({.operation = std::string(name)}, "barrier", timeout);
}

void Comm::agree(const Agreement& what) const {
  agree_impl(what, "agreement", options_.barrier_timeout);
}

void Comm::agree_impl(const Agreement& what, std::string_view kind,
                      std::chrono::milliseconds timeout) const {
  const std::string label = fmt::format("{} '{}'", kind, what.operation);
  check_usable(label);
  if (what.operation.size() >= kOperationBytes) {
    throw InvalidArgument(
        fmt::format("{}: the name is longer than {} characters", label, kOperationBytes - 1));
  }
  const std::uint64_t sequence = ++sequence_;
  const int primary = options_.primary_rank;

  auto mine = std::make_shared<Record>();
  mine->sequence = sequence;
  mine->step = what.step;
  mine->structure = what.structure;
  copy_text(mine->kind, kind);
  copy_text(mine->operation, what.operation);

  if (rank_ != primary) {
    struct Exchange {
      Record record;
      Verdict verdict;
      std::array<MPI_Request, 2> requests{MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    };
    auto ex = std::make_shared<Exchange>();
    ex->record = *mine;
    check_mpi(MPI_Isend(&ex->record, sizeof(Record), MPI_BYTE, primary, kTagRecord, comm_,
                        &ex->requests[0]),
              label);
    check_mpi(MPI_Irecv(&ex->verdict, sizeof(Verdict), MPI_BYTE, primary, kTagVerdict, comm_,
                        &ex->requests[1]),
              label);
    // The primary waits `timeout` for the last rank, then answers: allow it a little more.
    const auto grace =
        std::min(timeout / 10 + std::chrono::milliseconds(200), std::chrono::milliseconds(5000));
    const auto deadline = Clock::now() + timeout + grace;
    auto pause = std::chrono::microseconds(1);
    for (;;) {
      int done = 0;
      check_mpi(MPI_Testall(2, ex->requests.data(), &done, MPI_STATUSES_IGNORE), label);
      if (done) break;
      if (Clock::now() >= deadline) {
        broken_ = true;
        abandon(ex);
        throw TimeoutError(
            {primary},
            fmt::format("{} timed out after {} on rank {}: the primary rank {} did not "
                        "complete it, so some rank (possibly the primary) did not arrive. "
                        "Check that every rank makes the same cairn calls, or raise "
                        "barrier_timeout",
                        label, format_seconds(timeout), rank_, primary));
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
    const Verdict& verdict = ex->verdict;
    const std::string message(verdict.message, strnlen(verdict.message, kVerdictBytes));
    if (verdict.status == VerdictStatus::mismatch) {
      throw CollectiveMismatch(verdict.rank, std::string(verdict.field, strnlen(verdict.field, 32)),
                               message);
    }
    if (verdict.status == VerdictStatus::timeout) {
      broken_ = true;
      std::vector<int> missing(verdict.missing, verdict.missing + verdict.missing_count);
      throw TimeoutError(std::move(missing), message);
    }
    return;
  }

  // Primary: collect every record until the deadline.
  struct Collection {
    std::vector<Record> records;
    std::vector<MPI_Request> requests;
    std::vector<int> indices;
  };
  auto co = std::make_shared<Collection>();
  co->records.resize(static_cast<std::size_t>(size_));
  co->requests.assign(static_cast<std::size_t>(size_), MPI_REQUEST_NULL);
  co->indices.resize(static_cast<std::size_t>(size_));
  co->records[static_cast<std::size_t>(rank_)] = *mine;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    check_mpi(MPI_Irecv(&co->records[static_cast<std::size_t>(r)], sizeof(Record), MPI_BYTE, r,
                        kTagRecord, comm_, &co->requests[static_cast<std::size_t>(r)]),
              label);
  }
  const auto deadline = Clock::now() + timeout;
  auto pause = std::chrono::microseconds(1);
  bool timed_out = false;
  for (;;) {
    // Testsome (not Testall) so that each record that arrived frees its request: after a
    // timeout the requests still pending are exactly the ranks that did not arrive.
    int completed = 0;
    check_mpi(MPI_Testsome(size_, co->requests.data(), &completed, co->indices.data(),
                           MPI_STATUSES_IGNORE),
              label);
    if (completed == MPI_UNDEFINED) break;  // no active request left: everyone arrived
    if (Clock::now() >= deadline) {
      timed_out = true;
      break;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }

  auto verdict = std::make_shared<Verdict>();
  std::memset(verdict.get(), 0, sizeof(Verdict));
  std::vector<int> arrived;
  std::vector<int> missing;
  for (int r = 0; r < size_; ++r) {
    if (co->requests[static_cast<std::size_t>(r)] == MPI_REQUEST_NULL) {
      arrived.push_back(r);
    } else {
      missing.push_back(r);
    }
  }

  if (timed_out) {
    for (int r : missing) {
      MPI_Request& request = co->requests[static_cast<std::size_t>(r)];
      MPI_Cancel(&request);
      MPI_Request_free(&request);
    }
    verdict->status = VerdictStatus::timeout;
    verdict->missing_count = static_cast<std::int32_t>(std::min<std::size_t>(missing.size(), 64));
    std::copy_n(missing.begin(), verdict->missing_count, verdict->missing);
    copy_text(verdict->message,
              fmt::format("{} timed out after {}: rank(s) {} did not arrive (of {}). Check "
                          "that every rank makes the same cairn calls, or raise "
                          "barrier_timeout",
                          label, format_seconds(timeout), fmt::join(missing, ", "), size_));
  } else {
    // Compare every rank to the primary's own record; report the lowest differing rank.
    for (int r = 0; r < size_ && verdict->status == VerdictStatus::ok; ++r) {
      const Record& other = co->records[static_cast<std::size_t>(r)];
      const std::string other_kind(other.kind, strnlen(other.kind, sizeof(other.kind)));
      const std::string other_op(other.operation, strnlen(other.operation, kOperationBytes));
      std::string field;
      std::string detail;
      if (other_kind != kind || other_op != what.operation) {
        field = "operation";
        detail = fmt::format("rank {} is at {} '{}' while the primary rank {} is at {} '{}'", r,
                             other_kind, other_op, primary, kind, what.operation);
      } else if (other.step != what.step) {
        field = "step";
        detail = fmt::format("rank {} passed step {} to {} while the primary rank {} passed {}", r,
                             other.step, label, primary, what.step);
      } else if (other.structure != what.structure) {
        field = "structure";
        detail = fmt::format(
            "rank {} describes a different structure (hash {:016x}) in {} "
            "than the primary rank {} ({:016x}): item names or tree "
            "layout differ",
            r, other.structure, label, primary, what.structure);
      } else if (other.sequence != sequence) {
        field = "sequence";
        detail = fmt::format(
            "rank {} is at its collective step #{} while the primary rank {} "
            "is at #{} ({}): a rank skipped or repeated a cairn call",
            r, other.sequence, primary, sequence, label);
      }
      if (!field.empty()) {
        verdict->status = VerdictStatus::mismatch;
        verdict->rank = r;
        copy_text(verdict->field, field);
        copy_text(verdict->message,
                  fmt::format("collective mismatch: {}. Every rank must make the same cairn "
                              "calls in the same order with the same arguments",
                              detail));
      }
    }
  }

  // Tell every rank that arrived. Ranks that did not arrive get nothing: they time out.
  struct Answers {
    Verdict verdict;
    std::vector<MPI_Request> requests;
  };
  auto answers = std::make_shared<Answers>();
  answers->verdict = *verdict;
  for (int r : arrived) {
    if (r == rank_) continue;
    answers->requests.push_back(MPI_REQUEST_NULL);
    check_mpi(MPI_Isend(&answers->verdict, sizeof(Verdict), MPI_BYTE, r, kTagVerdict, comm_,
                        &answers->requests.back()),
              label);
  }
  if (timed_out) {
    // Do not wait on ranks that may be gone; the sends complete when they can.
    for (auto& request : answers->requests) MPI_Request_free(&request);
    abandon(answers);
    abandon(co);
    broken_ = true;
    std::string message(verdict->message, strnlen(verdict->message, kVerdictBytes));
    log::warn("comm.timeout", "what=\"{}\" missing=[{}]", label, fmt::join(missing, ","));
    throw TimeoutError(std::move(missing), std::move(message));
  }
  const auto send_deadline = Clock::now() + timeout;
  pause = std::chrono::microseconds(1);
  for (;;) {
    int done = 0;
    check_mpi(MPI_Testall(static_cast<int>(answers->requests.size()), answers->requests.data(),
                          &done, MPI_STATUSES_IGNORE),
              label);
    if (done) break;
    if (Clock::now() >= send_deadline) {
      broken_ = true;
      abandon(answers);
      throw TimeoutError({}, fmt::format("{}: could not deliver the verdict within {}", label,
                                         format_seconds(timeout)));
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
  if (verdict->status == VerdictStatus::mismatch) {
    throw CollectiveMismatch(
        verdict->rank, std::string(verdict->field, strnlen(verdict->field, 32)),
        std::string(verdict->message, strnlen(verdict->message, kVerdictBytes)));
  }
}

// ---------------------------------------------------------------- verdicts

void Comm::all_ok(bool local_ok, std::string_view message, ErrorCode code) const {
  check_usable("all_ok");
  // The full message goes to this rank's log; the exchanged one is cut so that one rank
  // cannot flood the others. A combined error from an inner collective was logged there.
  if (!local_ok && !detail::is_combined_error(message, size_)) {
    log::warn("collective.failure", "code=\"{}\" message=\"{}\"", to_string(code), message);
  }
  struct Buffers {
    std::array<std::int32_t, 3> mine{};
    std::vector<std::int32_t> all;
    std::vector<int> counts;
    std::vector<int> displacements;
    std::string text;
    std::vector<char> texts;
  };
  auto b = std::make_shared<Buffers>();
  b->text = detail::cut_message(message, detail::kCombinedErrorMaxBytes);
  b->mine = {local_ok ? 1 : 0, static_cast<std::int32_t>(code),
             static_cast<std::int32_t>(local_ok ? 0 : b->text.size())};
  b->all.resize(3 * static_cast<std::size_t>(size_));
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Iallgather(b->mine.data(), 3, MPI_INT32_T, b->all.data(), 3, MPI_INT32_T, comm_,
                           &request),
            "all_ok");
  try {
    wait(request, "all_ok");
  } catch (...) {
    abandon(b);
    throw;
  }
  bool everyone_ok = true;
  ErrorCode first_code = ErrorCode::internal;
  b->counts.resize(static_cast<std::size_t>(size_));
  b->displacements.resize(static_cast<std::size_t>(size_));
  std::size_t total = 0;
  for (int r = 0; r < size_; ++r) {
    if (everyone_ok && b->all[3 * r] != 1) first_code = static_cast<ErrorCode>(b->all[3 * r + 1]);
    everyone_ok = everyone_ok && b->all[3 * r] == 1;
    b->counts[r] = b->all[3 * r + 2];
    b->displacements[r] = checked_count(total, "all_ok (messages)");
    total += static_cast<std::size_t>(b->counts[r]);
  }
  if (everyone_ok) return;
  if (first_code < ErrorCode::invalid_argument || first_code > ErrorCode::internal) {
    first_code = ErrorCode::internal;
  }
  // Only the primary collects the messages and combines them; every rank gets the combined
  // message, whose size does not grow with the number of ranks.
  const int primary = options_.primary_rank;
  if (rank_ == primary) b->texts.resize(std::max<std::size_t>(total, 1));
  check_mpi(MPI_Igatherv(b->text.data(), b->mine[2], MPI_CHAR, b->texts.data(), b->counts.data(),
                         b->displacements.data(), MPI_CHAR, primary, comm_, &request),
            "all_ok (messages)");
  try {
    wait(request, "all_ok (messages)");
  } catch (...) {
    abandon(b);
    throw;
  }
  std::string combined;
  if (rank_ == primary) {
    std::vector<detail::RankFailure> failures;
    for (int r = 0; r < size_; ++r) {
      if (b->all[3 * r] == 1) continue;
      failures.push_back({r, std::string_view(b->texts.data() + b->displacements[r],
                                              static_cast<std::size_t>(b->counts[r]))});
    }
    combined = detail::combine_rank_errors(failures, size_);
  }
  throw_error(first_code, broadcast(combined, primary));
}

void Comm::run_all(std::string_view what, const std::function<void()>& fn) const {
  bool ok = true;
  std::string message;
  ErrorCode code = ErrorCode::internal;
  try {
    fn();
  } catch (const std::exception& e) {
    ok = false;
    code = error_code_of(e);
    message = e.what();
  } catch (...) {
    ok = false;
    message = "unknown exception";
  }
  try {
    all_ok(ok, message, code);
  } catch (const Error& e) {
    // Callers often end `what` with ':' already.
    const std::string_view separator = what.ends_with(':') ? " " : ": ";
    throw_error(e.code(), fmt::format("{}{}{}", what, separator, e.what()));
  }
}

// ---------------------------------------------------------------- reductions

std::int64_t Comm::reduce(std::int64_t local, MPI_Op op, std::string_view what) const {
  check_usable(what);
  struct Buffers {
    std::int64_t in;
    std::int64_t out;
  };
  auto b = std::make_shared<Buffers>(Buffers{local, 0});
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Iallreduce(&b->in, &b->out, 1, MPI_INT64_T, op, comm_, &request), what);
  try {
    wait(request, what);
  } catch (...) {
    abandon(b);
    throw;
  }
  return b->out;
}

std::int64_t Comm::sum(std::int64_t local) const { return reduce(local, MPI_SUM, "sum"); }
std::int64_t Comm::max(std::int64_t local) const { return reduce(local, MPI_MAX, "max"); }
std::int64_t Comm::min(std::int64_t local) const { return reduce(local, MPI_MIN, "min"); }
std::vector<std::int64_t> Comm::max(std::span<const std::int64_t> local) const {
  const auto length = static_cast<std::int64_t>(local.size());
  const std::int64_t longest = max(length);
  if (min(length) != longest) {
    throw CollectiveMismatch(-1, "length",
                             fmt::format("element-wise max: the ranks pass different numbers "
                                         "of values (this rank {}, the most {})",
                                         length, longest));
  }
  auto buffers = std::make_shared<std::vector<std::int64_t>>(2 * local.size());
  std::copy(local.begin(), local.end(), buffers->begin());
  const int count = static_cast<int>(local.size());
  MPI_Request request = MPI_REQUEST_NULL;
  check_usable("element-wise max");
  check_mpi(MPI_Iallreduce(buffers->data(), buffers->data() + local.size(), count, MPI_INT64_T,
                           MPI_MAX, comm_, &request),
            "element-wise max");
  try {
    wait(request, "element-wise max");
  } catch (...) {
    abandon(buffers);
    throw;
  }
  return {buffers->begin() + static_cast<std::ptrdiff_t>(local.size()), buffers->end()};
}
bool Comm::any(bool local) const { return max(local ? 1 : 0) == 1; }
bool Comm::all(bool local) const { return min(local ? 1 : 0) == 1; }

// ---------------------------------------------------------------- data exchange

std::vector<std::byte> Comm::broadcast_bytes(std::span<const std::byte> data,
                                             std::optional<int> root) const {
  check_usable("broadcast");
  const int from = root.value_or(options_.primary_rank);
  if (from < 0 || from >= size_) {
    throw InvalidArgument(fmt::format("broadcast: root {} is not a rank (size {})", from, size_));
  }
  struct Buffers {
    std::uint64_t size = 0;
    std::vector<std::byte> data;
  };
  auto b = std::make_shared<Buffers>();
  if (rank_ == from) {
    checked_count(data.size(), "broadcast");
    b->size = data.size();
    b->data.assign(data.begin(), data.end());
  }
  MPI_Request request = MPI_REQUEST_NULL;
  try {
    check_mpi(MPI_Ibcast(&b->size, 1, MPI_UINT64_T, from, comm_, &request), "broadcast");
    wait(request, "broadcast (size)");
    b->data.resize(b->size);
    if (b->size > 0) {
      check_mpi(
          MPI_Ibcast(b->data.data(), static_cast<int>(b->size), MPI_BYTE, from, comm_, &request),
          "broadcast");
      wait(request, "broadcast (data)");
    }
  } catch (...) {
    abandon(b);
    throw;
  }
  return std::move(b->data);
}

std::string Comm::broadcast(std::string_view text, std::optional<int> root) const {
  return as_string(broadcast_bytes(as_bytes(text), root));
}

boost::json::value Comm::broadcast_json(const boost::json::value& value,
                                        std::optional<int> root) const {
  const int from = root.value_or(options_.primary_rank);
  const std::string text = rank_ == from ? boost::json::serialize(value) : std::string();
  return parse_json(broadcast(text, root), "broadcast");
}

std::vector<std::vector<std::byte>> Comm::gather_bytes(std::span<const std::byte> data,
                                                       std::optional<int> root) const {
  check_usable("gather");
  const int to = root.value_or(options_.primary_rank);
  if (to < 0 || to >= size_) {
    throw InvalidArgument(fmt::format("gather: root {} is not a rank (size {})", to, size_));
  }
  struct Buffers {
    int size = 0;
    std::vector<int> sizes;
    std::vector<int> displacements;
    std::vector<std::byte> mine;
    std::vector<std::byte> all;
  };
  auto b = std::make_shared<Buffers>();
  b->size = checked_count(data.size(), "gather");
  b->mine.assign(data.begin(), data.end());
  b->sizes.resize(static_cast<std::size_t>(size_));
  MPI_Request request = MPI_REQUEST_NULL;
  try {
    check_mpi(MPI_Igather(&b->size, 1, MPI_INT, b->sizes.data(), 1, MPI_INT, to, comm_, &request),
              "gather");
    wait(request, "gather (sizes)");
    std::size_t total = 0;
    if (rank_ == to) {
      b->displacements.resize(static_cast<std::size_t>(size_));
      for (int r = 0; r < size_; ++r) {
        b->displacements[r] = checked_count(total, "gather");
        total += static_cast<std::size_t>(b->sizes[r]);
      }
      checked_count(total, "gather");
      b->all.resize(std::max<std::size_t>(total, 1));
    }
    check_mpi(MPI_Igatherv(b->mine.data(), b->size, MPI_BYTE, b->all.data(), b->sizes.data(),
                           b->displacements.data(), MPI_BYTE, to, comm_, &request),
              "gather");
    wait(request, "gather (data)");
  } catch (...) {
    abandon(b);
    throw;
  }
  std::vector<std::vector<std::byte>> result;
  if (rank_ != to) return result;
  result.reserve(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    auto first = b->all.begin() + b->displacements[r];
    result.emplace_back(first, first + b->sizes[r]);
  }
  return result;
}

std::vector<std::string> Comm::gather(std::string_view text, std::optional<int> root) const {
  std::vector<std::string> result;
  for (auto& bytes : gather_bytes(as_bytes(text), root)) result.push_back(as_string(bytes));
  return result;
}

std::vector<boost::json::value> Comm::gather_json(const boost::json::value& value,
                                                  std::optional<int> root) const {
  std::vector<boost::json::value> result;
  for (auto& text : gather(boost::json::serialize(value), root)) {
    result.push_back(parse_json(text, "gather"));
  }
  return result;
}

std::vector<std::vector<std::byte>> Comm::allgather_bytes(std::span<const std::byte> data) const {
  check_usable("allgather");
  struct Buffers {
    int size = 0;
    std::vector<int> sizes;
    std::vector<int> displacements;
    std::vector<std::byte> mine;
    std::vector<std::byte> all;
  };
  auto b = std::make_shared<Buffers>();
  b->size = checked_count(data.size(), "allgather");
  b->mine.assign(data.begin(), data.end());
  b->sizes.resize(static_cast<std::size_t>(size_));
  b->displacements.resize(static_cast<std::size_t>(size_));
  MPI_Request request = MPI_REQUEST_NULL;
  try {
    check_mpi(MPI_Iallgather(&b->size, 1, MPI_INT, b->sizes.data(), 1, MPI_INT, comm_, &request),
              "allgather");
    wait(request, "allgather (sizes)");
    std::size_t total = 0;
    for (int r = 0; r < size_; ++r) {
      b->displacements[r] = checked_count(total, "allgather");
      total += static_cast<std::size_t>(b->sizes[r]);
    }
    checked_count(total, "allgather");
    b->all.resize(std::max<std::size_t>(total, 1));
    check_mpi(MPI_Iallgatherv(b->mine.data(), b->size, MPI_BYTE, b->all.data(), b->sizes.data(),
                              b->displacements.data(), MPI_BYTE, comm_, &request),
              "allgather");
    wait(request, "allgather (data)");
  } catch (...) {
    abandon(b);
    throw;
  }
  std::vector<std::vector<std::byte>> result;
  result.reserve(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    auto first = b->all.begin() + b->displacements[r];
    result.emplace_back(first, first + b->sizes[r]);
  }
  return result;
}

std::vector<std::string> Comm::allgather(std::string_view text) const {
  std::vector<std::string> result;
  for (auto& bytes : allgather_bytes(as_bytes(text))) result.push_back(as_string(bytes));
  return result;
}

std::vector<boost::json::value> Comm::allgather_json(const boost::json::value& value) const {
  std::vector<boost::json::value> result;
  for (auto& text : allgather(boost::json::serialize(value))) {
    result.push_back(parse_json(text, "allgather"));
  }
  return result;
}

std::vector<std::int64_t> Comm::allgather(std::int64_t value) const {
  check_usable("allgather");
  struct Buffers {
    std::int64_t mine;
    std::vector<std::int64_t> all;
  };
  auto b = std::make_shared<Buffers>();
  b->mine = value;
  b->all.resize(static_cast<std::size_t>(size_));
  MPI_Request request = MPI_REQUEST_NULL;
  try {
    check_mpi(
        MPI_Iallgather(&b->mine, 1, MPI_INT64_T, b->all.data(), 1, MPI_INT64_T, comm_, &request),
        "allgather");
    wait(request, "allgather (integers)");
  } catch (...) {
    abandon(b);
    throw;
  }
  return b->all;
}

std::vector<std::int64_t> Comm::common_steps(std::span<const std::int64_t> local_steps) const {
  std::vector<std::int64_t> mine(local_steps.begin(), local_steps.end());
  std::sort(mine.begin(), mine.end());
  mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
  const std::span<const std::byte> bytes{reinterpret_cast<const std::byte*>(mine.data()),
                                         mine.size() * sizeof(std::int64_t)};
  std::vector<std::int64_t> common = mine;
  for (const auto& theirs_bytes : allgather_bytes(bytes)) {
    std::vector<std::int64_t> theirs(theirs_bytes.size() / sizeof(std::int64_t));
    if (!theirs.empty()) {
      std::memcpy(theirs.data(), theirs_bytes.data(), theirs.size() * sizeof(std::int64_t));
    }
    std::vector<std::int64_t> both;
    std::set_intersection(common.begin(), common.end(), theirs.begin(), theirs.end(),
                          std::back_inserter(both));
    common = std::move(both);
  }
  return common;
}

}  // namespace cairn
