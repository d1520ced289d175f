#include "lock.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <fmt/format.h>
#include <set>

namespace cairn_tool {
namespace {

// What squeue says of Slurm job `id`: running (or waiting to run again), gone, or nullopt
// when it cannot tell (no squeue, no controller).
std::optional<bool> slurm_job_alive(const std::string& id, std::string& why) {
  // The id goes into a command line: only what Slurm job ids are made of ("123", "123_4").
  if (id.empty() || id.find_first_not_of("0123456789_") != std::string::npos) {
    why = fmt::format("Slurm job id '{}' is not one squeue can be asked about", id);
    return std::nullopt;
  }
  const std::string command = fmt::format("squeue -h -t all -j {} -o %T 2>&1", id);
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    why = "squeue could not be started";
    return std::nullopt;
  }
  std::string out;
  std::array<char, 512> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) out += buffer.data();
  const int status = ::pclose(pipe);
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  if (code == 127) {
    why = "another host, and squeue is not available to ask Slurm";
    return std::nullopt;
  }
  if (code != 0) {
    // Slurm forgets finished jobs after a while: then the id is unknown to it.
    if (out.find("Invalid job id") != std::string::npos) {
      why = fmt::format("Slurm job {} is not known to Slurm any more (squeue)", id);
      return false;
    }
    why = fmt::format("squeue failed ({})", out.empty() ? "no output" : out);
    return std::nullopt;
  }
  static const std::set<std::string> running = {
      "PENDING",  "RUNNING",     "SUSPENDED",    "COMPLETING", "CONFIGURING", "RESIZING",
      "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "SIGNALING",  "STAGE_OUT",   "STOPPED"};
  const std::string state = out.substr(0, out.find('\n'));
  if (running.contains(state)) {
    why = fmt::format("Slurm job {} is {} (squeue)", id, state);
    return true;
  }
  why = state.empty() ? fmt::format("Slurm job {} is not in the queue (squeue)", id)
                      : fmt::format("Slurm job {} has ended: {} (squeue)", id, state);
  return false;
}

}  // namespace

std::optional<LockReport> read_lock(const std::filesystem::path& root) {
  auto lock = cairn::read_root_lock(root);
  if (!lock) return std::nullopt;
  LockReport report{*lock, lock->alive, {}};
  if (!lock->problem.empty()) {
    report.why = lock->alive.has_value()
                     ? "a damaged lock is no running job's (locks are written whole)"
                     : "the lock file cannot be read";
  } else if (lock->alive.has_value()) {
    // A pid that still exists but is not the holder was given to a newer process.
    const bool reused =
        !*lock->alive && (::kill(static_cast<pid_t>(lock->pid), 0) == 0 || errno == EPERM);
    report.why = *lock->alive ? fmt::format("process {} runs on this host", lock->pid)
                 : reused     ? fmt::format(
                                    "the process that held it is gone; pid {} now belongs to a "
                                        "newer process on this host",
                                    lock->pid)
                          : fmt::format("process {} is gone from this host", lock->pid);
  } else if (!lock->slurm_job_id.empty()) {
    report.alive = slurm_job_alive(lock->slurm_job_id, report.why);
  } else {
    report.why = "held on another host, outside Slurm: cannot tell from here";
  }
  return report;
}

std::string LockReport::text() const {
  if (!lock.problem.empty()) return lock.problem;
  std::string out = fmt::format("host {}, pid {}", lock.host.empty() ? "?" : lock.host,
                                lock.pid > 0 ? std::to_string(lock.pid) : "?");
  if (!lock.slurm_job_id.empty()) out += ", Slurm job " + lock.slurm_job_id;
  const char* verdict = !alive.has_value() ? "running or not: unknown"
                        : *alive           ? "running"
                                           : "STALE";
  return fmt::format("{} ({}: {})", out, verdict, why);
}

boost::json::object LockReport::json() const {
  boost::json::object out = {
      {"file", lock.file.string()},
      {"host", lock.host},
      {"pid", lock.pid},
      {"slurm_job_id", lock.slurm_job_id.empty() ? boost::json::value(nullptr)
                                                 : boost::json::value(lock.slurm_job_id)},
      {"alive", alive.has_value() ? boost::json::value(*alive) : boost::json::value(nullptr)},
      {"stale", stale()},
      {"why", why}};
  if (!lock.problem.empty()) {
    out["problem"] = lock.problem;
    out["text"] = lock.text;
  }
  return out;
}

}  // namespace cairn_tool
