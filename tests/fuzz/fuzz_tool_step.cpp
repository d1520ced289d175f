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

// A checkpoint directory of this process, with its COMMITTED marker and one item directory;
// removed when the process exits.
class Scratch {
 public:
  Scratch()
      : top_(std::filesystem::temp_directory_path() /
             ("cairn-fuzz-tool-step-" + std::to_string(::getpid()))),
        dir_(top_ / "10") {
    std::filesystem::create_directories(dir_ / "run");
    std::ofstream(dir_ / cairn::kCommitMarker) << "{}";
    std::ofstream(dir_ / "run" / "value.json") << "{\"nx\": 16}";
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(top_, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  [[nodiscard]] const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path top_;
  std::filesystem::path dir_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const Scratch scratch;
  const auto& dir = scratch.dir();
  {
    std::ofstream out(dir / cairn::kStepMetadataFile, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  // Both are documented never to throw beyond std::bad_alloc: any other exception escapes
  // and libFuzzer reports it.
  const auto ckpt = cairn_tool::read_checkpoint(dir);
  const auto summary = cairn_tool::step_summary(ckpt);
  if (!ckpt.step && ckpt.problems.empty()) std::abort();  // damage must be reported
  if (summary.find("handler:") == std::string::npos) std::abort();
  return 0;
}
