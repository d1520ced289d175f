! Callbacks of test_fortran_user_items: a user item whose save callback writes a file per rank
! with the rank and the step, and whose restore callback reads it back into the caller's state.
module user_item_callbacks
  use, intrinsic :: iso_c_binding
  use cairn
  implicit none

  ! What the callbacks of one rank share with the test (their user data).
  type, bind(C) :: solver_state
    integer(c_int64_t) :: step = -1  ! written by a save, set by a restore
    integer(c_int) :: rank = -1  ! set by a restore: the rank the file names
    integer(c_int) :: fail_rank = -1  ! the rank whose callback returns 7; -1: none
    integer(c_int) :: calls = 0  ! callbacks made on this rank
  end type solver_state

contains

  function file_of(directory, rank) result(path)
    type(c_ptr), intent(in) :: directory
    integer(c_int), intent(in) :: rank
    character(len=:), allocatable :: path
    character(len=16) :: name
    write (name, '(a,i0,a)') 'rank', rank, '.txt'
    path = cairn_string_from_c(directory)//'/'//trim(name)
  end function file_of

  integer(c_int) function save_solver(directory, rank, user_data) bind(C)
    type(c_ptr), value :: directory
    integer(c_int), value :: rank
    type(c_ptr), value :: user_data
    type(solver_state), pointer :: s
    integer :: unit, stat
    call c_f_pointer(user_data, s)
    s%calls = s%calls + 1
    save_solver = 7
    if (rank == s%fail_rank) return
    save_solver = 1
    open (newunit=unit, file=file_of(directory, rank), status='replace', action='write', &
          iostat=stat)
    if (stat /= 0) return
    write (unit, '(i0,1x,i0)', iostat=stat) rank, s%step
    flush (unit)
    close (unit)
    if (stat == 0) save_solver = 0
  end function save_solver

  integer(c_int) function restore_solver(directory, rank, user_data) bind(C)
    type(c_ptr), value :: directory
    integer(c_int), value :: rank
    type(c_ptr), value :: user_data
    type(solver_state), pointer :: s
    integer :: unit, stat
    call c_f_pointer(user_data, s)
    s%calls = s%calls + 1
    restore_solver = 7
    if (rank == s%fail_rank) return
    restore_solver = 1
    open (newunit=unit, file=file_of(directory, rank), status='old', action='read', iostat=stat)
    if (stat /= 0) return
    read (unit, *, iostat=stat) s%rank, s%step
    close (unit)
    if (stat == 0) restore_solver = 0
  end function restore_solver
end module user_item_callbacks

! User items from Fortran (cairn_items_add_user): a round trip through a manager and a fresh
! one, a save callback failing on one rank, a restore callback failing on one rank. One ctest
! case per scenario. Exits non-zero on any failure.
program test_fortran_user_items
  use, intrinsic :: iso_c_binding
  use mpi
  use cairn
  use fortran_test
  use user_item_callbacks
  implicit none

  integer :: rank, size
  type(cairn_comm) :: comm
  character(len=:), allocatable :: dir
  character(len=64) :: scenario

  call begin_scenario('cairn-fortran-user-items-', comm, rank, size, scenario, dir)

  select case (trim(scenario))
  case ('round_trip')
    call round_trip()
  case ('failing_save')
    call failing_save()
  case ('failing_restore')
    call failing_restore()
  case default
    call expect(.false., 'unknown scenario "'//trim(scenario)//'"')
  end select

  call end_scenario('test_fortran_user_items', comm, rank, size, scenario, dir)

contains

  ! Restores `step` of the user item "solver" alone into a fresh state.
  subroutine restore_step(m, step, back)
    type(cairn_manager), intent(inout) :: m
    integer(c_int64_t), intent(in) :: step
    type(solver_state), target, intent(out) :: back
    type(cairn_items) :: items
    call cairn_items_create(items)
    call cairn_items_add_user(items, 'solver', 'app.solver', restore=restore_solver, &
                              user_data=c_loc(back))
    call cairn_manager_restore_items(m, items, step=step)
    call cairn_items_free(items)
    call expect(back%calls == 1, 'the restore callback ran once')
  end subroutine restore_step

  ! Two steps saved in the background; each rank reads its own file back, also in a fresh
  ! manager; the item's metadata counts one file per rank.
  subroutine round_trip()
    type(cairn_manager) :: m
    type(cairn_items) :: items
    type(solver_state), target :: s
    type(solver_state) :: back
    character(len=:), allocatable :: json
    character(len=32) :: files
    integer(c_int64_t) :: step
    integer :: status
    call cairn_manager_create(m, comm, dir//'/run', enable_async=.true.)
    call cairn_items_create(items)
    call cairn_items_add_user(items, 'solver', 'app.solver', save_solver, restore_solver, &
                              c_loc(s))
    call cairn_items_add_json(items, 'config', '{"dt": 1}')
    do step = 1, 2
      s%step = 100 + step
      call cairn_manager_save_items(m, step, items)
      call expect(s%calls == step, 'the save callback ran before the save returned')
    end do
    call cairn_manager_wait_until_finished(m)
    call cairn_items_free(items)
    call restore_step(m, 1_c_int64_t, back)
    call expect(back%rank == rank .and. back%step == 101, 'step 1 restored by the callback')
    call cairn_manager_item_metadata(m, 2_c_int64_t, json)
    write (files, '(a,i0)') '"files":', size
    call expect(index(json, 'app.solver') > 0 .and. index(json, trim(files)) > 0, &
                'the item metadata counts the files: '//json)
    call cairn_manager_free(m)

    call cairn_manager_create(m, comm, dir//'/run')
    call restore_step(m, 2_c_int64_t, back)
    call expect(back%rank == rank .and. back%step == 102, 'step 2 restored in a fresh manager')
    call cairn_items_create(items)
    call cairn_items_add_user(items, 'solver', 'cairn.bytes', save_solver, ierr=status)
    call expect_status(status, CAIRN_ERR_INVALID_ARGUMENT, 'cairn.bytes', 'a reserved type')
    call cairn_items_add_user(items, 'solver', 'app.solver', ierr=status)
    call expect_status(status, CAIRN_ERR_INVALID_ARGUMENT, 'neither', 'no callbacks')
    call cairn_items_free(items)
    call cairn_manager_free(m)
  end subroutine round_trip

  ! A save callback failing on the last rank fails the save on every rank, naming the item and
  ! the rank; nothing is committed; the next save succeeds.
  subroutine failing_save()
    type(cairn_manager) :: m
    type(cairn_items) :: items
    type(solver_state), target :: s
    type(solver_state) :: back
    character(len=64) :: want
    integer(c_int64_t) :: latest
    logical :: found
    integer :: status
    s%fail_rank = size - 1
    s%step = 5
    write (want, '(a,i0)') 'returned 7 on rank ', size - 1
    call cairn_manager_create(m, comm, dir//'/run', enable_async=.false.)
    call cairn_items_create(items)
    call cairn_items_add_user(items, 'solver', 'app.solver', save_solver, restore_solver, &
                              c_loc(s))
    call cairn_manager_save_items(m, 5_c_int64_t, items, ierr=status)
    call expect_status(status, CAIRN_ERR_IO, trim(want), 'a failing save callback')
    call expect_status(status, CAIRN_ERR_IO, "item 'solver'", 'a failing save callback')
    call cairn_manager_latest_step(m, latest, found)
    call expect(.not. found, 'nothing committed after the failed save')
    s%fail_rank = -1
    s%step = 6
    call cairn_manager_save_items(m, 6_c_int64_t, items)
    call cairn_manager_wait_until_finished(m)
    call cairn_items_free(items)
    call restore_step(m, 6_c_int64_t, back)
    call expect(back%step == 6, 'the next save restored')
    call cairn_manager_latest_step(m, latest, found)
    call expect(found .and. latest == 6, 'step 6 is the latest')
    call cairn_manager_free(m)
  end subroutine failing_save

  ! A restore callback failing on rank 0 fails the restore on every rank, naming the item.
  subroutine failing_restore()
    type(cairn_manager) :: m
    type(cairn_items) :: items
    type(solver_state), target :: s
    integer :: status
    s%step = 9
    call cairn_manager_create(m, comm, dir//'/run')
    call cairn_items_create(items)
    call cairn_items_add_user(items, 'solver', 'app.solver', save_solver, restore_solver, &
                              c_loc(s))
    call cairn_manager_save_items(m, 9_c_int64_t, items)
    call cairn_manager_wait_until_finished(m)
    s%fail_rank = 0
    s%calls = 0
    call cairn_manager_restore_items(m, items, step=9_c_int64_t, ierr=status)
    call expect_status(status, CAIRN_ERR_IO, &
                       "item 'solver' (user type 'app.solver'): the restore callback returned "// &
                       "7 on rank 0", 'a failing restore callback')
    call expect(s%calls == 1, 'the restore callback ran once')
    call cairn_items_free(items)
    call cairn_manager_free(m)
  end subroutine failing_restore
end program test_fortran_user_items
