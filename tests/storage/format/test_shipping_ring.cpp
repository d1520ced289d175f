// The shared-memory ring through which the ranks of a group ship their shards to the
// aggregator (storage/posix/shipping.hpp), in one process with a thread per member: the bytes
// arrive at the offsets they were shipped to, through many wraps of the rings and across gaps;
// a slot outside its member's region fails the aggregator and stops the member; a member
// stops when the aggregator leaves or does not drain within the timeout; the aggregator waits
// for a member that does not finish until the timeout, naming it, and not for one that left;
// no member attaches once the name is gone.
#include <gtest/gtest.h>

#include <cairn/error.hpp>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "storage/format/posix/shipping.hpp"

namespace cairn::testing {
namespace {

using storage::ShippingPlan;
using storage::ShippingRing;

constexpr std::uint64_t kRegion = std::uint64_t{1} << 20;

// A plan with `members` members (ranks 1, 2, ...), each with a region of kRegion bytes after
// the aggregator's, and a segment name of its own.
ShippingPlan plan_of(int members, std::chrono::milliseconds timeout) {
  static std::atomic<int> made{0};
  ShippingPlan plan{
      .segment = "/cairn-test-" + std::to_string(::getpid()) + "-" + std::to_string(made++),
      .file = "group.bin",
      .aggregator = 0,
      .timeout = timeout};
  for (int m = 0; m < members; ++m) {
    plan.members.push_back(
        {.rank = m + 1, .base = kRegion * static_cast<std::uint64_t>(m + 1), .limit = kRegion});
  }
  return plan;
}

std::byte pattern(std::uint64_t offset) { return static_cast<std::byte>((offset * 131) % 251); }

std::vector<std::byte> pattern_at(std::uint64_t offset, std::size_t bytes) {
  std::vector<std::byte> data(bytes);
  for (std::size_t i = 0; i < bytes; ++i) data[i] = pattern(offset + i);
  return data;
}

TEST(ShippingRing, BytesArriveWhereTheyWereShippedThroughManyWraps) {
  const ShippingPlan plan = plan_of(2, std::chrono::seconds(30));
  // 16 KiB of rings: the smallest slots (16 KiB, four per member); each member ships most of
  // its 1 MiB region, so that its ring wraps about sixteen times.
  auto aggregator = ShippingRing::create(plan, 16 << 10);
  std::vector<std::unique_ptr<ShippingRing>> members;
  for (int m = 0; m < 2; ++m) members.push_back(ShippingRing::attach(plan, m));
  aggregator->unlink();
  EXPECT_FALSE(std::filesystem::exists("/dev/shm" + plan.segment));

  std::vector<std::thread> threads;
  for (int m = 0; m < 2; ++m) {
    threads.emplace_back([&, m] {
      // Pieces of odd sizes, contiguous but for one gap of 5,000 bytes.
      std::uint64_t at = plan.members[static_cast<std::size_t>(m)].base;
      const std::uint64_t end = at + kRegion - 10'000;
      while (at < end) {
        const std::size_t bytes = std::min<std::uint64_t>(7'777, end - at);
        members[static_cast<std::size_t>(m)]->ship(at, pattern_at(at, bytes));
        at += bytes;
        if (at > plan.members[static_cast<std::size_t>(m)].base + kRegion / 2 &&
            at < plan.members[static_cast<std::size_t>(m)].base + kRegion / 2 + 7'777) {
          at += 5'000;
        }
      }
      members[static_cast<std::size_t>(m)]->finish();
    });
  }
  std::vector<std::byte> file(3 * kRegion);
  std::vector<bool> written(file.size(), false);
  aggregator->drain_all([&](int rank, std::uint64_t offset, std::span<const std::byte> data) {
    ASSERT_GE(offset, kRegion * static_cast<std::uint64_t>(rank));
    ASSERT_LE(offset + data.size(), kRegion * static_cast<std::uint64_t>(rank + 1));
    for (std::size_t i = 0; i < data.size(); ++i) {
      ASSERT_FALSE(written[offset + i]) << "offset " << offset + i << " written twice";
      file[offset + i] = data[i];
      written[offset + i] = true;
    }
  });
  for (auto& thread : threads) thread.join();
  std::uint64_t arrived = 0;
  for (std::uint64_t at = kRegion; at < file.size(); ++at) {
    if (!written[at]) continue;
    ++arrived;
    ASSERT_EQ(file[at], pattern(at)) << "offset " << at;
  }
  EXPECT_EQ(arrived, 2 * (kRegion - 10'000 - 5'000));
}

TEST(ShippingRing, AnOutOfRegionSlotFailsTheAggregatorAndStopsTheMember) {
  const ShippingPlan plan = plan_of(1, std::chrono::seconds(30));
  auto aggregator = ShippingRing::create(plan, 16 << 10);
  auto member = ShippingRing::attach(plan, 0);
  // Bytes that pass the end of its region, then a slot of another place: the first is handed
  // over.
  member->ship(2 * kRegion - 10, pattern_at(0, 20));
  member->ship(kRegion, pattern_at(0, 20));
  try {
    (void)aggregator->drain([](int, std::uint64_t, std::span<const std::byte>) {});
    ADD_FAILURE() << "a slot outside the member's region was written";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 shipped bytes [2097142, 2097162) outside its "
                                         "region [1048576, 2097152)"),
              std::string::npos)
        << e.what();
  }
  // The aggregator takes no more: once the member's four slots are full, it is told.
  try {
    for (std::uint64_t at = kRegion + 4096; at < 2 * kRegion; at += 64 << 10) {
      member->ship(at, pattern_at(at, 64 << 10));
    }
    ADD_FAILURE() << "the member shipped its whole region to a failed aggregator";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("the aggregator failed"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("group.bin"), std::string::npos) << e.what();
  }
}

TEST(ShippingRing, AMemberStopsWhenTheAggregatorLeavesOrDoesNotDrain) {
  {
    const ShippingPlan plan = plan_of(1, std::chrono::milliseconds(300));
    auto aggregator = ShippingRing::create(plan, 16 << 10);
    auto member = ShippingRing::attach(plan, 0);
    try {
      for (std::uint64_t at = kRegion; at < 2 * kRegion; at += 64 << 10) {
        member->ship(at, pattern_at(at, 64 << 10));
      }
      ADD_FAILURE() << "the member shipped its whole region that nobody drained";
    } catch (const TimeoutError& e) {
      EXPECT_EQ(e.missing_ranks(), std::vector<int>{0});
      EXPECT_NE(std::string(e.what()).find("rank 1: shipping its shards to aggregator rank 0"),
                std::string::npos)
          << e.what();
    }
  }
  const ShippingPlan plan = plan_of(1, std::chrono::seconds(30));
  auto aggregator = ShippingRing::create(plan, 16 << 10);
  auto member = ShippingRing::attach(plan, 0);
  aggregator.reset();
  try {
    for (std::uint64_t at = kRegion; at < 2 * kRegion; at += 64 << 10) {
      member->ship(at, pattern_at(at, 64 << 10));
    }
    ADD_FAILURE() << "the member shipped its whole region after the aggregator left";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("the aggregator left the save"), std::string::npos)
        << e.what();
  }
}

TEST(ShippingRing, TheAggregatorWaitsForAnUnfinishedMemberUntilTheTimeoutButNotForOneThatLeft) {
  const auto ignore = [](int, std::uint64_t, std::span<const std::byte>) {};
  {
    const ShippingPlan plan = plan_of(2, std::chrono::milliseconds(300));
    auto aggregator = ShippingRing::create(plan, 16 << 10);
    auto done = ShippingRing::attach(plan, 0);
    auto silent = ShippingRing::attach(plan, 1);
    done->ship(kRegion, pattern_at(kRegion, 100));
    done->finish();
    try {
      aggregator->drain_all(ignore);
      ADD_FAILURE() << "the aggregator did not wait for rank 2";
    } catch (const TimeoutError& e) {
      EXPECT_EQ(e.missing_ranks(), std::vector<int>{2});
      EXPECT_NE(std::string(e.what()).find("ranks 2 did not finish"), std::string::npos)
          << e.what();
    }
  }
  const ShippingPlan plan = plan_of(1, std::chrono::seconds(30));
  auto aggregator = ShippingRing::create(plan, 16 << 10);
  auto member = ShippingRing::attach(plan, 0);
  member->ship(kRegion, pattern_at(kRegion, 100));
  member.reset();  // left without finish(): its save failed
  std::uint64_t received = 0;
  aggregator->drain_all(
      [&](int, std::uint64_t, std::span<const std::byte> data) { received += data.size(); });
  EXPECT_EQ(received, 0U);  // the slot it had open was never handed over
}

TEST(ShippingRing, NoMemberAttachesOnceTheNameIsGone) {
  const ShippingPlan plan = plan_of(1, std::chrono::seconds(30));
  auto aggregator = ShippingRing::create(plan, 16 << 10);
  aggregator->unlink();
  try {
    (void)ShippingRing::attach(plan, 0);
    ADD_FAILURE() << "attached to a removed segment";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(plan.segment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cairn::testing
