// cairn — how the shards of one array leaf are laid out over the ranks, and the check that the
// layout describes one consistent global array. Pure functions: storage gathers every rank's
// LeafLayout (as JSON, through Comm::allgather) and calls validate_layout() identically on
// every rank, so every rank reaches the same verdict without further communication.
#pragma once

#include <cairn/box.hpp>
#include <cairn/dtype.hpp>
#include <cairn/error.hpp>

#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace cairn {

/// One rank's description of one array leaf. Aggregate: use designated initializers.
struct LeafLayout {
  // Every member has an initializer so that designated initializers may omit any of them
  // without g++ -Wextra warnings.
  DType dtype = DType::float64;                 ///< element type
  std::vector<std::int64_t> global_shape = {};  ///< shape of the whole array (empty: 0-d)
  std::optional<Box> box = {};                  ///< this rank's shard; nullopt: it holds none
  bool replicated = false;                      ///< every holder has the whole array
  bool fortran_order = false;  ///< a Fortran array with reversed dims (ArrayShard::fortran_order)

  /// Whether this rank contributes data: a box that is present and not empty. Never throws.
  [[nodiscard]] bool has_shard() const noexcept { return box.has_value() && !is_empty(*box); }

  /// {"dtype": "float64", "shape": [..], "box": {"offset": [..], "extent": [..]} or null,
  /// "replicated": false, "fortran_order": false}. Not collective; never throws beyond
  /// std::bad_alloc.
  [[nodiscard]] boost::json::value to_json() const;

  /// Parses what to_json() wrote. Validates hostile input: wrong JSON types, unknown dtype
  /// names, more than kMaxDims dimensions, negative or non-integer numbers, shapes whose volume
  /// overflows int64, a box whose rank differs from the shape's or that does not fit inside
  /// it, a "fortran_order" that is not a boolean (a missing one means false). Not collective.
  /// Throws FormatError with path `source` (the file it came from, may be empty) and field
  /// "<field_prefix>.shape[2]" etc. naming the first bad field.
  [[nodiscard]] static LeafLayout from_json(const boost::json::value& json,
                                            std::string_view source = {},
                                            std::string_view field_prefix = "layout");

  /// Member-wise equality. Never throws.
  friend bool operator==(const LeafLayout&, const LeafLayout&) = default;
};

/// What validate_layout() learned about a valid layout.
struct LayoutSummary {
  /// Ranks whose shard is written: every rank with a non-empty shard, or, for a replicated
  /// leaf, the lowest such rank only. Ascending.
  std::vector<int> writers;
  /// Number of elements of the global array (1 for 0-d).
  std::int64_t global_volume = 0;
  /// Number of elements the writers hold together (== global_volume unless sparse).
  std::int64_t covered_volume = 0;
};

/// Checks that `per_rank` (index = rank) describes one consistent global array for the leaf
/// `leaf`, and returns who writes what. Checks, in this order:
///  1. every rank agrees with rank 0 on dtype, global shape, the replicated flag and the
///     fortran_order flag —
///     otherwise CollectiveMismatch naming the leaf, the first differing rank, the field and
///     both values;
///  2. the global shape is valid (at most kMaxDims dimensions, volume fits int64) and every
///     present box lies inside it — otherwise InvalidArgument naming leaf, rank, box, shape;
///  3. replicated leaves: every non-empty box is the whole array — InvalidArgument naming the
///     rank and its box; non-replicated leaves: no two boxes overlap — InvalidArgument naming
///     both ranks and the overlapping region;
///  4. unless `allow_sparse`, the shards cover the whole array — InvalidArgument naming one
///     uncovered region.
/// Ranks may hold no shard (nullopt or empty box) as long as coverage holds. Cost: overlap
/// is checked pairwise after sorting by the first offset (worst case O(ranks^2 * dims));
/// coverage compares summed volumes and sweeps for a hole only when they differ.
/// Not collective (call it on every rank with the same input). An empty `per_rank` throws
/// InvalidArgument.
LayoutSummary validate_layout(std::string_view leaf, std::span<const LeafLayout> per_rank,
                              bool allow_sparse = false);

}  // namespace cairn
