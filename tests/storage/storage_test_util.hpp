// Helpers of the storage tests: sub-communicators, decompositions, reference data, damage.
#pragma once

#include <cairn/comm.hpp>
#include <cairn/config.hpp>
#include <cairn/storage.hpp>
#include <cairn/tree.hpp>
#include <mpi.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

namespace cairn::testing {

/// A Comm over world ranks [0, n), or std::nullopt on the other ranks. Collective over world.
std::optional<Comm> first_ranks(int n);

/// Rank r's box of `shape` in a decomposition over `n` ranks: "slab" splits dimension 0,
/// "block" splits dimensions 0 and 1 over a near-square process grid.
Box slab_box(const std::vector<std::int64_t>& shape, int r, int n);
Box block_box(const std::vector<std::int64_t>& shape, int r, int n);

/// Deterministic bytes of the element at global linear index `i` for `dtype`
/// (valid values for bool; arbitrary bit patterns otherwise).
void reference_element(DType dtype, std::int64_t i, std::byte* out);

/// A row-major buffer holding `box` of the reference array of `shape`.
std::vector<std::byte> reference_box(DType dtype, const std::vector<std::int64_t>& shape,
                                     const Box& box);

/// A float64 shard of the array of `shape` holding `box`, over `data` (its row-major bytes,
/// such as reference_box's), which must outlive the shard; saving only reads them.
ArrayShard float64_shard(const std::vector<std::byte>& data, const std::vector<std::int64_t>& shape,
                         const Box& box);

/// The formats this build can test.
std::vector<StorageFormat> available_formats();

/// Flips the bits of `mask` in byte `at` of `file` (flipped again, it is mended). Not
/// collective: call it on one rank. Throws std::runtime_error when the byte cannot be read
/// or written.
void flip_byte(const std::filesystem::path& file, std::uint64_t at, std::uint8_t mask = 0x5a);

}  // namespace cairn::testing
