// MultihostCheckpoint: per-process managers on MPI_COMM_SELF, agreed over the job's Comm.
#include <cairn/multihost.hpp>
#include <fmt/format.h>

#include <algorithm>

#include "base/log.hpp"

namespace cairn {

std::optional<std::int64_t> latest_common_step(const Comm& comm,
                                               std::span<const std::int64_t> local_steps) {
  const auto common = comm.common_steps(local_steps);
  if (common.empty()) return std::nullopt;
  return common.back();
}

MultihostCheckpoint::MultihostCheckpoint(const Comm& comm, std::filesystem::path base,
                                         MultihostOptions options)
    : comm_(comm) {
  if (options.max_to_keep < 2) {
    throw InvalidArgument(
        fmt::format("MultihostCheckpoint needs max_to_keep >= 2, not {}: with "
                    "one, a save some process did not finish could leave no "
                    "common step",
                    options.max_to_keep));
  }
  // CLU strips trailing '/' of the base, so that "ckpt/" and "ckpt" name the same directories.
  std::string text = base.string();
  while (text.size() > 1 && text.back() == '/') text.pop_back();
  if (text.empty()) throw InvalidArgument("MultihostCheckpoint: the base directory is empty");
  directory_ = text + fmt::format("-{}", comm.rank());
  self_ = std::make_unique<Comm>(MPI_COMM_SELF,
                                 CommOptions{.barrier_timeout = comm.options().barrier_timeout});
  comm_.run_all(fmt::format("opening '{}':", directory_.string()), [&] {
    manager_ = std::make_unique<CheckpointManager>(
        *self_, directory_,
        CheckpointManagerOptions{.max_to_keep = options.max_to_keep,
                                 .step_name_format = step_name_format::joined(options.step_prefix),
                                 .cleanup_tmp_directories = true,
                                 .enable_async = false});
  });
}

MultihostCheckpoint::~MultihostCheckpoint() = default;

std::optional<std::int64_t> MultihostCheckpoint::latest_common_step() {
  const auto steps = manager_->all_steps();
  return cairn::latest_common_step(comm_, steps);
}

void MultihostCheckpoint::save(std::int64_t step, const ArrayTree& state) {
  comm_.agree({.operation = "multihost save", .step = step, .structure = state.structure_hash()});
  comm_.run_all(fmt::format("multihost save of step {}:", step), [&] {
    // CLU deletes the future before it saves: a step not older than this one, or newer than
    // the one the run went on from, was saved by a run that this one replaces.
    for (std::int64_t existing : manager_->all_steps()) {
      if (existing < step && !(current_ && existing > *current_)) continue;
      base::log::info("multihost.drop_future_step", "dir=\"{}\" step={} saving={}",
                      directory_.string(), existing, step);
      manager_->delete_step(existing);
    }
    // Each process stores only its own boxes: sparse with respect to the global arrays.
    manager_->save(step, ArrayTreeSave(state, {.allow_sparse = true}), {.force = true});
  });
  current_ = step;
}

void MultihostCheckpoint::restore(std::int64_t step, ArrayTree& state) {
  comm_.agree(
      {.operation = "multihost restore", .step = step, .structure = state.structure_hash()});
  const auto steps = manager_->all_steps();
  const bool have = std::find(steps.begin(), steps.end(), step) != steps.end();
  if (!comm_.all(have)) {
    throw NotFound(
        directory_.string(),
        fmt::format("multihost restore: step {} is not committed on every process{}", step,
                    have ? "" : fmt::format(" (not in '{}')", directory_.string())));
  }
  comm_.run_all(fmt::format("multihost restore of step {}:", step), [&] {
    const ArrayTreeRestore args(state);
    state = Checkpointer::result_as<ArrayTree>(manager_->restore(step, &args));
  });
  current_ = step;
}

std::int64_t MultihostCheckpoint::restore_or_initialize(ArrayTree& state,
                                                        std::int64_t initial_step) {
  comm_.agree(
      {.operation = "multihost restore_or_initialize", .structure = state.structure_hash()});
  const auto common = latest_common_step();
  // Steps newer than the common one (all of them when there is none) were finished by some
  // processes only: no restart can use them, and left in place they would outrank the steps
  // saved from here on.
  comm_.run_all("multihost: dropping the steps that not every process has:", [&] {
    for (std::int64_t step : manager_->all_steps()) {
      if (common && step <= *common) continue;
      base::log::info("multihost.drop_future_step", "dir=\"{}\" step={}", directory_.string(),
                      step);
      manager_->delete_step(step);
    }
  });
  if (!common) {
    save(initial_step, state);
    return initial_step;
  }
  comm_.run_all(fmt::format("multihost restore of step {}:", *common), [&] {
    const ArrayTreeRestore args(state);
    state = Checkpointer::result_as<ArrayTree>(manager_->restore(*common, &args));
  });
  current_ = *common;
  return *common;
}

}  // namespace cairn
