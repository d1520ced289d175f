// libFuzzer target: how the cairn command-line tool reads a checkpoint's cairn-step.json
// (cairn_tool::read_checkpoint and the summary `cairn inspect` prints from it). Each input is
// written as the step metadata of a checkpoint directory; reading and describing it must
// never throw (damage is reported as a problem naming the file).
#include <unistd.h>

#include <cairn/checkpointer.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "checkpoint_dir.hpp"

namespace {

// A checkpoint directory of this process, with its COMMITTED marker and one item directory.
const std::filesystem::path& checkpoint_dir() {
  static const std::filesystem::path dir = [] {
    auto path = std::filesystem::temp_directory_path() /
                ("cairn-fuzz-tool-step-" + std::to_string(::getpid())) / "10";
    std::filesystem::create_directories(path / "run");
    std::ofstream(path / cairn::kCommitMarker) << "{}";
    std::ofstream(path / "run" / "value.json") << "{\"nx\": 16}";
    return path;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto& dir = checkpoint_dir();
  {
    std::ofstream out(dir / cairn::kStepMetadataFile, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  // Both are documented never to throw beyond std::bad_alloc: any other exception escapes
  // and libFuzzer reports it.
  const auto ckpt = cairn_tool::read_checkpoint(dir);
  const auto summary = cairn_tool::step_summary(ckpt);
  if (!ckpt.step.value && ckpt.problems.empty()) std::abort();  // damage must be reported
  if (summary.find("handler:") == std::string::npos) std::abort();
  return 0;
}
