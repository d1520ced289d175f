! cairn_set_error_mode from Fortran:
!   test_fortran_error_mode return   with ierr= a failure is reported in ierr; an unknown mode
!                                    is refused
!   test_fortran_error_mode fatal    in CAIRN_ERRORS_FATAL a failing call on the last rank aborts
!                                    the job although it passes ierr= (tests/capi/error_mode_test.sh
!                                    judges the output)
!   test_fortran_error_mode fatal_module   the same for a failure that the module finds
!                                    itself (an array of another shape than the leaf's)
program test_fortran_error_mode
  use mpi
  use cairn
  use fortran_test, only: expect, expect_status
  implicit none
  type(cairn_tree) :: never_created, tree
  real(8), target :: u(4), wrong(3)
  character(len=16) :: scenario
  integer :: rank, size, ierr

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  call get_command_argument(1, scenario)
  select case (trim(scenario))
  case ('return')
    call cairn_tree_add_string(never_created, 'x', 'y', ierr=ierr)
    call expect_status(ierr, CAIRN_ERR_INVALID_ARGUMENT, 'tree is NULL', 'a NULL tree')
    call cairn_set_error_mode(2, ierr=ierr)
    call expect_status(ierr, CAIRN_ERR_INVALID_ARGUMENT, 'mode 2', 'an unknown mode')
    if (rank == 0) print '(a,i0,a)', 'test_fortran_error_mode return: passed on ', size, ' ranks'
  case ('fatal')
    call cairn_set_error_mode(CAIRN_ERRORS_FATAL)
    if (rank == size - 1) call cairn_tree_add_string(never_created, 'x', 'y', ierr=ierr)
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    print '(a,i0,a)', 'rank ', rank, ': not aborted'
  case ('fatal_module')
    call cairn_tree_create(tree)
    u = 1
    call cairn_tree_add_array(tree, 'u', u)
    call cairn_set_error_mode(CAIRN_ERRORS_FATAL)
    if (rank == size - 1) call cairn_tree_read_array(tree, 'u', wrong, ierr=ierr)
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    print '(a,i0,a)', 'rank ', rank, ': not aborted'
    call cairn_tree_free(tree)
  case default
    call expect(.false., 'unknown scenario '//trim(scenario))
  end select
  call MPI_Finalize(ierr)
end program test_fortran_error_mode
