// Tests of "remember the first local failure, then agree" (base::FirstError): one failure
// kept whichever thread records first, and the verdict shared by every rank.
#include <cairn/comm.hpp>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "base/first_error.hpp"
#include "support/test_support.hpp"

using cairn::Comm;
using cairn::ErrorCode;
using cairn::base::FirstError;
using cairn::testing::world_rank;
using cairn::testing::world_size;

TEST(FirstError, KeepsOneOfTheFailuresThreadsRecordAtOnce) {
  FirstError failure;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&failure, t] {
      for (int i = 0; i < 1000; ++i) {
        failure.record(cairn::IoError("", "thread " + std::to_string(t) + " failed"));
        (void)failure.failed();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  ASSERT_TRUE(failure.failed());
  try {
    failure.throw_if_failed();
    FAIL() << "expected the remembered failure";
  } catch (const cairn::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io);
    const std::string message = e.what();
    EXPECT_TRUE(message.starts_with("thread ") && message.ends_with(" failed")) << message;
  }
}

TEST(FirstError, KeepsTheFirstFailureAndCountsAnUnknownExceptionAsInternal) {
  FirstError failure;
  EXPECT_FALSE(failure.failed());
  EXPECT_NO_THROW(failure.throw_if_failed());
  try {
    throw 42;
  } catch (...) {
    failure.record_current();
  }
  failure.record(cairn::InvalidArgument("later"));
  try {
    failure.throw_if_failed();
    FAIL() << "expected the remembered failure";
  } catch (const cairn::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::internal);
    EXPECT_STREQ(e.what(), "unknown exception");
  }
}

TEST(FirstError, ReportThrowsTheFailingRanksErrorOnEveryRank) {
  Comm comm(MPI_COMM_WORLD);
  FirstError nothing;
  EXPECT_NO_THROW(nothing.report(comm, "step 3: "));

  const int failing = world_size() - 1;
  FirstError failure;
  if (world_rank() == failing) {
    failure.record(cairn::FormatError("f.json", "version", "bad version in f.json"));
  }
  try {
    failure.report(comm, "step 3: ");
    FAIL() << "expected the failure of rank " << failing << " on every rank";
  } catch (const cairn::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::format);
    EXPECT_NE(std::string(e.what()).find("step 3: bad version in f.json"), std::string::npos)
        << e.what();
  }
  comm.barrier("after the report");
}
