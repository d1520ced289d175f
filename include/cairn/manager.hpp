// cairn — CheckpointManager: a series of checkpoints of a running simulation (when to save,
// what to keep, best by metric, preemption), on top of the checkpoint layer.
#pragma once

#include <cairn/checkpoint_root.hpp>
#include <cairn/checkpointer.hpp>
#include <cairn/comm.hpp>
#include <cairn/handlers.hpp>
#include <cairn/levels.hpp>
#include <cairn/policies.hpp>
#include <cairn/preemption.hpp>

#include <any>
#include <atomic>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace cairn {

namespace levels {
class LocalLevel;
}  // namespace levels
namespace manager {
class LockRenewal;
}  // namespace manager

/// A forced save of a step that already exists (Orbax StepAlreadyExistsError). Replacing a step
/// through the manager is delete_step() then save(). An InvalidArgument, so that code catching
/// that (and the C status CAIRN_ERR_INVALID_ARGUMENT) sees it too.
class StepAlreadyExists : public InvalidArgument {
 public:
  /// `step` is the step that exists; `message` names it and the root.
  StepAlreadyExists(std::int64_t step, std::string message);
  /// The step that exists. Never throws.
  [[nodiscard]] std::int64_t step() const noexcept { return step_; }

 private:
  std::int64_t step_;
};

/// Options of a CheckpointManager (Orbax's CheckpointManagerOptions). Aggregate: use
/// designated initializers. The plain save and preservation fields build the policies unless
/// a policy object is given.
struct CheckpointManagerOptions {
  // ---- when to save
  /// Save every this many steps; 0 saves on no interval (only save_on_steps, the initial
  /// save and preemption). Must not be negative.
  std::int64_t save_interval_steps = 1;
  /// Also save at these steps.
  std::set<std::int64_t> save_on_steps = {};
  /// When set, decides alone in place of save_interval_steps, save_on_steps and the initial
  /// save (as in Orbax); preemption saves still happen. Orbax's signature, `(step,
  /// latest_step)` with the newest saved step (std::nullopt when none), or `(step)`. Called
  /// on the primary only; every rank takes its answer.
  ShouldSaveFunction should_save_fn = {};
  /// Replaces the three fields above (a preemption save is always added).
  std::shared_ptr<const SaveDecisionPolicy> save_decision_policy = {};

  // ---- what to keep (the newest committed checkpoint is always kept)
  /// Keep at most this many (the latest, or the best with best_fn). Empty keeps all (Orbax's
  /// None; the C and Fortran bindings spell it CAIRN_KEEP_ALL, their default). 0 keeps none
  /// but the newest committed step, which cairn always keeps (Orbax's 0 keeps none at all).
  /// Must not be negative.
  std::optional<int> max_to_keep = {};
  /// Also keep every step that is a multiple of this.
  std::optional<std::int64_t> keep_period = {};
  /// Also keep one checkpoint per this interval.
  std::optional<std::chrono::seconds> keep_time_interval = {};
  /// The metric a checkpoint is ranked by, from the metrics saved with it; std::nullopt when
  /// they do not hold it: the checkpoint then counts as saved without metrics (see
  /// keep_checkpoints_without_metrics; best_step() skips it). A save without metrics is
  /// logged as a warning, as Orbax does. A function returning double converts. Called by
  /// retention after each commit on the primary (which decides what every rank deletes), and
  /// by best_step() on every rank: an exception from it makes that save throw (on every rank)
  /// although the step is committed.
  std::function<std::optional<double>(const boost::json::object& metrics)> best_fn = {};
  /// Whether larger or smaller best_fn values are better.
  BestMode best_mode = BestMode::max;
  /// With best_fn: keep checkpoints saved without metrics (or whose best_fn is std::nullopt).
  bool keep_checkpoints_without_metrics = true;
  /// Also keep every committed step for which it returns true (Orbax's should_keep_fn),
  /// besides what the fields above or preservation_policy keep (the C ABI's
  /// cairn_manager_options.should_keep_fn). Called by retention on the primary only, which
  /// decides what every rank deletes: an exception from it makes that save throw on every
  /// rank although the step is committed.
  std::function<bool(std::int64_t step)> should_keep_fn = {};
  /// Replaces max_to_keep, keep_period, keep_time_interval and
  /// keep_checkpoints_without_metrics (best_fn and best_mode still rank the steps for
  /// best_step() and for a BestN in the policy). Giving it with max_to_keep, keep_period or
  /// keep_time_interval is an InvalidArgument naming both, as in Orbax.
  std::shared_ptr<const PreservationPolicy> preservation_policy = {};

  // ---- layout and behaviour
  /// Step directories are named `<step_prefix>_<step>`, or `<step>` when empty (Orbax's
  /// standard name format). A root whose cairn-root.json records this prefix but no
  /// step_name_format was written with `<step_prefix><step>` names, which are then kept.
  std::string step_prefix = {};
  /// Zero-pad step numbers to this many digits (1 to 18).
  std::optional<int> step_format_fixed_length = {};
  /// Replaces step_prefix and step_format_fixed_length (giving it with either is an
  /// InvalidArgument): step_name_format::standard(), joined(), clu() or the caller's own.
  StepNameFormatPtr step_name_format = {};
  /// Create the root when it does not exist (else NotFound).
  bool create = true;
  /// Let a writing manager open a non-empty directory that is not a checkpoint root (holds
  /// neither cairn-root.json nor a step directory). Off: such a directory is refused, so that
  /// a mistyped path does not fill a directory of other files with checkpoints. A checkpoint,
  /// an item of one, or a directory inside either is refused whatever this says.
  bool allow_non_empty_root = false;
  /// The caller's metadata of the whole series (Orbax CheckpointManager's `metadata`): stored
  /// as "user" in cairn-root.json by the manager that creates that file; later managers keep
  /// what the first one wrote. metadata() returns it.
  boost::json::object metadata = {};
  /// Remove temporary directories of unfinished saves and deletes at start.
  bool cleanup_tmp_directories = false;
  /// List only the step numbers when opening the root (and at reload()); the step metadata
  /// (times, metrics) is read at the first member that needs it: save decisions, retention,
  /// best_step() with best_fn, metrics() (Orbax lightweight_initialize). For a job that
  /// opens a root of many steps to restore one.
  bool lightweight_initialize = false;
  /// Never write: save() returns false and delete_step() does nothing (both log it),
  /// should_save() answers false, no lock and no cairn-root.json are written, nothing is
  /// cleaned up or quarantined. metadata() returns what is on disk, or the metadata this
  /// manager was given when the root has no cairn-root.json.
  bool read_only = false;
  /// The lease of the root's lock (cairn.lock): the primary renews the lock every quarter of
  /// it, from a thread that calls no MPI, and a lock not renewed for this long is stale from
  /// any host, so a job on other hosts takes it over (with a warning naming the old holder)
  /// after the host of a primary died. A live job, on any host, is never taken over. At least
  /// one second.
  std::chrono::seconds lock_lease{60};
  /// Write cairn-root.json when the root has none (Orbax save_root_metadata). Off: nothing is
  /// written, and on a root without that file metadata() returns an empty object, as Orbax's
  /// metadata() does (a read_only manager: see read_only).
  bool save_root_metadata = true;
  /// Do not write the metrics given to save() into the step metadata (Orbax
  /// prevent_write_metrics). This manager still holds them in memory for the steps it saved,
  /// so best_fn, retention and metrics() use them until reload(); a manager opened later, or
  /// reload(), finds those steps saved without metrics (best_step() with best_fn skips them).
  bool prevent_write_metrics = false;
  /// Move deleted steps into this sub-directory of the root instead of removing them.
  std::optional<std::string> todelete_subdir = {};
  /// Remove deleted steps on a background thread (finished by close()).
  bool enable_background_delete = false;
  /// Incremental saves: each save refers to the newest committed step (the step a restart
  /// would resume from) for the checksum chunks of its posix array leaves that did not
  /// change, instead of writing them again (TreeSaveOptions::incremental_base, item by item
  /// of a Composite). Retention deletes steps as usual: the data files a later step refers
  /// to are hard links in that step's directory, so a chunk still referred to is never
  /// removed. The first save, and a save after the newest step was deleted, write whole.
  /// A damaged chunk breaks every step that refers to it: see incremental_full_every.
  bool incremental = false;
  /// With incremental: every save whose newest step heads a chain of this many steps (itself
  /// and the incremental saves before it back to the last whole one) writes whole instead, so
  /// that one damaged file reaches at most this many steps and a restart finds an intact one
  /// older than them. 1: every save writes whole. The depth of each step is stored in its
  /// cairn-step.json ("custom.incremental_depth", 0 for a whole save), so a restarted job
  /// goes on counting; a newest step without it (an older cairn) is followed by a whole save.
  /// Must be at least 1 (else InvalidArgument).
  std::int64_t incremental_full_every = 8;
  /// The primary lists steps and reads metadata, then broadcasts (else every rank reads).
  /// Restores into an ArrayTreeRestore target (also inside a Composite) read replicated array
  /// leaves on the primary only and broadcast them (TreeRestoreOptions::load_and_broadcast:
  /// NCCL for device buffers, MPI for host buffers).
  bool single_host_load_and_broadcast = false;
  /// Rank that does the single-writer work.
  int primary_host = 0;
  /// Ranks of the communicator that take part in checkpointing (Orbax active_processes);
  /// empty: all. Must include primary_host. The manager's collective calls are then
  /// collective over these ranks only; on the other ranks every call returns at once without
  /// touching the file system (see CheckpointManager::is_active()).
  std::vector<int> active_processes = {};
  /// Deadline of every collective step.
  std::chrono::milliseconds barrier_timeout = std::chrono::minutes(10);
  /// Save in the background (the manager's checkpointer is an AsyncCheckpointer) or
  /// synchronously (a Checkpointer).
  bool enable_async = true;
  /// Staging budget and zero-copy of async saves.
  AsyncOptions async = {};
  /// Modes and group of new checkpoint files, deadline of a rank's local writes (sync and
  /// async saves).
  CheckpointerOptions checkpointer = {};
  /// Where this manager's handlers come from (Orbax's `handler_registry` option): the
  /// handler of a single item and of each composite item not given in the constructor's
  /// `item_handlers` is made by this registry (for a composite item, per item name first:
  /// HandlerRegistry::add(item_name, type_name, factory)), which falls back to
  /// HandlerRegistry::global() for what it lacks. Two managers of one program can thus map the
  /// same item name, or handler type, to different handlers. Null: HandlerRegistry::global().
  /// Every rank must register the same factories (a handler that differs between ranks is
  /// the caller's bug, as with item_handlers).
  std::shared_ptr<const HandlerRegistry> handler_registry = {};
  /// Install preemption detection (signals, Slurm end time, or an injected
  /// PreemptionOptions::check) when set.
  std::optional<PreemptionOptions> preemption = {};
  /// Where "now" comes from for every time-based decision of the manager: the time of a save
  /// decision (ContinuousCheckpointing's minimum interval, custom policies), the step times
  /// that keep_time_interval and EveryNSeconds keep by (stored with each step, so a restarted
  /// manager sees them too), the wait for the previous save, and preemption's deadline when
  /// PreemptionOptions::clock is empty. Empty: std::chrono::system_clock::now. Called on the
  /// primary only (preemption: on every rank); tests inject a fake clock here.
  std::function<std::chrono::system_clock::time_point()> clock = {};
  /// Called with the step and its metrics once a save is committed (the step is on disk and
  /// all_steps() lists it), before retention runs: the place to report a step as saved. Runs
  /// on every active rank, on the thread that called the manager member that found the
  /// commit: save() for a synchronous save; for an async one the first should_save(), save(),
  /// check_for_errors(), wait_until_finished(), restore() or close() after every rank
  /// finished it. An exception from it on any rank is thrown on every rank from that member;
  /// the step stays committed. It runs while the manager holds its lock: it may call the
  /// manager's non-collective members, but a lock it takes must not be held by a thread that
  /// calls the manager (a lock-order inversion).
  std::function<void(std::int64_t step, const boost::json::object& metrics)> on_commit = {};
  /// A node-local level that every save goes to first (see LocalLevelOptions); the root is
  /// then the persistent level, reached by the saves the local level drains. std::nullopt:
  /// every save goes to the root, as a single level.
  std::optional<LocalLevelOptions> local_level = {};
};

/// The keys of the object that a CheckpointManager stores under "custom" in each step's
/// cairn-step.json (StepMetadata::custom). A step saved by a plain Checkpointer may hold any
/// JSON value there instead; a reader checks each key's type.
namespace step_custom_key {
/// The save's metrics (ManagerSaveOptions::metrics), an object; empty with
/// CheckpointManagerOptions::prevent_write_metrics.
inline constexpr std::string_view kMetrics = "metrics";
/// The caller's custom metadata (ManagerSaveOptions::custom_metadata), any JSON value.
inline constexpr std::string_view kUser = "user";
/// The time of the save decision on the manager's clock, an integer of nanoseconds since the
/// epoch: what keep_time_interval and EveryNSeconds keep by.
inline constexpr std::string_view kTimeNs = "time_ns";
/// Seconds the save waited for the previous one to commit, a number; present only when it
/// waited.
inline constexpr std::string_view kWaitedForPreviousSave = "waited_for_previous_save_s";
/// With CheckpointManagerOptions::incremental: the step's place in its chain of incremental
/// saves, an integer, 0 for a whole save.
inline constexpr std::string_view kIncrementalDepth = "incremental_depth";
}  // namespace step_custom_key

/// Options of one CheckpointManager::save(). Aggregate.
struct ManagerSaveOptions {
  /// Stored with the step (step_custom_key::kMetrics); best_fn ranks checkpoints by them.
  boost::json::object metrics = {};
  /// Save even when the save policy says no (also a step older than the newest). A step that
  /// already exists is never replaced: a forced save of it throws StepAlreadyExists.
  bool force = false;
  /// Stored in the step metadata (step_custom_key::kUser).
  boost::json::value custom_metadata = nullptr;
};

/// What CheckpointManager::restore_latest_intact() restored.
struct RestoredStep {
  std::int64_t step = -1;  ///< the step restored
  std::any result = {};    ///< what restore() returned for it
  /// Newer steps that failed to restore, newest first; each was moved aside as
  /// `<name>.damaged-<n>` (unless the manager is read_only).
  std::vector<std::int64_t> quarantined = {};
  /// Why each step of `quarantined` did not restore (its error message, naming the file and
  /// the field or leaf), in the same order.
  std::vector<std::string> errors = {};
};

/// A series of checkpoints under one root directory.
///
/// Single-item mode (no item names): save() takes the arguments of one handler and the step
/// directory holds that item. Composite mode (item names, or item -> handler): save() takes a
/// cairn::Composite and each item has its own sub-directory.
///
/// Every member is collective over the manager's active processes (all ranks of the
/// communicator unless CheckpointManagerOptions::active_processes says otherwise) unless it
/// says otherwise. On a rank that is not active, every member returns at once without
/// communicating or touching the file system: save() and should_save() return false, the
/// step queries return nothing, delete_step(), reload(), wait_until_finished() and close() do
/// nothing, and restore(), metrics() and the metadata() calls throw InvalidArgument.
///
/// Threads: wait_until_finished(), is_saving_in_progress(), root(), step_path() and
/// is_active() may be called from several threads at once (a training thread and a logger
/// thread), also while another thread is in a collective member. The members are serialized
/// on each rank by one lock; wait_until_finished() communicates only while a save is in
/// flight, so the extra calls from other threads return at once. Every other member is
/// collective, so each rank must call it from one thread at a time and in the same order as
/// the other ranks. From a thread other than the one that initialized MPI, a member that
/// communicates needs MPI_THREAD_MULTIPLE (or MPI_THREAD_SERIALIZED).
class CheckpointManager {
 public:
  /// Opens (and unless read_only, creates and locks) `root`. Collective over every rank of
  /// `comm`, active or not. Throws NotFound (root missing and !create), InvalidArgument (bad
  /// options, root locked by another job; `root`, or the local level's directory, is a
  /// checkpoint, an item of one or inside either (enclosing_cairn_directory()); a writing
  /// manager on a non-empty directory that is not a checkpoint root, unless
  /// allow_non_empty_root), each naming the path.
  /// A committed step whose cairn-step.json is missing or damaged is listed (without time or
  /// metrics) and logged; restoring it throws FormatError or NotFound naming the file.
  CheckpointManager(const Comm& comm, std::filesystem::path root,
                    CheckpointManagerOptions options = {},
                    std::map<std::string, std::shared_ptr<CheckpointHandler>> item_handlers = {},
                    std::set<std::string> item_names = {});
  /// close(), logging instead of throwing. Collective.
  ~CheckpointManager();
  CheckpointManager(const CheckpointManager&) = delete;
  CheckpointManager& operator=(const CheckpointManager&) = delete;

  /// Saves `args` as `step` when the save policy (or force, or preemption) says so; returns
  /// whether a save started. A step not newer than the newest saved one is not saved (false)
  /// unless `force` is set; a step that already exists is not saved without force (false,
  /// logged: a restarted loop that repeats its last step goes on). A save that must wait for
  /// the previous one to commit records the wait in the step metadata and logs it
  /// (manager.waited_for_previous_save): as a warning when it took more than 1 s on the
  /// manager's clock (Orbax's threshold), else at debug level. Returns false on a read_only
  /// manager. Async by default: the
  /// step is reported by all_steps() only once committed. Retention runs after each commit.
  /// Collective, on every call (saving or not): the ranks agree on `step`, then check `args`,
  /// then take the primary's save decision. Throws InvalidArgument on every rank, before it
  /// looks at the step or the policy (as Orbax), when `args` do not suit the manager: a
  /// cairn::Composite for a manager of a single item, or other arguments for a manager of named
  /// items (one made with item names or handlers, or whose first save or restore, or else the
  /// newest step of its root, was of named items). Throws StepAlreadyExists when `force` is set
  /// and the step exists, CollectiveMismatch on every rank when ranks pass different steps,
  /// TimeoutError when a rank does not make the call, and what the checkpoint layer throws.
  bool save(std::int64_t step, const CheckpointArgs& args, const ManagerSaveOptions& options = {});
  /// Restores `step` (default: the latest). `args` null: every item as saved. Collective.
  /// Throws NotFound when there is no such step; FormatError (or NotFound) naming the file,
  /// and the leaf where there is one, when a file of the step is damaged, truncated, missing
  /// or from another checkpoint (every JSON metadata file is checked against the checksums in
  /// the COMMITTED marker, the sections of cairn-tree.bin that the restore reads against
  /// theirs in cairn-tree.json, every data file against the checksums in the metadata).
  [[nodiscard]] std::any restore(std::optional<std::int64_t> step = std::nullopt,
                                 const CheckpointArgs* args = nullptr);
  /// Restores `step` (default: the newest committed one there) from the checkpoint root
  /// `directory` instead of this manager's root (Orbax restore(..., directory=)): a pretrained
  /// checkpoint kept elsewhere. Its step directories are named with this manager's step name
  /// format. Changes nothing in either root. Collective. Throws NotFound when `directory` has
  /// no such committed step, and what restore() throws.
  [[nodiscard]] std::any restore_from(const std::filesystem::path& directory,
                                      std::optional<std::int64_t> step = std::nullopt,
                                      const CheckpointArgs* args = nullptr);
  /// Restores the newest committed step that restores without error, as restore(step, args)
  /// would, trying the steps newest first: the restart of a run whose newest checkpoint is
  /// damaged. A step fails when restore() throws FormatError or NotFound on any rank (a
  /// checksum mismatch; a damaged, truncated or missing file); every rank then moves on to the
  /// same older step. Once a step restores, every newer step that failed is quarantined: the
  /// primary renames it to `<name>.damaged-<n>` in the root (which step listing, retention and
  /// `cleanup_tmp_directories` leave alone and `cairn ls` shows as quarantined) and logs it
  /// with its error (a read_only manager logs and renames nothing). When no step restores,
  /// nothing is renamed and the newest step's error is thrown. Returns std::nullopt when the
  /// root has no committed step. Collective. Throws what restore() throws other than those
  /// two errors (InvalidArgument for a target that does not fit, IoError, TimeoutError) at once,
  /// the error of the newest step when none restores, IoError when a rename fails.
  [[nodiscard]] std::optional<RestoredStep> restore_latest_intact(
      const CheckpointArgs* args = nullptr);

  /// The newest committed step, or std::nullopt. Collective.
  [[nodiscard]] std::optional<std::int64_t> latest_step();
  /// The best committed step by best_fn; without best_fn the newest (Orbax); std::nullopt
  /// when there is no step, or with best_fn when no step has a metric. Collective.
  [[nodiscard]] std::optional<std::int64_t> best_step();
  /// Committed steps, ascending. `read` re-lists the root first. Collective.
  [[nodiscard]] std::vector<std::int64_t> all_steps(bool read = false);
  /// Re-reads the steps and their metadata from the root. Collective.
  void reload();
  /// Whether save(step) would save (policy and preemption); false on a read_only manager and
  /// for a step not newer than the newest saved one. The primary evaluates the policy
  /// (with its clock and, for should_save_fn, its predicate) and every rank returns its
  /// answer. Collective: ranks asking about different steps get CollectiveMismatch; a failed
  /// async save is rethrown as by check_for_errors().
  [[nodiscard]] bool should_save(std::int64_t step);
  /// Whether any rank was signalled or the time limit is near (see PreemptionWatcher); false
  /// when preemption detection is off. Collective.
  [[nodiscard]] bool reached_preemption(std::int64_t step);
  /// Deletes a committed step (or moves it to todelete_subdir). Collective. Throws NotFound.
  void delete_step(std::int64_t step);
  /// The metrics saved with `step` (empty when none). Collective. Throws NotFound.
  [[nodiscard]] boost::json::object metrics(std::int64_t step);
  /// The root metadata (cairn-root.json): format, version, step_prefix, step_name_format,
  /// world_size, and the caller's CheckpointManagerOptions::metadata as "user". When the root
  /// has no cairn-root.json: for a read_only manager the same fields built from its options;
  /// for a writing one (which has save_root_metadata off) an empty object, as Orbax's metadata()
  /// returns. Collective. Throws FormatError for a damaged file.
  [[nodiscard]] boost::json::object metadata();
  /// The step metadata of `step`: its cairn-step.json (handler, time, "custom" with the
  /// metrics and the caller's metadata) with the handler's description of the items added as
  /// "item_metadata" (what item_metadata() returns; Orbax's StepMetadata.item_metadata).
  /// Collective. Throws NotFound for a step that is not committed, and what item_metadata()
  /// throws.
  [[nodiscard]] boost::json::object metadata(std::int64_t step);
  /// The key of the items' metadata in what metadata(step) returns.
  static constexpr std::string_view kItemMetadataKey = "item_metadata";
  /// The handler's description of the items of `step`. Collective. Throws NotFound.
  [[nodiscard]] boost::json::value item_metadata(std::int64_t step);
  /// Blocks until the save in flight is committed and retention ran. Collective while a save
  /// is in flight; with none, returns at once without communicating. Safe to call from
  /// several threads at once: one lands the save, the others wait for it and return (see the
  /// class comment). Throws on every rank when the save failed (in the thread that landed it).
  void wait_until_finished();
  /// Whether a save is in flight on this rank. Not collective; never throws.
  [[nodiscard]] bool is_saving_in_progress() const noexcept;
  /// Rethrows a failed save on every rank. A save that every rank finished is committed now
  /// (on_commit, retention). Collective; should_save() and save() call it while a save is in
  /// flight.
  void check_for_errors();
  /// Finishes the save in flight (its commit applies retention, as every commit does) and the
  /// background deletes, releases the lock, then closes the checkpointer
  /// (Checkpointer::close()), which closes the handlers (as Orbax's close()).
  /// Collective. Idempotent. Throws what the save in flight threw (the rest is done first),
  /// else what closing the handlers threw.
  void close();

  /// With a local level: the steps committed on the local level of every node, ascending
  /// (all_steps() lists the steps of both levels). Empty without one. Collective.
  [[nodiscard]] std::vector<std::int64_t> local_steps();
  /// The steps committed on the persistent level (the root), ascending; without a local
  /// level the same as all_steps(). Collective.
  [[nodiscard]] std::vector<std::int64_t> persistent_steps();
  /// Where the last restore() or restore_latest_intact() of this manager read from, which
  /// nodes it rebuilt and why the local level did not serve. Not collective; never throws
  /// beyond std::bad_alloc.
  [[nodiscard]] LevelRestore last_restore() const;
  /// With a local level: drains the newest step that the local level holds to the
  /// persistent level now, when it is newer than the newest persistent step, and waits for
  /// its commit (what close() does with LocalLevelOptions::drain_at_close). The step may have
  /// been saved by an earlier job: its nodes' parts are then checked (lost ones rebuilt from
  /// their copies) and read back from the local files, and its array leaves saved in the
  /// format and compression of the root's newest step (TreeSaveOptions' defaults, posix
  /// uncompressed, when the root has none). A step that cannot be drained (lost beyond
  /// repair, an item of a user's handler, which files cannot give back) is logged
  /// (level.not_drained) and left on the local level. Returns whether a drain was made; false
  /// without a local level; last_drain() says why not. Collective. Throws what a save throws.
  bool drain();
  /// What the last drain decision of this manager did: drain(), close()'s drain, or a
  /// drain after a save (persistent_every, persistent_policy, preemption). Not collective;
  /// never throws beyond std::bad_alloc.
  [[nodiscard]] LevelDrain last_drain() const;

  /// The directory of `step`. Not collective.
  [[nodiscard]] std::filesystem::path step_path(std::int64_t step) const;
  /// The manager's root. Not collective.
  [[nodiscard]] const std::filesystem::path& root() const noexcept { return root_; }
  /// Whether this rank is one of the active processes. Not collective; never throws.
  [[nodiscard]] bool is_active() const noexcept { return active_; }

 private:
  struct StepInfo {
    std::int64_t step = 0;
    std::chrono::system_clock::time_point time = {};
    boost::json::object metrics = {};
    // custom.incremental_depth of its cairn-step.json (0: a whole save); empty when none.
    std::optional<std::int64_t> incremental_depth = {};
    bool damaged = false;  // its cairn-step.json could not be read
    bool loaded = true;    // false: time and metrics not read yet (lightweight_initialize)
  };

  // Whether to save a step and the time of the decision, as the primary decided them.
  struct SaveDecision {
    bool save = false;
    std::chrono::system_clock::time_point time = {};
    bool preempted = false;  // reached_preemption() said so
  };

  // The newest step saved to the local level by this manager: what its drain saves (views of
  // the local files; null when an item's handler is a user's) and the step's metadata.
  struct LocalSave {
    std::int64_t step = 0;
    std::shared_ptr<const CheckpointArgs> drain_args;
    boost::json::object custom;
    boost::json::object metrics;
    std::chrono::system_clock::time_point time = {};
  };

  [[nodiscard]] std::string step_name(std::int64_t step) const;
  [[nodiscard]] std::chrono::system_clock::time_point now() const;
  void open_root();
  [[nodiscard]] bool exists(std::int64_t step) const;
  // Whether the manager saves named items (a Composite), a single item, or std::nullopt while
  // unknown (no item given, nothing saved, restored or committed in the root). Collective.
  [[nodiscard]] std::optional<bool> composite_mode();
  void check_save_args(const CheckpointArgs& args, std::optional<bool> composite) const;
  [[nodiscard]] SaveDecision decide(std::int64_t step, bool force);
  void land();
  [[nodiscard]] boost::json::object given_root_metadata() const;
  void ensure_checkpointer(std::string_view handler_type);
  // A new handler of `handler_type` from the manager's registry (a composite one resolves its
  // items there too).
  [[nodiscard]] std::shared_ptr<CheckpointHandler> make_handler(
      std::string_view handler_type) const;
  void after_commit();
  void apply_retention();
  void load_step_infos();
  [[nodiscard]] std::optional<double> metric_of(const StepInfo& info) const;
  void quarantine(std::int64_t step, std::string_view error);
  [[nodiscard]] StepInfo read_step_info(std::int64_t step);
  [[nodiscard]] StepMetadata read_step_metadata(std::int64_t step);
  void check_writable(std::string_view what) const;
  void require_active(std::string_view what) const;
  // Multi-level (manager_levels.cpp).
  void open_local_level();
  void save_to_levels(std::int64_t step, const CheckpointArgs& args, const SaveDecision& decision,
                      const boost::json::object& custom, const ManagerSaveOptions& options);
  void start_drain(const LocalSave& saved);
  // Starts the persistent save of `info.step` from `args` with the handler of its type: the
  // one place a step is written to the root (a save, a drain, a fallback of the local level).
  // The save in flight, if any, lands first.
  void persist(const StepInfo& info, const CheckpointArgs& args,
               const CheckpointSaveOptions& save_options);
  // Drains the newest local step when it is newer than the root's newest (this manager's
  // save, or one rebuilt from the local files); last_drain_ says what happened. Collective.
  bool drain_newest();
  // The newest local save `step` read back from the local files (it was not saved by this
  // manager); std::nullopt, with last_drain_ saying why, when it cannot be. Collective.
  [[nodiscard]] std::optional<LocalSave> local_save_from_files(std::int64_t step);
  [[nodiscard]] bool should_drain(std::int64_t step, const SaveDecision& decision);
  [[nodiscard]] std::optional<std::any> restore_local(std::int64_t step,
                                                      const CheckpointArgs* args);
  [[nodiscard]] std::any restore_persistent(std::int64_t step, const CheckpointArgs* args);
  [[nodiscard]] bool in_persistent(std::int64_t step) const;
  [[nodiscard]] bool in_local(std::int64_t step) const;
  [[nodiscard]] std::optional<std::int64_t> newest_step() const;

  // Serializes the members on this rank (see the class comment); recursive because members
  // call each other.
  mutable std::recursive_mutex mutex_;
  std::atomic<bool> saving_{false};  // whether in_flight_ is set, for is_saving_in_progress()
  bool active_ = true;
  Comm comm_;            // over the active processes only
  int caller_rank_ = 0;  // this rank in the communicator the manager was made with
  std::filesystem::path root_;
  CheckpointManagerOptions options_;
  StepNameFormatPtr naming_;
  std::shared_ptr<CheckpointHandler> handler_;
  std::unique_ptr<Checkpointer> checkpointer_;  // an AsyncCheckpointer when enable_async
  // Whether the newest step of the root, when handler_ was not known yet, was a Composite.
  std::optional<bool> recorded_composite_;
  std::shared_ptr<const SaveDecisionPolicy> save_policy_;
  std::shared_ptr<const PreservationPolicy> keep_policy_;
  std::unique_ptr<PreemptionWatcher> preemption_;
  std::vector<StepInfo> steps_;        // committed, ascending
  std::optional<StepInfo> in_flight_;  // saved, not yet known to be committed
  std::vector<std::thread> deleters_;
  // The node-local level (CheckpointManagerOptions::local_level), or null.
  std::unique_ptr<levels::LocalLevel> local_;
  // The newest local save of this manager (drained at close, on preemption, by drain()).
  std::optional<LocalSave> newest_local_;
  // The arguments of the drain in flight (views of the local files), alive until it lands.
  std::shared_ptr<const CheckpointArgs> drain_args_;
  // Local saves made by this manager (LocalLevelOptions::persistent_every counts them).
  std::int64_t local_saves_ = 0;
  // The blocking time of the newest save (SaveContext::last_save_cost).
  std::optional<std::chrono::duration<double>> last_save_cost_;
  LevelRestore last_restore_;
  LevelDrain last_drain_;
  bool closed_ = false;
  bool locked_ = false;
  // Renews the lock while it is held (CheckpointManagerOptions::lock_lease).
  std::unique_ptr<manager::LockRenewal> lock_renewal_;
};

/// SCR's scavenge: once the job that saved them has ended (a job epilogue), drains the newest
/// step that the node-local level `level` holds to the checkpoint root `root`, when it is newer
/// than the root's newest step, as an ordinary checkpoint (CheckpointManager::drain(): arrays in
/// the format and compression of the root's newest step). A node whose part is lost or damaged is
/// first rebuilt from its copies where `level.redundancy` (the level's, as the job gave it) allows.
///
/// `comm` must have the layout of the job that saved the step: as many ranks, grouped into
/// nodes alike (`level.ranks_per_node`, or the nodes MPI reports), because each rank reads the
/// shards that its rank of its node wrote. A level that holds newer steps of another layout
/// only is reported as failed, naming the layout to run with. A job that saved with one rank
/// per node is drained with one rank per node (`mpirun -npernode 1`).
///
/// Opens a writing CheckpointManager on `root` with the step names the root records (its lock
/// is taken over from a job that died on this host or in this Slurm job) and closes it;
/// `level.persistent_every`, `persistent_policy` and `drain_at_close` are ignored. Returns
/// what was drained, or why nothing was (LevelDrain::failed when a newer local step exists
/// that cannot be drained). Collective over `comm`. Throws NotFound when `root` does not
/// exist; InvalidArgument for bad level options, when another job holds the root's lock or
/// when the local directory serves another root (naming both); what a save throws.
[[nodiscard]] LevelDrain drain_local_level(const Comm& comm, const std::filesystem::path& root,
                                           LocalLevelOptions level);

}  // namespace cairn
