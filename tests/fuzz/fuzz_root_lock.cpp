// libFuzzer target: cairn::read_root_lock() and root_lock_holder() on a hostile cairn.lock.
// Each input is written as the lock file of a root; reading it never throws, and a file
// that is not a JSON object is reported as a problem with its text, and as stale (no running
// job has a damaged lock, so a manager and `cairn gc` take it over).
#include <unistd.h>

#include <cairn/checkpoint_root.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace {

// A root of this process; removed when the process exits.
class Scratch {
 public:
  Scratch()
      : root_(std::filesystem::temp_directory_path() /
              ("cairn-fuzz-root-lock-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(root_);
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  [[nodiscard]] const std::filesystem::path& root() const { return root_; }

 private:
  std::filesystem::path root_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const Scratch scratch;
  {
    std::ofstream out(scratch.root() / "cairn.lock", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  const auto lock = cairn::read_root_lock(scratch.root());
  const auto holder = cairn::root_lock_holder(scratch.root());
  if (!lock || !holder) std::abort();  // the file exists: the root is locked
  if (lock->problem.empty() && lock->text.size() != size) std::abort();
  if (!lock->problem.empty() && lock->alive != std::optional<bool>(false)) std::abort();
  return 0;
}
