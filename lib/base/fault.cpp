#include "base/fault.hpp"

#if CAIRN_HAVE_FAULT_INJECTION
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cairn/error.hpp>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fmt/format.h>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/log.hpp"

namespace cairn::base::fault {
namespace {

enum class Action { raise, kill, error_number, stall };

struct Rule {
  std::string point;
  int rank = -1;  // -1: every rank
  Action action = Action::raise;
  int error_number = 0;    // with Action::error_number
  long stall_ms = 0;       // with Action::stall
  long hit = 0;            // fire at this hit of the point (1-based); 0: every hit
  bool and_later = false;  // also at every hit after `hit`
  std::shared_ptr<std::atomic<long>> hits = std::make_shared<std::atomic<long>>(0);
};

int parse_errno(std::string_view name) {
  if (name == "ENOSPC") return ENOSPC;
  if (name == "EIO") return EIO;
  if (name == "EDQUOT") return EDQUOT;
  return std::atoi(std::string(name).c_str());
}

std::vector<Rule> parse(std::string_view text) {
  std::vector<Rule> rules;
  while (!text.empty()) {
    const auto comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    Rule rule;
    if (const auto hash = item.rfind('#'); hash != std::string_view::npos) {
      std::string_view count = item.substr(hash + 1);
      if (count.ends_with('+')) {
        rule.and_later = true;
        count.remove_suffix(1);
      }
      rule.hit = std::atol(std::string(count).c_str());
      item = item.substr(0, hash);
    }
    if (const auto colon = item.find(':'); colon != std::string_view::npos) {
      const std::string_view action = item.substr(colon + 1);
      if (action == "kill") {
        rule.action = Action::kill;
      } else if (action.starts_with("errno=")) {
        rule.action = Action::error_number;
        rule.error_number = parse_errno(action.substr(6));
      } else if (action.starts_with("stall=")) {
        rule.action = Action::stall;
        rule.stall_ms = std::max(0L, std::atol(std::string(action.substr(6)).c_str()));
      }
      item = item.substr(0, colon);
    }
    const auto at = item.find('@');
    rule.point = std::string(item.substr(0, at));
    if (at != std::string_view::npos && item.substr(at + 1) != "*") {
      rule.rank = std::atoi(std::string(item.substr(at + 1)).c_str());
    }
    if (!rule.point.empty()) rules.push_back(std::move(rule));
  }
  return rules;
}

const std::vector<Rule>& rules() {
  static const std::vector<Rule> parsed = [] {
    const char* value = std::getenv("CAIRN_FAULT");
    return value ? parse(value) : std::vector<Rule>{};
  }();
  return parsed;
}

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

// Whether `rule` fires at this arrival at its point (counting the arrival).
bool fires(const Rule& rule, std::string_view name, int rank) {
  if (rule.point != name || (rule.rank >= 0 && rule.rank != rank)) return false;
  if (rule.hit <= 0) return true;
  const long hit = ++*rule.hits;
  return rule.and_later ? hit >= rule.hit : hit == rule.hit;
}

}  // namespace

void point(std::string_view name) {
  if (rules().empty()) return;
  const int rank = world_rank();
  for (const Rule& rule : rules()) {
    if (rule.action == Action::error_number || !fires(rule, name, rank)) continue;
    if (rule.action == Action::kill) {
      log::warn("fault.kill", "point={}", name);
      ::kill(::getpid(), SIGKILL);
    }
    if (rule.action == Action::stall) {
      // A write that blocks (a hung file system) for a bounded time, then goes on.
      log::warn("fault.stall", "point={} ms={}", name, rule.stall_ms);
      std::this_thread::sleep_for(std::chrono::milliseconds(rule.stall_ms));
      log::warn("fault.stall_end", "point={}", name);
      continue;
    }
    throw IoError("", fmt::format("injected fault at {} on rank {}", name, rank));
  }
}

int error_at(std::string_view name) noexcept {
  if (rules().empty()) return 0;
  const int rank = world_rank();
  for (const Rule& rule : rules()) {
    if (rule.action != Action::error_number || !fires(rule, name, rank)) continue;
    try {
      log::warn("fault.errno", "point={} errno={}", name, rule.error_number);
    } catch (...) {
      // The injected error is what matters, not its log line.
    }
    return rule.error_number;
  }
  return 0;
}

}  // namespace cairn::base::fault
#endif
