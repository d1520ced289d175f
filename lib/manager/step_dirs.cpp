#include "manager/step_dirs.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cairn/checkpoint_root.hpp>
#include <cairn/checkpointer.hpp>
#include <cairn/error.hpp>
#include <cairn/storage.hpp>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <fstream>

#include "base/durable_file.hpp"
#include "base/log.hpp"
#include "checkpoint/step_metadata.hpp"
#include "manager/root_metadata.hpp"

namespace cairn::manager {
namespace {

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

// State and start time (clock ticks since boot) of process `pid` from /proc, or std::nullopt
// when it does not exist. A process that exited but was not reaped (state Z) counts as gone.
struct ProcessStat {
  char state = '?';
  std::string start_time;
};

std::optional<ProcessStat> process_stat(long long pid) {
  // /proc files report size 0, so they are read as a stream.
  std::ifstream file(fmt::format("/proc/{}/stat", pid));
  std::string text;
  if (!file || !std::getline(file, text)) return std::nullopt;
  // The command name is in parentheses and may hold spaces: fields start after the last ')'.
  const auto close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::vector<std::string> fields;
  std::string field;
  for (char c : text.substr(close + 2)) {
    if (c == ' ') {
      fields.push_back(field);
      field.clear();
    } else {
      field += c;
    }
  }
  fields.push_back(field);
  if (fields.size() < 20) return std::nullopt;
  return ProcessStat{fields[0].empty() ? '?' : fields[0][0], fields[19]};
}

bool process_gone(long long pid, const std::string& start_time) {
  const auto stat = process_stat(pid);
  if (!stat) return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
  if (stat->state == 'Z' || stat->state == 'X') return true;
  // A new process that got the same pid is not the lock holder.
  return !start_time.empty() && stat->start_time != start_time;
}

std::string slurm_job_id() {
  const char* id = std::getenv("SLURM_JOB_ID");
  return id ? id : "";
}

}  // namespace

std::vector<std::int64_t> list_committed_steps(const std::filesystem::path& root,
                                               const StepNameFormat& naming) {
  std::vector<std::int64_t> steps;
  std::error_code ec;
  if (!std::filesystem::is_directory(root, ec)) return steps;
  for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
    const auto step = naming.parse_name(entry.path().filename().string());
    if (step && is_committed(entry.path())) steps.push_back(*step);
  }
  if (ec) {
    throw IoError(root.string(), fmt::format("listing checkpoint root '{}' failed: {}",
                                             root.string(), ec.message()));
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

std::vector<std::filesystem::path> leftover_paths(const std::filesystem::path& root) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with(kTmpSuffix) || name.ends_with(kDeletingSuffix) ||
        name.ends_with(".cairn-old")) {
      out.push_back(entry.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

void acquire_lock(const std::filesystem::path& root, std::chrono::seconds lease) {
  const auto file = root / kLockFile;
  const std::string host = host_name();
  const std::string job = slurm_job_id();
  // The lock is written whole under a name of this process, then linked to the lock name:
  // link() fails when a lock exists, so of two jobs that start together only one gets it,
  // and no job ever reads a half-written lock.
  const auto self = process_stat(::getpid());
  const boost::json::object lock = {{"host", host},
                                    {"pid", static_cast<std::int64_t>(::getpid())},
                                    {"start_time", self ? self->start_time : std::string()},
                                    {"slurm_job_id", job},
                                    {"lease_seconds", static_cast<std::int64_t>(lease.count())}};
  const auto mine_file = root / fmt::format("{}.{}-{}.new", kLockFile, host, ::getpid());
  base::write_file_durably(mine_file, boost::json::serialize(lock));
  struct RemoveMine {
    const std::filesystem::path& path;
    ~RemoveMine() {
      std::error_code ignored;
      std::filesystem::remove(path, ignored);
    }
  } remove_mine{mine_file};
  if (::link(mine_file.c_str(), file.c_str()) == 0) return;
  const int link_error = errno;
  // File systems without hard links: the check below and the rename are not atomic there.
  const bool no_links = link_error == EPERM || link_error == EOPNOTSUPP || link_error == EXDEV;
  if (link_error != EEXIST && !no_links) {
    throw IoError(file.string(), fmt::format("creating the lock '{}' failed: {}", file.string(),
                                             std::strerror(link_error)));
  }
  // The judgement `cairn gc` makes too (read_root_lock()): a lock is taken over when it is
  // this job's, or known stale (its process gone from this host, or a damaged file).
  if (const auto held = read_root_lock(root)) {
    if (held->alive == std::nullopt && !held->problem.empty()) {
      throw IoError(file.string(), held->problem);
    }
    const bool same_job = !job.empty() && job == held->slurm_job_id;
    const bool mine = held->host == host && held->pid == ::getpid();
    if (!(same_job || mine || held->alive == std::optional<bool>(false))) {
      throw InvalidArgument(fmt::format(
          "checkpoint root '{}' is locked by another job (host {}, pid {}{}): two jobs must not "
          "write the same root. If that job is gone, remove '{}'",
          root.string(), held->host, held->pid,
          held->slurm_job_id.empty() ? std::string() : ", Slurm job " + held->slurm_job_id,
          file.string()));
    }
    if (!same_job && !mine && held->lease.count() > 0 &&
        held->seconds_since_renewal > static_cast<double>(held->lease.count())) {
      base::log::warn(
          "manager.lock_taken_over",
          "path=\"{}\" host={} pid={}{} why=\"not renewed for {:.0f} s, longer than "
          "its lease of {} s\"",
          file.string(), held->host, held->pid,
          held->slurm_job_id.empty() ? std::string() : " slurm_job_id=" + held->slurm_job_id,
          held->seconds_since_renewal, held->lease.count());
    } else {
      base::log::info("manager.lock_taken_over", "path=\"{}\" host={} pid={}{}", file.string(),
                      held->host, held->pid,
                      held->problem.empty() ? std::string() : " problem=\"" + held->problem + "\"");
    }
  }
  std::filesystem::rename(mine_file, file);
}

LockRenewal::LockRenewal(std::filesystem::path root, std::chrono::seconds lease) {
  const auto every = std::max(std::chrono::milliseconds(lease) / 4, std::chrono::milliseconds(50));
  thread_ = std::thread([this, root = std::move(root), every] {
    const auto file = root / kLockFile;
    std::unique_lock lock(mutex_);
    while (!stop_signal_.wait_for(lock, every, [this] { return stop_; })) {
      try {
        // Renewed only while it is this process's lock.
        const auto held = read_root_lock(root);
        if (!held || held->pid != ::getpid() || held->host != host_name()) continue;
        std::filesystem::last_write_time(file, std::filesystem::file_time_type::clock::now());
      } catch (const std::exception& e) {
        base::log::warn("manager.lock_renewal_failed", "path=\"{}\" error=\"{}\"", file.string(),
                        e.what());
      }
    }
  });
}

LockRenewal::~LockRenewal() {
  {
    const std::scoped_lock lock(mutex_);
    stop_ = true;
  }
  stop_signal_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void release_lock(const std::filesystem::path& root) noexcept {
  try {
    const auto file = root / kLockFile;
    boost::system::error_code jec;
    const auto held = boost::json::parse(base::read_small_file(file, 1 << 16), jec);
    const auto* o = held.if_object();
    const auto* pid = o ? o->if_contains("pid") : nullptr;
    if (pid && pid->is_int64() && pid->get_int64() == ::getpid()) {
      std::error_code ec;
      std::filesystem::remove(file, ec);
    }
  } catch (...) {
    // A lock that cannot be read is left alone.
  }
}

std::optional<std::filesystem::path> delete_step_dir(
    const std::filesystem::path& root, const std::string& name,
    const std::optional<std::string>& todelete_subdir, bool defer) {
  const auto dir = root / name;
  std::error_code ec;
  if (todelete_subdir) {
    const auto target_dir = root / *todelete_subdir;
    base::create_directories(target_dir);
    std::filesystem::rename(dir, target_dir / name, ec);
    if (ec) {
      throw IoError(dir.string(), fmt::format("moving '{}' into '{}' failed: {}", dir.string(),
                                              target_dir.string(), ec.message()));
    }
    return std::nullopt;
  }
  auto doomed = dir;
  doomed += kDeletingSuffix;
  std::filesystem::remove_all(doomed, ec);
  std::filesystem::rename(dir, doomed, ec);
  if (ec) {
    throw IoError(dir.string(),
                  fmt::format("deleting '{}' failed: {}", dir.string(), ec.message()));
  }
  base::sync_directory(root);
  if (defer) return doomed;
  std::filesystem::remove_all(doomed, ec);
  if (ec) {
    throw IoError(doomed.string(),
                  fmt::format("removing '{}' failed: {}", doomed.string(), ec.message()));
  }
  return std::nullopt;
}

bool is_quarantine_name(std::string_view name, std::string* base) {
  const auto at = name.rfind(kQuarantineInfix);
  if (at == std::string_view::npos || at == 0) return false;
  const std::string_view number = name.substr(at + std::string_view(kQuarantineInfix).size());
  if (number.empty() || number.find_first_not_of("0123456789") != std::string_view::npos) {
    return false;
  }
  if (base != nullptr) *base = std::string(name.substr(0, at));
  return true;
}

std::filesystem::path quarantine_step_dir(const std::filesystem::path& root,
                                          const std::string& name) {
  const auto dir = root / name;
  std::error_code ec;
  for (int n = 1;; ++n) {
    const auto target = root / fmt::format("{}{}{}", name, kQuarantineInfix, n);
    if (std::filesystem::exists(target, ec)) continue;
    std::filesystem::rename(dir, target, ec);
    if (ec) {
      throw IoError(dir.string(),
                    fmt::format("moving the damaged step '{}' aside to '{}' failed: {}",
                                dir.string(), target.string(), ec.message()));
    }
    base::sync_directory(root);
    return target;
  }
}

std::string misplaced_root_reason(const std::filesystem::path& root, bool require_root_or_empty) {
  // New steps inside a checkpoint would become part of it: restoring or verifying that
  // checkpoint would not notice them, and deleting it would delete them.
  if (const auto in = enclosing_cairn_directory(root); in && in->kind != CairnDirectoryKind::root) {
    if (in->kind == CairnDirectoryKind::temporary) {
      return fmt::format(
          "'{}' is {}a checkpoint being saved or deleted ('{}'), not a checkpoint root; use a "
          "directory outside any checkpoint",
          root.string(), in->is_given_path ? "" : "inside ", in->path.string());
    }
    if (in->is_given_path) {
      return fmt::format(
          "'{}' is a checkpoint (it holds {} or {}), not a checkpoint root: open the root it "
          "belongs to ('{}') to restore it, or use a directory outside any checkpoint",
          root.string(), kStepMetadataFile, kCommitMarker, in->path.parent_path().string());
    }
    return fmt::format(
        "'{}' is inside the checkpoint '{}' (an item of it, or a directory in one), not a "
        "checkpoint root; use a directory outside any checkpoint",
        root.string(), in->path.string());
  }
  std::error_code ec;
  if (!require_root_or_empty || !std::filesystem::is_directory(root, ec)) return {};
  if (is_checkpoint_root(root)) return {};
  // A lock left by a manager that wrote no root metadata is the root's too.
  std::optional<std::string> foreign;
  for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(kLockFile) && !foreign) foreign = name;
  }
  if (!foreign) return {};
  return fmt::format(
      "'{}' is not empty (it holds '{}') and is not a checkpoint root (no {}, no step "
      "directory): use an empty or new directory, or set allow_non_empty_root to write "
      "checkpoints there",
      root.string(), *foreign, kRootMetadataFile);
}

}  // namespace cairn::manager

namespace cairn {
namespace {

// The step number at the end of `name`, or std::nullopt.
std::optional<std::int64_t> trailing_step(std::string_view name) {
  std::size_t first = name.size();
  while (first > 0 && name[first - 1] >= '0' && name[first - 1] <= '9') --first;
  const std::string_view digits = name.substr(first);
  if (digits.empty() || digits.size() > 18) return std::nullopt;
  std::int64_t step = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), step);
  return step;
}

// What the files of a directory whose name is a step's make of it.
enum class Probe : std::uint8_t { committed, incomplete, unmarked, unreadable };

Probe probe_step(const std::filesystem::path& dir) {
  std::error_code ec;
  const bool marker = std::filesystem::exists(dir / kCommitMarker, ec);
  if (ec) return Probe::unreadable;
  if (marker) return Probe::committed;
  const bool step_file = std::filesystem::exists(dir / kStepMetadataFile, ec);
  if (ec) return Probe::unreadable;
  return step_file ? Probe::incomplete : Probe::unmarked;
}

}  // namespace

namespace manager {

StepNameFormatPtr recorded_step_name_format(const std::filesystem::path& root) {
  boost::json::object metadata;
  try {
    metadata = read_root_metadata(root);
  } catch (const Error&) {
    return nullptr;
  }
  if (const auto* format = metadata.if_contains("step_name_format")) {
    return format->is_string() ? step_name_format_from_description(format->get_string()) : nullptr;
  }
  const auto* prefix = metadata.if_contains("step_prefix");
  return prefix && prefix->is_string() ? step_name_format::joined(std::string(prefix->get_string()))
                                       : nullptr;
}

}  // namespace manager

std::string_view step_status_name(StepStatus status) noexcept {
  switch (status) {
    case StepStatus::committed: return "committed";
    case StepStatus::incomplete: return "incomplete";
    case StepStatus::deleting: return "being deleted";
    case StepStatus::quarantined: return "quarantined";
    case StepStatus::unreadable: return "unreadable";
  }
  return "unknown";
}

std::vector<StepDirectory> list_step_directories(const std::filesystem::path& root) {
  std::error_code ec;
  if (!std::filesystem::is_directory(root, ec)) {
    throw NotFound(root.string(), fmt::format("'{}' is not a directory", root.string()));
  }
  // A name is a step's when the root's step name format parses it (any trailing digits when
  // the root records none of cairn's formats).
  const StepNameFormatPtr naming = manager::recorded_step_name_format(root);
  const auto step_of = [&](std::string_view name) {
    return naming ? naming->parse_name(name) : trailing_step(name);
  };
  std::vector<StepDirectory> out;
  const auto list = [&](const std::filesystem::path& dir, const auto& visit) {
    std::error_code lec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, lec)) {
      std::error_code dec;
      if (entry.is_directory(dec)) visit(entry.path());
    }
    if (lec) {
      throw IoError(dir.string(),
                    fmt::format("listing '{}' failed: {}", dir.string(), lec.message()));
    }
  };
  list(root, [&](const std::filesystem::path& path) {
    std::string name = path.filename().string();
    if (std::string base; manager::is_quarantine_name(name, &base)) {
      const auto step = step_of(base);
      // Loose: a step was quarantined because it did not restore, its marker perhaps too.
      if (step && looks_like_checkpoint_directory(path)) {
        out.push_back({.path = path, .step = *step, .status = StepStatus::quarantined});
      }
      return;
    }
    StepDirectory found{.path = path};
    for (const char* suffix : {kTmpSuffix, manager::kDeletingSuffix, ".cairn-old"}) {
      if (name.ends_with(suffix)) {
        name.resize(name.size() - std::string_view(suffix).size());
        found.temporary = true;
        found.status =
            std::string_view(suffix) == kTmpSuffix ? StepStatus::incomplete : StepStatus::deleting;
      }
    }
    if (const auto step = step_of(name)) {
      found.step = *step;
      if (!found.temporary) {
        // Only cairn's own files make a directory with a step's name a step.
        switch (probe_step(path)) {
          case Probe::committed: found.status = StepStatus::committed; break;
          case Probe::incomplete: found.status = StepStatus::incomplete; break;
          case Probe::unreadable: found.status = StepStatus::unreadable; break;
          case Probe::unmarked: return;
        }
      }
      out.push_back(std::move(found));
      return;
    }
    std::error_code rec;
    if (found.temporary || std::filesystem::exists(path / manager::kRootMetadataFile, rec)) return;
    // Any other directory holding step directories (but not a root of its own) is where
    // deleted steps were moved. Strict, since `cairn gc` removes what is listed there: a
    // user's directory that holds a file named COMMITTED is no step.
    list(path, [&](const std::filesystem::path& inner) {
      const auto inner_step = step_of(inner.filename().string());
      if (inner_step && is_checkpoint_directory(inner)) {
        out.push_back({.path = inner,
                       .step = *inner_step,
                       .status = StepStatus::deleting,
                       .temporary = true});
      }
    });
  });
  std::sort(out.begin(), out.end(), [](const StepDirectory& a, const StepDirectory& b) {
    return a.step != b.step ? a.step < b.step : a.path < b.path;
  });
  return out;
}

std::optional<CairnDirectory> enclosing_cairn_directory(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::absolute(path, ec);
  if (ec) dir = path;
  // Links are followed as a write would follow them; a path that cannot be resolved (a
  // directory this user may not search) is judged as written.
  if (auto resolved = std::filesystem::weakly_canonical(dir, ec); !ec) {
    dir = std::move(resolved);
  } else {
    dir = dir.lexically_normal();
  }
  if (dir.filename().empty() && dir.has_parent_path()) dir = dir.parent_path();
  std::optional<CairnDirectory> root;
  for (auto p = dir;; p = p.parent_path()) {
    const std::string name = p.filename().string();
    const bool temporary = name.ends_with(kTmpSuffix) || name.ends_with(manager::kDeletingSuffix) ||
                           name.ends_with(".cairn-old");
    if (temporary || looks_like_checkpoint_directory(p)) {
      return CairnDirectory{
          .kind = temporary ? CairnDirectoryKind::temporary : CairnDirectoryKind::checkpoint,
          .path = p,
          .is_given_path = p == dir};
    }
    if (!root && (std::filesystem::exists(p / manager::kRootMetadataFile, ec) ||
                  std::filesystem::exists(p / manager::kLockFile, ec))) {
      root = CairnDirectory{.kind = CairnDirectoryKind::root, .path = p, .is_given_path = p == dir};
    }
    if (!p.has_parent_path() || p.parent_path() == p) break;
  }
  return root;
}

bool is_checkpoint_root(const std::filesystem::path& path) noexcept {
  try {
    std::error_code ec;
    if (!std::filesystem::is_directory(path, ec) || looks_like_checkpoint_directory(path)) {
      return false;
    }
    if (std::filesystem::exists(path / manager::kRootMetadataFile, ec)) return true;
    // Steps of its own: those moved into a sub-directory (todelete_subdir) do not make a
    // directory that holds another root one.
    const auto steps = list_step_directories(path);
    return std::any_of(steps.begin(), steps.end(),
                       [&](const StepDirectory& step) { return step.path.parent_path() == path; });
  } catch (...) {
    return false;
  }
}

std::optional<RootLock> read_root_lock(const std::filesystem::path& root) {
  RootLock lock;
  lock.file = root / manager::kLockFile;
  std::error_code ec;
  if (!std::filesystem::exists(lock.file, ec)) return std::nullopt;
  try {
    lock.text = base::read_small_file(lock.file, 1 << 16);
  } catch (const std::exception& e) {
    lock.problem = fmt::format("unreadable lock file '{}': {}", lock.file.string(), e.what());
    return lock;
  }
  boost::system::error_code jec;
  const auto held = boost::json::parse(lock.text, jec);
  const auto* o = held.if_object();
  if (jec || o == nullptr) {
    // A lock is written whole under another name and then linked: a damaged one is no
    // running job's.
    lock.problem = fmt::format("damaged lock file '{}'", lock.file.string());
    lock.alive = false;
    return lock;
  }
  const auto text = [&](const char* key) -> std::string {
    const auto* v = o->if_contains(key);
    return v && v->is_string() ? std::string(v->get_string()) : std::string();
  };
  lock.host = text("host");
  lock.slurm_job_id = text("slurm_job_id");
  if (const auto* v = o->if_contains("pid"); v && v->is_int64()) lock.pid = v->get_int64();
  if (const auto* v = o->if_contains("lease_seconds"); v && v->is_int64() && v->get_int64() > 0) {
    lock.lease = std::chrono::seconds(v->get_int64());
  }
  const auto renewed = std::filesystem::last_write_time(lock.file, ec);
  if (!ec) {
    lock.seconds_since_renewal =
        std::chrono::duration<double>(std::filesystem::file_time_type::clock::now() - renewed)
            .count();
  }
  // The judgement acquire_lock() makes before taking a lock over.
  if (!lock.host.empty() && lock.host == manager::host_name() && lock.pid > 0) {
    lock.alive = !manager::process_gone(lock.pid, text("start_time"));
  }
  if (lock.alive != std::optional<bool>(false) && lock.lease.count() > 0 && !ec &&
      lock.seconds_since_renewal > static_cast<double>(lock.lease.count())) {
    lock.alive = false;  // not renewed within its lease: its job is gone, from any host
  }
  return lock;
}

std::optional<std::string> root_lock_holder(const std::filesystem::path& root) {
  const auto lock = read_root_lock(root);
  if (!lock) return std::nullopt;
  if (!lock->problem.empty()) return lock->problem;
  std::string holder = fmt::format("host {}, pid {}", lock->host.empty() ? "?" : lock->host,
                                   lock->pid > 0 ? std::to_string(lock->pid) : "?");
  if (!lock->slurm_job_id.empty()) holder += ", Slurm job " + lock->slurm_job_id;
  return holder;
}

FormatVersions format_versions() noexcept {
  return {.step = checkpoint::kStepFormatVersion,
          .tree = tree_format_version(),
          .root = manager::kRootFormatVersion};
}

}  // namespace cairn
