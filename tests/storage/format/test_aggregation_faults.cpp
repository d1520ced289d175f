// Failures of an aggregated posix save (TreeSaveOptions::posix.aggregation, one group): the
// fault point and rank come from CAIRN_FAULT, and CAIRN_TEST_POSIX_WRITERS=aggregator makes the
// ranks ship their shards to the aggregator (set by ctest, see CMakeLists.txt). A shard write
// failing on a sender (a rank that is not its group's aggregator), on the aggregator, the
// aggregator failing to create the group's file, or failing to write what a sender shipped,
// throws on every rank, naming the failing rank and the group's file, and no rank hangs.
#include <gtest/gtest.h>

#include <cairn/config.hpp>
#include <cairn/error.hpp>
#include <cairn/storage.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "storage/format/posix/aggregation.hpp"
#include "storage/storage_test_util.hpp"
#include "support/test_support.hpp"

namespace cairn::testing {
namespace {

const std::vector<std::int64_t> kShape = {16, 12};

TEST(AggregationFault, FailsOnEveryRankNamingRankAndFile) {
  const char* rule = std::getenv("CAIRN_FAULT");
  if (!CAIRN_HAVE_FAULT_INJECTION || rule == nullptr) {
    GTEST_SKIP() << "needs CAIRN_FAULT=<point>@<rank> and CAIRN_FAULT_INJECTION (ctest sets it)";
  }
  const std::string fault(rule);
  const std::string point = fault.substr(0, fault.find('@'));
  const int rank = std::atoi(fault.substr(fault.find('@') + 1).c_str());
  const SharedTempDir tmp;
  const Comm comm(MPI_COMM_WORLD);
  const Box box = slab_box(kShape, comm.rank(), comm.size());
  auto a = reference_box(DType::float64, kShape, box);
  ArrayTree tree;
  tree.add_array("a",
                 {.dtype = DType::float64, .global_shape = kShape, .box = box, .data = a.data()});
  const char* writers = std::getenv("CAIRN_TEST_POSIX_WRITERS");
  const bool ships = writers != nullptr && std::string(writers) == "aggregator";
  try {
    save_tree(
        comm, tmp / "item", tree,
        {.fsync = false,
         .posix = {.aggregation = {.kind = PosixAggregation::Kind::count,
                                   .count = 1,
                                   .writers = ships ? PosixAggregation::Writers::aggregator
                                                    : PosixAggregation::Writers::every_rank}}});
    ADD_FAILURE() << "the save succeeded despite " << fault;
  } catch (const IoError& e) {
    const std::string message = e.what();
    // An errno rule fails the system call itself, as a failing disk would.
    const bool errno_rule = fault.find(":errno=") != std::string::npos;
    EXPECT_NE(message.find(errno_rule ? "Input/output error" : "injected fault at " + point),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("rank " + std::to_string(rank)), std::string::npos) << message;
    EXPECT_NE(message.find("a0.bin"), std::string::npos) << message;
  }
  // Nothing of the group's shared memory is left, whichever rank failed where.
  EXPECT_FALSE(
      std::filesystem::exists("/dev/shm" + storage::shipping_segment_name(tmp / "item", 0)));
  // The ranks are still in step: a collective call completes on every rank.
  EXPECT_EQ(comm.sum(1), comm.size());
}

}  // namespace
}  // namespace cairn::testing
