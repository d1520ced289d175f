!> cairn — the Fortran module: checkpoint/restart of MPI programs from Fortran 2008, over the
!> C ABI (cairn.h) with iso_c_binding.
!>
!> Conventions
!> - One derived type per handle (cairn_comm, cairn_tree, cairn_items, cairn_manager,
!>   cairn_multihost, cairn_save_policy, cairn_preservation_policy, cairn_checkpointer). Create
!>   with `cairn_<type>_create`, release with `cairn_<type>_free`.
!> - Every procedure takes a trailing optional `ierr`. Present: it receives the status
!>   (CAIRN_OK or a CAIRN_ERR_* code) and cairn_last_error() the message. Absent: an error
!>   prints the message to error_unit and stops the program (error stop), as MPI's default
!>   error handler does.
!> - Communicators: an `integer` handle (use mpi) or a type(MPI_Comm) (use mpi_f08).
!> - Steps are integer(int64) (integer(c_int64_t)); array shapes and offsets default integers.
!> - Arrays: assumed-shape arrays of real(c_float), real(c_double), integer(c_int32_t),
!>   integer(c_int64_t), logical(c_bool), default-kind logical, complex(c_float_complex) and
!>   complex(c_double_complex), of rank 1 to 7 (generic interfaces).
!>   - Sections need not be contiguous: cairn_tree_add_array passes a section such as
!>     a(1:n:2, :) or a(n:1:-1) with its strides, and saving reads it, restoring writes it, in
!>     place. Pass arrays and sections only, never an expression or a component of an array
!>     of derived type (`p%x`): gfortran passes those as a temporary copy, which is gone when
!>     the call returns (cairn cannot tell). A compiler that passes `p%x` in place gives strides
!>     that may not be a whole number of elements; such an array is refused.
!>   - Default-kind logical arrays are saved as CAIRN_BOOL (one byte per element, as
!>     logical(c_bool) arrays are) through cairn_tree_add_logical_array: they are converted at
!>     each save and written back (1 for .true.) at the end of each restore into the tree,
!>     where logical(c_bool) arrays are read and written in place.
!>   - cairn_tree_read_array reads into any section or logical kind (through a contiguous
!>     copy when needed).
!> - Column-major order: cairn stores arrays in row-major (C) order, so a Fortran array
!>   a(n1, n2, n3) is stored as the C-order array of shape [n3, n2, n1], the same bytes with
!>   the dimensions reversed (as HDF5's Fortran API does). `global_shape` and `offset` are
!>   given in Fortran order (offsets count from 0) and reversed by this module. h5py and C see
!>   the array transposed: Fortran a(i, j) is C a[j][i] (0-based) and numpy a[j-1, i-1].
!>   Every array this module adds is marked CAIRN_ARRAY_FORTRAN_ORDER, so the checkpoint
!>   records it: "order": "F" in cairn-tree.json and the attribute cairn_order = "F" on the
!>   HDF5 dataset (the shape stored is still the reversed one).
!> - Device memory: cairn_tree_add_array_ptr takes an array's address as a type(c_ptr) with
!>   its dtype, shapes and memory kind, as cairn_array_desc does in C, so a leaf may live in
!>   CUDA device memory (memory=CAIRN_MEMORY_CUDA_DEVICE). The pointer may come from cudaMalloc
!>   called through a bind(C) interface, or, with nvfortran, from a CUDA Fortran device array
!>   a_d: transfer(c_devloc(a_d), c_null_ptr). The generic cairn_tree_add_array takes host
!>   arrays only. Saving a device leaf, or restoring into one, needs a build with CUDA and a
!>   usable device on every rank; otherwise it fails with CAIRN_ERR_UNSUPPORTED naming the leaf
!>   and the reason. cairn's tests use gfortran, which has no CUDA Fortran: the nvfortran route
!>   is the documented idiom, not a tested one.
!> - Collective procedures must be called by every rank in the same order (see cairn.h).
module cairn
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: error_unit
#if CAIRN_HAVE_MPI_F08
  use mpi_f08, only: MPI_Comm
#endif
  implicit none
  private

  ! `!> @{` ... `!> @}` gives one doc comment to every constant of a declaration (the API
  ! reference, docs/Doxyfile-fortran.in).
  !> Status codes (cairn.h): CAIRN_OK, or what failed.
  !> @{
  integer, parameter, public :: CAIRN_OK = 0, CAIRN_ERR_INVALID_ARGUMENT = 1, CAIRN_ERR_IO = 2, &
                                CAIRN_ERR_FORMAT = 3, CAIRN_ERR_COLLECTIVE_MISMATCH = 4, &
                                CAIRN_ERR_TIMEOUT = 5, CAIRN_ERR_NOT_FOUND = 6, &
                                CAIRN_ERR_UNSUPPORTED = 7, CAIRN_ERR_INTERNAL = 8, &
                                CAIRN_ERR_NO_MEMORY = 9
  !> @}
  !> What a failing call does (cairn_set_error_mode).
  !> @{
  integer, parameter, public :: CAIRN_ERRORS_RETURN = 0, CAIRN_ERRORS_FATAL = 1
  !> @}
  !> Element types (cairn.h).
  !> @{
  integer, parameter, public :: CAIRN_BOOL = 0, CAIRN_INT8 = 1, CAIRN_INT16 = 2, &
                                CAIRN_INT32 = 3, CAIRN_INT64 = 4, CAIRN_UINT8 = 5, &
                                CAIRN_UINT16 = 6, CAIRN_UINT32 = 7, CAIRN_UINT64 = 8, &
                                CAIRN_FLOAT16 = 9, CAIRN_BFLOAT16 = 10, CAIRN_FLOAT32 = 11, &
                                CAIRN_FLOAT64 = 12, CAIRN_COMPLEX64 = 13, CAIRN_COMPLEX128 = 14
  !> @}
  !> Kinds of leaves (cairn_tree_leaf_kind).
  !> @{
  integer, parameter, public :: CAIRN_LEAF_ARRAY = 0, CAIRN_LEAF_SCALAR = 1, &
                                CAIRN_LEAF_STRING = 2, CAIRN_LEAF_JSON = 3
  !> @}
  !> Storage formats: cairn's own files (posix) or one parallel HDF5 file.
  !> @{
  integer, parameter, public :: CAIRN_FORMAT_POSIX = 0, CAIRN_FORMAT_HDF5 = 1
  !> @}
  !> best_mode of cairn_manager_create: the best step has the largest or the smallest metric.
  !> @{
  integer, parameter, public :: CAIRN_BEST_MAX = 0, CAIRN_BEST_MIN = 1
  !> @}
  !> cairn_manager_create(max_to_keep=CAIRN_KEEP_ALL) keeps every step (as an absent keyword).
  integer, parameter, public :: CAIRN_KEEP_ALL = -1
  !> step_name_format: Orbax's `<prefix>_<step>`, `<prefix><step>`, CLU's `ckpt-<n>`, or the
  !> program's own names.
  !> @{
  integer, parameter, public :: CAIRN_STEP_NAME_STANDARD = 0, CAIRN_STEP_NAME_JOINED = 1, &
                                CAIRN_STEP_NAME_CLU = 2, CAIRN_STEP_NAME_CUSTOM = 3
  !> @}
  !> The largest number of dimensions of an array.
  integer, parameter, public :: CAIRN_MAX_DIMS = 32
  !> Kinds of empty tree nodes (cairn_tree_add_empty).
  !> @{
  integer, parameter, public :: CAIRN_EMPTY_GROUP = 0, CAIRN_EMPTY_LIST = 1
  !> @}
  !> Where an array lives (cairn_tree_add_array_ptr).
  !> @{
  integer, parameter, public :: CAIRN_MEMORY_HOST = 0, CAIRN_MEMORY_CUDA_DEVICE = 1
  !> @}
  !> Compression kinds (`cairn_compression%kind`); DEFAULT: the save's.
  !> @{
  integer(c_int), parameter, public :: CAIRN_COMPRESSION_DEFAULT = -1, &
                                       CAIRN_COMPRESSION_NONE = 0, CAIRN_COMPRESSION_ZSTD = 1, &
                                       CAIRN_COMPRESSION_ZFP = 2
  !> @}
  ! Flags of cairn_tree_add_array (cairn.h), set by this module.
  integer(c_int), parameter :: ARRAY_REPLICATED = 1_c_int, ARRAY_FORTRAN_ORDER = 2_c_int

  !> A communicator duplicated for cairn (cairn_comm_create).
  type, public :: cairn_comm
    type(c_ptr) :: ptr = c_null_ptr  !< the C handle (cairn.h); null until created
  end type cairn_comm
  !> A tree of named leaves: views of the program's arrays, scalars, strings, JSON.
  type, public :: cairn_tree
    type(c_ptr) :: ptr = c_null_ptr  !< the C handle (cairn.h); null until created
  end type cairn_tree
  !> The items of a composite step: trees, JSON, bytes and user items by name.
  type, public :: cairn_items
    type(c_ptr) :: ptr = c_null_ptr  !< the C handle (cairn.h); null until created
  end type cairn_items
  !> A checkpoint manager of one root directory (cairn_manager_create).
  type, public :: cairn_manager
    type(c_ptr) :: ptr = c_null_ptr  !< the C handle (cairn.h); null until created
  end type cairn_manager
  !> A multihost checkpoint: restart from the newest step every process has.
  type, public :: cairn_multihost
    type(c_ptr) :: ptr = c_null_ptr  !< the C handle (cairn.h); null until created
  end type cairn_multihost
  !> When a manager saves (cairn_save_policy_*).
  type, public :: cairn_save_policy
    type(c_ptr) :: ptr = c_null_ptr  !< the C handle (cairn.h); null until created
  end type cairn_save_policy
  !> Which steps a manager keeps (cairn_preservation_policy_*).
  type, public :: cairn_preservation_policy
    type(c_ptr) :: ptr = c_null_ptr  !< the C handle (cairn.h); null until created
  end type cairn_preservation_policy
  !> Saves and restores one tree or composite without a manager.
  type, public :: cairn_checkpointer
    type(c_ptr) :: ptr = c_null_ptr  !< the C handle (cairn.h); null until created
  end type cairn_checkpointer

  !> Duplicates an MPI communicator for cairn: `integer` (mpi) or `type(MPI_Comm)` (mpi_f08).
  !> Collective.
  interface cairn_comm_create
    module procedure comm_create_integer
#if CAIRN_HAVE_MPI_F08
    module procedure comm_create_f08
#endif
  end interface cairn_comm_create

  public :: cairn_set_error_mode
  public :: cairn_last_error, cairn_version, cairn_comm_create, cairn_comm_free, cairn_comm_rank
  public :: cairn_comm_size, cairn_tree_create, cairn_tree_free, cairn_tree_add_string
  public :: cairn_tree_add_json, cairn_tree_get_string, cairn_tree_get_json
  public :: cairn_tree_array_info, cairn_tree_leaf_kind, cairn_tree_leaf_count
  public :: cairn_tree_add_array_ptr
  public :: cairn_tree_leaf_path, cairn_items_create, cairn_items_free
  public :: cairn_items_add_tree, cairn_items_add_json, cairn_items_get_json
  public :: cairn_items_get_tree, cairn_manager_create, cairn_manager_free, cairn_manager_save
  public :: cairn_manager_save_items, cairn_manager_restore, cairn_manager_restore_as_saved
  public :: cairn_manager_restore_latest_intact
  public :: cairn_manager_restore_items, cairn_manager_latest_step, cairn_manager_best_step
  public :: cairn_manager_all_steps, cairn_manager_reload, cairn_manager_should_save
  public :: cairn_manager_reached_preemption, cairn_manager_wait_until_finished
  public :: cairn_manager_check_for_errors, cairn_manager_is_saving_in_progress
  public :: cairn_manager_delete_step, cairn_manager_metrics, cairn_manager_custom_metadata
  public :: cairn_manager_step_metadata, cairn_manager_item_metadata, cairn_manager_step_path
  public :: cairn_manager_root_metadata, cairn_manager_close, cairn_multihost_create
  public :: cairn_multihost_free, cairn_multihost_restore_or_initialize, cairn_multihost_save
  public :: cairn_multihost_latest_common_step
  public :: cairn_save_policy_fixed_interval, cairn_save_policy_specific_steps
  public :: cairn_save_policy_continuous, cairn_save_policy_preemption
  public :: cairn_save_policy_initial, cairn_save_policy_fn, cairn_save_policy_any_of
  public :: cairn_save_policy_describe, cairn_save_policy_free
  public :: cairn_preservation_policy_preserve_all, cairn_preservation_policy_latest_n
  public :: cairn_preservation_policy_every_n_steps, cairn_preservation_policy_every_n_seconds
  public :: cairn_preservation_policy_best_n, cairn_preservation_policy_custom_steps
  public :: cairn_preservation_policy_any_of, cairn_preservation_policy_describe
  public :: cairn_preservation_policy_free
  public :: cairn_manager_restore_from, cairn_multihost_restore, cairn_save_policy_fn_latest
  public :: cairn_preservation_policy_every_n_steps_ex
  public :: cairn_preservation_policy_every_n_steps_closest
  public :: cairn_preservation_policy_latest_duration, cairn_preservation_policy_fn
  public :: cairn_checkpointer_create, cairn_checkpointer_free, cairn_checkpointer_save
  public :: cairn_checkpointer_restore, cairn_checkpointer_metadata
  public :: cairn_checkpointer_wait_until_finished, cairn_checkpointer_is_saving_in_progress
  public :: cairn_no_compression, cairn_zstd, cairn_zfp_absolute
  public :: cairn_zfp_relative, cairn_leaf_save, cairn_rename, cairn_resize
  public :: cairn_compression, cairn_derive, cairn_derive_function
  public :: cairn_items_add_bytes, cairn_items_add_bytes_target, cairn_items_get_bytes
  public :: cairn_items_set_metadata, cairn_items_get_metadata
  public :: cairn_tree_add_empty, cairn_tree_empty_count, cairn_tree_empty_node
  public :: cairn_checkpointer_create_composite, cairn_checkpointer_save_items
  public :: cairn_checkpointer_restore_items
  public :: cairn_items_add_user, cairn_user_item_function, cairn_string_from_c

#include "cairn_arrays_interfaces.inc"

#include "cairn_c_types.inc"

#include "cairn_leaf_options_types.inc"

#include "cairn_c_interfaces.inc"

#include "cairn_multihost_interfaces.inc"

#include "cairn_checkpointer_interfaces.inc"

#include "cairn_items_interfaces.inc"

  ! The message of the last failure found by this module itself (not by a C call), if that
  ! was the last failure. Declared after the interfaces: Doxygen 1.9 drops a generic
  ! interface that follows a variable declaration.
  character(len=:), allocatable :: fortran_error

contains

#include "cairn_manager_create.inc"

#include "cairn_manager.inc"

#include "cairn_checkpointer.inc"

#include "cairn_leaf_options.inc"

#include "cairn_multihost.inc"

#include "cairn_policies.inc"

#include "cairn_helpers.inc"

#include "cairn_comm.inc"

#include "cairn_tree.inc"

#include "cairn_items.inc"

#include "cairn_items_more.inc"

#include "cairn_arrays_procedures.inc"

end module cairn
