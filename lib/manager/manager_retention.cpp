// CheckpointManager: retention after each commit, deleting steps, and the best step by metric.
#include <boost/json.hpp>
#include <cairn/manager.hpp>
#include <fmt/format.h>

#include <algorithm>

#include "base/fault.hpp"
#include "base/log.hpp"
#include "manager/step_dirs.hpp"

namespace cairn {

std::optional<double> CheckpointManager::metric_of(const StepInfo& info) const {
  if (!options_.best_fn || info.metrics.empty()) return std::nullopt;
  return options_.best_fn(info.metrics);
}

std::optional<std::int64_t> CheckpointManager::best_step() {
  const std::scoped_lock lock(mutex_);
  // As Orbax: without a metric to rank by, the best step is the newest.
  if (!options_.best_fn) return latest_step();
  load_step_infos();
  std::optional<std::int64_t> best;
  std::optional<double> best_value;
  for (const auto& info : steps_) {
    const auto value = metric_of(info);
    if (!value) continue;
    const bool better =
        !best_value ||
        (options_.best_mode == BestMode::max ? *value >= *best_value : *value <= *best_value);
    if (better) {
      best = info.step;
      best_value = value;
    }
  }
  return best;
}

void CheckpointManager::after_commit() {
  if (!in_flight_) return;
  StepInfo info = *in_flight_;
  in_flight_.reset();
  std::erase_if(steps_, [&](const StepInfo& s) { return s.step == info.step; });
  steps_.push_back(info);
  std::sort(steps_.begin(), steps_.end(),
            [](const StepInfo& a, const StepInfo& b) { return a.step < b.step; });
  base::log::info("manager.committed", "root=\"{}\" step={}", root_.string(), info.step);
  // With a local level the step was reported when the local level committed it.
  if (options_.on_commit && !local_) {
    // Every rank throws, or none: a rank that threw alone would leave the others waiting in
    // their next collective call.
    comm_.run_all(fmt::format("the on_commit callback of step {}:", info.step),
                  [&] { options_.on_commit(info.step, info.metrics); });
  }
  apply_retention();
}

void CheckpointManager::apply_retention() {
  // The primary decides and every rank takes its list: a policy may read a clock
  // (LatestDuration) and best_fn may differ between ranks; ranks that deleted different steps
  // would leave each other waiting.
  load_step_infos();
  std::vector<std::int64_t> doomed;
  comm_.run_all("retention:", [&] {
    if (!comm_.is_primary()) return;
    std::vector<CheckpointInfo> infos;
    for (const auto& info : steps_) {
      // A step whose metadata cannot be read is neither counted nor deleted: the newest step
      // that retention always keeps is then the newest readable one, not a damaged one newer
      // than it.
      if (info.damaged) continue;
      infos.push_back({.step = info.step, .time = info.time, .metric = metric_of(info)});
    }
    // The manager's clock is the present of policies that keep by age (LatestDuration).
    doomed = steps_to_delete(*keep_policy_, infos, now());
  });
  boost::json::array listed;
  for (const auto step : doomed) listed.emplace_back(step);
  doomed = boost::json::value_to<std::vector<std::int64_t>>(comm_.broadcast_json(listed));
  for (const std::int64_t step : doomed) delete_step(step);
}

void CheckpointManager::delete_step(std::int64_t step) {
  const std::scoped_lock lock(mutex_);
  if (!active_) return;
  check_writable("delete_step");
  if (options_.read_only) {
    base::log::warn_once(comm_.is_primary(), "manager.read_only",
                         "root=\"{}\" step={} deleted=false", root_.string(), step);
    return;
  }
  auto it =
      std::find_if(steps_.begin(), steps_.end(), [&](const StepInfo& s) { return s.step == step; });
  if (it == steps_.end()) {
    throw NotFound(step_name(step), fmt::format("step {} is not a committed checkpoint in '{}'",
                                                step, root_.string()));
  }
  std::optional<std::filesystem::path> deferred;
  comm_.run_all(fmt::format("deleting step {}:", step), [&] {
    if (!comm_.is_primary()) return;
    deferred = manager::delete_step_dir(root_, step_name(step), options_.todelete_subdir,
                                        options_.enable_background_delete);
  });
  steps_.erase(it);
  if (deferred) {
    // One background delete at a time: a thread that ended keeps its stack until joined, so
    // joining the previous delete here (usually long finished) keeps a long run flat.
    for (auto& deleter : deleters_) deleter.join();
    deleters_.clear();
    deleters_.emplace_back([path = *deferred] {
      try {
        base::fault::point("manager.background_delete");
      } catch (const std::exception& e) {
        base::log::warn("manager.background_delete", "path=\"{}\" error=\"{}\"", path.string(),
                        e.what());
        return;
      }
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
      if (ec)
        base::log::warn("manager.background_delete", "path=\"{}\" error=\"{}\"", path.string(),
                        ec.message());
    });
  }
}

}  // namespace cairn
