// libFuzzer target: the parser of cairn-tree.json (storage::parse_index). Any input must give
// an index or a cairn::Error; an index that parses must survive a round trip through its JSON
// form unchanged.
#include <boost/json.hpp>
#include <cairn/error.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "storage/index/tree_index.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  cairn::storage::TreeIndex index;
  try {
    index = cairn::storage::parse_index(text, "fuzz/cairn-tree.json");
  } catch (const cairn::Error&) {
    return 0;
  }
  const auto json = cairn::storage::to_json(index);
  const auto again = cairn::storage::index_from_json(json, "fuzz/round-trip");
  if (cairn::storage::to_json(again) != json) std::abort();
  return 0;
}
