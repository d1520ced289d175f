// The full-disk job: saves steps 0 and 1 (small), then a step 2 with a large extra leaf that
// does not fit on the file system (a small tmpfs, or a disk made "full" by an injected ENOSPC
// at cairn's write wrapper). It checks that
//   - every rank throws, from the same call (save or wait_until_finished);
//   - nothing of step 2 is committed or left behind (no 2.cairn-tmp);
//   - steps 0 and 1 remain committed and restore with the values they were saved with.
// With a node-local level (each rank a node, partner copies):
//   local  the local directories fill up: step 2 is saved to the root instead, on every rank
//          (no call throws), no node's directory keeps a part of it or of its copies, and it
//          restores from the root;
//   drain  the root fills up: the drain of step 2 fails, and save (when it fails as it starts)
//          or the next call throws on every rank; the root holds steps 0 and 1 only, and
//          step 2 is not lost: it is still a local step and restores from there.
//
//   full_disk_job ROOT FORMAT MODE BIG_KIB [LOCAL_DIR]
//     FORMAT posix | hdf5, MODE sync | async | local | drain, BIG_KIB: size of the extra leaf
//     per rank, LOCAL_DIR (local and drain): the node-local directory, with {node}
// Prints (rank 0) "threw from <call> on every rank: <message>" (local: "step 2 saved to the
// root on every rank") and "steps 0 1 restored".
// Exit status: 0 as expected, 1 anything else (reason on stderr), 2 usage.
#include <mpi.h>

#include <cairn/manager.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
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

// The names a directory may hold after the failed save: `allowed`, nothing else (rank 0
// prints what else it finds).
bool holds_only(const std::filesystem::path& dir, const std::vector<std::string>& allowed) {
  bool clean = true;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      std::fprintf(stderr, "full_disk_job: left behind: %s\n", entry.path().c_str());
      clean = false;
    }
  }
  return clean;
}

enum class Mode { sync, async, local, drain };

// The local directory of node `node`: {node} replaced by its number.
std::filesystem::path node_dir(const std::filesystem::path& local_dir, int node) {
  std::string text = local_dir.string();
  for (auto at = text.find("{node}"); at != std::string::npos; at = text.find("{node}")) {
    text.replace(at, 6, std::to_string(node));
  }
  return text;
}

int run(const std::filesystem::path& root, cairn::StorageFormat format, Mode mode,
        std::int64_t big_kib, const std::filesystem::path& local_dir) {
  cairn::Comm comm(MPI_COMM_WORLD);
  State state{.rank = comm.rank(), .size = comm.size()};
  const bool levels = mode == Mode::local || mode == Mode::drain;
  cairn::CheckpointManagerOptions manager_options{.barrier_timeout = std::chrono::seconds(30),
                                                  .enable_async = mode == Mode::async};
  if (levels) {
    manager_options.local_level =
        cairn::LocalLevelOptions{.directory = local_dir,
                                 .redundancy = comm.size() > 1 ? cairn::LocalRedundancy::partner()
                                                               : cairn::LocalRedundancy::none(),
                                 .ranks_per_node = 1};
  }
  // A short deadline: a rank that failed alone must not leave the others waiting long.
  cairn::CheckpointManager manager(comm, root, manager_options);
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

  // The same call on every rank: none with a local level, which falls back to the root.
  const bool throws = mode != Mode::local;
  char mine[64] = {};
  std::strncpy(mine, outcome.call.c_str(), sizeof(mine) - 1);
  std::vector<char> all(sizeof(mine) * static_cast<std::size_t>(comm.size()));
  MPI_Allgather(mine, sizeof(mine), MPI_CHAR, all.data(), sizeof(mine), MPI_CHAR, MPI_COMM_WORLD);
  for (int r = 0; r < comm.size(); ++r) {
    const std::string call(&all[sizeof(mine) * static_cast<std::size_t>(r)]);
    if (call != outcome.call || (call == "none") == throws) {
      throw Failure("rank " + std::to_string(r) + " threw from '" + call + "', rank " +
                    std::to_string(comm.rank()) + " from '" + outcome.call + "'");
    }
  }
  if (comm.is_primary() && throws) {
    std::printf("threw from %s on every rank: %s\n", outcome.call.c_str(), outcome.message.c_str());
  } else if (comm.is_primary()) {
    std::printf("threw from none: step 2 saved to the root on every rank\n");
  }

  // Step 2 left nothing behind (but on the root, with a local level that fell back to it);
  // steps 0 and 1 are intact.
  bool clean = true;
  if (comm.is_primary()) {
    std::vector<std::string> allowed{"0", "1", "cairn-root.json", "cairn.lock"};
    if (!throws) allowed.emplace_back("2");
    clean = holds_only(root, allowed);
  }
  if (mode == Mode::local) {
    // This rank's node directory: no part of step 2, no record or copy of it.
    const auto node = node_dir(local_dir, comm.rank());
    const std::vector<std::string> level_files =
        comm.size() > 1
            ? std::vector<std::string>{"0.json", "1.json", "0.copy", "1.copy", "drain-cadence.json"}
            : std::vector<std::string>{"0.json", "1.json", "drain-cadence.json"};
    clean = holds_only(node, {"0", "1", "cairn-root.json", "cairn-level", "cairn.lock"}) &&
            holds_only(node / "cairn-level", level_files) && clean;
  }
  expect(comm, clean, "the failed save left files behind");
  // Step 2 restores exactly from `level`.
  const auto restores_step_2 = [&](const std::string& level) {
    state.scramble();
    tree = state.tree();
    tree.add_array("big",
                   cairn::ArrayShard::host(big.data(), {comm.size() * big_count},
                                           cairn::Box{{comm.rank() * big_count}, {big_count}}));
    std::fill(big.begin(), big.end(), 0.0);
    const cairn::ArrayTreeRestore args(tree);
    (void)manager.restore(2, &args);
    expect(
        comm,
        state.equals(2) && std::all_of(big.begin(), big.end(), [](double v) { return v == 2.5; }),
        "step 2 restores wrong values from the " + level + " level");
    expect(comm, manager.last_restore().level == level,
           "step 2 was not read from the " + level + " level");
  };
  if (mode == Mode::drain) {
    expect(comm, manager.persistent_steps() == std::vector<std::int64_t>{0, 1},
           "the root's committed steps changed");
    expect(comm, manager.local_steps() == std::vector<std::int64_t>{1, 2},
           "step 2 is not held by the local level after its drain failed");
    restores_step_2("local");
  } else if (mode == Mode::local) {
    expect(comm, manager.local_steps() == std::vector<std::int64_t>{0, 1},
           "the local level's steps changed");
    expect(comm, manager.persistent_steps().back() == 2, "step 2 is not on the root");
    restores_step_2("persistent");
  } else {
    expect(comm, manager.all_steps(true) == std::vector<std::int64_t>{0, 1},
           "the committed steps changed");
  }
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
      argc, argv, "full_disk_job", "ROOT posix|hdf5 sync|async|local|drain BIG_KIB [LOCAL_DIR]",
      [](int n, char** args) {
        const std::string format = n >= 5 ? args[2] : "";
        const std::string name = n >= 5 ? args[3] : "";
        const std::map<std::string, Mode> modes{{"sync", Mode::sync},
                                                {"async", Mode::async},
                                                {"local", Mode::local},
                                                {"drain", Mode::drain}};
        const auto mode = modes.find(name);
        const bool levels =
            mode != modes.end() && (mode->second == Mode::local || mode->second == Mode::drain);
        if ((format != "posix" && format != "hdf5") || mode == modes.end() ||
            n != (levels ? 6 : 5)) {
          throw cairn::testing::UsageError{};
        }
        return run(args[1],
                   format == "hdf5" ? cairn::StorageFormat::hdf5 : cairn::StorageFormat::posix,
                   mode->second, std::stoll(args[4]), levels ? args[5] : "");
      });
}
