#include "storage/save_exchange.hpp"

#include <cairn/error.hpp>
#include <fmt/format.h>

#include <boost/json.hpp>
#include <map>
#include <string>

#include "storage/checksum.hpp"

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

json::value record_to_json(std::size_t array_index, const ShardRecord& s) {
  json::object o;
  o["array"] = array_index;
  o["rank"] = s.rank;
  o["offset"] = json::value_from(s.box.offset);
  o["extent"] = json::value_from(s.box.extent);
  o["file"] = s.file;
  o["byte_offset"] = s.byte_offset;
  o["bytes"] = s.bytes;
  std::string sums;
  for (std::uint64_t c : s.checksums) sums += checksum_to_hex(c);
  o["xxh3"] = std::move(sums);
  if (s.compressed()) o["chunk_sizes"] = json::value_from(s.chunk_sizes);
  if (s.has_refs()) {
    json::array refs;  // per chunk: null (its own bytes) or [ref_files position, byte offset]
    for (const ChunkRef& ref : s.chunk_refs) {
      refs.push_back(ref.referenced() ? json::value(json::array{ref.file, ref.byte_offset})
                                      : json::value(nullptr));
    }
    o["chunk_refs"] = std::move(refs);
    o["ref_files"] = json::value_from(s.ref_files);
  }
  return o;
}

ShardRecord record_from_json(const json::object& o) {
  ShardRecord s;
  s.rank = static_cast<int>(o.at("rank").as_int64());
  s.box.offset = json::value_to<std::vector<std::int64_t>>(o.at("offset"));
  s.box.extent = json::value_to<std::vector<std::int64_t>>(o.at("extent"));
  s.file = json::value_to<std::string>(o.at("file"));
  s.byte_offset = json::value_to<std::uint64_t>(o.at("byte_offset"));
  s.bytes = json::value_to<std::uint64_t>(o.at("bytes"));
  const std::string_view sums = o.at("xxh3").as_string();
  for (std::size_t c = 0; c + 16 <= sums.size(); c += 16) {
    s.checksums.push_back(*checksum_from_hex(sums.substr(c, 16)));
  }
  if (const json::value* sizes = o.if_contains("chunk_sizes")) {
    s.chunk_sizes = json::value_to<std::vector<std::uint64_t>>(*sizes);
  }
  if (const json::value* refs = o.if_contains("chunk_refs")) {
    s.ref_files = json::value_to<std::vector<std::string>>(o.at("ref_files"));
    for (const json::value& ref : refs->as_array()) {
      if (ref.is_null()) {
        s.chunk_refs.emplace_back();
        continue;
      }
      s.chunk_refs.push_back({.file = json::value_to<std::uint32_t>(ref.as_array().at(0)),
                              .byte_offset = json::value_to<std::uint64_t>(ref.as_array().at(1))});
    }
  }
  return s;
}

}  // namespace cairn::storage
