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

#include "storage/format/shard_reader.hpp"
#include "storage/index/tree_index.hpp"

namespace cairn::storage {

/// An hdf5 file read by every rank of a Comm (which must outlive the reader). The primary
/// opens the file and checks every dataset; one broadcast per open() tells every rank where
/// each dataset's data lies, so opening costs the same few collective calls whatever the
/// number of leaves, and only the primary reads HDF5 metadata. Array data is read by each rank
/// independently: a contiguous dataset whose file type is the one cairn writes (every dataset
/// cairn wrote) is read without HDF5, with pread at the address HDF5 allocated for it, one read
/// per piece contiguous in the file. An unfiltered chunked dataset in that type is read with
/// pread too, chunk by chunk, at the chunk addresses that open() looked up (a shard that is one
/// chunk: one read). Other contiguous or compact datasets (a byte-swapped copy) go through
/// H5Dread on a read-only handle the rank opens on its own, and so do datasets compressed with
/// cairn's filters (zstd, zfp), through them; other filters, and an unfiltered chunked dataset
/// in another byte order, are refused. Every HDF5 call is made with hdf5_mutex() held (see
/// handle.hpp); one reader is used by one thread at a time. The reader makes no collective HDF5
/// call.
class Hdf5Reader final : public ShardReader {
 public:
  /// Opens `file` read-only on the primary. Collective (one broadcast). Throws, on every rank
  /// alike, NotFound when the file does not exist, FormatError when it is not an HDF5 file or
  /// is truncated, IoError otherwise.
  Hdf5Reader(const Comm& comm, const std::filesystem::path& file);
  /// Closes what is still open, like close() but logging failures. Local. Never throws.
  ~Hdf5Reader();
  Hdf5Reader(const Hdf5Reader&) = delete;
  Hdf5Reader& operator=(const Hdf5Reader&) = delete;

  /// Checks, on the primary, that the dataset of each of `records` (every rank the same list,
  /// same order) exists, is contiguous, compact or chunked (without filters, or with cairn's
  /// zstd or zfp filter; for an unfiltered one, looking up every chunk's address, at most 2^20
  /// chunks, all with storage), has the recorded shape (a 0-d
  /// record: a scalar dataspace) and a type that holds the recorded dtype (class, size, sign,
  /// float fields, complex members "r" and "i"), and tells every rank where its data lies.
  /// Records opened before are skipped. Collective: one agreement and one broadcast, whatever
  /// the number of records. Throws CollectiveMismatch when the ranks' lists differ,
  /// InvalidArgument for a non-array record, and, on every rank alike, FormatError(file, leaf
  /// path, ...) for a missing or mismatching dataset.
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
  /// Closes every dataset and this rank's handle of the file, if it has one. Local (no rank
  /// waits for another). Throws IoError naming the file.
  void close() override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cairn::storage
