#include "storage/engine/save_exchange.hpp"

#include <cairn/error.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <map>
#include <string>

namespace cairn::storage {
namespace json = boost::json;

json::object layouts_to_exchange(const std::vector<const Leaf*>& leaves) {
  json::array table;
  json::array leaf;
  std::map<std::string, std::size_t> position;  // serialized layout -> its place in `table`
  for (const Leaf* l : leaves) {
    if (l->kind() != LeafKind::array) continue;
    json::value layout = l->as_array().layout().to_json();
    auto [it, added] = position.emplace(json::serialize(layout), table.size());
    if (added) table.push_back(std::move(layout));
    leaf.push_back(it->second);
  }
  return {{"table", std::move(table)}, {"leaf", std::move(leaf)}};
}

ExchangedLayouts::ExchangedLayouts(const std::vector<json::value>& all, std::size_t leaves) {
  for (std::size_t r = 0; r < all.size(); ++r) {
    const json::object& sent = all[r].as_object();
    std::vector<LeafLayout>& table = tables_.emplace_back();
    for (const json::value& v : sent.at("table").as_array()) {
      table.push_back(
          LeafLayout::from_json(v, {}, fmt::format("rank {} layout {}", r, table.size())));
    }
    const json::array& leaf = sent.at("leaf").as_array();
    if (leaf.size() != leaves) {
      throw FormatError("", "layout",
                        fmt::format("rank {} sent the layouts of {} array leaves, not {}", r,
                                    leaf.size(), leaves));
    }
    std::vector<std::uint32_t>& positions = positions_.emplace_back();
    positions.reserve(leaves);
    for (const json::value& v : leaf) {
      const auto at = json::value_to<std::uint64_t>(v);
      if (at >= table.size()) {
        throw FormatError("", "layout",
                          fmt::format("rank {} names layout {} of {}", r, at, table.size()));
      }
      positions.push_back(static_cast<std::uint32_t>(at));
    }
  }
}

std::vector<LeafLayout> ExchangedLayouts::of_leaf(std::size_t i) const {
  std::vector<LeafLayout> per_rank;
  per_rank.reserve(tables_.size());
  for (std::size_t r = 0; r < tables_.size(); ++r) {
    per_rank.push_back(tables_[r][positions_[r][i]]);
  }
  return per_rank;
}

}  // namespace cairn::storage
