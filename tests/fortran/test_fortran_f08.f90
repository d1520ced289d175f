! The module cairn with mpi_f08 communicators (type(MPI_Comm)): a save and a restore into
! another decomposition, with every error reported through ierr. Exits non-zero on failure.
program test_fortran_f08
  use, intrinsic :: iso_c_binding
  use mpi_f08
  use cairn
  use fortran_test, only: expect, scratch_dir, remove_scratch_dir
  implicit none

  integer, parameter :: n = 12
  type(cairn_comm) :: comm
  type(cairn_manager) :: manager
  type(cairn_tree) :: tree, target
  integer(c_int32_t), allocatable, target :: a(:), b(:)
  character(len=:), allocatable :: dir
  integer :: rank, size, status, first, count, i
  integer(c_int64_t) :: step
  logical :: found

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  dir = scratch_dir('cairn-fortran-f08')
  call cairn_comm_create(comm, MPI_COMM_WORLD, ierr=status)
  call expect(status == CAIRN_OK, 'cairn_comm_create with type(MPI_Comm)')

  ! rank r holds a contiguous block of a(0:n-1), a(i) = 3 * i
  first = n * rank / size
  count = n * (rank + 1) / size - first
  allocate (a(count))
  a = [(3 * (first + i - 1), i = 1, count)]
  call cairn_tree_create(tree, ierr=status)
  call cairn_tree_add_array(tree, 'a', a, global_shape=[n], offset=[first], ierr=status)
  call expect(status == CAIRN_OK, 'add a')
  call cairn_manager_create(manager, comm, dir//'/run', enable_async=.false., ierr=status)
  call expect(status == CAIRN_OK, 'manager')
  call cairn_manager_save(manager, 10_c_int64_t, tree, ierr=status)
  call expect(status == CAIRN_OK, 'save')

  ! restore reversed: rank r gets the block of rank size - 1 - r
  first = n * (size - 1 - rank) / size
  count = n * (size - rank) / size - first
  allocate (b(count))
  b = -1
  call cairn_tree_create(target, ierr=status)
  call cairn_tree_add_array(target, 'a', b, global_shape=[n], offset=[first], ierr=status)
  call cairn_manager_latest_step(manager, step, found, ierr=status)
  call expect(status == CAIRN_OK .and. found .and. step == 10, 'latest step')
  call cairn_manager_restore(manager, target, step=step, ierr=status)
  call expect(status == CAIRN_OK, 'restore')
  call expect(all(b == [(3 * (first + i - 1), i = 1, count)]), 'restored values')

  call cairn_tree_free(target)
  call cairn_tree_free(tree)
  call cairn_manager_free(manager, ierr=status)
  call expect(status == CAIRN_OK, 'free')
  call cairn_comm_free(comm)
  call remove_scratch_dir(dir)
  if (rank == 0) print '(a,i0,a)', 'test_fortran_f08: passed on ', size, ' ranks'
  call MPI_Finalize()
end program test_fortran_f08
