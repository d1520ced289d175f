// The job of the crash-consistency suite: it resumes from the newest checkpoint (checking
// every restored value), then saves steps up to STEPS. Each step holds values derived from
// the step and the global index, so a restart can tell exactly which step it got back.
//
//   kill_job ROOT STEPS FORMAT MODE
//     FORMAT  posix | hdf5
//     MODE    sync | async: a CheckpointManager under ROOT (max_to_keep 2, retention on a
//                           background thread, leftovers cleaned at start);
//             multihost:    a MultihostCheckpoint with per-process directories ROOT/proc-<rank>
//                           (FORMAT is ignored: it stores each process's boxes as posix)
//
// Prints (rank 0, flushed line by line, so a killed run leaves what it knew):
//   "steps <s> <s> ..."  the committed steps found at start (MODE multihost: the common ones)
//   "fresh start" | "restored <s>" | "restored <s> WRONG VALUES"
//   "committed <s>"      each time the newest committed step changes
//   "latest <s>"         at the end
// Exit status: 0 done, 1 error (message on stderr), 2 usage, 3 wrong restored values.
#include <mpi.h>

#include <cairn/manager.hpp>
#include <cairn/multihost.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "fault/job_state.hpp"
#include "support/job_main.hpp"

namespace {

using cairn::fault_test::State;

void say(const cairn::Comm& comm, const std::string& line) {
  if (!comm.is_primary()) return;
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

std::string steps_line(const std::vector<std::int64_t>& steps) {
  std::string line = "steps";
  for (auto s : steps) line += " " + std::to_string(s);
  return line;
}

// Checks the restored state of `step` on every rank; returns the exit status.
int check_restored(const cairn::Comm& comm, const State& state, std::int64_t step) {
  const bool ok = comm.all(state.equals(step));
  say(comm, "restored " + std::to_string(step) + (ok ? "" : " WRONG VALUES"));
  return ok ? 0 : 3;
}

int run_manager(const cairn::Comm& comm, const std::filesystem::path& root, std::int64_t steps,
                cairn::StorageFormat format, bool async) {
  State state{.rank = comm.rank(), .size = comm.size()};
  cairn::CheckpointManager manager(comm, root,
                                   {.max_to_keep = 2,
                                    .cleanup_tmp_directories = true,
                                    .enable_background_delete = true,
                                    .enable_async = async});
  say(comm, steps_line(manager.all_steps()));
  std::int64_t start = 0;
  if (const auto latest = manager.latest_step()) {
    state.scramble();
    const cairn::ArrayTreeRestore args(state.tree());
    (void)manager.restore(*latest, &args);
    if (const int status = check_restored(comm, state, *latest)) return status;
    start = *latest + 1;
  } else {
    say(comm, "fresh start");
  }
  std::optional<std::int64_t> known = manager.latest_step();
  for (std::int64_t step = start; step < steps; ++step) {
    state.compute(step);
    (void)manager.save(step, cairn::ArrayTreeSave(state.tree(), {.format = format}));
    if (manager.latest_step() != known) {
      known = manager.latest_step();
      say(comm, "committed " + std::to_string(*known));
    }
  }
  manager.wait_until_finished();
  if (manager.latest_step() != known)
    say(comm, "committed " + std::to_string(*manager.latest_step()));
  manager.close();
  say(comm, "latest " + std::to_string(manager.latest_step().value_or(-1)));
  return 0;
}

int run_multihost(const cairn::Comm& comm, const std::filesystem::path& root, std::int64_t steps) {
  State state{.rank = comm.rank(), .size = comm.size()};
  cairn::MultihostCheckpoint checkpoint(comm, root / "proc");
  const auto common = checkpoint.latest_common_step();
  say(comm, common ? "steps " + std::to_string(*common) : "steps");
  state.compute(0);
  if (common) state.scramble();
  cairn::ArrayTree tree = state.tree();
  const std::int64_t resumed = checkpoint.restore_or_initialize(tree, 0);
  if (common) {
    if (const int status = check_restored(comm, state, resumed)) return status;
  } else {
    say(comm, "fresh start");
    say(comm, "committed 0");
  }
  for (std::int64_t step = resumed + 1; step < steps; ++step) {
    state.compute(step);
    checkpoint.save(step, state.tree());
    say(comm, "committed " + std::to_string(step));
  }
  say(comm, "latest " + std::to_string(checkpoint.latest_common_step().value_or(-1)));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return cairn::testing::job_main(
      argc, argv, "kill_job", "ROOT STEPS posix|hdf5 sync|async|multihost", [](int n, char** args) {
        const std::string format = n == 5 ? args[3] : "";
        const std::string mode = n == 5 ? args[4] : "";
        if ((format != "posix" && format != "hdf5") ||
            (mode != "sync" && mode != "async" && mode != "multihost")) {
          throw cairn::testing::UsageError{};
        }
        cairn::Comm comm(MPI_COMM_WORLD);
        const std::int64_t steps = std::stoll(args[2]);
        return mode == "multihost" ? run_multihost(comm, args[1], steps)
                                   : run_manager(comm, args[1], steps,
                                                 format == "hdf5" ? cairn::StorageFormat::hdf5
                                                                  : cairn::StorageFormat::posix,
                                                 mode == "async");
      });
}
