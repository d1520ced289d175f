// The full-disk job: saves steps 0 and 1 (small), then a step 2 with a large extra leaf that
// does not fit on the file system (a small tmpfs, or a disk made "full" by an injected ENOSPC
// at cairn's write wrapper). It checks that
//   - every rank throws, from the same call (save or wait_until_finished);
//   - nothing of step 2 is committed or left behind (no 2.cairn-tmp);
//   - steps 0 and 1 remain committed and restore with the values they were saved with.
//
//   full_disk_job ROOT FORMAT MODE BIG_KIB
//     FORMAT posix | hdf5, MODE sync | async, BIG_KIB: size of the extra leaf per rank
// Prints (rank 0) "threw from <call> on every rank: <message>" and "steps 0 1 restored".
// Exit status: 0 as expected, 1 anything else (reason on stderr), 2 usage.
#include <mpi.h>

#include <cairn/manager.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "fault/job_state.hpp"
#include "support/job_main.hpp"

namespace {

using cairn::fault_test::State;

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void expect(const cairn::Comm& comm, bool ok, const std::string& what) {
  if (!comm.all(ok)) throw Failure(what);
}

// The call that threw on this rank ("none" when nothing did) and its message.
struct Outcome {
  std::string call = "none";
  std::string message;
};

int run(const std::filesystem::path& root, cairn::StorageFormat format, bool async,
        std::int64_t big_kib) {
  cairn::Comm comm(MPI_COMM_WORLD);
  State state{.rank = comm.rank(), .size = comm.size()};
  // A short deadline: a rank that failed alone must not leave the others waiting long.
  cairn::CheckpointManager manager(
      comm, root, {.barrier_timeout = std::chrono::seconds(30), .enable_async = async});
  const cairn::TreeSaveOptions options{.format = format};
  for (std::int64_t step = 0; step < 2; ++step) {
    state.compute(step);
    (void)manager.save(step, cairn::ArrayTreeSave(state.tree(), options));
  }
  manager.wait_until_finished();
  expect(comm, manager.all_steps() == std::vector<std::int64_t>{0, 1},
         "steps 0 and 1 were not committed before the disk filled up");

  state.compute(2);
  const auto big_count = static_cast<std::int64_t>(big_kib * 1024 / sizeof(double));
  std::vector<double> big(static_cast<std::size_t>(big_count), 2.5);
  cairn::ArrayTree tree = state.tree();
  tree.add_array("big",
                 cairn::ArrayShard::host(big.data(), {comm.size() * big_count},
                                         cairn::Box{{comm.rank() * big_count}, {big_count}}));
  Outcome outcome;
  try {
    outcome.call = "save";
    (void)manager.save(2, cairn::ArrayTreeSave(tree, options));
    outcome.call = "wait_until_finished";
    manager.wait_until_finished();
    outcome.call = "none";
  } catch (const cairn::Error& e) {
    outcome.message = e.what();
  }

  // The same call on every rank.
  char mine[64] = {};
  std::strncpy(mine, outcome.call.c_str(), sizeof(mine) - 1);
  std::vector<char> all(sizeof(mine) * static_cast<std::size_t>(comm.size()));
  MPI_Allgather(mine, sizeof(mine), MPI_CHAR, all.data(), sizeof(mine), MPI_CHAR, MPI_COMM_WORLD);
  for (int r = 0; r < comm.size(); ++r) {
    const std::string call(&all[sizeof(mine) * static_cast<std::size_t>(r)]);
    if (call != outcome.call || call == "none") {
      throw Failure("rank " + std::to_string(r) + " threw from '" + call + "', rank " +
                    std::to_string(comm.rank()) + " from '" + outcome.call + "'");
    }
  }
  if (comm.is_primary()) {
    std::printf("threw from %s on every rank: %s\n", outcome.call.c_str(), outcome.message.c_str());
  }

  // Step 2 left nothing behind; steps 0 and 1 are intact.
  bool clean = true;
  if (comm.is_primary()) {
    for (const auto& entry : std::filesystem::directory_iterator(root)) {
      const std::string name = entry.path().filename().string();
      if (name != "0" && name != "1" && name != "cairn-root.json" && name != "cairn.lock") {
        std::fprintf(stderr, "full_disk_job: left behind: %s\n", name.c_str());
        clean = false;
      }
    }
  }
  expect(comm, clean, "the failed save left files behind");
  expect(comm, manager.all_steps(true) == std::vector<std::int64_t>{0, 1},
         "the committed steps changed");
  for (std::int64_t step = 0; step < 2; ++step) {
    state.scramble();
    const cairn::ArrayTreeRestore args(state.tree());
    (void)manager.restore(step, &args);
    expect(comm, state.equals(step), "step " + std::to_string(step) + " restores wrong values");
  }
  if (comm.is_primary()) std::printf("steps 0 1 restored\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return cairn::testing::job_main(
      argc, argv, "full_disk_job", "ROOT posix|hdf5 sync|async BIG_KIB", [](int n, char** args) {
        const std::string format = n == 5 ? args[2] : "";
        const std::string mode = n == 5 ? args[3] : "";
        if ((format != "posix" && format != "hdf5") || (mode != "sync" && mode != "async")) {
          throw cairn::testing::UsageError{};
        }
        return run(args[1],
                   format == "hdf5" ? cairn::StorageFormat::hdf5 : cairn::StorageFormat::posix,
                   mode == "async", std::stoll(args[4]));
      });
}
