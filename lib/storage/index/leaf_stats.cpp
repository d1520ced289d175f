#include "storage/index/leaf_stats.hpp"

#include <cairn/error.hpp>
#include <fmt/format.h>

#include <bit>
#include <charconv>
#include <cmath>
#include <limits>

#include "storage/stream/value_stats.hpp"

namespace cairn::storage {

namespace json = boost::json;

namespace {

void put_value(base::Packed& out, const LeafStatValue& value) {
  out.put_byte(static_cast<std::uint8_t>(value.index()));
  std::visit([&](auto v) { out.put(std::bit_cast<std::uint64_t>(v)); }, value);
}

LeafStatValue take_value(base::Unpacked& in) {
  const std::uint8_t kind = in.take_byte();
  const std::uint64_t bits = in.take();
  switch (kind) {
    case 0: return std::bit_cast<std::int64_t>(bits);
    case 1: return bits;
    case 2: return std::bit_cast<double>(bits);
    default: throw Error(ErrorCode::internal, "the statistics of a shard hold a value of no kind");
  }
}

// A floating value as the text of its shortest decimal that reads back as it (fmt), since
// Boost.JSON before 1.83 may read a JSON number one unit in the last place off; integers as
// JSON numbers, which it reads exactly.
json::value value_to_json(const LeafStatValue& value) {
  if (const double* d = std::get_if<double>(&value)) return json::string(fmt::format("{}", *d));
  return std::visit([](auto v) { return json::value(v); }, value);
}

// A member of "stats" as a value of the leaf's dtype's kind.
LeafStatValue value_from_json(const FieldReader& r, const json::object& o, std::string_view name,
                              DType dtype) {
  const json::value& v = r.member(o, name);
  if (is_floating(dtype)) {
    double d = 0;
    const std::string_view text = v.is_string() ? std::string_view(v.get_string()) : "";
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
        !std::isfinite(d)) {
      r.fail(name, "is not the text of a finite number");
    }
    return d;
  }
  if (is_signed_integer(dtype)) {
    if (v.is_int64()) return v.get_int64();
    r.fail(name, "is not an integer of 64 bits");
  }
  if (v.is_uint64()) return v.get_uint64();
  if (v.is_int64() && v.get_int64() >= 0) return static_cast<std::uint64_t>(v.get_int64());
  r.fail(name, "is not an integer >= 0 of 64 bits");
}

}  // namespace

std::optional<LeafStats> leaf_stats_of(const std::vector<ShardRecord>& shards) noexcept {
  std::optional<LeafStats> out;
  for (const ShardRecord& shard : shards) {
    if (!shard.stats) return std::nullopt;
    out = out ? merge_stats(*out, *shard.stats) : *shard.stats;
  }
  return out;
}

void put_stats(base::Packed& out, const std::optional<LeafStats>& stats) {
  if (!stats) {
    out.put_byte(0);
    return;
  }
  out.put_byte(stats->min ? 2 : 1);
  if (stats->min) {
    put_value(out, *stats->min);
    put_value(out, *stats->max);
  }
  out.put(stats->nan_count);
  out.put(stats->inf_count);
}

std::optional<LeafStats> take_stats(base::Unpacked& in) {
  const std::uint8_t kind = in.take_byte();
  if (kind == 0) return std::nullopt;
  if (kind > 2) throw Error(ErrorCode::internal, "the statistics of a shard are of no kind");
  LeafStats stats;
  if (kind == 2) {
    stats.min = take_value(in);
    stats.max = take_value(in);
  }
  stats.nan_count = in.take();
  stats.inf_count = in.take();
  return stats;
}

json::value stats_to_json(const LeafStats& stats, DType dtype) {
  json::object o;
  if (stats.min) {
    o["min"] = value_to_json(*stats.min);
    o["max"] = value_to_json(*stats.max);
  }
  if (is_floating(dtype)) {
    o["nan"] = stats.nan_count;
    o["inf"] = stats.inf_count;
  }
  return o;
}

LeafStats stats_from_json(const FieldReader& r, const json::object& o, DType dtype) {
  if (!ValueStats::kept_for(dtype)) r.fail("", "appears on a leaf of a dtype without statistics");
  LeafStats stats;
  if (o.contains("min") || o.contains("max")) {
    stats.min = value_from_json(r, o, "min", dtype);
    stats.max = value_from_json(r, o, "max", dtype);
    if (*stats.max < *stats.min) r.fail("max", "is smaller than \"min\"");
  }
  if (is_floating(dtype)) {
    constexpr auto kMost = std::numeric_limits<std::int64_t>::max();
    stats.nan_count = static_cast<std::uint64_t>(r.integer(o, "nan", 0, kMost));
    stats.inf_count = static_cast<std::uint64_t>(r.integer(o, "inf", 0, kMost));
  }
  return stats;
}

}  // namespace cairn::storage
