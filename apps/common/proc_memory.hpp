// Memory counters of this process from /proc (Linux): shared by the benchmark driver and the
// memory tests. Header-only, standard library only.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

namespace cairn_app {

/// The /proc/self/status counter `key` (e.g. VmRSS: resident now, VmHWM: peak resident since
/// the last reset_peak_rss(), VmSize) in bytes; -1 when the key is missing. Local.
inline std::int64_t status_bytes(const std::string& key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stoll(line.substr(key.size() + 1)) * 1024;
  }
  return -1;
}

/// Restarts this process's VmHWM peak from its current RSS (writes 5 to
/// /proc/self/clear_refs). Returns false when that is not permitted. Local.
inline bool reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return clear.good();
}

/// The peak resident memory during one call and its growth over the resident memory before it.
struct PeakRss {
  std::int64_t peak = -1;    ///< VmHWM after the call; -1 when the peak could not be reset
  std::int64_t growth = -1;  ///< peak minus VmRSS before the call; -1 likewise
};

/// Resets the peak, runs `body`, and returns this process's PeakRss of it. Local.
template <class Body>
PeakRss measure_peak_rss(Body&& body) {
  const bool reset = reset_peak_rss();
  const std::int64_t before = status_bytes("VmRSS");
  body();
  if (!reset) return {};
  const std::int64_t peak = status_bytes("VmHWM");
  return {peak, peak - before};
}

}  // namespace cairn_app
