// cairn — the checkpoint layer: atomic commit of one checkpoint directory, synchronously
// (Checkpointer) or in the background (AsyncCheckpointer, which is a Checkpointer).
//
// Commit protocol (both): all ranks agree on the call; the primary creates
// `<dir>.cairn-tmp` (replacing a stale one); the handler writes the item(s) there and every
// rank fsyncs what it wrote; all ranks agree that they succeeded; the primary writes
// cairn-step.json and the COMMITTED marker, fsyncs them and the directory, renames it to
// `<dir>` and fsyncs the parent. A checkpoint is valid only with its final name and the
// marker. On any failure on any rank, every rank throws from the same call, the temporary
// directory is removed and nothing committed before is touched.
#pragma once

#include <cairn/comm.hpp>
#include <cairn/handler.hpp>

#include <any>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace cairn {

/// Name of the commit marker, the last file written before the rename.
inline constexpr const char* kCommitMarker = "COMMITTED";
/// Suffix of the temporary directory a checkpoint is written in.
inline constexpr const char* kTmpSuffix = ".cairn-tmp";

/// Options of one save. Aggregate: use designated initializers.
struct CheckpointSaveOptions {
  /// Replace an existing checkpoint at the same path (otherwise an error). Only a directory
  /// that is_checkpoint_directory() accepts is replaced: any other file or directory at the
  /// path (a checkpoint root, a directory of other files, one with a COMMITTED file that is
  /// not a marker cairn wrote, a symbolic link) is an InvalidArgument and is left as it is. The old
  /// checkpoint is moved aside until the new one is in place, and moved back when that fails.
  bool force = false;
  /// Stored in cairn-step.json under "custom" (any JSON value).
  boost::json::value custom_metadata = nullptr;
  /// The step and metrics of the save, handed to the handler (AsyncContext::provenance) so
  /// that files that describe themselves record them (hdf5: root attributes of data.h5).
  /// CheckpointManager sets them.
  SaveProvenance provenance = {};
  /// An earlier committed checkpoint directory that this save refers to for the unchanged
  /// chunks of array leaves (AsyncContext::incremental_base; see
  /// TreeSaveOptions::incremental_base). Empty: a whole save. CheckpointManager sets it when
  /// CheckpointManagerOptions::incremental.
  std::filesystem::path incremental_base = {};
};

/// How the files and directories of a checkpoint are created (Orbax's FileOptions). By
/// default new files get what the umask leaves of 0666 and new directories what it leaves of
/// 0777. Aggregate: use designated initializers.
struct FileOptions {
  /// Permission bits of every file and directory of a committed checkpoint (its directory,
  /// item directories, data and metadata files), set by the primary just before the commit;
  /// directories also get search (x) wherever the mode grants read. Shared project
  /// directories use e.g. 0640 (std::filesystem::perms{0640}). std::nullopt: the umask decides.
  std::optional<std::filesystem::perms> path_permission_mode = {};
  /// Group given to the same files and directories, by name ("users") or number ("100").
  /// Empty: the creating process's group. The process must be allowed to give that group
  /// (a member of it, or root); otherwise the save fails with an IoError naming the path.
  std::string group = {};
};

/// Options of a Checkpointer and an AsyncCheckpointer. Aggregate: use designated
/// initializers.
struct CheckpointerOptions {
  /// Modes and group of new files and directories.
  FileOptions file_options = {};
  /// How long a rank's local writes of one save may take before the rank reports them as
  /// stuck (a hung file system): the save then fails on every rank with a TimeoutError naming
  /// the stuck ranks, within this deadline, while the stuck rank waits for its writes to
  /// return before it goes on. Zero: half the Comm's barrier_timeout.
  std::chrono::milliseconds write_timeout = std::chrono::milliseconds(0);
};

/// Whether `dir` is a committed checkpoint (final name, COMMITTED marker present). Not
/// collective; never throws.
[[nodiscard]] bool is_committed(const std::filesystem::path& dir) noexcept;

/// Whether `dir` is a checkpoint directory that cairn made, judged strictly: its COMMITTED
/// marker parses as a commit marker, lists cairn-step.json and lists only files that are
/// there; or, without a marker (a save that died or lost it), its cairn-step.json is valid
/// step metadata (read_step_metadata()). A directory of other files that merely holds a file
/// named COMMITTED or cairn-step.json is not one. This is the only kind of directory a forced
/// save (CheckpointSaveOptions::force) replaces (and only when `dir` is not a symbolic link),
/// `cairn convert --force` replaces, and `cairn gc` removes from a todelete_subdir. Reads the
/// marker (or the step metadata) and checks that the files it lists exist; never opens a file
/// that is not a regular one. Not collective; never throws.
[[nodiscard]] bool is_checkpoint_directory(const std::filesystem::path& dir) noexcept;

/// Whether `dir` looks like a checkpoint directory, judged loosely: a directory holding a
/// regular file named COMMITTED or cairn-step.json, whatever is in it. For listing and for
/// refusing, where taking too many directories for checkpoints is the safe side (a root is not
/// a checkpoint, nothing is written inside one, a damaged step is still listed); never a reason
/// to replace or remove a directory (that is is_checkpoint_directory()). Not collective; never
/// throws.
[[nodiscard]] bool looks_like_checkpoint_directory(const std::filesystem::path& dir) noexcept;

/// The step metadata of a checkpoint (cairn-step.json), validated as restore does: the fields
/// cairn relies on, typed, and the whole file.
struct StepMetadata {
  /// Type of the handler that saved the item ("cairn.composite" for several items).
  std::string handler = {};
  /// Ranks that saved the checkpoint.
  int world_size = 0;
  /// Bytes of data, summed over the ranks.
  std::uint64_t bytes = 0;
  /// When the save started, UTC ("2026-01-31T12:00:00Z"); empty when the file has no such
  /// string.
  std::string init_time = {};
  /// When the save was committed, UTC; empty when the file has no such string.
  std::string commit_time = {};
  /// The save's custom metadata (CheckpointSaveOptions::custom_metadata); null when none.
  boost::json::value custom = nullptr;
  /// Item name -> handler type, for a composite; empty otherwise.
  std::map<std::string, std::string> items = {};
  /// The whole file: the fields above and those cairn does not interpret.
  boost::json::object json = {};

  /// Reads and validates the step metadata of the checkpoint at `dir`. Not collective.
  /// Throws as read_step_metadata().
  [[nodiscard]] static StepMetadata read(const std::filesystem::path& dir);
};

/// Reads the step metadata (cairn-step.json) of the checkpoint at `dir` and validates it as
/// restore does: "format", "version", "handler", "world_size", "bytes" and "items" must be
/// what cairn writes (integers in range, non-empty strings); other fields are returned as
/// they are (StepMetadata::read(dir).json). For tools that read checkpoints they did not
/// write. Not collective (one small file, read on the calling rank). Throws NotFound when the
/// file does not exist, IoError when it cannot be read, FormatError naming the file and the
/// first bad field when it is damaged or too large; never crashes on hostile input.
[[nodiscard]] boost::json::object read_step_metadata(const std::filesystem::path& dir);

/// Saves and restores checkpoints synchronously with one handler: save() returns once the
/// checkpoint is committed.
///
/// It is also the interface of AsyncCheckpointer, which derives from it (as Orbax's
/// AsyncCheckpointer is a Checkpointer): code that holds a Checkpointer, such as
/// CheckpointManager, serves sync and async saves through one object. Such code calls
/// wait_until_finished() where a save must be committed; on a Checkpointer that returns at
/// once.
///
/// Every member is collective over the Comm given at construction: all ranks call it in the
/// same order. Exceptions: comm(), handler(), is_saving_in_progress() and result_as().
class Checkpointer {
 public:
  /// Uses `handler` for every save and restore. Duplicates `comm` (collective). Throws
  /// InvalidArgument for a null handler or a group (file_options.group) that does not exist.
  Checkpointer(const Comm& comm, std::shared_ptr<CheckpointHandler> handler,
               CheckpointerOptions options = {});
  /// Not collective (a Checkpointer has nothing in flight); see AsyncCheckpointer's.
  virtual ~Checkpointer();
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  /// Writes a checkpoint at `dir` with the commit protocol and returns once it is committed.
  /// Collective. Throws InvalidArgument when `dir` already holds a committed checkpoint
  /// (unless force) or the arguments do not suit the handler; any handler or I/O failure on
  /// any rank on every rank (nothing is committed then); TimeoutError on every rank when some
  /// rank's writes did not return within write_timeout (that rank throws once they returned).
  virtual void save(const std::filesystem::path& dir, const CheckpointArgs& args,
                    const CheckpointSaveOptions& options = {});
  /// Restores the checkpoint at `dir` (args may be null: restore as saved). Returns the
  /// handler's result (see the handler). Collective. Throws NotFound when `dir` does not
  /// exist, FormatError when it is incomplete (no COMMITTED marker: the save did not finish)
  /// or damaged.
  [[nodiscard]] virtual std::any restore(const std::filesystem::path& dir,
                                         const CheckpointArgs* args = nullptr);
  /// restore() with the result cast to T. Throws as restore(), and InvalidArgument when the
  /// handler returns another type.
  template <class T>
  [[nodiscard]] T restore_as(const std::filesystem::path& dir, const CheckpointArgs* args) {
    return result_as<T>(restore(dir, args));
  }
  /// The step metadata of the checkpoint at `dir` (cairn-step.json) with the handler's
  /// description under "item". Collective. Throws as restore().
  [[nodiscard]] virtual boost::json::value metadata(const std::filesystem::path& dir);
  /// Blocks until the save in flight is committed. A Checkpointer has none: it returns at
  /// once without communicating and never throws. Collective in AsyncCheckpointer.
  virtual void wait_until_finished();
  /// Whether this rank's part of a save is still running: always false for a Checkpointer.
  /// Not collective; never throws.
  [[nodiscard]] virtual bool is_saving_in_progress() const noexcept;
  /// Rethrows the failure of a save in flight. A Checkpointer has none: it returns at once
  /// without communicating and never throws. Collective in AsyncCheckpointer.
  virtual void check_for_errors();
  /// Closes the handler (CheckpointHandler::close()), as Orbax's Checkpointer.close() does;
  /// a later call does nothing. Call it when the checkpointer is no longer used: the destructor
  /// does not, since the handler may be shared (CheckpointManager::close() calls it). Not
  /// collective in a Checkpointer (see AsyncCheckpointer's). Throws what the handler's close()
  /// throws.
  virtual void close();

  /// The checkpointer's Comm. Never throws.
  [[nodiscard]] const Comm& comm() const noexcept { return comm_; }
  /// The handler. Never throws.
  [[nodiscard]] const std::shared_ptr<CheckpointHandler>& handler() const noexcept {
    return handler_;
  }

  /// Casts a handler result. Throws InvalidArgument naming both types.
  template <class T>
  [[nodiscard]] static T result_as(std::any result) {
    if (T* typed = std::any_cast<T>(&result)) return std::move(*typed);
    throw_wrong_result(result.type().name(), typeid(T).name());
  }

 protected:
  /// The public constructor, with `who` ("cairn::AsyncCheckpointer") naming the class in its
  /// error messages. Collective; throws as the public one.
  Checkpointer(const Comm& comm, std::shared_ptr<CheckpointHandler> handler,
               CheckpointerOptions options, std::string_view who);
  /// The options given at construction. Never throws.
  [[nodiscard]] const CheckpointerOptions& checkpointer_options() const noexcept {
    return options_;
  }

 private:
  [[noreturn]] static void throw_wrong_result(const char* held, const char* wanted);

  Comm comm_;
  std::shared_ptr<CheckpointHandler> handler_;
  CheckpointerOptions options_;
  bool closed_ = false;  // close() closed the handler
};

/// Options of an AsyncCheckpointer. Aggregate: use designated initializers.
struct AsyncOptions {
  /// Budget for staged copies of the caller's data. When it is smaller than the data, save()
  /// blocks until the rest fits (earlier data being written frees it); a single shard larger
  /// than the whole budget is written from the caller's memory before save() returns. The
  /// copies' memory stays mapped for the next save, within this budget (see StagingArea).
  std::size_t staging_bytes = std::size_t{1} << 30;
  /// Keep references instead of copies: save() returns at once and the caller must not
  /// modify its buffers until wait_until_finished() returns.
  bool zero_copy = false;
  /// Snapshot CUDA device leaves into new device memory (a device-to-device copy) when the
  /// device has room for them, instead of into the host staging area; the background thread
  /// then copies them to the host while writing. Off: device leaves are copied to the host
  /// staging area like host leaves.
  bool device_staging = false;
};

/// Saves checkpoints in the background: save() returns once the caller may modify its data;
/// writing, fsync, agreement and commit happen on a background thread. A Checkpointer whose
/// save() does not wait for the commit: wait_until_finished() does.
///
/// The background thread uses its own duplicate of the communicator and needs
/// MPI_THREAD_MULTIPLE. With a lower thread level (MPI_THREAD_FUNNELED or SERIALIZED) only
/// local file writes run in the background; collective steps (HDF5 data, the agreement and
/// the commit) run on the caller's thread in save() and at the next call
/// (wait_until_finished(), check_for_errors(), save(), restore(), metadata() or the
/// destructor). Either way a step counts as committed only once its commit completed.
///
/// HDF5 is not thread-safe: cairn serializes its own HDF5 calls; the application must not call
/// HDF5 while a save in hdf5 format is in flight.
///
/// The staging memory stays mapped between saves, so that the next save of the same data
/// copies into memory already faulted in (see StagingArea); trim_staging() returns it to the
/// system, as the destructor does.
///
/// Every member except comm(), handler(), is_saving_in_progress(), staging(), trim_staging()
/// and background_mpi() is collective.
class AsyncCheckpointer : public Checkpointer {
 public:
  /// Duplicates `comm` twice (collective): one for the caller's thread, one for the
  /// background. Throws InvalidArgument for a null handler or a group (file_options.group)
  /// that does not exist. The local writes of a save run on a thread of their own, waited for
  /// at most `common.write_timeout`: a save whose writes are stuck on some rank fails on every
  /// rank (TimeoutError naming the ranks, at the next call); the stuck rank's next call waits
  /// for its writes to return.
  AsyncCheckpointer(const Comm& comm, std::shared_ptr<CheckpointHandler> handler,
                    AsyncOptions options = {}, CheckpointerOptions common = {});
  /// Waits for the save in flight and commits it (never abandons it); a failure is logged,
  /// not thrown. Collective, like every destructor of a collective object.
  ~AsyncCheckpointer() override;
  AsyncCheckpointer(const AsyncCheckpointer&) = delete;
  AsyncCheckpointer& operator=(const AsyncCheckpointer&) = delete;

  /// Starts a save of `args` into `dir`: waits for the previous save (rethrowing its
  /// failure), agrees, prepares the temporary directory, stages the data and returns.
  /// Collective. Throws as Checkpointer::save() for problems found before the return; later
  /// failures surface at the next call.
  void save(const std::filesystem::path& dir, const CheckpointArgs& args,
            const CheckpointSaveOptions& options = {}) override;
  /// Waits for the save in flight, then restores. Collective. Throws as
  /// Checkpointer::restore().
  [[nodiscard]] std::any restore(const std::filesystem::path& dir,
                                 const CheckpointArgs* args = nullptr) override;
  /// Waits for the save in flight, then returns the step metadata. Collective. Throws as
  /// Checkpointer::metadata().
  [[nodiscard]] boost::json::value metadata(const std::filesystem::path& dir) override;
  /// Blocks until the save in flight is committed (or failed). Collective. Throws on every
  /// rank when it failed on any rank (the checkpoint is then not committed).
  void wait_until_finished() override;
  /// Whether this rank's part of a save is still running. Not collective; never throws.
  [[nodiscard]] bool is_saving_in_progress() const noexcept override;
  /// Rethrows (on every rank) the failure of a save that failed on any rank, waiting for it
  /// to end when needed; does nothing while a save is running fine. Collective.
  void check_for_errors() override;
  /// Waits for the save in flight as wait_until_finished() does (Orbax's
  /// AsyncCheckpointer.close()), then closes the handler as Checkpointer::close(). Collective.
  /// Throws what wait_until_finished() throws (the handler is then not closed yet: a later
  /// close() closes it) and what the handler's close() throws.
  void close() override;
  /// The staging budget (capacity, bytes in use, peak, memory held). Not collective.
  [[nodiscard]] const StagingArea& staging() const noexcept;
  /// Unmaps the staging memory kept for the next save (StagingArea::trim()). Buffers of a save
  /// still in flight are kept once written: call it after wait_until_finished() to return
  /// all of it. Not collective. Never throws.
  void trim_staging() noexcept;
  /// Whether the background thread may call MPI (MPI_THREAD_MULTIPLE). Never throws.
  [[nodiscard]] bool background_mpi() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cairn
