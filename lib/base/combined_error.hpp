// cairn — the message of an error that failed on several ranks (internal): how many ranks
// failed, identical messages grouped with their rank ranges, the first few distinct ones, in
// a size that does not grow with the number of ranks. Comm::all_ok() throws it; each rank's
// full message goes to that rank's log.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace cairn::base {

/// Most bytes of a combined error message, whatever the number of ranks and their messages.
/// Also the most bytes of one rank's message that all_ok() exchanges.
inline constexpr std::size_t kCombinedErrorMaxBytes = 4096;
/// Most distinct messages a combined error quotes; the others are counted, with their ranks.
inline constexpr std::size_t kCombinedErrorDistinctShown = 3;
/// Most bytes of one rank list ("ranks 0-3,7,9-12") in a combined error; a longer list is cut
/// and ends with the number of ranks it holds.
inline constexpr std::size_t kRankListMaxBytes = 200;

/// The message of one failing rank.
struct RankFailure {
  int rank = -1;
  std::string_view message;
};

/// "rank 7" or "ranks 0-3,7,9-12" for `ranks` (sorted ascending, no duplicates), cut to
/// about `max_bytes` with ",... (N ranks)" when longer. Not collective; throws only
/// std::bad_alloc.
[[nodiscard]] std::string format_rank_ranges(std::span<const int> ranks,
                                             std::size_t max_bytes = kRankListMaxBytes);

/// Whether `message` is (or ends in) a combined error of `size` ranks made by
/// combine_rank_errors(): it holds "failed on N of `size` rank". Not collective; never throws.
[[nodiscard]] bool is_combined_error(std::string_view message, int size) noexcept;

/// The message of an error that failed on `failures` (sorted by rank, one entry per failing
/// rank) out of `size` ranks:
///   "failed on 5 of 64 ranks: ranks 0-3: disk full ...; rank 9: bad shape"
/// Identical messages are grouped with their rank ranges, in the order of their first rank;
/// at most kCombinedErrorDistinctShown distinct messages are quoted and the rest counted; the
/// result is at most kCombinedErrorMaxBytes long. When every rank failed with the same
/// message and that message already is a combined error, it is returned as it is rather than
/// nested. Not collective; throws only std::bad_alloc.
[[nodiscard]] std::string combine_rank_errors(std::span<const RankFailure> failures, int size);

/// `text` cut to at most `max_bytes` bytes (at a UTF-8 character boundary) ending in
/// "...[cut]" when it was longer. Not collective; throws only std::bad_alloc.
[[nodiscard]] std::string cut_message(std::string_view text, std::size_t max_bytes);

}  // namespace cairn::base
