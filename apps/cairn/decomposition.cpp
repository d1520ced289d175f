#include "decomposition.hpp"

#include <boost/json.hpp>
#include <cairn/storage.hpp>
#include <fmt/format.h>

#include <cstdint>

namespace cairn_tool {
namespace {

// "(20, 48)" for a JSON array of numbers.
std::string tuple_text(const boost::json::value& numbers) {
  std::string out;
  for (const auto& n : numbers.as_array()) {
    out += fmt::format("{}{}", out.empty() ? "" : ", ", n.to_number<std::int64_t>());
  }
  return "(" + out + (numbers.as_array().size() == 1 ? ",)" : ")");
}

}  // namespace

boost::json::object tree_decomposition(const std::filesystem::path& dir) {
  const boost::json::object index = cairn::read_tree_index_json(dir);
  boost::json::object out;
  for (const auto& value : index.at("leaves").as_array()) {
    const auto& leaf = value.as_object();
    if (leaf.at("kind").as_string() != "array") continue;
    const std::string path(leaf.at("path").as_string());
    const auto* shards = leaf.if_contains("shards");
    if (shards == nullptr) {
      out[path] = nullptr;
      continue;
    }
    boost::json::array blocks;
    for (const auto& shard : shards->as_array()) {
      boost::json::object block;
      for (const char* key : {"rank", "offset", "extent", "file", "byte_offset", "bytes"}) {
        if (const auto* field = shard.as_object().if_contains(key)) block[key] = *field;
      }
      blocks.push_back(std::move(block));
    }
    out[path] = std::move(blocks);
  }
  return out;
}

std::string decomposition_text(const boost::json::object& decomposition) {
  std::string out;
  for (const auto& [path, blocks] : decomposition) {
    if (blocks.is_null()) {
      out += fmt::format("    {}: blocks not recorded (an index older than version 4)\n",
                         std::string_view(path));
      continue;
    }
    const auto& list = blocks.as_array();
    out += fmt::format("    {}: {} block{}\n", std::string_view(path), list.size(),
                       list.size() == 1 ? "" : "s");
    std::size_t k = 0;
    for (const auto& value : list) {
      const auto& block = value.as_object();
      out += fmt::format("      block {}: rank {}, offset {}, shape {}", k++,
                         block.at("rank").to_number<std::int64_t>(), tuple_text(block.at("offset")),
                         tuple_text(block.at("extent")));
      if (const auto* file = block.if_contains("file")) {
        out += fmt::format(", {}", std::string_view(file->as_string()));
      }
      out += "\n";
    }
  }
  return out;
}

}  // namespace cairn_tool
