// cairn — the layout of a checkpoint root (internal): step directory names, listing committed
// steps (by a StepNameFormat), the root metadata file, the root lock, and deleting steps.
#pragma once

#include <boost/json/object.hpp>
#include <cairn/checkpoint_root.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace cairn::manager {

/// Name of the root metadata file.
inline constexpr const char* kRootMetadataFile = "cairn-root.json";
/// Name of the lock file of a root being written.
inline constexpr const char* kLockFile = "cairn.lock";
/// Suffix of a step directory being deleted in the background.
inline constexpr const char* kDeletingSuffix = ".cairn-deleting";
/// What a quarantined step directory is named after: `<name>.damaged-<n>`, n = 1, 2, ...
inline constexpr const char* kQuarantineInfix = ".damaged-";

/// Whether `name` is that of a quarantined step directory (`<name>.damaged-<n>`); `base`
/// (when given) gets the name the step had. Not collective; never throws beyond bad_alloc.
[[nodiscard]] bool is_quarantine_name(std::string_view name, std::string* base = nullptr);

/// The format that StepNameFormat::describe() of step_name_format::standard() or joined()
/// (clu() is joined) spelled as `text`: `kind(prefix='P')` or `kind(prefix='P',
/// fixed_length=N)`; nullptr for any other text (a caller's own format). Never throws beyond
/// std::bad_alloc.
[[nodiscard]] StepNameFormatPtr step_name_format_from_description(std::string_view text);

/// The step name format recorded in the root metadata of `root` when it is one of cairn's
/// (StepNameFormat::describe() of standard(), joined() or clu(), or a step_prefix alone);
/// nullptr when the root has no readable metadata or records a caller's own format. Not
/// collective; never throws beyond std::bad_alloc.
[[nodiscard]] StepNameFormatPtr recorded_step_name_format(const std::filesystem::path& root);

/// The committed steps under `root`, ascending. Not collective. Throws IoError when the root
/// cannot be listed (a missing root has no steps).
[[nodiscard]] std::vector<std::int64_t> list_committed_steps(const std::filesystem::path& root,
                                                             const StepNameFormat& naming);

/// Paths under `root` left by saves or deletes that did not finish (`*.cairn-tmp`,
/// `*.cairn-deleting`, `*.cairn-old`). Not collective.
[[nodiscard]] std::vector<std::filesystem::path> leftover_paths(const std::filesystem::path& root);

/// Takes the root lock for this job: creates cairn.lock with the job's identity (host, pid,
/// SLURM_JOB_ID) and `lease`. An existing lock of the same job (same Slurm job id, or same
/// host and a process that is gone) is taken over, and so is one whose lease expired (from any
/// host, with a warning naming the old holder). Not collective (the primary calls it). Throws
/// InvalidArgument naming the holder when another job holds the lock.
void acquire_lock(const std::filesystem::path& root, std::chrono::seconds lease);

/// Renews the lock of `root` that this process holds (its modification time) every quarter of
/// `lease`, from a thread of its own that calls no MPI, until destroyed; a lock no longer
/// this process's is left alone. Not collective. Construction throws only std::system_error
/// (no thread); a failed renewal is logged.
class LockRenewal {
 public:
  LockRenewal(std::filesystem::path root, std::chrono::seconds lease);
  ~LockRenewal();
  LockRenewal(const LockRenewal&) = delete;
  LockRenewal& operator=(const LockRenewal&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable stop_signal_;
  bool stop_ = false;
  std::thread thread_;
};
/// Removes the lock if this process holds it. Not collective; never throws.
void release_lock(const std::filesystem::path& root) noexcept;

/// Removes a step directory now (rename to `<name>.cairn-deleting` first, so that a crash
/// leaves no half-deleted step that looks committed), or moves it into `todelete_subdir`.
/// Returns the path still to be removed when `defer` (background delete), else nothing.
/// Not collective. Throws IoError.
std::optional<std::filesystem::path> delete_step_dir(
    const std::filesystem::path& root, const std::string& name,
    const std::optional<std::string>& todelete_subdir, bool defer);

/// Moves the step directory `root/name` aside as `root/name.damaged-<n>` (the first n not
/// taken) and syncs the root; returns the new path. Not collective (the primary calls it).
/// Throws IoError naming both paths when the rename fails.
std::filesystem::path quarantine_step_dir(const std::filesystem::path& root,
                                          const std::string& name);

/// Why a manager must not write checkpoints under `root`, or an empty string: `root` is or
/// lies in a checkpoint or a temporary directory of cairn (enclosing_cairn_directory(): holds
/// cairn-step.json or COMMITTED, or is named `*.cairn-tmp`, `*.cairn-old`,
/// `*.cairn-deleting`), or, with `require_root_or_empty`, `root` is a non-empty directory that
/// holds neither cairn-root.json nor a step directory. A missing `root` is fine. Serves the
/// manager's root and its local level directory. Not collective.
[[nodiscard]] std::string misplaced_root_reason(const std::filesystem::path& root,
                                                bool require_root_or_empty);

}  // namespace cairn::manager
