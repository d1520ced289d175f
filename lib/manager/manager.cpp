// CheckpointManager: opening a root, listing its steps, save decisions and saves, landing async
// saves. Retention is in manager_retention.cpp, restores in manager_restore.cpp.
#include <boost/json.hpp>
#include <cairn/checkpoint_root.hpp>
#include <cairn/manager.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <exception>
#include <span>

#include "base/durable_file.hpp"
#include "base/fault.hpp"
#include "base/log.hpp"
#include "checkpoint/step_metadata.hpp"
#include "manager/levels/local_level.hpp"
#include "manager/manager_options.hpp"
#include "manager/root_metadata.hpp"
#include "manager/step_dirs.hpp"

namespace cairn {
namespace {

// A wait for the previous save longer than this many seconds is logged as a warning, shorter
// ones at debug level (Orbax's threshold).
constexpr double kSlowWaitSeconds = 1.0;

std::chrono::system_clock::time_point parse_time(const std::string& commit_time) {
  // commit_time is "YYYY-MM-DDTHH:MM:SSZ"; a damaged or missing value counts as the epoch.
  if (commit_time.empty()) return {};
  std::tm tm{};
  if (::strptime(commit_time.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm) == nullptr) return {};
  return std::chrono::system_clock::from_time_t(::timegm(&tm));
}

std::chrono::system_clock::time_point from_ns(std::int64_t ns) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::nanoseconds(ns)));
}

std::int64_t to_ns(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
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
  manager::validate_options(options_);
  if (!item_handlers.empty() || !item_names.empty()) {
    handler_ = std::make_shared<CompositeHandler>(std::move(item_handlers), std::move(item_names),
                                                  options_.handler_registry);
  }
  save_policy_ = manager::save_policy_of(options_);
  keep_policy_ = manager::keep_policy_of(options_);
  naming_ = manager::naming_of(options_, false);
  if (!active_) return;
  if (options_.preemption) {
    PreemptionOptions preemption = *options_.preemption;
    if (!preemption.clock) preemption.clock = options_.clock;
    preemption_ = std::make_unique<PreemptionWatcher>(std::move(preemption));
  }
  open_root();
  reload();
  if (options_.local_level) open_local_level();
  base::log::info("manager.opened", "root=\"{}\" ranks={} steps={} {}", root_.string(),
                  comm_.size(), steps_.size(), manager::describe_options(options_));
}

void CheckpointManager::open_root() {
  bool joined = false;
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
      base::create_directories(root_);
    }
    const auto file = root_ / manager::kRootMetadataFile;
    const bool has_root_file = std::filesystem::exists(file, ec);
    if (has_root_file) {
      try {
        joined = manager::uses_joined_names(
            manager::parse_root_metadata(base::read_small_file(file), file), options_);
      } catch (const Error& e) {
        // Names then follow the options; metadata() reports the damage.
        base::log::warn("manager.root_metadata_unreadable", "path=\"{}\" error=\"{}\"",
                        file.string(), e.what());
      }
    }
    if (options_.read_only) return;
    manager::acquire_lock(root_, options_.lock_lease);
    locked_ = true;
    lock_renewal_ = std::make_unique<manager::LockRenewal>(root_, options_.lock_lease);
    if (!has_root_file && options_.save_root_metadata) {
      // Written once: a later manager on the same root keeps it.
      base::write_file_durably(file, boost::json::serialize(given_root_metadata()));
    }
    // With a local level the root is written by this manager's drains alone, under its
    // lock: what a drain or delete that died left is removed, as cleanup_tmp_directories
    // removes it for any root (a drain is never saved again under the same name to replace
    // it, as a step that a plain manager saves again is).
    if (options_.cleanup_tmp_directories || options_.local_level) {
      for (const auto& path : manager::leftover_paths(root_)) {
        base::log::info("manager.cleanup", "path=\"{}\"", path.string());
        std::filesystem::remove_all(path, ec);
      }
    }
    // A step directory with its final name but no COMMITTED marker is a save that died (the
    // marker is written before the rename) or a step that lost its marker: with the lock held
    // no job is writing it. It is moved aside as damaged steps are, so that the step can be
    // saved again instead of stopping every later save of it.
    for (const auto& dir : list_step_directories(root_)) {
      if (dir.status != StepStatus::incomplete || dir.temporary) continue;
      const auto moved = manager::quarantine_step_dir(root_, dir.path.filename().string());
      base::log::warn("manager.quarantined",
                      "root=\"{}\" step={} path=\"{}\" error=\"'{}' has no {} marker: a save "
                      "that did not finish\"",
                      root_.string(), dir.step, moved.string(), dir.path.string(), kCommitMarker);
    }
  });
  if (comm_.any(joined)) {
    // A root written when step_prefix was joined to the step without a separator keeps its
    // names, so that its steps are still found.
    naming_ = manager::naming_of(options_, true);
    base::log::info("manager.joined_step_names", "root=\"{}\" step_prefix=\"{}\"", root_.string(),
                    options_.step_prefix);
  }
}

boost::json::object CheckpointManager::given_root_metadata() const {
  return manager::make_root_metadata(options_.step_prefix, naming_->describe(), comm_.size(),
                                     options_.metadata);
}

CheckpointManager::~CheckpointManager() {
  try {
    close();
  } catch (const std::exception& e) {
    base::log::error("manager.close_failed", "root=\"{}\" error=\"{}\"", root_.string(), e.what());
  }
}

std::string CheckpointManager::step_name(std::int64_t step) const {
  return naming_->build_name(step);
}

std::chrono::system_clock::time_point CheckpointManager::now() const {
  return options_.clock ? options_.clock() : std::chrono::system_clock::now();
}

std::optional<bool> CheckpointManager::composite_mode() {
  if (handler_) return handler_->type_name() == CompositeHandler::kTypeName;
  if (!recorded_composite_ && !steps_.empty()) {
    // A manager that neither saved nor restored yet goes by the newest step of its root (read
    // once; steps_ is alike on every rank, so every rank reads).
    try {
      recorded_composite_ =
          read_step_metadata(steps_.back().step).handler == CompositeHandler::kTypeName;
    } catch (const FormatError&) {
      // A damaged step says nothing: the save decides, as on an empty root.
    } catch (const NotFound&) {
    }
  }
  return recorded_composite_;
}

void CheckpointManager::check_save_args(const CheckpointArgs& args,
                                        std::optional<bool> composite) const {
  const bool given_composite = args.handler_type() == CompositeHandler::kTypeName;
  if (!composite || *composite == given_composite) return;
  if (given_composite) {
    throw InvalidArgument(
        "this manager saves a single unnamed item: it takes that item's arguments, not "
        "cairn::Composite ones (give the manager item names or handlers to save named items)");
  }
  throw InvalidArgument(fmt::format(
      "this manager saves named items: it takes cairn::Composite arguments, not arguments for "
      "handler '{}'",
      args.handler_type()));
}

bool CheckpointManager::exists(std::int64_t step) const {
  return in_persistent(step) || in_local(step) || (in_flight_ && in_flight_->step == step);
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

std::shared_ptr<CheckpointHandler> CheckpointManager::make_handler(
    std::string_view handler_type) const {
  if (!options_.handler_registry) return HandlerRegistry::global().create(handler_type);
  // A composite made here looks its items up in this manager's registry, not the global one.
  if (handler_type == CompositeHandler::kTypeName) {
    return std::make_shared<CompositeHandler>(
        std::map<std::string, std::shared_ptr<CheckpointHandler>>{}, std::set<std::string>{},
        options_.handler_registry);
  }
  return options_.handler_registry->create(handler_type);
}

void CheckpointManager::ensure_checkpointer(std::string_view handler_type) {
  if (!handler_) handler_ = make_handler(handler_type);
  if (checkpointer_) return;
  // The checkpointer duplicates the communicator, a blocking MPI call without a deadline:
  // agree first, so that a rank that did not make this call is a timeout, not a hang.
  comm_.agree({.operation = "CheckpointManager: creating the checkpointer"});
  AsyncOptions async = options_.async;
  if (options_.local_level) {
    // A drain writes from maps of the local files, which stay as they are until it lands:
    // nothing to copy.
    async.zero_copy = true;
    async.staging_bytes = 0;
  }
  checkpointer_ =
      options_.enable_async
          ? std::make_unique<AsyncCheckpointer>(comm_, handler_, async, options_.checkpointer)
          : std::make_unique<Checkpointer>(comm_, handler_, options_.checkpointer);
}

StepMetadata CheckpointManager::read_step_metadata(std::int64_t step) {
  const auto file = step_path(step) / kStepMetadataFile;
  std::string text;
  const bool one_reader = options_.single_host_load_and_broadcast;
  comm_.run_all(fmt::format("reading '{}':", file.string()), [&] {
    if (!one_reader || comm_.is_primary()) text = base::read_small_file(file);
  });
  if (one_reader) text = comm_.broadcast(text);
  return checkpoint::parse_step_metadata(text, file);
}

CheckpointManager::StepInfo CheckpointManager::read_step_info(std::int64_t step) {
  StepMetadata meta;
  try {
    meta = read_step_metadata(step);
  } catch (const FormatError& e) {
    // A damaged step stays listed (restoring it reports the damage) and does not stop the
    // root from opening, so that the steps before it remain restorable. Every rank saw the
    // same text, so every rank gets here.
    base::log::warn_once(comm_.is_primary(), "manager.damaged_step", "step={} error=\"{}\"", step,
                         e.what());
    return StepInfo{.step = step, .damaged = true};
  } catch (const NotFound& e) {
    base::log::warn_once(comm_.is_primary(), "manager.damaged_step", "step={} error=\"{}\"", step,
                         e.what());
    return StepInfo{.step = step, .damaged = true};
  }
  StepInfo info{.step = step, .time = parse_time(meta.commit_time)};
  if (const auto* custom = meta.custom.if_object()) {
    if (const auto* m = custom->if_contains(step_custom_key::kMetrics); m && m->is_object()) {
      info.metrics = m->get_object();
    }
    // The time of the save decision on the manager's clock: what keep_time_interval keeps
    // by, also after a restart and with an injected clock.
    if (const auto* t = custom->if_contains(step_custom_key::kTimeNs); t && t->is_int64()) {
      info.time = from_ns(t->get_int64());
    }
    if (const auto* d = custom->if_contains(step_custom_key::kIncrementalDepth);
        d && d->is_int64() && d->get_int64() >= 0) {
      info.incremental_depth = d->get_int64();
    }
  }
  return info;
}

void CheckpointManager::reload() {
  const std::scoped_lock lock(mutex_);
  if (!active_) return;
  std::vector<std::int64_t> steps;
  const StepNameFormat& naming = *naming_;
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
  for (auto step : steps) {
    steps_.push_back(options_.lightweight_initialize ? StepInfo{.step = step, .loaded = false}
                                                     : read_step_info(step));
  }
  if (local_) local_->scan();
}

void CheckpointManager::load_step_infos() {
  // Collective: steps_ is alike on every rank, so every rank reads the same steps.
  for (auto& info : steps_) {
    if (!info.loaded) info = read_step_info(info.step);
  }
}

std::vector<std::int64_t> CheckpointManager::all_steps(bool read) {
  const std::scoped_lock lock(mutex_);
  if (!active_) return {};
  if (read) reload();
  std::vector<std::int64_t> out;
  for (const auto& info : steps_) out.push_back(info.step);
  if (local_) {
    // Both levels: a step saved locally is saved, drained or not.
    out.insert(out.end(), local_->steps().begin(), local_->steps().end());
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }
  return out;
}

std::optional<std::int64_t> CheckpointManager::latest_step() {
  const std::scoped_lock lock(mutex_);
  return newest_step();
}

bool CheckpointManager::reached_preemption(std::int64_t step) {
  const std::scoped_lock lock(mutex_);
  if (!active_) return false;
  if (!preemption_) return false;
  return preemption_->reached_preemption(comm_, step);
}

bool CheckpointManager::should_save(std::int64_t step) {
  const std::scoped_lock lock(mutex_);
  if (!active_) return false;
  // A rank that asks about another step, or makes another call, fails every rank here.
  comm_.agree({.operation = "CheckpointManager::should_save", .step = step});
  // A save in flight that has committed is reported now (on_commit) rather than at the next
  // save, which may be far away. in_flight_ is alike on every rank.
  if (in_flight_) check_for_errors();
  if (options_.read_only) return false;
  return decide(step, false).save;
}

CheckpointManager::SaveDecision CheckpointManager::decide(std::int64_t step, bool force) {
  const bool preempted = reached_preemption(step);
  load_step_infos();  // the time of the newest step
  // The primary decides and every rank takes its answer and its clock: the policies read the
  // time (and user predicates), which may differ between ranks, and ranks that answered
  // differently would leave the others waiting in save() until the barrier deadline. The
  // step times that keep_time_interval retention works from are then the same everywhere.
  std::array<std::int64_t, 2> decision{0, 0};  // save?, time in ns since the epoch
  // The clock and the predicates may throw: every rank then throws, none waits.
  comm_.run_all(fmt::format("the save decision of step {}:", step), [&] {
    if (!comm_.is_primary()) return;
    const auto now = this->now();
    decision[1] = to_ns(now);
    const auto* last = in_flight_ ? &*in_flight_ : (steps_.empty() ? nullptr : &steps_.back());
    std::optional<std::int64_t> last_step = last ? std::optional(last->step) : std::nullopt;
    std::optional<std::chrono::system_clock::time_point> last_time =
        last ? std::optional(last->time) : std::nullopt;
    if (local_ && !local_->steps().empty() && local_->steps().back() > last_step.value_or(-1)) {
      last_step = local_->steps().back();  // with a local level, the newest save is there
      last_time = local_->time_of(*last_step);
    }
    const bool newer = !last_step || step > *last_step;
    const SaveContext context{.step = step,
                              .last_saved_step = last_step,
                              .last_saved_time = last_time,
                              .now = now,
                              .reached_preemption = preempted,
                              .is_initial = !last_step,
                              .is_saving_in_progress = is_saving_in_progress(),
                              .last_save_cost = last_save_cost_};
    decision[0] = force || (newer && save_policy_->should_save(context)) ? 1 : 0;
  });
  const auto bytes = comm_.broadcast_bytes(std::as_bytes(std::span(decision)));
  std::memcpy(decision.data(), bytes.data(), sizeof decision);
  return {.save = decision[0] != 0, .time = from_ns(decision[1]), .preempted = preempted};
}

bool CheckpointManager::save(std::int64_t step, const CheckpointArgs& args,
                             const ManagerSaveOptions& options) {
  const std::scoped_lock lock(mutex_);
  if (!active_) return false;
  check_writable("save");
  if (options_.read_only) {
    base::log::warn_once(comm_.is_primary(), "manager.read_only", "root=\"{}\" step={} saved=false",
                         root_.string(), step);
    return false;
  }
  // A rank that saves another step, or skipped this call, fails every rank here, with the
  // differing step named (before any other collective of this call can pair with a wrong one).
  comm_.agree({.operation = "CheckpointManager::save", .step = step});
  // The arguments first, as Orbax: a mismatch is an error also when the step exists or the
  // policy would not save it.
  const std::optional<bool> composite = composite_mode();
  comm_.run_all(fmt::format("save of step {} in '{}':", step, root_.string()),
                [&] { check_save_args(args, composite); });
  if (exists(step)) {  // alike on every rank
    if (options.force) {
      throw StepAlreadyExists(
          step, fmt::format("step {} already exists in '{}' (as '{}'): a forced save does not "
                            "replace a step; delete_step({}) first to replace it",
                            step, root_.string(), step_name(step), step));
    }
    // As Orbax: a restarted loop that repeats its last step goes on.
    base::log::info("manager.step_exists", "root=\"{}\" step={} saved=false", root_.string(), step);
    if (in_flight_) check_for_errors();
    return false;
  }
  const SaveDecision decision = decide(step, options.force);
  if (!decision.save) {
    if (in_flight_) check_for_errors();
    return false;
  }
  if (options_.best_fn && options.metrics.empty()) {
    base::log::warn_once(comm_.is_primary(), "manager.no_metrics",
                         "root=\"{}\" step={}: best_fn is set but the save has no "
                         "metrics; it counts as saved without metrics",
                         root_.string(), step);
  }
  // With prevent_write_metrics the metrics stay in memory (in_flight_ below) only.
  boost::json::object custom = {
      {step_custom_key::kMetrics,
       options_.prevent_write_metrics ? boost::json::object{} : options.metrics},
      {step_custom_key::kUser, options.custom_metadata},
      {step_custom_key::kTimeNs, to_ns(decision.time)}};
  if (local_) {
    // Saved on the local level before this returns; drained in the background.
    save_to_levels(step, args, decision, custom, options);
    return true;
  }
  const auto start = std::chrono::steady_clock::now();
  if (in_flight_) {
    // The previous save commits (and its retention runs) before the next one starts.
    const std::int64_t previous = in_flight_->step;
    const bool busy = checkpointer_->is_saving_in_progress();  // made by the save in flight
    const auto start = now();
    land();
    const double waited = std::chrono::duration<double>(now() - start).count();
    if (busy) {
      // As Orbax: only a long wait is worth a warning; an async loop that saves faster than
      // its saves commit waits briefly at every save.
      if (waited > kSlowWaitSeconds) {
        base::log::warn_once(
            comm_.is_primary(), "manager.waited_for_previous_save",
            "root=\"{}\" step={} previous_step={} waited_s={:.3f}: waiting for the "
            "previous save to complete took more than {} s; if this happens often, "
            "consider saving less frequently",
            root_.string(), step, previous, waited, kSlowWaitSeconds);
      } else {
        base::log::debug("manager.waited_for_previous_save",
                         "root=\"{}\" step={} previous_step={} waited_s={:.3f}", root_.string(),
                         step, previous, waited);
      }
      custom[step_custom_key::kWaitedForPreviousSave] = waited;
    }
  }
  ensure_checkpointer(args.handler_type());
  const auto dir = step_path(step);
  // An incremental save refers to the newest committed step (alike on every rank), unless
  // that step heads a chain of incremental_full_every steps already.
  std::filesystem::path base;
  std::optional<std::int64_t> depth;
  if (options_.incremental) {
    depth = 0;
    if (!steps_.empty()) {
      StepInfo& newest = steps_.back();
      if (!newest.loaded) newest = read_step_info(newest.step);  // collective, alike
      // A newest step that recorded no depth (an older cairn, a damaged step file) counts as
      // a full chain.
      const std::int64_t newest_depth =
          newest.incremental_depth.value_or(options_.incremental_full_every);
      if (newest_depth + 1 < options_.incremental_full_every) {
        base = step_path(newest.step);
        depth = newest_depth + 1;
      }
    }
    custom[step_custom_key::kIncrementalDepth] = *depth;
  }
  const CheckpointSaveOptions save_options{.custom_metadata = custom,
                                           .provenance = {.step = step, .metrics = options.metrics},
                                           .incremental_base = std::move(base)};
  persist(
      {.step = step, .time = decision.time, .metrics = options.metrics, .incremental_depth = depth},
      args, save_options);
  last_save_cost_ = std::chrono::steady_clock::now() - start;
  // A synchronous save is committed already: report it and run retention now, not at the
  // next call.
  if (!options_.enable_async) land();
  return true;
}

void CheckpointManager::persist(const StepInfo& info, const CheckpointArgs& args,
                                const CheckpointSaveOptions& save_options) {
  ensure_checkpointer(args.handler_type());
  land();
  checkpointer_->save(step_path(info.step), args, save_options);
  in_flight_ = info;
  saving_ = true;
}

void CheckpointManager::wait_until_finished() {
  const std::scoped_lock lock(mutex_);
  land();
}

void CheckpointManager::land() {
  // in_flight_ is alike on every rank: with nothing in flight no rank communicates, so that
  // the calls of other threads that find the save already landed return at once.
  if (!in_flight_) return;
  try {
    checkpointer_->wait_until_finished();
  } catch (...) {
    in_flight_.reset();
    drain_args_.reset();
    saving_ = false;
    throw;
  }
  saving_ = false;
  drain_args_.reset();  // a drain's views of the local files
  after_commit();
}

bool CheckpointManager::is_saving_in_progress() const noexcept {
  // Another thread in a member may be landing the save: answer from the flag it keeps.
  const std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return saving_;
  return checkpointer_ && checkpointer_->is_saving_in_progress();
}

void CheckpointManager::check_for_errors() {
  const std::scoped_lock lock(mutex_);
  if (!checkpointer_) return;
  try {
    checkpointer_->check_for_errors();
  } catch (...) {
    in_flight_.reset();
    saving_ = false;
    throw;
  }
  // A save that every rank finished is committed: report it and run retention now. The
  // ranks agree first, as one may see the end of the save before another.
  if (in_flight_ && comm_.all(!checkpointer_->is_saving_in_progress())) land();
}

void CheckpointManager::close() {
  const std::scoped_lock lock(mutex_);
  if (closed_) return;
  std::exception_ptr failure;
  // The manager is closed only after the save in flight landed: its commit applies retention,
  // which deletes steps like delete_step does.
  try {
    // SCR's flush at the end of an allocation: the newest local step reaches the root,
    // whoever saved it.
    if (local_ && local_->options().drain_at_close && !options_.read_only) (void)drain_newest();
    land();
  } catch (...) {
    failure = std::current_exception();
  }
  closed_ = true;
  for (auto& deleter : deleters_) deleter.join();
  deleters_.clear();
  lock_renewal_.reset();
  if (locked_) manager::release_lock(root_);
  locked_ = false;
  // The checkpointer closes the handler (Orbax's manager closes its checkpointer). A failure
  // of the save in flight is the one reported.
  try {
    if (checkpointer_) {
      checkpointer_->close();
    } else if (handler_) {
      handler_->close();
    }
  } catch (...) {
    if (!failure) failure = std::current_exception();
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace cairn
