// docs/cpp-api.md's C++ block 3: the CheckpointManager loop. The test runs it twice in the same
// directory (the second run restarts from the newest step and must not fail on the step it
// repeats) and checks that the newest step restored holds the state of that step.
#include "readme_harness.hpp"

int main(int argc, char** argv) {
  return readme::run(argc, argv, [] {
    cairn::Comm comm(MPI_COMM_WORLD);
    const std::int64_t n = 4096;
    const cairn::Box mine{{readme::part_first(n, comm.rank(), comm.size())},
                          {readme::part_count(n, comm.rank(), comm.size())}};
    std::vector<double> u(static_cast<std::size_t>(mine.extent[0]), 0.0);
    cairn::ArrayTree state;
    state.add_array("u", cairn::ArrayShard::host(u.data(), {n}, mine));
    const std::int64_t steps = 301;  // saves 0, 100, 200 and 300
    double r = 1.0;
    const auto simulate = [&] {
      for (double& x : u) x += 1.0;
      r /= 2;
    };

#include "cpp_api_3.inc"

    // u counts the steps simulated since step 0 (a restart resumes from the restored u).
    readme::check(mgr.latest_step() == 300, "the newest step is not 300");
    readme::check(u.empty() || u[0] == 301.0, "u is not the state after step 300");
  });
}
