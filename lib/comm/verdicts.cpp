// Verdicts (a local success flag made collective, with the failing ranks' messages combined)
// and reductions.
#include <cairn/comm.hpp>

#include <array>
#include <fmt/format.h>

#include "base/combined_error.hpp"
#include "base/first_error.hpp"
#include "base/log.hpp"
#include "comm/deadline.hpp"

namespace cairn {

void Comm::all_ok(bool local_ok, std::string_view message, ErrorCode code) const {
  check_usable("all_ok");
  // The full message goes to this rank's log at debug level; the exchanged one is cut so
  // that one rank cannot flood the others. The primary logs the combined message once below.
  // A combined error from an inner collective was logged there.
  if (!local_ok && !base::is_combined_error(message, size_)) {
    base::log::debug("collective.rank_failure", "code=\"{}\" message=\"{}\"", to_string(code),
                     message);
  }
  struct Buffers {
    std::array<std::int32_t, 3> mine{};  // ok, code, bytes of the message
    std::vector<std::int32_t> all;
    std::vector<int> counts;
    std::vector<int> displacements;
    std::string text;
    std::vector<char> texts;
  };
  auto b = std::make_shared<Buffers>();
  b->text = base::cut_message(message, base::kCombinedErrorMaxBytes);
  b->mine = {local_ok ? 1 : 0, static_cast<std::int32_t>(code),
             static_cast<std::int32_t>(local_ok ? 0 : b->text.size())};
  b->all.resize(3 * static_cast<std::size_t>(size_));
  start_and_wait(b, "all_ok", [&](MPI_Request* request) {
    return MPI_Iallgather(b->mine.data(), 3, MPI_INT32_T, b->all.data(), 3, MPI_INT32_T, comm_,
                          request);
  });
  int first_failed = -1;
  for (int r = 0; r < size_; ++r) {
    if (first_failed < 0 && b->all[3 * r] != 1) first_failed = r;
    b->counts.push_back(b->all[3 * r + 2]);
  }
  if (first_failed < 0) return;
  auto first_code = static_cast<ErrorCode>(b->all[3 * first_failed + 1]);
  if (first_code < ErrorCode::invalid_argument || first_code > ErrorCode::internal) {
    first_code = ErrorCode::internal;
  }
  // Only the primary collects the messages and combines them; every rank gets the combined
  // message, whose size does not grow with the number of ranks.
  const std::size_t total =
      detail::displacements_of(b->counts, b->displacements, "all_ok (messages)");
  const int primary = options_.primary_rank;
  if (rank_ == primary) b->texts.resize(std::max<std::size_t>(total, 1));
  start_and_wait(b, "all_ok (messages)", [&](MPI_Request* request) {
    return MPI_Igatherv(b->text.data(), b->mine[2], MPI_CHAR, b->texts.data(), b->counts.data(),
                        b->displacements.data(), MPI_CHAR, primary, comm_, request);
  });
  std::string combined;
  if (rank_ == primary) {
    std::vector<base::RankFailure> failures;
    bool fresh = false;  // a failure not already logged by an inner collective
    for (int r = 0; r < size_; ++r) {
      if (b->all[3 * r] == 1) continue;
      failures.push_back({r, std::string_view(b->texts.data() + b->displacements[r],
                                              static_cast<std::size_t>(b->counts[r]))});
      fresh = fresh || !base::is_combined_error(failures.back().message, size_);
    }
    combined = base::combine_rank_errors(failures, size_);
    if (fresh) {
      base::log::warn("collective.failure", "code=\"{}\" message=\"{}\"", to_string(first_code),
                      combined);
    }
  }
  throw_error(first_code, broadcast(combined, primary));
}

void Comm::run_all(std::string_view what, const std::function<void()>& fn) const {
  base::FirstError failure;
  try {
    fn();
  } catch (const std::exception& e) {
    failure.record(e);
  } catch (...) {
    failure.record(Error(ErrorCode::internal, "unknown exception"));
  }
  try {
    failure.report(*this);
  } catch (const Error& e) {
    // Callers often end `what` with ':' already.
    const std::string_view separator = what.ends_with(':') ? " " : ": ";
    throw_error(e.code(), fmt::format("{}{}{}", what, separator, e.what()));
  }
}

std::int64_t Comm::reduce(std::int64_t local, MPI_Op op, std::string_view what) const {
  check_usable(what);
  struct Buffers {
    std::int64_t in;
    std::int64_t out;
  };
  auto b = std::make_shared<Buffers>(Buffers{local, 0});
  start_and_wait(b, what, [&](MPI_Request* request) {
    return MPI_Iallreduce(&b->in, &b->out, 1, MPI_INT64_T, op, comm_, request);
  });
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
  check_usable("element-wise max");
  start_and_wait(buffers, "element-wise max", [&](MPI_Request* request) {
    return MPI_Iallreduce(buffers->data(), buffers->data() + local.size(),
                          static_cast<int>(local.size()), MPI_INT64_T, MPI_MAX, comm_, request);
  });
  return {buffers->begin() + static_cast<std::ptrdiff_t>(local.size()), buffers->end()};
}

bool Comm::any(bool local) const { return max(local ? 1 : 0) == 1; }
bool Comm::all(bool local) const { return min(local ? 1 : 0) == 1; }

}  // namespace cairn
