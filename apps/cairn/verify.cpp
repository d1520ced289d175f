// cairn verify CHECKPOINT|ROOT: re-read everything and report what is damaged.
#include <unistd.h>

#include <boost/json.hpp>
#include <cairn/checkpointer.hpp>
#include <cairn/handlers.hpp>
#include <cairn/manager.hpp>
#include <cairn/storage.hpp>
#include <fmt/format.h>

#include <cstdio>

#include "checkpoint_dir.hpp"
#include "commands.hpp"

namespace cairn_tool {
namespace {

// Progress of the primary rank: a bar on a terminal, nothing otherwise (plain lines are
// printed per item instead).
class Progress {
 public:
  explicit Progress(bool enabled) : enabled_(enabled && ::isatty(STDERR_FILENO) == 1) {}
  void update(const std::string& label, std::size_t done, std::size_t total) const {
    if (!enabled_) return;
    constexpr std::size_t kWidth = 30;
    const std::size_t filled = total == 0 ? kWidth : done * kWidth / total;
    fmt::print(stderr, "\r  [{}{}] {}/{} shards  {}\033[K", std::string(filled, '#'),
               std::string(kWidth - filled, ' '), done, total, label);
    std::fflush(stderr);
  }
  void clear() const {
    if (enabled_) fmt::print(stderr, "\r\033[K");
  }

 private:
  bool enabled_;
};

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
          if (comm.is_primary()) progress.update(label, done, total);
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

// Verifies one checkpoint; returns whether it is intact.
bool verify_checkpoint(const cairn::Comm& comm, const std::filesystem::path& path,
                       const VerifyOptions& options) {
  const bool say = comm.is_primary();
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
  const Progress progress(!options.quiet);
  std::size_t shards = 0;
  std::uint64_t bytes = 0;
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
  return problems.empty();
}

// Whether the root needs cairn-root.json and it is missing or damaged (reported on the
// primary). A CheckpointManager writes that file and records "custom.metrics" in every step's
// cairn-step.json; steps saved with a plain Checkpointer have neither, which is no damage.
bool root_metadata_damaged(const cairn::Comm& comm, const std::filesystem::path& root,
                           const std::vector<cairn::StepDirectory>& steps) {
  const auto file = root / "cairn-root.json";
  std::error_code ec;
  bool needed = std::filesystem::exists(file, ec);
  for (const auto& dir : steps) {
    if (needed) break;
    if (dir.temporary || dir.status != cairn::StepStatus::committed) continue;
    boost::json::object step;
    try {
      step = cairn::read_step_metadata(dir.path);
    } catch (const cairn::Error&) {
      continue;  // reported with the step itself
    }
    const auto* custom = step.if_contains("custom");
    needed = custom != nullptr && custom->is_object() && custom->as_object().contains("metrics");
  }
  if (!needed) return false;
  std::string error;
  try {
    (void)cairn::read_root_metadata(root);
    return false;
  } catch (const cairn::Error& e) {
    error = e.what();
  }
  if (comm.is_primary()) {
    fmt::print(
        "{}: DAMAGED\n  - {} (the root metadata of the CheckpointManager that wrote "
        "these steps)\n",
        root.string(), error);
  }
  return true;
}

}  // namespace

int run_verify(const cairn::Comm& comm, const VerifyOptions& options) {
  const std::filesystem::path target = options.target;
  std::error_code ec;
  if (!std::filesystem::is_directory(target, ec)) {
    if (comm.is_primary())
      fmt::print(stderr, "cairn verify: '{}' is not a directory\n", target.string());
    return kFailed;
  }
  if (is_checkpoint_dir(target)) return verify_checkpoint(comm, target, options) ? kOk : kFound;

  // A root: every committed step, and every step directory that claims to be one.
  const auto steps = cairn::list_step_directories(target);
  const int root_damaged = root_metadata_damaged(comm, target, steps) ? 1 : 0;
  int checked = 0;
  int damaged = 0;
  for (const auto& dir : steps) {
    if (dir.status == cairn::StepStatus::quarantined) {
      // Known to be damaged: a restart moved it aside. `cairn verify <path>` checks it alone.
      if (comm.is_primary() && !options.quiet) {
        fmt::print("{}: skipped (quarantined: it did not restore)\n", dir.path.string());
      }
      continue;
    }
    if (dir.temporary) {
      if (comm.is_primary() && !options.quiet) {
        fmt::print("{}: skipped ({}; `cairn gc` removes it)\n", dir.path.string(),
                   cairn::step_status_name(dir.status));
      }
      continue;
    }
    ++checked;
    if (!verify_checkpoint(comm, dir.path, options)) ++damaged;
  }
  if (comm.is_primary()) {
    fmt::print("{}: {} checkpoint{} verified, {} damaged\n", target.string(), checked,
               checked == 1 ? "" : "s", damaged);
  }
  return damaged + root_damaged == 0 ? kOk : kFound;
}

}  // namespace cairn_tool
