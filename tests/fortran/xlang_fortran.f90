! Cross-language checkpoints, Fortran side. `xlang_fortran save DIR FORMAT` writes the
! reference checkpoint of tests/capi/xlang_c.c from Fortran arrays (u(x, y), dims reversed by
! the module) in FORMAT (hdf5 or posix); `xlang_fortran check DIR` restores the one under DIR
! (written by this program or by xlang_c) into another decomposition and checks every value.
! In Fortran terms: u(6, 8) with u(x, y) = 100 (y - 1) + (x - 1) + 1 is the C array
! u[8][6] with u[y][x] = 100 y + x + 1. Exits non-zero on any failure.
program xlang_fortran
  use, intrinsic :: iso_c_binding
  use mpi
  use cairn
  use fortran_test, only: expect, format_argument
  implicit none

  integer, parameter :: nx = 6, ny = 8
  type(cairn_comm) :: comm
  character(len=16) :: mode
  character(len=4096) :: dir
  integer :: rank, size, ierr

  call MPI_Init(ierr)
  call get_command_argument(1, mode)
  call get_command_argument(2, dir)
  if (.not. ((mode == 'save' .and. command_argument_count() == 3) .or. &
             (mode == 'check' .and. command_argument_count() == 2))) then
    write (*, '(a)') 'usage: xlang_fortran save DIR hdf5|posix, or xlang_fortran check DIR'
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end if
  call cairn_comm_create(comm, MPI_COMM_WORLD)
  call cairn_comm_rank(comm, rank)
  call cairn_comm_size(comm, size)
  if (mode == 'save') then
    call save()
  else
    call check()
  end if
  call cairn_comm_free(comm)
  if (rank == 0) print '(a,a,a,a,a,i0,a)', 'xlang_fortran ', trim(mode), ' ', trim(dir), &
    ': passed on ', size, ' ranks'
  call MPI_Finalize(ierr)

contains

  real(c_double) function value(x, y)
    integer, intent(in) :: x, y
    value = 100.0_c_double * (y - 1) + (x - 1) + 1
  end function value

  subroutine save()
    type(cairn_manager) :: manager
    type(cairn_tree) :: tree
    real(c_double), allocatable, target :: u(:, :)
    integer(c_int32_t), target :: n(3)
    complex(c_double_complex), target :: z(2)
    integer :: y0, nyl, x, y, status
    y0 = ny * rank / size
    nyl = ny * (rank + 1) / size - y0
    allocate (u(nx, nyl))
    do y = 1, nyl
      do x = 1, nx
        u(x, y) = value(x, y0 + y)
      end do
    end do
    n = [7, 1, -1]
    z = [(1.0_c_double, -1.0_c_double), (2.0_c_double, 0.5_c_double)]
    call cairn_tree_create(tree)
    call cairn_tree_add_array(tree, 'fields/u', u, global_shape=[nx, ny], offset=[0, y0])
    call cairn_tree_add_array(tree, 'n', n, replicated=.true.)
    call cairn_tree_add_array(tree, 'z', z, replicated=.true.)
    call cairn_tree_add_scalar(tree, 'time', 0.5_c_double)
    call cairn_tree_add_string(tree, 'name', 'heat')
    call cairn_manager_create(manager, comm, trim(dir), enable_async=.false.)
    ! The checkpoint of an earlier run is replaced (a save never replaces a step); a missing
    ! one is fine.
    call cairn_manager_delete_step(manager, 1_c_int64_t, ierr=status)
    call cairn_manager_save(manager, 1_c_int64_t, tree, format=format_argument(3))
    call cairn_manager_free(manager)
    call cairn_tree_free(tree)
  end subroutine save

  subroutine check()
    type(cairn_manager) :: manager
    type(cairn_tree) :: tree
    real(c_double), allocatable, target :: u(:, :)
    integer(c_int32_t), target :: n(3)
    complex(c_double_complex), target :: z(2)
    real(c_double) :: time
    character(len=:), allocatable :: name
    integer :: x0, nxl, x, y
    x0 = nx * rank / size
    nxl = nx * (rank + 1) / size - x0
    allocate (u(nxl, ny))
    u = -1
    n = 0
    z = 0
    call cairn_tree_create(tree)
    call cairn_tree_add_array(tree, 'fields/u', u, global_shape=[nx, ny], offset=[x0, 0])
    call cairn_tree_add_array(tree, 'n', n)
    call cairn_tree_add_array(tree, 'z', z)
    call cairn_tree_add_scalar(tree, 'time', 0.0_c_double)
    call cairn_tree_add_string(tree, 'name', '')
    call cairn_manager_create(manager, comm, trim(dir), read_only=.true.)
    call cairn_manager_restore(manager, tree)
    do y = 1, ny
      do x = 1, nxl
        call expect(u(x, y) == value(x0 + x, y), 'u(x, y)')
      end do
    end do
    call expect(all(n == [7, 1, -1]), 'n')
    call expect(all(z == [(1.0_c_double, -1.0_c_double), (2.0_c_double, 0.5_c_double)]), 'z')
    call cairn_tree_get_scalar(tree, 'time', time)
    call expect(time == 0.5_c_double, 'time')
    call cairn_tree_get_string(tree, 'name', name)
    call expect(name == 'heat', 'name')
    call cairn_manager_free(manager)
    call cairn_tree_free(tree)
  end subroutine check

end program xlang_fortran
