// cairn — CheckpointManagerOptions (internal): validation, and the policies and the step name
// format the manager works with.
#pragma once

#include <cairn/manager.hpp>

#include <string>

namespace cairn::manager {

/// Checks `options` as a CheckpointManager does before it touches anything. Not collective
/// (every rank checks the same options). Throws InvalidArgument naming the option, or both
/// options when two exclude each other (as Orbax does: preservation_policy with max_to_keep,
/// keep_period or keep_time_interval; step_name_format with step_prefix or
/// step_format_fixed_length).
void validate_options(const CheckpointManagerOptions& options);

/// The save decision policy the manager asks: save_decision_policy with a preemption save, or
/// the one built from the plain fields. Not collective. Throws InvalidArgument.
[[nodiscard]] SaveDecisionPolicyPtr save_policy_of(const CheckpointManagerOptions& options);

/// The preservation policy: preservation_policy, or the one built from the plain fields. Not
/// collective. Throws InvalidArgument.
[[nodiscard]] PreservationPolicyPtr keep_policy_of(const CheckpointManagerOptions& options);

/// The step name format: step_name_format when given, else Orbax's standard format of
/// step_prefix and step_format_fixed_length, or `<step_prefix><step>` when `joined` (a root
/// written with that naming). Not collective. Throws InvalidArgument.
[[nodiscard]] StepNameFormatPtr naming_of(const CheckpointManagerOptions& options, bool joined);

/// Whether a root whose cairn-root.json is `root_metadata` names its steps
/// `<step_prefix><step>` with the step_prefix of `options`: it records that prefix (not
/// empty) and no step_name_format. Not collective; never throws beyond std::bad_alloc.
[[nodiscard]] bool uses_joined_names(const boost::json::object& root_metadata,
                                     const CheckpointManagerOptions& options);

/// The settings of `options` that decide where and how saves go, as the `key=value` fields of
/// the manager's `manager.opened` log line (read_only, async, zero_copy,
/// device_staging, staging_bytes, max_to_keep, save_interval_steps, incremental, local_dir).
/// Not collective; never throws beyond std::bad_alloc.
[[nodiscard]] std::string describe_options(const CheckpointManagerOptions& options);

}  // namespace cairn::manager
