// cairn — the hdf5 storage format (internal): one shared file per item, written collectively.
//
// Layout of data.h5: one dataset per array leaf at its leaf path ("fields/u" -> group
// "fields", dataset "u"), with the global shape and the HDF5 type matching the dtype;
// scalars, strings and JSON leaves (when the item's default format is hdf5) as small
// datasets at their paths, with an attribute "cairn_kind" = "scalar" | "string" | "json".
// Array datasets carry "cairn_dtype" (the dtype name) and "cairn_order" ("C", or "F" for a
// Fortran array stored with its dimensions reversed). Files are readable with h5dump and h5py
// without cairn.
#pragma once

#include <cairn/comm.hpp>
#include <cairn/tree.hpp>

#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "storage/index.hpp"

namespace cairn::storage {

/// One array leaf to write: the same list, in the same (sorted path) order, on every rank.
struct Hdf5ArrayToWrite {
  std::string path;
  DType dtype = DType::float64;
  std::vector<std::int64_t> shape;
  /// This rank's shard, or nullptr when this rank writes nothing for the leaf (no shard, or
  /// a replicated leaf written by another rank). Only its dtype, global shape and box are
  /// used: the data is passed to Hdf5Writer::write().
  const ArrayShard* shard = nullptr;
  /// The leaf's ArrayShard::fortran_order: the dataset's attribute cairn_order is "F", not "C".
  bool fortran_order = false;
  /// How many collective writes of the dataset every rank makes (at least 1; the same on
  /// every rank): a rank may write its box in up to this many pieces (write_piece()).
  std::size_t pieces = 1;
  /// Bytes of a checksum chunk of this rank's shard (a whole number of elements).
  std::uint64_t chunk_bytes = std::uint64_t{1} << 20;
};

/// One non-array leaf to store for external readers (same list on every rank).
struct Hdf5ValueToWrite {
  std::string path;
  const Leaf* leaf = nullptr;
};

/// Writes one data.h5 collectively, one array leaf at a time: the constructor creates the
/// file and every dataset, write() fills one array's dataset (each rank its hyperslab,
/// collective transfer; every rank takes part in every write, selecting nothing when it has
/// nothing to write), finish() closes the file.
///
/// Local failures in write() (bad data pointer or index, failed HDF5 write) are remembered,
/// not thrown, so the failing rank keeps taking part in the collective calls; finish()
/// throws them on every rank. Ranks passing different lists to the constructor get
/// CollectiveMismatch instead of a hang; write() documents the ordering rule.
///
/// Every HDF5 call is made with hdf5_mutex() held (see hdf5_handle.hpp), so a writer may
/// run on a background thread while other threads use HDF5. One writer is used by one thread
/// at a time. Host memory only: the caller copies device data and packs strided views.
class Hdf5Writer {
 public:
  /// Creates `file` (replacing it) and every dataset of `arrays`, and creates and writes
  /// every value of `values` (datasets created collectively, data written by the primary).
  /// Collective over `comm`, which must outlive the writer; `arrays` and `values` (and the
  /// shards and leaves they point to) need not. Every rank passes the same arrays and values
  /// (paths, dtypes, shapes, value kinds), checked first.
  ///
  /// Throws the same error on every rank: CollectiveMismatch when the ranks' lists differ,
  /// InvalidArgument for a bad path or shard (box outside the shape, dtype or shape
  /// differing from the leaf), IoError naming the file and the leaf with the HDF5 error
  /// stack's message for a failed HDF5 call.
  Hdf5Writer(const Comm& comm, const std::filesystem::path& file,
             std::span<const Hdf5ArrayToWrite> arrays, std::span<const Hdf5ValueToWrite> values);
  /// When finish() was not called (or threw before closing), closes the datasets and the
  /// file without throwing and logs that the file is incomplete. Closing the file is
  /// collective (H5Fclose over MPI-IO): destroying an unfinished writer is only safe when
  /// every rank does it, e.g. after an error thrown on every rank. Never throws.
  ~Hdf5Writer();
  Hdf5Writer(const Hdf5Writer&) = delete;
  Hdf5Writer& operator=(const Hdf5Writer&) = delete;

  /// Number of arrays (entries of `arrays` in the constructor). Never throws.
  [[nodiscard]] std::size_t array_count() const noexcept;

  /// Writes array `index` (position in `arrays`) from `data`: a contiguous row-major buffer
  /// of this rank's box (`arrays[index].shard->box`), or nullptr when this rank writes
  /// nothing for it (then `arrays[index].shard` was null; an empty box may pass nullptr
  /// too). Makes all `arrays[index].pieces` collective calls of the array: the first writes
  /// the box, the others nothing. `data` is not used after the call returns. Arrays without
  /// elements are skipped by every rank.
  ///
  /// Collective: every rank writes every array, in increasing index order (0, 1, ...,
  /// array_count() - 1), each with write(), skip() or `pieces` calls of write_piece(), then
  /// calls finish(). The ranks do not agree on `index` per call (an agreement round costs
  /// several times the write of a small leaf): the k-th collective call takes part in the
  /// write of the array it falls on, on every rank, and an `index` other than that array's is
  /// remembered as InvalidArgument (the call then writes no data). A rank that makes fewer
  /// calls than the others hangs them in HDF5's collective write, like any collective call
  /// made by some ranks only.
  ///
  /// Returns this rank's record (file = the file's name, byte_offset 0, bytes and XXH3-64
  /// checksums of the chunks of `data`) when it wrote a shard, std::nullopt when it has none or
  /// when a failure is remembered. Throws IoError (on every rank) when HDF5 cannot describe the
  /// array, InvalidArgument (on the calling rank) after finish() or after every array was
  /// written. Local failures are remembered for finish().
  std::optional<ShardRecord> write(std::size_t index, const void* data);
  /// Makes one of the `arrays[index].pieces` collective calls of array `index`, writing
  /// `run` from `data` (its row-major elements), or nothing when `run` is nullptr (then
  /// `data` must be nullptr too). The runs a rank passes for an array must continue its box
  /// in row-major order, each where the previous ended, and cover it by the array's last
  /// call: the runs of split_into_runs(box, n), in order, with at most `pieces` of them.
  /// This lets a rank stream a shard that is not in host memory as one buffer (device data,
  /// strided views) through a small staging buffer. `data` is not used after the call.
  ///
  /// Collective like write(). Returns this rank's record on the call whose run completes the
  /// box (the checksum is of all its runs' bytes, as if written at once), std::nullopt
  /// otherwise. A run that does not continue the box, data without a run, or a box left
  /// incomplete at the array's last call is remembered as InvalidArgument. Throws as
  /// write().
  std::optional<ShardRecord> write_piece(std::size_t index, const Box* run, const void* data);
  /// Makes the collective calls of array `index` not made yet (all of them when none was)
  /// without writing anything, e.g. after a local failure the caller reports itself.
  /// Collective like write(); throws as write().
  void skip(std::size_t index);

  /// Closes the datasets and the file (collective) and, when `fsync`, fsyncs the file on
  /// every rank (the data was written by the MPI-IO aggregators and metadata by any rank;
  /// an fsync flushes the calling node only). Collective; the ranks first agree on the
  /// number of collective write calls they made. Throws on every rank the first failure remembered
  /// by write() or met here (IoError naming the file for a failed close or fsync), InvalidArgument
  /// when not every array was written, CollectiveMismatch when the ranks made different numbers of
  /// write calls (then the file stays open until the writer is destroyed). Throws InvalidArgument
  /// on the calling rank alone when called twice.
  void finish(bool fsync);

 private:
  // The array the next collective write call falls on. Throws InvalidArgument after
  // finish() or after every array was written.
  std::size_t current_array() const;

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cairn::storage
