! cairn — the Fortran module: checkpoint/restart of MPI programs from Fortran 2008, over the
! C ABI (cairn.h) with iso_c_binding.
!
! Conventions
! - One derived type per handle (cairn_comm, cairn_tree, cairn_items, cairn_manager,
!   cairn_multihost, cairn_save_policy, cairn_preservation_policy). Create with cairn_<type>_create, release with cairn_<type>_free.
! - Every procedure takes a trailing optional `ierr`. Present: it receives the status
!   (CAIRN_OK or a CAIRN_ERR_* code) and cairn_last_error() the message. Absent: an error
!   prints the message to error_unit and stops the program (error stop), as MPI's default
!   error handler does.
! - Communicators: an `integer` handle (use mpi) or a type(MPI_Comm) (use mpi_f08).
! - Steps are integer(int64) (integer(c_int64_t)); array shapes and offsets default integers.
! - Arrays: assumed-shape arrays of real(c_float), real(c_double), integer(c_int32_t),
!   integer(c_int64_t), logical(c_bool), default-kind logical, complex(c_float_complex) and
!   complex(c_double_complex), of rank 1 to 7 (generic interfaces).
!   - Sections need not be contiguous: cairn_tree_add_array passes a section such as
!     a(1:n:2, :) or a(n:1:-1) with its strides, and saving reads it, restoring writes it, in
!     place. Pass arrays and sections only, never an expression or a component of an array
!     of derived type (p%x): gfortran passes those as a temporary copy, which is gone when
!     the call returns (cairn cannot tell). A compiler that passes p%x in place gives strides
!     that may not be a whole number of elements; such an array is refused.
!   - Default-kind logical arrays are saved as CAIRN_BOOL (one byte per element, as
!     logical(c_bool) arrays are) through cairn_tree_add_logical_array: they are converted at
!     each save and written back (1 for .true.) at the end of each restore into the tree,
!     where logical(c_bool) arrays are read and written in place.
!   - cairn_tree_read_array reads into any section or logical kind (through a contiguous
!     copy when needed).
! - Column-major order: cairn stores arrays in row-major (C) order, so a Fortran array
!   a(n1, n2, n3) is stored as the C-order array of shape [n3, n2, n1], the same bytes with
!   the dimensions reversed (as HDF5's Fortran API does). `global_shape` and `offset` are
!   given in Fortran order (offsets count from 0) and reversed by this module. h5py and C see
!   the array transposed: Fortran a(i, j) is C a[j][i] (0-based) and numpy a[j-1, i-1].
!   Every array this module adds is marked CAIRN_ARRAY_FORTRAN_ORDER, so the checkpoint
!   records it: "order": "F" in cairn-tree.json and the attribute cairn_order = "F" on the
!   HDF5 dataset (the shape stored is still the reversed one).
! - Device memory: cairn_tree_add_array_ptr takes an array's address as a type(c_ptr) with
!   its dtype, shapes and memory kind, as cairn_array_desc does in C, so a leaf may live in
!   CUDA device memory (memory=CAIRN_MEMORY_CUDA_DEVICE). The pointer may come from cudaMalloc
!   called through a bind(C) interface, or, with nvfortran, from a CUDA Fortran device array
!   a_d: transfer(c_devloc(a_d), c_null_ptr). The generic cairn_tree_add_array takes host
!   arrays only. Saving a device leaf, or restoring into one, needs a build with CUDA and a
!   usable device on every rank; otherwise it fails with CAIRN_ERR_UNSUPPORTED naming the leaf
!   and the reason. cairn's tests use gfortran, which has no CUDA Fortran: the nvfortran route
!   is the documented idiom, not a tested one.
! - Collective procedures must be called by every rank in the same order (see cairn.h).
module cairn
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: error_unit
#if CAIRN_HAVE_MPI_F08
  use mpi_f08, only: MPI_Comm
#endif
  implicit none
  private

  ! Status codes (cairn.h).
  integer, parameter, public :: CAIRN_OK = 0, CAIRN_ERR_INVALID_ARGUMENT = 1, CAIRN_ERR_IO = 2, &
                                CAIRN_ERR_FORMAT = 3, CAIRN_ERR_COLLECTIVE_MISMATCH = 4, &
                                CAIRN_ERR_TIMEOUT = 5, CAIRN_ERR_NOT_FOUND = 6, &
                                CAIRN_ERR_UNSUPPORTED = 7, CAIRN_ERR_INTERNAL = 8, &
                                CAIRN_ERR_NO_MEMORY = 9
  ! Element types (cairn.h).
  integer, parameter, public :: CAIRN_BOOL = 0, CAIRN_INT8 = 1, CAIRN_INT16 = 2, &
                                CAIRN_INT32 = 3, CAIRN_INT64 = 4, CAIRN_UINT8 = 5, &
                                CAIRN_UINT16 = 6, CAIRN_UINT32 = 7, CAIRN_UINT64 = 8, &
                                CAIRN_FLOAT16 = 9, CAIRN_BFLOAT16 = 10, CAIRN_FLOAT32 = 11, &
                                CAIRN_FLOAT64 = 12, CAIRN_COMPLEX64 = 13, CAIRN_COMPLEX128 = 14
  integer, parameter, public :: CAIRN_LEAF_ARRAY = 0, CAIRN_LEAF_SCALAR = 1, &
                                CAIRN_LEAF_STRING = 2, CAIRN_LEAF_JSON = 3
  integer, parameter, public :: CAIRN_FORMAT_POSIX = 0, CAIRN_FORMAT_HDF5 = 1
  integer, parameter, public :: CAIRN_BEST_MAX = 0, CAIRN_BEST_MIN = 1
  ! cairn_manager_create(max_to_keep=CAIRN_KEEP_ALL) keeps every step (as an absent keyword);
  ! step_name_format: Orbax's <prefix>_<step>, or <prefix><step> (CLU's ckpt-<n>).
  integer, parameter, public :: CAIRN_KEEP_ALL = -1
  integer, parameter, public :: CAIRN_STEP_NAME_STANDARD = 0, CAIRN_STEP_NAME_JOINED = 1
  integer, parameter, public :: CAIRN_MAX_DIMS = 32
  integer, parameter, public :: CAIRN_MEMORY_HOST = 0, CAIRN_MEMORY_CUDA_DEVICE = 1
  ! Flags of cairn_tree_add_array (cairn.h), set by this module.
  integer(c_int), parameter :: ARRAY_REPLICATED = 1_c_int, ARRAY_FORTRAN_ORDER = 2_c_int

  type, public :: cairn_comm
    type(c_ptr) :: ptr = c_null_ptr
  end type cairn_comm
  type, public :: cairn_tree
    type(c_ptr) :: ptr = c_null_ptr
  end type cairn_tree
  type, public :: cairn_items
    type(c_ptr) :: ptr = c_null_ptr
  end type cairn_items
  type, public :: cairn_manager
    type(c_ptr) :: ptr = c_null_ptr
  end type cairn_manager
  type, public :: cairn_multihost
    type(c_ptr) :: ptr = c_null_ptr
  end type cairn_multihost
  type, public :: cairn_save_policy
    type(c_ptr) :: ptr = c_null_ptr
  end type cairn_save_policy
  type, public :: cairn_preservation_policy
    type(c_ptr) :: ptr = c_null_ptr
  end type cairn_preservation_policy

  interface cairn_comm_create
    module procedure comm_create_integer
#if CAIRN_HAVE_MPI_F08
    module procedure comm_create_f08
#endif
  end interface cairn_comm_create

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

  ! The message of the last failure found by this module itself (not by a C call), if that
  ! was the last failure.
  character(len=:), allocatable :: fortran_error

#include "cairn_arrays_interfaces.inc"

#include "cairn_c_interfaces.inc"

#include "cairn_multihost_interfaces.inc"

contains

#include "cairn_manager.inc"

#include "cairn_multihost.inc"

#include "cairn_policies.inc"

  ! ---------------------------------------------------------------- helpers

  ! The status to `ierr`, or, without ierr, stop with the message on failure.
  subroutine check(status, ierr)
    integer(c_int), intent(in) :: status
    integer, intent(out), optional :: ierr
    if (status /= CAIRN_OK .and. allocated(fortran_error)) deallocate (fortran_error)
    if (present(ierr)) then
      ierr = int(status)
    else if (status /= CAIRN_OK) then
      write (error_unit, '(a)') 'cairn: '//cairn_last_error()
      error stop 1
    end if
  end subroutine check

  ! Records a failure found on the Fortran side (cairn_last_error returns it until the next
  ! failure of a C call) and reports it.
  subroutine fail(status, message, ierr)
    integer, intent(in) :: status
    character(len=*), intent(in) :: message
    integer, intent(out), optional :: ierr
    fortran_error = message
    if (present(ierr)) then
      ierr = status
    else
      write (error_unit, '(a)') 'cairn: '//message
      error stop 1
    end if
  end subroutine fail

  ! `text` as a NUL-terminated C string.
  pure function c_string(text) result(c)
    character(len=*), intent(in) :: text
    character(kind=c_char, len=:), allocatable :: c
    c = trim(text)//c_null_char
  end function c_string

  ! A copy of the NUL-terminated C string at `p` (empty for a null pointer).
  function f_string(p) result(text)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: text
    character(kind=c_char), pointer :: chars(:)
    integer :: i, n
    if (.not. c_associated(p)) then
      text = ''
      return
    end if
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate (character(len=n) :: text)
    do i = 1, n
      text(i:i) = chars(i)
    end do
  end function f_string

  ! f_string(p), then releases p with cairn_free.
  function take_string(p) result(text)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: text
    text = f_string(p)
    call c_free(p)
  end function take_string

  function c_bool_int(flag, default) result(value)
    logical, intent(in), optional :: flag
    logical, intent(in) :: default
    integer(c_int) :: value
    value = merge(1_c_int, 0_c_int, default)
    if (present(flag)) value = merge(1_c_int, 0_c_int, flag)
  end function c_bool_int

  ! ---------------------------------------------------------------- version, errors, comm

  !> The message of this thread's last failed cairn call ('' when none failed).
  function cairn_last_error() result(message)
    character(len=:), allocatable :: message
    if (allocated(fortran_error)) then
      message = fortran_error
    else
      message = f_string(c_last_error())
    end if
  end function cairn_last_error

  !> The library's version, e.g. '0.1.0'.
  function cairn_version() result(version)
    character(len=:), allocatable :: version
    version = f_string(c_version(c_null_ptr, c_null_ptr, c_null_ptr))
  end function cairn_version

  !> Duplicates `communicator` (an integer handle of the mpi module) into `comm`.
  !> Collective.
  subroutine comm_create_integer(comm, communicator, ierr)
    type(cairn_comm), intent(out) :: comm
    integer, intent(in) :: communicator
    integer, intent(out), optional :: ierr
    call check(c_comm_create_f(int(communicator, c_int), comm%ptr), ierr)
  end subroutine comm_create_integer

#if CAIRN_HAVE_MPI_F08
  !> Duplicates `communicator` (mpi_f08) into `comm`. Collective.
  subroutine comm_create_f08(comm, communicator, ierr)
    type(cairn_comm), intent(out) :: comm
    type(MPI_Comm), intent(in) :: communicator
    integer, intent(out), optional :: ierr
    call check(c_comm_create_f(int(communicator%MPI_VAL, c_int), comm%ptr), ierr)
  end subroutine comm_create_f08
#endif

  !> Releases the handle. Not collective.
  subroutine cairn_comm_free(comm)
    type(cairn_comm), intent(inout) :: comm
    call c_comm_free(comm%ptr)
    comm%ptr = c_null_ptr
  end subroutine cairn_comm_free

  !> This process's rank (0-based). Not collective.
  subroutine cairn_comm_rank(comm, rank, ierr)
    type(cairn_comm), intent(in) :: comm
    integer, intent(out) :: rank
    integer, intent(out), optional :: ierr
    integer(c_int) :: r
    r = -1
    call check(c_comm_rank(comm%ptr, r), ierr)
    rank = int(r)
  end subroutine cairn_comm_rank

  !> The number of ranks. Not collective.
  subroutine cairn_comm_size(comm, size, ierr)
    type(cairn_comm), intent(in) :: comm
    integer, intent(out) :: size
    integer, intent(out), optional :: ierr
    integer(c_int) :: s
    s = 0
    call check(c_comm_size(comm%ptr, s), ierr)
    size = int(s)
  end subroutine cairn_comm_size

  ! ---------------------------------------------------------------- trees

  !> A new empty tree.
  subroutine cairn_tree_create(tree, ierr)
    type(cairn_tree), intent(out) :: tree
    integer, intent(out), optional :: ierr
    call check(c_tree_create(tree%ptr), ierr)
  end subroutine cairn_tree_create

  !> Releases the tree (the arrays it refers to stay the caller's).
  subroutine cairn_tree_free(tree)
    type(cairn_tree), intent(inout) :: tree
    call c_tree_free(tree%ptr)
    tree%ptr = c_null_ptr
  end subroutine cairn_tree_free

  !> Adds a string leaf.
  subroutine cairn_tree_add_string(tree, path, value, ierr)
    type(cairn_tree), intent(inout) :: tree
    character(len=*), intent(in) :: path, value
    integer, intent(out), optional :: ierr
    call check(c_tree_add_string(tree%ptr, c_string(path), value//c_null_char), ierr)
  end subroutine cairn_tree_add_string

  !> Adds a JSON leaf from its text.
  subroutine cairn_tree_add_json(tree, path, json, ierr)
    type(cairn_tree), intent(inout) :: tree
    character(len=*), intent(in) :: path, json
    integer, intent(out), optional :: ierr
    call check(c_tree_add_json(tree%ptr, c_string(path), json//c_null_char), ierr)
  end subroutine cairn_tree_add_json

  !> A string leaf's value.
  subroutine cairn_tree_get_string(tree, path, value, ierr)
    type(cairn_tree), intent(in) :: tree
    character(len=*), intent(in) :: path
    character(len=:), allocatable, intent(out) :: value
    integer, intent(out), optional :: ierr
    type(c_ptr) :: p
    integer(c_int) :: status
    p = c_null_ptr
    status = c_tree_get_string(tree%ptr, c_string(path), p)
    value = take_string(p)
    call check(status, ierr)
  end subroutine cairn_tree_get_string

  !> A JSON leaf as text.
  subroutine cairn_tree_get_json(tree, path, json, ierr)
    type(cairn_tree), intent(in) :: tree
    character(len=*), intent(in) :: path
    character(len=:), allocatable, intent(out) :: json
    integer, intent(out), optional :: ierr
    type(c_ptr) :: p
    integer(c_int) :: status
    p = c_null_ptr
    status = c_tree_get_json(tree%ptr, c_string(path), p)
    json = take_string(p)
    call check(status, ierr)
  end subroutine cairn_tree_get_json

  !> The number of leaves.
  subroutine cairn_tree_leaf_count(tree, count, ierr)
    type(cairn_tree), intent(in) :: tree
    integer, intent(out) :: count
    integer, intent(out), optional :: ierr
    integer(c_size_t) :: n
    n = 0
    call check(c_tree_leaf_count(tree%ptr, n), ierr)
    count = int(n)
  end subroutine cairn_tree_leaf_count

  !> The path of leaf number `index` (1-based, in the order the leaves were added).
  subroutine cairn_tree_leaf_path(tree, index, path, ierr)
    type(cairn_tree), intent(in) :: tree
    integer, intent(in) :: index
    character(len=:), allocatable, intent(out) :: path
    integer, intent(out), optional :: ierr
    type(c_ptr) :: p
    integer(c_int) :: status
    p = c_null_ptr
    if (index < 1) then
      path = ''
      call fail(CAIRN_ERR_NOT_FOUND, 'cairn_tree_leaf_path: leaf numbers start at 1', ierr)
      return
    end if
    status = c_tree_leaf_path(tree%ptr, int(index - 1, c_size_t), p)
    path = take_string(p)
    call check(status, ierr)
  end subroutine cairn_tree_leaf_path

  !> What the leaf `path` holds (CAIRN_LEAF_*).
  subroutine cairn_tree_leaf_kind(tree, path, kind, ierr)
    type(cairn_tree), intent(in) :: tree
    character(len=*), intent(in) :: path
    integer, intent(out) :: kind
    integer, intent(out), optional :: ierr
    integer(c_int) :: k
    k = -1
    call check(c_tree_leaf_kind(tree%ptr, c_string(path), k), ierr)
    kind = int(k)
  end subroutine cairn_tree_leaf_kind

  !> Describes an array leaf in Fortran order: its dtype (CAIRN_*), the global shape, this
  !> rank's offset (0-based) and local shape, and whether it is replicated.
  subroutine cairn_tree_array_info(tree, path, dtype, global_shape, offset, local_shape, &
                                   replicated, ierr)
    type(cairn_tree), intent(in) :: tree
    character(len=*), intent(in) :: path
    integer, intent(out), optional :: dtype
    integer, allocatable, intent(out), optional :: global_shape(:), offset(:), local_shape(:)
    logical, intent(out), optional :: replicated
    integer, intent(out), optional :: ierr
    integer(c_int) :: d, n, r, status
    integer(c_int64_t) :: g(CAIRN_MAX_DIMS), o(CAIRN_MAX_DIMS), l(CAIRN_MAX_DIMS)
    d = 0
    n = 0
    r = 0
    status = c_tree_array_info(tree%ptr, c_string(path), d, n, int(CAIRN_MAX_DIMS, c_int), &
                               g, o, l, r)
    if (status == CAIRN_OK) then
      if (present(dtype)) dtype = int(d)
      if (present(global_shape)) global_shape = int(g(n:1:-1))
      if (present(offset)) offset = int(o(n:1:-1))
      if (present(local_shape)) local_shape = int(l(n:1:-1))
      if (present(replicated)) replicated = r /= 0
    end if
    call check(status, ierr)
  end subroutine cairn_tree_array_info

  !> Adds this rank's shard of a global array by address: `data` points to the shard's
  !> elements of type `dtype` (CAIRN_*), contiguous in Fortran order. `global_shape`, `offset`
  !> (0-based) and `local_shape` are in Fortran order, as for cairn_tree_add_array (the leaf is
  !> marked CAIRN_ARRAY_FORTRAN_ORDER); without offset and local_shape the shard is the whole
  !> array. `memory`: CAIRN_MEMORY_HOST (the default) or CAIRN_MEMORY_CUDA_DEVICE for a CUDA
  !> device pointer (see the module header). The memory must stay valid while the tree is
  !> used. Not collective. Fails with CAIRN_ERR_INVALID_ARGUMENT as cairn_tree_add_array does,
  !> for an unknown memory kind, or when only one of offset and local_shape is given or their
  !> sizes differ from global_shape's. A device leaf without a usable device fails later, when
  !> the tree is saved or restored into (CAIRN_ERR_UNSUPPORTED).
  subroutine cairn_tree_add_array_ptr(tree, path, dtype, data, global_shape, offset, &
                                      local_shape, memory, replicated, ierr)
    type(cairn_tree), intent(inout) :: tree
    character(len=*), intent(in) :: path
    integer, intent(in) :: dtype
    type(c_ptr), intent(in) :: data
    integer, intent(in) :: global_shape(:)
    integer, intent(in), optional :: offset(:), local_shape(:)
    integer, intent(in), optional :: memory
    logical, intent(in), optional :: replicated
    integer, intent(out), optional :: ierr
    integer(c_int64_t), target :: g(size(global_shape)), o(size(global_shape)), &
                                  l(size(global_shape))
    type(array_desc_c) :: desc
    integer :: n
    n = size(global_shape)
    if (present(offset) .neqv. present(local_shape)) then
      call fail(CAIRN_ERR_INVALID_ARGUMENT, 'cairn_tree_add_array_ptr: leaf '''//trim(path)// &
                ''': pass both offset and local_shape, or neither', ierr)
      return
    end if
    desc%struct_size = c_sizeof(desc)
    desc%dtype = int(dtype, c_int)
    desc%ndim = int(n, c_int)
    desc%global_dims = c_null_ptr
    desc%offset = c_null_ptr
    desc%local_dims = c_null_ptr
    desc%strides = c_null_ptr
    desc%data = data
    desc%memory = int(CAIRN_MEMORY_HOST, c_int)
    if (present(memory)) desc%memory = int(memory, c_int)
    desc%replicated = c_bool_int(replicated, .false.)
    ! The dims are reversed below: the checkpoint records the array as a Fortran one.
    desc%fortran_order = 1_c_int
    if (n > 0) then
      g = int(global_shape(n:1:-1), c_int64_t)
      desc%global_dims = c_loc(g)
      if (present(offset)) then
        if (size(offset) /= n .or. size(local_shape) /= n) then
          call fail(CAIRN_ERR_INVALID_ARGUMENT, 'cairn_tree_add_array_ptr: leaf '''// &
                    trim(path)//''': offset and local_shape need as many dimensions as '// &
                    'global_shape', ierr)
          return
        end if
        o = int(offset(n:1:-1), c_int64_t)
        l = int(local_shape(n:1:-1), c_int64_t)
        desc%offset = c_loc(o)
        desc%local_dims = c_loc(l)
      end if
    end if
    call check(c_tree_add_array_desc(tree%ptr, c_string(path), desc), ierr)
  end subroutine cairn_tree_add_array_ptr

  ! The type- and rank-independent part of cairn_tree_add_array. `first` is the address of the
  ! array's first element and steps(d) that of the next element along dimension d (of the
  ! first element when the extent is 1): their differences are the element strides. Reverses
  ! shapes and strides to C order and adds the shard marked CAIRN_ARRAY_FORTRAN_ORDER; with
  ! `logicals`, elements of `elem_bytes` bytes that cairn converts to CAIRN_BOOL.
  subroutine add_array_at(tree, path, dtype, elem_bytes, logicals, local_shape, first, steps, &
                          global_shape, offset, replicated, ierr)
    type(cairn_tree), intent(inout) :: tree
    character(len=*), intent(in) :: path
    integer, intent(in) :: dtype, elem_bytes
    logical, intent(in) :: logicals
    integer(c_int64_t), intent(in) :: local_shape(:)
    type(c_ptr), intent(in) :: first, steps(:)
    integer, intent(in), optional :: global_shape(:), offset(:)
    logical, intent(in), optional :: replicated
    integer, intent(out), optional :: ierr
    integer(c_int64_t), target :: g(size(local_shape)), o(size(local_shape)), &
                                  l(size(local_shape)), s(size(local_shape))
    integer(c_int64_t) :: strides(size(local_shape)), expected, bytes
    integer(c_intptr_t) :: a
    type(array_desc_c) :: desc
    integer :: n, d
    integer(c_int) :: flags
    logical :: contiguous
    n = size(local_shape)
    ! Element strides in Fortran order; a dimension of extent 1 keeps the contiguous stride.
    expected = 1
    contiguous = .true.
    do d = 1, n
      strides(d) = expected
      if (local_shape(d) > 1 .and. c_associated(first)) then
        bytes = transfer(steps(d), a) - transfer(first, a)
        if (mod(bytes, int(elem_bytes, c_int64_t)) /= 0) then
          call fail(CAIRN_ERR_INVALID_ARGUMENT, 'cairn_tree_add_array: the array for leaf '''// &
                    trim(path)//''' has a stride that is not a whole number of elements (a '// &
                    'component of an array of derived type?); copy it to an array', ierr)
          return
        end if
        strides(d) = bytes / elem_bytes
      end if
      contiguous = contiguous .and. strides(d) == expected
      expected = expected * max(local_shape(d), 1_c_int64_t)
    end do
    l = local_shape(n:1:-1)
    g = l
    o = 0
    s = strides(n:1:-1)
    if (present(global_shape)) then
      if (size(global_shape) /= n) then
        call fail(CAIRN_ERR_INVALID_ARGUMENT, 'cairn_tree_add_array: leaf '''//trim(path)// &
                  ''': global_shape has the wrong number of dimensions', ierr)
        return
      end if
      g = int(global_shape(n:1:-1), c_int64_t)
    end if
    if (present(offset)) then
      if (size(offset) /= n) then
        call fail(CAIRN_ERR_INVALID_ARGUMENT, 'cairn_tree_add_array: leaf '''//trim(path)// &
                  ''': offset has the wrong number of dimensions', ierr)
        return
      end if
      o = int(offset(n:1:-1), c_int64_t)
    end if
    if (contiguous .and. .not. logicals) then
      ! The dims were reversed above: the checkpoint records the array as a Fortran one.
      flags = ARRAY_FORTRAN_ORDER
      if (present(replicated)) flags = ior(flags, merge(ARRAY_REPLICATED, 0_c_int, replicated))
      call check(c_tree_add_array(tree%ptr, c_string(path), int(dtype, c_int), int(n, c_int), &
                                  g, o, l, first, flags), ierr)
      return
    end if
    desc%struct_size = c_sizeof(desc)
    desc%dtype = int(dtype, c_int)
    desc%ndim = int(n, c_int)
    desc%global_dims = c_loc(g)
    desc%offset = c_loc(o)
    desc%local_dims = c_loc(l)
    desc%strides = c_loc(s)
    desc%data = first
    desc%memory = int(CAIRN_MEMORY_HOST, c_int)
    desc%replicated = c_bool_int(replicated, .false.)
    desc%fortran_order = 1_c_int
    if (logicals) then
      call check(c_tree_add_logical_array(tree%ptr, c_string(path), &
                                          int(elem_bytes, c_size_t), desc), ierr)
    else
      call check(c_tree_add_array_desc(tree%ptr, c_string(path), desc), ierr)
    end if
  end subroutine add_array_at

  ! The type- and rank-independent part of cairn_tree_read_array: checks that the array's
  ! shape is the leaf's local shape, then copies into the contiguous elements at `first`.
  subroutine read_array_at(tree, path, dtype, elem_bytes, local_shape, first, ierr)
    type(cairn_tree), intent(in) :: tree
    character(len=*), intent(in) :: path
    integer, intent(in) :: dtype, elem_bytes
    integer(c_int64_t), intent(in) :: local_shape(:)
    type(c_ptr), intent(in) :: first
    integer, intent(out), optional :: ierr
    integer, allocatable :: saved_shape(:)
    integer :: status
    call cairn_tree_array_info(tree, path, local_shape=saved_shape, ierr=status)
    if (status /= CAIRN_OK) then
      call check(int(status, c_int), ierr)
      return
    end if
    if (size(saved_shape) /= size(local_shape)) then
      call fail(CAIRN_ERR_INVALID_ARGUMENT, 'cairn_tree_read_array: leaf '''//trim(path)// &
                ''' has a different number of dimensions than the array', ierr)
      return
    end if
    if (any(saved_shape /= local_shape)) then
      call fail(CAIRN_ERR_INVALID_ARGUMENT, 'cairn_tree_read_array: leaf '''//trim(path)// &
                ''' has another shape than the array', ierr)
      return
    end if
    call check(c_tree_read_array(tree%ptr, c_string(path), int(dtype, c_int), first, &
                                 int(product(local_shape) * elem_bytes, c_size_t)), ierr)
  end subroutine read_array_at

  ! Reports a status already recorded (by check or fail, called with a status argument): into
  ! ierr when present, else stops with cairn_last_error() when it is an error.
  subroutine pass_on(status, ierr)
    integer, intent(in) :: status
    integer, intent(out), optional :: ierr
    if (present(ierr)) then
      ierr = status
    else if (status /= CAIRN_OK) then
      write (error_unit, '(a)') 'cairn: '//cairn_last_error()
      error stop 1
    end if
  end subroutine pass_on

  ! Whether `count` elements of `elem_bytes` from `first` to `last` are contiguous.
  logical function contiguous_span(first, last, count, elem_bytes)
    type(c_ptr), intent(in) :: first, last
    integer(c_int64_t), intent(in) :: count
    integer, intent(in) :: elem_bytes
    integer(c_intptr_t) :: a, b
    if (count <= 1) then
      contiguous_span = .true.
      return
    end if
    a = transfer(first, a)
    b = transfer(last, b)
    contiguous_span = b - a == (count - 1) * int(elem_bytes, c_int64_t)
  end function contiguous_span

  ! ---------------------------------------------------------------- composite items

  !> A new empty item set.
  subroutine cairn_items_create(items, ierr)
    type(cairn_items), intent(out) :: items
    integer, intent(out), optional :: ierr
    call check(c_items_create(items%ptr), ierr)
  end subroutine cairn_items_create

  !> Releases the set (not the trees it refers to).
  subroutine cairn_items_free(items)
    type(cairn_items), intent(inout) :: items
    call c_items_free(items%ptr)
    items%ptr = c_null_ptr
  end subroutine cairn_items_free

  !> Adds an array-tree item that refers to `tree` (saved, or restored in place). Without
  !> `tree`, a restore reads the item as saved (cairn_items_get_tree).
  subroutine cairn_items_add_tree(items, name, tree, ierr)
    type(cairn_items), intent(inout) :: items
    character(len=*), intent(in) :: name
    type(cairn_tree), intent(in), optional :: tree
    integer, intent(out), optional :: ierr
    type(c_ptr) :: p
    p = c_null_ptr
    if (present(tree)) p = tree%ptr
    call check(c_items_add_tree(items%ptr, c_string(name), p), ierr)
  end subroutine cairn_items_add_tree

  !> Adds a JSON item from its text; without `json`, a restore reads it (cairn_items_get_json).
  subroutine cairn_items_add_json(items, name, json, ierr)
    type(cairn_items), intent(inout) :: items
    character(len=*), intent(in) :: name
    character(len=*), intent(in), optional :: json
    integer, intent(out), optional :: ierr
    character(kind=c_char, len=:), allocatable, target :: text
    type(c_ptr) :: p
    p = c_null_ptr
    if (present(json)) then
      text = json//c_null_char
      p = c_loc(text)
    end if
    call check(c_items_add_json(items%ptr, c_string(name), p), ierr)
  end subroutine cairn_items_add_json

  !> The JSON item `name` as text.
  subroutine cairn_items_get_json(items, name, json, ierr)
    type(cairn_items), intent(in) :: items
    character(len=*), intent(in) :: name
    character(len=:), allocatable, intent(out) :: json
    integer, intent(out), optional :: ierr
    type(c_ptr) :: p
    integer(c_int) :: status
    p = c_null_ptr
    status = c_items_get_json(items%ptr, c_string(name), p)
    json = take_string(p)
    call check(status, ierr)
  end subroutine cairn_items_get_json

  !> The tree of item `name` (a new handle: free it with cairn_tree_free).
  subroutine cairn_items_get_tree(items, name, tree, ierr)
    type(cairn_items), intent(in) :: items
    character(len=*), intent(in) :: name
    type(cairn_tree), intent(out) :: tree
    integer, intent(out), optional :: ierr
    call check(c_items_get_tree(items%ptr, c_string(name), tree%ptr), ierr)
  end subroutine cairn_items_get_tree

#include "cairn_arrays_procedures.inc"

end module cairn
