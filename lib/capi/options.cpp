// cairn C ABI — option structs: defaults and translation into the C++ options.
#include <boost/json/object.hpp>

#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include "capi/callbacks.hpp"
#include "capi/handles.hpp"
#include "capi/options.hpp"

namespace cairn::capi {
namespace {

std::chrono::milliseconds milliseconds_of(double seconds, const char* what) {
  if (!std::isfinite(seconds) || seconds <= 0 || seconds > 1e9) {
    throw InvalidArgument(std::string(what) + " must be a positive number of seconds, not " +
                          std::to_string(seconds));
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(seconds * 1000.0)));
}

StorageFormat format_from_c(int format) {
  switch (format) {
    case CAIRN_FORMAT_POSIX: return StorageFormat::posix;
    case CAIRN_FORMAT_HDF5: return StorageFormat::hdf5;
    default:
      throw InvalidArgument("unknown storage format " + std::to_string(format) +
                            ": use CAIRN_FORMAT_POSIX or CAIRN_FORMAT_HDF5");
  }
}

// best_fn for a metric name: the number stored under `name` in the step's metrics, or
// std::nullopt when it is missing or not a number, so that the step counts as saved without
// metrics (as in the C++ manager) instead of failing the retention that runs after a commit.
std::function<std::optional<double>(const boost::json::object&)> metric_reader(std::string name) {
  return [name = std::move(name)](const boost::json::object& metrics) -> std::optional<double> {
    const auto* value = metrics.if_contains(name);
    if (value == nullptr || !value->is_number()) return std::nullopt;
    return value->to_number<double>();
  };
}

// The files of a step (file_mode, file_group, write_timeout_s) of `c`.
CheckpointerOptions checkpointer_options(const cairn_manager_options& c) {
  CheckpointerOptions o;
  if (c.file_mode < -1 || c.file_mode > 07777) {
    throw InvalidArgument("file_mode must be -1 (the umask decides) or a mode up to 07777, not " +
                          std::to_string(c.file_mode));
  }
  if (c.file_mode >= 0) {
    o.file_options.path_permission_mode = std::filesystem::perms(c.file_mode);
  }
  if (c.file_group != nullptr) o.file_options.group = c.file_group;
  if (c.write_timeout_s != 0) {
    o.write_timeout = milliseconds_of(c.write_timeout_s, "write_timeout_s");
  }
  return o;
}

// The preemption options of `c` (enable_preemption set).
PreemptionOptions preemption_options(const cairn_manager_options& c) {
  PreemptionOptions p;
  if (c.preemption_signals != nullptr) {
    p.signals.assign(c.preemption_signals, c.preemption_signals + c.preemption_signals_count);
  }
  if (c.preemption_deadline < 0 || !std::isfinite(c.preemption_deadline)) {
    throw InvalidArgument("preemption_deadline must be a Unix time or 0");
  }
  if (c.preemption_deadline > 0) {
    p.deadline = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::duration<double>(c.preemption_deadline)));
  }
  p.use_slurm_end_time = c.preemption_use_slurm_end_time != 0;
  if (c.preemption_margin_s < 0 || !std::isfinite(c.preemption_margin_s)) {
    throw InvalidArgument("preemption_margin_s must not be negative");
  }
  p.margin = std::chrono::seconds(static_cast<std::int64_t>(c.preemption_margin_s));
  return p;
}

// step_prefix, step_format_fixed_length and step_name_format of `c` into `o`.
void set_step_naming(const cairn_manager_options& c, CheckpointManagerOptions& o) {
  if (c.step_prefix != nullptr) o.step_prefix = c.step_prefix;
  if (c.step_format_fixed_length < 0) {
    throw InvalidArgument("step_format_fixed_length must not be negative");
  }
  if (c.step_format_fixed_length > 0) o.step_format_fixed_length = c.step_format_fixed_length;
  switch (c.step_name_format) {
    case CAIRN_STEP_NAME_STANDARD: break;
    case CAIRN_STEP_NAME_JOINED:
      o.step_name_format = step_name_format::joined(o.step_prefix, o.step_format_fixed_length);
      o.step_prefix.clear();
      o.step_format_fixed_length.reset();
      break;
    case CAIRN_STEP_NAME_CLU:
    case CAIRN_STEP_NAME_CUSTOM:
      if (!o.step_prefix.empty() || o.step_format_fixed_length) {
        throw InvalidArgument(
            "step_prefix and step_format_fixed_length belong to CAIRN_STEP_NAME_STANDARD and "
            "CAIRN_STEP_NAME_JOINED; CAIRN_STEP_NAME_CLU and CAIRN_STEP_NAME_CUSTOM name steps "
            "alone");
      }
      o.step_name_format =
          c.step_name_format == CAIRN_STEP_NAME_CLU
              ? step_name_format::clu()
              : step_name_format_from_c(c.step_name_build, c.step_name_parse, c.step_name_user_data,
                                        c.step_name_description);
      break;
    default:
      throw InvalidArgument(
          "step_name_format must be one of CAIRN_STEP_NAME_STANDARD, _JOINED, "
          "_CLU and _CUSTOM, not " +
          std::to_string(c.step_name_format));
  }
}

// should_keep_fn: the C++ option of the same name, which keeps what it keeps besides what the
// preservation options keep, as Orbax's should_keep_fn does besides max_to_keep.
void add_should_keep(const cairn_manager_options& c, CheckpointManagerOptions& o) {
  o.should_keep_fn = [fn = c.should_keep_fn, user_data = c.should_keep_user_data](
                         std::int64_t step) { return fn(step, user_data) != 0; };
}

// The C++ compression of `c`; `what` names it in errors. CAIRN_COMPRESSION_DEFAULT is
// refused here: callers that allow it test for it first.
Compression compression_from_c(const cairn_compression& c, const std::string& what) {
  switch (c.kind) {
    case CAIRN_COMPRESSION_NONE: return Compression::none();
    case CAIRN_COMPRESSION_ZSTD: return Compression::zstd(c.level);
    case CAIRN_COMPRESSION_ZFP:
      return {.kind = Compression::Kind::zfp,
              .absolute_error = c.absolute_error,
              .relative_error = c.relative_error};
    default:
      throw InvalidArgument(what + ": unknown compression kind " + std::to_string(c.kind) +
                            ": use CAIRN_COMPRESSION_NONE, _ZSTD or _ZFP");
  }
}

// The save arguments of one leaf, from the caller's element `c` (completed with defaults).
std::pair<std::string, LeafSaveArgs> leaf_save_args(const cairn_leaf_save_args& c,
                                                    std::size_t index) {
  const std::string what = "save_args[" + std::to_string(index) + "]";
  std::string path(text(c.path, (what + ".path").c_str()));
  const std::string of_leaf = "save_args of leaf '" + path + "'";
  LeafSaveArgs args;
  if (c.dtype != -1) {
    try {
      args.dtype = dtype_from_c(c.dtype);
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(of_leaf + ": " + e.what());
    }
  }
  args.chunk_bytes = c.chunk_bytes;
  if (c.compression.kind != CAIRN_COMPRESSION_DEFAULT) {
    args.compression = compression_from_c(c.compression, of_leaf);
  }
  if (c.chunk_shape_ndim < 0 || c.chunk_shape_ndim > CAIRN_MAX_DIMS) {
    throw InvalidArgument(of_leaf + ": chunk_shape_ndim " + std::to_string(c.chunk_shape_ndim) +
                          " is outside 0.." + std::to_string(CAIRN_MAX_DIMS));
  }
  if (c.chunk_shape_ndim > 0) {
    if (c.chunk_shape == nullptr) throw InvalidArgument(of_leaf + ": chunk_shape is NULL");
    args.chunk_shape.assign(c.chunk_shape, c.chunk_shape + c.chunk_shape_ndim);
  }
  return {std::move(path), std::move(args)};
}

// The per-leaf save arguments and formats of `c` into `o`: its save_args array, whose
// elements lie the first element's struct_size apart (a caller built against an older cairn.h
// has shorter ones).
void set_save_args(const cairn_save_options& c, TreeSaveOptions& o) {
  auto& out = o.save_args;
  if (c.save_args_count == 0) return;
  if (c.save_args == nullptr) throw InvalidArgument("save_args is NULL");
  const std::size_t stride = c.save_args[0].struct_size;
  const auto* base = reinterpret_cast<const unsigned char*>(c.save_args);
  for (std::size_t i = 0; i < c.save_args_count; ++i) {
    const auto* element = reinterpret_cast<const cairn_leaf_save_args*>(base + i * stride);
    const auto full = read_options(element, default_leaf_save_args(), "save_args");
    if (i > 0 && element->struct_size != stride) {
      throw InvalidArgument("save_args[" + std::to_string(i) + "]: struct_size " +
                            std::to_string(element->struct_size) + " differs from save_args[0]'s");
    }
    auto [path, args] = leaf_save_args(full, i);
    if (full.format != -1) {
      try {
        o.leaf_formats[path] = format_from_c(full.format);
      } catch (const InvalidArgument& e) {
        throw InvalidArgument("save_args of leaf '" + path + "': " + e.what());
      }
    }
    if (!out.emplace(path, std::move(args)).second) {
      throw InvalidArgument("save_args names leaf '" + path + "' twice");
    }
  }
}

// The renames and resized leaves of `c` into `o`.
void set_restore_transforms(const cairn_restore_options& c, TreeRestoreOptions& o) {
  if (c.renames_count > 0 && c.renames == nullptr) throw InvalidArgument("renames is NULL");
  for (std::size_t i = 0; i < c.renames_count; ++i) {
    const std::string what = "renames[" + std::to_string(i) + "]";
    o.renames.push_back(
        {.target = std::string(text(c.renames[i].target, (what + ".target").c_str())),
         .saved = std::string(text(c.renames[i].saved, (what + ".saved").c_str()))});
  }
  o.default_to_original = c.default_to_original != 0;
  if (c.resize_leaves_count > 0 && c.resize_leaves == nullptr) {
    throw InvalidArgument("resize_leaves is NULL");
  }
  for (std::size_t i = 0; i < c.resize_leaves_count; ++i) {
    const cairn_leaf_resize& r = c.resize_leaves[i];
    std::string path(text(r.path, ("resize_leaves[" + std::to_string(i) + "].path").c_str()));
    if (r.fill == nullptr)
      throw InvalidArgument("resize_leaves: the fill of leaf '" + path + "' is NULL");
    o.resize_leaves.insert_or_assign(std::move(path), Scalar(dtype_from_c(r.fill_dtype), r.fill));
  }
}

}  // namespace

cairn_leaf_save_args default_leaf_save_args() noexcept {
  cairn_leaf_save_args a{};
  a.struct_size = sizeof a;
  a.dtype = -1;
  a.compression.kind = CAIRN_COMPRESSION_DEFAULT;
  a.format = -1;
  return a;
}

cairn_manager_options default_manager_options() noexcept {
  cairn_manager_options o{};
  o.struct_size = sizeof o;
  o.save_interval_steps = 1;
  o.max_to_keep = CAIRN_KEEP_ALL;
  o.best_mode = CAIRN_BEST_MAX;
  o.keep_checkpoints_without_metrics = 1;
  o.create = 1;
  o.barrier_timeout_s = 600.0;
  o.incremental_full_every = cairn::CheckpointManagerOptions{}.incremental_full_every;
  o.enable_async = 1;
  o.async_staging_bytes = std::size_t{1} << 30;
  o.preemption_use_slurm_end_time = 1;
  o.preemption_margin_s = 300.0;
  o.file_mode = -1;
  o.step_name_format = CAIRN_STEP_NAME_STANDARD;
  o.save_root_metadata = 1;
  o.local_keep = cairn::LocalLevelOptions{}.keep;
  o.persistent_every = cairn::LocalLevelOptions{}.persistent_every;
  o.drain_at_close = 1;
  return o;
}

cairn_save_options default_save_options() noexcept {
  cairn_save_options o{};
  o.struct_size = sizeof o;
  o.format = CAIRN_FORMAT_POSIX;
  o.fsync = 1;
  o.checksum_chunk_bytes = std::size_t{1} << 20;
  o.compression.kind = CAIRN_COMPRESSION_NONE;
  o.io_buffer_bytes = std::size_t{16} << 20;
  return o;
}

cairn_restore_options default_restore_options() noexcept {
  cairn_restore_options o{};
  o.struct_size = sizeof o;
  o.verify_checksums = 1;
  o.default_to_original = 1;
  o.restore_concurrent_bytes = std::size_t{16} << 20;
  return o;
}

cairn_multihost_options default_multihost_options() noexcept {
  cairn_multihost_options o{};
  o.struct_size = sizeof o;
  o.max_to_keep = 5;
  o.step_prefix = "ckpt-";
  return o;
}

cairn_array_desc default_array_desc() noexcept {
  cairn_array_desc d{};
  d.struct_size = sizeof d;
  d.dtype = CAIRN_FLOAT64;
  d.memory = CAIRN_MEMORY_HOST;
  return d;
}

CheckpointManagerOptions manager_options(const cairn_manager_options* options) {
  const auto c = read_options(options, default_manager_options(), "options");
  CheckpointManagerOptions o;
  o.save_interval_steps = c.save_interval_steps;
  if (c.save_on_steps_count > 0) {
    if (c.save_on_steps == nullptr) throw InvalidArgument("save_on_steps is NULL");
    o.save_on_steps.insert(c.save_on_steps, c.save_on_steps + c.save_on_steps_count);
  }
  if (c.should_save_fn != nullptr && c.should_save_latest_fn != nullptr) {
    throw InvalidArgument("give should_save_fn or should_save_latest_fn, not both");
  }
  if (c.should_save_fn != nullptr) {
    o.should_save_fn = [fn = c.should_save_fn, data = c.should_save_user_data](std::int64_t s) {
      return fn(s, data) != 0;
    };
  }
  if (c.should_save_latest_fn != nullptr) {
    o.should_save_fn = should_save_from_c(c.should_save_latest_fn, c.should_save_user_data);
  }
  // One meaning with the C++ manager: CAIRN_KEEP_ALL is its std::nullopt, 0 keeps the newest.
  if (c.max_to_keep < CAIRN_KEEP_ALL) {
    throw InvalidArgument("max_to_keep must be CAIRN_KEEP_ALL (-1), 0 or positive, not " +
                          std::to_string(c.max_to_keep));
  }
  if (c.max_to_keep != CAIRN_KEEP_ALL) o.max_to_keep = c.max_to_keep;
  if (c.keep_period < 0 || c.keep_time_interval_s < 0) {
    throw InvalidArgument("keep_period and keep_time_interval_s must not be negative");
  }
  if (c.keep_period > 0) o.keep_period = c.keep_period;
  if (c.keep_time_interval_s > 0)
    o.keep_time_interval = std::chrono::seconds(c.keep_time_interval_s);
  if (c.best_metric != nullptr && c.best_fn != nullptr) {
    throw InvalidArgument("give best_metric or best_fn, not both");
  }
  if (c.best_metric != nullptr) o.best_fn = metric_reader(c.best_metric);
  if (c.best_fn != nullptr) o.best_fn = best_fn_from_c(c.best_fn, c.best_user_data);
  switch (c.best_mode) {
    case CAIRN_BEST_MAX: o.best_mode = BestMode::max; break;
    case CAIRN_BEST_MIN: o.best_mode = BestMode::min; break;
    default:
      throw InvalidArgument("best_mode must be CAIRN_BEST_MAX or CAIRN_BEST_MIN, not " +
                            std::to_string(c.best_mode));
  }
  o.keep_checkpoints_without_metrics = c.keep_checkpoints_without_metrics != 0;
  if (c.save_decision_policy != nullptr) o.save_decision_policy = c.save_decision_policy->policy;
  if (c.preservation_policy != nullptr) o.preservation_policy = c.preservation_policy->policy;
  set_step_naming(c, o);
  o.save_root_metadata = c.save_root_metadata != 0;
  o.lightweight_initialize = c.lightweight_initialize != 0;
  o.prevent_write_metrics = c.prevent_write_metrics != 0;
  o.incremental = c.incremental != 0;
  o.incremental_full_every = c.incremental_full_every;
  o.clock = clock_from_c(c.clock, c.clock_user_data);
  if (c.local_dir != nullptr) {
    if (!(c.drain_bytes_per_second >= 0)) {
      throw InvalidArgument("drain_bytes_per_second must not be negative");
    }
    o.local_level = LocalLevelOptions{
        .directory = c.local_dir,
        .redundancy = LocalRedundancy::parse(c.local_redundancy ? c.local_redundancy : "none"),
        .keep = c.local_keep,
        .persistent_every = c.persistent_every,
        .drain_at_close = c.drain_at_close != 0,
        .drain_bytes_per_second = static_cast<std::uint64_t>(c.drain_bytes_per_second),
        .ranks_per_node = c.ranks_per_node};
  }
  if (c.metadata_json != nullptr) {
    auto metadata = parse_json(c.metadata_json, "metadata_json");
    if (!metadata.is_object()) {
      throw InvalidArgument("metadata_json must be a JSON object such as {\"run\": \"a\"}");
    }
    o.metadata = std::move(metadata.as_object());
  }
  o.create = c.create != 0;
  o.cleanup_tmp_directories = c.cleanup_tmp_directories != 0;
  o.read_only = c.read_only != 0;
  o.allow_non_empty_root = c.allow_non_empty_root != 0;
  if (c.todelete_subdir != nullptr) o.todelete_subdir = c.todelete_subdir;
  o.enable_background_delete = c.enable_background_delete != 0;
  o.single_host_load_and_broadcast = c.single_host_load_and_broadcast != 0;
  o.primary_host = c.primary_host;
  if (c.active_processes_count > 0) {
    if (c.active_processes == nullptr) throw InvalidArgument("active_processes is NULL");
    o.active_processes.assign(c.active_processes, c.active_processes + c.active_processes_count);
  }
  o.barrier_timeout = milliseconds_of(c.barrier_timeout_s, "barrier_timeout_s");
  o.enable_async = c.enable_async != 0;
  o.async.staging_bytes = c.async_staging_bytes;
  o.async.zero_copy = c.async_zero_copy != 0;
  o.async.device_staging = c.async_device_staging != 0;
  if (c.on_commit != nullptr) o.on_commit = on_commit_from_c(c.on_commit, c.on_commit_user_data);
  o.checkpointer = checkpointer_options(c);
  if (c.should_keep_fn != nullptr) add_should_keep(c, o);
  if (c.enable_preemption != 0) o.preemption = preemption_options(c);
  return o;
}

ManagerSaveOptions manager_save_options(const cairn_save_options& c) {
  ManagerSaveOptions o;
  if (c.metrics_json != nullptr) {
    auto metrics = parse_json(c.metrics_json, "metrics_json");
    if (!metrics.is_object()) {
      throw InvalidArgument("metrics_json must be a JSON object such as {\"loss\": 0.5}");
    }
    o.metrics = std::move(metrics.as_object());
  }
  if (c.custom_metadata_json != nullptr) {
    o.custom_metadata = parse_json(c.custom_metadata_json, "custom_metadata_json");
  }
  o.force = c.force != 0;
  return o;
}

TreeSaveOptions tree_save_options(const cairn_save_options& c) {
  TreeSaveOptions o;
  o.format = format_from_c(c.format);
  o.allow_sparse = c.allow_sparse != 0;
  o.fsync = c.fsync != 0;
  if (c.checksum_chunk_bytes == 0) throw InvalidArgument("checksum_chunk_bytes must be at least 1");
  o.checksum_chunk_bytes = c.checksum_chunk_bytes;
  if (c.compression.kind == CAIRN_COMPRESSION_DEFAULT) {
    throw InvalidArgument(
        "compression: CAIRN_COMPRESSION_DEFAULT is for save_args; the save's compression is "
        "CAIRN_COMPRESSION_NONE, _ZSTD or _ZFP");
  }
  o.compression = compression_from_c(c.compression, "compression");
  set_save_args(c, o);
  for (auto& leaf : strings(c.sparse_leaves, c.sparse_leaves_count, "sparse_leaves")) {
    o.sparse_leaves.insert(std::move(leaf));
  }
  o.io_buffer_bytes = c.io_buffer_bytes;
  o.detect_device_memory = c.detect_device_memory != 0;
  return o;
}

TreeRestoreOptions tree_restore_options(const cairn_restore_options& c) {
  TreeRestoreOptions o;
  o.verify_checksums = c.verify_checksums != 0;
  o.allow_cast = c.allow_cast != 0;
  for (auto& leaf : strings(c.optional_leaves, c.optional_leaves_count, "optional_leaves")) {
    o.optional_leaves.insert(std::move(leaf));
  }
  set_restore_transforms(c, o);
  if (c.derived_leaves_count > 0 && c.derived_leaves == nullptr) {
    throw InvalidArgument("derived_leaves is NULL");
  }
  for (std::size_t i = 0; i < c.derived_leaves_count; ++i) {
    auto [target, rule] =
        derived_leaf_from_c(c.derived_leaves[i], "derived_leaves[" + std::to_string(i) + "]");
    if (!o.derived_leaves.emplace(target, std::move(rule)).second) {
      throw InvalidArgument("derived_leaves names leaf '" + target + "' twice");
    }
  }
  o.restore_concurrent_bytes = c.restore_concurrent_bytes;
  o.load_and_broadcast = c.load_and_broadcast != 0;
  o.detect_device_memory = c.detect_device_memory != 0;
  return o;
}

AsSavedOptions as_saved_options(const cairn_restore_options& c) {
  AsSavedOptions o;
  o.whole_arrays = c.whole_arrays != 0;
  o.select = strings(c.select, c.select_count, "select");
  o.verify_checksums = c.verify_checksums != 0;
  return o;
}

MultihostOptions multihost_options(const cairn_multihost_options* options) {
  const auto c = read_options(options, default_multihost_options(), "options");
  MultihostOptions o;
  o.max_to_keep = c.max_to_keep;
  if (c.step_prefix != nullptr) o.step_prefix = c.step_prefix;
  return o;
}

}  // namespace cairn::capi
