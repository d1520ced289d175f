// CheckpointManagerOptions: what may be combined, and what the manager builds from them.
#include "manager/manager_options.hpp"

#include <fmt/format.h>

namespace cairn::manager {

void validate_options(const CheckpointManagerOptions& options) {
  if (options.local_level) {
    if (options.read_only) {
      throw InvalidArgument(
          "local_level and read_only exclude each other: a read-only manager "
          "reads the persistent level alone");
    }
    if (options.incremental) {
      throw InvalidArgument(
          "local_level and incremental exclude each other: drained steps are "
          "written whole");
    }
  }
  if (options.lock_lease < std::chrono::seconds(1)) {
    throw InvalidArgument(
        fmt::format("lock_lease must be at least 1 s, not {} s", options.lock_lease.count()));
  }
  if (options.save_interval_steps < 0) {
    throw InvalidArgument(fmt::format("save_interval_steps must not be negative, not {}",
                                      options.save_interval_steps));
  }
  if (options.incremental_full_every < 1) {
    throw InvalidArgument(fmt::format("incremental_full_every must be at least 1, not {}",
                                      options.incremental_full_every));
  }
  if (options.max_to_keep && *options.max_to_keep < 0) {
    throw InvalidArgument(
        fmt::format("max_to_keep must not be negative, not {}", *options.max_to_keep));
  }
  if (options.preservation_policy) {
    // Orbax raises here too: the plain fields would be silently ignored.
    const char* plain = options.max_to_keep          ? "max_to_keep"
                        : options.keep_period        ? "keep_period"
                        : options.keep_time_interval ? "keep_time_interval"
                                                     : nullptr;
    if (plain != nullptr) {
      throw InvalidArgument(fmt::format(
          "preservation_policy and {} cannot both be given: the policy ({}) replaces {}; put "
          "what {} asks for into the policy (preservation_policy::LatestN, EveryNSteps, "
          "EveryNSeconds, combined with AnyOf)",
          plain, options.preservation_policy->describe(), plain, plain));
    }
  }
  if (options.step_name_format &&
      (!options.step_prefix.empty() || options.step_format_fixed_length)) {
    throw InvalidArgument(fmt::format(
        "step_name_format and {} cannot both be given: the format ({}) names the steps alone",
        options.step_prefix.empty() ? "step_format_fixed_length" : "step_prefix",
        options.step_name_format->describe()));
  }
}

SaveDecisionPolicyPtr save_policy_of(const CheckpointManagerOptions& options) {
  // A policy object given by the caller gets the preemption save the plain options include.
  if (options.save_decision_policy) {
    return std::make_shared<save_policy::AnyOf>(std::vector<SaveDecisionPolicyPtr>{
        options.save_decision_policy, std::make_shared<save_policy::PreemptionCheckpointing>()});
  }
  return make_save_policy({.save_interval_steps = options.save_interval_steps,
                           .save_on_steps = options.save_on_steps,
                           .should_save_fn = options.should_save_fn});
}

namespace {

PreservationPolicyPtr base_keep_policy(const CheckpointManagerOptions& options) {
  if (options.preservation_policy) return options.preservation_policy;
  return make_preservation_policy(
      {.max_to_keep = options.max_to_keep,
       .keep_period = options.keep_period,
       .keep_time_interval = options.keep_time_interval,
       .has_best_fn = static_cast<bool>(options.best_fn),
       .best_mode = options.best_mode,
       .keep_checkpoints_without_metrics = options.keep_checkpoints_without_metrics});
}

}  // namespace

PreservationPolicyPtr keep_policy_of(const CheckpointManagerOptions& options) {
  PreservationPolicyPtr base = base_keep_policy(options);
  if (!options.should_keep_fn) return base;
  // As Orbax's should_keep_fn: kept besides what the other options keep.
  return std::make_shared<preservation_policy::AnyOf>(std::vector<PreservationPolicyPtr>{
      std::move(base),
      std::make_shared<preservation_policy::ShouldKeepFn>(options.should_keep_fn)});
}

StepNameFormatPtr naming_of(const CheckpointManagerOptions& options, bool joined) {
  if (options.step_name_format) return options.step_name_format;
  return joined ? step_name_format::joined(options.step_prefix, options.step_format_fixed_length)
                : step_name_format::standard(options.step_prefix, options.step_format_fixed_length);
}

bool uses_joined_names(const boost::json::object& root_metadata,
                       const CheckpointManagerOptions& options) {
  if (options.step_name_format || options.step_prefix.empty()) return false;
  if (root_metadata.contains("step_name_format")) return false;
  const auto* prefix = root_metadata.if_contains("step_prefix");
  return prefix != nullptr && prefix->is_string() && prefix->get_string() == options.step_prefix;
}

std::string describe_options(const CheckpointManagerOptions& options) {
  const AsyncOptions& async = options.async;
  return fmt::format(
      "read_only={} async={} zero_copy={} device_staging={} staging_bytes={} max_to_keep={} "
      "save_interval_steps={} incremental={} local_dir=\"{}\"",
      options.read_only, options.enable_async, async.zero_copy, async.device_staging,
      async.staging_bytes,
      options.max_to_keep ? fmt::format("{}", *options.max_to_keep) : std::string("all"),
      options.save_interval_steps, options.incremental,
      options.local_level ? options.local_level->directory.string() : std::string());
}

}  // namespace cairn::manager
