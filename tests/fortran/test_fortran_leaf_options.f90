! Per-leaf save arguments, compression and restore renames from Fortran, one scenario per
! ctest case (argument 1): a real(8) leaf stored as float32 with its own checksum chunk size,
! restored into real(8) in another decomposition (argument 2: the format); a checkpoint of an
! older layout restored through a rename rule; a leaf derived from two saved ones; invalid
! arguments and compressions refused naming the leaf. Exits non-zero on any failure.
program test_fortran_leaf_options
  use, intrinsic :: iso_c_binding
  use mpi
  use cairn
  use fortran_test
  implicit none

  integer, parameter :: block = 10
  integer :: rank, size, ierr
  type(cairn_comm) :: comm
  type(cairn_checkpointer) :: ckpt
  character(len=:), allocatable :: dir
  character(len=64) :: scenario, variant

  call MPI_Init(ierr)
  call cairn_comm_create(comm, MPI_COMM_WORLD)
  call cairn_comm_rank(comm, rank)
  call cairn_comm_size(comm, size)
  call get_command_argument(1, scenario)
  call get_command_argument(2, variant)
  ! One directory per scenario and format: ctest runs the cases of a scenario at once.
  if (len_trim(variant) > 0) then
    dir = scratch_dir('cairn-fortran-leaf-options-'//trim(scenario)//'-'//trim(variant))
  else
    dir = scratch_dir('cairn-fortran-leaf-options-'//trim(scenario))
  end if
  call cairn_checkpointer_create(ckpt, comm)

  select case (trim(scenario))
  case ('cast')
    call cast_scenario(format_argument(2))
  case ('rename')
    call rename_scenario()
  case ('invalid')
    call invalid_scenario()
  case ('derived')
    call derived_scenario()
  case ('sparse')
    call sparse_scenario()
  case default
    call expect(.false., 'unknown scenario "'//trim(scenario)//'"')
  end select

  call cairn_checkpointer_free(ckpt)
  call cairn_comm_free(comm)
  call remove_scratch_dir(dir)
  if (rank == 0) print '(a,a,a,i0,a)', 'test_fortran_leaf_options ', trim(scenario), &
    ': passed on ', size, ' ranks'
  call MPI_Finalize(ierr)

contains

  ! Element i (from 0) of the test field: not a float32, so that a cast shows.
  elemental real(c_double) function value_at(i)
    integer, intent(in) :: i
    value_at = real(i, c_double) + 0.1_c_double
  end function value_at

  ! A tree with the leaf `path` holding block `b` of the field in `u` (the field's values when
  ! `fill`, -1 otherwise) and the int32 leaf "counts" holding `count` at position b.
  subroutine make_tree(tree, path, u, count, b, fill)
    type(cairn_tree), intent(out) :: tree
    character(len=*), intent(in) :: path
    real(c_double), target, intent(inout) :: u(block)
    integer(c_int32_t), target, intent(inout) :: count(1)
    integer, intent(in) :: b
    logical, intent(in) :: fill
    integer :: i
    do i = 1, block
      u(i) = merge(value_at(b * block + i - 1), -1.0_c_double, fill)
    end do
    call cairn_tree_create(tree)
    call cairn_tree_add_array(tree, path, u, global_shape=[block * size], offset=[b * block])
    call cairn_tree_add_array(tree, 'counts', count, global_shape=[size], offset=[b])
  end subroutine make_tree

  ! "u" saved as float32 with 36-byte checksum chunks, restored with allow_cast into another
  ! rank's block: every value is the float32 rounding of the saved one.
  subroutine cast_scenario(format)
    integer, intent(in) :: format
    type(cairn_tree) :: tree
    real(c_double), target :: u(block)
    integer(c_int32_t), target :: count(1)
    character(len=:), allocatable :: path, json
    integer :: b, i
    path = dir//'/cast'
    count = rank
    call make_tree(tree, 'u', u, count, rank, .true.)
    call cairn_checkpointer_save(ckpt, path, tree, format=format, &
                                 save_args=[cairn_leaf_save('u', dtype=CAIRN_FLOAT32, &
                                                            chunk_bytes=36_c_size_t)])
    call cairn_tree_free(tree)
    call cairn_checkpointer_metadata(ckpt, path, json)
    call expect(index(json, '"float32"') > 0, 'the metadata records float32')
    b = size - 1 - rank
    count = -1
    call make_tree(tree, 'u', u, count, b, .false.)
    call cairn_checkpointer_restore(ckpt, path, tree, ierr=ierr)
    call expect_status(ierr, CAIRN_ERR_INVALID_ARGUMENT, 'float32', 'restore without allow_cast')
    call cairn_checkpointer_restore(ckpt, path, tree, allow_cast=.true.)
    do i = 1, block
      call expect(u(i) == real(real(value_at(b * block + i - 1), c_float), c_double), &
                  'the float32 value restored')
      call expect(u(i) /= value_at(b * block + i - 1), 'the value was cast')
    end do
    call expect(count(1) == b, 'counts restored')
    call cairn_tree_free(tree)
  end subroutine cast_scenario

  ! A checkpoint with "old/u" restored into "blocks/u" through a rename with a group.
  subroutine rename_scenario()
    type(cairn_tree) :: tree
    real(c_double), target :: u(block)
    integer(c_int32_t), target :: count(1)
    character(len=:), allocatable :: path
    integer :: b, i
    path = dir//'/renamed'
    count = rank
    call make_tree(tree, 'old/u', u, count, rank, .true.)
    call cairn_checkpointer_save(ckpt, path, tree)
    call cairn_tree_free(tree)
    b = size - 1 - rank
    call make_tree(tree, 'blocks/u', u, count, b, .false.)
    call cairn_checkpointer_restore(ckpt, path, tree, ierr=ierr)
    call expect_status(ierr, CAIRN_ERR_NOT_FOUND, 'blocks/u', 'restore without a rename')
    call cairn_checkpointer_restore(ckpt, path, tree, &
                                    renames=[cairn_rename('blocks/(.*)', 'old/$1')])
    do i = 1, block
      call expect(u(i) == value_at(b * block + i - 1), 'the renamed leaf restored')
    end do
    call expect(count(1) == b, 'counts restored from its own path')
    call cairn_checkpointer_restore(ckpt, path, tree, default_to_original=.false., &
                                    renames=[cairn_rename('blocks/(.*)', 'old/$1')], ierr=ierr)
    call expect_status(ierr, CAIRN_ERR_NOT_FOUND, 'counts', 'no default to the original')
    call cairn_checkpointer_restore(ckpt, path, tree, &
                                    renames=[cairn_rename('blocks/(', 'old/$1')], ierr=ierr)
    call expect_status(ierr, CAIRN_ERR_INVALID_ARGUMENT, 'blocks/(', 'an invalid pattern')
    call cairn_tree_free(tree)
  end subroutine rename_scenario

  ! Invalid save arguments and compressions fail naming the leaf; nothing is saved.
  subroutine invalid_scenario()
    type(cairn_tree) :: tree
    real(c_double), target :: u(block)
    integer(c_int32_t), target :: count(1)
    character(len=:), allocatable :: path
    integer :: expected
    path = dir//'/invalid'
    count = rank
    call make_tree(tree, 'u', u, count, rank, .true.)
    call cairn_checkpointer_save(ckpt, path, tree, save_args=[cairn_leaf_save('missing')], &
                                 ierr=ierr)
    call expect_status(ierr, CAIRN_ERR_INVALID_ARGUMENT, 'missing', 'an unknown leaf')
    call cairn_checkpointer_save(ckpt, path, tree, &
                                 save_args=[cairn_leaf_save('u', chunk_shape=[2_c_int64_t, &
                                                                              2_c_int64_t])], &
                                 ierr=ierr)
    call expect_status(ierr, CAIRN_ERR_INVALID_ARGUMENT, "leaf 'u'", 'a chunk shape of rank 2')
    ! zfp on an integer leaf; a zstd level of 25 (CAIRN_ERR_UNSUPPORTED without the library)
    call cairn_checkpointer_save(ckpt, path, tree, ierr=ierr, save_args=[cairn_leaf_save( &
        'counts', compression=cairn_zfp_absolute(1.0e-3_c_double))])
    expected = CAIRN_ERR_INVALID_ARGUMENT
    if (ierr == CAIRN_ERR_UNSUPPORTED) expected = CAIRN_ERR_UNSUPPORTED
    call expect_status(ierr, expected, "leaf 'counts'", 'zfp on an int32 leaf')
    call cairn_checkpointer_save(ckpt, path, tree, compression=cairn_zstd(25), &
                                 ierr=ierr)
    expected = CAIRN_ERR_INVALID_ARGUMENT
    if (ierr == CAIRN_ERR_UNSUPPORTED) expected = CAIRN_ERR_UNSUPPORTED
    call expect_status(ierr, expected, "leaf 'counts'", 'a zstd level of 25')
    call cairn_checkpointer_save(ckpt, path, tree, checksum_chunk_bytes=0_c_size_t, ierr=ierr)
    call expect_status(ierr, CAIRN_ERR_INVALID_ARGUMENT, 'checksum_chunk_bytes', &
                       'a checksum chunk of 0 bytes')
    call cairn_tree_free(tree)
  end subroutine invalid_scenario

  ! The fill function of the derived leaf "sum": vx + 1000 vy, after checking that every view
  ! is the same contiguous box of real(8) values; *user_data (an integer) is returned.
  integer function fill_sum(sources, target, user_data) result(status)
    type(cairn_array_view), intent(in) :: sources(:)
    type(cairn_array_view), intent(in) :: target
    type(c_ptr), intent(in) :: user_data
    real(c_double), pointer :: vx(:), vy(:), out(:)
    integer, pointer :: result
    integer :: i, n
    call expect(ubound(sources, 1) == 2 .and. target%dtype == CAIRN_FLOAT64, 'two float64 sources')
    do i = 1, 2
      call expect(sources(i)%dtype == CAIRN_FLOAT64 .and. ubound(sources(i)%strides, 1) == 0, &
                  'a contiguous float64 source')
      call expect(all(sources(i)%offset == target%offset) .and. &
                  all(sources(i)%local_shape == target%local_shape) .and. &
                  all(sources(i)%global_shape == target%global_shape), 'the target''s box')
    end do
    n = int(product(target%local_shape))
    call c_f_pointer(sources(1)%data, vx, [n])
    call c_f_pointer(sources(2)%data, vy, [n])
    call c_f_pointer(target%data, out, [n])
    out(1:n) = vx(1:n) + 1000 * vy(1:n)
    call c_f_pointer(user_data, result)
    status = result
  end function fill_sum

  ! A target leaf "sum" computed from the saved leaves "vx" and "vy", in another
  ! decomposition; a fill function that fails makes the restore fail naming the leaf.
  subroutine derived_scenario()
    type(cairn_tree) :: tree
    real(c_double), target :: vx(block), vy(block), total(block)
    integer(c_int32_t), target :: count(1)
    integer, target :: result
    character(len=:), allocatable :: path
    integer :: b, i
    path = dir//'/derived'
    count = rank
    call make_tree(tree, 'vx', vx, count, rank, .true.)
    vy = vx
    call cairn_tree_add_array(tree, 'vy', vy, global_shape=[block * size], &
                              offset=[rank * block])
    call cairn_checkpointer_save(ckpt, path, tree)
    call cairn_tree_free(tree)
    b = size - 1 - rank
    call make_tree(tree, 'sum', total, count, b, .false.)
    result = 0
    call cairn_checkpointer_restore(ckpt, path, tree, derived_leaves=[cairn_derive('sum', &
        [character(len=2) :: 'vx', 'vy'], fill_sum, c_loc(result))])
    do i = 1, block
      call expect(total(i) == value_at(b * block + i - 1) + 1000 * value_at(b * block + i - 1), &
                  'the derived leaf')
    end do
    result = 5
    call cairn_checkpointer_restore(ckpt, path, tree, derived_leaves=[cairn_derive('sum', &
        [character(len=2) :: 'vx', 'vy'], fill_sum, c_loc(result))], ierr=ierr)
    call expect_status(ierr, CAIRN_ERR_INVALID_ARGUMENT, "derived leaf 'sum'", 'a failing fill')
    call cairn_tree_free(tree)
  end subroutine derived_scenario

  ! "u" leaves a hole at the end of each rank's block: allowed when sparse_leaves names it,
  ! refused naming it when sparse_leaves names only another leaf.
  subroutine sparse_scenario()
    type(cairn_tree) :: tree
    real(c_double), target :: u(block - 1)
    character(len=:), allocatable :: path
    path = dir//'/sparse'
    u = 1
    call cairn_tree_create(tree)
    call cairn_tree_add_array(tree, 'u', u, global_shape=[block * size], offset=[rank * block])
    call cairn_tree_add_string(tree, 'note', 'holes')
    call cairn_checkpointer_save(ckpt, path, tree, allow_sparse=.true., &
                                 sparse_leaves=['other'], ierr=ierr)
    call expect_status(ierr, CAIRN_ERR_INVALID_ARGUMENT, "'u'", 'holes in a leaf not listed')
    call cairn_checkpointer_save(ckpt, path, tree, allow_sparse=.true., sparse_leaves=['u'], &
                                 io_buffer_bytes=8192_c_size_t)
    call cairn_tree_free(tree)
  end subroutine sparse_scenario

end program test_fortran_leaf_options
