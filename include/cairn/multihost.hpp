// cairn — MultihostCheckpoint (after CLU's): every process checkpoints into its own directory
// `<base>-<rank>`, on storage that only it may see (node-local disk, /dev/shm), and a restart
// resumes from the newest step that every process has committed.
#pragma once

#include <cairn/comm.hpp>
#include <cairn/manager.hpp>
#include <cairn/tree.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace cairn {

/// The newest step in `local_steps` that every rank of `comm` also has, or std::nullopt.
/// Collective (an MPI agreement: no directory is listed across hosts). Throws TimeoutError.
[[nodiscard]] std::optional<std::int64_t> latest_common_step(
    const Comm& comm, std::span<const std::int64_t> local_steps);

/// Options of a MultihostCheckpoint (CLU's defaults). Aggregate.
struct MultihostOptions {
  /// Checkpoints kept per process; at least 2, so that a newer step some process did not
  /// finish never leaves a process without the common step. CLU's default, 5.
  int max_to_keep = 5;
  /// Step directories are named `<step_prefix><step>` inside each process's directory, without
  /// separator: CLU's `ckpt-<n>` (step_name_format::joined(step_prefix)).
  std::string step_prefix = "ckpt-";
  /// The number of this process's directory, `<base>-<host_id>` (CLU's `host_id`, which
  /// defaults to the process index); std::nullopt: the rank in the Comm. Must not be negative
  /// and must differ between processes (both checked on every rank).
  std::optional<int> host_id = {};
};

/// Per-process checkpoints with a collective restart. Every member is collective over the
/// Comm given at construction.
class MultihostCheckpoint {
 public:
  /// Uses `<base>-<rank>` (or `<base>-<host_id>`) for this process (created when missing);
  /// trailing '/' of `base` are dropped first, as CLU does ("ckpt/" and "ckpt" both give
  /// "ckpt-0"). Collective. Throws InvalidArgument when max_to_keep < 2 or `base` is empty,
  /// and on every rank when a host_id is negative or two processes give the same one.
  MultihostCheckpoint(const Comm& comm, std::filesystem::path base, MultihostOptions options = {});
  /// Closes the per-process managers. Never throws (failures are logged).
  ~MultihostCheckpoint();
  MultihostCheckpoint(const MultihostCheckpoint&) = delete;
  MultihostCheckpoint& operator=(const MultihostCheckpoint&) = delete;

  /// Restores the newest step that every process has into `state` (a target tree: each
  /// process its own boxes) and returns it; steps newer than it are deleted on the processes
  /// that have them (saves the others did not finish). When no step is common to all, every
  /// process deletes the steps it has and saves `state` as `initial_step`, and that is
  /// returned. Collective.
  std::int64_t restore_or_initialize(ArrayTree& state, std::int64_t initial_step = 0);
  /// Saves this process's `state` as `step` in its own directory (synchronously, with the
  /// commit protocol), after checking that every process saves the same step. First each
  /// process deletes its steps that are not older than `step`, and those newer than the step
  /// this object last restored or saved: after a restore of an older step the run goes on
  /// from there, so the newer steps belong to an abandoned future (CLU's save after a
  /// restore: with steps 1..5, restore(1) then save(2) overwrites 2 and deletes 3..5).
  /// Collective. Throws CollectiveMismatch on every rank when processes save different steps
  /// or trees, and on every rank an Error with the code of what CheckpointManager::save() or
  /// delete_step() threw on any process; the steps deleted before a failed save stay deleted.
  void save(std::int64_t step, const ArrayTree& state);
  /// Saves `state` as the next checkpoint, numbered by this object as CLU's save(state)
  /// numbers `ckpt-<n>`: one after current_checkpoint(), and, before any save or restore of
  /// this object, one after the newest step every process has (1 in an empty directory). The
  /// steps newer than current_checkpoint() are deleted first, as save(step, state) does (CLU's
  /// overwrite: after a restore of step 1 of 1..5, the next save writes 2 and deletes 3..5).
  /// Returns the step saved. (CLU's own save() before any restore starts from 1 and deletes
  /// every checkpoint there; cairn goes on after the common step instead, so that a save
  /// without a restore never destroys checkpoints.) Collective. Throws as save(step, state).
  std::int64_t save(const ArrayTree& state);
  /// Restores `step` into `state` (each process its own boxes) when every process has it (CLU
  /// restore of a given checkpoint); the next save() goes on from it. Collective. Throws
  /// NotFound on every rank when some process lacks the step, and what
  /// CheckpointManager::restore() throws.
  void restore(std::int64_t step, ArrayTree& state);
  /// Restores the newest step every process has into `state` and returns it (CLU's
  /// restore(state) without a checkpoint); the next save() goes on from it. Collective.
  /// Throws NotFound on every rank when no step is common to every process, and what
  /// CheckpointManager::restore() throws.
  std::int64_t restore(ArrayTree& state);
  /// The tree of `step` as this process saved it, without a target (CLU's restore_dict():
  /// the state as saved, not into a template): the boxes this process wrote, in buffers the
  /// returned tree owns. Default: the newest step every process has. The next save() goes
  /// on from it. Collective. Throws NotFound on every rank when there is no such step on some
  /// process (or, by default, no common step), and what CheckpointManager::restore() throws.
  [[nodiscard]] ArrayTree restore_dict(std::optional<std::int64_t> step = std::nullopt);
  /// The newest step every process has. Collective.
  [[nodiscard]] std::optional<std::int64_t> latest_common_step();
  /// The newest step in this process's directory (CLU's latest_checkpoint, per host: it may
  /// be newer than latest_common_step() after a save that not every process finished), or
  /// std::nullopt. Not collective (lists this process's directory only). Throws IoError when
  /// the directory cannot be listed.
  [[nodiscard]] std::optional<std::int64_t> latest_checkpoint();
  /// The step this object last saved or restored, which the next save() follows (CLU's
  /// current_checkpoint), alike on every process; std::nullopt before the first. Not
  /// collective; never throws.
  [[nodiscard]] std::optional<std::int64_t> current_checkpoint() const noexcept { return current_; }
  /// The step this object last restored (CLU's restored_from), alike on every process;
  /// std::nullopt when it restored none. Not collective; never throws.
  [[nodiscard]] std::optional<std::int64_t> restored_from() const noexcept {
    return restored_from_;
  }
  /// The directory of `step` in this process's directory. Not collective; never throws
  /// beyond std::bad_alloc.
  [[nodiscard]] std::filesystem::path step_path(std::int64_t step) const;
  /// This process's directory. Not collective.
  [[nodiscard]] const std::filesystem::path& directory() const noexcept { return directory_; }

 private:
  const Comm& comm_;
  std::filesystem::path directory_;
  std::unique_ptr<Comm> self_;
  std::unique_ptr<CheckpointManager> manager_;
  // The step last restored or saved by this object (CLU's current checkpoint), alike on every
  // process; std::nullopt before the first.
  std::optional<std::int64_t> current_;
  // The step last restored by this object (CLU's restored_from).
  std::optional<std::int64_t> restored_from_;

  // `step`, checked to be on every process, or the newest common step; NotFound on every
  // rank otherwise. Collective.
  [[nodiscard]] std::int64_t common_or_given(std::optional<std::int64_t> step, const char* what);
};

}  // namespace cairn
