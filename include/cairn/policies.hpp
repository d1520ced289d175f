// cairn — the policies of the CheckpointManager: when to save a step (save decision) and which
// committed steps to keep (preservation), after Orbax's composable policy objects.
//
// Policies are immutable values held by std::shared_ptr<const ...>. They do no I/O and no MPI.
// The manager asks its save decision policy on the primary rank only and gives every rank
// that answer, so a save decision may depend on what only the primary sees (its clock, a
// custom predicate reading a file). Preservation policies run on every rank with identical
// inputs (the step times the primary recorded), so they must be deterministic functions of
// the checkpoints.
//
// Save decision: a SaveContext in, a bool out. Preservation: the committed checkpoints in, the
// set of steps to keep out; steps_to_delete() turns that into deletions and always spares the
// newest committed step.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace cairn {

/// A should_save_fn: Orbax's `should_save_fn(step, latest_step)` (latest_step: the newest
/// saved step, std::nullopt when there is none), or a function of the step alone. Empty when
/// default-constructed or made from an empty std::function or a null function pointer.
class ShouldSaveFunction {
  template <class T>
  struct IsStdFunction : std::false_type {};
  template <class R, class... A>
  struct IsStdFunction<std::function<R(A...)>> : std::true_type {};

 public:
  ShouldSaveFunction() = default;
  /// From any callable as `bool(std::int64_t step, std::optional<std::int64_t> latest_step)`
  /// or `bool(std::int64_t step)`. Never throws beyond std::bad_alloc.
  template <class F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, ShouldSaveFunction> &&
           (std::is_invocable_r_v<bool, F&, std::int64_t, std::optional<std::int64_t>> ||
            std::is_invocable_r_v<bool, F&, std::int64_t>))
      ShouldSaveFunction(F f) {  // NOLINT(google-explicit-constructor): keyword-argument style
    if constexpr (std::is_pointer_v<F> || IsStdFunction<F>::value) {
      if (!f) return;
    }
    if constexpr (std::is_invocable_r_v<bool, F&, std::int64_t, std::optional<std::int64_t>>) {
      fn_ = std::move(f);
    } else {
      fn_ = [g = std::move(f)](std::int64_t step, std::optional<std::int64_t>) mutable {
        return static_cast<bool>(g(step));
      };
    }
  }
  /// Whether a function is held. Never throws.
  explicit operator bool() const noexcept { return static_cast<bool>(fn_); }
  /// Calls the function; throws what it throws (std::bad_function_call when empty).
  bool operator()(std::int64_t step, std::optional<std::int64_t> latest_step) const {
    return fn_(step, latest_step);
  }

 private:
  std::function<bool(std::int64_t, std::optional<std::int64_t>)> fn_;
};

// --- save decision ---------------------------------------------------------------------------

/// What a save decision is made from. Aggregate: use designated initializers.
struct SaveContext {
  /// The step the caller offers to save.
  std::int64_t step = {};
  /// The newest committed step, if any.
  std::optional<std::int64_t> last_saved_step = {};
  /// When the newest committed step was saved, if any.
  std::optional<std::chrono::system_clock::time_point> last_saved_time = {};
  /// The time of this decision (taken once and agreed on by the manager, never read here).
  std::chrono::system_clock::time_point now = {};
  /// Whether a preemption notice has been reached (Orbax reached_preemption).
  bool reached_preemption = {};
  /// Whether no checkpoint exists yet in the directory.
  bool is_initial = {};
  /// Whether an asynchronous save is still in flight (Orbax DecisionContext).
  bool is_saving_in_progress = {};
  /// How long the manager's newest save blocked its caller (with a local level: the local
  /// save), if it made one; what save_policy::YoungDaly sets its interval from.
  std::optional<std::chrono::duration<double>> last_save_cost = {};
};

/// Decides whether a step is saved (Orbax SaveDecisionPolicy). A CheckpointManager asks it on
/// its primary rank only.
class SaveDecisionPolicy {
 public:
  virtual ~SaveDecisionPolicy() = default;
  /// Whether `context.step` should be saved. Not collective; the built-in policies never
  /// throw (ShouldSaveFn passes on what its function throws).
  [[nodiscard]] virtual bool should_save(const SaveContext& context) const = 0;
  /// A short description for logs and metadata, e.g. "FixedInterval(100)". Not collective.
  [[nodiscard]] virtual std::string describe() const = 0;

 protected:
  SaveDecisionPolicy() = default;
  /// Policies are values: derived classes are copyable.
  SaveDecisionPolicy(const SaveDecisionPolicy&) = default;
  /// Policies are values: derived classes are copyable.
  SaveDecisionPolicy& operator=(const SaveDecisionPolicy&) = default;
};

/// How save decision policies are held and shared.
using SaveDecisionPolicyPtr = std::shared_ptr<const SaveDecisionPolicy>;

/// The save decision policies (Orbax FixedIntervalPolicy, SpecificStepsPolicy, ...).
namespace save_policy {

/// Saves every step that is a multiple of `interval` (step % interval == 0).
class FixedInterval final : public SaveDecisionPolicy {
 public:
  /// Not collective. Throws InvalidArgument when `interval` <= 0.
  explicit FixedInterval(std::int64_t interval);
  [[nodiscard]] bool should_save(const SaveContext& context) const override;
  [[nodiscard]] std::string describe() const override;
  /// The interval in steps. Never throws.
  [[nodiscard]] std::int64_t interval() const noexcept { return interval_; }

 private:
  std::int64_t interval_;
};

/// Saves exactly the steps of a set.
class SpecificSteps final : public SaveDecisionPolicy {
 public:
  /// Not collective; never throws beyond std::bad_alloc.
  explicit SpecificSteps(std::set<std::int64_t> steps);
  [[nodiscard]] bool should_save(const SaveContext& context) const override;
  [[nodiscard]] std::string describe() const override;
  /// The steps. Never throws.
  [[nodiscard]] const std::set<std::int64_t>& steps() const noexcept { return steps_; }

 private:
  std::set<std::int64_t> steps_;
};

/// Saves as often as possible: whenever no save is in flight and the last save is at least
/// `minimum_interval` old (or there is none). With a minimum, a last save time in the future
/// (the clock went back) counts as too recent.
class ContinuousCheckpointing final : public SaveDecisionPolicy {
 public:
  /// `minimum_interval` 0 means no minimum. Not collective. Throws InvalidArgument when it is
  /// negative.
  explicit ContinuousCheckpointing(std::chrono::seconds minimum_interval = {});
  [[nodiscard]] bool should_save(const SaveContext& context) const override;
  [[nodiscard]] std::string describe() const override;
  /// The minimum time between two saves. Never throws.
  [[nodiscard]] std::chrono::seconds minimum_interval() const noexcept { return minimum_interval_; }

 private:
  std::chrono::seconds minimum_interval_;
};

/// Saves when a preemption notice has been reached (context.reached_preemption).
class PreemptionCheckpointing final : public SaveDecisionPolicy {
 public:
  [[nodiscard]] bool should_save(const SaveContext& context) const override;
  [[nodiscard]] std::string describe() const override;
};

/// Saves when no checkpoint exists yet (context.is_initial), whatever the step.
class InitialSave final : public SaveDecisionPolicy {
 public:
  [[nodiscard]] bool should_save(const SaveContext& context) const override;
  [[nodiscard]] std::string describe() const override;
};

/// Saves when a user predicate of the step (and the newest saved step) says so (Orbax
/// should_save_fn). In a CheckpointManager the predicate runs on the primary rank only.
class ShouldSaveFn final : public SaveDecisionPolicy {
 public:
  /// Not collective. Throws InvalidArgument when `fn` is empty.
  explicit ShouldSaveFn(ShouldSaveFunction fn);
  /// Returns fn(context.step, context.last_saved_step); throws whatever fn throws.
  [[nodiscard]] bool should_save(const SaveContext& context) const override;
  [[nodiscard]] std::string describe() const override;

 private:
  ShouldSaveFunction fn_;
};

/// Saves when any of its policies says so (Orbax AnySavePolicy). The policies are asked in
/// order and the first yes ends the evaluation; an empty list never saves.
class AnyOf final : public SaveDecisionPolicy {
 public:
  /// Not collective. Throws InvalidArgument when a policy is null.
  explicit AnyOf(std::vector<SaveDecisionPolicyPtr> policies);
  [[nodiscard]] bool should_save(const SaveContext& context) const override;
  [[nodiscard]] std::string describe() const override;
  /// The policies, in evaluation order. Never throws.
  [[nodiscard]] const std::vector<SaveDecisionPolicyPtr>& policies() const noexcept {
    return policies_;
  }

 private:
  std::vector<SaveDecisionPolicyPtr> policies_;
};

}  // namespace save_policy

// --- preservation ----------------------------------------------------------------------------

/// One committed checkpoint as preservation policies see it. Aggregate: use designated
/// initializers.
struct CheckpointInfo {
  /// The step.
  std::int64_t step = {};
  /// When it was saved.
  std::chrono::system_clock::time_point time = {};
  /// The value of the manager's best_fn for it, when metrics were saved with it.
  std::optional<double> metric = {};
};

/// Decides which committed checkpoints to keep (Orbax PreservationPolicy). Implementations
/// override keep() and must be deterministic functions of the checkpoints.
class PreservationPolicy {
 public:
  virtual ~PreservationPolicy() = default;
  /// The steps of `checkpoints` to keep; the others may be deleted (see steps_to_delete()).
  /// `checkpoints` must be sorted by strictly ascending step. Not collective. Throws
  /// InvalidArgument when they are not sorted or a step repeats.
  [[nodiscard]] std::set<std::int64_t> should_keep(
      std::span<const CheckpointInfo> checkpoints) const;
  /// should_keep() evaluated at time `now`: what policies that keep by age (LatestDuration)
  /// take as the present. A CheckpointManager passes the time of its `clock` option, so that a
  /// test's fake clock drives them; the one-argument overload passes
  /// std::chrono::system_clock::now(). Not collective. Throws as the one-argument overload.
  [[nodiscard]] std::set<std::int64_t> should_keep(std::span<const CheckpointInfo> checkpoints,
                                                   std::chrono::system_clock::time_point now) const;
  /// A short description for logs and metadata, e.g. "LatestN(3)". Not collective.
  [[nodiscard]] virtual std::string describe() const = 0;

 protected:
  PreservationPolicy() = default;
  /// Policies are values: derived classes are copyable.
  PreservationPolicy(const PreservationPolicy&) = default;
  /// Policies are values: derived classes are copyable.
  PreservationPolicy& operator=(const PreservationPolicy&) = default;

 private:
  /// should_keep() after its check of the order. Steps not in `checkpoints` are ignored.
  [[nodiscard]] virtual std::set<std::int64_t> keep(
      std::span<const CheckpointInfo> checkpoints) const = 0;
  /// keep() at time `now`. Default: keep(checkpoints), for policies that do not read the time;
  /// policies that do (or that hold other policies) override it.
  [[nodiscard]] virtual std::set<std::int64_t> keep_at(
      std::span<const CheckpointInfo> checkpoints,
      std::chrono::system_clock::time_point now) const {
    (void)now;
    return keep(checkpoints);
  }
};

/// How preservation policies are held and shared.
using PreservationPolicyPtr = std::shared_ptr<const PreservationPolicy>;

/// Which metric is best in BestN: the smallest (a loss) or the largest (an accuracy).
enum class BestMode { min, max };

/// The preservation policies (Orbax LatestN, EveryNSteps, ...).
namespace preservation_policy {

/// Keeps every checkpoint.
class PreserveAll final : public PreservationPolicy {
 public:
  [[nodiscard]] std::string describe() const override;

 private:
  [[nodiscard]] std::set<std::int64_t> keep(
      std::span<const CheckpointInfo> checkpoints) const override;
};

/// Keeps the `n` checkpoints with the highest steps. n = 0 keeps none (steps_to_delete() still
/// spares the newest).
class LatestN final : public PreservationPolicy {
 public:
  /// Not collective. Throws InvalidArgument when `n` < 0.
  explicit LatestN(std::int64_t n);
  [[nodiscard]] std::string describe() const override;
  /// How many to keep. Never throws.
  [[nodiscard]] std::int64_t n() const noexcept { return n_; }

 private:
  [[nodiscard]] std::set<std::int64_t> keep(
      std::span<const CheckpointInfo> checkpoints) const override;
  std::int64_t n_;
};

/// Keeps the checkpoints whose step is a multiple of `interval` (Orbax keep_period), or with
/// `exact_interval` false the first checkpoint and then each first one at least `interval`
/// steps after the one kept before it (Orbax EveryNSteps(exact_interval=False)). With
/// `max_to_keep`, only the newest that many of those.
class EveryNSteps final : public PreservationPolicy {
 public:
  /// Not collective. Throws InvalidArgument when `interval` <= 0 or `max_to_keep` < 0.
  explicit EveryNSteps(std::int64_t interval, bool exact_interval = true,
                       std::optional<std::int64_t> max_to_keep = {});
  [[nodiscard]] std::string describe() const override;
  /// The interval in steps. Never throws.
  [[nodiscard]] std::int64_t interval() const noexcept { return interval_; }

 private:
  [[nodiscard]] std::set<std::int64_t> keep(
      std::span<const CheckpointInfo> checkpoints) const override;
  std::int64_t interval_;
  bool exact_;
  std::optional<std::int64_t> max_to_keep_;
};

/// Orbax EveryNStepsClosest: each checkpoint belongs to the multiple of `interval` nearest to
/// its step (round(step / interval), a step halfway between two multiples going to the even
/// quotient, as Python's round); each multiple keeps its closest checkpoint (of two as close,
/// the later one), and the newest checkpoint is kept too. With `max_to_keep`, only the newest
/// that many of those. Interval 4 over steps 0, 2, 6, 10 keeps 0 and 10: 2 belongs to 0, and
/// 6 and 10, both 2 from 8, to 8.
class EveryNStepsClosest final : public PreservationPolicy {
 public:
  /// Not collective. Throws InvalidArgument when `interval` <= 0 or `max_to_keep` < 0.
  explicit EveryNStepsClosest(std::int64_t interval, std::optional<std::int64_t> max_to_keep = {});
  [[nodiscard]] std::string describe() const override;

 private:
  [[nodiscard]] std::set<std::int64_t> keep(
      std::span<const CheckpointInfo> checkpoints) const override;
  std::int64_t interval_;
  std::optional<std::int64_t> max_to_keep_;
};

/// Keeps the checkpoints saved at most `duration` before now (Orbax LatestDuration). "Now" is
/// the time the policy is evaluated at (PreservationPolicy::should_keep()): in a
/// CheckpointManager, the manager's `clock` option, the clock its step times come from, so a
/// test's fake clock drives both; standalone, std::chrono::system_clock::now. A `clock` given
/// here replaces that time. A CheckpointManager evaluates its preservation policy on the
/// primary only, so ranks never disagree about it.
class LatestDuration final : public PreservationPolicy {
 public:
  /// Not collective. Throws InvalidArgument when `duration` is negative.
  explicit LatestDuration(std::chrono::seconds duration,
                          std::function<std::chrono::system_clock::time_point()> clock = {});
  [[nodiscard]] std::string describe() const override;

 private:
  [[nodiscard]] std::set<std::int64_t> keep(
      std::span<const CheckpointInfo> checkpoints) const override;
  [[nodiscard]] std::set<std::int64_t> keep_at(
      std::span<const CheckpointInfo> checkpoints,
      std::chrono::system_clock::time_point now) const override;
  std::chrono::seconds duration_;
  std::function<std::chrono::system_clock::time_point()> clock_;
};

/// Keeps one checkpoint per time window: the windows are [t0 + k*interval, t0 + (k+1)*interval)
/// with t0 the time of the first (lowest-step) checkpoint, and the one kept is the
/// lowest-step checkpoint in the window. The first checkpoint is thus always kept, so the
/// windows do not move as older checkpoints are deleted, and a checkpoint kept once stays
/// kept. (Orbax's EveryNSeconds instead keeps a checkpoint when it is at least `interval`
/// after the previously kept one; both keep about one checkpoint per interval.)
class EveryNSeconds final : public PreservationPolicy {
 public:
  /// Not collective. Throws InvalidArgument when `interval` <= 0.
  explicit EveryNSeconds(std::chrono::seconds interval);
  [[nodiscard]] std::string describe() const override;
  /// The window length. Never throws.
  [[nodiscard]] std::chrono::seconds interval() const noexcept { return interval_; }

 private:
  [[nodiscard]] std::set<std::int64_t> keep(
      std::span<const CheckpointInfo> checkpoints) const override;
  std::chrono::seconds interval_;
};

/// Keeps the `n` checkpoints with the best metric (Orbax BestN with max_to_keep = n).
///
/// - While there are at most `n` checkpoints (with or without metric), all are kept: like
///   Orbax's max_to_keep, n is a capacity and nothing is dropped before it is exceeded.
/// - Otherwise the n best of those with a metric are kept, and those without a metric are
///   kept too when `keep_checkpoints_without_metrics`, else not kept by this policy.
/// - Ties: of two equal metrics the later step ranks better (it is kept first).
/// - NaN ranks worse than every number (a diverged run is the worst checkpoint).
class BestN final : public PreservationPolicy {
 public:
  /// Not collective. Throws InvalidArgument when `n` < 0.
  BestN(std::int64_t n, BestMode mode, bool keep_checkpoints_without_metrics = true);
  [[nodiscard]] std::string describe() const override;
  /// How many to keep. Never throws.
  [[nodiscard]] std::int64_t n() const noexcept { return n_; }
  /// Whether the smallest or the largest metric is best. Never throws.
  [[nodiscard]] BestMode mode() const noexcept { return mode_; }
  /// Whether checkpoints without a metric are kept. Never throws.
  [[nodiscard]] bool keep_checkpoints_without_metrics() const noexcept {
    return keep_without_metrics_;
  }

 private:
  [[nodiscard]] std::set<std::int64_t> keep(
      std::span<const CheckpointInfo> checkpoints) const override;
  std::int64_t n_;
  BestMode mode_;
  bool keep_without_metrics_;
};

/// Keeps the checkpoints whose step is in a set.
class CustomSteps final : public PreservationPolicy {
 public:
  /// Not collective; never throws beyond std::bad_alloc.
  explicit CustomSteps(std::set<std::int64_t> steps);
  [[nodiscard]] std::string describe() const override;
  /// The steps. Never throws.
  [[nodiscard]] const std::set<std::int64_t>& steps() const noexcept { return steps_; }

 private:
  [[nodiscard]] std::set<std::int64_t> keep(
      std::span<const CheckpointInfo> checkpoints) const override;
  std::set<std::int64_t> steps_;
};

/// Keeps the checkpoints for which a user predicate of the step returns true (Orbax
/// should_keep_fn; what CheckpointManagerOptions::should_keep_fn and the C ABI's
/// cairn_manager_options.should_keep_fn become). In a CheckpointManager the predicate runs on
/// the primary rank only.
class ShouldKeepFn final : public PreservationPolicy {
 public:
  /// Not collective. Throws InvalidArgument when `fn` is empty.
  explicit ShouldKeepFn(std::function<bool(std::int64_t step)> fn);
  [[nodiscard]] std::string describe() const override;

 private:
  /// Calls fn once per checkpoint, in ascending step order; throws whatever fn throws.
  [[nodiscard]] std::set<std::int64_t> keep(
      std::span<const CheckpointInfo> checkpoints) const override;
  std::function<bool(std::int64_t step)> fn_;
};

/// Keeps what any of its policies keeps: the union (Orbax AnyPreservationPolicy). An empty
/// list keeps nothing.
class AnyOf final : public PreservationPolicy {
 public:
  /// Not collective. Throws InvalidArgument when a policy is null.
  explicit AnyOf(std::vector<PreservationPolicyPtr> policies);
  [[nodiscard]] std::string describe() const override;
  /// The policies. Never throws.
  [[nodiscard]] const std::vector<PreservationPolicyPtr>& policies() const noexcept {
    return policies_;
  }

 private:
  [[nodiscard]] std::set<std::int64_t> keep(
      std::span<const CheckpointInfo> checkpoints) const override;
  [[nodiscard]] std::set<std::int64_t> keep_at(
      std::span<const CheckpointInfo> checkpoints,
      std::chrono::system_clock::time_point now) const override;
  std::vector<PreservationPolicyPtr> policies_;
};

}  // namespace preservation_policy

/// The steps of `checkpoints` that `policy` does not keep, ascending, except the newest
/// (highest) step, which is never returned: the newest committed checkpoint is always
/// preserved, whatever the policy (so a policy that keeps nothing, or only the best metrics,
/// can never leave a run with nothing to resume from but an old step). `checkpoints` must be
/// committed steps sorted by strictly ascending step. Not collective. Throws InvalidArgument
/// when they are not sorted, and whatever the policy throws. The policy is evaluated at `now`
/// (see PreservationPolicy::should_keep()); std::nullopt: std::chrono::system_clock::now().
[[nodiscard]] std::vector<std::int64_t> steps_to_delete(
    const PreservationPolicy& policy, std::span<const CheckpointInfo> checkpoints,
    std::optional<std::chrono::system_clock::time_point> now = std::nullopt);

// --- the plain options -----------------------------------------------------------------------

/// When to save, in the terms of Orbax's CheckpointManagerOptions. Aggregate: use designated
/// initializers.
struct PlainSaveOptions {
  /// Save every step that is a multiple of this. 0 disables interval saves (then only
  /// save_on_steps, the initial save and preemption save). Must not be negative.
  std::int64_t save_interval_steps = 1;
  /// Also save these steps.
  std::set<std::int64_t> save_on_steps = {};
  /// When set, decides alone in place of save_interval_steps, save_on_steps and the initial
  /// save (as in Orbax); preemption saves still happen. Called on the primary rank only.
  ShouldSaveFunction should_save_fn = {};
};

/// Which checkpoints to keep, in the terms of Orbax's CheckpointManagerOptions. Aggregate: use
/// designated initializers.
struct PlainPreservationOptions {
  /// Keep at most this many (the latest, or the best with has_best_fn) besides those kept by
  /// keep_period and keep_time_interval. None keeps every checkpoint (then keep_period and
  /// keep_time_interval change nothing). 0 keeps only the newest. Must not be negative.
  std::optional<std::int64_t> max_to_keep = {};
  /// Also keep every step that is a multiple of this. Must be positive.
  std::optional<std::int64_t> keep_period = {};
  /// Also keep one checkpoint per interval (see preservation_policy::EveryNSeconds). Must be
  /// positive.
  std::optional<std::chrono::seconds> keep_time_interval = {};
  /// Whether the manager has a best_fn: max_to_keep then keeps the best by metric.
  bool has_best_fn = {};
  /// Which metric is best with has_best_fn (Orbax best_mode, default "max").
  BestMode best_mode = BestMode::max;
  /// With has_best_fn: keep checkpoints saved without metrics (Orbax default true).
  bool keep_checkpoints_without_metrics = true;
};

/// The save decision policy of `options`: AnyOf(FixedInterval(save_interval_steps) when > 0,
/// SpecificSteps(save_on_steps) when not empty, PreemptionCheckpointing, InitialSave), or with
/// should_save_fn AnyOf(ShouldSaveFn, PreemptionCheckpointing) (Orbax's default policy). Not
/// collective. Throws InvalidArgument when save_interval_steps < 0.
[[nodiscard]] SaveDecisionPolicyPtr make_save_policy(const PlainSaveOptions& options);

/// The preservation policy of `options`: PreserveAll without max_to_keep; otherwise the union
/// of BestN(max_to_keep, best_mode, keep_checkpoints_without_metrics) with has_best_fn or
/// LatestN(max_to_keep) without, EveryNSteps(keep_period) and EveryNSeconds(keep_time_interval)
/// when set. Not collective. Throws InvalidArgument when max_to_keep < 0, keep_period <= 0 or
/// keep_time_interval <= 0.
[[nodiscard]] PreservationPolicyPtr make_preservation_policy(
    const PlainPreservationOptions& options);

}  // namespace cairn
