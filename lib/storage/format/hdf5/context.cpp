// The attributes with which a data.h5 describes itself: the save's root attributes and the
// decomposition of each array dataset.
#include "storage/format/hdf5/context.hpp"

#include <cairn/config.hpp>

#include <algorithm>
#include <boost/json/serialize.hpp>
#include <boost/json/value_from.hpp>
#include <chrono>
#include <ctime>
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <optional>
#include <set>
#include <span>
#include <vector>

#include "storage/format/hdf5/settings.hpp"
#include "storage/index/tree_index.hpp"

namespace cairn::storage::h5 {
namespace json = boost::json;
namespace {

/// The cuts of the grid whose cells are exactly `shards`, or nothing when they are not one:
/// along each dimension the distinct offsets and the extent, every shard spanning from its
/// cut to the next one, each cell held by one shard.
std::optional<std::vector<std::vector<std::int64_t>>> grid_cuts(std::span<const std::int64_t> shape,
                                                                std::span<const RankBox> shards) {
  const std::size_t dims = shape.size();
  std::vector<std::vector<std::int64_t>> cuts(dims);
  for (std::size_t d = 0; d < dims; ++d) {
    std::set<std::int64_t> at = {shape[d]};
    for (const RankBox& s : shards) at.insert(s.box.offset[d]);
    if (*at.begin() != 0) return std::nullopt;
    cuts[d].assign(at.begin(), at.end());
  }
  std::uint64_t cells = 1;
  for (const auto& c : cuts) cells *= c.size() - 1;
  if (cells != shards.size()) return std::nullopt;
  std::set<std::vector<std::size_t>> seen;
  for (const RankBox& s : shards) {
    std::vector<std::size_t> cell(dims);
    for (std::size_t d = 0; d < dims; ++d) {
      const auto& c = cuts[d];
      const auto i = static_cast<std::size_t>(
          std::lower_bound(c.begin(), c.end(), s.box.offset[d]) - c.begin());
      if (i + 1 >= c.size() || s.box.offset[d] + s.box.extent[d] != c[i + 1]) return std::nullopt;
      cell[d] = i;
    }
    if (!seen.insert(std::move(cell)).second) return std::nullopt;
  }
  return cuts;
}

}  // namespace

std::string decomposition_text(std::span<const std::int64_t> shape,
                               std::span<const RankBox> shards) {
  json::object out;
  const bool sized = std::all_of(shards.begin(), shards.end(), [&](const RankBox& s) {
    return s.box.offset.size() == shape.size() && s.box.extent.size() == shape.size();
  });
  const auto cuts = sized && !shards.empty() ? grid_cuts(shape, shards) : std::nullopt;
  if (cuts) {
    json::array grid;
    for (const auto& c : *cuts) grid.push_back(static_cast<std::int64_t>(c.size() - 1));
    out["grid"] = std::move(grid);
    out["cuts"] = json::value_from(*cuts);
  } else {
    json::array list;
    for (const RankBox& s : shards) {
      list.push_back(json::object{{"rank", s.rank},
                                  {"offset", json::value_from(s.box.offset)},
                                  {"extent", json::value_from(s.box.extent)}});
    }
    out["shards"] = std::move(list);
  }
  return json::serialize(out);
}

void write_save_attributes(hid_t file, const SaveProvenance& provenance, int world_size,
                           const Where& where) {
  write_string_attribute(file, "cairn_version", CAIRN_VERSION_STRING, where);
  // The version of the item's index (cairn-tree.json) that this save writes.
  write_int_attribute(file, "cairn_format_version", kTreeFormatVersionSections, where);
  write_int_attribute(file, "cairn_world_size", world_size, where);
  if (provenance.step) write_int_attribute(file, "cairn_step", *provenance.step, where);
  if (!provenance.metrics.empty()) {
    write_string_attribute(file, "cairn_metrics", json::serialize(provenance.metrics), where);
  }
}

void write_time_attribute(hid_t file, const Where& where) {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  write_string_attribute(file, "cairn_write_time",
                         fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(now)), where);
}

}  // namespace cairn::storage::h5
