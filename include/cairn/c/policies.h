/* cairn C ABI — save decision and preservation policy objects. Part of <cairn/cairn.h>, which
 * includes every part and states the conventions of the ABI (status codes, option structs,
 * collective calls). */
#ifndef CAIRN_C_POLICIES_H
#define CAIRN_C_POLICIES_H

#include <cairn/c/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- policies */

/* Composable policy objects (cairn/policies.hpp) for cairn_manager_options: a save decision
 * policy (when to save) and a preservation policy (which committed steps to keep). A policy is
 * an immutable value: the constructors below make a new handle, cairn_*_policy_any_of combines
 * handles (it keeps its own references, so the handles given to it may be freed at once), and
 * a manager keeps a reference to the policies of its options. None of these functions is
 * collective. Every constructor fails with CAIRN_ERR_INVALID_ARGUMENT for a NULL `out` or an
 * argument out of range (named in cairn_last_error()). */
typedef struct cairn_save_policy cairn_save_policy;
typedef struct cairn_preservation_policy cairn_preservation_policy; /* which steps to keep */

/* Saves every step that is a multiple of `interval` (> 0). */
CAIRN_C_API cairn_status cairn_save_policy_fixed_interval(int64_t interval,
                                                          cairn_save_policy** out);
/* Saves exactly the `count` steps at `steps` (NULL with count 0: none). */
CAIRN_C_API cairn_status cairn_save_policy_specific_steps(const int64_t* steps, size_t count,
                                                          cairn_save_policy** out);
/* Saves whenever no save is in flight and the last save is at least `minimum_interval_s`
 * seconds old (0: no minimum; must not be negative). The primary rank's clock decides. */
CAIRN_C_API cairn_status cairn_save_policy_continuous(int64_t minimum_interval_s,
                                                      cairn_save_policy** out);
/* Saves when a preemption notice has been reached. */
CAIRN_C_API cairn_status cairn_save_policy_preemption(cairn_save_policy** out);
/* Saves when the root holds no checkpoint yet, whatever the step. */
CAIRN_C_API cairn_status cairn_save_policy_initial(cairn_save_policy** out);
/* Decides whether to save `step` (cairn_manager_options.should_save_fn): nonzero for yes. The
 * manager calls it on its primary rank only and gives every rank that answer. */
typedef int (*cairn_should_save_fn)(int64_t step, void* user_data);
/* Saves when fn(step, user_data) returns nonzero (fn must not be NULL). */
CAIRN_C_API cairn_status cairn_save_policy_fn(cairn_should_save_fn fn, void* user_data,
                                              cairn_save_policy** out);
/* Decides whether to save `step` knowing the newest saved step (Orbax's should_save_fn(step,
 * latest_step)): `latest_step` is that step when `has_latest` is nonzero (0 when there is
 * none). Nonzero for yes. Called on the primary rank only. */
typedef int (*cairn_should_save_latest_fn)(int64_t step, int64_t latest_step, int has_latest,
                                           void* user_data);
/* Saves when fn(step, latest_step, has_latest, user_data) returns nonzero (fn must not be
 * NULL). */
CAIRN_C_API cairn_status cairn_save_policy_fn_latest(cairn_should_save_latest_fn fn,
                                                     void* user_data, cairn_save_policy** out);
/* Saves when any of the `count` policies at `policies` says so, asked in order (count 0:
 * never saves). CAIRN_ERR_INVALID_ARGUMENT for a NULL list with count > 0 or a NULL element. */
CAIRN_C_API cairn_status cairn_save_policy_any_of(const cairn_save_policy* const* policies,
                                                  size_t count, cairn_save_policy** out);
/* A short description such as "AnyOf(FixedInterval(10), PreemptionCheckpointing)" in *text,
 * to be freed with cairn_free(). */
CAIRN_C_API cairn_status cairn_save_policy_describe(const cairn_save_policy* policy, char** text);
/* Frees the handle (NULL is ignored); managers and combinations using it keep their own
 * reference. */
CAIRN_C_API void cairn_save_policy_free(cairn_save_policy* policy);

/* Keeps every checkpoint. */
CAIRN_C_API cairn_status cairn_preservation_policy_preserve_all(cairn_preservation_policy** out);
/* Keeps the `n` (>= 0) checkpoints with the highest steps. */
CAIRN_C_API cairn_status cairn_preservation_policy_latest_n(int64_t n,
                                                            cairn_preservation_policy** out);
/* Keeps the checkpoints whose step is a multiple of `interval` (> 0). */
CAIRN_C_API cairn_status cairn_preservation_policy_every_n_steps(int64_t interval,
                                                                 cairn_preservation_policy** out);
/* Keeps one checkpoint per window of `interval_s` (> 0) seconds (see
 * cairn::preservation_policy::EveryNSeconds). */
CAIRN_C_API cairn_status cairn_preservation_policy_every_n_seconds(int64_t interval_s,
                                                                   cairn_preservation_policy** out);
/* Keeps, with `exact_interval` nonzero, the checkpoints whose step is a multiple of `interval`
 * (> 0); with `exact_interval` 0, the first checkpoint and then each first one at least
 * `interval` steps after the one kept before it (Orbax EveryNSteps(exact_interval=False)).
 * `max_to_keep` >= 0 keeps only the newest that many of those; CAIRN_KEEP_ALL (-1): all. */
CAIRN_C_API cairn_status cairn_preservation_policy_every_n_steps_ex(
    int64_t interval, int exact_interval, int64_t max_to_keep, cairn_preservation_policy** out);
/* Orbax EveryNStepsClosest: each checkpoint belongs to the multiple of `interval` (> 0) nearest
 * to its step (halfway: the even quotient, as Python's round); each multiple keeps its closest
 * checkpoint (of two as close, the later one), and the newest is kept too (see
 * cairn::preservation_policy::EveryNStepsClosest); `max_to_keep` as above. */
CAIRN_C_API cairn_status cairn_preservation_policy_every_n_steps_closest(
    int64_t interval, int64_t max_to_keep, cairn_preservation_policy** out);
/* The time now in nanoseconds since the Unix epoch (1970-01-01 UTC), for a manager's clock
 * (cairn_manager_options.clock) or a policy's: a test's fake clock. A manager calls it on its
 * primary rank only (for the preemption deadline: on every rank). It cannot report a failure:
 * give every rank the same time. */
typedef int64_t (*cairn_clock_fn)(void* user_data);
/* Keeps the checkpoints saved at most `duration_s` (>= 0) seconds before now (Orbax
 * LatestDuration); now is clock(clock_user_data), or the system clock when `clock` is NULL. A
 * manager evaluates it on its primary rank only. */
CAIRN_C_API cairn_status cairn_preservation_policy_latest_duration(int64_t duration_s,
                                                                   cairn_clock_fn clock,
                                                                   void* clock_user_data,
                                                                   cairn_preservation_policy** out);
/* Whether to keep the committed checkpoint `step` (Orbax's should_keep_fn): nonzero keeps it.
 * Called by the manager's primary rank only, when retention runs. */
typedef int (*cairn_should_keep_fn)(int64_t step, void* user_data);
/* Keeps the checkpoints for which fn(step, user_data) returns nonzero (fn must not be NULL). */
CAIRN_C_API cairn_status cairn_preservation_policy_fn(cairn_should_keep_fn fn, void* user_data,
                                                      cairn_preservation_policy** out);
/* Keeps the `n` (>= 0) checkpoints with the best metric (the manager's best_metric; best_mode
 * CAIRN_BEST_MAX or CAIRN_BEST_MIN), and, when keep_without_metrics is nonzero, those saved
 * without it. */
CAIRN_C_API cairn_status cairn_preservation_policy_best_n(int64_t n, int best_mode,
                                                          int keep_without_metrics,
                                                          cairn_preservation_policy** out);
/* Keeps the checkpoints whose step is one of the `count` steps at `steps`. */
CAIRN_C_API cairn_status cairn_preservation_policy_custom_steps(const int64_t* steps, size_t count,
                                                                cairn_preservation_policy** out);
/* Keeps what any of the `count` policies keeps (count 0: keeps nothing but the newest step,
 * which a manager always keeps). CAIRN_ERR_INVALID_ARGUMENT for a NULL list with count > 0 or
 * a NULL element. */
CAIRN_C_API cairn_status
cairn_preservation_policy_any_of(const cairn_preservation_policy* const* policies, size_t count,
                                 cairn_preservation_policy** out);
/* A short description such as "AnyOf(LatestN(3), EveryNSteps(100))" in *text (free with
 * cairn_free()). */
CAIRN_C_API cairn_status cairn_preservation_policy_describe(const cairn_preservation_policy* policy,
                                                            char** text);
/* Frees the handle (NULL is ignored). */
CAIRN_C_API void cairn_preservation_policy_free(cairn_preservation_policy* policy);

#ifdef __cplusplus
}
#endif

#endif /* CAIRN_C_POLICIES_H */
