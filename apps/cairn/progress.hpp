// cairn (the command-line tool) — progress of long commands on the primary rank's stderr.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cairn_tool {

/// A progress bar on stderr, redrawn in place: shown only when enabled (no --quiet) and
/// stderr is a terminal, so that logs and pipes get the plain report alone. Only the caller
/// that passes `primary` = true draws. Never throws beyond std::bad_alloc.
class Progress {
 public:
  Progress(bool enabled, bool primary);
  /// Draws "[####    ] done/total unit  label"; unit "bytes" prints sizes ("1.5 MiB").
  void update(const std::string& label, std::uint64_t done, std::uint64_t total,
              std::string_view unit) const;
  /// Erases the bar (before printing a line of the report).
  void clear() const;

 private:
  bool enabled_;
};

}  // namespace cairn_tool
