/* The layout of cairn.h's option structs as C sees it, for test_fortran_layout.F90: the
 * offset and size of every field, in declaration order, and the size of each struct. */
#include <cairn/cairn.h>

#include <stddef.h>

static const size_t manager_options_c_offsets[] = {
    offsetof(cairn_manager_options, struct_size), sizeof(((cairn_manager_options*)0)->struct_size),
    offsetof(cairn_manager_options, save_interval_steps), sizeof(((cairn_manager_options*)0)->save_interval_steps),
    offsetof(cairn_manager_options, save_on_steps), sizeof(((cairn_manager_options*)0)->save_on_steps),
    offsetof(cairn_manager_options, save_on_steps_count), sizeof(((cairn_manager_options*)0)->save_on_steps_count),
    offsetof(cairn_manager_options, should_save_fn), sizeof(((cairn_manager_options*)0)->should_save_fn),
    offsetof(cairn_manager_options, should_save_user_data), sizeof(((cairn_manager_options*)0)->should_save_user_data),
    offsetof(cairn_manager_options, max_to_keep), sizeof(((cairn_manager_options*)0)->max_to_keep),
    offsetof(cairn_manager_options, keep_period), sizeof(((cairn_manager_options*)0)->keep_period),
    offsetof(cairn_manager_options, keep_time_interval_s), sizeof(((cairn_manager_options*)0)->keep_time_interval_s),
    offsetof(cairn_manager_options, best_metric), sizeof(((cairn_manager_options*)0)->best_metric),
    offsetof(cairn_manager_options, best_mode), sizeof(((cairn_manager_options*)0)->best_mode),
    offsetof(cairn_manager_options, keep_checkpoints_without_metrics), sizeof(((cairn_manager_options*)0)->keep_checkpoints_without_metrics),
    offsetof(cairn_manager_options, step_prefix), sizeof(((cairn_manager_options*)0)->step_prefix),
    offsetof(cairn_manager_options, step_format_fixed_length), sizeof(((cairn_manager_options*)0)->step_format_fixed_length),
    offsetof(cairn_manager_options, create), sizeof(((cairn_manager_options*)0)->create),
    offsetof(cairn_manager_options, cleanup_tmp_directories), sizeof(((cairn_manager_options*)0)->cleanup_tmp_directories),
    offsetof(cairn_manager_options, read_only), sizeof(((cairn_manager_options*)0)->read_only),
    offsetof(cairn_manager_options, todelete_subdir), sizeof(((cairn_manager_options*)0)->todelete_subdir),
    offsetof(cairn_manager_options, enable_background_delete), sizeof(((cairn_manager_options*)0)->enable_background_delete),
    offsetof(cairn_manager_options, single_host_load_and_broadcast), sizeof(((cairn_manager_options*)0)->single_host_load_and_broadcast),
    offsetof(cairn_manager_options, primary_host), sizeof(((cairn_manager_options*)0)->primary_host),
    offsetof(cairn_manager_options, active_processes), sizeof(((cairn_manager_options*)0)->active_processes),
    offsetof(cairn_manager_options, active_processes_count), sizeof(((cairn_manager_options*)0)->active_processes_count),
    offsetof(cairn_manager_options, barrier_timeout_s), sizeof(((cairn_manager_options*)0)->barrier_timeout_s),
    offsetof(cairn_manager_options, enable_async), sizeof(((cairn_manager_options*)0)->enable_async),
    offsetof(cairn_manager_options, async_staging_bytes), sizeof(((cairn_manager_options*)0)->async_staging_bytes),
    offsetof(cairn_manager_options, async_zero_copy), sizeof(((cairn_manager_options*)0)->async_zero_copy),
    offsetof(cairn_manager_options, enable_preemption), sizeof(((cairn_manager_options*)0)->enable_preemption),
    offsetof(cairn_manager_options, preemption_signals), sizeof(((cairn_manager_options*)0)->preemption_signals),
    offsetof(cairn_manager_options, preemption_signals_count), sizeof(((cairn_manager_options*)0)->preemption_signals_count),
    offsetof(cairn_manager_options, preemption_deadline), sizeof(((cairn_manager_options*)0)->preemption_deadline),
    offsetof(cairn_manager_options, preemption_use_slurm_end_time), sizeof(((cairn_manager_options*)0)->preemption_use_slurm_end_time),
    offsetof(cairn_manager_options, preemption_margin_s), sizeof(((cairn_manager_options*)0)->preemption_margin_s),
    offsetof(cairn_manager_options, item_names), sizeof(((cairn_manager_options*)0)->item_names),
    offsetof(cairn_manager_options, item_names_count), sizeof(((cairn_manager_options*)0)->item_names_count),
    offsetof(cairn_manager_options, save_decision_policy), sizeof(((cairn_manager_options*)0)->save_decision_policy),
    offsetof(cairn_manager_options, preservation_policy), sizeof(((cairn_manager_options*)0)->preservation_policy),
    offsetof(cairn_manager_options, allow_non_empty_root), sizeof(((cairn_manager_options*)0)->allow_non_empty_root),
    offsetof(cairn_manager_options, file_mode), sizeof(((cairn_manager_options*)0)->file_mode),
    offsetof(cairn_manager_options, file_group), sizeof(((cairn_manager_options*)0)->file_group),
    offsetof(cairn_manager_options, write_timeout_s), sizeof(((cairn_manager_options*)0)->write_timeout_s),
    offsetof(cairn_manager_options, step_name_format), sizeof(((cairn_manager_options*)0)->step_name_format),
    offsetof(cairn_manager_options, save_root_metadata), sizeof(((cairn_manager_options*)0)->save_root_metadata),
    offsetof(cairn_manager_options, lightweight_initialize), sizeof(((cairn_manager_options*)0)->lightweight_initialize),
    offsetof(cairn_manager_options, clock), sizeof(((cairn_manager_options*)0)->clock),
    offsetof(cairn_manager_options, clock_user_data), sizeof(((cairn_manager_options*)0)->clock_user_data),
    offsetof(cairn_manager_options, should_save_latest_fn), sizeof(((cairn_manager_options*)0)->should_save_latest_fn),
    offsetof(cairn_manager_options, should_keep_fn), sizeof(((cairn_manager_options*)0)->should_keep_fn),
    offsetof(cairn_manager_options, should_keep_user_data), sizeof(((cairn_manager_options*)0)->should_keep_user_data),
    offsetof(cairn_manager_options, step_name_build), sizeof(((cairn_manager_options*)0)->step_name_build),
    offsetof(cairn_manager_options, step_name_parse), sizeof(((cairn_manager_options*)0)->step_name_parse),
    offsetof(cairn_manager_options, step_name_user_data), sizeof(((cairn_manager_options*)0)->step_name_user_data),
    offsetof(cairn_manager_options, step_name_description), sizeof(((cairn_manager_options*)0)->step_name_description),
    offsetof(cairn_manager_options, prevent_write_metrics), sizeof(((cairn_manager_options*)0)->prevent_write_metrics),
    offsetof(cairn_manager_options, metadata_json), sizeof(((cairn_manager_options*)0)->metadata_json),
};
static const size_t save_options_c_offsets[] = {
    offsetof(cairn_save_options, struct_size), sizeof(((cairn_save_options*)0)->struct_size),
    offsetof(cairn_save_options, metrics_json), sizeof(((cairn_save_options*)0)->metrics_json),
    offsetof(cairn_save_options, custom_metadata_json), sizeof(((cairn_save_options*)0)->custom_metadata_json),
    offsetof(cairn_save_options, force), sizeof(((cairn_save_options*)0)->force),
    offsetof(cairn_save_options, format), sizeof(((cairn_save_options*)0)->format),
    offsetof(cairn_save_options, allow_sparse), sizeof(((cairn_save_options*)0)->allow_sparse),
    offsetof(cairn_save_options, fsync), sizeof(((cairn_save_options*)0)->fsync),
};
static const size_t restore_options_c_offsets[] = {
    offsetof(cairn_restore_options, struct_size), sizeof(((cairn_restore_options*)0)->struct_size),
    offsetof(cairn_restore_options, verify_checksums), sizeof(((cairn_restore_options*)0)->verify_checksums),
    offsetof(cairn_restore_options, allow_cast), sizeof(((cairn_restore_options*)0)->allow_cast),
    offsetof(cairn_restore_options, optional_leaves), sizeof(((cairn_restore_options*)0)->optional_leaves),
    offsetof(cairn_restore_options, optional_leaves_count), sizeof(((cairn_restore_options*)0)->optional_leaves_count),
    offsetof(cairn_restore_options, whole_arrays), sizeof(((cairn_restore_options*)0)->whole_arrays),
    offsetof(cairn_restore_options, select), sizeof(((cairn_restore_options*)0)->select),
    offsetof(cairn_restore_options, select_count), sizeof(((cairn_restore_options*)0)->select_count),
};
static const size_t array_desc_c_offsets[] = {
    offsetof(cairn_array_desc, struct_size), sizeof(((cairn_array_desc*)0)->struct_size),
    offsetof(cairn_array_desc, dtype), sizeof(((cairn_array_desc*)0)->dtype),
    offsetof(cairn_array_desc, ndim), sizeof(((cairn_array_desc*)0)->ndim),
    offsetof(cairn_array_desc, global_dims), sizeof(((cairn_array_desc*)0)->global_dims),
    offsetof(cairn_array_desc, offset), sizeof(((cairn_array_desc*)0)->offset),
    offsetof(cairn_array_desc, local_dims), sizeof(((cairn_array_desc*)0)->local_dims),
    offsetof(cairn_array_desc, strides), sizeof(((cairn_array_desc*)0)->strides),
    offsetof(cairn_array_desc, data), sizeof(((cairn_array_desc*)0)->data),
    offsetof(cairn_array_desc, memory), sizeof(((cairn_array_desc*)0)->memory),
    offsetof(cairn_array_desc, replicated), sizeof(((cairn_array_desc*)0)->replicated),
    offsetof(cairn_array_desc, fortran_order), sizeof(((cairn_array_desc*)0)->fortran_order),
};
static const size_t multihost_options_c_offsets[] = {
    offsetof(cairn_multihost_options, struct_size), sizeof(((cairn_multihost_options*)0)->struct_size),
    offsetof(cairn_multihost_options, max_to_keep), sizeof(((cairn_multihost_options*)0)->max_to_keep),
    offsetof(cairn_multihost_options, step_prefix), sizeof(((cairn_multihost_options*)0)->step_prefix),
};

/* Copies the offset and size of each field of struct `which` (0: cairn_manager_options, 1: cairn_save_options,
 * 2: cairn_restore_options, 3: cairn_array_desc, 4: cairn_multihost_options) into
 * `offsets` (offset, size, offset, size, ...; at most `capacity` values), the struct's size into
 * *size; returns the number of values. */
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
    default: return 0;
  }
  for (i = 0; i < count && i < capacity; ++i) offsets[i] = table[i];
  return count;
}
