// docs/errors.md's C++ block 1: the error-handling pattern around a save. The harness saves one
// step through it (no error: the program goes on) and checks that it was committed.
#include "readme_harness.hpp"

int main(int argc, char** argv) {
  return readme::run(argc, argv, [] {
    cairn::Comm comm(MPI_COMM_WORLD);
    std::vector<double> u(16, 2.0);
    const std::int64_t n = 16 * comm.size();
    cairn::ArrayTree state;
    state.add_array("u",
                    cairn::ArrayShard::host(u.data(), {n}, cairn::Box{{16 * comm.rank()}, {16}}));
    if (comm.is_primary()) std::filesystem::remove_all("errors-run");
    comm.barrier("errors block 1 root removed");
    cairn::CheckpointManager mgr(comm, "errors-run", {});
    const std::int64_t step = 7;

#include "errors_1.inc"

    mgr.wait_until_finished();
    readme::check(mgr.latest_step() == 7, "step 7 was not committed");
  });
}
