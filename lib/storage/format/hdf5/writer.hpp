// cairn — the hdf5 storage format, write side (internal): one shared file per item.
//
// Layout of data.h5: one dataset per array leaf at its leaf path ("fields/u" -> group
// "fields", dataset "u"), with the global shape and the HDF5 type matching the dtype;
// scalars, strings and JSON leaves (when the item's default format is hdf5) as small
// datasets at their paths, with an attribute "cairn_kind" = "scalar" | "string" | "json".
// Array datasets carry "cairn_dtype" (the dtype name) and "cairn_order" ("C", or "F" for a
// Fortran array stored with its dimensions reversed) and "cairn_decomposition" (the writers'
// shards); the root group carries the save's step, metrics, versions, world size and write
// time (hdf5/context.hpp). Strings are variable-length UTF-8. Files are readable with h5dump
// and h5py without cairn.
//
// How it is written. The primary creates the file and every dataset alone, through HDF5's
// POSIX driver, and one broadcast tells every rank where each dataset's data lies: the number
// of collective calls of a save does not grow with its leaves, and only the primary writes
// HDF5 metadata. Array datasets are allocated at creation and never filled, and their file
// type is the memory type. A dataset is contiguous, or, when its shards are a regular grid of
// boxes that are not runs of the array (2-D blocks, column slabs), chunked with one chunk per
// shard, so that every shard is one range of the file (see hdf5/chunk_plan.hpp). Each
// rank then writes its shards itself, with pwrite at the address HDF5 allocated for each
// dataset or chunk: no HDF5 call, no MPI, so writes are local and may come from a background
// thread. Closing: the ranks agree that every rank is done writing, then the primary closes
// the file and HDF5 writes its metadata. This needs a file system on which a write is visible
// to every node once the call returns (POSIX consistency: local disks, Lustre, GPFS, BeeGFS),
// as MPI-IO itself does.
//
// Compressed datasets (zstd, zfp) and datasets with a chunk shape asked for are the exception
// (hdf5/compression.hpp): write() stages their shards, and close() writes them with collective
// H5Dwrite calls over MPI-IO once the primary has closed the file. zfp is lossy: close() then
// reads each rank's shard back, and checksums_as_read() gives the checksums of those values for
// the index; a zfp dataset with a relative bound is created by close(), once the tolerance is
// known (hdf5/zfp_dataset.hpp).
#pragma once

#include <cairn/comm.hpp>
#include <cairn/tree.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "storage/format/hdf5/open.hpp"
#include "storage/format/shard_writer.hpp"

namespace cairn::storage {

/// Writes one data.h5: the constructor creates the file, every dataset and every value
/// (collective; the primary does the HDF5 work); place() and write() store this rank's shards
/// (local); flush() then close() finish it. Every HDF5 call is made with hdf5_mutex() held (see
/// hdf5/handle.hpp); write() makes none. One writer is used by one thread at a time.
class Hdf5Writer final : public ShardWriter {
 public:
  /// Creates `file` (replacing it) with the root attributes naming the save (`provenance`, the
  /// versions, the number of ranks), every dataset of `arrays` (agreeing on their chunks
  /// first) and creates and writes every value of `values`, all on the primary.
  /// Collective over `comm`, which must outlive the writer; `arrays` and `values` (and the
  /// leaves they point to) need not. Every rank passes the same arrays and values (paths,
  /// dtypes, shapes, value kinds), checked first.
  ///
  /// Throws the same error on every rank: CollectiveMismatch when the ranks' lists differ,
  /// InvalidArgument for a bad path, a box outside its shape or a chunk shape of 4 GiB or more,
  /// IoError naming the file and the leaf with the HDF5 error stack's message for a failed
  /// HDF5 call, or when the file system has too little free space for the datasets. `hints`
  /// go to the MPI-IO file access of the compressed datasets' collective writes; each rank's
  /// raw writes start their writeback every `write_behind_bytes` (0: only at the fsync).
  Hdf5Writer(const Comm& comm, const std::filesystem::path& file,
             std::span<const ArrayToWrite> arrays, std::span<const ValueToWrite> values,
             const SaveProvenance& provenance = {}, MpiInfoHints hints = {},
             std::uint64_t write_behind_bytes = 0);
  /// When close() was not called (or threw before closing), closes the primary's handle of
  /// the file without throwing and logs that the file is incomplete. Local. Never throws.
  ~Hdf5Writer() override;
  Hdf5Writer(const Hdf5Writer&) = delete;
  Hdf5Writer& operator=(const Hdf5Writer&) = delete;

  /// Checks that this rank has a shard of array `index` of `bytes` bytes, placed once, and
  /// returns {data.h5, 0} (a shard's place is its box in the dataset). Local. Throws
  /// InvalidArgument naming the leaf.
  ShardPlacement place(std::size_t index, std::uint64_t bytes) override;
  /// Writes stream bytes [first, first + data.size()) of this rank's shard of array `index`:
  /// one pwrite for a shard stored as a chunk, else one per piece contiguous in the dataset; a
  /// copy into memory for a compressed or explicitly chunked dataset (written by close()). Local,
  /// no HDF5 call. Throws InvalidArgument for a range outside the shard or a shard not placed,
  /// IoError naming the file and the leaf.
  void write(std::size_t index, std::uint64_t first, std::span<const std::byte> data) override;
  /// Closes this rank's descriptor of the file. Local. No fsync, even when `fsync`: the file
  /// is shared and an fsync would write back the other ranks' pages while they still write;
  /// close() fsyncs once all are done. Throws IoError naming the file.
  void flush(bool fsync) override;
  /// Agrees with every rank of `comm` that all are done writing, agrees on the tolerance of each
  /// zfp array with a relative bound and has the primary create its dataset, records the time
  /// (cairn_write_time) and closes the file on the primary (HDF5 writes its metadata), writes
  /// the staged compressed datasets with every rank (MPI-IO over `comm`), reads this rank's zfp
  /// shards back (checksums_as_read()) and, when
  /// `fsync`, fsyncs the file on every rank (each wrote its shards from its own node; an fsync
  /// flushes the calling node only). Collective. Throws CollectiveMismatch on every rank when some
  /// rank does not close, IoError naming the file on every rank when the primary could not close it
  /// and on the ranks where flushing or fsyncing failed, InvalidArgument when called twice.
  void close(const Comm& comm, bool fsync) override;
  /// After close(): for a zfp array, the checksums of this rank's shard as read back through
  /// the filter (per ArrayToWrite::chunk_bytes of its stream); std::nullopt for every
  /// other array, or before close(). Local; never throws beyond std::bad_alloc.
  [[nodiscard]] std::optional<std::vector<std::uint64_t>> checksums_as_read(
      std::size_t index) const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cairn::storage
