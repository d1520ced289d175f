! The manager options that follow Orbax and CLU, from Fortran: max_to_keep absent, 0 and
! CAIRN_KEEP_ALL; step name formats; a save of an existing step (not saved) and a forced one
! (an error); a read-only manager; the best step without a metric; save_root_metadata; a
! multihost base with a trailing '/'. Exits non-zero on any failure.
program test_fortran_manager_options
  use, intrinsic :: iso_c_binding
  use mpi
  use cairn
  use fortran_test
  implicit none

  integer :: rank, size, ierr
  type(cairn_comm) :: comm
  character(len=:), allocatable :: dir

  call MPI_Init(ierr)
  call cairn_comm_create(comm, MPI_COMM_WORLD)
  call cairn_comm_rank(comm, rank)
  call cairn_comm_size(comm, size)
  dir = scratch_dir('cairn-fortran-manager-options')

  call max_to_keep()
  call step_names()
  call existing_steps_read_only_and_best()
  call multihost_trailing_slash()

  call cairn_comm_free(comm)
  call remove_scratch_dir(dir)
  if (rank == 0) print '(a,i0,a)', 'test_fortran_manager_options: passed on ', size, ' ranks'
  call MPI_Finalize(ierr)

contains

  ! Saves steps 0..3 under `root` and returns how many are kept.
  integer function kept_of(manager) result(kept)
    type(cairn_manager), intent(inout) :: manager
    type(cairn_tree) :: tree
    real(c_double), target :: x(1)
    integer(c_int64_t) :: step
    integer(c_int64_t), allocatable :: steps(:)
    logical :: saved
    do step = 0, 3
      call make_field(tree, x, real(step, c_double))
      call cairn_manager_save(manager, step, tree, saved)
      call expect(saved, 'save started')
      call cairn_manager_wait_until_finished(manager)
      call cairn_tree_free(tree)
    end do
    call cairn_manager_all_steps(manager, steps, reload=.true.)
    call expect(steps(ubound(steps, 1)) == 3, 'the newest step is kept')
    kept = ubound(steps, 1)
    call cairn_manager_free(manager)
  end function kept_of

  subroutine max_to_keep()
    type(cairn_manager) :: manager
    call cairn_manager_create(manager, comm, dir//'/absent')
    call expect(kept_of(manager) == 4, 'no max_to_keep keeps every step')
    call cairn_manager_create(manager, comm, dir//'/all', max_to_keep=CAIRN_KEEP_ALL)
    call expect(kept_of(manager) == 4, 'CAIRN_KEEP_ALL keeps every step')
    call cairn_manager_create(manager, comm, dir//'/zero', max_to_keep=0)
    call expect(kept_of(manager) == 1, 'max_to_keep=0 keeps only the newest')
  end subroutine max_to_keep

  subroutine step_names()
    type(cairn_manager) :: manager
    character(len=:), allocatable :: path
    integer :: n
    call cairn_manager_create(manager, comm, dir//'/standard', step_prefix='checkpoint', &
                              step_format_fixed_length=4)
    call cairn_manager_step_path(manager, 7_c_int64_t, path)
    n = len(path)
    call expect(path(n - 14:) == 'checkpoint_0007', 'standard step name: '//path)
    call cairn_manager_free(manager)
    call cairn_manager_create(manager, comm, dir//'/joined', step_prefix='ckpt-', &
                              step_name_format=CAIRN_STEP_NAME_JOINED)
    call cairn_manager_step_path(manager, 7_c_int64_t, path)
    n = len(path)
    call expect(path(n - 5:) == 'ckpt-7', 'joined step name: '//path)
    call cairn_manager_free(manager)
  end subroutine step_names

  subroutine existing_steps_read_only_and_best()
    type(cairn_manager) :: manager
    type(cairn_tree) :: tree
    real(c_double), target :: x(1)
    logical :: saved, found, flag, there
    integer(c_int64_t) :: step
    integer :: status
    call cairn_manager_create(manager, comm, dir//'/exists', save_root_metadata=.false.)
    call make_field(tree, x, 1.0_c_double)
    call cairn_manager_save(manager, 1_c_int64_t, tree, saved)
    call expect(saved, 'step 1 saved')
    call cairn_manager_wait_until_finished(manager)
    call cairn_manager_save(manager, 1_c_int64_t, tree, saved)
    call expect(.not. saved, 'an existing step is not saved again')
    call cairn_manager_save(manager, 1_c_int64_t, tree, saved, force=.true., ierr=status)
    call expect_status(status, CAIRN_ERR_INVALID_ARGUMENT, 'already exists', 'forced save')
    call cairn_manager_best_step(manager, step, found)
    call expect(found .and. step == 1, 'without best_metric the best step is the newest')
    call cairn_manager_free(manager)
    inquire (file=dir//'/exists/cairn-root.json', exist=there)
    call expect(.not. there, 'save_root_metadata=.false. writes no cairn-root.json')

    call cairn_manager_create(manager, comm, dir//'/exists', read_only=.true., &
                              lightweight_initialize=.true.)
    call cairn_manager_should_save(manager, 2_c_int64_t, flag)
    call expect(.not. flag, 'a read-only manager should not save')
    call cairn_manager_save(manager, 2_c_int64_t, tree, saved)
    call expect(.not. saved, 'a read-only manager does not save')
    call cairn_manager_free(manager)
    call cairn_tree_free(tree)
  end subroutine existing_steps_read_only_and_best

  subroutine multihost_trailing_slash()
    type(cairn_multihost) :: mh
    type(cairn_tree) :: tree
    real(c_double), target :: x(1)
    character(len=32) :: suffix
    logical :: there
    call cairn_multihost_create(mh, comm, dir//'/mh/')
    call make_field(tree, x, 3.0_c_double)
    call cairn_multihost_save(mh, 3_c_int64_t, tree)
    call cairn_multihost_free(mh)
    call cairn_tree_free(tree)
    write (suffix, '(a,i0,a)') '/mh-', rank, '/ckpt-3/COMMITTED'
    inquire (file=dir//trim(suffix), exist=there)
    call expect(there, 'multihost step in <base>-<rank>/ckpt-3: '//dir//trim(suffix))
  end subroutine multihost_trailing_slash

end program test_fortran_manager_options
