! The bind(C) types of the Fortran module match the option structs of cairn.h field for
! field: the offset and size of every field, and the size of every struct, equal C's
! (layout_c.c). A field appended to a C struct
! and not to its Fortran type (or in another order or kind) fails here. Exits non-zero on
! failure. Not an MPI program.
program test_fortran_layout
  use, intrinsic :: iso_c_binding
  implicit none

#include "cairn_c_types.inc"

  interface
    integer(c_size_t) function layout_c_offsets(which, offsets, capacity, size) &
        bind(C, name='layout_c_offsets')
      import :: c_int, c_size_t
      integer(c_int), value :: which
      integer(c_size_t), intent(out) :: offsets(*)
      integer(c_size_t), value :: capacity
      integer(c_size_t), intent(out) :: size
    end function layout_c_offsets
  end interface

  type(manager_options_c), target :: v_manager_options
  type(save_options_c), target :: v_save_options
  type(restore_options_c), target :: v_restore_options
  type(array_desc_c), target :: v_array_desc
  type(multihost_options_c), target :: v_multihost_options
  type(cairn_compression), target :: v_compression
  type(leaf_save_args_c), target :: v_leaf_save_args
  type(leaf_rename_c), target :: v_leaf_rename
  type(leaf_resize_c), target :: v_leaf_resize
  type(derived_leaf_c), target :: v_derived_leaf
  integer :: failures

  failures = 0
  call compare(0, 'manager_options_c', c_sizeof(v_manager_options), [ &
      field(c_loc(v_manager_options%struct_size), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%struct_size), &
      field(c_loc(v_manager_options%save_interval_steps), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%save_interval_steps), &
      field(c_loc(v_manager_options%save_on_steps), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%save_on_steps), &
      field(c_loc(v_manager_options%save_on_steps_count), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%save_on_steps_count), &
      field(c_loc(v_manager_options%should_save_fn), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%should_save_fn), &
      field(c_loc(v_manager_options%should_save_user_data), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%should_save_user_data), &
      field(c_loc(v_manager_options%max_to_keep), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%max_to_keep), &
      field(c_loc(v_manager_options%keep_period), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%keep_period), &
      field(c_loc(v_manager_options%keep_time_interval_s), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%keep_time_interval_s), &
      field(c_loc(v_manager_options%best_metric), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%best_metric), &
      field(c_loc(v_manager_options%best_mode), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%best_mode), &
      field(c_loc(v_manager_options%keep_checkpoints_without_metrics), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%keep_checkpoints_without_metrics), &
      field(c_loc(v_manager_options%step_prefix), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%step_prefix), &
      field(c_loc(v_manager_options%step_format_fixed_length), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%step_format_fixed_length), &
      field(c_loc(v_manager_options%create), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%create), &
      field(c_loc(v_manager_options%cleanup_tmp_directories), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%cleanup_tmp_directories), &
      field(c_loc(v_manager_options%read_only), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%read_only), &
      field(c_loc(v_manager_options%todelete_subdir), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%todelete_subdir), &
      field(c_loc(v_manager_options%enable_background_delete), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%enable_background_delete), &
      field(c_loc(v_manager_options%single_host_load_and_broadcast), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%single_host_load_and_broadcast), &
      field(c_loc(v_manager_options%primary_host), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%primary_host), &
      field(c_loc(v_manager_options%active_processes), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%active_processes), &
      field(c_loc(v_manager_options%active_processes_count), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%active_processes_count), &
      field(c_loc(v_manager_options%barrier_timeout_s), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%barrier_timeout_s), &
      field(c_loc(v_manager_options%enable_async), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%enable_async), &
      field(c_loc(v_manager_options%async_staging_bytes), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%async_staging_bytes), &
      field(c_loc(v_manager_options%async_zero_copy), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%async_zero_copy), &
      field(c_loc(v_manager_options%enable_preemption), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%enable_preemption), &
      field(c_loc(v_manager_options%preemption_signals), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%preemption_signals), &
      field(c_loc(v_manager_options%preemption_signals_count), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%preemption_signals_count), &
      field(c_loc(v_manager_options%preemption_deadline), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%preemption_deadline), &
      field(c_loc(v_manager_options%preemption_use_slurm_end_time), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%preemption_use_slurm_end_time), &
      field(c_loc(v_manager_options%preemption_margin_s), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%preemption_margin_s), &
      field(c_loc(v_manager_options%item_names), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%item_names), &
      field(c_loc(v_manager_options%item_names_count), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%item_names_count), &
      field(c_loc(v_manager_options%save_decision_policy), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%save_decision_policy), &
      field(c_loc(v_manager_options%preservation_policy), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%preservation_policy), &
      field(c_loc(v_manager_options%allow_non_empty_root), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%allow_non_empty_root), &
      field(c_loc(v_manager_options%file_mode), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%file_mode), &
      field(c_loc(v_manager_options%file_group), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%file_group), &
      field(c_loc(v_manager_options%write_timeout_s), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%write_timeout_s), &
      field(c_loc(v_manager_options%step_name_format), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%step_name_format), &
      field(c_loc(v_manager_options%save_root_metadata), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%save_root_metadata), &
      field(c_loc(v_manager_options%lightweight_initialize), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%lightweight_initialize), &
      field(c_loc(v_manager_options%clock), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%clock), &
      field(c_loc(v_manager_options%clock_user_data), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%clock_user_data), &
      field(c_loc(v_manager_options%should_save_latest_fn), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%should_save_latest_fn), &
      field(c_loc(v_manager_options%should_keep_fn), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%should_keep_fn), &
      field(c_loc(v_manager_options%should_keep_user_data), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%should_keep_user_data), &
      field(c_loc(v_manager_options%step_name_build), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%step_name_build), &
      field(c_loc(v_manager_options%step_name_parse), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%step_name_parse), &
      field(c_loc(v_manager_options%step_name_user_data), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%step_name_user_data), &
      field(c_loc(v_manager_options%step_name_description), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%step_name_description), &
      field(c_loc(v_manager_options%prevent_write_metrics), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%prevent_write_metrics), &
      field(c_loc(v_manager_options%metadata_json), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%metadata_json), &
      field(c_loc(v_manager_options%incremental), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%incremental), &
      field(c_loc(v_manager_options%incremental_full_every), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%incremental_full_every), &
      field(c_loc(v_manager_options%local_dir), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%local_dir), &
      field(c_loc(v_manager_options%local_redundancy), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%local_redundancy), &
      field(c_loc(v_manager_options%local_keep), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%local_keep), &
      field(c_loc(v_manager_options%persistent_every), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%persistent_every), &
      field(c_loc(v_manager_options%drain_at_close), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%drain_at_close), &
      field(c_loc(v_manager_options%drain_bytes_per_second), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%drain_bytes_per_second), &
      field(c_loc(v_manager_options%ranks_per_node), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%ranks_per_node), &
      field(c_loc(v_manager_options%best_fn), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%best_fn), &
      field(c_loc(v_manager_options%best_user_data), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%best_user_data), &
      field(c_loc(v_manager_options%on_commit), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%on_commit), &
      field(c_loc(v_manager_options%on_commit_user_data), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%on_commit_user_data), &
      field(c_loc(v_manager_options%async_device_staging), c_loc(v_manager_options)), &
      c_sizeof(v_manager_options%async_device_staging)])
  call compare(1, 'save_options_c', c_sizeof(v_save_options), [ &
      field(c_loc(v_save_options%struct_size), c_loc(v_save_options)), &
      c_sizeof(v_save_options%struct_size), &
      field(c_loc(v_save_options%metrics_json), c_loc(v_save_options)), &
      c_sizeof(v_save_options%metrics_json), &
      field(c_loc(v_save_options%custom_metadata_json), c_loc(v_save_options)), &
      c_sizeof(v_save_options%custom_metadata_json), &
      field(c_loc(v_save_options%force), c_loc(v_save_options)), &
      c_sizeof(v_save_options%force), &
      field(c_loc(v_save_options%format), c_loc(v_save_options)), &
      c_sizeof(v_save_options%format), &
      field(c_loc(v_save_options%allow_sparse), c_loc(v_save_options)), &
      c_sizeof(v_save_options%allow_sparse), &
      field(c_loc(v_save_options%fsync), c_loc(v_save_options)), &
      c_sizeof(v_save_options%fsync), &
      field(c_loc(v_save_options%checksum_chunk_bytes), c_loc(v_save_options)), &
      c_sizeof(v_save_options%checksum_chunk_bytes), &
      field(c_loc(v_save_options%compression), c_loc(v_save_options)), &
      c_sizeof(v_save_options%compression), &
      field(c_loc(v_save_options%save_args), c_loc(v_save_options)), &
      c_sizeof(v_save_options%save_args), &
      field(c_loc(v_save_options%save_args_count), c_loc(v_save_options)), &
      c_sizeof(v_save_options%save_args_count), &
      field(c_loc(v_save_options%sparse_leaves), c_loc(v_save_options)), &
      c_sizeof(v_save_options%sparse_leaves), &
      field(c_loc(v_save_options%sparse_leaves_count), c_loc(v_save_options)), &
      c_sizeof(v_save_options%sparse_leaves_count), &
      field(c_loc(v_save_options%io_buffer_bytes), c_loc(v_save_options)), &
      c_sizeof(v_save_options%io_buffer_bytes), &
      field(c_loc(v_save_options%detect_device_memory), c_loc(v_save_options)), &
      c_sizeof(v_save_options%detect_device_memory)])
  call compare(2, 'restore_options_c', c_sizeof(v_restore_options), [ &
      field(c_loc(v_restore_options%struct_size), c_loc(v_restore_options)), &
      c_sizeof(v_restore_options%struct_size), &
      field(c_loc(v_restore_options%verify_checksums), c_loc(v_restore_options)), &
      c_sizeof(v_restore_options%verify_checksums), &
      field(c_loc(v_restore_options%allow_cast), c_loc(v_restore_options)), &
      c_sizeof(v_restore_options%allow_cast), &
      field(c_loc(v_restore_options%optional_leaves), c_loc(v_restore_options)), &
      c_sizeof(v_restore_options%optional_leaves), &
      field(c_loc(v_restore_options%optional_leaves_count), c_loc(v_restore_options)), &
      c_sizeof(v_restore_options%optional_leaves_count), &
      field(c_loc(v_restore_options%whole_arrays), c_loc(v_restore_options)), &
      c_sizeof(v_restore_options%whole_arrays), &
      field(c_loc(v_restore_options%select), c_loc(v_restore_options)), &
      c_sizeof(v_restore_options%select), &
      field(c_loc(v_restore_options%select_count), c_loc(v_restore_options)), &
      c_sizeof(v_restore_options%select_count), &
      field(c_loc(v_restore_options%renames), c_loc(v_restore_options)), &
      c_sizeof(v_restore_options%renames), &
      field(c_loc(v_restore_options%renames_count), c_loc(v_restore_options)), &
      c_sizeof(v_restore_options%renames_count), &
      field(c_loc(v_restore_options%default_to_original), c_loc(v_restore_options)), &
      c_sizeof(v_restore_options%default_to_original), &
      field(c_loc(v_restore_options%resize_leaves), c_loc(v_restore_options)), &
      c_sizeof(v_restore_options%resize_leaves), &
      field(c_loc(v_restore_options%resize_leaves_count), c_loc(v_restore_options)), &
      c_sizeof(v_restore_options%resize_leaves_count), &
      field(c_loc(v_restore_options%restore_concurrent_bytes), c_loc(v_restore_options)), &
      c_sizeof(v_restore_options%restore_concurrent_bytes), &
      field(c_loc(v_restore_options%load_and_broadcast), c_loc(v_restore_options)), &
      c_sizeof(v_restore_options%load_and_broadcast), &
      field(c_loc(v_restore_options%detect_device_memory), c_loc(v_restore_options)), &
      c_sizeof(v_restore_options%detect_device_memory), &
      field(c_loc(v_restore_options%derived_leaves), c_loc(v_restore_options)), &
      c_sizeof(v_restore_options%derived_leaves), &
      field(c_loc(v_restore_options%derived_leaves_count), c_loc(v_restore_options)), &
      c_sizeof(v_restore_options%derived_leaves_count)])
  call compare(3, 'array_desc_c', c_sizeof(v_array_desc), [ &
      field(c_loc(v_array_desc%struct_size), c_loc(v_array_desc)), &
      c_sizeof(v_array_desc%struct_size), &
      field(c_loc(v_array_desc%dtype), c_loc(v_array_desc)), &
      c_sizeof(v_array_desc%dtype), &
      field(c_loc(v_array_desc%ndim), c_loc(v_array_desc)), &
      c_sizeof(v_array_desc%ndim), &
      field(c_loc(v_array_desc%global_dims), c_loc(v_array_desc)), &
      c_sizeof(v_array_desc%global_dims), &
      field(c_loc(v_array_desc%offset), c_loc(v_array_desc)), &
      c_sizeof(v_array_desc%offset), &
      field(c_loc(v_array_desc%local_dims), c_loc(v_array_desc)), &
      c_sizeof(v_array_desc%local_dims), &
      field(c_loc(v_array_desc%strides), c_loc(v_array_desc)), &
      c_sizeof(v_array_desc%strides), &
      field(c_loc(v_array_desc%data), c_loc(v_array_desc)), &
      c_sizeof(v_array_desc%data), &
      field(c_loc(v_array_desc%memory), c_loc(v_array_desc)), &
      c_sizeof(v_array_desc%memory), &
      field(c_loc(v_array_desc%replicated), c_loc(v_array_desc)), &
      c_sizeof(v_array_desc%replicated), &
      field(c_loc(v_array_desc%fortran_order), c_loc(v_array_desc)), &
      c_sizeof(v_array_desc%fortran_order)])
  call compare(4, 'multihost_options_c', c_sizeof(v_multihost_options), [ &
      field(c_loc(v_multihost_options%struct_size), c_loc(v_multihost_options)), &
      c_sizeof(v_multihost_options%struct_size), &
      field(c_loc(v_multihost_options%max_to_keep), c_loc(v_multihost_options)), &
      c_sizeof(v_multihost_options%max_to_keep), &
      field(c_loc(v_multihost_options%step_prefix), c_loc(v_multihost_options)), &
      c_sizeof(v_multihost_options%step_prefix)])
  call compare(5, 'cairn_compression', c_sizeof(v_compression), [ &
      field(c_loc(v_compression%kind), c_loc(v_compression)), &
      c_sizeof(v_compression%kind), &
      field(c_loc(v_compression%level), c_loc(v_compression)), &
      c_sizeof(v_compression%level), &
      field(c_loc(v_compression%absolute_error), c_loc(v_compression)), &
      c_sizeof(v_compression%absolute_error), &
      field(c_loc(v_compression%relative_error), c_loc(v_compression)), &
      c_sizeof(v_compression%relative_error)])
  call compare(6, 'leaf_save_args_c', c_sizeof(v_leaf_save_args), [ &
      field(c_loc(v_leaf_save_args%struct_size), c_loc(v_leaf_save_args)), &
      c_sizeof(v_leaf_save_args%struct_size), &
      field(c_loc(v_leaf_save_args%path), c_loc(v_leaf_save_args)), &
      c_sizeof(v_leaf_save_args%path), &
      field(c_loc(v_leaf_save_args%dtype), c_loc(v_leaf_save_args)), &
      c_sizeof(v_leaf_save_args%dtype), &
      field(c_loc(v_leaf_save_args%chunk_bytes), c_loc(v_leaf_save_args)), &
      c_sizeof(v_leaf_save_args%chunk_bytes), &
      field(c_loc(v_leaf_save_args%compression), c_loc(v_leaf_save_args)), &
      c_sizeof(v_leaf_save_args%compression), &
      field(c_loc(v_leaf_save_args%chunk_shape), c_loc(v_leaf_save_args)), &
      c_sizeof(v_leaf_save_args%chunk_shape), &
      field(c_loc(v_leaf_save_args%chunk_shape_ndim), c_loc(v_leaf_save_args)), &
      c_sizeof(v_leaf_save_args%chunk_shape_ndim), &
      field(c_loc(v_leaf_save_args%format), c_loc(v_leaf_save_args)), &
      c_sizeof(v_leaf_save_args%format)])
  call compare(7, 'leaf_rename_c', c_sizeof(v_leaf_rename), [ &
      field(c_loc(v_leaf_rename%target), c_loc(v_leaf_rename)), &
      c_sizeof(v_leaf_rename%target), &
      field(c_loc(v_leaf_rename%saved), c_loc(v_leaf_rename)), &
      c_sizeof(v_leaf_rename%saved)])
  call compare(8, 'leaf_resize_c', c_sizeof(v_leaf_resize), [ &
      field(c_loc(v_leaf_resize%path), c_loc(v_leaf_resize)), &
      c_sizeof(v_leaf_resize%path), &
      field(c_loc(v_leaf_resize%fill_dtype), c_loc(v_leaf_resize)), &
      c_sizeof(v_leaf_resize%fill_dtype), &
      field(c_loc(v_leaf_resize%fill), c_loc(v_leaf_resize)), &
      c_sizeof(v_leaf_resize%fill)])
  call compare(9, 'derived_leaf_c', c_sizeof(v_derived_leaf), [ &
      field(c_loc(v_derived_leaf%target), c_loc(v_derived_leaf)), &
      c_sizeof(v_derived_leaf%target), &
      field(c_loc(v_derived_leaf%sources), c_loc(v_derived_leaf)), &
      c_sizeof(v_derived_leaf%sources), &
      field(c_loc(v_derived_leaf%source_count), c_loc(v_derived_leaf)), &
      c_sizeof(v_derived_leaf%source_count), &
      field(c_loc(v_derived_leaf%fill), c_loc(v_derived_leaf)), &
      c_sizeof(v_derived_leaf%fill), &
      field(c_loc(v_derived_leaf%user_data), c_loc(v_derived_leaf)), &
      c_sizeof(v_derived_leaf%user_data)])
  if (failures > 0) error stop 1
  print '(a)', 'test_fortran_layout: passed'

contains

  ! The offset of a field from the start of its struct.
  integer(c_size_t) function field(p, base)
    type(c_ptr), intent(in) :: p, base
    field = int(transfer(p, 0_c_intptr_t) - transfer(base, 0_c_intptr_t), c_size_t)
  end function field

  ! Counts a failure when the Fortran offsets or sizes differ from C's.
  subroutine compare(which, name, f_size, offsets)
    integer, intent(in) :: which
    character(len=*), intent(in) :: name
    integer(c_size_t), intent(in) :: f_size, offsets(:)
    integer(c_size_t) :: c_offsets(256), c_size, n
    integer(c_size_t) :: i
    n = layout_c_offsets(int(which, c_int), c_offsets, 256_c_size_t, c_size)
    if (n /= size(offsets, kind=c_size_t)) then
      print '(a,a,i0,a,i0)', name, ': C has ', n / 2, ' fields, Fortran ', size(offsets) / 2
      failures = failures + 1
      return
    end if
    do i = 1, size(offsets, kind=c_size_t)
      if (offsets(i) /= c_offsets(i)) then
        print '(a,a,i0,a,i0,a,i0)', name, ': field ', (i + 1) / 2, &
            merge(' offset ', ' size   ', mod(i, 2_c_size_t) == 1), offsets(i), ' in Fortran, C ', &
            c_offsets(i)
        failures = failures + 1
      end if
    end do
    if (f_size /= c_size) then
      print '(a,a,i0,a,i0)', name, ': size ', f_size, ' in Fortran, C ', c_size
      failures = failures + 1
    end if
  end subroutine compare

end program test_fortran_layout
