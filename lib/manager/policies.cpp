// The save decision and preservation policies of the CheckpointManager: pure functions of
// their inputs, so that every rank decides alike without communication.
#include <cairn/error.hpp>
#include <cairn/policies.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <utility>

namespace cairn {

namespace {

// "{1, 5, 9}" for describe(); long sets are cut short.
std::string steps_text(const std::set<std::int64_t>& steps) {
  constexpr std::size_t kShown = 8;
  std::string text = "{";
  std::size_t i = 0;
  for (const std::int64_t step : steps) {
    if (i == kShown) {
      text += fmt::format(", ... ({} steps)", steps.size());
      break;
    }
    text += fmt::format("{}{}", i == 0 ? "" : ", ", step);
    ++i;
  }
  return text + "}";
}

template <class Ptr>
std::string list_text(const std::vector<Ptr>& policies) {
  std::string text = "AnyOf(";
  for (std::size_t i = 0; i < policies.size(); ++i) {
    text += (i == 0 ? "" : ", ") + policies[i]->describe();
  }
  return text + ")";
}

template <class Ptr>
std::vector<Ptr> checked_policies(std::vector<Ptr> policies, const char* who) {
  for (std::size_t i = 0; i < policies.size(); ++i) {
    if (!policies[i]) throw InvalidArgument(fmt::format("{}: policy {} is null", who, i));
  }
  return policies;
}

std::int64_t positive(std::int64_t value, const char* who, const char* what) {
  if (value <= 0) {
    throw InvalidArgument(fmt::format("{}: {} must be positive, got {}", who, what, value));
  }
  return value;
}

std::int64_t non_negative(std::int64_t value, const char* who, const char* what) {
  if (value < 0) {
    throw InvalidArgument(fmt::format("{}: {} must not be negative, got {}", who, what, value));
  }
  return value;
}

// The newest `n` of `steps` (ascending), or all of them without n.
std::set<std::int64_t> newest(const std::vector<std::int64_t>& steps,
                              std::optional<std::int64_t> n) {
  const std::size_t count = n ? std::min(steps.size(), static_cast<std::size_t>(*n)) : steps.size();
  return {steps.end() - static_cast<std::ptrdiff_t>(count), steps.end()};
}

// Floor division for a positive divisor (times before the first checkpoint fall in negative
// windows, not in window 0).
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

}  // namespace

// --- save decision ---------------------------------------------------------------------------

namespace save_policy {

FixedInterval::FixedInterval(std::int64_t interval)
    : interval_(positive(interval, "cairn::save_policy::FixedInterval", "the interval")) {}

bool FixedInterval::should_save(const SaveContext& context) const {
  return context.step % interval_ == 0;
}

std::string FixedInterval::describe() const { return fmt::format("FixedInterval({})", interval_); }

SpecificSteps::SpecificSteps(std::set<std::int64_t> steps) : steps_(std::move(steps)) {}

bool SpecificSteps::should_save(const SaveContext& context) const {
  return steps_.contains(context.step);
}

std::string SpecificSteps::describe() const {
  return fmt::format("SpecificSteps({})", steps_text(steps_));
}

ContinuousCheckpointing::ContinuousCheckpointing(std::chrono::seconds minimum_interval)
    : minimum_interval_(minimum_interval) {
  if (minimum_interval.count() < 0) {
    throw InvalidArgument(
        fmt::format("cairn::save_policy::ContinuousCheckpointing: the minimum interval must not be "
                    "negative, got {} s",
                    minimum_interval.count()));
  }
}

bool ContinuousCheckpointing::should_save(const SaveContext& context) const {
  if (context.is_saving_in_progress) return false;
  if (!context.last_saved_time || minimum_interval_.count() == 0) return true;
  // Whole seconds elapsed: floor(elapsed) >= n exactly when elapsed >= n for whole n, and
  // comparing in seconds cannot overflow the way converting the interval to ticks could.
  const auto elapsed =
      std::chrono::floor<std::chrono::seconds>(context.now - *context.last_saved_time);
  return elapsed >= minimum_interval_;
}

std::string ContinuousCheckpointing::describe() const {
  return fmt::format("ContinuousCheckpointing({} s)", minimum_interval_.count());
}

bool PreemptionCheckpointing::should_save(const SaveContext& context) const {
  return context.reached_preemption;
}

std::string PreemptionCheckpointing::describe() const { return "PreemptionCheckpointing"; }

bool InitialSave::should_save(const SaveContext& context) const { return context.is_initial; }

std::string InitialSave::describe() const { return "InitialSave"; }

ShouldSaveFn::ShouldSaveFn(ShouldSaveFunction fn) : fn_(std::move(fn)) {
  if (!fn_) throw InvalidArgument("cairn::save_policy::ShouldSaveFn: the function is empty");
}

bool ShouldSaveFn::should_save(const SaveContext& context) const {
  return fn_(context.step, context.last_saved_step);
}

std::string ShouldSaveFn::describe() const { return "ShouldSaveFn"; }

AnyOf::AnyOf(std::vector<SaveDecisionPolicyPtr> policies)
    : policies_(checked_policies(std::move(policies), "cairn::save_policy::AnyOf")) {}

bool AnyOf::should_save(const SaveContext& context) const {
  return std::any_of(policies_.begin(), policies_.end(),
                     [&](const SaveDecisionPolicyPtr& p) { return p->should_save(context); });
}

std::string AnyOf::describe() const { return list_text(policies_); }

}  // namespace save_policy

// --- preservation ----------------------------------------------------------------------------

std::set<std::int64_t> PreservationPolicy::should_keep(
    std::span<const CheckpointInfo> checkpoints) const {
  return should_keep(checkpoints, std::chrono::system_clock::now());
}

std::set<std::int64_t> PreservationPolicy::should_keep(
    std::span<const CheckpointInfo> checkpoints, std::chrono::system_clock::time_point now) const {
  for (std::size_t i = 1; i < checkpoints.size(); ++i) {
    if (checkpoints[i].step <= checkpoints[i - 1].step) {
      throw InvalidArgument(fmt::format(
          "cairn::PreservationPolicy::should_keep ({}): the checkpoints must be sorted by "
          "strictly ascending step, but step {} follows step {}",
          describe(), checkpoints[i].step, checkpoints[i - 1].step));
    }
  }
  return keep_at(checkpoints, now);
}

namespace preservation_policy {

std::string PreserveAll::describe() const { return "PreserveAll"; }

std::set<std::int64_t> PreserveAll::keep(std::span<const CheckpointInfo> checkpoints) const {
  std::set<std::int64_t> kept;
  for (const auto& info : checkpoints) kept.insert(info.step);
  return kept;
}

LatestN::LatestN(std::int64_t n)
    : n_(non_negative(n, "cairn::preservation_policy::LatestN", "n")) {}

std::string LatestN::describe() const { return fmt::format("LatestN({})", n_); }

std::set<std::int64_t> LatestN::keep(std::span<const CheckpointInfo> checkpoints) const {
  const std::size_t n = std::min(checkpoints.size(), static_cast<std::size_t>(n_));
  std::set<std::int64_t> kept;
  for (const auto& info : checkpoints.last(n)) kept.insert(info.step);
  return kept;
}

EveryNSteps::EveryNSteps(std::int64_t interval, bool exact_interval,
                         std::optional<std::int64_t> max_to_keep)
    : interval_(positive(interval, "cairn::preservation_policy::EveryNSteps", "the interval")),
      exact_(exact_interval),
      max_to_keep_(max_to_keep) {
  if (max_to_keep_)
    non_negative(*max_to_keep_, "cairn::preservation_policy::EveryNSteps", "max_to_keep");
}

std::string EveryNSteps::describe() const {
  if (exact_ && !max_to_keep_) return fmt::format("EveryNSteps({})", interval_);
  return fmt::format("EveryNSteps({}{}{})", interval_, exact_ ? "" : ", not exact",
                     max_to_keep_ ? fmt::format(", max_to_keep {}", *max_to_keep_) : "");
}

std::set<std::int64_t> EveryNSteps::keep(std::span<const CheckpointInfo> checkpoints) const {
  std::vector<std::int64_t> kept;
  for (const auto& info : checkpoints) {
    const bool due =
        exact_ ? info.step % interval_ == 0 : kept.empty() || info.step - kept.back() >= interval_;
    if (due) kept.push_back(info.step);
  }
  return newest(kept, max_to_keep_);
}

EveryNStepsClosest::EveryNStepsClosest(std::int64_t interval,
                                       std::optional<std::int64_t> max_to_keep)
    : interval_(
          positive(interval, "cairn::preservation_policy::EveryNStepsClosest", "the interval")),
      max_to_keep_(max_to_keep) {
  if (max_to_keep_) {
    non_negative(*max_to_keep_, "cairn::preservation_policy::EveryNStepsClosest", "max_to_keep");
  }
}

std::string EveryNStepsClosest::describe() const {
  return fmt::format("EveryNStepsClosest({}{})", interval_,
                     max_to_keep_ ? fmt::format(", max_to_keep {}", *max_to_keep_) : "");
}

std::set<std::int64_t> EveryNStepsClosest::keep(std::span<const CheckpointInfo> checkpoints) const {
  if (checkpoints.empty()) return {};
  // Orbax's rule: each step goes to the multiple k * n nearest to it, k = round(step / n) with
  // Python's round (a step halfway between two multiples goes to the even k); each multiple
  // keeps its closest step, the later of two as close. Integer arithmetic: exact for every step.
  struct Closest {
    std::int64_t step;
    std::int64_t distance;
  };
  std::map<std::int64_t, Closest> by_multiple;
  for (const auto& info : checkpoints) {
    const std::int64_t below = floor_div(info.step, interval_);
    const std::int64_t rest = info.step - below * interval_;  // in [0, n)
    const std::int64_t to_next = interval_ - rest;
    const bool up = rest > to_next || (rest == to_next && below % 2 != 0);
    const Closest here{info.step, up ? to_next : rest};
    auto [it, added] = by_multiple.try_emplace(up ? below + 1 : below, here);
    if (!added && here.distance <= it->second.distance) it->second = here;  // ascending steps
  }
  std::set<std::int64_t> kept{checkpoints.back().step};  // the newest is always kept
  for (const auto& [multiple, closest] : by_multiple) kept.insert(closest.step);
  return newest(std::vector<std::int64_t>(kept.begin(), kept.end()), max_to_keep_);
}

LatestDuration::LatestDuration(std::chrono::seconds duration,
                               std::function<std::chrono::system_clock::time_point()> clock)
    : duration_(duration), clock_(std::move(clock)) {
  non_negative(duration.count(), "cairn::preservation_policy::LatestDuration", "the duration (s)");
}

std::string LatestDuration::describe() const {
  return fmt::format("LatestDuration({} s)", duration_.count());
}

// keep() is pure in PreservationPolicy, so a policy that reads the time (this one, AnyOf)
// defines it too; should_keep() goes through keep_at() and never calls it. It answers as
// should_keep() without a time would.
std::set<std::int64_t> LatestDuration::keep(std::span<const CheckpointInfo> checkpoints) const {
  return keep_at(checkpoints, std::chrono::system_clock::now());
}

std::set<std::int64_t> LatestDuration::keep_at(std::span<const CheckpointInfo> checkpoints,
                                               std::chrono::system_clock::time_point at) const {
  // A clock of the policy's own replaces the time of the evaluation.
  const auto now = clock_ ? clock_() : at;
  std::set<std::int64_t> kept;
  for (const auto& info : checkpoints) {
    if (info.time >= now - duration_) kept.insert(info.step);
  }
  return kept;
}

EveryNSeconds::EveryNSeconds(std::chrono::seconds interval)
    : interval_(std::chrono::seconds(positive(
          interval.count(), "cairn::preservation_policy::EveryNSeconds", "the interval (s)"))) {}

std::string EveryNSeconds::describe() const {
  return fmt::format("EveryNSeconds({} s)", interval_.count());
}

std::set<std::int64_t> EveryNSeconds::keep(std::span<const CheckpointInfo> checkpoints) const {
  std::set<std::int64_t> kept;
  if (checkpoints.empty()) return kept;
  const auto t0 = checkpoints.front().time;
  std::set<std::int64_t> windows_seen;
  for (const auto& info : checkpoints) {
    // floor(floor(elapsed in s) / interval) == floor(elapsed / interval) for a whole interval.
    const auto elapsed = std::chrono::floor<std::chrono::seconds>(info.time - t0);
    const std::int64_t window = floor_div(elapsed.count(), interval_.count());
    if (windows_seen.insert(window).second) kept.insert(info.step);
  }
  return kept;
}

BestN::BestN(std::int64_t n, BestMode mode, bool keep_checkpoints_without_metrics)
    : n_(non_negative(n, "cairn::preservation_policy::BestN", "n")),
      mode_(mode),
      keep_without_metrics_(keep_checkpoints_without_metrics) {
  if (mode != BestMode::min && mode != BestMode::max) {
    throw InvalidArgument(
        fmt::format("cairn::preservation_policy::BestN: invalid mode {}", static_cast<int>(mode)));
  }
}

std::string BestN::describe() const {
  return fmt::format("BestN({}, {}{})", n_, mode_ == BestMode::min ? "min" : "max",
                     keep_without_metrics_ ? ", keep checkpoints without metrics" : "");
}

std::set<std::int64_t> BestN::keep(std::span<const CheckpointInfo> checkpoints) const {
  std::set<std::int64_t> kept;
  if (checkpoints.size() <= static_cast<std::size_t>(n_)) {
    for (const auto& info : checkpoints) kept.insert(info.step);
    return kept;
  }
  std::vector<const CheckpointInfo*> ranked;
  for (const auto& info : checkpoints) {
    if (info.metric) {
      ranked.push_back(&info);
    } else if (keep_without_metrics_) {
      kept.insert(info.step);
    }
  }
  // Best first. A strict weak order even with NaN (NaN after every number) because steps are
  // distinct: equal metrics are ordered by step, the later one first.
  const bool max = mode_ == BestMode::max;
  std::sort(ranked.begin(), ranked.end(), [max](const CheckpointInfo* a, const CheckpointInfo* b) {
    const double x = *a->metric;
    const double y = *b->metric;
    const bool x_nan = std::isnan(x);
    const bool y_nan = std::isnan(y);
    if (x_nan != y_nan) return y_nan;
    if (!x_nan && x != y) return max ? x > y : x < y;
    return a->step > b->step;
  });
  const std::size_t n = std::min(ranked.size(), static_cast<std::size_t>(n_));
  for (std::size_t i = 0; i < n; ++i) kept.insert(ranked[i]->step);
  return kept;
}

CustomSteps::CustomSteps(std::set<std::int64_t> steps) : steps_(std::move(steps)) {}

std::string CustomSteps::describe() const {
  return fmt::format("CustomSteps({})", steps_text(steps_));
}

std::set<std::int64_t> CustomSteps::keep(std::span<const CheckpointInfo> checkpoints) const {
  std::set<std::int64_t> kept;
  for (const auto& info : checkpoints) {
    if (steps_.contains(info.step)) kept.insert(info.step);
  }
  return kept;
}

ShouldKeepFn::ShouldKeepFn(std::function<bool(std::int64_t step)> fn) : fn_(std::move(fn)) {
  if (!fn_) {
    throw InvalidArgument("cairn::preservation_policy::ShouldKeepFn: the function is empty");
  }
}

std::string ShouldKeepFn::describe() const { return "ShouldKeepFn"; }

std::set<std::int64_t> ShouldKeepFn::keep(std::span<const CheckpointInfo> checkpoints) const {
  std::set<std::int64_t> kept;
  for (const auto& info : checkpoints) {
    if (fn_(info.step)) kept.insert(info.step);
  }
  return kept;
}

AnyOf::AnyOf(std::vector<PreservationPolicyPtr> policies)
    : policies_(checked_policies(std::move(policies), "cairn::preservation_policy::AnyOf")) {}

std::string AnyOf::describe() const { return list_text(policies_); }

std::set<std::int64_t> AnyOf::keep(std::span<const CheckpointInfo> checkpoints) const {
  return keep_at(checkpoints, std::chrono::system_clock::now());
}

std::set<std::int64_t> AnyOf::keep_at(std::span<const CheckpointInfo> checkpoints,
                                      std::chrono::system_clock::time_point now) const {
  std::set<std::int64_t> kept;
  for (const auto& policy : policies_) kept.merge(policy->should_keep(checkpoints, now));
  return kept;
}

}  // namespace preservation_policy

std::vector<std::int64_t> steps_to_delete(
    const PreservationPolicy& policy, std::span<const CheckpointInfo> checkpoints,
    std::optional<std::chrono::system_clock::time_point> now) {
  const std::set<std::int64_t> kept =
      policy.should_keep(checkpoints, now.value_or(std::chrono::system_clock::now()));
  std::vector<std::int64_t> doomed;
  if (checkpoints.empty()) return doomed;
  // The newest committed checkpoint is never deleted: it is what a restart resumes from.
  for (const auto& info : checkpoints.first(checkpoints.size() - 1)) {
    if (!kept.contains(info.step)) doomed.push_back(info.step);
  }
  return doomed;
}

// --- the plain options -----------------------------------------------------------------------

SaveDecisionPolicyPtr make_save_policy(const PlainSaveOptions& options) {
  using namespace save_policy;
  std::vector<SaveDecisionPolicyPtr> parts;
  if (options.should_save_fn) {
    // As Orbax: should_save_fn replaces the interval, the steps and the initial save.
    parts.push_back(std::make_shared<const ShouldSaveFn>(options.should_save_fn));
  } else {
    non_negative(options.save_interval_steps, "cairn::make_save_policy", "save_interval_steps");
    if (options.save_interval_steps > 0) {
      parts.push_back(std::make_shared<const FixedInterval>(options.save_interval_steps));
    }
    if (!options.save_on_steps.empty()) {
      parts.push_back(std::make_shared<const SpecificSteps>(options.save_on_steps));
    }
  }
  parts.push_back(std::make_shared<const PreemptionCheckpointing>());
  if (!options.should_save_fn) parts.push_back(std::make_shared<const InitialSave>());
  return std::make_shared<const save_policy::AnyOf>(std::move(parts));
}

PreservationPolicyPtr make_preservation_policy(const PlainPreservationOptions& options) {
  using namespace preservation_policy;
  constexpr const char* kWho = "cairn::make_preservation_policy";
  // Check every option, even those that change nothing without max_to_keep.
  if (options.max_to_keep) non_negative(*options.max_to_keep, kWho, "max_to_keep");
  if (options.keep_period) positive(*options.keep_period, kWho, "keep_period");
  if (options.keep_time_interval) {
    positive(options.keep_time_interval->count(), kWho, "keep_time_interval (s)");
  }
  if (!options.max_to_keep) return std::make_shared<const PreserveAll>();

  std::vector<PreservationPolicyPtr> parts;
  if (options.has_best_fn) {
    parts.push_back(std::make_shared<const BestN>(*options.max_to_keep, options.best_mode,
                                                  options.keep_checkpoints_without_metrics));
  } else {
    parts.push_back(std::make_shared<const LatestN>(*options.max_to_keep));
  }
  if (options.keep_period) {
    parts.push_back(std::make_shared<const EveryNSteps>(*options.keep_period));
  }
  if (options.keep_time_interval) {
    parts.push_back(std::make_shared<const EveryNSeconds>(*options.keep_time_interval));
  }
  if (parts.size() == 1) return std::move(parts.front());
  return std::make_shared<const preservation_policy::AnyOf>(std::move(parts));
}

}  // namespace cairn
