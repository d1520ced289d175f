// cairn — the hdf5 storage format, read side (internal): the ShardReader of data.h5 (layout in
// writer.hpp).
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
#include "storage/shard_reader.hpp"

namespace cairn::storage {

/// An hdf5 file opened for reading by every rank of a Comm (which must outlive the reader).
/// Metadata is read collectively (one rank reads, all receive); array data is read by each
/// rank independently, and never needs metadata I/O. A contiguous dataset whose file type is
/// the one cairn writes (every dataset cairn wrote) is read without HDF5, with pread at the
/// address HDF5 allocated for it: a shard's stream then costs one read per piece contiguous in
/// the file, where an HDF5 hyperslab read costs a dataspace walk and an MPI-IO request per
/// row. An unfiltered chunked dataset in that type is read with pread too, chunk by chunk, at
/// the chunk addresses that open() looked up (a shard that is one chunk: one read). Other
/// contiguous or compact datasets (a byte-swapped copy) go through H5Dread; filtered chunks
/// are rejected. Every HDF5 call is made with
/// hdf5_mutex() held (see hdf5_handle.hpp); one reader is used by one thread at a time.
class Hdf5Reader final : public ShardReader {
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
  /// checks that each exists, is contiguous, compact or chunked without filters (looking up
  /// every chunk's address, at most 2^20 chunks, all with storage), has the recorded shape (a 0-d
  /// record: a scalar dataspace) and a type that holds the recorded dtype (class, size, sign, float
  /// fields, complex members "r" and "i"). Records opened before are skipped. Throws
  /// CollectiveMismatch when the ranks' lists differ, InvalidArgument for a non-array record,
  /// FormatError(file, leaf path, ...) for a missing or mismatching dataset.
  void open(std::span<const LeafRecord* const> records) override;
  /// Reads `box` of the dataset of leaf `path` (opened before) into `dst`, a row-major
  /// buffer of volume(box) elements of the leaf's dtype (nothing for an empty box).
  /// Independent (not collective). Throws InvalidArgument when the leaf was not opened or
  /// the box is not inside its shape, IoError naming the file and leaf when HDF5 fails
  /// (e.g. a truncated file).
  void read(const std::string& path, const Box& box, void* dst);
  /// Reads bytes [first, first + bytes) of the stream of `shard` (its box's row-major bytes)
  /// of `leaf` (opened before) into `dst`. Independent (not collective). Throws as read(),
  /// and FormatError naming the file when it is shorter than the dataset (truncated).
  void read(const LeafRecord& leaf, const ShardRecord& shard, std::uint64_t first,
            std::uint64_t bytes, std::byte* dst) override;
  /// As read(), into `pieces`: one preadv per piece of the file where the dataset is read
  /// with pread (a shard stored as a chunk is one), read() piece by piece otherwise.
  /// Independent. Throws as read().
  void read_scattered(const LeafRecord& leaf, const ShardRecord& shard, std::uint64_t first,
                      ScatterList pieces) override;
  /// Advises the kernel to read the ranges of the file that hold those bytes (pieces closer
  /// than 64 KiB as one range, see reader.cpp). Nothing for bytes that are one range of the
  /// file (a shard stored as a chunk: the kernel reads ahead itself) nor for datasets read
  /// with H5Dread.
  /// Independent. Throws as read() for a leaf not opened or a range outside the shard.
  void prefetch(const LeafRecord& leaf, const ShardRecord& shard, std::uint64_t first,
                std::uint64_t bytes) override;
  /// Closes every dataset and the file. Collective. Throws IoError naming the file.
  void close() override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cairn::storage
