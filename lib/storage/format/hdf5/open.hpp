// cairn — how the hdf5 format's writer and reader are opened (internal), declared apart from
// their classes so that the format's row compiles in every build: writer.cpp and reader.cpp
// define them with HDF5, unavailable.cpp without it (throwing Unsupported).
#pragma once

#include <cairn/comm.hpp>
#include <cairn/storage.hpp>

#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "storage/format/shard_reader.hpp"
#include "storage/format/shard_writer.hpp"

namespace cairn::storage {

/// MPI_Info hints (key -> value) for the format's MPI-IO file access.
using MpiInfoHints = std::map<std::string, std::string>;

/// The file of an item's hdf5 leaves, relative to the item directory.
inline constexpr const char* kHdf5File = "data.h5";

/// Opens the hdf5 writer of the item directory `dir`: data.h5 created with a dataset per
/// array of `arrays`, the leaves of `values` stored for external readers, `provenance` as root
/// attributes, `hints` for MPI-IO; each rank's writes start their writeback every
/// `write_behind_bytes` (0: only at the fsync). Collective over `comm`; throws as ShardWriter's
/// opening does.
[[nodiscard]] std::unique_ptr<ShardWriter> open_hdf5_writer(
    const Comm& comm, const std::filesystem::path& dir, std::span<const ArrayToWrite> arrays,
    std::span<const ValueToWrite> values, const SaveProvenance& provenance,
    const MpiInfoHints& hints, std::uint64_t write_behind_bytes);

/// Opens the hdf5 reader of the item directory `dir` (its data.h5). Collective over `comm`.
/// Throws NotFound, FormatError or IoError naming the file, Unsupported without HDF5.
[[nodiscard]] std::unique_ptr<ShardReader> open_hdf5_reader(const Comm& comm,
                                                            const std::filesystem::path& dir);

}  // namespace cairn::storage
