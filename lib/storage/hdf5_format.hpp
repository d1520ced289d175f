// cairn — the hdf5 storage format (internal): one shared file per item, written collectively.
//
// Layout of data.h5: one dataset per array leaf at its leaf path ("fields/u" -> group
// "fields", dataset "u"), with the global shape and the HDF5 type matching the dtype;
// scalars, strings and JSON leaves (when the item's default format is hdf5) as small
// datasets at their paths, with an attribute "cairn_kind" = "scalar" | "string" | "json".
// Files are readable with h5dump and h5py without cairn.
#pragma once

#include <cairn/comm.hpp>
#include <cairn/tree.hpp>

#include <filesystem>
#include <memory>
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
  /// a replicated leaf written by another rank).
  const ArrayShard* shard = nullptr;
};

/// One non-array leaf to store for external readers (same list on every rank).
struct Hdf5ValueToWrite {
  std::string path;
  const Leaf* leaf = nullptr;
};

/// Creates `file` (replacing it) and writes every array collectively (each rank its
/// hyperslab, collective transfer; every rank takes part in every write, selecting nothing
/// when it has no shard), then the values (datasets created collectively, data written by
/// the primary). Collective over `comm`: every rank passes the same arrays and values (paths,
/// dtypes, shapes, value kinds), checked first.
///
/// Returns this rank's shard records: one per entry of `arrays` whose `shard` is not null, in
/// the order of `arrays` (file = file.filename(), byte_offset 0, checksum = XXH3-64 of the
/// bytes written in row-major order). A strided shard is packed whole into one buffer before
/// its write (io_buffer_bytes is a hint that this may exceed). Host memory only.
/// When `fsync`, every rank fsyncs the file after closing it (the data was written by the
/// MPI-IO aggregators and metadata by any rank; an fsync flushes the calling node only).
///
/// Throws the same error on every rank: CollectiveMismatch when the ranks' lists differ,
/// InvalidArgument for a bad path or shard (box outside the shape, dtype or shape differing
/// from the leaf), Unsupported for device memory, IoError naming the file and the leaf with
/// the HDF5 error stack's message for a failed HDF5 or POSIX call.
std::vector<ShardRecord> write_hdf5(const Comm& comm, const std::filesystem::path& file,
                                    std::span<const Hdf5ArrayToWrite> arrays,
                                    std::span<const Hdf5ValueToWrite> values,
                                    std::size_t io_buffer_bytes, bool fsync);

/// An hdf5 file opened for reading by every rank of a Comm (which must outlive the reader).
/// Metadata is read collectively (one rank reads, all receive); array data is read by each
/// rank independently. Only contiguous (or compact) datasets are accepted, so a read never
/// needs metadata I/O.
class Hdf5Reader {
 public:
  /// Opens `file` read-only. Collective. Throws (on every rank) NotFound when the file does
  /// not exist, FormatError when it is not an HDF5 file or is truncated, IoError otherwise.
  Hdf5Reader(const Comm& comm, const std::filesystem::path& file);
  /// Closes what is still open, like close() but logging failures. Collective when the file
  /// is still open (H5Fclose over MPI-IO): destroy readers on every rank. Never throws.
  ~Hdf5Reader();
  Hdf5Reader(const Hdf5Reader&) = delete;
  Hdf5Reader& operator=(const Hdf5Reader&) = delete;

  /// Opens the datasets of `records` (every rank the same list, same order; collective) and
  /// checks that each exists, is contiguous, has the recorded shape (a 0-d record: a scalar
  /// dataspace) and a type that holds the recorded dtype (class, size, sign, float fields,
  /// complex members "r" and "i"). Records opened before are skipped. Throws
  /// CollectiveMismatch when the ranks' lists differ, InvalidArgument for a non-array record,
  /// FormatError(file, leaf path, ...) for a missing or mismatching dataset.
  void open(std::span<const LeafRecord* const> records);
  /// Reads `box` of the dataset of leaf `path` (opened before) into `dst`, a row-major
  /// buffer of volume(box) elements of the leaf's dtype (nothing for an empty box).
  /// Independent (not collective). Throws InvalidArgument when the leaf was not opened or
  /// the box is not inside its shape, IoError naming the file and leaf when HDF5 fails
  /// (e.g. a truncated file).
  void read(const std::string& path, const Box& box, void* dst);
  /// Closes every dataset and the file. Collective. Throws IoError naming the file.
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cairn::storage
