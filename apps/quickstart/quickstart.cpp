#include <cairn/cairn.hpp>

#include <algorithm>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  bool ok = false;
  {
    cairn::Comm comm(MPI_COMM_WORLD);
    const std::int64_t n = 1 << 20, first = n * comm.rank() / comm.size();
    const cairn::Box mine{{first}, {n * (comm.rank() + 1) / comm.size() - first}};
    std::vector<double> u(static_cast<std::size_t>(mine.extent[0]), 0.0);
    cairn::ArrayTree state;  // views of this rank's part of each global array
    state.add_array("u", cairn::ArrayShard::host(u.data(), {n}, mine));
    cairn::CheckpointManager mgr(comm, "quickstart-run",
                                 {.save_interval_steps = 10, .max_to_keep = 2});
    std::int64_t step = 0;
    const cairn::ArrayTreeRestore into(state);
    // A restart, on any number of ranks, from the newest step that restores intact
    if (const auto restored = mgr.restore_latest_intact(&into)) step = restored->step;
    for (++step; step <= 100; ++step) {
      for (double& x : u) x += 1.0;  // the simulation
      mgr.save(step, cairn::ArrayTreeSave(state));
    }
    mgr.wait_until_finished();
    ok = std::all_of(u.begin(), u.end(), [](double x) { return x == 100.0; });
  }
  MPI_Finalize();
  return ok ? 0 : 1;
}
