// cairn verify CHECKPOINT|ROOT: re-read everything and report what is damaged.
#include <boost/json.hpp>
#include <cairn/checkpointer.hpp>
#include <cairn/handlers.hpp>
#include <cairn/manager.hpp>
#include <cairn/storage.hpp>
#include <fmt/format.h>

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "checkpoint_dir.hpp"
#include "commands.hpp"
#include "progress.hpp"

namespace cairn_tool {
namespace {

struct ItemResult {
  std::vector<std::string> problems;
  std::size_t shards = 0;
  std::uint64_t bytes = 0;
};

ItemResult verify_bytes(const cairn::Comm& comm, const Item& item) {
  ItemResult result;
  cairn::BytesHandler handler;
  // The library's validating reader of the index first: what is read from it below (the
  // ranks of the blobs) is then known to be sound.
  boost::json::value summary;
  try {
    summary = handler.metadata(comm, item.dir);
  } catch (const cairn::Error& e) {
    result.problems.push_back(e.what());
    return result;
  }
  const auto check = [&](const cairn::BytesRestore& args) {
    try {
      const auto bytes =
          std::any_cast<std::vector<std::byte>>(handler.restore(comm, item.dir, &args));
      ++result.shards;
      result.bytes += bytes.size();
    } catch (const cairn::Error& e) {
      result.problems.push_back(e.what());
    }
  };
  if (summary.at("replicated").as_bool()) {
    check(cairn::BytesRestore());
    return result;
  }
  const auto index = read_json_file(item.dir / "cairn-bytes.json");
  if (!index.value) {
    result.problems.push_back(index.error);
    return result;
  }
  for (const auto& blob : index.value->at("blobs").as_array()) {
    check(cairn::BytesRestore(static_cast<int>(blob.at("rank").as_int64())));
  }
  return result;
}

ItemResult verify_item(const cairn::Comm& comm, const Item& item, const Progress& progress,
                       const std::string& label) {
  if (item.type == kArrayTree) {
    const auto report =
        cairn::verify_tree(comm, item.dir, [&](std::size_t done, std::size_t total) {
          progress.update(label, done, total, "shards");
        });
    progress.clear();
    return {report.problems, report.shards, report.bytes};
  }
  if (item.type == kJson) {
    const auto file = read_json_file(item.dir / "value.json");
    if (!file.value) return {{file.error}, 0, 0};
    return {{}, 0, 0};
  }
  if (item.type == kBytes) return verify_bytes(comm, item);
  return {{fmt::format("item '{}' has the handler type '{}', which this tool cannot check",
                       item.label(), item.type)},
          0,
          0};
}

// Verifies one checkpoint: {"path", "ok", "items": [...], "shards", "bytes", "problems"}.
// Prints the text report unless options.json.
boost::json::object verify_checkpoint(const cairn::Comm& comm, const std::filesystem::path& path,
                                      const VerifyOptions& options) {
  const bool say = comm.is_primary() && !options.json;
  const Checkpoint ckpt = read_checkpoint(path);
  std::vector<std::string> problems = ckpt.problems;
  if (!ckpt.committed) {
    problems.insert(problems.begin(),
                    fmt::format("no {} marker: the save did not finish (or the marker was "
                                "removed); restore never uses this checkpoint",
                                cairn::kCommitMarker));
  }
  if (ckpt.committed) {
    try {
      cairn::Checkpointer checker(comm, std::make_shared<cairn::CompositeHandler>());
      (void)checker.metadata(path);
    } catch (const cairn::Error& e) {
      problems.push_back(e.what());
    }
  }
  if (ckpt.items.empty()) problems.push_back("no item found");
  const Progress progress(!options.quiet && !options.json, comm.is_primary());
  std::size_t shards = 0;
  std::uint64_t bytes = 0;
  boost::json::array items;
  for (const auto& item : ckpt.items) {
    const std::string label = fmt::format("{}/{}", path.filename().string(), item.name);
    const ItemResult result = verify_item(comm, item, progress, label);
    shards += result.shards;
    bytes += result.bytes;
    if (say && !options.quiet) {
      fmt::print("  {} ({}): {} shard{}, {}: {}\n", item.label(), item.type, result.shards,
                 result.shards == 1 ? "" : "s", human_bytes(result.bytes),
                 result.problems.empty() ? "ok" : "DAMAGED");
    }
    items.push_back({{"name", item.label()},
                     {"type", item.type},
                     {"shards", result.shards},
                     {"bytes", result.bytes},
                     {"ok", result.problems.empty()}});
    for (const auto& p : result.problems) problems.push_back(item.label() + ": " + p);
  }
  if (say) {
    if (problems.empty()) {
      fmt::print("{}: OK ({} item{}, {} shard{}, {})\n", path.string(), ckpt.items.size(),
                 ckpt.items.size() == 1 ? "" : "s", shards, shards == 1 ? "" : "s",
                 human_bytes(bytes));
    } else {
      fmt::print("{}: DAMAGED\n", path.string());
      for (const auto& p : problems) fmt::print("  - {}\n", p);
    }
    std::fflush(stdout);
  }
  return {{"path", path.string()},
          {"ok", problems.empty()},
          {"items", std::move(items)},
          {"shards", shards},
          {"bytes", bytes},
          {"problems", boost::json::value_from(problems)}};
}

// Why the root's cairn-root.json is missing or damaged when the root needs one, or an empty
// string. A CheckpointManager writes that file and records "custom.metrics" in every step's
// cairn-step.json; steps saved with a plain Checkpointer have neither, which is no damage.
std::string root_metadata_problem(const std::filesystem::path& root,
                                  const std::vector<cairn::StepDirectory>& steps) {
  const auto file = root / "cairn-root.json";
  std::error_code ec;
  bool needed = std::filesystem::exists(file, ec);
  for (const auto& dir : steps) {
    if (needed) break;
    if (dir.temporary || dir.status != cairn::StepStatus::committed) continue;
    boost::json::value custom;
    try {
      custom = cairn::StepMetadata::read(dir.path).custom;
    } catch (const cairn::Error&) {
      continue;  // reported with the step itself
    }
    needed = custom.is_object() && custom.as_object().contains(cairn::step_custom_key::kMetrics);
  }
  if (!needed) return {};
  try {
    (void)cairn::read_root_metadata(root);
    return {};
  } catch (const cairn::Error& e) {
    return fmt::format("{} (the root metadata of the CheckpointManager that wrote these steps)",
                       e.what());
  }
}

// The damaged data files that several damaged steps share (incremental saves hard-link the
// files they refer to): a file named in a step's problems whose inode is also a file named in
// another step's. {"file", "steps": [...]} for each, the file as the oldest step names it.
boost::json::array shared_damage(const std::vector<cairn::StepDirectory>& steps,
                                 const boost::json::array& reports) {
  namespace fs = std::filesystem;
  struct Named {
    std::string file;
    std::vector<std::int64_t> steps;
  };
  std::map<std::pair<std::uint64_t, std::uint64_t>, Named> by_inode;
  for (const auto& value : reports) {
    const auto& report = value.get_object();
    if (report.at("ok").as_bool()) continue;
    const fs::path dir(std::string(report.at("path").get_string()));
    std::string problems;
    for (const auto& p : report.at("problems").get_array()) problems += p.get_string();
    const auto step = std::find_if(steps.begin(), steps.end(),
                                   [&](const cairn::StepDirectory& d) { return d.path == dir; });
    if (step == steps.end()) continue;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      struct stat st {};
      if (!it->is_regular_file(ec) || ::stat(it->path().c_str(), &st) != 0 || st.st_nlink < 2 ||
          problems.find(it->path().string()) == std::string::npos) {
        continue;
      }
      auto& named =
          by_inode[{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)}];
      if (named.file.empty()) named.file = it->path().string();
      named.steps.push_back(step->step);
    }
  }
  boost::json::array out;
  for (auto& [inode, named] : by_inode) {
    if (named.steps.size() < 2) continue;
    std::sort(named.steps.begin(), named.steps.end());
    out.push_back({{"file", named.file}, {"steps", boost::json::value_from(named.steps)}});
  }
  return out;
}

}  // namespace

int run_verify(const cairn::Comm& comm, const VerifyOptions& options, JsonStream& json) {
  const std::filesystem::path target = options.target;
  const bool say = comm.is_primary() && !options.json;
  std::error_code ec;
  if (const std::string denied = permission_problem(target); !denied.empty()) {
    throw CommandError(denied);
  }
  if (!std::filesystem::exists(target, ec)) {
    throw CommandError(fmt::format("'{}' does not exist", target.string()));
  }
  if (!std::filesystem::is_directory(target, ec)) {
    throw CommandError(fmt::format("'{}' is not a directory", target.string()));
  }
  if (is_checkpoint_dir(target)) {
    const auto report = verify_checkpoint(comm, target, options);
    json.document(report);
    return report.at("ok").as_bool() ? kOk : kFound;
  }
  // A root: every committed step, and every step directory that claims to be one.
  if (!cairn::is_checkpoint_root(target)) {
    throw CommandError(not_a_root(target));
  }
  const auto steps = cairn::list_step_directories(target);
  const std::string root_problem = root_metadata_problem(target, steps);
  if (say && !root_problem.empty())
    fmt::print("{}: DAMAGED\n  - {}\n", target.string(), root_problem);
  int checked = 0;
  int damaged = 0;
  int unreadable = 0;
  boost::json::array checkpoints;
  boost::json::array skipped;
  for (const auto& dir : steps) {
    if (dir.status == cairn::StepStatus::quarantined ||
        dir.status == cairn::StepStatus::unreadable || dir.temporary) {
      // Quarantined: known to be damaged, a restart moved it aside (`cairn verify <path>`
      // checks it alone). Unreadable: nothing to check with this user's rights (the run
      // fails unless damage was found). Temporary: leftovers of unfinished work.
      const bool cannot_read = dir.status == cairn::StepStatus::unreadable;
      unreadable += cannot_read ? 1 : 0;
      const std::string why = dir.temporary ? fmt::format("{}; `cairn gc` removes it",
                                                          cairn::step_status_name(dir.status))
                              : cannot_read ? std::string("unreadable: this user may not read it")
                                            : std::string("quarantined: it did not restore");
      if (say && !options.quiet) fmt::print("{}: skipped ({})\n", dir.path.string(), why);
      skipped.push_back({{"path", dir.path.string()}, {"why", why}});
      continue;
    }
    ++checked;
    auto report = verify_checkpoint(comm, dir.path, options);
    if (!report.at("ok").as_bool()) ++damaged;
    checkpoints.push_back(std::move(report));
  }
  const bool ok = damaged == 0 && root_problem.empty();
  const boost::json::array shared =
      comm.is_primary() && damaged > 1 ? shared_damage(steps, checkpoints) : boost::json::array();
  if (comm.is_primary() && options.json) {
    const boost::json::object out = {
        {"root", target.string()},
        {"ok", ok},
        {"checked", checked},
        {"damaged", damaged},
        {"root_problem",
         root_problem.empty() ? boost::json::value(nullptr) : boost::json::value(root_problem)},
        {"checkpoints", std::move(checkpoints)},
        {"skipped", std::move(skipped)},
        {"shared_damage", shared}};
    json.document(out);
  } else if (say) {
    for (const auto& value : shared) {
      std::string list;
      for (const auto& step : value.at("steps").get_array()) {
        list += (list.empty() ? "" : ", ") + std::to_string(step.to_number<std::int64_t>());
      }
      fmt::print("steps {} share the damaged file {} (incremental saves link it)\n", list,
                 std::string(value.at("file").get_string()));
    }
    fmt::print("{}: {} checkpoint{} verified, {} damaged\n", target.string(), checked,
               checked == 1 ? "" : "s", damaged);
  }
  return !ok ? kFound : unreadable > 0 ? kFailed : kOk;
}

}  // namespace cairn_tool
