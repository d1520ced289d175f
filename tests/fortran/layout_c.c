/* The layout of cairn.h's option structs as C sees it, for test_fortran_layout.F90: the
 * offset and size of every field, in declaration order, and the size of each struct. */
#include <cairn/cairn.h>

#include <stddef.h>

/* The offset and size of field `f` of struct `s`. */
#define FIELD(s, f) offsetof(s, f), sizeof(((s*)0)->f)

static const size_t manager_options_c_offsets[] = {
    FIELD(cairn_manager_options, struct_size),
    FIELD(cairn_manager_options, save_interval_steps),
    FIELD(cairn_manager_options, save_on_steps),
    FIELD(cairn_manager_options, save_on_steps_count),
    FIELD(cairn_manager_options, should_save_fn),
    FIELD(cairn_manager_options, should_save_user_data),
    FIELD(cairn_manager_options, max_to_keep),
    FIELD(cairn_manager_options, keep_period),
    FIELD(cairn_manager_options, keep_time_interval_s),
    FIELD(cairn_manager_options, best_metric),
    FIELD(cairn_manager_options, best_mode),
    FIELD(cairn_manager_options, keep_checkpoints_without_metrics),
    FIELD(cairn_manager_options, step_prefix),
    FIELD(cairn_manager_options, step_format_fixed_length),
    FIELD(cairn_manager_options, create),
    FIELD(cairn_manager_options, cleanup_tmp_directories),
    FIELD(cairn_manager_options, read_only),
    FIELD(cairn_manager_options, todelete_subdir),
    FIELD(cairn_manager_options, enable_background_delete),
    FIELD(cairn_manager_options, single_host_load_and_broadcast),
    FIELD(cairn_manager_options, primary_host),
    FIELD(cairn_manager_options, active_processes),
    FIELD(cairn_manager_options, active_processes_count),
    FIELD(cairn_manager_options, barrier_timeout_s),
    FIELD(cairn_manager_options, enable_async),
    FIELD(cairn_manager_options, async_staging_bytes),
    FIELD(cairn_manager_options, async_zero_copy),
    FIELD(cairn_manager_options, enable_preemption),
    FIELD(cairn_manager_options, preemption_signals),
    FIELD(cairn_manager_options, preemption_signals_count),
    FIELD(cairn_manager_options, preemption_deadline),
    FIELD(cairn_manager_options, preemption_use_slurm_end_time),
    FIELD(cairn_manager_options, preemption_margin_s),
    FIELD(cairn_manager_options, item_names),
    FIELD(cairn_manager_options, item_names_count),
    FIELD(cairn_manager_options, save_decision_policy),
    FIELD(cairn_manager_options, preservation_policy),
    FIELD(cairn_manager_options, allow_non_empty_root),
    FIELD(cairn_manager_options, file_mode),
    FIELD(cairn_manager_options, file_group),
    FIELD(cairn_manager_options, write_timeout_s),
    FIELD(cairn_manager_options, step_name_format),
    FIELD(cairn_manager_options, save_root_metadata),
    FIELD(cairn_manager_options, lightweight_initialize),
    FIELD(cairn_manager_options, clock),
    FIELD(cairn_manager_options, clock_user_data),
    FIELD(cairn_manager_options, should_save_latest_fn),
    FIELD(cairn_manager_options, should_keep_fn),
    FIELD(cairn_manager_options, should_keep_user_data),
    FIELD(cairn_manager_options, step_name_build),
    FIELD(cairn_manager_options, step_name_parse),
    FIELD(cairn_manager_options, step_name_user_data),
    FIELD(cairn_manager_options, step_name_description),
    FIELD(cairn_manager_options, prevent_write_metrics),
    FIELD(cairn_manager_options, metadata_json),
    FIELD(cairn_manager_options, incremental),
    FIELD(cairn_manager_options, incremental_full_every),
    FIELD(cairn_manager_options, local_dir),
    FIELD(cairn_manager_options, local_redundancy),
    FIELD(cairn_manager_options, local_keep),
    FIELD(cairn_manager_options, persistent_every),
    FIELD(cairn_manager_options, drain_at_close),
    FIELD(cairn_manager_options, drain_bytes_per_second),
    FIELD(cairn_manager_options, ranks_per_node),
    FIELD(cairn_manager_options, best_fn),
    FIELD(cairn_manager_options, best_user_data),
    FIELD(cairn_manager_options, on_commit),
    FIELD(cairn_manager_options, on_commit_user_data),
    FIELD(cairn_manager_options, async_device_staging),
};
static const size_t save_options_c_offsets[] = {
    FIELD(cairn_save_options, struct_size),
    FIELD(cairn_save_options, metrics_json),
    FIELD(cairn_save_options, custom_metadata_json),
    FIELD(cairn_save_options, force),
    FIELD(cairn_save_options, format),
    FIELD(cairn_save_options, allow_sparse),
    FIELD(cairn_save_options, fsync),
    FIELD(cairn_save_options, checksum_chunk_bytes),
    FIELD(cairn_save_options, compression),
    FIELD(cairn_save_options, save_args),
    FIELD(cairn_save_options, save_args_count),
    FIELD(cairn_save_options, sparse_leaves),
    FIELD(cairn_save_options, sparse_leaves_count),
    FIELD(cairn_save_options, io_buffer_bytes),
    FIELD(cairn_save_options, detect_device_memory),
};
static const size_t restore_options_c_offsets[] = {
    FIELD(cairn_restore_options, struct_size),
    FIELD(cairn_restore_options, verify_checksums),
    FIELD(cairn_restore_options, allow_cast),
    FIELD(cairn_restore_options, optional_leaves),
    FIELD(cairn_restore_options, optional_leaves_count),
    FIELD(cairn_restore_options, whole_arrays),
    FIELD(cairn_restore_options, select),
    FIELD(cairn_restore_options, select_count),
    FIELD(cairn_restore_options, renames),
    FIELD(cairn_restore_options, renames_count),
    FIELD(cairn_restore_options, default_to_original),
    FIELD(cairn_restore_options, resize_leaves),
    FIELD(cairn_restore_options, resize_leaves_count),
    FIELD(cairn_restore_options, restore_concurrent_bytes),
    FIELD(cairn_restore_options, load_and_broadcast),
    FIELD(cairn_restore_options, detect_device_memory),
    FIELD(cairn_restore_options, derived_leaves),
    FIELD(cairn_restore_options, derived_leaves_count),
};
static const size_t derived_leaf_c_offsets[] = {
    FIELD(cairn_derived_leaf, target),       FIELD(cairn_derived_leaf, sources),
    FIELD(cairn_derived_leaf, source_count), FIELD(cairn_derived_leaf, fill),
    FIELD(cairn_derived_leaf, user_data),
};
static const size_t compression_offsets[] = {
    FIELD(cairn_compression, kind),
    FIELD(cairn_compression, level),
    FIELD(cairn_compression, absolute_error),
    FIELD(cairn_compression, relative_error),
};
static const size_t leaf_save_args_c_offsets[] = {
    FIELD(cairn_leaf_save_args, struct_size),
    FIELD(cairn_leaf_save_args, path),
    FIELD(cairn_leaf_save_args, dtype),
    FIELD(cairn_leaf_save_args, chunk_bytes),
    FIELD(cairn_leaf_save_args, compression),
    FIELD(cairn_leaf_save_args, chunk_shape),
    FIELD(cairn_leaf_save_args, chunk_shape_ndim),
    FIELD(cairn_leaf_save_args, format),
};
static const size_t leaf_rename_c_offsets[] = {
    FIELD(cairn_leaf_rename, target),
    FIELD(cairn_leaf_rename, saved),
};
static const size_t leaf_resize_c_offsets[] = {
    FIELD(cairn_leaf_resize, path),
    FIELD(cairn_leaf_resize, fill_dtype),
    FIELD(cairn_leaf_resize, fill),
};
static const size_t array_desc_c_offsets[] = {
    FIELD(cairn_array_desc, struct_size),   FIELD(cairn_array_desc, dtype),
    FIELD(cairn_array_desc, ndim),          FIELD(cairn_array_desc, global_dims),
    FIELD(cairn_array_desc, offset),        FIELD(cairn_array_desc, local_dims),
    FIELD(cairn_array_desc, strides),       FIELD(cairn_array_desc, data),
    FIELD(cairn_array_desc, memory),        FIELD(cairn_array_desc, replicated),
    FIELD(cairn_array_desc, fortran_order),
};
static const size_t multihost_options_c_offsets[] = {
    FIELD(cairn_multihost_options, struct_size),
    FIELD(cairn_multihost_options, max_to_keep),
    FIELD(cairn_multihost_options, step_prefix),
};

/* Copies the offset and size of each field of struct `which` (0: cairn_manager_options, 1:
 * cairn_save_options, 2: cairn_restore_options, 3: cairn_array_desc, 4: cairn_multihost_options,
 * 5: cairn_compression, 6: cairn_leaf_save_args, 7: cairn_leaf_rename, 8: cairn_leaf_resize,
 * 9: cairn_derived_leaf)
 * into `offsets` (offset, size, offset, size, ...; at most `capacity` values), the struct's size
 * into *size; returns the number of values. */
size_t layout_c_offsets(int which, size_t* offsets, size_t capacity, size_t* size);
size_t layout_c_offsets(int which, size_t* offsets, size_t capacity, size_t* size) {
  const size_t* table = NULL;
  size_t count = 0;
  size_t i;
  switch (which) {
    case 0:
      table = manager_options_c_offsets;
      count = sizeof manager_options_c_offsets / sizeof(size_t);
      *size = sizeof(cairn_manager_options);
      break;
    case 1:
      table = save_options_c_offsets;
      count = sizeof save_options_c_offsets / sizeof(size_t);
      *size = sizeof(cairn_save_options);
      break;
    case 2:
      table = restore_options_c_offsets;
      count = sizeof restore_options_c_offsets / sizeof(size_t);
      *size = sizeof(cairn_restore_options);
      break;
    case 3:
      table = array_desc_c_offsets;
      count = sizeof array_desc_c_offsets / sizeof(size_t);
      *size = sizeof(cairn_array_desc);
      break;
    case 4:
      table = multihost_options_c_offsets;
      count = sizeof multihost_options_c_offsets / sizeof(size_t);
      *size = sizeof(cairn_multihost_options);
      break;
    case 5:
      table = compression_offsets;
      count = sizeof compression_offsets / sizeof(size_t);
      *size = sizeof(cairn_compression);
      break;
    case 6:
      table = leaf_save_args_c_offsets;
      count = sizeof leaf_save_args_c_offsets / sizeof(size_t);
      *size = sizeof(cairn_leaf_save_args);
      break;
    case 7:
      table = leaf_rename_c_offsets;
      count = sizeof leaf_rename_c_offsets / sizeof(size_t);
      *size = sizeof(cairn_leaf_rename);
      break;
    case 8:
      table = leaf_resize_c_offsets;
      count = sizeof leaf_resize_c_offsets / sizeof(size_t);
      *size = sizeof(cairn_leaf_resize);
      break;
    case 9:
      table = derived_leaf_c_offsets;
      count = sizeof derived_leaf_c_offsets / sizeof(size_t);
      *size = sizeof(cairn_derived_leaf);
      break;
    default: return 0;
  }
  for (i = 0; i < count && i < capacity; ++i) offsets[i] = table[i];
  return count;
}
