// cairn — a checkpoint root on disk: how step directories are named (StepNameFormat), what
// a root's listing holds (list_step_directories(), is_checkpoint_root()), its metadata file
// and lock, and the metadata format versions. Shared by CheckpointManager and by tools that
// read roots they do not write; <cairn/manager.hpp> includes it.
#pragma once

#include <boost/json/object.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cairn {

/// How step numbers become directory names and back (Orbax's NameFormat). Implementations
/// must be pure functions of their arguments: every rank names and parses alike. A name that
/// parse_name() accepts must be the one build_name() gives for that step (one spelling per
/// step), else a step could be listed twice.
class StepNameFormat {
 public:
  virtual ~StepNameFormat() = default;
  /// The directory name of `step` (>= 0): no '/', not empty. Not collective.
  [[nodiscard]] virtual std::string build_name(std::int64_t step) const = 0;
  /// The step that the directory name `name` stands for, or std::nullopt when it is not a
  /// step name of this format. Not collective; must not throw.
  [[nodiscard]] virtual std::optional<std::int64_t> parse_name(std::string_view name) const = 0;
  /// A short description stored in cairn-root.json, e.g. "standard(prefix='checkpoint',
  /// fixed_length=8)". Not collective.
  [[nodiscard]] virtual std::string describe() const = 0;

 protected:
  /// For derived formats. Never throws.
  StepNameFormat() = default;
  /// Copies, for derived formats. Never throws.
  StepNameFormat(const StepNameFormat&) = default;
  /// Assigns, for derived formats. Never throws.
  StepNameFormat& operator=(const StepNameFormat&) = default;
};

/// How step name formats are held and shared.
using StepNameFormatPtr = std::shared_ptr<const StepNameFormat>;

/// The step name formats cairn provides.
namespace step_name_format {

/// Orbax's standard format: `<prefix>_<step>`, or `<step>` without prefix, the step zero-padded
/// to `fixed_length` digits when given. Not collective. Throws InvalidArgument when `prefix`
/// holds '/' or `fixed_length` is not in [1, 18].
[[nodiscard]] StepNameFormatPtr standard(std::string prefix = {},
                                         std::optional<int> fixed_length = {});
/// `<prefix><step>`, without separator (CLU's `ckpt-<n>` is joined("ckpt-")); also the naming
/// of roots whose cairn-root.json records a step_prefix but no step_name_format. Not
/// collective. Throws InvalidArgument as standard().
[[nodiscard]] StepNameFormatPtr joined(std::string prefix, std::optional<int> fixed_length = {});
/// CLU's checkpoint names, `ckpt-<n>`. Not collective; never throws beyond std::bad_alloc.
[[nodiscard]] StepNameFormatPtr clu();

}  // namespace step_name_format

/// The state of a step directory under a checkpoint root.
enum class StepStatus : std::uint8_t {
  committed,   ///< final name and COMMITTED marker: a valid checkpoint
  incomplete,  ///< a save that did not finish (temporary name, or no marker)
  deleting,    ///< being deleted, or moved aside (todelete_subdir, replaced by a forced save)
  /// A committed step that failed to restore and was moved aside as `<name>.damaged-<n>` by
  /// CheckpointManager::restore_latest_intact(); kept for inspection, never deleted by cairn.
  quarantined,
  /// A directory named as a step whose files this process may not read (another user's), so
  /// that its state cannot be told.
  unreadable,
};

/// Stable name of a status ("committed", "incomplete", "being deleted", "quarantined",
/// "unreadable"). Never throws.
[[nodiscard]] std::string_view step_status_name(StepStatus status) noexcept;

/// One step directory found under a checkpoint root.
struct StepDirectory {
  std::filesystem::path path = {};            ///< the directory
  std::int64_t step = -1;                     ///< the step number in its name
  StepStatus status = StepStatus::committed;  ///< what state it is in
  /// Named as cairn names unfinished work (`*.cairn-tmp`, `*.cairn-deleting`, `*.cairn-old`)
  /// or moved into a todelete_subdir: safe to remove when no job writes the root.
  bool temporary = false;
};

/// Every step directory under `root`, whatever its state, sorted by step, then path. A step
/// directory is one that cairn's own files make one and whose name (without one of cairn's
/// temporary suffixes) the root's step name format parses, which gives the step: the format
/// recorded in cairn-root.json when it is one of cairn's (standard, joined, clu), else any
/// trailing decimal digits. `<name>` holding COMMITTED is committed, `<name>` holding only
/// cairn-step.json is incomplete, and a `<name>` holding neither is not a step (a user's
/// `lib32` or `copy30`); `<name>.cairn-tmp` is incomplete, `<name>.cairn-deleting` and
/// `<name>.cairn-old` are being deleted, a checkpoint named `<name>.damaged-<n>` is quarantined
/// (its step is that of `<name>`), a `<name>` whose files cannot be read is unreadable, and
/// the checkpoints inside any other sub-directory of the root (a todelete_subdir; only those
/// that is_checkpoint_directory() accepts, the strict judgement, since `cairn gc` removes them)
/// are being deleted. Reads cairn-root.json only. Not collective. Throws
/// NotFound when `root` is not a directory, IoError when it cannot be listed.
[[nodiscard]] std::vector<StepDirectory> list_step_directories(const std::filesystem::path& root);

/// Whether `path` is a checkpoint root: a directory, not itself a checkpoint, that holds
/// cairn-root.json or at least one step directory (list_step_directories()). The judgement
/// the manager's allow_non_empty_root check and the `cairn` tool share. Not collective; never
/// throws.
[[nodiscard]] bool is_checkpoint_root(const std::filesystem::path& path) noexcept;

/// What kind of cairn directory a path is or lies in (CairnDirectory::kind).
enum class CairnDirectoryKind : std::uint8_t {
  /// A checkpoint, committed or not, damaged or not (looks_like_checkpoint_directory(): it
  /// holds COMMITTED or cairn-step.json): a step of a root, or a checkpoint of its own.
  checkpoint,
  /// A directory that cairn names as unfinished work: a save in progress (`*.cairn-tmp`), a
  /// checkpoint being replaced (`*.cairn-old`) or a step being deleted (`*.cairn-deleting`).
  temporary,
  /// A checkpoint root: a directory holding the root metadata (cairn-root.json) or the lock
  /// (cairn.lock) that a CheckpointManager writes there; a local level's node directory too.
  root,
};

/// The cairn directory that a path is or lies in (enclosing_cairn_directory()).
struct CairnDirectory {
  CairnDirectoryKind kind = CairnDirectoryKind::checkpoint;  ///< what it is
  std::filesystem::path path = {};  ///< the directory: absolute, symbolic links resolved
  bool is_given_path = false;       ///< it is the path asked about, not a directory above it
};

/// Which cairn directory `path` is or lies in: the nearest checkpoint or temporary directory
/// among `path` and the directories above it; when there is none, the nearest root; else
/// std::nullopt. A checkpoint above wins over a nearer root, since whatever lies in a
/// checkpoint becomes part of it (its verification fails, deleting it deletes the rest). The
/// one judgement of every writer that must not write into a checkpoint: the manager's root
/// and its local level directory, `cairn convert`'s destination and `cairn dump`'s export
/// file (which is not written in a root either). `path` need not exist; symbolic links in the
/// part that exists are followed, as a write would follow them. Not collective; never throws
/// beyond std::bad_alloc.
[[nodiscard]] std::optional<CairnDirectory> enclosing_cairn_directory(
    const std::filesystem::path& path);

/// Reads the root metadata (cairn-root.json) of the checkpoint root `root` and validates it
/// as a CheckpointManager does: "format", "version", "step_prefix" and "world_size" must be
/// what cairn writes; "user" is returned as it is. For tools that read roots they did not
/// write. Not collective (one small file, read on the calling rank). Throws NotFound when the
/// file does not exist, IoError when it cannot be read, FormatError naming the file and the
/// first bad field when it is damaged or too large; never crashes on hostile input.
[[nodiscard]] boost::json::object read_root_metadata(const std::filesystem::path& root);

/// Who holds the lock of `root` that a writing CheckpointManager takes ("host h, pid p, Slurm
/// job j", or the raw text of a damaged lock file), or std::nullopt when the root is not
/// locked. A lock may outlive a job that was killed. Not collective; never throws beyond
/// std::bad_alloc.
[[nodiscard]] std::optional<std::string> root_lock_holder(const std::filesystem::path& root);

/// The lock of a checkpoint root as its file holds it, for tools that report on roots they
/// do not write.
struct RootLock {
  std::filesystem::path file = {};  ///< the lock file (`<root>/cairn.lock`)
  std::string host = {};            ///< host of the holder; empty when the file lacks it
  std::int64_t pid = 0;             ///< process id of the holder; 0 when the file lacks it
  std::string slurm_job_id = {};    ///< Slurm job of the holder; empty outside Slurm
  /// Whether the holder still runs, judged as a CheckpointManager judges it before taking the
  /// lock over: false when the holder ran on this host and its process is gone (or its pid
  /// now belongs to a newer process), when its lease expired (see `lease`) and when the file
  /// is damaged (a lock is written whole and then linked, so a damaged one is no running
  /// job's), true when that process runs, std::nullopt when it cannot be told here (another
  /// host within its lease, an unreadable file).
  std::optional<bool> alive = {};
  /// The lease the holder renews the lock within (CheckpointManagerOptions::lock_lease); 0 for
  /// a lock written without one. A lock not renewed (its file's modification time) for longer
  /// than its lease is stale from any host: `alive` is then false.
  std::chrono::seconds lease = {};
  /// Seconds since the holder last renewed the lock (by this host's clock).
  double seconds_since_renewal = 0;
  std::string text = {};     ///< the file's content as read (at most 64 KiB)
  std::string problem = {};  ///< why the file could not be read or parsed; empty when sound
};

/// Reads the lock of `root` (see RootLock), or std::nullopt when the root is not locked.
/// Not collective; never throws beyond std::bad_alloc (an unreadable or damaged lock file is
/// a RootLock with `problem` set).
[[nodiscard]] std::optional<RootLock> read_root_lock(const std::filesystem::path& root);

/// Versions of the metadata files this build of cairn writes (the newest it reads):
/// cairn-step.json of a checkpoint, cairn-tree.json of an array tree, cairn-root.json of a
/// CheckpointManager's root.
struct FormatVersions {
  std::int64_t step = 0;  ///< cairn-step.json
  std::int64_t tree = 0;  ///< cairn-tree.json (the on-disk format version of array trees)
  std::int64_t root = 0;  ///< cairn-root.json
};

/// The metadata format versions of this build. Not collective; never throws.
[[nodiscard]] FormatVersions format_versions() noexcept;

}  // namespace cairn
