// cairn — the internal logger used by every layer (internal).
//
//   log::info("barrier.done", "name={} seconds={:.3f}", name, seconds);
// prints "cairn rank=0 level=info event=barrier.done name=... seconds=..." to stderr.
#pragma once

#include <cairn/log.hpp>
#include <fmt/format.h>

#include <string_view>
#include <utility>

namespace cairn::base::log {

/// Whether a line at `level` would be printed by this process. Never throws.
[[nodiscard]] bool enabled(LogLevel level) noexcept;
/// Prints one line. Never throws (a failed write is dropped).
void write(LogLevel level, std::string_view event, std::string_view fields) noexcept;

template <typename... Args>
void at(LogLevel level, std::string_view event, fmt::format_string<Args...> format,
        Args&&... args) noexcept {
  if (!enabled(level)) return;
  try {
    write(level, event, fmt::format(format, std::forward<Args>(args)...));
  } catch (...) {
    write(level, event, "(message could not be formatted)");
  }
}

template <typename... Args>
void debug(std::string_view event, fmt::format_string<Args...> format, Args&&... args) noexcept {
  at(LogLevel::debug, event, format, std::forward<Args>(args)...);
}
template <typename... Args>
void info(std::string_view event, fmt::format_string<Args...> format, Args&&... args) noexcept {
  at(LogLevel::info, event, format, std::forward<Args>(args)...);
}
template <typename... Args>
void warn(std::string_view event, fmt::format_string<Args...> format, Args&&... args) noexcept {
  at(LogLevel::warn, event, format, std::forward<Args>(args)...);
}
template <typename... Args>
void error(std::string_view event, fmt::format_string<Args...> format, Args&&... args) noexcept {
  at(LogLevel::error, event, format, std::forward<Args>(args)...);
}
/// A warning about what every rank of a collective call saw alike: a warning on the primary
/// rank (`primary`), a debug line on the others, so that a job prints it once, not once per
/// rank.
template <typename... Args>
void warn_once(bool primary, std::string_view event, fmt::format_string<Args...> format,
               Args&&... args) noexcept {
  at(primary ? LogLevel::warn : LogLevel::debug, event, format, std::forward<Args>(args)...);
}

}  // namespace cairn::base::log
