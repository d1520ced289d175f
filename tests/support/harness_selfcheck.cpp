// Checks the MPI test harness itself: this test fails on the last rank only, and ctest
// expects the case to fail (WILL_FAIL). If the harness ever let a one-rank failure pass,
// this case would turn red.
#include <gtest/gtest.h>

#include "support/test_support.hpp"

TEST(Harness, FailureOnOneRankFailsTheCase) {
  const int last = cairn::testing::world_size() - 1;
  EXPECT_NE(cairn::testing::world_rank(), last) << "deliberate failure on the last rank";
}
