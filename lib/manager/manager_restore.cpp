// CheckpointManager: restores (of a step, from another root, of the newest intact step), and
// the metadata and metrics of the root and its steps.
#include <boost/json.hpp>
#include <cairn/manager.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <exception>

#include "base/durable_file.hpp"
#include "base/log.hpp"
#include "checkpoint/step_metadata.hpp"
#include "manager/root_metadata.hpp"
#include "manager/step_dirs.hpp"

namespace cairn {

std::any CheckpointManager::restore(std::optional<std::int64_t> step, const CheckpointArgs* args) {
  const std::scoped_lock lock(mutex_);
  require_active("restore");
  land();
  std::shared_ptr<const CheckpointArgs> broadcast_args;
  if (options_.single_host_load_and_broadcast && args != nullptr) {
    broadcast_args = args->with_load_and_broadcast();
    if (broadcast_args) args = broadcast_args.get();
  }
  std::optional<std::int64_t> chosen = step ? step : newest_step();
  if (!chosen) {
    throw NotFound(root_.string(),
                   fmt::format("no committed checkpoint in '{}' to restore", root_.string()));
  }
  last_restore_ = LevelRestore{.step = *chosen};
  if (!step && local_) {
    // The newest step that a level can serve: a local step lost beyond repair gives way to
    // an older local step or to the newest persistent one.
    const std::vector<std::int64_t> steps = all_steps();
    std::string skipped;  // why the newer steps did not serve
    for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
      last_restore_ = LevelRestore{.step = *it, .why_not_local = skipped};
      chosen = *it;
      if (in_local(*it)) {
        if (auto result = restore_local(*it, args)) return std::move(*result);
      }
      if (in_persistent(*it)) break;
      base::log::warn_once(comm_.is_primary(), "level.step_skipped", "step={} why=\"{}\"", *it,
                           last_restore_.why_not_local);
      skipped = fmt::format("step {}: {}", *it, last_restore_.why_not_local);
    }
  } else if (in_local(*chosen)) {
    // The fastest level that holds the step; the persistent one when it cannot serve.
    if (auto result = restore_local(*chosen, args)) return std::move(*result);
  } else if (local_) {
    last_restore_.why_not_local = fmt::format("the local level does not hold step {}", *chosen);
  }
  if (!in_persistent(*chosen)) {
    throw NotFound(
        step_name(*chosen),
        fmt::format("step {} is not a committed checkpoint in '{}'{}", *chosen, root_.string(),
                    last_restore_.why_not_local.empty()
                        ? ""
                        : "; the local level cannot serve it: " + last_restore_.why_not_local));
  }
  last_restore_.level = "persistent";
  if (local_) {
    base::log::info("level.restored", "step={} level=persistent why_not_local=\"{}\"", *chosen,
                    last_restore_.why_not_local);
  }
  return restore_persistent(*chosen, args);
}

std::any CheckpointManager::restore_persistent(std::int64_t step, const CheckpointArgs* args) {
  if (!handler_) {
    ensure_checkpointer(read_step_metadata(step).handler);
  } else {
    ensure_checkpointer(handler_->type_name());
  }
  return checkpointer_->restore(step_path(step), args);
}

std::any CheckpointManager::restore_from(const std::filesystem::path& directory,
                                         std::optional<std::int64_t> step,
                                         const CheckpointArgs* args) {
  const std::scoped_lock lock(mutex_);
  require_active("restore_from");
  land();
  std::vector<std::int64_t> steps;
  comm_.run_all(fmt::format("listing steps of '{}':", directory.string()), [&] {
    if (comm_.is_primary()) steps = manager::list_committed_steps(directory, *naming_);
  });
  boost::json::array listed;
  for (auto s : steps) listed.emplace_back(s);
  steps = boost::json::value_to<std::vector<std::int64_t>>(comm_.broadcast_json(listed));
  const auto chosen = step ? step : (steps.empty() ? std::nullopt : std::optional(steps.back()));
  if (!chosen || std::find(steps.begin(), steps.end(), *chosen) == steps.end()) {
    throw NotFound(
        directory.string(),
        chosen ? fmt::format("step {} is not a committed checkpoint in '{}'", *chosen,
                             directory.string())
               : fmt::format("no committed checkpoint in '{}' to restore", directory.string()));
  }
  const auto dir = directory / naming_->build_name(*chosen);
  if (!handler_) {
    const auto file = dir / kStepMetadataFile;
    std::string text;
    comm_.run_all(fmt::format("reading '{}':", file.string()), [&] {
      if (comm_.is_primary()) text = base::read_small_file(file);
    });
    ensure_checkpointer(checkpoint::parse_step_metadata(comm_.broadcast(text), file).handler);
  } else {
    ensure_checkpointer(handler_->type_name());
  }
  return checkpointer_->restore(dir, args);
}

void CheckpointManager::quarantine(std::int64_t step, std::string_view error) {
  const std::string name = step_name(step);
  if (options_.read_only) {
    base::log::warn_once(comm_.is_primary(), "manager.damaged_step",
                         "root=\"{}\" step={} quarantined=false (read_only) error=\"{}\"",
                         root_.string(), step, error);
  } else {
    comm_.run_all(fmt::format("quarantining step {}:", step), [&] {
      if (!comm_.is_primary()) return;
      const auto moved = manager::quarantine_step_dir(root_, name);
      base::log::warn("manager.quarantined", "root=\"{}\" step={} path=\"{}\" error=\"{}\"",
                      root_.string(), step, moved.string(), error);
    });
  }
  std::erase_if(steps_, [&](const StepInfo& s) { return s.step == step; });
}

std::optional<RestoredStep> CheckpointManager::restore_latest_intact(const CheckpointArgs* args) {
  const std::scoped_lock lock(mutex_);
  require_active("restore_latest_intact");
  land();
  std::vector<std::int64_t> candidates = all_steps();  // of both levels
  std::reverse(candidates.begin(), candidates.end());
  if (candidates.empty()) return std::nullopt;
  // (step, error) of the steps that failed, newest first, and the error of the newest.
  std::vector<std::pair<std::int64_t, std::string>> failed;
  ErrorCode newest_code = ErrorCode::format;
  constexpr std::int64_t kDamaged = 1;
  constexpr std::int64_t kOther = 2;
  for (const std::int64_t step : candidates) {
    std::any result;
    std::exception_ptr failure;
    std::string message;
    std::int64_t kind = 0;
    ErrorCode code = ErrorCode::internal;
    try {
      result = restore(step, args);
    } catch (const Error& e) {
      failure = std::current_exception();
      message = e.what();
      code = e.code();
      kind = code == ErrorCode::format || code == ErrorCode::not_found ? kDamaged : kOther;
    } catch (const std::exception& e) {
      failure = std::current_exception();
      message = e.what();
      kind = kOther;
    }
    // restore() fails on every rank together; the ranks still agree on the outcome (the worst
    // kind, with the code of a rank that had it), so that every rank moves on to the same
    // older step, or none does.
    const std::int64_t agreed =
        comm_.max(kind == 0 ? 0 : kind * 64 + static_cast<std::int64_t>(code));
    const std::int64_t agreed_kind = agreed / 64;
    const auto agreed_code = static_cast<ErrorCode>(agreed % 64);
    if (agreed_kind == kOther) {
      if (kind == kOther) std::rethrow_exception(failure);
      throw_error(agreed_code,
                  fmt::format("restoring step {} of '{}' failed on another rank: see its error",
                              step, root_.string()));
    }
    if (agreed_kind == kDamaged) {
      if (kind == 0) message = fmt::format("step {} failed to restore on another rank", step);
      base::log::warn_once(comm_.is_primary(), "manager.restore_failed",
                           "root=\"{}\" step={} error=\"{}\"", root_.string(), step, message);
      if (failed.empty()) newest_code = agreed_code;
      failed.emplace_back(step, std::move(message));
      continue;
    }
    RestoredStep restored{.step = step, .result = std::move(result)};
    for (const auto& [bad, error] : failed) {
      if (!in_persistent(bad)) continue;  // a local step only: the next save replaces it
      quarantine(bad, error);
      restored.quarantined.push_back(bad);
      restored.errors.push_back(error);
    }
    if (!failed.empty()) {
      base::log::warn_once(comm_.is_primary(), "manager.restored_older_step",
                           "root=\"{}\" step={} quarantined={}", root_.string(), step,
                           failed.size());
    }
    return restored;
  }
  // No step restores: the target may be what is wrong, so nothing is moved aside.
  throw_error(newest_code,
              fmt::format("no committed step of '{}' restores (tried {} step{}, newest first); "
                          "the newest, step {}, failed with: {}",
                          root_.string(), failed.size(), failed.size() == 1 ? "" : "s",
                          failed.front().first, failed.front().second));
}

boost::json::object CheckpointManager::metrics(std::int64_t step) {
  const std::scoped_lock lock(mutex_);
  require_active("metrics");
  load_step_infos();
  for (const auto& info : steps_) {
    if (info.step == step) return info.metrics;
  }
  throw NotFound(step_name(step), fmt::format("step {} is not a committed checkpoint in '{}'", step,
                                              root_.string()));
}

boost::json::object CheckpointManager::metadata() {
  const std::scoped_lock lock(mutex_);
  require_active("metadata");
  const auto file = root_ / manager::kRootMetadataFile;
  std::string text;
  bool found = false;
  comm_.run_all(fmt::format("reading '{}':", file.string()), [&] {
    if (!comm_.is_primary()) return;
    std::error_code ec;
    found = std::filesystem::exists(file, ec);
    if (found) text = base::read_small_file(file);
  });
  // A root without the file: a read_only manager reports what it was given, one that does not
  // save root metadata reports none (as Orbax's, whose metadata() is then empty).
  if (!comm_.any(found)) {
    return options_.read_only ? given_root_metadata() : boost::json::object{};
  }
  return manager::parse_root_metadata(comm_.broadcast(text), file);
}

boost::json::object CheckpointManager::metadata(std::int64_t step) {
  const std::scoped_lock lock(mutex_);
  (void)metrics(step);  // NotFound for an unknown step
  boost::json::object out = read_step_metadata(step).json;
  // Orbax's StepMetadata.item_metadata: what the handler describes of the saved items.
  out[kItemMetadataKey] = item_metadata(step);
  return out;
}

boost::json::value CheckpointManager::item_metadata(std::int64_t step) {
  const std::scoped_lock lock(mutex_);
  require_active("item_metadata");
  (void)metrics(step);
  ensure_checkpointer(read_step_metadata(step).handler);
  return handler_->metadata(comm_, step_path(step));
}

}  // namespace cairn
