// cairn gc ROOT: remove what unfinished saves and deletes left behind.
#include <cairn/manager.hpp>
#include <fmt/format.h>

#include "checkpoint_dir.hpp"
#include "commands.hpp"

namespace cairn_tool {

int run_gc(const cairn::Comm& comm, const GcOptions& options) {
  if (!comm.is_primary()) return kOk;
  const std::filesystem::path root = options.root;
  const auto steps = cairn::list_step_directories(root);
  if (const auto lock = cairn::root_lock_holder(root); lock && !options.force && !options.dry_run) {
    fmt::print(stderr,
               "cairn gc: '{}' is locked by {}: a job may be writing it, and its save in progress "
               "looks like leftovers. Run gc when no job writes the root, or pass --force if that "
               "job is gone.\n",
               root.string(), *lock);
    return kFailed;
  }
  std::uint64_t freed = 0;
  int removed = 0;
  int failed = 0;
  for (const auto& dir : steps) {
    if (dir.status == cairn::StepStatus::committed) continue;
    const std::string what = fmt::format("{} (step {}, {})", dir.path.string(), dir.step,
                                         cairn::step_status_name(dir.status));
    if (dir.status == cairn::StepStatus::quarantined) {
      fmt::print(
          "kept {}: it did not restore and was moved aside; remove it by hand once it is "
          "not wanted\n",
          what);
      continue;
    }
    if (!dir.temporary) {
      fmt::print(
          "kept {}: not a temporary directory of cairn (a save without its COMMITTED marker); "
          "remove it by hand if it is not wanted\n",
          what);
      continue;
    }
    const auto bytes = disk_bytes(dir.path);
    if (options.dry_run) {
      fmt::print("would remove {}, {}\n", what, human_bytes(bytes));
      ++removed;
      freed += bytes;
      continue;
    }
    std::error_code ec;
    std::filesystem::remove_all(dir.path, ec);
    if (ec) {
      fmt::print(stderr, "cairn gc: removing {} failed: {}\n", what, ec.message());
      ++failed;
      continue;
    }
    fmt::print("removed {}, {}\n", what, human_bytes(bytes));
    ++removed;
    freed += bytes;
  }
  fmt::print("{} {} director{}, {}\n", options.dry_run ? "would remove" : "removed", removed,
             removed == 1 ? "y" : "ies", human_bytes(freed));
  return failed == 0 ? kOk : kFailed;
}

}  // namespace cairn_tool
