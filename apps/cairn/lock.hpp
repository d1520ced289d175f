// cairn (the command-line tool) — who holds a root's lock, and whether that job still runs.
#pragma once

#include <boost/json/object.hpp>
#include <cairn/checkpoint_root.hpp>
#include <filesystem>
#include <optional>
#include <string>

namespace cairn_tool {

/// A root's lock with the tool's verdict on it.
struct LockReport {
  cairn::RootLock lock;
  /// Whether the holder runs: the library's judgement (its process on this host), else for a
  /// Slurm job what squeue says of it; std::nullopt when neither can tell.
  std::optional<bool> alive;
  std::string why;  ///< how `alive` was decided, in words

  /// "host h, pid p, Slurm job j" (or the problem of a damaged file), with the verdict.
  [[nodiscard]] std::string text() const;
  /// {"host", "pid", "slurm_job_id", "alive", "stale", "why", "file"; "problem" and "text"
  /// for a damaged file}.
  [[nodiscard]] boost::json::object json() const;
  /// Known not to run: a stale lock left by a job that died.
  [[nodiscard]] bool stale() const { return alive.has_value() && !*alive; }
};

/// The lock of `root`, or std::nullopt when it is not locked. Runs `squeue` for a lock of a
/// Slurm job on another host when squeue is on PATH. Not collective; never throws beyond
/// std::bad_alloc.
[[nodiscard]] std::optional<LockReport> read_lock(const std::filesystem::path& root);

}  // namespace cairn_tool
