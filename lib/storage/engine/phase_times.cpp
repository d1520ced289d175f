#include "storage/engine/phase_times.hpp"

#include <fmt/format.h>

#include "storage/stream/checksum.hpp"

namespace cairn::storage {

namespace {
double seconds_between(std::chrono::steady_clock::time_point from,
                       std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}
}  // namespace

PhaseTimes::PhaseTimes() noexcept
    : start_(std::chrono::steady_clock::now()),
      last_(start_),
      checksum_start_(checksum_nanoseconds()) {}

void PhaseTimes::lap(std::string_view phase) {
  const auto now = std::chrono::steady_clock::now();
  const std::lock_guard lock(mutex_);
  phases_.emplace_back(std::string(phase), seconds_between(last_, now));
  last_ = now;
}

std::string PhaseTimes::text() const {
  const std::lock_guard lock(mutex_);
  std::string out;
  for (const auto& [phase, seconds] : phases_) out += fmt::format("{}_s={:.6f} ", phase, seconds);
  const double hashing = static_cast<double>(checksum_nanoseconds() - checksum_start_) * 1e-9;
  out += fmt::format("checksum_s={:.6f} total_s={:.6f}", hashing, seconds_between(start_, last_));
  return out;
}

}  // namespace cairn::storage
