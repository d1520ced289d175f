// Tests of cairn::Comm: agreement, deadlines, verdicts and data exchange at 1, 2 and 4 ranks.
#include <cairn/comm.hpp>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "support/test_support.hpp"

using cairn::Comm;
using cairn::testing::world_rank;
using cairn::testing::world_size;
using namespace std::chrono_literals;

TEST(Comm, DuplicatesTheCallersCommunicator) {
  Comm comm(MPI_COMM_WORLD);
  EXPECT_EQ(comm.rank(), world_rank());
  EXPECT_EQ(comm.size(), world_size());
  int relation = MPI_UNEQUAL;
  MPI_Comm_compare(comm.get(), MPI_COMM_WORLD, &relation);
  EXPECT_EQ(relation, MPI_CONGRUENT);
  EXPECT_EQ(comm.is_primary(), world_rank() == 0);

  Comm moved(std::move(comm));
  EXPECT_EQ(comm.get(), MPI_COMM_NULL);
  EXPECT_NE(moved.get(), MPI_COMM_NULL);
  EXPECT_THROW(comm.barrier("after move"), cairn::InvalidArgument);
  moved.barrier("moved comm works");
}

TEST(Comm, PrimaryRankIsConfigurable) {
  const int last = world_size() - 1;
  Comm comm(MPI_COMM_WORLD, {.primary_rank = last});
  EXPECT_EQ(comm.primary(), last);
  EXPECT_EQ(comm.is_primary(), world_rank() == last);
  comm.barrier("with a non-zero primary");
  EXPECT_EQ(comm.broadcast(comm.is_primary() ? "from primary" : "not me"), "from primary");
}

TEST(Comm, BadOptionsThrowOnEveryRank) {
  EXPECT_THROW(Comm(MPI_COMM_WORLD, {.primary_rank = world_size()}), cairn::InvalidArgument);
  EXPECT_THROW(Comm(MPI_COMM_WORLD, {.active_processes = {0, 0}}), cairn::InvalidArgument);
  try {
    // Only the last rank is misconfigured: every rank must still throw.
    const int primary = world_rank() == world_size() - 1 ? -1 : 0;
    Comm comm(MPI_COMM_WORLD, {.primary_rank = primary});
    FAIL() << "expected InvalidArgument";
  } catch (const cairn::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("primary_rank -1"), std::string::npos) << e.what();
  }
}

TEST(Comm, DifferentPrimaryRanksAreAMismatchOnEveryRank) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  const int primary = world_rank() == 1 ? 1 : 0;
  try {
    Comm comm(MPI_COMM_WORLD, {.primary_rank = primary});
    FAIL() << "expected CollectiveMismatch";
  } catch (const cairn::CollectiveMismatch& e) {
    EXPECT_EQ(e.rank(), 1);
    EXPECT_EQ(e.field(), "primary_rank");
  }
}

TEST(Comm, MatchingBarriersPass) {
  Comm comm(MPI_COMM_WORLD, {.barrier_timeout = 10s});
  for (int i = 0; i < 50; ++i) {
    EXPECT_NO_THROW(comm.barrier("step " + std::to_string(i))) << "barrier " << i;
  }
  EXPECT_NO_THROW(comm.agree({.operation = "save", .step = 7, .structure = 0xabcdef}));
  EXPECT_FALSE(comm.broken());
  // The communicator is still in step on every rank: the next exchange pairs correctly.
  const auto ranks = comm.allgather(std::int64_t{world_rank()});
  ASSERT_EQ(ranks.size(), static_cast<std::size_t>(world_size()));
  for (int r = 0; r < world_size(); ++r) EXPECT_EQ(ranks[static_cast<std::size_t>(r)], r);
}

TEST(Comm, MismatchedBarrierNamesThrowOnEveryRankWithinTheDeadline) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  Comm comm(MPI_COMM_WORLD, {.barrier_timeout = 20s});
  const int odd = world_size() - 1;
  const std::string name = world_rank() == odd ? "restore.begin" : "save.begin";
  const auto start = std::chrono::steady_clock::now();
  try {
    comm.barrier(name);
    FAIL() << "expected CollectiveMismatch";
  } catch (const cairn::CollectiveMismatch& e) {
    EXPECT_EQ(e.rank(), odd);
    EXPECT_EQ(e.field(), "operation");
    const std::string message = e.what();
    EXPECT_NE(message.find("restore.begin"), std::string::npos) << message;
    EXPECT_NE(message.find("save.begin"), std::string::npos) << message;
    EXPECT_NE(message.find("rank " + std::to_string(odd)), std::string::npos) << message;
  }
  // A mismatch is detected when the ranks arrive, not when the deadline passes.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
  // The Comm stays usable after a mismatch: every rank learned of it at the same point.
  comm.barrier("after the mismatch");
}

TEST(Comm, AgreementNamesTheFirstDifferingField) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  Comm comm(MPI_COMM_WORLD);
  const bool odd = world_rank() == 1;
  try {
    comm.agree({.operation = "save", .step = odd ? 11 : 10, .structure = 5});
    FAIL() << "expected CollectiveMismatch";
  } catch (const cairn::CollectiveMismatch& e) {
    EXPECT_EQ(e.rank(), 1);
    EXPECT_EQ(e.field(), "step");
    EXPECT_NE(std::string(e.what()).find("step 11"), std::string::npos) << e.what();
  }
  try {
    comm.agree({.operation = "save", .step = 10, .structure = odd ? 6u : 5u});
    FAIL() << "expected CollectiveMismatch";
  } catch (const cairn::CollectiveMismatch& e) {
    EXPECT_EQ(e.rank(), 1);
    EXPECT_EQ(e.field(), "structure");
  }
  try {
    comm.agree({.operation = "save", .step = 10, .options = odd ? 1u : 0u, .structure = 5});
    FAIL() << "expected CollectiveMismatch";
  } catch (const cairn::CollectiveMismatch& e) {
    EXPECT_EQ(e.rank(), 1);
    EXPECT_EQ(e.field(), "options");
  }
}

TEST(Comm, MissingRankTimesOutNamingIt) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  Comm comm(MPI_COMM_WORLD);
  const int absent = world_size() - 1;
  if (world_rank() == absent) return;  // never arrives
  try {
    comm.barrier("checkpoint.commit", 500ms);
    FAIL() << "expected TimeoutError";
  } catch (const cairn::TimeoutError& e) {
    EXPECT_EQ(e.missing_ranks(), std::vector<int>{absent});
    EXPECT_NE(std::string(e.what()).find("checkpoint.commit"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(comm.broken());
  EXPECT_THROW(comm.barrier("after the timeout"), cairn::TimeoutError);
}

TEST(Comm, MissingPrimaryTimesOutOnTheOthers) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  Comm comm(MPI_COMM_WORLD);
  if (comm.is_primary()) return;  // never arrives
  try {
    comm.barrier("primary is late", 300ms);
    FAIL() << "expected TimeoutError";
  } catch (const cairn::TimeoutError& e) {
    EXPECT_EQ(e.missing_ranks(), std::vector<int>{0});
  }
}

TEST(Comm, CollectiveExchangeTimesOutWhenARankSkipsIt) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  Comm comm(MPI_COMM_WORLD, {.barrier_timeout = 300ms});
  if (world_rank() == 1) return;
  EXPECT_THROW((void)comm.allgather(std::int64_t{1}), cairn::TimeoutError);
  EXPECT_TRUE(comm.broken());
}

TEST(Comm, AllOkPassesWhenEveryRankSucceeds) {
  Comm comm(MPI_COMM_WORLD);
  // A message given with success is not an error.
  EXPECT_NO_THROW(comm.all_ok(true, "rank " + std::to_string(world_rank()) + " is fine"));
  EXPECT_FALSE(comm.broken());
  // Every rank took part: a failure on the last rank right after is still seen everywhere.
  const bool ok = world_rank() != world_size() - 1;
  try {
    comm.all_ok(ok, ok ? "" : "the last rank failed");
    ADD_FAILURE() << "all_ok passed although the last rank failed";
  } catch (const cairn::Error& e) {
    EXPECT_NE(std::string(e.what()).find("the last rank failed"), std::string::npos) << e.what();
  }
}

TEST(Comm, AllOkThrowsEveryFailingRanksMessageOnEveryRank) {
  Comm comm(MPI_COMM_WORLD);
  const int failing = world_size() - 1;
  const bool ok = world_rank() != failing;
  try {
    comm.all_ok(ok, "disk full writing shard " + std::to_string(world_rank()),
                cairn::ErrorCode::io);
    FAIL() << "expected IoError";
  } catch (const cairn::IoError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("rank " + std::to_string(failing) + ": disk full writing shard " +
                           std::to_string(failing)),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("1 of " + std::to_string(world_size())), std::string::npos);
  }
}

TEST(Comm, RunAllRethrowsARanksExceptionEverywhere) {
  Comm comm(MPI_COMM_WORLD);
  try {
    comm.run_all("restore step 3", [&] {
      if (comm.rank() == 0) throw cairn::FormatError("/x/cairn-tree.json", "shape", "bad shape");
    });
    FAIL() << "expected FormatError";
  } catch (const cairn::FormatError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("restore step 3"), std::string::npos) << message;
    EXPECT_NE(message.find("rank 0: bad shape"), std::string::npos) << message;
  }
  EXPECT_NO_THROW(comm.run_all("nothing fails", [] {}));
}

TEST(Comm, CommonStepsAreThoseEveryRankHas) {
  Comm comm(MPI_COMM_WORLD);
  const std::vector<std::vector<std::int64_t>> held = {{1, 2, 3}, {3, 2}, {3, 4, 3}};
  const auto common = comm.common_steps(held[static_cast<std::size_t>(comm.rank()) % 3]);
  if (comm.size() == 1) {
    EXPECT_EQ(common, (std::vector<std::int64_t>{1, 2, 3}));
  } else if (comm.size() == 2) {
    EXPECT_EQ(common, (std::vector<std::int64_t>{2, 3}));
  } else {
    EXPECT_EQ(common, (std::vector<std::int64_t>{3}));
  }
  const std::vector<std::int64_t> none;
  EXPECT_TRUE(comm.common_steps(comm.rank() == 0 ? none : held[0]).empty());
}

TEST(Comm, BroadcastGatherAndAllgatherMoveData) {
  Comm comm(MPI_COMM_WORLD);
  const int root = comm.size() - 1;
  EXPECT_EQ(comm.broadcast(comm.rank() == root ? "hello" : "", root), "hello");
  const std::string big(100000, comm.rank() == 0 ? 'x' : 'y');
  EXPECT_EQ(comm.broadcast(big), std::string(100000, 'x'));
  EXPECT_EQ(comm.broadcast(std::string_view()), "");

  boost::json::value doc = {{"step", 42}, {"items", {"a", "b"}}};
  EXPECT_EQ(comm.broadcast_json(comm.is_primary() ? doc : boost::json::value()), doc);

  const auto gathered = comm.gather("rank" + std::to_string(comm.rank()));
  if (comm.is_primary()) {
    ASSERT_EQ(gathered.size(), static_cast<std::size_t>(comm.size()));
    for (int r = 0; r < comm.size(); ++r) EXPECT_EQ(gathered[r], "rank" + std::to_string(r));
  } else {
    EXPECT_TRUE(gathered.empty());
  }

  const auto values = comm.allgather_json(boost::json::value{{"rank", comm.rank()}});
  ASSERT_EQ(values.size(), static_cast<std::size_t>(comm.size()));
  for (int r = 0; r < comm.size(); ++r) EXPECT_EQ(values[r].at("rank").as_int64(), r);

  const auto numbers = comm.allgather(std::int64_t{comm.rank() * 10});
  for (int r = 0; r < comm.size(); ++r) EXPECT_EQ(numbers[r], r * 10);

  // Ranks may contribute different sizes, including nothing.
  const auto texts = comm.allgather(std::string(static_cast<std::size_t>(comm.rank()), 'z'));
  for (int r = 0; r < comm.size(); ++r) EXPECT_EQ(texts[r].size(), static_cast<std::size_t>(r));
}

// Rank r sends rank t (r + 1) * t bytes of value r + t: sizes differ per pair, some are empty.
TEST(Comm, AlltoallSendsEachRankItsOwnBytes) {
  Comm comm(MPI_COMM_WORLD);
  std::vector<std::vector<std::byte>> to_each;
  for (int t = 0; t < comm.size(); ++t) {
    to_each.emplace_back(static_cast<std::size_t>((comm.rank() + 1) * t),
                         static_cast<std::byte>(comm.rank() + t));
  }
  const auto from_each = comm.alltoall_bytes(to_each);
  ASSERT_EQ(from_each.size(), static_cast<std::size_t>(comm.size()));
  for (int r = 0; r < comm.size(); ++r) {
    EXPECT_EQ(from_each[r], std::vector<std::byte>(static_cast<std::size_t>((r + 1) * comm.rank()),
                                                   static_cast<std::byte>(r + comm.rank())))
        << "from rank " << r;
  }
  // One string per rank, or InvalidArgument before anything is sent.
  to_each.emplace_back();
  EXPECT_THROW((void)comm.alltoall_bytes(to_each), cairn::InvalidArgument);
  EXPECT_FALSE(comm.broken());
}

TEST(Comm, ReductionsCombineEveryRank) {
  Comm comm(MPI_COMM_WORLD);
  const int n = comm.size();
  EXPECT_EQ(comm.sum(comm.rank() + 1), n * (n + 1) / 2);
  EXPECT_EQ(comm.max(comm.rank()), n - 1);
  EXPECT_EQ(comm.min(comm.rank()), 0);
  EXPECT_TRUE(comm.any(comm.rank() == n - 1));
  EXPECT_FALSE(comm.any(false));
  EXPECT_EQ(comm.all(comm.rank() != n - 1), n == 0);
  EXPECT_TRUE(comm.all(true));
}

TEST(Comm, ElementWiseMaxCombinesEveryRankPerElement) {
  Comm comm(MPI_COMM_WORLD);
  const int n = comm.size();
  const int r = comm.rank();
  // Element 0 is largest on the last rank, element 1 on rank 0, element 2 nowhere but -5.
  const std::vector<std::int64_t> local = {r, 10 * (n - r), -5, r == n / 2 ? 7 : 3};
  EXPECT_EQ(comm.max(local), (std::vector<std::int64_t>{n - 1, 10 * n, -5, 7}));
  EXPECT_TRUE(comm.max(std::span<const std::int64_t>()).empty());
  // Different lengths: an error on every rank, not a hang (at 1 rank there is no mismatch).
  const std::vector<std::int64_t> uneven(static_cast<std::size_t>(r + 1), 1);
  if (n == 1) {
    EXPECT_EQ(comm.max(uneven), (std::vector<std::int64_t>{1}));
  } else {
    EXPECT_THROW((void)comm.max(uneven), cairn::CollectiveMismatch);
  }
}

TEST(Comm, ActiveProcessesFormASubCommunicator) {
  const int last = world_size() - 1;
  std::vector<int> active = {last};
  if (last != 0) active.push_back(0);
  Comm comm(MPI_COMM_WORLD, {.primary_rank = last, .active_processes = active});
  EXPECT_EQ(comm.is_active(), world_rank() == 0 || world_rank() == last);
  auto sub = comm.active();
  ASSERT_EQ(sub.has_value(), comm.is_active());
  if (sub) {
    EXPECT_EQ(sub->size(), static_cast<int>(active.size()));
    EXPECT_EQ(sub->is_primary(), world_rank() == last);
    sub->barrier("among the active processes");
  }
  comm.barrier("everyone again");
}
