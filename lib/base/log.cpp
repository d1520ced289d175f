#include "base/log.hpp"

#include <mpi.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <string>

namespace cairn {
namespace {

LogLevel level_from_environment() noexcept {
  const char* value = std::getenv("CAIRN_LOG_LEVEL");
  if (value == nullptr) return LogLevel::warn;
  return parse_log_level(value).value_or(LogLevel::warn);
}

bool all_ranks_from_environment() noexcept {
  const char* value = std::getenv("CAIRN_LOG_ALL_RANKS");
  return value != nullptr && std::string_view(value) == "1";
}

std::atomic<LogLevel>& current_level() noexcept {
  static std::atomic<LogLevel> level{level_from_environment()};
  return level;
}

std::atomic<bool>& all_ranks() noexcept {
  static std::atomic<bool> all{all_ranks_from_environment()};
  return all;
}

int world_rank() noexcept {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return -1;
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

spdlog::level::level_enum to_spdlog(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::trace: return spdlog::level::trace;
    case LogLevel::debug: return spdlog::level::debug;
    case LogLevel::info: return spdlog::level::info;
    case LogLevel::warn: return spdlog::level::warn;
    case LogLevel::error: return spdlog::level::err;
    case LogLevel::off: return spdlog::level::off;
  }
  return spdlog::level::off;
}

spdlog::logger& logger() {
  // A private logger (not registered globally) so cairn never touches the application's
  // spdlog configuration.
  static auto instance = [] {
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    auto made = std::make_shared<spdlog::logger>("cairn", sink);
    made->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ cairn %v", spdlog::pattern_time_type::utc);
    made->set_level(spdlog::level::trace);
    return made;
  }();
  return *instance;
}

}  // namespace

void set_log_level(LogLevel level) noexcept { current_level().store(level); }
LogLevel log_level() noexcept { return current_level().load(); }
void set_log_all_ranks(bool all) noexcept { all_ranks().store(all); }

std::optional<LogLevel> parse_log_level(std::string_view name) noexcept {
  std::string lower;
  for (char c : name)
    lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (lower == "trace") return LogLevel::trace;
  if (lower == "debug") return LogLevel::debug;
  if (lower == "info") return LogLevel::info;
  if (lower == "warn" || lower == "warning") return LogLevel::warn;
  if (lower == "error") return LogLevel::error;
  if (lower == "off" || lower == "none") return LogLevel::off;
  return std::nullopt;
}

namespace base::log {

bool enabled(LogLevel level) noexcept {
  if (level == LogLevel::off || level < current_level().load()) return false;
  if (level >= LogLevel::warn || all_ranks().load()) return true;
  const int rank = world_rank();
  return rank <= 0;
}

void write(LogLevel level, std::string_view event, std::string_view fields) noexcept {
  try {
    const char* names[] = {"trace", "debug", "info", "warn", "error", "off"};
    logger().log(to_spdlog(level), "rank={} level={} event={} {}", world_rank(),
                 names[static_cast<int>(level)], event, fields);
  } catch (...) {
    // Logging must never turn into a failure of the operation being logged.
  }
}

}  // namespace base::log
}  // namespace cairn
