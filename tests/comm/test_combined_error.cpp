// Tests of the message of an error that failed on many ranks (base::combine_rank_errors):
// grouping, rank ranges, the bound on its size, and no nesting, with synthetic inputs of up to
// 10,000 ranks. Pure functions: run on one rank.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/combined_error.hpp"

using cairn::base::combine_rank_errors;
using cairn::base::format_rank_ranges;
using cairn::base::kCombinedErrorMaxBytes;
using cairn::base::RankFailure;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// One failure per rank with messages[r]; `skip` ranks are left out (they succeeded).
std::vector<RankFailure> failures_of(const std::vector<std::string>& messages,
                                     const std::vector<bool>& failed) {
  std::vector<RankFailure> out;
  for (std::size_t r = 0; r < messages.size(); ++r) {
    if (failed[r]) out.push_back({static_cast<int>(r), messages[r]});
  }
  return out;
}

}  // namespace

TEST(CombinedError, GroupsIdenticalMessagesWithTheirRankRanges) {
  std::vector<std::string> messages(8, "disk full writing /ckpt/10/field/p.bin");
  messages[5] = "bad shape of leaf 'u'";
  std::vector<bool> failed(8, true);
  failed[4] = failed[6] = false;
  const auto message = combine_rank_errors(failures_of(messages, failed), 8);
  EXPECT_EQ(message,
            "failed on 6 of 8 ranks: ranks 0-3,7: disk full writing /ckpt/10/field/p.bin; rank 5: "
            "bad shape of leaf 'u'");
}

TEST(CombinedError, RankRangesJoinNeighboursAndCutLongLists) {
  EXPECT_EQ(format_rank_ranges(std::vector<int>{3}), "rank 3");
  EXPECT_EQ(format_rank_ranges(std::vector<int>{0, 1, 2, 3, 7, 9, 10}), "ranks 0-3,7,9,10");
  std::vector<int> even;
  for (int r = 0; r < 10000; r += 2) even.push_back(r);
  const auto list = format_rank_ranges(even, 200);
  EXPECT_LE(list.size(), 200u) << list;
  EXPECT_TRUE(list.starts_with("ranks 0,2,4,6")) << list;
  EXPECT_TRUE(list.ends_with(",... (5000 ranks)")) << list;
}

TEST(CombinedError, TenThousandIdenticalMessagesAreOneLine) {
  const std::vector<std::string> messages(10000, "No space left on device: /ckpt/20/field/p.bin");
  const auto message =
      combine_rank_errors(failures_of(messages, std::vector<bool>(10000, true)), 10000);
  EXPECT_EQ(message,
            "failed on 10000 of 10000 ranks: ranks 0-9999: No space left on device: "
            "/ckpt/20/field/p.bin");
}

TEST(CombinedError, TenThousandDistinctMessagesStayBounded) {
  std::vector<std::string> messages;
  for (int r = 0; r < 10000; ++r) {
    messages.push_back("write of shard " + std::to_string(r) + " failed: " + std::string(900, 'x'));
  }
  std::vector<bool> failed(10000, true);
  failed[1] = false;  // one rank succeeded
  const auto message = combine_rank_errors(failures_of(messages, failed), 10000);
  EXPECT_LE(message.size(), kCombinedErrorMaxBytes);
  EXPECT_TRUE(message.starts_with("failed on 9999 of 10000 ranks: rank 0: write of shard 0 "))
      << message.substr(0, 200);
  EXPECT_NE(message.find("; rank 2: write of shard 2 failed"), std::string::npos);
  EXPECT_NE(message.find("; rank 3: write of shard 3 failed"), std::string::npos);
  EXPECT_EQ(message.find("shard 4 failed"), std::string::npos);
  EXPECT_NE(message.find("and 9996 other messages on ranks 4-9999 (each rank's message is in its "
                         "debug log)"),
            std::string::npos)
      << message;
}

TEST(CombinedError, ScatteredFailuresOfTenThousandRanksStayBounded) {
  // Every third rank fails, each with a long message of its own: the rank list of the
  // messages not quoted is cut too.
  std::vector<std::string> messages;
  std::vector<bool> failed;
  for (int r = 0; r < 10000; ++r) {
    messages.push_back(std::string(5000, 'a' + static_cast<char>(r % 26)) + std::to_string(r));
    failed.push_back(r % 3 == 0);
  }
  const auto message = combine_rank_errors(failures_of(messages, failed), 10000);
  EXPECT_LE(message.size(), kCombinedErrorMaxBytes);
  EXPECT_TRUE(message.starts_with("failed on 3334 of 10000 ranks: rank 0: aaaa")) << message;
  EXPECT_NE(message.find("...[cut]; rank 3: dddd"), std::string::npos) << message;
  EXPECT_NE(message.find("(3331 ranks) (each rank's message is in its debug log)"),
            std::string::npos)
      << message;
}

TEST(CombinedError, ACombinedErrorIsNotNestedAgain) {
  std::vector<std::string> messages;
  for (int r = 0; r < 64; ++r) messages.push_back("shard " + std::to_string(r) + " failed");
  const auto inner = combine_rank_errors(failures_of(messages, std::vector<bool>(64, true)), 64);
  // Every rank got `inner` from the failed collective and reports it, prefixed, to the next.
  const std::string prefixed = "save step 10: " + inner;
  const std::vector<std::string> again(64, prefixed);
  const auto outer = combine_rank_errors(failures_of(again, std::vector<bool>(64, true)), 64);
  EXPECT_EQ(outer, prefixed);
  EXPECT_EQ(count(outer, "failed on"), 1u) << outer;
  // Only some ranks passing it on: quoted once, as a message of those ranks.
  std::vector<bool> some(64, false);
  some[0] = some[1] = true;
  const auto partial = combine_rank_errors(failures_of(again, some), 64);
  EXPECT_TRUE(
      partial.starts_with("failed on 2 of 64 ranks: ranks 0,1: save step 10: failed on "
                          "64 of 64 ranks"))
      << partial;
  EXPECT_LE(partial.size(), kCombinedErrorMaxBytes);
}

TEST(CombinedError, CutMessagesEndAtACharacterBoundary) {
  const std::string text = "caf\xc3\xa9 " + std::string(100, 'x');
  const auto cut = cairn::base::cut_message(text, 12);
  EXPECT_EQ(cut, "caf...[cut]");
  EXPECT_EQ(cairn::base::cut_message("short", 12), "short");
}
