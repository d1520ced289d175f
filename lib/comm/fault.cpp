#include "comm/fault.hpp"

#if CAIRN_HAVE_FAULT_INJECTION
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cairn/error.hpp>
#include <cstdlib>
#include <fmt/format.h>
#include <memory>
#include <string>
#include <vector>

#include "comm/log.hpp"

namespace cairn::fault {
namespace {

struct Rule {
  std::string point;
  int rank = -1;  // -1: every rank
  bool kill = false;
  long hit = 0;  // fire at this hit of the point (1-based); 0: every hit
  std::shared_ptr<std::atomic<long>> hits = std::make_shared<std::atomic<long>>(0);
};

std::vector<Rule> parse(std::string_view text) {
  std::vector<Rule> rules;
  while (!text.empty()) {
    const auto comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    Rule rule;
    if (const auto hash = item.rfind('#'); hash != std::string_view::npos) {
      rule.hit = std::atol(std::string(item.substr(hash + 1)).c_str());
      item = item.substr(0, hash);
    }
    if (item.ends_with(":kill")) {
      rule.kill = true;
      item.remove_suffix(5);
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

}  // namespace

void point(std::string_view name) {
  if (rules().empty()) return;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (const Rule& rule : rules()) {
    if (rule.point != name || (rule.rank >= 0 && rule.rank != rank)) continue;
    if (rule.hit > 0 && ++*rule.hits != rule.hit) continue;
    if (rule.kill) {
      log::warn("fault.kill", "point={}", name);
      ::kill(::getpid(), SIGKILL);
    }
    throw IoError("", fmt::format("injected fault at {} on rank {}", name, rank));
  }
}

}  // namespace cairn::fault
#endif
