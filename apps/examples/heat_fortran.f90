! cairn from Fortran: a 2-D field u(nx, ny) whose columns are split over the ranks, relaxed
! towards its neighbours' mean, checkpointed every 5 steps (the newest 2 are kept) and resumed
! from the newest checkpoint on restart, on any number of ranks:
!   mpiexec -n 4 cairn_example_fortran run-f 20   ! steps 0..19
!   mpiexec -n 3 cairn_example_fortran run-f 40   ! resumes after the newest saved step
! When preempted (SIGTERM or SIGUSR1 on any rank, as Slurm's --signal sends it, or the Slurm
! time limit within 60 s) it saves the step it is at and stops; run it again to continue.
! Calls without `ierr` stop the program with cairn's message on error. cairn stores u(nx, ny)
! as the C-order array [ny][nx] (dims reversed, the same bytes): h5py shows shape (ny, nx).
program heat_fortran
  use, intrinsic :: iso_c_binding, only: c_double, c_int64_t
  use mpi
  use cairn
  implicit none

  integer, parameter :: nx = 16, ny = 12
  real(c_double), allocatable, target :: u(:, :)
  type(cairn_comm) :: comm
  type(cairn_manager) :: manager
  type(cairn_tree) :: state
  integer(c_int64_t) :: step, steps, latest
  integer :: rank, size, y0, nyl, ierr
  logical :: found, should, preempted
  character(len=256) :: root, arg

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  root = 'run-f'
  steps = 20
  if (command_argument_count() >= 1) call get_command_argument(1, root)
  if (command_argument_count() >= 2) then
    call get_command_argument(2, arg)
    read (arg, *) steps
  end if

  ! This rank's columns: u(:, y0+1 : y0+nyl) of the global field (offsets count from 0).
  y0 = ny * rank / size
  nyl = ny * (rank + 1) / size - y0
  allocate (u(nx, nyl))
  u = 0
  if (rank == 0) u(1, 1) = 1000

  call cairn_comm_create(comm, MPI_COMM_WORLD)
  call cairn_manager_create(manager, comm, trim(root), save_interval_steps=5_c_int64_t, &
                            max_to_keep=2, enable_preemption=.true., &
                            preemption_margin=60.0_c_double)

  ! The tree refers to u (no copy): saving reads it, restoring writes into it.
  call cairn_tree_create(state)
  call cairn_tree_add_array(state, 'u', u, global_shape=[nx, ny], offset=[0, y0])

  ! Resume from the newest checkpoint, whatever decomposition wrote it.
  step = 0
  call cairn_manager_latest_step(manager, latest, found)
  if (found) then
    call cairn_manager_restore(manager, state, step=latest)
    step = latest + 1
  end if

  preempted = .false.
  do while (step < steps)
    call relax(u)
    ! Collective: true on every rank once any rank got the signal.
    call cairn_manager_reached_preemption(manager, step, preempted)
    call cairn_manager_should_save(manager, step, should)
    if (should .or. preempted) call cairn_manager_save(manager, step, state, &
                                                       metrics='{"total": '//total(u)//'}')
    if (preempted) exit
    step = step + 1
  end do

  call cairn_manager_wait_until_finished(manager)
  call cairn_manager_latest_step(manager, latest, found)
  if (rank == 0 .and. preempted) print '(a,i0,a)', 'heat_fortran: preempted: saved step ', &
    latest, ' and stopped; run again to continue'
  if (rank == 0) print '(a,i0,a,i0)', 'heat_fortran: ranks ', size, &
    ', newest checkpoint: step ', latest
  call cairn_manager_free(manager)
  call cairn_tree_free(state)
  call cairn_comm_free(comm)
  call MPI_Finalize(ierr)

contains

  ! One relaxation step inside this rank's columns (a toy: no halo exchange).
  subroutine relax(a)
    real(c_double), intent(inout) :: a(:, :)
    a(2:nx - 1, :) = 0.5_c_double * a(2:nx - 1, :) + 0.25_c_double * (a(1:nx - 2, :) + a(3:nx, :))
  end subroutine relax

  ! The sum of u over all ranks, as text for the metrics.
  function total(a) result(text)
    real(c_double), intent(in) :: a(:, :)
    character(len=:), allocatable :: text
    character(len=32) :: buffer
    real(c_double) :: local, global
    local = sum(a)
    call MPI_Allreduce(local, global, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    write (buffer, '(es24.16)') global
    text = trim(adjustl(buffer))
  end function total

end program heat_fortran
