// CheckpointManager with a node-local level: saves to the local level, drains to the
// persistent level (the root), restores from the fastest level that holds the step.
#include <boost/json.hpp>
#include <cairn/manager.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <span>

#include "base/log.hpp"
#include "manager/levels/level_args.hpp"
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
                                                given_root_metadata(), root);
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
  local_->save(step, handler_, *levels::local_save_args(resolved), save_options, decision.time);
  ++local_saves_;
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
    if (saved.drain_args) {
      start_drain(saved);
    } else {
      // Arguments that files cannot give back are written from the caller's data, before
      // save() returns.
      land();
      ensure_checkpointer(handler_->type_name());
      checkpointer_->save(step_path(step), *resolved, save_options);
      in_flight_ = StepInfo{.step = step, .time = decision.time, .metrics = options.metrics};
      saving_ = true;
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
  checkpointer_->save(step_path(saved.step), *drain_args_, save_options);
  in_flight_ = StepInfo{.step = saved.step, .time = saved.time, .metrics = saved.metrics};
  saving_ = true;
  if (!options_.enable_async) land();
}

bool CheckpointManager::drain() {
  const std::scoped_lock lock(mutex_);
  if (!active_ || !local_ || !newest_local_) return false;
  land();
  if (!steps_.empty() && steps_.back().step >= newest_local_->step) return false;
  if (!newest_local_->drain_args) {
    base::log::warn_once(comm_.is_primary(), "level.not_drained",
                         "step={}: an item's handler is not cairn's; its files cannot be drained",
                         newest_local_->step);
    return false;
  }
  start_drain(*newest_local_);
  land();
  return true;
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
