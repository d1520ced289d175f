// libFuzzer target: the parser of cairn-step.json (checkpoint::parse_step_metadata). Any input
// must give a validated object or a cairn::Error.
#include <boost/json.hpp>
#include <cairn/error.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "checkpoint/step_metadata.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto step = cairn::checkpoint::parse_step_metadata(text, "fuzz/cairn-step.json");
    // What the readers rely on after a successful parse.
    if (step.handler.empty() || step.world_size < 1 || !step.json.at("handler").is_string()) {
      std::abort();
    }
  } catch (const cairn::Error&) {
  }
  return 0;
}
