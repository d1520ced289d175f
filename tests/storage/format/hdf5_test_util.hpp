// Reference data, leaves to write and checks shared by the hdf5 format's tests
// (test_hdf5_format.cpp: round trips and layouts; test_hdf5_errors.cpp: damaged files and
// misuse).
#pragma once

#include <cairn/comm.hpp>
#include <cairn/tree.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "storage/format/hdf5/reader.hpp"
#include "storage/format/hdf5/writer.hpp"

namespace cairn::storage::hdf5_test {

/// Element `g` (global row-major index) of the reference array of `dtype`: a formula that
/// h5py can recompute (see H5pyReadsTheFile).
void reference_element(DType dtype, std::int64_t g, std::byte* out);

/// The bytes of `box` of the reference array of `shape`.
std::vector<std::byte> reference_box(DType dtype, const std::vector<std::int64_t>& shape,
                                     const Box& box);

/// Rank r's block of `shape` over a process grid of `grid` (one entry per split dimension).
Box block_of(const std::vector<std::int64_t>& shape, const std::vector<int>& grid, int r);

/// Rank r's block of `shape` over `grid` in equal blocks of ceil(extent / parts) elements, the
/// last ones smaller or empty: a regular grid, which the writer stores one chunk per shard.
Box regular_block_of(const std::vector<std::int64_t>& shape, const std::vector<int>& grid, int r);

/// The 2-d process grid MPI_Dims_create makes of `size` ranks.
std::vector<int> grid_2d(int size);

/// An array leaf to write, owning its data.
struct Owned {
  std::string path;
  DType dtype;
  std::vector<std::int64_t> shape;
  std::optional<Box> box;  // nullopt: this rank writes nothing
  std::vector<std::byte> data;
  ArrayShard shard;
};

/// A leaf `path` of the reference array; this rank holds `box` of it (nullopt: nothing).
Owned make_leaf(std::string path, DType dtype, std::vector<std::int64_t> shape,
                std::optional<Box> box);

/// The writer's description of `leaves`.
std::vector<ArrayToWrite> to_write(const std::vector<Owned>& leaves);
/// One array of a format's list: `path`, `dtype` and `shape` stored as they are (checksum
/// chunks of one byte), this rank's `box` or none.
ArrayToWrite array_to_write(std::string path, DType dtype, std::vector<std::int64_t> shape,
                            std::optional<Box> box);

/// An index record of an array leaf stored in hdf5 (what Hdf5Reader reads of it).
LeafRecord record_of(std::string path, DType dtype, std::vector<std::int64_t> shape);

/// Reads `box` of leaf `path` from `reader` into a buffer first filled with 0xEE.
std::vector<std::byte> read_box(Hdf5Reader& reader, const std::string& path, DType dtype,
                                const Box& box);

/// Writes `leaves` and `values` with one Hdf5Writer, each shard in one piece; returns this
/// rank's placements. Collective.
std::vector<ShardPlacement> write_all(const Comm& comm, const std::filesystem::path& file,
                                      const std::vector<Owned>& leaves,
                                      std::span<const ValueToWrite> values = {}, bool fsync = true);

/// Writes `leaves` and checks the placements this rank gets back: every shard in data.h5.
/// Collective.
void write_and_check_records(const Comm& comm, const std::filesystem::path& file,
                             const std::vector<Owned>& leaves,
                             std::span<const ValueToWrite> values = {});

/// Reads every leaf of `leaves` whole from `file` and checks it against the reference array,
/// and this rank's box against its data, except `unwritten` (a leaf no rank wrote, whose
/// contents are undefined). Collective.
void expect_reference_arrays(const Comm& comm, const std::filesystem::path& file,
                             const std::vector<Owned>& leaves, const std::string& unwritten = {});

/// Runs `script` with /usr/bin/python3 on rank 0 (argument: the file); true on every rank
/// when it exited with 0. Collective.
bool python_ok(const std::filesystem::path& dir, const std::string& script,
               const std::filesystem::path& file);

/// Whether /usr/bin/python3 can import h5py (asked on rank 0). Collective.
bool h5py_available();

}  // namespace cairn::storage::hdf5_test
