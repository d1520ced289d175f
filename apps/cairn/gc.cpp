// cairn gc ROOT: remove what unfinished saves and deletes left behind.
#include <boost/json.hpp>
#include <cairn/checkpoint_root.hpp>
#include <cairn/comm.hpp>
#include <fmt/format.h>

#include "checkpoint_dir.hpp"
#include "commands.hpp"
#include "lock.hpp"

namespace cairn_tool {
namespace {

// What gc does with one step directory that is not committed: {"path", "step", "status",
// "action" (removed, would remove, kept, failed), "bytes", "why"}.
boost::json::object collect(const cairn::StepDirectory& dir, bool dry_run) {
  boost::json::object out = {{"path", dir.path.string()},
                             {"step", dir.step},
                             {"status", cairn::step_status_name(dir.status)},
                             {"bytes", 0}};
  if (dir.status == cairn::StepStatus::quarantined) {
    out["action"] = "kept";
    out["why"] = "it did not restore and was moved aside; remove it by hand once it is not wanted";
    return out;
  }
  if (dir.status == cairn::StepStatus::unreadable) {
    out["action"] = "kept";
    out["why"] = "this user may not read it, so its state cannot be told";
    return out;
  }
  if (!dir.temporary) {
    out["action"] = "kept";
    out["why"] =
        "a save that did not finish (no COMMITTED marker): the next job that opens this root "
        "moves it aside as a damaged step (<name>.damaged-<n>) and saves the step again";
    return out;
  }
  const auto bytes = disk_bytes(dir.path);
  out["bytes"] = bytes;
  out["action"] = dry_run ? "would remove" : "removed";
  if (dry_run) return out;
  std::error_code ec;
  std::filesystem::remove_all(dir.path, ec);
  if (ec) {
    out["action"] = "failed";
    out["why"] = "removing it failed: " + ec.message();
  }
  return out;
}

}  // namespace

int run_gc(const cairn::Comm& comm, const GcOptions& options, JsonStream& json) {
  if (!comm.is_primary()) return kOk;
  const std::filesystem::path root = options.root;
  if (!cairn::is_checkpoint_root(root)) throw CommandError(not_a_root(root));
  const auto steps = cairn::list_step_directories(root);
  const auto lock = read_lock(root);
  if (lock && !lock->stale() && !options.force && !options.dry_run) {
    throw CommandError(fmt::format(
        "'{}' is locked by {}: a job may be writing it, and its save in progress looks like "
        "leftovers. Run gc when no job writes the root, or pass --force if that job is gone.",
        root.string(), lock->text()));
  }
  if (lock && lock->stale() && !options.json) {
    fmt::print("ignoring the stale lock of {}\n", lock->text());
  }
  std::uint64_t freed = 0;
  int removed = 0;
  int failed = 0;
  boost::json::array entries;
  for (const auto& dir : steps) {
    if (dir.status == cairn::StepStatus::committed) continue;
    auto entry = collect(dir, options.dry_run);
    const std::string action(entry.at("action").get_string());
    const auto bytes = entry.at("bytes").to_number<std::uint64_t>();
    const std::string what = fmt::format("{} (step {}, {})", dir.path.string(), dir.step,
                                         cairn::step_status_name(dir.status));
    if (action == "failed") {
      ++failed;
      fmt::print(stderr, "cairn gc: removing {} failed: {}\n", what,
                 std::string(entry.at("why").get_string()));
    } else if (action == "kept") {
      if (!options.json) {
        fmt::print("kept {}: {}\n", what, std::string(entry.at("why").get_string()));
      }
    } else {
      ++removed;
      freed += bytes;
      if (!options.json) fmt::print("{} {}, {}\n", action, what, human_bytes(bytes));
    }
    entries.push_back(std::move(entry));
  }
  if (options.json) {
    const boost::json::object out = {
        {"root", root.string()},
        {"dry_run", options.dry_run},
        {"lock", lock ? boost::json::value(lock->json()) : boost::json::value(nullptr)},
        {"removed", removed},
        {"failed", failed},
        {"bytes", freed},
        {"directories", std::move(entries)}};
    json.document(out);
  } else {
    fmt::print("{} {} director{}, {}\n", options.dry_run ? "would remove" : "removed", removed,
               removed == 1 ? "y" : "ies", human_bytes(freed));
  }
  return failed == 0 ? kOk : kFailed;
}

}  // namespace cairn_tool
