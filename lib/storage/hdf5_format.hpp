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

/// Creates `file` and writes every array collectively (each rank its hyperslab, collective
/// transfer), then the values (metadata written collectively, data from the primary).
/// Returns this rank's shard records (file "data.h5", checksum computed from the memory
/// written). Host memory only. fsyncs the file when `fsync`. Collective over `comm`.
/// Throws IoError naming the file (and leaf) with the HDF5 error stack's message.
std::vector<ShardRecord> write_hdf5(const Comm& comm, const std::filesystem::path& file,
                                    std::span<const Hdf5ArrayToWrite> arrays,
                                    std::span<const Hdf5ValueToWrite> values,
                                    std::size_t io_buffer_bytes, bool fsync);

/// An hdf5 file opened for reading by every rank of a Comm.
class Hdf5Reader {
 public:
  /// Opens `file` collectively. Throws NotFound, FormatError (not an HDF5 file) or IoError.
  Hdf5Reader(const Comm& comm, const std::filesystem::path& file);
  ~Hdf5Reader();
  Hdf5Reader(const Hdf5Reader&) = delete;
  Hdf5Reader& operator=(const Hdf5Reader&) = delete;

  /// Opens the datasets of `records` (every rank the same list, same order; collective) and
  /// checks that each exists with the recorded shape and a type of the recorded dtype's size
  /// and class. Throws FormatError naming the file and leaf otherwise.
  void open(std::span<const LeafRecord* const> records);
  /// Reads `box` of the dataset of leaf `path` (opened before) into `dst`, a row-major
  /// buffer of volume(box) elements of the leaf's dtype. Independent (not collective).
  /// Throws IoError / FormatError naming the file and leaf.
  void read(const std::string& path, const Box& box, void* dst);
  /// Closes every dataset and the file. Collective. Throws IoError.
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cairn::storage
