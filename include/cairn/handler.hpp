// cairn — the handler layer: how one item of a checkpoint is saved and restored.
//
// A CheckpointHandler stores one kind of item (an array tree, a JSON value, opaque bytes, or a
// composite of named items) in a directory. It is paired with argument types derived from
// CheckpointArgs; the HandlerRegistry maps argument types to handlers so that a Checkpointer
// or a CompositeHandler can find the handler for arguments it has not seen before (and, on
// restore, for the handler type recorded in the step metadata). Users add their own handler +
// arguments pair with HandlerRegistry::add().
#pragma once

#include <cairn/comm.hpp>
#include <cairn/storage.hpp>

#include <any>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <condition_variable>
#include <cstddef>
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
#include <utility>

namespace cairn {

/// Name of the step metadata file in a checkpoint directory (written by the checkpoint layer;
/// a composite reads the handler types and custom metadata of its items there).
inline constexpr const char* kStepMetadataFile = "cairn-step.json";

/// Base of every save and restore argument type. Each subclass names the handler type that
/// understands it.
class CheckpointArgs {
 public:
  virtual ~CheckpointArgs() = default;
  /// The type name of the handler for these arguments ("cairn.array_tree", ...). Never
  /// throws.
  [[nodiscard]] virtual std::string_view handler_type() const noexcept = 0;
  /// Copies of these restore arguments that read replicated array-tree leaves on the primary
  /// alone and broadcast them (CheckpointManager's single-host load and broadcast), also for
  /// the items of a composite; null when nothing changes. Default: null. Never throws beyond
  /// std::bad_alloc.
  [[nodiscard]] virtual std::shared_ptr<const CheckpointArgs> with_load_and_broadcast() const {
    return nullptr;
  }
  /// The names of the items these arguments select, for arguments that hold several items
  /// (Composite); null for the arguments of one item. Never throws beyond std::bad_alloc.
  [[nodiscard]] virtual std::optional<std::set<std::string>> item_names() const {
    return std::nullopt;
  }
};

/// A byte budget for staged copies of the caller's data (async saves), and the memory those
/// copies live in. Thread-safe: acquire() on one thread while buffers are returned on another.
///
/// acquire() blocks until the bytes fit; the budget is returned when the last owner of the
/// buffer it hands out is destroyed. A request larger than the whole budget can never fit:
/// acquire() returns nullptr at once and the caller must write from its own memory instead.
///
/// Buffers of 2 MiB or more are whole huge pages (the request rounded up to a multiple of
/// 2 MiB) mapped for the area, advised to use transparent huge pages and faulted in when
/// mapped. A returned buffer stays mapped and is handed out again to the next request of the
/// same rounded size, so that a series of saves of the same data pays the page faults and the
/// kernel's zeroing of its staging memory once instead of at every save. Memory held
/// (held(): buffers in use and buffers kept for reuse) stays within the budget plus the
/// rounding of the buffers in use: before mapping a new buffer, kept buffers are unmapped
/// until the new one fits. Everything is unmapped by trim() and by the destructor. Smaller
/// buffers come from operator new[] and are freed when returned.
class StagingArea {
 public:
  /// A budget of `capacity_bytes` (0: nothing is ever staged). Maps nothing yet. Never
  /// throws.
  explicit StagingArea(std::size_t capacity_bytes) noexcept : capacity_(capacity_bytes) {}
  /// Unmaps the buffers kept for reuse; every buffer handed out must have been returned.
  /// Never throws.
  ~StagingArea();
  StagingArea(const StagingArea&) = delete;
  StagingArea& operator=(const StagingArea&) = delete;

  /// A buffer of `bytes` counted against the budget, waiting until enough is free; nullptr
  /// when `bytes` exceeds the whole budget. Its contents are unspecified (a reused buffer
  /// holds what was last written to it). Not collective. Throws std::bad_alloc when no
  /// memory can be mapped.
  [[nodiscard]] std::shared_ptr<std::byte[]> acquire(std::size_t bytes);
  /// The budget. Never throws.
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  /// Bytes handed out and not yet returned. Never throws.
  [[nodiscard]] std::size_t in_use() const noexcept;
  /// The largest in_use() ever reached (since construction or reset_peak()). Never throws.
  [[nodiscard]] std::size_t peak() const noexcept;
  /// Restarts peak() from in_use(). Never throws.
  void reset_peak() noexcept;
  /// Bytes of memory mapped for buffers of 2 MiB or more: those in use and those kept for
  /// reuse. Never throws.
  [[nodiscard]] std::size_t held() const noexcept;
  /// Unmaps the buffers kept for reuse (buffers in use stay); the next acquire() maps anew.
  /// Not collective. Never throws.
  void trim() noexcept;

 private:
  void release(std::size_t bytes) noexcept;
  void keep(std::byte* region, std::size_t length, std::size_t bytes) noexcept;

  std::size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  std::size_t in_use_ = 0;
  std::size_t peak_ = 0;
  std::size_t held_ = 0;
  std::multimap<std::size_t, std::byte*> kept_;  // returned buffers by length, for reuse
};

/// Where and how an async save may run its phases.
struct AsyncContext {
  /// Budget for copies of the caller's data; nullptr: nothing is copied.
  StagingArea* staging = nullptr;
  /// Data that is not copied (no staging, or larger than the whole budget) is written from
  /// the caller's memory. With zero_copy, stage() returns without waiting for those writes
  /// (the caller promises not to touch its buffers until the save finished); without it,
  /// stage() returns only once they were written.
  bool zero_copy = false;
  /// Whether write() will be given a Comm (the background thread may call MPI). When false,
  /// anything collective must happen in stage() or finish().
  bool background_mpi = true;
  /// Snapshot device arrays with a device-to-device copy when the device has room
  /// (AsyncOptions::device_staging).
  bool device_staging = false;
  /// The step and metrics of the save (CheckpointSaveOptions::provenance), for handlers whose
  /// files describe themselves (ArrayTreeHandler passes them to the storage format).
  SaveProvenance provenance = {};
  /// The directory of the same item in an earlier committed checkpoint
  /// (CheckpointSaveOptions::incremental_base, joined with the item's name by a Composite):
  /// ArrayTreeHandler saves incrementally against it (TreeSaveOptions::incremental_base,
  /// unless the arguments name their own). Empty: none. Other handlers ignore it.
  std::filesystem::path incremental_base = {};
};

/// The part of an async save that remains after the arguments were taken. The checkpointer
/// calls stage() on the caller's thread, write() on a background thread (or the caller's),
/// then finish() with a Comm over the same ranks.
class PendingSave {
 public:
  virtual ~PendingSave() = default;
  /// Copies (or pins) what the save needs from the caller's memory; when it returns the
  /// caller may modify its buffers (unless it asked for zero-copy). May block on the staging
  /// budget while write() drains it, so write() must already be running. Collective over the
  /// save's Comm only when AsyncContext::background_mpi is false. Throws on local failures;
  /// the checkpointer then still calls write() and finish() so that every rank reports it.
  virtual void stage() = 0;
  /// Writes what stage() produced. `comm` is null when MPI may not be called on this
  /// thread. Collective over `*comm` when it is given. Records failures instead of throwing.
  virtual void write(const Comm* comm) = 0;
  /// Completes the item (indexes, metadata) and throws on every rank when any rank failed.
  /// Collective over `comm`.
  virtual void finish(const Comm& comm) = 0;
  /// Bytes of data this rank wrote. Never throws.
  [[nodiscard]] virtual std::uint64_t bytes_written() const noexcept = 0;
  /// Records a failure from outside (e.g. stage() threw) so that finish() reports it.
  virtual void fail(const std::exception& error) noexcept = 0;
  /// Extra step metadata of the item (a composite lists its items and their handler
  /// types). Default: an empty object. Never throws beyond std::bad_alloc.
  [[nodiscard]] virtual boost::json::object step_metadata() const { return {}; }
};

/// Saves and restores one kind of item in a directory. Every member that takes a Comm is
/// collective over it. Implementations must be usable from one thread at a time.
class CheckpointHandler {
 public:
  virtual ~CheckpointHandler() = default;

  /// Stable type name, recorded in step metadata ("cairn.array_tree"). Never throws.
  [[nodiscard]] virtual std::string_view type_name() const noexcept = 0;

  /// Writes the item described by `args` into the existing, empty directory `dir` and
  /// fsyncs what it wrote. Collective. Throws InvalidArgument when `args` is not this
  /// handler's type; any failure is thrown on every rank.
  virtual void save(const Comm& comm, const std::filesystem::path& dir, const CheckpointArgs& args);

  /// Starts an async save: takes `args` and returns the phases that remain. Collective (it
  /// may validate across ranks). `args` must stay alive until stage() returns. Throws as
  /// save() for problems found before any byte is written.
  [[nodiscard]] virtual std::unique_ptr<PendingSave> async_save(const Comm& comm,
                                                                const std::filesystem::path& dir,
                                                                const CheckpointArgs& args,
                                                                const AsyncContext& context) = 0;

  /// Restores the item from `dir`. `args` may be null (restore as saved). The result's type
  /// is documented by each handler (ArrayTree, boost::json::value, ...). Collective. Throws
  /// NotFound, FormatError, InvalidArgument as the storage layer does.
  [[nodiscard]] virtual std::any restore(const Comm& comm, const std::filesystem::path& dir,
                                         const CheckpointArgs* args) = 0;

  /// A JSON description of the saved item (structure, shapes, sizes). Collective.
  [[nodiscard]] virtual boost::json::value metadata(const Comm& comm,
                                                    const std::filesystem::path& dir) = 0;

  /// Called once every rank finished writing the item, before the checkpoint holding it is
  /// committed (as Orbax's checkpointers call it): `dir` is the item's directory inside the
  /// checkpoint's temporary directory, and what the handler adds there is committed with the
  /// rest. Runs on the thread that completes the save (a background thread of an
  /// AsyncCheckpointer when MPI allows it). Collective. An exception on any rank fails the save
  /// on every rank, and nothing is committed. Default: nothing.
  virtual void finalize(const Comm& comm, const std::filesystem::path& dir);

  /// Releases resources; the handler is not used afterwards. Called by Checkpointer::close()
  /// (and so by CheckpointManager::close()). Not collective. Default: nothing.
  virtual void close() {}
};

/// Maps argument types and handler type names to handler factories, optionally per item name
/// (Orbax's handler registry). Thread-safe.
///
/// The process-wide registry, global(), holds cairn's handlers. A registry made by the caller
/// starts empty and falls back to global() for what it lacks: give it to a CheckpointManager
/// (CheckpointManagerOptions::handler_registry) so that two managers of one program map the
/// same item name or handler type to different handlers.
class HandlerRegistry {
 public:
  /// Makes a new handler of one type.
  using Factory = std::function<std::shared_ptr<CheckpointHandler>()>;

  /// An empty registry that falls back to global(). Never throws beyond std::bad_alloc.
  HandlerRegistry();
  HandlerRegistry(const HandlerRegistry&) = delete;
  HandlerRegistry& operator=(const HandlerRegistry&) = delete;

  /// The process-wide registry, with cairn's handlers registered. It falls back to nothing.
  /// Never throws.
  [[nodiscard]] static HandlerRegistry& global() noexcept;

  /// Registers `factory` for the handler type `type_name`: arguments whose handler_type()
  /// is `type_name` are then saved and restored by the handlers it makes. Re-registering a
  /// name replaces it. Not collective; never throws beyond std::bad_alloc.
  void add(std::string type_name, Factory factory);
  /// Registers `factory` for the composite item `item_name` of handler type `type_name` alone
  /// (Orbax's `handler_registry.add(item, args_type, handler)`): such an item, given
  /// arguments of that type or recorded with that type, gets the handlers it makes, before
  /// any factory registered for the type alone. Re-registering replaces it. Not collective;
  /// never throws beyond std::bad_alloc.
  void add(std::string item_name, std::string type_name, Factory factory);
  /// A new handler of type `type_name`: this registry's, else its fallback's. Not collective.
  /// Throws NotFound naming the type when it was never registered.
  [[nodiscard]] std::shared_ptr<CheckpointHandler> create(std::string_view type_name) const;
  /// A new handler for the composite item `item_name` of type `type_name`: a factory
  /// registered for that item and type, else one for the type; this registry's before its
  /// fallback's. Not collective. Throws NotFound naming the type when neither was registered.
  [[nodiscard]] std::shared_ptr<CheckpointHandler> create(std::string_view item_name,
                                                          std::string_view type_name) const;
  /// Whether `type_name` is registered here or in the fallback. Never throws.
  [[nodiscard]] bool contains(std::string_view type_name) const noexcept;
  /// Whether create(item_name, type_name) would find a factory. Never throws.
  [[nodiscard]] bool contains(std::string_view item_name,
                              std::string_view type_name) const noexcept;

 private:
  struct GlobalTag {};
  explicit HandlerRegistry(GlobalTag) noexcept;
  // The factory for (item, type) or type alone (item null), here or in the fallback; empty
  // when none.
  [[nodiscard]] Factory find(const std::string_view* item_name, std::string_view type_name) const;

  mutable std::mutex mutex_;
  std::map<std::string, Factory, std::less<>> factories_;
  std::map<std::pair<std::string, std::string>, Factory> item_factories_;
  const HandlerRegistry* fallback_ = nullptr;
};

}  // namespace cairn
