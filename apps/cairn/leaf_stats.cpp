#include "leaf_stats.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <variant>

namespace cairn_tool {

namespace {

boost::json::value stat_value(const cairn::LeafStatValue& value) {
  return std::visit([](auto v) { return boost::json::value(v); }, value);
}

std::string stat_value_text(const boost::json::value& value) {
  if (value.is_int64()) return fmt::format("{}", value.get_int64());
  if (value.is_uint64()) return fmt::format("{}", value.get_uint64());
  return fmt::format("{}", value.to_number<double>());
}

}  // namespace

boost::json::object stats_json(const cairn::LeafStats& stats) {
  boost::json::object out;
  if (stats.min) {
    out["min"] = stat_value(*stats.min);
    out["max"] = stat_value(*stats.max);
  }
  out["nan"] = stats.nan_count;
  out["inf"] = stats.inf_count;
  return out;
}

std::string stats_text(const boost::json::object& stats) {
  std::string out = "no finite value";
  if (const auto* min = stats.if_contains("min")) {
    out = fmt::format("min {}, max {}", stat_value_text(*min), stat_value_text(stats.at("max")));
  }
  if (const auto nan = stats.at("nan").to_number<std::uint64_t>(); nan > 0) {
    out += fmt::format(", {} NaN", nan);
  }
  if (const auto inf = stats.at("inf").to_number<std::uint64_t>(); inf > 0) {
    out += fmt::format(", {} inf", inf);
  }
  return out;
}

boost::json::object checkpoint_stats(const Checkpoint& ckpt) {
  boost::json::object out;
  std::optional<cairn::Comm> self;
  for (const Item& item : ckpt.items) {
    if (item.type != kArrayTree) continue;
    try {
      if (!self) self.emplace(MPI_COMM_SELF);
      for (const auto& leaf : cairn::read_tree_info(*self, item.dir).leaves) {
        if (!leaf.stats) continue;
        out[item.name.empty() ? leaf.path : item.name + "/" + leaf.path] = stats_json(*leaf.stats);
      }
    } catch (const cairn::Error&) {
      continue;  // damage is inspect's and verify's to report
    }
  }
  return out;
}

}  // namespace cairn_tool
