// libFuzzer target: the parser of the COMMITTED marker (checkpoint::parse_commit_marker). Any
// input must give a list of files inside the checkpoint directory or a cairn::Error.
#include <cairn/error.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "checkpoint/manifest.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    for (const auto& entry : cairn::checkpoint::parse_commit_marker(text, "fuzz/COMMITTED")) {
      if (entry.path.empty() || entry.path.front() == '/' || entry.path == ".." ||
          entry.path.starts_with("../") || entry.path.find("/../") != std::string::npos ||
          entry.path.ends_with("/..")) {
        std::abort();
      }
    }
  } catch (const cairn::Error&) {
  }
  return 0;
}
