! Helpers of cairn's Fortran tests: a check that aborts the whole MPI job with a message (so
! that a failure on one rank fails the test at once), a scratch directory per rank count, the
! start and end of a program that runs the scenario named on its command line, a field of one
! value per rank, a should_save_fn callback, and the storage format named on the command line.
module fortran_test
  use, intrinsic :: iso_fortran_env, only: error_unit
  use, intrinsic :: iso_c_binding, only: c_double, c_int, c_int64_t, c_ptr
  use mpi
  use cairn, only: cairn_last_error, CAIRN_FORMAT_HDF5, CAIRN_FORMAT_POSIX, cairn_comm, &
                   cairn_comm_create, cairn_comm_rank, cairn_comm_size, cairn_comm_free, &
                   cairn_tree, cairn_tree_create, cairn_tree_add_array
  implicit none
  private
  public :: expect, expect_status, scratch_dir, remove_scratch_dir, every_third_step, &
            format_argument, begin_scenario, end_scenario, make_field

contains

  !> Fails the test (MPI_Abort) with `what` when `condition` is false.
  subroutine expect(condition, what)
    logical, intent(in) :: condition
    character(len=*), intent(in) :: what
    integer :: rank, ierr
    if (condition) return
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    write (error_unit, '(a,i0,a,a)') 'rank ', rank, ': FAILED: ', what
    write (error_unit, '(a,a)') '  cairn_last_error: ', cairn_last_error()
    flush (error_unit)
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end subroutine expect

  !> Fails the test unless `ierr` is `status` and cairn_last_error() contains `text`.
  subroutine expect_status(ierr, status, text, what)
    integer, intent(in) :: ierr, status
    character(len=*), intent(in) :: text, what
    character(len=16) :: got
    write (got, '(i0)') ierr
    call expect(ierr == status, what//': unexpected status '//trim(got))
    call expect(index(cairn_last_error(), text) > 0, what//': the message does not contain "'// &
                text//'"')
  end subroutine expect_status

  !> A fresh directory for this test and rank count ("<name>-np<N>"), made by rank 0.
  !> Collective over MPI_COMM_WORLD.
  function scratch_dir(name) result(dir)
    character(len=*), intent(in) :: name
    character(len=:), allocatable :: dir
    integer :: rank, size, ierr
    character(len=16) :: n
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
    write (n, '(i0)') size
    dir = name//'-np'//trim(n)
    if (rank == 0) then
      call execute_command_line('rm -rf '//dir//' && mkdir -p '//dir, exitstat=ierr)
      call expect(ierr == 0, 'creating '//dir)
    end if
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
  end function scratch_dir

  !> Starts a scenario program: MPI, a cairn communicator over MPI_COMM_WORLD with this rank
  !> and the size, the scenario named by the first argument and its scratch directory
  !> ("<prefix><scenario>-np<N>"). Collective over MPI_COMM_WORLD.
  subroutine begin_scenario(prefix, comm, rank, size, scenario, dir)
    character(len=*), intent(in) :: prefix
    type(cairn_comm), intent(out) :: comm
    integer, intent(out) :: rank, size
    character(len=*), intent(out) :: scenario
    character(len=:), allocatable, intent(out) :: dir
    integer :: ierr
    call MPI_Init(ierr)
    call cairn_comm_create(comm, MPI_COMM_WORLD)
    call cairn_comm_rank(comm, rank)
    call cairn_comm_size(comm, size)
    call get_command_argument(1, scenario)
    dir = scratch_dir(prefix//trim(scenario))
  end subroutine begin_scenario

  !> Ends a scenario program begun by begin_scenario: frees `comm`, removes `dir`, says on rank
  !> 0 that program `name` passed `scenario` on `size` ranks and finalizes MPI. Collective.
  subroutine end_scenario(name, comm, rank, size, scenario, dir)
    character(len=*), intent(in) :: name, scenario, dir
    type(cairn_comm), intent(inout) :: comm
    integer, intent(in) :: rank, size
    integer :: ierr
    call cairn_comm_free(comm)
    call remove_scratch_dir(dir)
    if (rank == 0) print '(a,a,a,a,i0,a)', name, ' ', trim(scenario), ': passed on ', size, &
      ' ranks'
    call MPI_Finalize(ierr)
  end subroutine end_scenario

  !> A tree of one leaf "x": a field of one value per rank of MPI_COMM_WORLD, rank r owning
  !> element r, set to `value`. Not collective.
  subroutine make_field(tree, x, value)
    type(cairn_tree), intent(out) :: tree
    real(c_double), target, intent(inout) :: x(1)
    real(c_double), intent(in) :: value
    integer :: rank, size, ierr
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
    x = value
    call cairn_tree_create(tree)
    call cairn_tree_add_array(tree, 'x', x, global_shape=[size], offset=[rank])
  end subroutine make_field

  !> Removes a scratch directory (rank 0, after a barrier). Collective.
  subroutine remove_scratch_dir(dir)
    character(len=*), intent(in) :: dir
    integer :: rank, ierr
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    if (rank == 0) call execute_command_line('rm -rf '//dir)
  end subroutine remove_scratch_dir

  !> A should_save_fn for cairn_manager_create: saves every third step.
  integer(c_int) function every_third_step(step, user_data) bind(C)
    integer(c_int64_t), value :: step
    type(c_ptr), value :: user_data
    every_third_step = merge(1_c_int, 0_c_int, mod(step, 3_c_int64_t) == 0)
  end function every_third_step

  !> The storage format named by command-line argument `n` ("hdf5" or "posix"; the tests'
  !> CMakeLists.txt pass hdf5 where cairn was built with it). Fails the test on anything else.
  integer function format_argument(n)
    integer, intent(in) :: n
    character(len=16) :: name
    call get_command_argument(n, name)
    call expect(name == 'hdf5' .or. name == 'posix', &
                'argument '//achar(48 + n)//' must be hdf5 or posix, not "'//trim(name)//'"')
    format_argument = merge(CAIRN_FORMAT_HDF5, CAIRN_FORMAT_POSIX, name == 'hdf5')
  end function format_argument

end module fortran_test
