// CheckpointManager: steps, policies, retention and preemption over the checkpoint layer.
#include <boost/json.hpp>
#include <cairn/manager.hpp>
#include <fmt/format.h>

#include <array>
#include <cstring>
#include <exception>
#include <span>

#include "checkpoint/step_metadata.hpp"
#include "comm/fault.hpp"
#include "comm/log.hpp"
#include "manager/root_metadata.hpp"
#include "manager/step_dirs.hpp"
#include "storage/posix_file.hpp"

namespace cairn {
namespace {

std::chrono::system_clock::time_point parse_time(const boost::json::object& step) {
  // commit_time is "YYYY-MM-DDTHH:MM:SSZ"; a damaged value counts as the epoch.
  const auto* v = step.if_contains("commit_time");
  if (v == nullptr || !v->is_string()) return {};
  std::tm tm{};
  const std::string text(v->get_string());
  if (::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm) == nullptr) return {};
  return std::chrono::system_clock::from_time_t(::timegm(&tm));
}

// The manager's Comm: over the active processes only. A rank that is not active gets a Comm
// over itself, which the manager never uses, and `active` false.
Comm active_comm(const Comm& comm, const CheckpointManagerOptions& options, bool& active) {
  Comm whole(comm.get(), {.primary_rank = options.primary_host,
                          .active_processes = options.active_processes,
                          .barrier_timeout = options.barrier_timeout});
  active = true;
  if (options.active_processes.empty()) return whole;
  auto sub = whole.active();
  if (sub) return std::move(*sub);
  active = false;
  return Comm(MPI_COMM_SELF, {.barrier_timeout = options.barrier_timeout});
}

}  // namespace

CheckpointManager::CheckpointManager(
    const Comm& comm, std::filesystem::path root, CheckpointManagerOptions options,
    std::map<std::string, std::shared_ptr<CheckpointHandler>> item_handlers,
    std::set<std::string> item_names)
    : comm_(active_comm(comm, options, active_)),
      caller_rank_(comm.rank()),
      root_(std::move(root)),
      options_(std::move(options)) {
  if (options_.save_interval_steps < 0) {
    throw InvalidArgument(fmt::format("save_interval_steps must not be negative, not {}",
                                      options_.save_interval_steps));
  }
  if (options_.max_to_keep && *options_.max_to_keep < 0) {
    throw InvalidArgument(
        fmt::format("max_to_keep must not be negative, not {}", *options_.max_to_keep));
  }
  if (!item_handlers.empty() || !item_names.empty()) {
    handler_ = std::make_shared<CompositeHandler>(std::move(item_handlers), std::move(item_names));
  }
  // A policy object given by the caller gets the preemption save the plain options include.
  save_policy_ = options_.save_decision_policy
                     ? std::make_shared<save_policy::AnyOf>(std::vector<SaveDecisionPolicyPtr>{
                           options_.save_decision_policy,
                           std::make_shared<save_policy::PreemptionCheckpointing>()})
                     : make_save_policy({.save_interval_steps = options_.save_interval_steps,
                                         .save_on_steps = options_.save_on_steps,
                                         .should_save_fn = options_.should_save_fn});
  keep_policy_ = options_.preservation_policy
                     ? options_.preservation_policy
                     : make_preservation_policy({.max_to_keep = options_.max_to_keep,
                                                 .keep_period = options_.keep_period,
                                                 .keep_time_interval = options_.keep_time_interval,
                                                 .has_best_fn = static_cast<bool>(options_.best_fn),
                                                 .best_mode = options_.best_mode,
                                                 .keep_checkpoints_without_metrics =
                                                     options_.keep_checkpoints_without_metrics});
  if (!active_) return;
  if (options_.preemption) preemption_ = std::make_unique<PreemptionWatcher>(*options_.preemption);

  comm_.run_all(fmt::format("opening checkpoint root '{}':", root_.string()), [&] {
    if (!comm_.is_primary()) return;
    const std::string misplaced = manager::misplaced_root_reason(
        root_, !options_.read_only && !options_.allow_non_empty_root);
    if (!misplaced.empty()) throw InvalidArgument(misplaced);
    std::error_code ec;
    if (!std::filesystem::is_directory(root_, ec)) {
      if (!options_.create || options_.read_only) {
        throw NotFound(root_.string(),
                       fmt::format("checkpoint root '{}' does not exist", root_.string()));
      }
      storage::create_directories(root_);
    }
    if (options_.read_only) return;
    manager::acquire_lock(root_);
    locked_ = true;
    if (!std::filesystem::exists(root_ / manager::kRootMetadataFile, ec)) {
      // Written once: a later manager on the same root keeps it.
      storage::write_file_durably(root_ / manager::kRootMetadataFile,
                                  boost::json::serialize(manager::make_root_metadata(
                                      options_.step_prefix, comm_.size(), options_.metadata)));
    }
    if (options_.cleanup_tmp_directories) {
      for (const auto& path : manager::leftover_paths(root_)) {
        log::info("manager.cleanup", "path=\"{}\"", path.string());
        std::filesystem::remove_all(path, ec);
      }
    }
  });
  reload();
}

CheckpointManager::~CheckpointManager() {
  try {
    close();
  } catch (const std::exception& e) {
    log::error("manager.close_failed", "root=\"{}\" error=\"{}\"", root_.string(), e.what());
  }
}

std::string CheckpointManager::step_name(std::int64_t step) const {
  return manager::StepNaming{options_.step_prefix, options_.step_format_fixed_length}.name(step);
}

std::filesystem::path CheckpointManager::step_path(std::int64_t step) const {
  return root_ / step_name(step);
}

void CheckpointManager::require_active(std::string_view what) const {
  if (!active_) {
    throw InvalidArgument(
        fmt::format("{} of '{}' on rank {}: this rank is not one of the manager's active_processes",
                    what, root_.string(), caller_rank_));
  }
}

void CheckpointManager::check_writable(std::string_view what) const {
  if (closed_) throw InvalidArgument(fmt::format("{}: the manager is closed", what));
}

void CheckpointManager::ensure_checkpointer(std::string_view handler_type) {
  if (!handler_) handler_ = HandlerRegistry::global().create(handler_type);
  if (sync_ || async_) return;
  // The checkpointer duplicates the communicator, a blocking MPI call without a deadline:
  // agree first, so that a rank that did not make this call is a timeout, not a hang.
  comm_.agree({.operation = "CheckpointManager: creating the checkpointer"});
  if (options_.enable_async) {
    async_ =
        std::make_unique<AsyncCheckpointer>(comm_, handler_, options_.async, options_.checkpointer);
  } else {
    sync_ = std::make_unique<Checkpointer>(comm_, handler_, options_.checkpointer);
  }
}

boost::json::object CheckpointManager::read_step_metadata(std::int64_t step) {
  const auto file = step_path(step) / kStepMetadataFile;
  std::string text;
  const bool one_reader = options_.single_host_load_and_broadcast;
  comm_.run_all(fmt::format("reading '{}':", file.string()), [&] {
    if (!one_reader || comm_.is_primary()) text = storage::read_small_file(file);
  });
  if (one_reader) text = comm_.broadcast(text);
  return checkpoint::parse_step_metadata(text, file);
}

CheckpointManager::StepInfo CheckpointManager::read_step_info(std::int64_t step) {
  boost::json::object meta;
  try {
    meta = read_step_metadata(step);
  } catch (const FormatError& e) {
    // A damaged step stays listed (restoring it reports the damage) and does not stop the
    // root from opening, so that the steps before it remain restorable. Every rank saw the
    // same text, so every rank gets here.
    log::warn("manager.damaged_step", "step={} error=\"{}\"", step, e.what());
    return StepInfo{.step = step, .damaged = true};
  } catch (const NotFound& e) {
    log::warn("manager.damaged_step", "step={} error=\"{}\"", step, e.what());
    return StepInfo{.step = step, .damaged = true};
  }
  StepInfo info{.step = step, .time = parse_time(meta)};
  if (const auto* custom = meta.if_contains("custom"); custom && custom->is_object()) {
    if (const auto* m = custom->get_object().if_contains("metrics"); m && m->is_object()) {
      info.metrics = m->get_object();
    }
  }
  return info;
}

void CheckpointManager::reload() {
  if (!active_) return;
  std::vector<std::int64_t> steps;
  const manager::StepNaming naming{options_.step_prefix, options_.step_format_fixed_length};
  if (options_.single_host_load_and_broadcast) {
    comm_.run_all("listing steps:", [&] {
      if (comm_.is_primary()) steps = manager::list_committed_steps(root_, naming);
    });
    boost::json::array listed;
    for (auto s : steps) listed.emplace_back(s);
    steps = boost::json::value_to<std::vector<std::int64_t>>(comm_.broadcast_json(listed));
  } else {
    comm_.run_all("listing steps:", [&] { steps = manager::list_committed_steps(root_, naming); });
    // Every rank listed for itself; they must agree.
    comm_.agree({.operation = "listing steps",
                 .step = steps.empty() ? -1 : steps.back(),
                 .structure = steps.size()});
  }
  steps_.clear();
  for (auto step : steps) steps_.push_back(read_step_info(step));
}

std::vector<std::int64_t> CheckpointManager::all_steps(bool read) {
  if (!active_) return {};
  if (read) reload();
  std::vector<std::int64_t> out;
  for (const auto& info : steps_) out.push_back(info.step);
  return out;
}

std::optional<std::int64_t> CheckpointManager::latest_step() {
  if (steps_.empty()) return std::nullopt;
  return steps_.back().step;
}

std::optional<double> CheckpointManager::metric_of(const StepInfo& info) const {
  if (!options_.best_fn || info.metrics.empty()) return std::nullopt;
  return options_.best_fn(info.metrics);
}

std::optional<std::int64_t> CheckpointManager::best_step() {
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

bool CheckpointManager::reached_preemption(std::int64_t step) {
  if (!active_) return false;
  if (!preemption_) return false;
  return preemption_->reached_preemption(comm_, step);
}

bool CheckpointManager::should_save(std::int64_t step) {
  if (!active_) return false;
  // A rank that asks about another step, or makes another call, fails every rank here.
  comm_.agree({.operation = "CheckpointManager::should_save", .step = step});
  // A save in flight that has committed is reported now (on_commit) rather than at the next
  // save, which may be far away. in_flight_ is alike on every rank.
  if (in_flight_) check_for_errors();
  return decide(step, false).save;
}

CheckpointManager::SaveDecision CheckpointManager::decide(std::int64_t step, bool force) {
  const bool preempted = reached_preemption(step);
  // The primary decides and every rank takes its answer and its clock: the policies read the
  // time (and user predicates), which may differ between ranks, and ranks that answered
  // differently would leave the others waiting in save() until the barrier deadline. The
  // step times that keep_time_interval retention works from are then the same everywhere.
  std::array<std::int64_t, 2> decision{0, 0};  // save?, time in ns since the epoch
  if (comm_.is_primary()) {
    const auto now = std::chrono::system_clock::now();
    decision[1] =
        std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
    const auto* last = in_flight_ ? &*in_flight_ : (steps_.empty() ? nullptr : &steps_.back());
    const bool newer = last == nullptr || step > last->step;
    const SaveContext context{.step = step,
                              .last_saved_step = last ? std::optional(last->step) : std::nullopt,
                              .last_saved_time = last ? std::optional(last->time) : std::nullopt,
                              .now = now,
                              .reached_preemption = preempted,
                              .is_initial = last == nullptr,
                              .is_saving_in_progress = is_saving_in_progress()};
    decision[0] = force || (newer && save_policy_->should_save(context)) ? 1 : 0;
  }
  const auto bytes = comm_.broadcast_bytes(std::as_bytes(std::span(decision)));
  std::memcpy(decision.data(), bytes.data(), sizeof decision);
  return {.save = decision[0] != 0,
          .time = std::chrono::system_clock::time_point(
              std::chrono::duration_cast<std::chrono::system_clock::duration>(
                  std::chrono::nanoseconds(decision[1])))};
}

bool CheckpointManager::save(std::int64_t step, const CheckpointArgs& args,
                             const ManagerSaveOptions& options) {
  if (!active_) return false;
  check_writable("save");
  if (options_.read_only) {
    log::warn("manager.read_only", "root=\"{}\" step={} saved=false", root_.string(), step);
    return false;
  }
  if (!options.force) {
    const bool exists = std::any_of(steps_.begin(), steps_.end(),
                                    [&](const StepInfo& s) { return s.step == step; }) ||
                        (in_flight_ && in_flight_->step == step);
    if (exists) {
      throw InvalidArgument(
          fmt::format("step {} already exists in '{}'; pass force = true to "
                      "replace it",
                      step, root_.string()));
    }
  }
  // A rank that saves another step, or skipped this call, fails every rank here, with the
  // differing step named (before any other collective of this call can pair with a wrong one).
  comm_.agree({.operation = "CheckpointManager::save", .step = step});
  const SaveDecision decision = decide(step, options.force);
  if (!decision.save) {
    if (in_flight_) check_for_errors();
    return false;
  }
  // The previous save commits (and its retention runs) before the next one starts.
  wait_until_finished();
  ensure_checkpointer(args.handler_type());
  boost::json::object custom = {{"metrics", options.metrics}, {"user", options.custom_metadata}};
  const auto dir = step_path(step);
  const CheckpointSaveOptions save_options{.force = options.force, .custom_metadata = custom};
  if (async_) {
    async_->save(dir, args, save_options);
    in_flight_ = StepInfo{.step = step, .time = decision.time, .metrics = options.metrics};
  } else {
    sync_->save(dir, args, save_options);
    in_flight_ = StepInfo{.step = step, .time = decision.time, .metrics = options.metrics};
    after_commit();
  }
  return true;
}

void CheckpointManager::after_commit() {
  if (!in_flight_) return;
  StepInfo info = *in_flight_;
  in_flight_.reset();
  std::erase_if(steps_, [&](const StepInfo& s) { return s.step == info.step; });
  steps_.push_back(info);
  std::sort(steps_.begin(), steps_.end(),
            [](const StepInfo& a, const StepInfo& b) { return a.step < b.step; });
  log::info("manager.committed", "root=\"{}\" step={}", root_.string(), info.step);
  if (options_.on_commit) {
    // Every rank throws, or none: a rank that threw alone would leave the others waiting in
    // their next collective call.
    comm_.run_all(fmt::format("the on_commit callback of step {}:", info.step),
                  [&] { options_.on_commit(info.step, info.metrics); });
  }
  apply_retention();
}

void CheckpointManager::apply_retention() {
  std::vector<CheckpointInfo> infos;
  for (const auto& info : steps_) {
    // A step whose metadata cannot be read is neither counted nor deleted: the newest step
    // that retention always keeps is then the newest readable one, not a damaged one newer
    // than it.
    if (info.damaged) continue;
    infos.push_back({.step = info.step, .time = info.time, .metric = metric_of(info)});
  }
  for (std::int64_t step : steps_to_delete(*keep_policy_, infos)) delete_step(step);
}

void CheckpointManager::delete_step(std::int64_t step) {
  if (!active_) return;
  check_writable("delete_step");
  if (options_.read_only) {
    log::warn("manager.read_only", "root=\"{}\" step={} deleted=false", root_.string(), step);
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
        fault::point("manager.background_delete");
      } catch (const std::exception& e) {
        log::warn("manager.background_delete", "path=\"{}\" error=\"{}\"", path.string(), e.what());
        return;
      }
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
      if (ec)
        log::warn("manager.background_delete", "path=\"{}\" error=\"{}\"", path.string(),
                  ec.message());
    });
  }
}

namespace {

// Arguments equal to `args` except that array tree restores (also inside a composite) read
// replicated leaves on the primary and broadcast them; null when nothing changes.
std::shared_ptr<const CheckpointArgs> with_load_and_broadcast(const CheckpointArgs& args) {
  if (const auto* tree = dynamic_cast<const ArrayTreeRestore*>(&args)) {
    auto copy = std::make_shared<ArrayTreeRestore>(*tree);
    copy->options.load_and_broadcast = true;
    return copy;
  }
  if (const auto* composite = dynamic_cast<const Composite*>(&args)) {
    Composite::Items items = composite->items();
    bool changed = false;
    for (auto& [name, item] : items) {
      if (auto replaced = item ? with_load_and_broadcast(*item) : nullptr) {
        item = std::move(replaced);
        changed = true;
      }
    }
    if (changed) return std::make_shared<Composite>(std::move(items));
  }
  return nullptr;
}

}  // namespace

std::any CheckpointManager::restore(std::optional<std::int64_t> step, const CheckpointArgs* args) {
  require_active("restore");
  wait_until_finished();
  std::shared_ptr<const CheckpointArgs> broadcast_args;
  if (options_.single_host_load_and_broadcast && args != nullptr) {
    broadcast_args = with_load_and_broadcast(*args);
    if (broadcast_args) args = broadcast_args.get();
  }
  const auto chosen = step ? step : latest_step();
  if (!chosen) {
    throw NotFound(root_.string(),
                   fmt::format("no committed checkpoint in '{}' to restore", root_.string()));
  }
  if (std::none_of(steps_.begin(), steps_.end(),
                   [&](const StepInfo& s) { return s.step == *chosen; })) {
    throw NotFound(step_name(*chosen), fmt::format("step {} is not a committed checkpoint in '{}'",
                                                   *chosen, root_.string()));
  }
  if (!handler_) {
    const auto meta = read_step_metadata(*chosen);
    const auto* type = meta.if_contains("handler");
    ensure_checkpointer(type && type->is_string() ? std::string_view(type->get_string())
                                                  : std::string_view("cairn.array_tree"));
  } else {
    ensure_checkpointer(handler_->type_name());
  }
  return async_ ? async_->restore(step_path(*chosen), args)
                : sync_->restore(step_path(*chosen), args);
}

void CheckpointManager::quarantine(std::int64_t step, std::string_view error) {
  const std::string name = step_name(step);
  if (options_.read_only) {
    log::warn("manager.damaged_step",
              "root=\"{}\" step={} quarantined=false (read_only) error=\"{}\"", root_.string(),
              step, error);
  } else {
    comm_.run_all(fmt::format("quarantining step {}:", step), [&] {
      if (!comm_.is_primary()) return;
      const auto moved = manager::quarantine_step_dir(root_, name);
      log::warn("manager.quarantined", "root=\"{}\" step={} path=\"{}\" error=\"{}\"",
                root_.string(), step, moved.string(), error);
    });
  }
  std::erase_if(steps_, [&](const StepInfo& s) { return s.step == step; });
}

std::optional<RestoredStep> CheckpointManager::restore_latest_intact(const CheckpointArgs* args) {
  require_active("restore_latest_intact");
  wait_until_finished();
  std::vector<std::int64_t> candidates;
  for (auto it = steps_.rbegin(); it != steps_.rend(); ++it) candidates.push_back(it->step);
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
      log::warn("manager.restore_failed", "root=\"{}\" step={} error=\"{}\"", root_.string(), step,
                message);
      if (failed.empty()) newest_code = agreed_code;
      failed.emplace_back(step, std::move(message));
      continue;
    }
    RestoredStep restored{.step = step, .result = std::move(result)};
    for (const auto& [bad, error] : failed) {
      quarantine(bad, error);
      restored.quarantined.push_back(bad);
    }
    if (!failed.empty()) {
      log::warn("manager.restored_older_step", "root=\"{}\" step={} quarantined={}", root_.string(),
                step, failed.size());
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
  require_active("metrics");
  for (const auto& info : steps_) {
    if (info.step == step) return info.metrics;
  }
  throw NotFound(step_name(step), fmt::format("step {} is not a committed checkpoint in '{}'", step,
                                              root_.string()));
}

boost::json::object CheckpointManager::metadata() {
  require_active("metadata");
  const auto file = root_ / manager::kRootMetadataFile;
  std::string text;
  comm_.run_all(fmt::format("reading '{}':", file.string()), [&] {
    if (comm_.is_primary()) text = storage::read_small_file(file);
  });
  return manager::parse_root_metadata(comm_.broadcast(text), file);
}

boost::json::object CheckpointManager::metadata(std::int64_t step) {
  (void)metrics(step);  // NotFound for an unknown step
  return read_step_metadata(step);
}

boost::json::value CheckpointManager::item_metadata(std::int64_t step) {
  require_active("item_metadata");
  (void)metrics(step);
  const auto meta = read_step_metadata(step);
  const auto* type = meta.if_contains("handler");
  ensure_checkpointer(type && type->is_string() ? std::string_view(type->get_string())
                                                : std::string_view("cairn.array_tree"));
  return handler_->metadata(comm_, step_path(step));
}

void CheckpointManager::wait_until_finished() {
  if (async_) {
    try {
      async_->wait_until_finished();
    } catch (...) {
      in_flight_.reset();
      throw;
    }
  }
  after_commit();
}

bool CheckpointManager::is_saving_in_progress() const noexcept {
  return async_ && async_->is_saving_in_progress();
}

void CheckpointManager::check_for_errors() {
  if (!async_) return;
  try {
    async_->check_for_errors();
  } catch (...) {
    in_flight_.reset();
    throw;
  }
  // A save that every rank finished is committed: report it and run retention now. The
  // ranks agree first, as one may see the end of the save before another.
  if (in_flight_ && comm_.all(!async_->is_saving_in_progress())) wait_until_finished();
}

void CheckpointManager::close() {
  if (closed_) return;
  closed_ = true;
  std::exception_ptr failure;
  try {
    wait_until_finished();
  } catch (...) {
    failure = std::current_exception();
  }
  for (auto& deleter : deleters_) deleter.join();
  deleters_.clear();
  if (locked_) manager::release_lock(root_);
  locked_ = false;
  if (handler_) handler_->close();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace cairn
