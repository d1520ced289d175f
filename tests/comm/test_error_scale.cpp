// Tests of the error of a failed collective as the number of ranks grows (registered at 1, 2,
// 4 and 64 ranks): one readable message of bounded size, identical messages grouped, no
// nesting when a failed collective's error is reported by the next one.
#include <cairn/comm.hpp>
#include <gtest/gtest.h>

#include <string>

#include "base/combined_error.hpp"
#include "support/test_support.hpp"

using cairn::Comm;
using cairn::testing::world_rank;
using cairn::testing::world_size;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string ranks_text(int size) { return size == 1 ? "rank" : "ranks"; }

}  // namespace

TEST(CollectiveErrors, IdenticalMessagesAreGroupedWithTheirRanks) {
  Comm comm(MPI_COMM_WORLD);
  const int n = world_size();
  try {
    comm.all_ok(false, "No space left on device writing /ckpt/10", cairn::ErrorCode::io);
    FAIL() << "expected IoError";
  } catch (const cairn::IoError& e) {
    const std::string ranks = n == 1   ? "rank 0"
                              : n == 2 ? "ranks 0,1"
                                       : "ranks 0-" + std::to_string(n - 1);
    const std::string expected = "failed on " + std::to_string(n) + " of " + std::to_string(n) +
                                 " " + ranks_text(n) + ": " + ranks +
                                 ": No space left on device writing /ckpt/10";
    EXPECT_EQ(std::string(e.what()), expected);
  }
}

TEST(CollectiveErrors, AFailedCollectiveReportedByTheNextIsNotNested) {
  // Each rank fails with its own long message; the combined error every rank gets is then
  // the local failure of an enclosing step (as a save reports a failed write).
  Comm comm(MPI_COMM_WORLD);
  const int n = world_size();
  const std::string own =
      "write of shard " + std::to_string(world_rank()) + " failed: " + std::string(300, 'x');
  std::string inner;
  try {
    comm.all_ok(false, own, cairn::ErrorCode::io);
  } catch (const cairn::Error& e) {
    inner = e.what();
  }
  ASSERT_FALSE(inner.empty());
  try {
    comm.run_all("save step 10", [&] { throw cairn::IoError("/ckpt/10", inner); });
    FAIL() << "expected IoError";
  } catch (const cairn::IoError& e) {
    const std::string message = e.what();
    EXPECT_LE(message.size(), cairn::base::kCombinedErrorMaxBytes + 20) << message.size();
    EXPECT_EQ(count(message, "failed on"), 1u) << message.substr(0, 2000);
    EXPECT_TRUE(message.starts_with("save step 10: failed on " + std::to_string(n) + " of " +
                                    std::to_string(n) + " " + ranks_text(n) +
                                    ": rank 0: write of "
                                    "shard 0 failed"))
        << message.substr(0, 300);
    if (n > 3) {
      // The messages not quoted are counted, with their ranks.
      const std::string others = n == 4 ? "and 1 other message on rank 3"
                                        : "and " + std::to_string(n - 3) +
                                              " other messages on ranks 3-" + std::to_string(n - 1);
      EXPECT_NE(message.find(others + " (each rank's message is in its debug log)"),
                std::string::npos)
          << message.substr(0, 2000);
    }
  }
}

TEST(CollectiveErrors, OneFailingRankAmongManyIsNamed) {
  Comm comm(MPI_COMM_WORLD);
  const int n = world_size();
  const int failing = n - 1;
  try {
    comm.run_all("restore step 3", [&] {
      if (comm.rank() == failing) throw cairn::FormatError("/x/cairn-tree.json", "shape", "bad");
    });
    FAIL() << "expected FormatError";
  } catch (const cairn::FormatError& e) {
    EXPECT_EQ(std::string(e.what()), "restore step 3: failed on 1 of " + std::to_string(n) + " " +
                                         ranks_text(n) + ": rank " + std::to_string(failing) +
                                         ": bad");
  }
}
