// Save decision and preservation policies: each policy on a table of inputs, the plain Orbax
// options as whole runs (which steps are saved and which remain after saving steps a..b), and
// the rules every run relies on: the newest committed step is never deleted, ties keep the
// later step, a checkpoint kept once by a time window stays kept.
#include <cairn/error.hpp>
#include <cairn/policies.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using namespace cairn;
using namespace std::chrono_literals;
using Steps = std::set<std::int64_t>;
using Clock = std::chrono::system_clock;

namespace {

// A fixed, arbitrary origin: no test reads the clock.
const Clock::time_point kT0 = Clock::time_point{} + std::chrono::hours(24 * 365 * 50);

template <class P, class... Args>
std::shared_ptr<const P> make(Args&&... args) {
  return std::make_shared<const P>(std::forward<Args>(args)...);
}

// Checkpoints at `steps`, saved 10 s apart (step s at kT0 + 10 s * s), without metrics.
std::vector<CheckpointInfo> infos(const Steps& steps) {
  std::vector<CheckpointInfo> out;
  for (const auto step : steps) out.push_back({.step = step, .time = kT0 + 10s * step});
  return out;
}

// Checkpoints with metrics: step -> metric (nullopt: saved without metrics).
std::vector<CheckpointInfo> with_metrics(const std::map<std::int64_t, std::optional<double>>& m) {
  std::vector<CheckpointInfo> out;
  for (const auto& [step, metric] : m) {
    out.push_back({.step = step, .time = kT0 + 10s * step, .metric = metric});
  }
  return out;
}

}  // namespace

// --- save decision ---------------------------------------------------------------------------

TEST(SavePolicy, DecidesAsDocumented) {
  namespace sp = save_policy;
  const SaveContext base{.step = 0, .now = kT0};
  auto at = [&](std::int64_t step) {
    SaveContext c = base;
    c.step = step;
    return c;
  };
  auto saved_ago = [&](std::chrono::milliseconds ago) {
    SaveContext c = base;
    c.step = 11;
    c.last_saved_step = 10;
    c.last_saved_time = kT0 - ago;
    return c;
  };
  auto with = [&](std::function<void(SaveContext&)> edit) {
    SaveContext c = base;
    c.step = 7;
    edit(c);
    return c;
  };
  struct Case {
    const char* name;
    SaveDecisionPolicyPtr policy;
    SaveContext context;
    bool expected;
  };
  const auto every5 = make<sp::FixedInterval>(5);
  const auto on_3_7 = make<sp::SpecificSteps>(Steps{3, 7});
  const auto continuous60 = make<sp::ContinuousCheckpointing>(60s);
  const auto continuous0 = make<sp::ContinuousCheckpointing>();
  const auto by_fn = make<sp::ShouldSaveFn>([](std::int64_t s) { return s % 3 == 1; });
  const auto any = make<sp::AnyOf>(std::vector<SaveDecisionPolicyPtr>{
      make<sp::FixedInterval>(10), make<sp::PreemptionCheckpointing>()});
  const std::vector<Case> cases = {
      {"interval: step 0", every5, at(0), true},
      {"interval: multiple", every5, at(15), true},
      {"interval: not a multiple", every5, at(14), false},
      {"specific: listed", on_3_7, at(7), true},
      {"specific: not listed", on_3_7, at(5), false},
      {"continuous: no save yet", continuous60, at(3), true},
      {"continuous: too recent", continuous60, saved_ago(59999ms), false},
      {"continuous: exactly the interval", continuous60, saved_ago(60s), true},
      {"continuous: long ago", continuous60, saved_ago(1h), true},
      {"continuous: last save in the future", continuous60, saved_ago(-5s), false},
      {"continuous: in flight", continuous60,
       with([&](SaveContext& c) { c.is_saving_in_progress = true; }), false},
      {"continuous 0: just saved", continuous0, saved_ago(0s), true},
      {"continuous 0: last save in the future", continuous0, saved_ago(-5s), true},
      {"continuous 0: in flight", continuous0,
       with([&](SaveContext& c) { c.is_saving_in_progress = true; }), false},
      {"preemption: reached", make<sp::PreemptionCheckpointing>(),
       with([&](SaveContext& c) { c.reached_preemption = true; }), true},
      {"preemption: not reached", make<sp::PreemptionCheckpointing>(), at(7), false},
      {"initial: no checkpoint yet", make<sp::InitialSave>(),
       with([&](SaveContext& c) { c.is_initial = true; }), true},
      {"initial: checkpoints exist", make<sp::InitialSave>(), at(7), false},
      {"fn: yes", by_fn, at(4), true},
      {"fn: no", by_fn, at(5), false},
      {"any: first", any, at(20), true},
      {"any: second", any, with([&](SaveContext& c) { c.reached_preemption = true; }), true},
      {"any: none", any, at(7), false},
      {"any: empty list never saves", make<sp::AnyOf>(std::vector<SaveDecisionPolicyPtr>{}),
       with([&](SaveContext& c) { c.is_initial = c.reached_preemption = true; }), false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.policy->should_save(c.context), c.expected) << c.policy->describe();
  }
}

TEST(SavePolicy, ShouldSaveFnErrorsPropagate) {
  const save_policy::ShouldSaveFn policy(
      [](std::int64_t) -> bool { throw std::runtime_error("no"); });
  EXPECT_THROW((void)policy.should_save({.step = 1}), std::runtime_error);
}

// --- preservation ----------------------------------------------------------------------------

TEST(PreservationPolicy, KeepsAsDocumented) {
  namespace pp = preservation_policy;
  struct Case {
    const char* name;
    PreservationPolicyPtr policy;
    std::vector<CheckpointInfo> checkpoints;
    Steps expected;
  };
  const auto nan = std::numeric_limits<double>::quiet_NaN();
  const auto metrics = with_metrics({{0, 0.5}, {1, 0.9}, {2, 0.1}, {3, 0.7}, {4, 0.3}});
  const auto ties = with_metrics({{0, 1.0}, {1, 2.0}, {2, 1.0}, {3, 2.0}, {4, 0.0}});
  const auto partial = with_metrics({{0, 3.0}, {1, {}}, {2, 1.0}, {3, {}}, {4, 2.0}});
  const auto nans = with_metrics({{0, nan}, {1, 5.0}, {2, nan}, {3, -1.0}});
  const std::vector<Case> cases = {
      {"all", make<pp::PreserveAll>(), infos({1, 2, 3}), {1, 2, 3}},
      {"latest 3 of 10", make<pp::LatestN>(3), infos({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}), {7, 8, 9}},
      {"latest 3 of 2", make<pp::LatestN>(3), infos({4, 8}), {4, 8}},
      {"latest 0", make<pp::LatestN>(0), infos({4, 8}), {}},
      {"latest of none", make<pp::LatestN>(2), {}, {}},
      {"every 4 steps", make<pp::EveryNSteps>(4), infos({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}), {0, 4, 8}},
      {"every 4 steps, none on it", make<pp::EveryNSteps>(4), infos({1, 2, 3}), {}},
      {"custom", make<pp::CustomSteps>(Steps{2, 5, 100}), infos({0, 1, 2, 3, 4, 5, 6}), {2, 5}},
      {"should keep fn: odd steps",
       make<pp::ShouldKeepFn>([](std::int64_t step) { return step % 2 == 1; }),
       infos({0, 1, 2, 3, 4, 5, 6}),
       {1, 3, 5}},
      {"best 2 max", make<pp::BestN>(2, BestMode::max), metrics, {1, 3}},
      {"best 2 min", make<pp::BestN>(2, BestMode::min), metrics, {2, 4}},
      {"best 1 max, tie keeps the later", make<pp::BestN>(1, BestMode::max), ties, {3}},
      {"best 3 max, tie at the cut keeps the later",
       make<pp::BestN>(3, BestMode::max),
       ties,
       {1, 2, 3}},
      {"best 2 min, tie keeps the later", make<pp::BestN>(2, BestMode::min), ties, {2, 4}},
      {"best 5 of 5: all", make<pp::BestN>(5, BestMode::max, false), partial, {0, 1, 2, 3, 4}},
      {"best 1 max, keep without metrics",
       make<pp::BestN>(1, BestMode::max, true),
       partial,
       {0, 1, 3}},
      {"best 1 max, drop without metrics", make<pp::BestN>(1, BestMode::max, false), partial, {0}},
      {"best 2 min, drop without metrics",
       make<pp::BestN>(2, BestMode::min, false),
       partial,
       {2, 4}},
      {"best 0, keep without metrics", make<pp::BestN>(0, BestMode::max, true), partial, {1, 3}},
      {"best 1 max, NaN is worst", make<pp::BestN>(1, BestMode::max), nans, {1}},
      {"best 1 min, NaN is worst", make<pp::BestN>(1, BestMode::min), nans, {3}},
      {"best 3 min, NaNs last, later NaN first",
       make<pp::BestN>(3, BestMode::min),
       nans,
       {1, 2, 3}},
      {"best, all without metrics, dropped",
       make<pp::BestN>(1, BestMode::max, false),
       infos({1, 2, 3}),
       {}},
      {"any: union",
       make<pp::AnyOf>(
           std::vector<PreservationPolicyPtr>{make<pp::LatestN>(2), make<pp::EveryNSteps>(5)}),
       infos({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}),
       {0, 5, 10, 11}},
      {"any: overlapping",
       make<pp::AnyOf>(std::vector<PreservationPolicyPtr>{make<pp::LatestN>(2),
                                                          make<pp::CustomSteps>(Steps{3, 4})}),
       infos({1, 2, 3, 4}),
       {3, 4}},
      {"any: empty keeps nothing",
       make<pp::AnyOf>(std::vector<PreservationPolicyPtr>{}),
       infos({1, 2}),
       {}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.policy->should_keep(c.checkpoints), c.expected) << c.policy->describe();
  }
}

TEST(PreservationPolicy, ShouldKeepFnAsksEachStepOnceAndPassesErrorsOn) {
  std::vector<std::int64_t> asked;
  const preservation_policy::ShouldKeepFn policy([&](std::int64_t step) {
    asked.push_back(step);
    return step == 4;
  });
  EXPECT_EQ(policy.should_keep(infos({2, 4, 9})), Steps{4});
  EXPECT_EQ(asked, (std::vector<std::int64_t>{2, 4, 9}));
  EXPECT_EQ(policy.describe(), "ShouldKeepFn");
  const preservation_policy::ShouldKeepFn failing(
      [](std::int64_t) -> bool { throw std::runtime_error("no"); });
  EXPECT_THROW((void)failing.should_keep(infos({1})), std::runtime_error);
}

TEST(PreservationPolicy, EveryNSecondsKeepsTheFirstOfEachWindow) {
  // Windows of 60 s from the first checkpoint; the times are fixed, never read from a clock.
  const std::vector<std::pair<std::int64_t, std::chrono::milliseconds>> at = {
      {0, 0ms},  {1, 30s},      {2, 59999ms}, {3, 60s},  {4, 61s},
      {5, 150s}, {6, 179999ms}, {7, 181s},    {8, 400s}, {9, 401s},
  };
  std::vector<CheckpointInfo> checkpoints;
  for (const auto& [step, t] : at) checkpoints.push_back({.step = step, .time = kT0 + t});
  const preservation_policy::EveryNSeconds policy(60s);
  const Steps kept = policy.should_keep(checkpoints);
  EXPECT_EQ(kept, (Steps{0, 3, 5, 7, 8}));

  // Deleting what was not kept changes nothing: the windows stay anchored at step 0.
  std::vector<CheckpointInfo> survivors;
  for (const auto& info : checkpoints) {
    if (kept.contains(info.step)) survivors.push_back(info);
  }
  EXPECT_EQ(policy.should_keep(survivors), kept);

  // A checkpoint whose clock went back before the first falls in a window of its own.
  checkpoints.push_back({.step = 10, .time = kT0 - 1s});
  checkpoints.push_back({.step = 11, .time = kT0 - 2s});
  EXPECT_EQ(policy.should_keep(checkpoints), (Steps{0, 3, 5, 7, 8, 10}));
}

// Orbax's EveryNStepsClosest: the cases of its preservation_policy_test.py, then its rule where
// a nearest-to-each-multiple reading would differ: a step halfway between two multiples goes
// to the even quotient (Python's round), and the newest step is always kept.
TEST(PreservationPolicy, EveryNStepsClosestFollowsOrbax) {
  namespace pp = preservation_policy;
  struct Case {
    std::int64_t interval;
    std::optional<std::int64_t> max_to_keep;
    Steps steps;
    Steps expected;
  };
  const Steps sparse = {0, 1, 2, 4, 5, 8, 9, 13, 14, 25};
  const std::vector<Case> cases = {
      // Orbax's parameters.
      {1, {}, {0, 1, 2, 3, 4}, {0, 1, 2, 3, 4}},
      {3, {}, {0, 1, 2, 4}, {0, 4}},
      {3, {}, sparse, {0, 4, 5, 9, 13, 14, 25}},
      {1, 3, {0, 1, 2, 3, 4}, {2, 3, 4}},
      {3, 3, sparse, {13, 14, 25}},
      // 2 (2 / 4 = 0.5) belongs to 0; 6 (1.5) and 10 (2.5) both to 8, which keeps the later.
      {4, {}, {0, 2, 6, 10}, {0, 10}},
      // 6 (6 / 4 = 1.5) belongs to 8, not to 4: 4 keeps 5.
      {4, {}, {0, 5, 6, 20}, {0, 5, 6, 20}},
      // 2 (0.5) belongs to 0, which is closer to it: no step stands for 4.
      {4, {}, {0, 2, 20}, {0, 20}},
      // The newest is kept although its multiple has a closer step.
      {10, {}, {0, 10, 11}, {0, 10, 11}},
      {10, {}, {9, 10, 12}, {10, 12}},
      // Steps far from 0 (no walk over every multiple up to them).
      {1000,
       {},
       {999'999'999'999, 1'000'000'000'499, 1'000'000'000'501},
       {999'999'999'999, 1'000'000'000'501}},
      {4, 1, {0, 2, 6, 10}, {10}},
      {4, {}, {}, {}},
  };
  for (const auto& c : cases) {
    const pp::EveryNStepsClosest policy(c.interval, c.max_to_keep);
    // Saved 10 s apart in order: the steps far from 0 would overflow a time of 10 s * step.
    std::vector<CheckpointInfo> checkpoints;
    for (const auto step : c.steps) {
      const auto k = static_cast<std::int64_t>(checkpoints.size());
      checkpoints.push_back({.step = step, .time = kT0 + 10s * k});
    }
    EXPECT_EQ(policy.should_keep(checkpoints), c.expected) << policy.describe();
  }
}

TEST(PreservationPolicy, RejectsUnsortedCheckpoints) {
  const preservation_policy::PreserveAll all;
  const std::vector<CheckpointInfo> unsorted = {{.step = 1}, {.step = 3}, {.step = 2}};
  EXPECT_THROW((void)all.should_keep(unsorted), InvalidArgument);
  const std::vector<CheckpointInfo> repeated = {{.step = 2}, {.step = 2}};
  EXPECT_THROW((void)all.should_keep(repeated), InvalidArgument);
  EXPECT_THROW((void)steps_to_delete(all, repeated), InvalidArgument);
}

TEST(StepsToDelete, NeverTheNewest) {
  namespace pp = preservation_policy;
  struct Case {
    const char* name;
    PreservationPolicyPtr policy;
    std::vector<CheckpointInfo> checkpoints;
    std::vector<std::int64_t> expected;
  };
  const std::vector<Case> cases = {
      {"latest 2", make<pp::LatestN>(2), infos({0, 1, 2, 3, 4}), {0, 1, 2}},
      {"latest 0 keeps the newest", make<pp::LatestN>(0), infos({0, 1, 2, 3, 4}), {0, 1, 2, 3}},
      {"keep nothing, one checkpoint", make<pp::CustomSteps>(Steps{}), infos({7}), {}},
      {"none", make<pp::LatestN>(0), {}, {}},
      {"best 1 max, the newest is worst",
       make<pp::BestN>(1, BestMode::max),
       with_metrics({{0, 1.0}, {1, 3.0}, {2, 2.0}, {3, 0.0}}),
       {0, 2}},
      {"best 1 max, drop without metrics, the newest has none",
       make<pp::BestN>(1, BestMode::max, false),
       with_metrics({{0, 1.0}, {1, 3.0}, {2, {}}}),
       {0}},
      {"everything kept", make<pp::PreserveAll>(), infos({0, 1, 2}), {}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(steps_to_delete(*c.policy, c.checkpoints), c.expected) << c.policy->describe();
  }
}

// --- invalid arguments -----------------------------------------------------------------------

TEST(Policies, RejectInvalidArguments) {
  namespace sp = save_policy;
  namespace pp = preservation_policy;
  const std::vector<std::pair<const char*, std::function<void()>>> cases = {
      {"FixedInterval(0)", [] { (void)sp::FixedInterval(0); }},
      {"FixedInterval(-5)", [] { (void)sp::FixedInterval(-5); }},
      {"ContinuousCheckpointing(-1 s)", [] { (void)sp::ContinuousCheckpointing(-1s); }},
      {"ShouldSaveFn(empty)", [] { (void)sp::ShouldSaveFn(std::function<bool(std::int64_t)>{}); }},
      {"save AnyOf(null)",
       [] {
         (void)sp::AnyOf({make<sp::InitialSave>(), SaveDecisionPolicyPtr{}});
       }},
      {"LatestN(-1)", [] { (void)pp::LatestN(-1); }},
      {"EveryNSteps(0)", [] { (void)pp::EveryNSteps(0); }},
      {"EveryNSeconds(0 s)", [] { (void)pp::EveryNSeconds(0s); }},
      {"EveryNSeconds(-60 s)", [] { (void)pp::EveryNSeconds(-60s); }},
      {"BestN(-1)", [] { (void)pp::BestN(-1, BestMode::min); }},
      {"ShouldKeepFn(empty)", [] { (void)pp::ShouldKeepFn(std::function<bool(std::int64_t)>{}); }},
      {"preservation AnyOf(null)", [] { (void)pp::AnyOf({PreservationPolicyPtr{}}); }},
      {"save_interval_steps -1", [] { (void)make_save_policy({.save_interval_steps = -1}); }},
      {"max_to_keep -1", [] { (void)make_preservation_policy({.max_to_keep = -1}); }},
      {"keep_period 0",
       [] { (void)make_preservation_policy({.max_to_keep = 2, .keep_period = 0}); }},
      {"keep_period -3 without max_to_keep",
       [] { (void)make_preservation_policy({.keep_period = -3}); }},
      {"keep_time_interval 0", [] { (void)make_preservation_policy({.keep_time_interval = 0s}); }},
  };
  for (const auto& [name, construct] : cases) {
    SCOPED_TRACE(name);
    EXPECT_THROW(construct(), InvalidArgument);
  }
}

// --- the plain options -----------------------------------------------------------------------

namespace {

struct Run {
  Steps saved;
  Steps remaining;
};

// What a manager does with the policies while a run offers steps first..last: decide, save
// (step s at kT0 + `seconds_per_step` * s, with metric(s)), then delete what the preservation
// policy does not keep.
Run simulate(const PlainSaveOptions& save, const PlainPreservationOptions& keep, std::int64_t first,
             std::int64_t last, const Steps& preempted = {},
             const std::function<std::optional<double>(std::int64_t)>& metric = {},
             std::chrono::seconds seconds_per_step = 10s) {
  const auto save_policy = make_save_policy(save);
  const auto keep_policy = make_preservation_policy(keep);
  Run run;
  std::vector<CheckpointInfo> committed;
  for (std::int64_t step = first; step <= last; ++step) {
    const auto now = kT0 + seconds_per_step * step;
    SaveContext context{.step = step,
                        .now = now,
                        .reached_preemption = preempted.contains(step),
                        .is_initial = committed.empty()};
    if (!committed.empty()) {
      context.last_saved_step = committed.back().step;
      context.last_saved_time = committed.back().time;
    }
    if (!save_policy->should_save(context)) continue;
    run.saved.insert(step);
    committed.push_back(
        {.step = step, .time = now, .metric = metric ? metric(step) : std::nullopt});
    const auto doomed = steps_to_delete(*keep_policy, committed);
    std::erase_if(committed, [&](const CheckpointInfo& info) {
      return std::find(doomed.begin(), doomed.end(), info.step) != doomed.end();
    });
  }
  for (const auto& info : committed) run.remaining.insert(info.step);
  return run;
}

std::function<std::optional<double>(std::int64_t)> table(
    std::map<std::int64_t, std::optional<double>> values) {
  return [values = std::move(values)](std::int64_t step) -> std::optional<double> {
    const auto it = values.find(step);
    return it == values.end() ? std::nullopt : it->second;
  };
}

}  // namespace

TEST(PlainOptions, SaveDecisions) {
  struct Case {
    const char* name;
    PlainSaveOptions options;
    std::int64_t first;
    std::int64_t last;
    Steps preempted;
    Steps expected;
  };
  const auto every_4th = [](std::int64_t s) { return s % 4 == 3; };
  const std::vector<Case> cases = {
      {"defaults: every step", {}, 0, 5, {}, {0, 1, 2, 3, 4, 5}},
      {"interval 5", {.save_interval_steps = 5}, 0, 12, {}, {0, 5, 10}},
      {"interval 5, the first save is the initial one",
       {.save_interval_steps = 5},
       3,
       12,
       {},
       {3, 5, 10}},
      {"interval 5 and steps",
       {.save_interval_steps = 5, .save_on_steps = {3, 7}},
       0,
       10,
       {},
       {0, 3, 5, 7, 10}},
      {"interval 0: steps only, after the initial save",
       {.save_interval_steps = 0, .save_on_steps = {4, 8}},
       1,
       10,
       {},
       {1, 4, 8}},
      {"interval 0, no steps: the initial save only", {.save_interval_steps = 0}, 1, 10, {}, {1}},
      {"preemption between intervals", {.save_interval_steps = 5}, 0, 10, {7}, {0, 5, 7, 10}},
      {"should_save_fn replaces interval, steps and initial save",
       {.save_interval_steps = 1, .save_on_steps = {2}, .should_save_fn = every_4th},
       0,
       10,
       {},
       {3, 7}},
      {"should_save_fn that never saves, preemption still saves",
       {.should_save_fn = [](std::int64_t) { return false; }},
       0,
       10,
       {6},
       {6}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(simulate(c.options, {}, c.first, c.last, c.preempted).saved, c.expected);
  }
}

TEST(PlainOptions, RemainingSteps) {
  struct Case {
    const char* name;
    PlainSaveOptions save;
    PlainPreservationOptions keep;
    std::int64_t last;
    std::function<std::optional<double>(std::int64_t)> metric;
    std::chrono::seconds seconds_per_step;
    Steps expected;
  };
  // Metrics per step for the best_fn cases.
  const auto metrics = table({{0, 0.1}, {1, 0.9}, {2, 0.5}, {3, 0.9}, {4, 0.2}, {5, 0.3}});
  const auto even_only = [](std::int64_t s) -> std::optional<double> {
    if (s % 2 == 0) return static_cast<double>(s);
    return std::nullopt;
  };
  const std::vector<Case> cases = {
      {"no max_to_keep keeps all", {}, {}, 5, {}, 10s, {0, 1, 2, 3, 4, 5}},
      {"keep_period alone deletes nothing", {}, {.keep_period = 4}, 5, {}, 10s, {0, 1, 2, 3, 4, 5}},
      {"max_to_keep 3", {}, {.max_to_keep = 3}, 9, {}, 10s, {7, 8, 9}},
      {"max_to_keep 0 keeps the newest", {}, {.max_to_keep = 0}, 5, {}, 10s, {5}},
      {"max_to_keep 2 and keep_period 4",
       {.save_interval_steps = 2},
       {.max_to_keep = 2, .keep_period = 4},
       10,
       {},
       10s,
       {0, 4, 8, 10}},
      // Step s saved at 25 s * s: 60 s windows start at steps 0, 3, 5, 8 and 10.
      {"max_to_keep 1 and keep_time_interval 60 s",
       {},
       {.max_to_keep = 1, .keep_time_interval = 60s},
       10,
       {},
       25s,
       {0, 3, 5, 8, 10}},
      // Metrics 0.1 0.9 0.5 0.9 0.2 0.3: the best two are 3 and 1 (equal; the later first).
      {"best max, max_to_keep 2, plus the newest",
       {},
       {.max_to_keep = 2, .has_best_fn = true, .best_mode = BestMode::max},
       5,
       metrics,
       10s,
       {1, 3, 5}},
      {"best min, max_to_keep 2, plus the newest",
       {},
       {.max_to_keep = 2, .has_best_fn = true, .best_mode = BestMode::min},
       5,
       metrics,
       10s,
       {0, 4, 5}},
      {"best min, max_to_keep 2, keep_period 3",
       {},
       {.max_to_keep = 2, .keep_period = 3, .has_best_fn = true, .best_mode = BestMode::min},
       5,
       metrics,
       10s,
       {0, 3, 4, 5}},
      {"best, no max_to_keep keeps all",
       {},
       {.has_best_fn = true},
       5,
       metrics,
       10s,
       {0, 1, 2, 3, 4, 5}},
      {"best max 1, keep checkpoints without metrics",
       {},
       {.max_to_keep = 1, .has_best_fn = true, .keep_checkpoints_without_metrics = true},
       5,
       even_only,
       10s,
       {1, 3, 4, 5}},
      {"best max 1, drop checkpoints without metrics",
       {},
       {.max_to_keep = 1, .has_best_fn = true, .keep_checkpoints_without_metrics = false},
       5,
       even_only,
       10s,
       {4, 5}},
      {"best max 1, no metric ever: the newest only",
       {},
       {.max_to_keep = 1, .has_best_fn = true, .keep_checkpoints_without_metrics = false},
       5,
       {},
       10s,
       {5}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(simulate(c.save, c.keep, 0, c.last, {}, c.metric, c.seconds_per_step).remaining,
              c.expected);
  }
}

TEST(PlainOptions, BuildOrbaxDefaultPolicies) {
  const std::vector<std::pair<PlainSaveOptions, std::string>> saves = {
      {{}, "AnyOf(FixedInterval(1), PreemptionCheckpointing, InitialSave)"},
      {{.save_interval_steps = 0, .save_on_steps = {5, 1}},
       "AnyOf(SpecificSteps({1, 5}), PreemptionCheckpointing, InitialSave)"},
      {{.should_save_fn = [](std::int64_t) { return true; }},
       "AnyOf(ShouldSaveFn, PreemptionCheckpointing)"},
  };
  for (const auto& [options, expected] : saves) {
    EXPECT_EQ(make_save_policy(options)->describe(), expected);
  }
  const std::vector<std::pair<PlainPreservationOptions, std::string>> keeps = {
      {{}, "PreserveAll"},
      {{.keep_period = 10, .keep_time_interval = 1h}, "PreserveAll"},
      {{.max_to_keep = 3}, "LatestN(3)"},
      {{.max_to_keep = 3, .keep_period = 10, .keep_time_interval = 1h},
       "AnyOf(LatestN(3), EveryNSteps(10), EveryNSeconds(3600 s))"},
      {{.max_to_keep = 2,
        .has_best_fn = true,
        .best_mode = BestMode::min,
        .keep_checkpoints_without_metrics = false},
       "BestN(2, min)"},
      {{.max_to_keep = 2, .has_best_fn = true}, "BestN(2, max, keep checkpoints without metrics)"},
  };
  for (const auto& [options, expected] : keeps) {
    EXPECT_EQ(make_preservation_policy(options)->describe(), expected);
  }
}
