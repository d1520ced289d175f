// The agreement protocol: every rank sends what it is about to do to the primary, which
// compares the records against its own until a deadline and answers each rank that arrived
// with one verdict (ok, mismatch naming the first differing rank and field, or timeout naming
// the ranks that did not arrive).
#include <cairn/comm.hpp>

#include <array>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/log.hpp"
#include "comm/deadline.hpp"
#include "comm/mpi_check.hpp"

namespace cairn {
namespace {

using detail::abandon;
using detail::check_mpi;
using detail::Clock;
using detail::format_seconds;
using detail::poll_until;

// Tags of the point-to-point agreement protocol on cairn's private duplicate.
constexpr int kTagRecord = 0x6361;
constexpr int kTagVerdict = 0x6362;

constexpr std::size_t kOperationBytes = 192;
constexpr std::size_t kVerdictBytes = 1024;
constexpr std::size_t kFieldBytes = 32;

// What each rank sends to the primary at an agreement round.
struct Record {
  std::uint64_t sequence;
  std::int64_t step;
  std::uint64_t options;
  std::uint64_t structure;
  char kind[32];
  char operation[kOperationBytes];
};

enum class VerdictStatus : std::int32_t { ok = 0, mismatch = 1, timeout = 2 };

// What the primary answers.
struct Verdict {
  VerdictStatus status;
  std::int32_t rank;
  char field[kFieldBytes];
  char message[kVerdictBytes];
  std::int32_t missing_count;
  std::int32_t missing[64];
};

template <std::size_t N>
void copy_text(char (&destination)[N], std::string_view text) {
  std::memset(destination, 0, N);
  std::memcpy(destination, text.data(), std::min(text.size(), N - 1));
}

template <std::size_t N>
std::string text_of(const char (&source)[N]) {
  return {source, strnlen(source, N)};
}

// One round as seen by one rank.
struct Round {
  MPI_Comm comm;
  int rank;
  int size;
  int primary;
  std::string label;  // "barrier 'name'"
  std::chrono::milliseconds timeout;
  bool& broken;  // the Comm's: set when the round leaves ranks at different points
};

// Throws the verdict's error on this rank, if any.
void throw_verdict(const Verdict& verdict, bool& broken) {
  if (verdict.status == VerdictStatus::mismatch) {
    throw CollectiveMismatch(verdict.rank, text_of(verdict.field), text_of(verdict.message));
  }
  if (verdict.status == VerdictStatus::timeout) {
    broken = true;
    throw TimeoutError(std::vector<int>(verdict.missing, verdict.missing + verdict.missing_count),
                       text_of(verdict.message));
  }
}

// A rank other than the primary: sends its record, waits for the verdict.
void take_part(const Round& round, const Record& mine) {
  struct Exchange {
    Record record;
    Verdict verdict;
    std::array<MPI_Request, 2> requests{MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  };
  auto ex = std::make_shared<Exchange>();
  ex->record = mine;
  check_mpi(MPI_Isend(&ex->record, sizeof(Record), MPI_BYTE, round.primary, kTagRecord, round.comm,
                      &ex->requests[0]),
            round.label);
  check_mpi(MPI_Irecv(&ex->verdict, sizeof(Verdict), MPI_BYTE, round.primary, kTagVerdict,
                      round.comm, &ex->requests[1]),
            round.label);
  // The primary waits `timeout` for the last rank, then answers: allow it a little more.
  const auto grace = std::min(round.timeout / 10 + std::chrono::milliseconds(200),
                              std::chrono::milliseconds(5000));
  const bool answered = poll_until(Clock::now() + round.timeout + grace, [&] {
    int done = 0;
    check_mpi(MPI_Testall(2, ex->requests.data(), &done, MPI_STATUSES_IGNORE), round.label);
    return done != 0;
  });
  if (!answered) {
    round.broken = true;
    abandon(ex);
    throw TimeoutError(
        {round.primary},
        fmt::format("{} timed out after {} on rank {}: the primary rank {} did not complete it, "
                    "so some rank (possibly the primary) did not arrive. Check that every rank "
                    "makes the same cairn calls, or raise barrier_timeout",
                    round.label, format_seconds(round.timeout), round.rank, round.primary));
  }
  throw_verdict(ex->verdict, round.broken);
}

// The primary's receipt of every rank's record until the deadline. After a timeout the
// requests still pending are exactly the ranks that did not arrive.
struct Collection {
  std::vector<Record> records;
  std::vector<MPI_Request> requests;
  std::vector<int> indices;
};

std::shared_ptr<Collection> collect(const Round& round, const Record& mine, bool& timed_out) {
  auto co = std::make_shared<Collection>();
  const auto size = static_cast<std::size_t>(round.size);
  co->records.resize(size);
  co->requests.assign(size, MPI_REQUEST_NULL);
  co->indices.resize(size);
  co->records[static_cast<std::size_t>(round.rank)] = mine;
  for (int r = 0; r < round.size; ++r) {
    if (r == round.rank) continue;
    check_mpi(MPI_Irecv(&co->records[static_cast<std::size_t>(r)], sizeof(Record), MPI_BYTE, r,
                        kTagRecord, round.comm, &co->requests[static_cast<std::size_t>(r)]),
              round.label);
  }
  timed_out = !poll_until(Clock::now() + round.timeout, [&] {
    // Testsome (not Testall) so that each record that arrived frees its request.
    int completed = 0;
    check_mpi(MPI_Testsome(round.size, co->requests.data(), &completed, co->indices.data(),
                           MPI_STATUSES_IGNORE),
              round.label);
    return completed == MPI_UNDEFINED;  // no active request left: everyone arrived
  });
  return co;
}

// The first difference between `other` (of rank r) and the primary's record, as a field name
// and a sentence; empty when they agree.
std::pair<std::string, std::string> difference(const Round& round, int r, const Record& other,
                                               const Record& mine) {
  const std::string kind = text_of(mine.kind);
  const std::string operation = text_of(mine.operation);
  if (text_of(other.kind) != kind || text_of(other.operation) != operation) {
    return {
        "operation",
        fmt::format("rank {} is at {} '{}' while the primary rank {} is at {} '{}'", r,
                    text_of(other.kind), text_of(other.operation), round.primary, kind, operation)};
  }
  if (other.step != mine.step) {
    return {"step", fmt::format("rank {} passed step {} to {} while the primary rank {} passed {}",
                                r, other.step, round.label, round.primary, mine.step)};
  }
  if (other.options != mine.options) {
    return {"options",
            fmt::format("rank {} passed options {:#x} to {} while the primary rank {} passed {:#x}",
                        r, other.options, round.label, round.primary, mine.options)};
  }
  if (other.structure != mine.structure) {
    return {"structure",
            fmt::format("rank {} describes a different structure (hash {:016x}) in {} than the "
                        "primary rank {} ({:016x}): item names or tree layout differ",
                        r, other.structure, round.label, round.primary, mine.structure)};
  }
  if (other.sequence != mine.sequence) {
    return {"sequence",
            fmt::format("rank {} is at its collective step #{} while the primary rank {} is at "
                        "#{} ({}): a rank skipped or repeated a cairn call",
                        r, other.sequence, round.primary, mine.sequence, round.label)};
  }
  return {};
}

// The primary's verdict on the records it collected.
Verdict judge(const Round& round, Collection& co, bool timed_out, std::vector<int>& missing) {
  Verdict verdict;
  std::memset(&verdict, 0, sizeof(Verdict));
  for (int r = 0; r < round.size; ++r) {
    if (co.requests[static_cast<std::size_t>(r)] != MPI_REQUEST_NULL) missing.push_back(r);
  }
  if (timed_out) {
    for (int r : missing) {
      MPI_Request& request = co.requests[static_cast<std::size_t>(r)];
      MPI_Cancel(&request);
      MPI_Request_free(&request);
    }
    verdict.status = VerdictStatus::timeout;
    verdict.missing_count = static_cast<std::int32_t>(std::min<std::size_t>(missing.size(), 64));
    std::copy_n(missing.begin(), verdict.missing_count, verdict.missing);
    copy_text(verdict.message,
              fmt::format("{} timed out after {}: rank(s) {} did not arrive (of {}). Check that "
                          "every rank makes the same cairn calls, or raise barrier_timeout",
                          round.label, format_seconds(round.timeout), fmt::join(missing, ", "),
                          round.size));
    return verdict;
  }
  // Compare every rank to the primary's own record; report the lowest differing rank.
  const Record& mine = co.records[static_cast<std::size_t>(round.rank)];
  for (int r = 0; r < round.size; ++r) {
    const auto [field, detail] =
        difference(round, r, co.records[static_cast<std::size_t>(r)], mine);
    if (field.empty()) continue;
    verdict.status = VerdictStatus::mismatch;
    verdict.rank = r;
    copy_text(verdict.field, field);
    copy_text(verdict.message,
              fmt::format("collective mismatch: {}. Every rank must make the same cairn calls in "
                          "the same order with the same arguments",
                          detail));
    break;
  }
  return verdict;
}

// The primary tells every rank that arrived; ranks that did not arrive get nothing and time
// out. After a timeout it does not wait on ranks that may be gone.
void answer(const Round& round, const Verdict& verdict, const std::shared_ptr<Collection>& co,
            std::vector<int> missing) {
  struct Answers {
    Verdict verdict;
    std::vector<MPI_Request> requests;
  };
  auto answers = std::make_shared<Answers>();
  answers->verdict = verdict;
  for (int r = 0; r < round.size; ++r) {
    if (r == round.rank || std::binary_search(missing.begin(), missing.end(), r)) continue;
    answers->requests.push_back(MPI_REQUEST_NULL);
    check_mpi(MPI_Isend(&answers->verdict, sizeof(Verdict), MPI_BYTE, r, kTagVerdict, round.comm,
                        &answers->requests.back()),
              round.label);
  }
  if (verdict.status == VerdictStatus::timeout) {
    for (auto& request : answers->requests) MPI_Request_free(&request);
    abandon(answers);
    abandon(co);
    round.broken = true;
    base::log::warn("comm.timeout", "what=\"{}\" missing=[{}]", round.label,
                    fmt::join(missing, ","));
    throw TimeoutError(std::move(missing), text_of(verdict.message));
  }
  const bool delivered = poll_until(Clock::now() + round.timeout, [&] {
    int done = 0;
    check_mpi(MPI_Testall(static_cast<int>(answers->requests.size()), answers->requests.data(),
                          &done, MPI_STATUSES_IGNORE),
              round.label);
    return done != 0;
  });
  if (!delivered) {
    round.broken = true;
    abandon(answers);
    throw TimeoutError({}, fmt::format("{}: could not deliver the verdict within {}", round.label,
                                       format_seconds(round.timeout)));
  }
  throw_verdict(verdict, round.broken);
}

}  // namespace

void Comm::barrier(std::string_view name) const { barrier(name, options_.barrier_timeout); }

void Comm::barrier(std::string_view name, std::chrono::milliseconds timeout) const {
  agree_impl({.operation = std::string(name)}, "barrier", timeout);
}

void Comm::agree(const Agreement& what) const {
  agree_impl(what, "agreement", options_.barrier_timeout);
}

void Comm::agree_impl(const Agreement& what, std::string_view kind,
                      std::chrono::milliseconds timeout) const {
  const Round round{.comm = comm_,
                    .rank = rank_,
                    .size = size_,
                    .primary = options_.primary_rank,
                    .label = fmt::format("{} '{}'", kind, what.operation),
                    .timeout = timeout,
                    .broken = broken_};
  check_usable(round.label);
  if (what.operation.size() >= kOperationBytes) {
    throw InvalidArgument(
        fmt::format("{}: the name is longer than {} characters", round.label, kOperationBytes - 1));
  }
  Record mine{};
  mine.sequence = ++sequence_;
  mine.step = what.step;
  mine.options = what.options;
  mine.structure = what.structure;
  copy_text(mine.kind, kind);
  copy_text(mine.operation, what.operation);
  if (rank_ != round.primary) {
    take_part(round, mine);
    return;
  }
  bool timed_out = false;
  const auto co = collect(round, mine, timed_out);
  std::vector<int> missing;
  const Verdict verdict = judge(round, *co, timed_out, missing);
  answer(round, verdict, co, std::move(missing));
}

}  // namespace cairn
