// cairn C ABI — the composable save decision and preservation policies as opaque handles.
#include <cairn/policies.hpp>

#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "capi/callbacks.hpp"
#include "capi/handles.hpp"
#include "capi/status.hpp"

using cairn::capi::deref;
using cairn::capi::guarded;
using cairn::capi::out_param;

namespace {

// A new handle of type `Handle` holding `policy` in *out.
template <class Handle, class Policy>
void make(Handle** out, std::shared_ptr<const Policy> policy) {
  out_param(out, "out");
  *out = new Handle{std::move(policy)};
}

std::set<std::int64_t> step_set(const std::int64_t* steps, std::size_t count) {
  if (count > 0 && steps == nullptr) throw cairn::InvalidArgument("steps is NULL");
  return count == 0 ? std::set<std::int64_t>{} : std::set<std::int64_t>(steps, steps + count);
}

// The policies held by `count` handles at `list`, checked for NULL.
template <class Handle>
auto policies_of(const Handle* const* list, std::size_t count) {
  if (count > 0 && list == nullptr) throw cairn::InvalidArgument("policies is NULL");
  std::vector<decltype(Handle::policy)> policies;
  for (std::size_t i = 0; i < count; ++i) {
    if (list[i] == nullptr) {
      throw cairn::InvalidArgument("policies[" + std::to_string(i) + "] is NULL");
    }
    policies.push_back(list[i]->policy);
  }
  return policies;
}

cairn::BestMode best_mode_from_c(int mode) {
  switch (mode) {
    case CAIRN_BEST_MAX: return cairn::BestMode::max;
    case CAIRN_BEST_MIN: return cairn::BestMode::min;
    default:
      throw cairn::InvalidArgument("best_mode must be CAIRN_BEST_MAX or CAIRN_BEST_MIN, not " +
                                   std::to_string(mode));
  }
}

// max_to_keep of the EveryNSteps policies: CAIRN_KEEP_ALL is none.
std::optional<std::int64_t> keep_count(std::int64_t max_to_keep) {
  if (max_to_keep == CAIRN_KEEP_ALL) return std::nullopt;
  if (max_to_keep < 0) {
    throw cairn::InvalidArgument("max_to_keep must be CAIRN_KEEP_ALL (-1), 0 or positive, not " +
                                 std::to_string(max_to_keep));
  }
  return max_to_keep;
}

}  // namespace

extern "C" {

cairn_status cairn_save_policy_fixed_interval(int64_t interval, cairn_save_policy** out) {
  return guarded(__func__, [&] {
    make(out, cairn::SaveDecisionPolicyPtr(
                  std::make_shared<cairn::save_policy::FixedInterval>(interval)));
  });
}

cairn_status cairn_save_policy_specific_steps(const int64_t* steps, size_t count,
                                              cairn_save_policy** out) {
  return guarded(__func__, [&] {
    make(out, cairn::SaveDecisionPolicyPtr(
                  std::make_shared<cairn::save_policy::SpecificSteps>(step_set(steps, count))));
  });
}

cairn_status cairn_save_policy_continuous(int64_t minimum_interval_s, cairn_save_policy** out) {
  return guarded(__func__, [&] {
    make(out,
         cairn::SaveDecisionPolicyPtr(std::make_shared<cairn::save_policy::ContinuousCheckpointing>(
             std::chrono::seconds(minimum_interval_s))));
  });
}

cairn_status cairn_save_policy_preemption(cairn_save_policy** out) {
  return guarded(__func__, [&] {
    make(out, cairn::SaveDecisionPolicyPtr(
                  std::make_shared<cairn::save_policy::PreemptionCheckpointing>()));
  });
}

cairn_status cairn_save_policy_initial(cairn_save_policy** out) {
  return guarded(__func__, [&] {
    make(out, cairn::SaveDecisionPolicyPtr(std::make_shared<cairn::save_policy::InitialSave>()));
  });
}

cairn_status cairn_save_policy_fn(cairn_should_save_fn fn, void* user_data,
                                  cairn_save_policy** out) {
  return guarded(__func__, [&] {
    if (fn == nullptr) throw cairn::InvalidArgument("fn is NULL");
    make(out, cairn::SaveDecisionPolicyPtr(std::make_shared<cairn::save_policy::ShouldSaveFn>(
                  [fn, user_data](std::int64_t step) { return fn(step, user_data) != 0; })));
  });
}

cairn_status cairn_save_policy_fn_latest(cairn_should_save_latest_fn fn, void* user_data,
                                         cairn_save_policy** out) {
  return guarded(__func__, [&] {
    if (fn == nullptr) throw cairn::InvalidArgument("fn is NULL");
    make(out, cairn::SaveDecisionPolicyPtr(std::make_shared<cairn::save_policy::ShouldSaveFn>(
                  cairn::capi::should_save_from_c(fn, user_data))));
  });
}

cairn_status cairn_save_policy_any_of(const cairn_save_policy* const* policies, size_t count,
                                      cairn_save_policy** out) {
  return guarded(__func__, [&] {
    make(out, cairn::SaveDecisionPolicyPtr(
                  std::make_shared<cairn::save_policy::AnyOf>(policies_of(policies, count))));
  });
}

cairn_status cairn_save_policy_describe(const cairn_save_policy* policy, char** text) {
  return guarded(__func__, [&] {
    out_param(text, "text");
    *text = cairn::capi::copy_out(deref(policy, "policy").policy->describe());
  });
}

void cairn_save_policy_free(cairn_save_policy* policy) { delete policy; }

cairn_status cairn_preservation_policy_preserve_all(cairn_preservation_policy** out) {
  return guarded(__func__, [&] {
    make(out,
         cairn::PreservationPolicyPtr(std::make_shared<cairn::preservation_policy::PreserveAll>()));
  });
}

cairn_status cairn_preservation_policy_latest_n(int64_t n, cairn_preservation_policy** out) {
  return guarded(__func__, [&] {
    make(out,
         cairn::PreservationPolicyPtr(std::make_shared<cairn::preservation_policy::LatestN>(n)));
  });
}

cairn_status cairn_preservation_policy_every_n_steps(int64_t interval,
                                                     cairn_preservation_policy** out) {
  return guarded(__func__, [&] {
    make(out, cairn::PreservationPolicyPtr(
                  std::make_shared<cairn::preservation_policy::EveryNSteps>(interval)));
  });
}

cairn_status cairn_preservation_policy_every_n_seconds(int64_t interval_s,
                                                       cairn_preservation_policy** out) {
  return guarded(__func__, [&] {
    make(out,
         cairn::PreservationPolicyPtr(std::make_shared<cairn::preservation_policy::EveryNSeconds>(
             std::chrono::seconds(interval_s))));
  });
}

cairn_status cairn_preservation_policy_every_n_steps_ex(int64_t interval, int exact_interval,
                                                        int64_t max_to_keep,
                                                        cairn_preservation_policy** out) {
  return guarded(__func__, [&] {
    make(out,
         cairn::PreservationPolicyPtr(std::make_shared<cairn::preservation_policy::EveryNSteps>(
             interval, exact_interval != 0, keep_count(max_to_keep))));
  });
}

cairn_status cairn_preservation_policy_every_n_steps_closest(int64_t interval, int64_t max_to_keep,
                                                             cairn_preservation_policy** out) {
  return guarded(__func__, [&] {
    make(out, cairn::PreservationPolicyPtr(
                  std::make_shared<cairn::preservation_policy::EveryNStepsClosest>(
                      interval, keep_count(max_to_keep))));
  });
}

cairn_status cairn_preservation_policy_latest_duration(int64_t duration_s, cairn_clock_fn clock,
                                                       void* clock_user_data,
                                                       cairn_preservation_policy** out) {
  return guarded(__func__, [&] {
    make(out,
         cairn::PreservationPolicyPtr(std::make_shared<cairn::preservation_policy::LatestDuration>(
             std::chrono::seconds(duration_s), cairn::capi::clock_from_c(clock, clock_user_data))));
  });
}

cairn_status cairn_preservation_policy_fn(cairn_should_keep_fn fn, void* user_data,
                                          cairn_preservation_policy** out) {
  return guarded(__func__, [&] { make(out, cairn::capi::should_keep_policy(fn, user_data)); });
}

cairn_status cairn_preservation_policy_best_n(int64_t n, int best_mode, int keep_without_metrics,
                                              cairn_preservation_policy** out) {
  return guarded(__func__, [&] {
    make(out, cairn::PreservationPolicyPtr(std::make_shared<cairn::preservation_policy::BestN>(
                  n, best_mode_from_c(best_mode), keep_without_metrics != 0)));
  });
}

cairn_status cairn_preservation_policy_custom_steps(const int64_t* steps, size_t count,
                                                    cairn_preservation_policy** out) {
  return guarded(__func__, [&] {
    make(out,
         cairn::PreservationPolicyPtr(
             std::make_shared<cairn::preservation_policy::CustomSteps>(step_set(steps, count))));
  });
}

cairn_status cairn_preservation_policy_any_of(const cairn_preservation_policy* const* policies,
                                              size_t count, cairn_preservation_policy** out) {
  return guarded(__func__, [&] {
    make(out, cairn::PreservationPolicyPtr(std::make_shared<cairn::preservation_policy::AnyOf>(
                  policies_of(policies, count))));
  });
}

cairn_status cairn_preservation_policy_describe(const cairn_preservation_policy* policy,
                                                char** text) {
  return guarded(__func__, [&] {
    out_param(text, "text");
    *text = cairn::capi::copy_out(deref(policy, "policy").policy->describe());
  });
}

void cairn_preservation_policy_free(cairn_preservation_policy* policy) { delete policy; }

}  // extern "C"
