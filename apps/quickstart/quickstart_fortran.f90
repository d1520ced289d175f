program quickstart
  use, intrinsic :: iso_c_binding, only: c_double, c_int64_t
  use mpi
  use cairn
  implicit none
  integer, parameter :: n = 2**20
  real(c_double), allocatable, target :: u(:)  ! this rank's part of the global u(n)
  type(cairn_comm) :: comm
  type(cairn_tree) :: state
  type(cairn_manager) :: mgr
  integer(c_int64_t) :: step
  integer :: rank, size, first, ierr

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  first = n * rank / size  ! offsets count from 0
  allocate (u(n * (rank + 1) / size - first), source=0.0_c_double)
  call cairn_comm_create(comm, MPI_COMM_WORLD)  ! without ierr=, a failure stops the program
  call cairn_tree_create(state)  ! refers to u: saving reads it, restoring writes into it
  call cairn_tree_add_array(state, 'u', u, global_shape=[n], offset=[first])
  call cairn_manager_create(mgr, comm, 'quickstart-run', save_interval_steps=10_c_int64_t, &
                            max_to_keep=2)
  call cairn_manager_restore_latest_intact(mgr, state, step)  ! on any rank count; 0: none
  do step = step + 1, 100
    u = u + 1  ! the simulation
    call cairn_manager_save(mgr, step, state)
  end do
  call cairn_manager_free(mgr)  ! waits for the last save
  call cairn_tree_free(state)
  call cairn_comm_free(comm)
  call MPI_Finalize(ierr)
  if (any(u /= 100)) error stop 1
end program quickstart
