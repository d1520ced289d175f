! Callbacks of test_fortran_manager_callbacks: a best_fn of the step's metrics and an on_commit
! that records the committed steps of this rank.
module manager_callbacks
  use, intrinsic :: iso_c_binding
  implicit none
  private
  public :: closest_to_target, record_commit, funloc, committed, commit_count, fail_at

  integer(c_int64_t) :: committed(16) = -1
  integer :: commit_count = 0
  integer(c_int64_t) :: fail_at = -1  ! record_commit returns nonzero for this step

  interface
    integer(c_size_t) function strlen(s) bind(C, name='strlen')
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
    end function strlen
  end interface

contains

  ! The address of a callback, by name (see test_fortran_parity.f90 for why not c_funloc at
  ! the call).
  type(c_funptr) function funloc(name) result(fn)
    character(len=*), intent(in) :: name
    select case (name)
    case ('closest_to_target')
      fn = c_funloc(closest_to_target)
    case ('record_commit')
      fn = c_funloc(record_commit)
    case default
      fn = c_null_funptr
    end select
  end function funloc

  ! The Fortran copy of the NUL-terminated C string at `text`.
  function f_text(text) result(s)
    type(c_ptr), intent(in) :: text
    character(len=:), allocatable :: s
    character(kind=c_char), pointer :: chars(:)
    integer :: i, n
    n = int(strlen(text))
    call c_f_pointer(text, chars, [n])
    allocate (character(len=n) :: s)
    do i = 1, n
      s(i:i) = chars(i)
    end do
  end function f_text

  ! Minus the squared distance of the step's "loss" from the target 0.5 (the user data): the
  ! best step is the one closest to the target, neither the largest nor the smallest loss.
  integer(c_int) function closest_to_target(metrics, value, user_data) bind(C)
    type(c_ptr), value :: metrics
    real(c_double), intent(out) :: value
    type(c_ptr), value :: user_data
    real(c_double), pointer :: target
    character(len=:), allocatable :: text
    real(c_double) :: loss
    integer :: at, ends, stat
    closest_to_target = 0
    value = 0
    call c_f_pointer(user_data, target)
    text = f_text(metrics)
    at = index(text, '"loss":')
    if (at == 0) return
    at = at + len('"loss":')
    ends = scan(text(at:), ',}')
    if (ends == 0) return
    read (text(at:at + ends - 2), *, iostat=stat) loss
    if (stat /= 0) return
    value = -(loss - target)**2
    closest_to_target = 1
  end function closest_to_target

  integer(c_int) function record_commit(step, metrics, user_data) bind(C)
    integer(c_int64_t), value :: step
    type(c_ptr), value :: metrics
    type(c_ptr), value :: user_data
    record_commit = 0
    if (index(f_text(metrics), '"loss"') == 0) record_commit = 2
    commit_count = commit_count + 1
    if (commit_count <= size(committed)) committed(commit_count) = step
    if (step == fail_at) record_commit = 7
  end function record_commit
end module manager_callbacks

! The manager's callbacks and file options from Fortran, one scenario per ctest case (argv(1)):
! best_fn ranks steps by a function of their metrics, on_commit records the committed steps on
! every rank, async_device_staging reaches the manager and leaves host arrays as they are, and
! file_mode / file_group
! reach the files of a step. Exits non-zero on failure.
program test_fortran_manager_callbacks
  use, intrinsic :: iso_c_binding
  use mpi
  use cairn
  use fortran_test
  use manager_callbacks
  implicit none

  interface
    integer(c_int) function fortran_test_file_mode(path) bind(C)
      import :: c_char, c_int
      character(kind=c_char), intent(in) :: path(*)
    end function fortran_test_file_mode
    integer(c_int) function test_stderr_capture_begin(path) bind(C)
      import :: c_char, c_int
      character(kind=c_char), intent(in) :: path(*)
    end function test_stderr_capture_begin
    integer(c_int) function test_stderr_capture_end(text) bind(C)
      import :: c_char, c_int
      character(kind=c_char), intent(in) :: text(*)
    end function test_stderr_capture_end
  end interface

  integer :: rank, size
  type(cairn_comm) :: comm
  character(len=:), allocatable :: dir
  character(len=64) :: scenario

  call begin_scenario('cairn-fortran-callbacks-', comm, rank, size, scenario, dir)

  select case (trim(scenario))
  case ('best_fn')
    call best_fn_scenario()
  case ('on_commit')
    call on_commit_scenario()
  case ('device_staging')
    call device_staging_scenario()
  case ('file_options')
    call file_options_scenario()
  case default
    call expect(.false., 'unknown scenario "'//trim(scenario)//'"')
  end select

  call end_scenario('test_fortran_manager_callbacks', comm, rank, size, scenario, dir)

contains

  ! Saves `step` with value `step` and metrics {"loss": <loss>}; returns whether it saved.
  logical function save_step(manager, step, loss) result(saved)
    type(cairn_manager), intent(inout) :: manager
    integer(c_int64_t), intent(in) :: step
    real, intent(in) :: loss
    type(cairn_tree) :: tree
    real(c_double), target :: x(1)
    character(len=64) :: metrics
    write (metrics, '(a,f4.2,a)') '{"loss": ', loss, '}'
    call make_field(tree, x, real(step, c_double))
    call cairn_manager_save(manager, step, tree, saved, metrics=trim(metrics))
    call cairn_tree_free(tree)
  end function save_step

  ! Whether the committed steps of `manager` are `want`.
  logical function steps_are(manager, want)
    type(cairn_manager), intent(inout) :: manager
    integer(c_int64_t), intent(in) :: want(:)
    integer(c_int64_t), allocatable :: steps(:)
    call cairn_manager_all_steps(manager, steps, reload=.true.)
    steps_are = .false.
    if (ubound(steps, 1) /= ubound(want, 1)) return
    steps_are = all(steps == want)
  end function steps_are

  subroutine best_fn_scenario()
    real, parameter :: losses(0:3) = [0.1, 0.45, 0.9, 0.2]
    real(c_double), target :: goal = 0.5_c_double
    type(cairn_manager) :: manager
    integer(c_int64_t) :: step, best
    logical :: found
    integer :: status
    call cairn_manager_create(manager, comm, dir//'/both', best_metric='loss', &
                              best_fn=funloc('closest_to_target'), ierr=status)
    call expect_status(status, CAIRN_ERR_INVALID_ARGUMENT, 'best_metric or best_fn', &
                       'best_metric with best_fn')
    call cairn_manager_create(manager, comm, dir//'/best', enable_async=.false., &
                              max_to_keep=2, best_fn=funloc('closest_to_target'), &
                              best_user_data=c_loc(goal), barrier_timeout=120.0_c_double)
    do step = 0, 3
      call expect(save_step(manager, step, losses(step)), 'saved')
    end do
    call cairn_manager_best_step(manager, best, found)
    call expect(found .and. best == 1, 'best_fn: step 1 (loss 0.45) is closest to 0.5')
    ! The best two by best_fn, 1 and 3 (3 is also the newest); by "loss" alone: 1 and 2.
    call expect(steps_are(manager, [1_c_int64_t, 3_c_int64_t]), 'best_fn keeps steps 1 and 3')
    call cairn_manager_free(manager)
  end subroutine best_fn_scenario

  subroutine on_commit_scenario()
    type(cairn_manager) :: manager
    integer(c_int64_t) :: step
    integer :: status
    fail_at = 3
    ! async saves: each commit is found by a later call, on every rank
    call cairn_manager_create(manager, comm, dir//'/commits', on_commit=funloc('record_commit'), &
                              barrier_timeout=120.0_c_double)
    do step = 0, 2
      call expect(save_step(manager, step, 1.0), 'saved')
    end do
    call cairn_manager_wait_until_finished(manager)
    call expect(commit_count == 3, 'on_commit told 3 steps')
    call expect(all(committed(1:3) == [0_c_int64_t, 1_c_int64_t, 2_c_int64_t]), &
                'on_commit told steps 0, 1, 2 in order')
    ! a nonzero return fails the call that found the commit on every rank; the step stays
    call expect(save_step(manager, 3_c_int64_t, 1.0), 'saved')
    call cairn_manager_wait_until_finished(manager, ierr=status)
    call expect_status(status, CAIRN_ERR_INVALID_ARGUMENT, 'on_commit returned 7 for step 3', &
                       'a failing on_commit')
    call expect(commit_count == 4 .and. committed(4) == 3, 'on_commit told step 3')
    call expect(steps_are(manager, [0_c_int64_t, 1_c_int64_t, 2_c_int64_t, 3_c_int64_t]), &
                'every step is committed')
    call cairn_manager_free(manager)
  end subroutine on_commit_scenario

  ! Host arrays are staged in host memory whatever async_device_staging says (its device path
  ! is tested from C on a GPU: capi.test_capi_device).
  subroutine device_staging_scenario()
    type(cairn_manager) :: manager
    type(cairn_tree) :: tree
    real(c_double), target :: x(1)
    logical :: saved
    ! The manager logs the settings it opened with (rank 0, at the info level this test runs
    ! at): device staging reached it.
    if (rank == 0) then
      call expect(test_stderr_capture_begin(dir//'/stderr-0.txt'//c_null_char) == 0, &
                  'stderr captured')
    end if
    call cairn_manager_create(manager, comm, dir//'/staging', async_device_staging=.true., &
                              barrier_timeout=120.0_c_double)
    if (rank == 0) then
      call expect(test_stderr_capture_end('device_staging=true'//c_null_char) == 1, &
                  'the manager logs device_staging=true')
    end if
    call make_field(tree, x, 4.0_c_double)
    call cairn_manager_save(manager, 1_c_int64_t, tree, saved)
    call expect(saved, 'saved')
    x = -1
    call cairn_manager_wait_until_finished(manager)
    call cairn_manager_restore(manager, tree, step=1_c_int64_t)
    call expect(x(1) == 4.0_c_double, 'the snapshot of save() is restored')
    call cairn_tree_free(tree)
    call cairn_manager_free(manager)
  end subroutine device_staging_scenario

  subroutine file_options_scenario()
    type(cairn_manager) :: manager
    type(cairn_tree) :: tree
    real(c_double), target :: x(1)
    logical :: saved
    integer :: status
    call cairn_manager_create(manager, comm, dir//'/files', enable_async=.false., &
                              file_mode=int(o'640'), barrier_timeout=120.0_c_double)
    call expect(save_step(manager, 1_c_int64_t, 1.0), 'saved')
    call MPI_Barrier(MPI_COMM_WORLD, status)
    call expect(fortran_test_file_mode(dir//'/files/1/cairn-step.json'//c_null_char) == &
                int(o'640'), 'file_mode 0640 on the step metadata')
    call expect(fortran_test_file_mode(dir//'/files/1'//c_null_char) == int(o'750'), &
                'file_mode 0640 gives directories 0750')
    call cairn_manager_free(manager)
    ! the group is looked up when a save writes files
    call cairn_manager_create(manager, comm, dir//'/group', enable_async=.false., &
                              file_group='no-such-group-cairn', barrier_timeout=120.0_c_double)
    call make_field(tree, x, 1.0_c_double)
    call cairn_manager_save(manager, 1_c_int64_t, tree, saved, ierr=status)
    call expect_status(status, CAIRN_ERR_INVALID_ARGUMENT, 'no-such-group-cairn', &
                       'an unknown file_group')
    call cairn_tree_free(tree)
    call cairn_manager_free(manager)
    call cairn_manager_create(manager, comm, dir//'/mode', file_mode=int(o'10000'), ierr=status)
    call expect_status(status, CAIRN_ERR_INVALID_ARGUMENT, 'file_mode', 'a file_mode over 07777')
  end subroutine file_options_scenario
end program test_fortran_manager_callbacks
