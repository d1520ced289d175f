// cairn — writing one saved tree leaf by leaf (internal). save_tree() drives it in one go;
// the async checkpointer plans on the caller's thread, then streams staged leaves into it from
// a background thread. Its parts: save_plan.cpp (the checks and the plan), save_pipeline.cpp
// (each shard's bytes on their way into its format, shard_sink.hpp) and save_finish.cpp
// (closing, the verdict, the index).
#pragma once

#include <cairn/comm.hpp>
#include <cairn/storage.hpp>
#include <cairn/tree.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/first_error.hpp"
#include "storage/engine/array_job.hpp"
#include "storage/engine/incremental.hpp"
#include "storage/engine/phase_times.hpp"
#include "storage/format/shard_writer.hpp"
#include "storage/index/tree_index.hpp"

namespace cairn::cuda {
class StagedCopier;
}  // namespace cairn::cuda

namespace cairn::storage {

/// Writes one tree into an item directory: plan (validation, directories, the formats'
/// writers opened), one write per array leaf this rank stores, in any order and from any one
/// thread at a time, flush (this rank's bytes durable), finish (the writers closed, the
/// index). Every format is reached through its ShardWriter; nothing here names one. Local
/// write failures are remembered, not thrown, so that a failing rank still takes part in the
/// collective steps; finish() throws them on every rank.
class TreeWriter {
 public:
  /// Plans the save: agrees on the tree structure, validates every array leaf's layout
  /// across ranks, checks formats and memory kinds, has the primary create the directories
  /// and opens the writer of every format the tree uses (hdf5: data.h5 and its datasets are
  /// created). Collective over `comm`. Throws as save_tree() documents, on every rank alike.
  /// `tree` must outlive the writer (scalars, strings and JSON are read from it).
  TreeWriter(const Comm& comm, std::filesystem::path dir, const ArrayTree& tree,
             TreeSaveOptions options);
  /// Closing a format's shared file is collective (hdf5): destroy a writer without finish()
  /// only on every rank alike, e.g. after an error thrown on every rank. Never throws.
  ~TreeWriter();
  TreeWriter(const TreeWriter&) = delete;
  TreeWriter& operator=(const TreeWriter&) = delete;

  /// Whether a failure was remembered. Never throws.
  [[nodiscard]] bool failed() const;

  /// The array leaves in sorted path order (the same list on every rank; `writes` and
  /// `bytes` are this rank's). Never throws.
  [[nodiscard]] const std::vector<ArrayJob>& arrays() const noexcept { return arrays_; }

  /// Writes this rank's shard of array `index` from `data`, a contiguous row-major buffer of
  /// its box in `memory`; nothing when this rank writes none of the leaf (`data` may then be
  /// nullptr). Device data is streamed through two pinned host buffers of half of
  /// TreeSaveOptions::io_buffer_bytes, so that the copy of one run overlaps the write of the
  /// previous one. Local; one thread at a time. Remembers failures.
  void write(std::size_t index, const void* data, MemoryKind memory = MemoryKind::host);
  /// Writes array `index` from the leaf's own memory: as write() for contiguous host and
  /// device shards; a strided host view is packed run by run into a buffer of at most half
  /// of io_buffer_bytes, never whole. Local; remembers failures.
  void write_leaf(std::size_t index);
  /// Copies array `index`'s shard from the device memory at `device` into host memory at
  /// `dst` (job.bytes bytes), through the pinned staging buffers. Local. Throws IoError or
  /// Unsupported naming the leaf.
  void copy_to_host(std::size_t index, const void* device, void* dst);
  /// Remembers a failure that happened outside the writer (e.g. while staging); the next
  /// writes are skipped and finish() reports it on every rank. Never throws.
  void fail(const std::exception& error) noexcept;
  /// Makes this rank's writes durable (fsynced when TreeSaveOptions::fsync); no write
  /// follows. Local. Remembers failures.
  void flush();
  /// Closes every format's writer (collective), shares every rank's verdict, then writes the
  /// index from every rank (write_index_collectively(): the sections' owners write
  /// cairn-tree.bin, the primary its header and cairn-tree.json). Collective over `comm`, which has
  /// the ranks of the planning Comm (it may be another Comm over them, e.g. a background thread's).
  /// Throws on every rank when any rank failed anywhere in the save. Logs where this rank's
  /// time went ("storage.save_phases", info): plan (the constructor), write (from the plan to
  /// flush(): staging and writes), sync (flush()), close, index; and the hashing among them.
  void finish(const Comm& comm);
  /// Bytes of shard data this rank wrote (not those an incremental save referred to). Never
  /// throws.
  [[nodiscard]] std::uint64_t bytes_written() const noexcept {
    std::lock_guard lock(mutex_);
    return bytes_written_;
  }

 private:
  // The device staging buffers, made on first use for the leaf `what`; copier_mutex_ held.
  cuda::StagedCopier& copier(std::string_view what);
  // Hands this rank's shard of array `index` to `sink` run by run (split_into_runs() at
  // run_bytes_), from device memory at `data` or, when `data` is nullptr, from the leaf's
  // strided host view. Throws what the copy or `sink` throws.
  using RunSink = std::function<void(std::span<const std::byte> bytes)>;
  void stream_runs(std::size_t index, const void* data, const RunSink& sink);
  // Places this rank's shard of array `index` in its format, has `produce` hand its stream
  // to the sink in consecutive pieces (each written and checksummed), and records it.
  // Remembers failures.
  void write_stream(std::size_t index, const std::function<void(const RunSink&)>& produce);
  // Casts `piece` (whole elements of the leaf's dtype) to the stored dtype of array `index`
  // block by block through `buffer` (at most run_bytes_), handing each block to `store`.
  void cast_piece(const ArrayJob& job, std::span<const std::byte> piece,
                  std::vector<std::byte>& buffer, const RunSink& store) const;
  // Waits until `bytes` more may be handed over at TreeSaveOptions::write_bytes_per_second
  // (counted over every leaf of the save since its first paced piece).
  void pace(std::size_t bytes);
  // The job of array leaf `leaf` before the layouts are agreed: format, stored dtype, chunk.
  [[nodiscard]] ArrayJob plan_job(const Leaf* leaf, MemoryKind memory) const;
  // Throws InvalidArgument for save_args naming no array leaf or asking for a forbidden cast.

  PhaseTimes phases_;  // first: its clock starts with the plan
  std::filesystem::path dir_;
  const ArrayTree& tree_;
  TreeSaveOptions options_;
  std::size_t run_bytes_ = 0;  // bytes of one staging buffer: the longest run streamed
  std::vector<ArrayJob> arrays_;
  int rank_ = 0;
  // The writer of each format the tree uses, in StorageFormat order (the same on every rank).
  std::vector<std::pair<StorageFormat, std::unique_ptr<ShardWriter>>> writers_;
  // The earlier save an incremental save refers to (TreeSaveOptions::incremental_base), or
  // nullptr.
  std::unique_ptr<IncrementalBase> base_;
  // Device staging, made on the first device write.
  std::mutex copier_mutex_;
  std::unique_ptr<cuda::StagedCopier> copier_;
  // The CUDA device of the thread that planned the save (-1: no device leaves); writes from a
  // background thread use it too.
  int device_ = -1;
  // Guards what writes (maybe from a background thread) update.
  mutable std::mutex mutex_;
  std::vector<std::pair<std::size_t, ShardRecord>> records_;  // (array index, record)
  std::uint64_t bytes_written_ = 0;
  // Pacing (TreeSaveOptions::write_bytes_per_second): bytes handed over and since when.
  std::uint64_t paced_bytes_ = 0;
  std::chrono::steady_clock::time_point paced_since_ = {};
  base::FirstError error_;  // the first local failure, from any thread
};

}  // namespace cairn::storage
