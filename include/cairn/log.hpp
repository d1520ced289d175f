// cairn — logging controls. cairn logs one line per event ("key=value" fields) to stderr.
//
// The level comes from the environment variable CAIRN_LOG_LEVEL (trace, debug, info, warn,
// error, off; default warn) and can be changed at run time. Messages below warn are printed
// by rank 0 of MPI_COMM_WORLD only, unless CAIRN_LOG_ALL_RANKS=1 or set_log_all_ranks(true);
// warnings and errors are printed by every rank, prefixed with the rank.
#pragma once

#include <optional>
#include <string_view>

namespace cairn {

/// Severity of a log line, lowest first.
enum class LogLevel { trace, debug, info, warn, error, off };

/// Sets the level below which cairn prints nothing. Not collective; never throws.
void set_log_level(LogLevel level) noexcept;
/// The current level. Not collective; never throws.
[[nodiscard]] LogLevel log_level() noexcept;
/// Whether messages below warn are printed by every rank (true) or by rank 0 only.
/// Not collective; never throws.
void set_log_all_ranks(bool all_ranks) noexcept;
/// Parses a level name ("info", "WARN", ...); std::nullopt when unknown. Never throws.
[[nodiscard]] std::optional<LogLevel> parse_log_level(std::string_view name) noexcept;

}  // namespace cairn
