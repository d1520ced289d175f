// libFuzzer target: the parser of cairn-root.json (manager::parse_root_metadata). Any input
// must give a validated object or a cairn::Error.
#include <boost/json.hpp>
#include <cairn/error.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "manager/root_metadata.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto root = cairn::manager::parse_root_metadata(text, "fuzz/cairn-root.json");
    if (!root.at("step_prefix").is_string() || !root.at("world_size").is_int64()) std::abort();
  } catch (const cairn::Error&) {
  }
  return 0;
}
