// cairn — compressed and explicitly chunked datasets of the hdf5 format (internal).
//
// An array leaf saved with a Compression or a chunk shape (LeafSaveArgs::chunk_shape) is a
// "filtered" dataset: chunked, with the zstd filter (id 32015, hdf5/zstd_filter.hpp) or the zfp
// filter (id 32013, H5Z-ZFP's format, hdf5/zfp_filter.hpp; see hdf5/zfp_dataset.hpp for its
// tolerance and checksums) when compressed. Its bytes cannot be placed by pwrite (compressed chunks
// have sizes known only once compressed), so the writer stages each rank's shard and, once the
// primary has closed the file, the ranks reopen it with the MPI-IO driver and write every filtered
// dataset with one collective H5Dwrite each (parallel HDF5 >= 1.10.2 compresses chunks during
// collective writes). Readers read them with H5Dread through the same filter.
#pragma once

#include <cairn/comm.hpp>
#include <cairn/storage.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "storage/format/hdf5/handle.hpp"
#include "storage/format/shard_writer.hpp"

namespace cairn::storage::h5 {

/// Whether `array` is stored as a filtered dataset: it has elements and at least one
/// dimension, and a compression or a chunk shape. Never throws.
[[nodiscard]] bool is_filtered(const ArrayToWrite& array) noexcept;

/// Registers the zstd and zfp filters with this process's HDF5 library (zstd once, and not over
/// a zstd plugin HDF5 loaded; zfp always cairn's, over H5Z-ZFP's plugin; a build without zstd or
/// zfp leaves that filter to HDF5's plugins). hdf5_mutex() must
/// be held. Throws IoError naming `where` when HDF5 refuses.
void register_filters(const Where& where);

/// The chunk shape of each filtered array of `arrays` (empty for the others): the array's
/// chunk_shape, each extent capped at the array's, or else one chosen by default_chunk() from
/// the largest shard of any rank. Collective: one element-wise reduction over `comm`. Throws
/// InvalidArgument, the same on every rank, for a chunk of 4 GiB or more (HDF5's limit).
[[nodiscard]] std::vector<std::vector<std::int64_t>> plan_filtered_chunks(
    const Comm& comm, std::span<const ArrayToWrite> arrays);

/// The chunk cairn chooses for an array of `shape` (elements of `element_bytes`) whose largest
/// shard is `largest` (all zero when no rank has one): see compression.cpp. Never throws beyond
/// std::bad_alloc.
[[nodiscard]] std::vector<std::int64_t> default_chunk(std::span<const std::int64_t> shape,
                                                      std::span<const std::int64_t> largest,
                                                      std::size_t element_bytes);

/// The dataset-creation property list of a filtered dataset of `dtype`: chunks of `chunk`, the
/// zstd filter at `compression`'s level, or the zfp filter (hdf5/zfp_filter.hpp) in fixed
/// accuracy at `zfp_tolerance` (the absolute bound, or the dataset's tolerance of a relative
/// bound, hdf5/zfp_dataset.hpp), when compressed; allocated at creation and filled with zeros
/// (compressed, they cost little; a chunk that several ranks write in parts is then always a
/// valid frame to merge into). Throws InvalidArgument naming the leaf for a chunk zfp cannot
/// compress (more than 4 dimensions above 1), IoError naming `where`.
[[nodiscard]] PropertyList filtered_creation(const Where& where,
                                             std::span<const std::int64_t> chunk,
                                             const Compression& compression, DType dtype,
                                             double zfp_tolerance = 0);

/// "zstd level 3", "zfp absolute error 1e-06", "zfp relative error 0.001 (absolute error 0.05
/// in this dataset)", "none": how `compression` is described in the dataset attribute
/// cairn_compression; `zfp_tolerance` is the dataset's tolerance of a relative bound. Never
/// throws beyond std::bad_alloc.
[[nodiscard]] std::string compression_text(const Compression& compression,
                                           double zfp_tolerance = 0);

/// One filtered dataset to write collectively: its leaf path, dtype and, when this rank has a
/// shard, its box and its row-major bytes.
struct StagedShard {
  std::string path;
  DType dtype = DType::float64;
  std::optional<Box> box;
  std::span<const std::byte> bytes;
};

/// A new file-access property list of the MPI-IO driver over `comm`, with `hints` (MPI_Info
/// key -> value) as its MPI_Info: HDF5 keeps a copy, and the MPI library ignores keys it does
/// not know. Not collective (opening a file with it is). Throws IoError naming `where`.
[[nodiscard]] PropertyList mpio_access(const Comm& comm,
                                       const std::map<std::string, std::string>& hints,
                                       const Where& where);

/// Opens `file` (closed by every other process) with the MPI-IO driver over `comm` and `hints`,
/// writes every dataset of `shards` with one collective H5Dwrite each (every rank passes the same
/// paths in the same order, a rank without a shard selects nothing) and closes it. Collective over
/// `comm`; hdf5_mutex() is held throughout. Throws IoError naming the file and the leaf, on every
/// rank alike (the outcome is agreed after the file is closed).
void write_filtered(const Comm& comm, const std::filesystem::path& file,
                    std::span<const StagedShard> shards,
                    const std::map<std::string, std::string>& hints);

}  // namespace cairn::storage::h5
