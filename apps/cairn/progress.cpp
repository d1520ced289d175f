#include "progress.hpp"

#include <unistd.h>

#include <cstdio>
#include <fmt/format.h>

#include "checkpoint_dir.hpp"

namespace cairn_tool {

Progress::Progress(bool enabled, bool primary)
    : enabled_(enabled && primary && ::isatty(STDERR_FILENO) == 1) {}

void Progress::update(const std::string& label, std::uint64_t done, std::uint64_t total,
                      std::string_view unit) const {
  if (!enabled_) return;
  constexpr std::uint64_t kWidth = 30;
  const std::uint64_t filled = total == 0 ? kWidth : std::min(done, total) * kWidth / total;
  const std::string count = unit == "bytes"
                                ? fmt::format("{}/{}", human_bytes(done), human_bytes(total))
                                : fmt::format("{}/{} {}", done, total, unit);
  fmt::print(stderr, "\r  [{}{}] {}  {}\033[K", std::string(filled, '#'),
             std::string(kWidth - filled, ' '), count, label);
  std::fflush(stderr);
}

void Progress::clear() const {
  if (!enabled_) return;
  fmt::print(stderr, "\r\033[K");
  std::fflush(stderr);
}

}  // namespace cairn_tool
