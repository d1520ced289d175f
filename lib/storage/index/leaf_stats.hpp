// cairn — the statistics of an array leaf's values in the index (internal): combined from its
// shards' by the owner of its section, carried to the primary in the section's summary, and
// written as the leaf's "stats" in cairn-tree.json (not in cairn-tree.bin).
#pragma once

#include <cairn/storage.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <optional>
#include <vector>

#include "base/packed.hpp"
#include "storage/index/field_reader.hpp"
#include "storage/index/tree_index.hpp"

namespace cairn::storage {

/// The statistics of a leaf saved as `shards`: those of every shard combined, or none when a
/// shard has none. Never throws.
[[nodiscard]] std::optional<LeafStats> leaf_stats_of(
    const std::vector<ShardRecord>& shards) noexcept;

/// Appends `stats` (or that there are none) to `out`. Never throws beyond std::bad_alloc.
void put_stats(base::Packed& out, const std::optional<LeafStats>& stats);
/// Reads what put_stats() appended. Throws Error(internal) on other bytes.
[[nodiscard]] std::optional<LeafStats> take_stats(base::Unpacked& in);

/// The "stats" of a leaf of `dtype`: "min" and "max" when there are finite values (integers:
/// JSON numbers; floating values: the text of their shortest decimal that reads back exactly),
/// and for a floating dtype "nan" and "inf". Never throws beyond std::bad_alloc.
[[nodiscard]] boost::json::value stats_to_json(const LeafStats& stats, DType dtype);
/// Reads the "stats" of a leaf of `dtype` with `r`: values of its kind, "min" and "max" both
/// or neither and in order, counts >= 0. Throws FormatError as FieldReader::fail().
[[nodiscard]] LeafStats stats_from_json(const FieldReader& r, const boost::json::object& o,
                                        DType dtype);

}  // namespace cairn::storage
