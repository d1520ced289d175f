// The batch job of the Slurm test: a small deterministic MPI computation that checkpoints with
// CheckpointManager, saves and stops when Slurm signals it (SIGUSR1 from --signal), and
// resumes from the newest checkpoint when run again (requeued).
//
//   slurm_job ROOT STEPS OUTPUT PACE_MS
// Prints "fresh start" or "resumed at step <s>", then either "preempted: saved step <s>" or
// "finished step <STEPS>" (and writes the final field to OUTPUT, raw float64 in rank order).
// The first run (SLURM_RESTART_COUNT unset or 0) sleeps PACE_MS per step so that the signal
// arrives while it computes; a requeued run goes at full speed. The pace never changes the
// result.
#include <mpi.h>

#include <cairn/manager.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr std::int64_t kPerRank = 256;
constexpr std::int64_t kSaveEvery = 100;

// One step: smoothing with the neighbours plus a term that couples all ranks.
void advance(std::vector<double>& u, std::int64_t step, MPI_Comm comm) {
  double local = 0.0;
  for (double v : u) local += v;
  double total = 0.0;
  MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, comm);
  std::vector<double> next(u.size());
  for (std::size_t i = 0; i < u.size(); ++i) {
    const double left = u[i == 0 ? u.size() - 1 : i - 1];
    const double right = u[i + 1 == u.size() ? 0 : i + 1];
    next[i] =
        0.5 * u[i] + 0.25 * (left + right) + 1e-9 * total + 1e-3 * static_cast<double>(step % 7);
  }
  u.swap(next);
}

bool first_run() {
  const char* restarts = std::getenv("SLURM_RESTART_COUNT");
  return restarts == nullptr || std::string(restarts) == "0";
}

int run(const std::filesystem::path& root, std::int64_t steps, const std::string& output,
        int pace_ms) {
  cairn::Comm comm(MPI_COMM_WORLD);
  std::vector<double> u(kPerRank);
  const std::int64_t first = comm.rank() * kPerRank;
  for (std::int64_t i = 0; i < kPerRank; ++i)
    u[static_cast<std::size_t>(i)] = std::sin(0.01 * static_cast<double>(first + i));
  auto tree = [&] {
    cairn::ArrayTree t;
    t.add_array("u", cairn::ArrayShard::host(u.data(), {comm.size() * kPerRank},
                                             cairn::Box{{first}, {kPerRank}}));
    return t;
  };
  // Only the signal counts: the 1-minute test jobs are always within any margin of their end.
  cairn::CheckpointManager manager(
      comm, root,
      {.save_interval_steps = kSaveEvery,
       .max_to_keep = 2,
       .preemption = cairn::PreemptionOptions{.use_slurm_end_time = false}});
  std::int64_t step = 0;
  if (const auto latest = manager.latest_step()) {
    const cairn::ArrayTreeRestore args(tree());
    (void)manager.restore(*latest, &args);
    step = *latest;
    if (comm.is_primary()) std::printf("resumed at step %lld\n", static_cast<long long>(step));
  } else if (comm.is_primary()) {
    std::printf("fresh start\n");
  }
  std::fflush(stdout);
  const bool paced = pace_ms > 0 && first_run();
  while (step < steps) {
    ++step;
    advance(u, step, comm.get());
    if (manager.reached_preemption(step)) {
      (void)manager.save(step, cairn::ArrayTreeSave(tree()), {.force = true});
      manager.wait_until_finished();
      if (comm.is_primary())
        std::printf("preempted: saved step %lld\n", static_cast<long long>(step));
      return 0;
    }
    if (step % kSaveEvery == 0) (void)manager.save(step, cairn::ArrayTreeSave(tree()));
    if (paced) std::this_thread::sleep_for(std::chrono::milliseconds(pace_ms));
  }
  manager.wait_until_finished();
  std::vector<double> all(comm.is_primary() ? u.size() * static_cast<std::size_t>(comm.size()) : 0);
  MPI_Gather(u.data(), static_cast<int>(u.size()), MPI_DOUBLE, all.data(),
             static_cast<int>(u.size()), MPI_DOUBLE, 0, comm.get());
  if (comm.is_primary()) {
    std::ofstream out(output, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(all.data()),
              static_cast<std::streamsize>(all.size() * sizeof(double)));
    std::printf("finished step %lld\n", static_cast<long long>(step));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int code = 2;
  if (argc == 5) {
    try {
      code = run(argv[1], std::stoll(argv[2]), argv[3], std::stoi(argv[4]));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "slurm_job: %s\n", e.what());
      code = 1;
    }
  } else {
    std::fprintf(stderr, "usage: slurm_job ROOT STEPS OUTPUT PACE_MS\n");
  }
  std::fflush(stdout);
  MPI_Finalize();
  return code;
}
