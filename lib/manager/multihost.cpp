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
  if (options.host_id) {
    // Every rank sees every host id, so a bad one is refused on every rank alike.
    const auto ids = comm.allgather(static_cast<std::int64_t>(*options.host_id));
    for (std::size_t r = 0; r < ids.size(); ++r) {
      if (ids[r] < 0) {
        throw InvalidArgument(fmt::format(
            "MultihostCheckpoint: rank {} gave host_id {}, which is negative", r, ids[r]));
      }
      for (std::size_t q = 0; q < r; ++q) {
        if (ids[q] == ids[r]) {
          throw InvalidArgument(fmt::format(
              "MultihostCheckpoint: ranks {} and {} both gave host_id {}; each process needs "
              "its own directory",
              q, r, ids[r]));
        }
      }
    }
  }
  directory_ = text + fmt::format("-{}", options.host_id.value_or(comm.rank()));
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

std::filesystem::path MultihostCheckpoint::step_path(std::int64_t step) const {
  return manager_->step_path(step);
}

std::optional<std::int64_t> MultihostCheckpoint::latest_checkpoint() {
  // The manager is over MPI_COMM_SELF: this lists this process's directory alone.
  const auto steps = manager_->all_steps(true);
  if (steps.empty()) return std::nullopt;
  return steps.back();
}

std::int64_t MultihostCheckpoint::common_or_given(std::optional<std::int64_t> step,
                                                  const char* what) {
  if (!step) {
    const auto common = latest_common_step();
    if (!common) {
      throw NotFound(directory_.string(),
                     fmt::format("multihost {}: no checkpoint found that every process has "
                                 "(this process's directory: '{}')",
                                 what, directory_.string()));
    }
    return *common;
  }
  const auto steps = manager_->all_steps();
  const bool have = std::find(steps.begin(), steps.end(), *step) != steps.end();
  if (!comm_.all(have)) {
    throw NotFound(
        directory_.string(),
        fmt::format("multihost {}: step {} is not committed on every process{}", what, *step,
                    have ? "" : fmt::format(" (not in '{}')", directory_.string())));
  }
  return *step;
}

std::int64_t MultihostCheckpoint::save(const ArrayTree& state) {
  // current_ is alike on every process and latest_common_step() agrees over them all, so
  // every process numbers the same step; save(step, state) checks it anyway.
  comm_.agree({.operation = "multihost save (numbered)", .structure = state.structure_hash()});
  const std::int64_t step = current_ ? *current_ + 1 : latest_common_step().value_or(0) + 1;
  save(step, state);
  return step;
}

std::int64_t MultihostCheckpoint::restore(ArrayTree& state) {
  comm_.agree({.operation = "multihost restore (latest)", .structure = state.structure_hash()});
  const std::int64_t step = common_or_given(std::nullopt, "restore");
  comm_.run_all(fmt::format("multihost restore of step {}:", step), [&] {
    const ArrayTreeRestore args(state);
    state = Checkpointer::result_as<ArrayTree>(manager_->restore(step, &args));
  });
  current_ = step;
  restored_from_ = step;
  return step;
}

ArrayTree MultihostCheckpoint::restore_dict(std::optional<std::int64_t> step) {
  comm_.agree({.operation = step ? "multihost restore_dict (step)" : "multihost restore_dict",
               .step = step.value_or(-1)});
  const std::int64_t chosen = common_or_given(step, "restore_dict");
  ArrayTree out;
  comm_.run_all(fmt::format("multihost restore_dict of step {}:", chosen), [&] {
    // As saved: each process's manager is over MPI_COMM_SELF, so it reads its own boxes.
    const ArrayTreeRestore args(AsSavedOptions{});
    out = Checkpointer::result_as<ArrayTree>(manager_->restore(chosen, &args));
  });
  current_ = chosen;
  restored_from_ = chosen;
  return out;
}

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
  (void)common_or_given(step, "restore");
  comm_.run_all(fmt::format("multihost restore of step {}:", step), [&] {
    const ArrayTreeRestore args(state);
    state = Checkpointer::result_as<ArrayTree>(manager_->restore(step, &args));
  });
  current_ = step;
  restored_from_ = step;
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
  restored_from_ = *common;
  return *common;
}

}  // namespace cairn
