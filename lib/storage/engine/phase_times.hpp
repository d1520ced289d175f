// cairn — where one save or restore of a tree spends its time on this rank (internal): wall
// seconds per phase, and the seconds this process spent hashing meanwhile (checksum_s, part of
// the phases that write or read). Every save (TreeWriter) and restore_tree() log them at info
// level ("storage.save_phases", "storage.restore_phases"; every rank's with
// CAIRN_LOG_ALL_RANKS=1), which apps/bench/bench_breakdown.py turns into the benchmark's time
// breakdown.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cairn::storage {

/// Safe to use from several threads (the writes of an async save run on a background
/// thread); phases follow one another.
class PhaseTimes {
 public:
  /// Starts the clock of the first phase. Never throws.
  PhaseTimes() noexcept;
  /// Ends the current phase, named `phase`, and starts the next. Never throws beyond
  /// std::bad_alloc.
  void lap(std::string_view phase);
  /// "plan_s=0.012 write_s=1.5 ... checksum_s=0.3 total_s=2.1". Never throws beyond
  /// std::bad_alloc.
  [[nodiscard]] std::string text() const;

 private:
  mutable std::mutex mutex_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_;
  std::uint64_t checksum_start_;
  std::vector<std::pair<std::string, double>> phases_;
};

}  // namespace cairn::storage
