// cairn — zfp datasets of the hdf5 format beyond their filter (internal): the tolerance of a
// relative bound, and reading a shard back to checksum what a restore will get.
//
// zfp is lossy: a read of a zfp dataset returns the decompressed values, never the bytes that
// were written. The index therefore records, for a zfp leaf in hdf5, the checksums of those
// values (ShardWriter::checksums_as_read()): once the collective writes are done, each rank
// reads its own shard back through the filter and checksums it per checksum chunk of its
// stream. zfp decompresses deterministically, whichever part of a dataset is read, so a later
// restore (any N->M) and `cairn verify` get the same values, while a damaged chunk still fails.
//
// A relative bound: H5Z-ZFP's format fixes one mode and one tolerance per dataset (in its
// cd_values), where the posix format takes the largest magnitude of each checksum chunk. In
// hdf5 a relative bound is one absolute tolerance for the dataset: the bound times the largest
// finite magnitude of the whole leaf (the maximum over every rank's shard), so that every
// restored element x' of x satisfies |x' - x| <= bound * max|x|. The values are known only
// once the shards are written, so such a dataset is created by the writer's close().
#pragma once

#include <cairn/comm.hpp>
#include <cairn/storage.hpp>
#include <cairn/tree.hpp>

#include <cstddef>
#include <filesystem>
#include <span>
#include <string_view>
#include <vector>

namespace cairn::storage::h5 {

/// Whether the dataset of a leaf compressed with `compression` is created by the writer's
/// close() rather than with the file: zfp with a relative bound (its tolerance depends on the
/// values). Never throws.
[[nodiscard]] bool created_at_close(const Compression& compression) noexcept;

/// Whether a read of a dataset compressed with `compression` returns other values than those
/// written (zfp), so that its checksums are taken from a read (read_back()). Never throws.
[[nodiscard]] bool is_lossy(const Compression& compression) noexcept;

/// One rank's values of a leaf saved with zfp and a relative bound.
struct RelativeBound {
  double relative_error = 0;
  DType dtype = DType::float64;      ///< float32 or float64
  std::span<const std::byte> shard;  ///< this rank's shard (empty when it has none)
};

/// The zfp tolerance of each leaf of `leaves` (every rank the same list, in the same order):
/// its relative_error times the largest finite magnitude of the leaf over every rank's shard
/// (NaN and infinities are left out; a leaf of zeros gets 0, zfp's finest accuracy; a product
/// that overflows gets the largest double). Collective over `comm`: one element-wise reduction
/// whatever the number of leaves. Throws CollectiveMismatch when the ranks' lists differ in
/// length, TimeoutError.
[[nodiscard]] std::vector<double> relative_tolerances(const Comm& comm,
                                                      std::span<const RelativeBound> leaves);

/// One shard of a dataset to read back: `box` of the dataset at leaf `path`, into `buffer`
/// (volume(box) elements of `dtype`, row-major).
struct ShardToRead {
  std::string_view path;
  DType dtype = DType::float64;
  Box box;
  std::span<std::byte> buffer;
};

/// Opens `file` (closed by every writer) read-only on this rank alone, with HDF5's POSIX driver
/// as restores do, and reads each shard of `shards` through the dataset's filters into its
/// buffer: the values a restore gets. Local; takes hdf5_mutex(). Throws IoError naming the file
/// and the leaf, InvalidArgument when a buffer does not hold its box.
void read_back(const std::filesystem::path& file, std::span<const ShardToRead> shards);

}  // namespace cairn::storage::h5
