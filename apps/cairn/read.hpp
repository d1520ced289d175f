// cairn (the command-line tool) — reading array leaves in bounded pieces through the
// library's restore, so that long reads show progress and no rank holds more than a piece.
#pragma once

#include <cairn/box.hpp>
#include <cairn/comm.hpp>
#include <cairn/storage.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <vector>

namespace cairn_tool {

/// Bytes a rank reads per restore call when a command reads an array in pieces.
inline constexpr std::uint64_t kPieceBytes = std::uint64_t{64} << 20;

/// This rank's slab of an array of `shape` along its first dimension (0-d: the whole array,
/// an empty box). Never throws beyond std::bad_alloc.
[[nodiscard]] cairn::Box slab(const std::vector<std::int64_t>& shape, const cairn::Comm& comm);

/// Rows [first, first + count) of `box` along its first dimension. Never throws beyond
/// std::bad_alloc.
[[nodiscard]] cairn::Box rows(const cairn::Box& box, std::int64_t first, std::int64_t count);

/// Calls `fn` with consecutive pieces of `box` (rows along its first dimension, each of at
/// most `max_bytes` of elements of `element_bytes`, at least one row), as many times on
/// every rank: a rank whose box has fewer pieces gets empty boxes at the end. A 0-d box is
/// one piece. Collective (agrees on the number of pieces).
void for_each_piece(const cairn::Comm& comm, const cairn::Box& box, std::size_t element_bytes,
                    std::uint64_t max_bytes, const std::function<void(const cairn::Box&)>& fn);

/// Reads the part `box` of the saved array leaf `leaf` of the tree in `dir` into `dst` (row-
/// major, the box's elements; the saved dtype), checksums verified. Collective: every rank
/// calls it, each with its own box (possibly empty). Throws what cairn::restore_tree throws.
void read_box(const cairn::Comm& comm, const std::filesystem::path& dir,
              const cairn::SavedLeafInfo& leaf, const cairn::Box& box, void* dst);

}  // namespace cairn_tool
