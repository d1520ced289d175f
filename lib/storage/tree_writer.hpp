// cairn — writing one saved tree leaf by leaf (internal). save_tree() drives it in one go;
// the async checkpointer plans on the caller's thread, then streams staged leaves into it from
// a background thread.
#pragma once

#include <cairn/comm.hpp>
#include <cairn/storage.hpp>
#include <cairn/tree.hpp>

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

#include "storage/index.hpp"

namespace cairn::storage {

class Hdf5Writer;
class PosixShardWriter;
}  // namespace cairn::storage

namespace cairn::cuda {
class StagedCopier;
}  // namespace cairn::cuda

namespace cairn::storage {

/// One array leaf of the tree being written.
struct ArrayJob {
  const Leaf* leaf = nullptr;
  StorageFormat format = StorageFormat::posix;
  bool writes = false;      ///< this rank writes a shard of it
  std::uint64_t bytes = 0;  ///< bytes of this rank's shard (0 when it writes none)
  /// Where this rank's shard lives: declared, or detected when asked (TreeSaveOptions).
  MemoryKind memory = MemoryKind::host;
  /// Bytes of a checksum chunk of the leaf (TreeSaveOptions::checksum_chunk_bytes in whole
  /// elements).
  std::uint64_t chunk_bytes = 1;
  /// hdf5 leaves: the position among the hdf5 leaves, and the number of collective writes of
  /// the dataset (the same on every rank: the most runs any rank streams its shard in).
  std::size_t hdf5_index = 0;
  std::size_t hdf5_pieces = 1;
};

/// Writes one tree into an item directory: plan (validation, directories), open, one write
/// per array leaf in order, finish (index). Local write failures are remembered, not thrown,
/// so that a failing rank keeps taking part in the collective steps; finish() throws them on
/// every rank. Posix writes and hdf5 writes may come from two different threads.
class TreeWriter {
 public:
  /// Plans the save: agrees on the tree structure, validates every array leaf's layout
  /// across ranks, checks formats and memory kinds, and has the primary create the
  /// directories. Collective over `comm`. Throws as save_tree() documents; nothing is written
  /// on failure. `tree` must outlive the writer (scalars, strings and JSON are read from it).
  TreeWriter(const Comm& comm, std::filesystem::path dir, const ArrayTree& tree,
             TreeSaveOptions options);
  ~TreeWriter();
  TreeWriter(const TreeWriter&) = delete;
  TreeWriter& operator=(const TreeWriter&) = delete;

  /// Whether a failure was remembered. Never throws.
  [[nodiscard]] bool failed() const;

  /// The array leaves in sorted path order (the same list on every rank; `writes` and
  /// `bytes` are this rank's). Never throws.
  [[nodiscard]] const std::vector<ArrayJob>& arrays() const noexcept { return arrays_; }
  /// Whether any array is stored in HDF5 (then open() and hdf5 writes are collective).
  [[nodiscard]] bool uses_hdf5() const noexcept { return uses_hdf5_; }

  /// Prepares the per-process file of posix leaves (created on the first write). Local.
  void open_posix();
  /// Creates data.h5 and its datasets when uses_hdf5(). Collective over `comm`, which must
  /// outlive the writer and may differ from the planning Comm if it has the same ranks.
  /// Remembers failures (which are the same on every rank).
  void open_hdf5(const Comm& comm);
  /// Writes array `index` from `data`, a contiguous row-major buffer of this rank's box in
  /// `memory`, or nullptr when this rank writes nothing for it. Device data is streamed
  /// through two pinned host buffers of half of TreeSaveOptions::io_buffer_bytes, so that the
  /// copy of one run overlaps the write of the previous one (posix: chunks of the shard file;
  /// hdf5: runs of the box, one collective write each). Collective for hdf5 leaves (every
  /// rank, every hdf5 leaf, increasing index); local for posix leaves. Remembers failures.
  void write(std::size_t index, const void* data, MemoryKind memory = MemoryKind::host);
  /// Writes array `index` from the leaf's own memory: as write() for contiguous host and
  /// device shards; a strided host view is packed run by run into a buffer of at most half
  /// of io_buffer_bytes, never whole. Collective and failures as write().
  void write_leaf(std::size_t index);
  /// Copies array `index`'s shard from the device memory at `device` into host memory at
  /// `dst` (job.bytes bytes), through the pinned staging buffers. Local. Throws IoError or
  /// Unsupported naming the leaf.
  void copy_to_host(std::size_t index, const void* device, void* dst);
  /// Remembers a failure that happened outside the writer (e.g. while staging); the next
  /// writes are skipped and finish() reports it on every rank. Never throws.
  void fail(const std::exception& error) noexcept;
  /// Closes the per-process file (fsyncs it when asked). Local. Remembers failures.
  void close_posix();
  /// Closes data.h5 (fsynced when asked). Collective over the open_hdf5() Comm when
  /// uses_hdf5(). Remembers failures.
  void close_hdf5();
  /// Shares every rank's verdict, then the primary writes cairn-tree.json. Collective over
  /// `comm`. Throws on every rank when any rank failed anywhere in the save.
  void finish(const Comm& comm);
  /// Bytes of shard data this rank wrote. Never throws.
  [[nodiscard]] std::uint64_t bytes_written() const noexcept {
    std::lock_guard lock(mutex_);
    return bytes_written_;
  }

 private:
  // How many runs stream_runs() cuts this rank's `shard` into (1 when it has no bytes).
  [[nodiscard]] std::size_t count_runs(const ArrayShard& shard) const;
  // The device staging buffers, made on first use for the leaf `what`; copier_mutex_ held.
  cuda::StagedCopier& copier(std::string_view what);
  // Hands this rank's shard of array `index` to `sink` run by run (split_into_runs() at
  // run_bytes_), from device memory at `data` or, when `data` is nullptr, from the leaf's
  // strided host view. Throws what the copy or `sink` throws.
  using RunSink = std::function<void(const Box& run, std::span<const std::byte> bytes)>;
  void stream_runs(std::size_t index, const void* data, const RunSink& sink);
  // Writes array `index` (posix or hdf5) by stream_runs(). Remembers failures.
  void write_runs(std::size_t index, const void* device_data);

  std::filesystem::path dir_;
  const ArrayTree& tree_;
  TreeSaveOptions options_;
  std::size_t run_bytes_ = 0;  // bytes of one staging buffer: the longest run streamed
  std::vector<ArrayJob> arrays_;
  bool uses_hdf5_ = false;
  bool uses_posix_ = false;
  int rank_ = 0;
  std::unique_ptr<PosixShardWriter> posix_;
  std::unique_ptr<Hdf5Writer> hdf5_;
  // Device staging, made on the first device write; posix and hdf5 writes take turns.
  std::mutex copier_mutex_;
  std::unique_ptr<cuda::StagedCopier> copier_;
  // The CUDA device of the thread that planned the save (-1: no device leaves); writes from a
  // background thread use it too.
  int device_ = -1;
  // Guards what posix writes (one thread) and hdf5 writes (maybe another) both update.
  mutable std::mutex mutex_;
  std::vector<std::pair<std::size_t, ShardRecord>> records_;  // (array index, record)
  std::optional<std::pair<ErrorCode, std::string>> error_;
  std::uint64_t bytes_written_ = 0;
};

}  // namespace cairn::storage
