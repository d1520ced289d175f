// CheckpointManager with a node-local level: saves to the local level, drains to the
// persistent level (the root), restores from the fastest level that holds the step.
#include <boost/json.hpp>
#include <cairn/manager.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <span>

#include "base/log.hpp"
#include "manager/levels/level_args.hpp"
#include "manager/levels/level_files.hpp"
#include "manager/levels/local_level.hpp"
#include "manager/step_dirs.hpp"

namespace cairn {

void CheckpointManager::open_local_level() {
  const LocalLevelOptions& level = *options_.local_level;
  // The local directory must not be inside the root, where its steps would be taken for
  // persistent ones.
  const auto local = std::filesystem::weakly_canonical(levels::node_directory(level.directory, 0));
  const auto root = std::filesystem::weakly_canonical(root_);
  const auto [r, l] = std::mismatch(root.begin(), root.end(), local.begin(), local.end());
  if (r == root.end()) {
    throw InvalidArgument(fmt::format("local_level.directory '{}' is inside the root '{}'",
                                      level.directory.string(), root_.string()));
  }
  // Nor inside a checkpoint (a step of another root), judged on each node's file system.
  comm_.run_all("local level:", [&] {
    const auto misplaced =
        manager::misplaced_root_reason(levels::node_directory(level.directory, 0), false);
    if (!misplaced.empty()) {
      throw InvalidArgument(
          fmt::format("local_level.directory '{}': {}", level.directory.string(), misplaced));
    }
  });
  local_ = std::make_unique<levels::LocalLevel>(comm_, level, naming_, options_.checkpointer,
                                                given_root_metadata(), root, options_.lock_lease);
  // The drain cadence counts on from the saves of the jobs before this one.
  local_saves_ = levels::counted_local_saves(comm_, local_->layout(), local_->directory());
}

bool CheckpointManager::in_persistent(std::int64_t step) const {
  return std::any_of(steps_.begin(), steps_.end(),
                     [&](const StepInfo& s) { return s.step == step; });
}

bool CheckpointManager::in_local(std::int64_t step) const { return local_ && local_->has(step); }

std::optional<std::int64_t> CheckpointManager::newest_step() const {
  std::optional<std::int64_t> newest;
  if (!steps_.empty()) newest = steps_.back().step;
  if (local_ && !local_->steps().empty()) {
    newest = std::max(newest.value_or(local_->steps().back()), local_->steps().back());
  }
  return newest;
}

std::vector<std::int64_t> CheckpointManager::local_steps() {
  const std::scoped_lock lock(mutex_);
  if (!active_ || !local_) return {};
  return local_->steps();
}

std::vector<std::int64_t> CheckpointManager::persistent_steps() {
  const std::scoped_lock lock(mutex_);
  if (!active_) return {};
  std::vector<std::int64_t> out;
  for (const auto& info : steps_) out.push_back(info.step);
  return out;
}

LevelRestore CheckpointManager::last_restore() const {
  const std::scoped_lock lock(mutex_);
  return last_restore_;
}

bool CheckpointManager::should_drain(std::int64_t step, const SaveDecision& decision) {
  const LocalLevelOptions& level = local_->options();
  if (decision.preempted && level.persistent_on_preemption) return true;
  if (!level.persistent_policy) {
    return level.persistent_every > 0 && local_saves_ % level.persistent_every == 0;
  }
  // The primary asks the policy (it may read clocks) and every rank takes its answer.
  std::array<std::int64_t, 1> drain{0};
  comm_.run_all(fmt::format("the drain decision of step {}:", step), [&] {
    if (!comm_.is_primary()) return;
    const auto* last = in_flight_ ? &*in_flight_ : (steps_.empty() ? nullptr : &steps_.back());
    const SaveContext context{.step = step,
                              .last_saved_step = last ? std::optional(last->step) : std::nullopt,
                              .last_saved_time = last ? std::optional(last->time) : std::nullopt,
                              .now = decision.time,
                              .reached_preemption = decision.preempted,
                              .is_initial = last == nullptr,
                              .is_saving_in_progress = in_flight_.has_value(),
                              .last_save_cost = last_save_cost_};
    drain[0] = level.persistent_policy->should_save(context) ? 1 : 0;
  });
  const auto bytes = comm_.broadcast_bytes(std::as_bytes(std::span(drain)));
  std::memcpy(drain.data(), bytes.data(), sizeof drain);
  return drain[0] != 0;
}

void CheckpointManager::save_to_levels(std::int64_t step, const CheckpointArgs& args,
                                       const SaveDecision& decision,
                                       const boost::json::object& custom,
                                       const ManagerSaveOptions& options) {
  if (!handler_) handler_ = make_handler(args.handler_type());
  const auto start = std::chrono::steady_clock::now();
  const auto resolved = levels::resolve_args(args);
  const CheckpointSaveOptions save_options{
      .custom_metadata = custom, .provenance = {.step = step, .metrics = options.metrics}};
  try {
    local_->save(step, handler_, *levels::local_save_args(resolved), save_options, decision.time);
  } catch (const Error& e) {
    // A node that cannot store its part (a full tmpfs, a failed node-local disk) fails the
    // save on every rank alike and leaves nothing of it on the nodes: the step then goes to
    // the root, so that the job keeps checkpointing.
    if (e.code() != ErrorCode::io) throw;
    base::log::warn_once(comm_.is_primary(), "level.local_failed",
                         "step={} error=\"{}\": saved to the root instead", step, e.what());
    persist({.step = step, .time = decision.time, .metrics = options.metrics}, *resolved,
            save_options);
    last_save_cost_ = std::chrono::steady_clock::now() - start;
    if (!options_.enable_async) land();
    return;
  }
  ++local_saves_;
  levels::count_local_saves(local_->layout(), local_->directory(), local_saves_, step);
  last_save_cost_ = std::chrono::steady_clock::now() - start;
  LocalSave saved{.step = step,
                  .drain_args = nullptr,
                  .custom = custom,
                  .metrics = options.metrics,
                  .time = decision.time};
  // The drain reads the local files; a rank that cannot map them (or an item of a user's
  // handler, which files cannot give back) makes every rank drain from the caller's data.
  std::string problem;
  try {
    saved.drain_args =
        levels::drain_args(resolved, local_->step_dir(step), local_->layout().node_comm->rank(),
                           local_->options().drain_bytes_per_second);
  } catch (const Error& e) {
    problem = e.what();
  }
  if (!comm_.all(saved.drain_args != nullptr)) {
    saved.drain_args.reset();
    if (!problem.empty()) {
      base::log::warn("level.drain_from_caller", "step={} error=\"{}\"", step, problem);
    }
  }
  base::log::info("level.saved", "step={} level=local seconds={:.3f}", step,
                  last_save_cost_->count());
  if (options_.on_commit) {
    comm_.run_all(fmt::format("the on_commit callback of step {}:", step),
                  [&] { options_.on_commit(step, options.metrics); });
  }
  // The local level's books are closed before the drain starts: a drain that fails at once
  // throws from here with the step saved and retained on the local level.
  const bool drain = should_drain(step, decision);
  newest_local_ = saved;
  local_->retain();
  if (drain) {
    last_drain_ = LevelDrain{.newest_local = step,
                             .newest_persistent = steps_.empty() ? -1 : steps_.back().step};
    if (saved.drain_args) {
      start_drain(saved);
    } else {
      // Arguments that files cannot give back are written from the caller's data, before
      // save() returns.
      persist({.step = step, .time = decision.time, .metrics = options.metrics}, *resolved,
              save_options);
      last_drain_.step = step;
      land();
    }
  }
}

void CheckpointManager::start_drain(const LocalSave& saved) {
  ensure_checkpointer(handler_->type_name());
  land();  // one drain at a time: the previous one commits first
  if (in_persistent(saved.step)) return;
  drain_args_ = saved.drain_args;
  const CheckpointSaveOptions save_options{
      .custom_metadata = saved.custom,
      .provenance = {.step = saved.step, .metrics = saved.metrics}};
  base::log::info("level.drain", "step={} root=\"{}\"", saved.step, root_.string());
  persist({.step = saved.step, .time = saved.time, .metrics = saved.metrics}, *drain_args_,
          save_options);
  last_drain_.step = saved.step;
  if (!options_.enable_async) land();
}

bool CheckpointManager::drain_newest() {
  land();  // the root's newest step includes the save in flight
  last_drain_ = LevelDrain{};
  const std::int64_t newest = local_->steps().empty() ? -1 : local_->steps().back();
  last_drain_.newest_local = newest;
  last_drain_.newest_persistent = steps_.empty() ? -1 : steps_.back().step;
  if (newest < 0 || newest <= last_drain_.newest_persistent) {
    last_drain_.why_not =
        newest < 0 ? fmt::format("the local level in '{}' holds no step of this job's layout ({})",
                                 local_->options().directory.string(), local_->layout().describe())
                   : fmt::format("local step {} is not newer than the root's step {}", newest,
                                 last_drain_.newest_persistent);
    return false;
  }
  if (newest_local_ && newest_local_->step == newest) {
    if (!newest_local_->drain_args) {
      last_drain_.failed = true;
      last_drain_.why_not = fmt::format(
          "step {}: an item's handler is not cairn's; its files cannot be drained", newest);
      base::log::warn_once(comm_.is_primary(), "level.not_drained", "{}", last_drain_.why_not);
      return false;
    }
    start_drain(*newest_local_);
    return true;
  }
  // A step saved by an earlier job (or before a restart): read back from the local files.
  const auto saved = local_save_from_files(newest);
  if (!saved) {
    last_drain_.failed = true;
    base::log::warn_once(comm_.is_primary(), "level.not_drained", "step={} error=\"{}\"", newest,
                         last_drain_.why_not);
    return false;
  }
  start_drain(*saved);
  return true;
}

std::optional<CheckpointManager::LocalSave> CheckpointManager::local_save_from_files(
    std::int64_t step) {
  if (!local_->make_readable(step, last_drain_.rebuilt_nodes, last_drain_.why_not)) {
    return std::nullopt;
  }
  // The format and compression of the root's newest step: what this run's drains wrote.
  std::map<std::string, TreeSaveOptions> like;
  if (!steps_.empty() && !steps_.back().damaged) {
    try {
      like = levels::tree_options_of(comm_, step_path(steps_.back().step));
    } catch (const Error& e) {
      // Every rank read the same text: the defaults serve on every rank.
      base::log::debug("level.drain_options", "step={} error=\"{}\"", steps_.back().step, e.what());
      like.clear();
    }
  }
  levels::LocalStepArgs read;
  std::string failure;
  try {
    read = levels::args_from_local_step(*local_->layout().node_comm, local_->step_dir(step), like,
                                        local_->options().drain_bytes_per_second);
  } catch (const Error& e) {
    failure = e.what();
  }
  // Every rank moves on to the persistent save together, or none does.
  const auto failures = comm_.allgather(failure);
  for (std::size_t r = 0; r < failures.size(); ++r) {
    if (failures[r].empty()) continue;
    last_drain_.why_not = fmt::format("reading local step {} on rank {}: {}", step, r, failures[r]);
    return std::nullopt;
  }
  const auto unsupported = comm_.allgather(read.not_rebuilt);
  for (const auto& item : unsupported) {
    if (item.empty()) continue;
    last_drain_.why_not =
        fmt::format("step {}: {} is not one of cairn's, which files cannot give back", step, item);
    return std::nullopt;
  }
  if (!handler_) handler_ = make_handler(read.args->handler_type());
  LocalSave saved{.step = step,
                  .drain_args = std::move(read.args),
                  .custom = std::move(read.custom),
                  .metrics = {},
                  .time = local_->time_of(step).value_or(std::chrono::system_clock::time_point{})};
  if (const auto* m = saved.custom.if_contains(step_custom_key::kMetrics); m && m->is_object()) {
    saved.metrics = m->get_object();
  }
  base::log::info("level.drain_from_files", "step={} directory=\"{}\"", step,
                  local_->step_dir(step).string());
  return saved;
}

bool CheckpointManager::drain() {
  const std::scoped_lock lock(mutex_);
  if (!active_ || !local_ || options_.read_only) return false;
  check_writable("drain");
  // A rank that skipped this call, or made another, fails every rank here.
  comm_.agree({.operation = "CheckpointManager::drain"});
  const bool drained = drain_newest();
  if (!drained && !last_drain_.failed && last_drain_.newest_local < 0) {
    // Steps of another layout cannot be drained by this job: say so rather than "nothing".
    const std::string other = levels::newest_step_of_another_layout(
        comm_, local_->layout(), local_->directory(), *naming_, last_drain_.newest_persistent);
    if (!other.empty()) {
      last_drain_.failed = true;
      last_drain_.why_not =
          fmt::format("{}; it holds {}: run the drain with that many ranks and that many per node",
                      last_drain_.why_not, other);
    }
  }
  land();
  return drained;
}

LevelDrain CheckpointManager::last_drain() const {
  const std::scoped_lock lock(mutex_);
  return last_drain_;
}

LevelDrain drain_local_level(const Comm& comm, const std::filesystem::path& root,
                             LocalLevelOptions level) {
  level.persistent_every = 0;
  level.persistent_policy = nullptr;
  level.drain_at_close = false;
  // The step names the root records, so that its steps and the level's are found.
  std::string naming;
  comm.run_all(fmt::format("reading the step names of '{}':", root.string()), [&] {
    if (!comm.is_primary()) return;
    if (const auto recorded = manager::recorded_step_name_format(root)) {
      naming = recorded->describe();
    }
  });
  naming = comm.broadcast(naming);
  CheckpointManagerOptions options;
  options.create = false;
  options.step_name_format = manager::step_name_format_from_description(naming);
  options.enable_async = false;
  options.local_level = std::move(level);
  CheckpointManager manager(comm, root, std::move(options));
  (void)manager.drain();
  LevelDrain report = manager.last_drain();
  manager.close();
  return report;
}

std::optional<std::any> CheckpointManager::restore_local(std::int64_t step,
                                                         const CheckpointArgs* args) {
  std::string why;
  if (!levels::locally_restorable(args, why)) {
    last_restore_.why_not_local = why;
    return std::nullopt;
  }
  const auto handler_for = [this](const std::filesystem::path& dir) {
    if (!handler_) handler_ = make_handler(StepMetadata::read(dir).handler);
    return handler_;
  };
  auto restored = local_->restore(step, handler_for, args, why);
  if (!restored) {
    last_restore_.why_not_local = why;
    base::log::warn_once(comm_.is_primary(), "level.local_unusable", "step={} error=\"{}\"", step,
                         why);
    return std::nullopt;
  }
  last_restore_.level = "local";
  last_restore_.rebuilt_nodes = restored->rebuilt_nodes;
  last_restore_.exchanged = restored->exchanged;
  base::log::info("level.restored", "step={} level=local rebuilt_nodes=[{}] exchanged={}", step,
                  fmt::join(restored->rebuilt_nodes, ","), restored->exchanged);
  return std::move(restored->result);
}

}  // namespace cairn
