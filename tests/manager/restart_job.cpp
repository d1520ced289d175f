// A small job for the restart tests: it resumes from the latest committed step (checking the
// restored values), then computes and saves steps up to STEPS asynchronously.
//
//   restart_job ROOT STEPS [LOCAL_DIR]
// With LOCAL_DIR (with {node}), every rank is a simulated node of a local level with partner
// copies, and every second local save is drained to ROOT. Prints "restored <step>" (with a
// local level: "restored <step> from <level>") or "fresh start", then "latest <step>"; exits 3
// when restored values are wrong.
#include <mpi.h>

#include <cairn/manager.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "support/job_main.hpp"

namespace {

constexpr std::int64_t kPerRank = 4096;

void compute(std::vector<double>& values, std::int64_t step, std::int64_t first) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] =
        static_cast<double>(step) * 1e6 + static_cast<double>(first) + static_cast<double>(i);
  }
}

int run(const std::filesystem::path& root, std::int64_t steps, const std::string& local_dir) {
  cairn::Comm comm(MPI_COMM_WORLD);
  std::vector<double> values(kPerRank);
  const std::int64_t first = comm.rank() * kPerRank;
  cairn::ArrayTree tree;
  tree.add_array("u", cairn::ArrayShard::host(values.data(), {comm.size() * kPerRank},
                                              cairn::Box{{first}, {kPerRank}}));
  cairn::CheckpointManagerOptions options{.max_to_keep = 2};
  if (!local_dir.empty()) {
    options.local_level = cairn::LocalLevelOptions{.directory = local_dir,
                                                   .redundancy = cairn::LocalRedundancy::partner(),
                                                   .persistent_every = 2,
                                                   .drain_at_close = false,
                                                   .ranks_per_node = 1};
  }
  cairn::CheckpointManager manager(comm, root, options);
  std::int64_t start = 0;
  if (manager.latest_step()) {
    // The newest step a level can serve.
    const cairn::ArrayTreeRestore args(tree);
    (void)manager.restore(std::nullopt, &args);
    const std::int64_t latest = manager.last_restore().step;
    std::vector<double> expected(kPerRank);
    compute(expected, latest, first);
    const bool ok = comm.all(values == expected);
    const std::string level =
        local_dir.empty() ? std::string() : " from " + manager.last_restore().level;
    if (comm.is_primary())
      std::printf("restored %lld%s%s\n", static_cast<long long>(latest), level.c_str(),
                  ok ? "" : " WRONG VALUES");
    if (!ok) return 3;
    start = latest + 1;
  } else if (comm.is_primary()) {
    std::printf("fresh start\n");
  }
  for (std::int64_t step = start; step < steps; ++step) {
    compute(values, step, first);
    (void)manager.save(step, cairn::ArrayTreeSave(tree));
  }
  manager.wait_until_finished();
  if (comm.is_primary()) {
    std::printf("latest %lld\n", static_cast<long long>(manager.latest_step().value_or(-1)));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return cairn::testing::job_main(argc, argv, "restart_job", "ROOT STEPS [LOCAL_DIR]",
                                  [](int n, char** args) {
                                    if (n != 3 && n != 4) throw cairn::testing::UsageError{};
                                    return run(args[1], std::stoll(args[2]), n == 4 ? args[3] : "");
                                  });
}
