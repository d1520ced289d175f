// cairn C ABI — C callbacks (function pointer and user data) as the C++ callables and
// objects of the manager: clocks, save predicates, keep predicates, best metrics, commit
// notices and step name formats.
#pragma once

#include <cairn/cairn.h>
#include <cairn/manager.hpp>
#include <cairn/policies.hpp>
#include <cairn/storage.hpp>

#include <boost/json/object.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>

namespace cairn::capi {

/// The C++ rule of a derived leaf of a restore (`what` names it in errors). Throws
/// InvalidArgument for a NULL target or source path; the fill function fails the restore
/// naming the target when the C function returns nonzero.
std::pair<std::string, DerivedLeaf> derived_leaf_from_c(const cairn_derived_leaf& c,
                                                        const std::string& what);

/// The clock that `fn(user_data)` gives (nanoseconds since the Unix epoch); the system clock
/// (an empty function) when `fn` is NULL. Never throws beyond std::bad_alloc.
std::function<std::chrono::system_clock::time_point()> clock_from_c(cairn_clock_fn fn,
                                                                    void* user_data);

/// The should_save_fn(step, latest_step) of a C predicate (not NULL). Never throws beyond
/// std::bad_alloc.
ShouldSaveFunction should_save_from_c(cairn_should_save_latest_fn fn, void* user_data);

/// The best_fn of a C function (not NULL): the metrics are passed as JSON text. Never throws
/// beyond std::bad_alloc.
std::function<std::optional<double>(const boost::json::object& metrics)> best_fn_from_c(
    cairn_best_fn fn, void* user_data);

/// The on_commit of a C function (not NULL): the metrics are passed as JSON text; a nonzero
/// return throws InvalidArgument naming the step.
std::function<void(std::int64_t step, const boost::json::object& metrics)> on_commit_from_c(
    cairn_on_commit_fn fn, void* user_data);

/// A preservation policy keeping the steps for which `fn` returns nonzero. Throws
/// InvalidArgument when `fn` is NULL.
PreservationPolicyPtr should_keep_policy(cairn_should_keep_fn fn, void* user_data);

/// A step name format calling `build` and `parse`; `description` (NULL: "custom") is what
/// describe() says. Throws InvalidArgument when either function is NULL.
StepNameFormatPtr step_name_format_from_c(cairn_step_name_build_fn build,
                                          cairn_step_name_parse_fn parse, void* user_data,
                                          const char* description);

}  // namespace cairn::capi
