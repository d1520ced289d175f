// Shared main of cairn's MPI GoogleTest binaries.
//
// Initializes MPI with MPI_THREAD_MULTIPLE (MPI_THREAD_FUNNELED when the environment sets
// CAIRN_TEST_THREAD_LEVEL=funneled, to test cairn without MPI on its background threads),
// prints the full GoogleTest report on rank 0 and only failures (prefixed with the rank)
// elsewhere, and makes every rank exit non-zero when any rank failed, so a failure on one rank
// fails the ctest test. When every case that ran was skipped on every rank, it exits 77, which
// ctest reports as skipped (SKIP_RETURN_CODE); a suite with some cases skipped and the others
// passed passes, and its output lists the skipped ones.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace {

class RankFailurePrinter : public testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}

  void OnTestPartResult(const testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_,
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.message());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  const char* level = std::getenv("CAIRN_TEST_THREAD_LEVEL");
  const bool funneled = level != nullptr && std::string_view(level) == "funneled";
  const int required = funneled ? MPI_THREAD_FUNNELED : MPI_THREAD_MULTIPLE;
  int provided = 0;
  MPI_Init_thread(&argc, &argv, required, &provided);
  testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (provided < required && rank == 0) {
    std::fprintf(stderr, "note: MPI provides thread level %d, not %s\n", provided,
                 funneled ? "MPI_THREAD_FUNNELED" : "MPI_THREAD_MULTIPLE");
  }
  // The harness says how many ranks it launched: running with another number would make the
  // multi-rank cases test nothing, so it is a failure, not a skip.
  if (const char* expected = std::getenv("CAIRN_TEST_RANKS_EXPECTED")) {
    if (std::atoi(expected) != size) {
      if (rank == 0) {
        std::fprintf(stderr, "harness error: launched with %d rank(s), expected %s\n", size,
                     expected);
      }
      MPI_Finalize();
      return 1;
    }
  }
  if (rank != 0) {
    auto& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }

  const int local_failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int failed_ranks = 0;
  MPI_Allreduce(&local_failed, &failed_ranks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0 && failed_ranks > 0) {
    std::fprintf(stderr, "FAILED on %d of %d rank(s)\n", failed_ranks, size);
  }
  const testing::UnitTest& unit = *testing::UnitTest::GetInstance();
  const int local_all_skipped =
      unit.test_to_run_count() > 0 && unit.skipped_test_count() == unit.test_to_run_count() ? 1 : 0;
  int all_skipped = 0;
  MPI_Allreduce(&local_all_skipped, &all_skipped, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Finalize();
  if (failed_ranks > 0) return 1;
  return all_skipped == 1 ? 77 : 0;
}
