// cairn (the command-line tool) — the statistics of array leaves that a save recorded
// (cairn::LeafStats): as JSON and as text, for `inspect` and `ls -l`, read from the index
// without reading any data.
#pragma once

#include <boost/json/object.hpp>
#include <cairn/storage.hpp>
#include <string>

#include "checkpoint_dir.hpp"

namespace cairn_tool {

/// `stats` as JSON: "min" and "max" (absent when no value is finite), "nan" and "inf". Never
/// throws beyond std::bad_alloc.
[[nodiscard]] boost::json::object stats_json(const cairn::LeafStats& stats);

/// stats_json() as text: "min -10, max 37", then ", 1 NaN" and ", 2 inf" when not 0 ("no
/// finite value" without min and max). Never throws beyond std::bad_alloc.
[[nodiscard]] std::string stats_text(const boost::json::object& stats);

/// The recorded statistics of the array leaves of `ckpt`'s array-tree items, read by this
/// process alone: "item/leaf" (the leaf alone for a checkpoint of one unnamed item) ->
/// stats_json(), leaves without statistics left out. An item whose index cannot be read is
/// left out: `inspect` and `verify` report damage. Not collective; never throws beyond
/// std::bad_alloc.
[[nodiscard]] boost::json::object checkpoint_stats(const Checkpoint& ckpt);

}  // namespace cairn_tool
