#include "base/combined_error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <unordered_map>
#include <vector>

namespace cairn::base {
namespace {

constexpr std::string_view kCutMarker = "...[cut]";

// A message and the ranks that failed with it.
struct Group {
  std::string_view message;
  std::vector<int> ranks;
};

}  // namespace

std::string cut_message(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  if (max_bytes <= kCutMarker.size()) return std::string(kCutMarker.substr(0, max_bytes));
  std::size_t keep = max_bytes - kCutMarker.size();
  // Never end inside a UTF-8 sequence: step back over continuation bytes.
  while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80) --keep;
  std::string out(text.substr(0, keep));
  out += kCutMarker;
  return out;
}

std::string format_rank_ranges(std::span<const int> ranks, std::size_t max_bytes) {
  if (ranks.size() == 1) return fmt::format("rank {}", ranks.front());
  std::string out = "ranks ";
  const std::string total = fmt::format(",... ({} ranks)", ranks.size());
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    std::string range = j == i       ? fmt::format("{}", ranks[i])
                        : j == i + 1 ? fmt::format("{},{}", ranks[i], ranks[j])
                                     : fmt::format("{}-{}", ranks[i], ranks[j]);
    if (i > 0) range.insert(0, ",");
    // Room for the total must remain in case a later range does not fit.
    const bool last = j + 1 == ranks.size();
    if (out.size() + range.size() + (last ? 0 : total.size()) > max_bytes) {
      out += total;
      return out;
    }
    out += range;
    i = j + 1;
  }
  return out;
}

bool is_combined_error(std::string_view message, int size) noexcept {
  constexpr std::string_view kLead = "failed on ";
  for (std::size_t at = message.find(kLead); at != std::string_view::npos;
       at = message.find(kLead, at + 1)) {
    const char* p = message.data() + at + kLead.size();
    const char* end = message.data() + message.size();
    int failed = 0;
    auto parsed = std::from_chars(p, end, failed);
    if (parsed.ec != std::errc() || parsed.ptr == p) continue;
    std::string_view rest(parsed.ptr, static_cast<std::size_t>(end - parsed.ptr));
    if (!rest.starts_with(" of ")) continue;
    p = parsed.ptr + 4;
    int of = 0;
    parsed = std::from_chars(p, end, of);
    if (parsed.ec != std::errc() || parsed.ptr == p || of != size) continue;
    rest = std::string_view(parsed.ptr, static_cast<std::size_t>(end - parsed.ptr));
    if (rest.starts_with(" rank")) return true;
  }
  return false;
}

std::string combine_rank_errors(std::span<const RankFailure> failures, int size) {
  if (failures.empty()) return fmt::format("failed on 0 of {} ranks", size);

  std::vector<Group> groups;
  std::unordered_map<std::string_view, std::size_t> group_of;
  for (const auto& failure : failures) {
    const auto [it, added] = group_of.try_emplace(failure.message, groups.size());
    if (added) groups.push_back({failure.message, {}});
    groups[it->second].ranks.push_back(failure.rank);
  }
  for (auto& group : groups) std::sort(group.ranks.begin(), group.ranks.end());

  // An error every rank already shares as a combined one (a failed collective inside another
  // that fails because of it) is passed on as it is instead of being quoted once more.
  if (groups.size() == 1 && failures.size() == static_cast<std::size_t>(size) &&
      is_combined_error(groups.front().message, size)) {
    return cut_message(groups.front().message, kCombinedErrorMaxBytes);
  }

  std::string out =
      fmt::format("failed on {} of {} rank{}: ", failures.size(), size, size == 1 ? "" : "s");
  const std::size_t shown = std::min(groups.size(), kCombinedErrorDistinctShown);
  std::string tail;
  if (groups.size() > shown) {
    std::vector<int> others;
    for (std::size_t g = shown; g < groups.size(); ++g) {
      others.insert(others.end(), groups[g].ranks.begin(), groups[g].ranks.end());
    }
    std::sort(others.begin(), others.end());
    const std::size_t hidden = groups.size() - shown;
    tail = fmt::format("; and {} other message{} on {} (each rank's message is in its debug log)",
                       hidden, hidden == 1 ? "" : "s", format_rank_ranges(others));
  }
  // What is left for the quoted messages is shared equally between them.
  const std::size_t room =
      kCombinedErrorMaxBytes - std::min(kCombinedErrorMaxBytes, out.size() + tail.size());
  const std::size_t share = room / shown;
  for (std::size_t g = 0; g < shown; ++g) {
    std::string part = format_rank_ranges(groups[g].ranks);
    part += ": ";
    const std::size_t left = share > part.size() + 2 ? share - part.size() - 2 : 0;
    part += cut_message(groups[g].message, left);
    if (g > 0) out += "; ";
    out += part;
  }
  out += tail;
  return cut_message(out, kCombinedErrorMaxBytes);
}

}  // namespace cairn::base
