! Arrays by address from Fortran (cairn_tree_add_array_ptr): a host array given as a c_ptr
! round trips with its Fortran shape; a leaf declared CAIRN_MEMORY_CUDA_DEVICE fails to save,
! with CAIRN_ERR_UNSUPPORTED naming the leaf and why, when no CUDA device is usable, and with a
! device (builds that link the CUDA runtime, CAIRN_TEST_CUDART) cudaMalloc memory round trips.
! Exits non-zero on any failure.
program test_fortran_device
  use, intrinsic :: iso_c_binding
  use mpi
  use cairn
  use fortran_test
  implicit none

#if CAIRN_TEST_CUDART
  ! The few CUDA runtime calls the test needs (cudaError_t and cudaMemcpyKind are C enums).
  integer(c_int), parameter :: cuda_success = 0, host_to_device = 1, device_to_host = 2
  interface
    integer(c_int) function cuda_get_device_count(count) bind(C, name='cudaGetDeviceCount')
      import :: c_int
      integer(c_int), intent(out) :: count
    end function cuda_get_device_count
    integer(c_int) function cuda_get_last_error() bind(C, name='cudaGetLastError')
      import :: c_int
    end function cuda_get_last_error
    integer(c_int) function cuda_set_device(device) bind(C, name='cudaSetDevice')
      import :: c_int
      integer(c_int), value :: device
    end function cuda_set_device
    integer(c_int) function cuda_malloc(pointer, bytes) bind(C, name='cudaMalloc')
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), intent(out) :: pointer
      integer(c_size_t), value :: bytes
    end function cuda_malloc
    integer(c_int) function cuda_memcpy(dst, src, bytes, kind) bind(C, name='cudaMemcpy')
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: dst, src
      integer(c_size_t), value :: bytes
      integer(c_int), value :: kind
    end function cuda_memcpy
    integer(c_int) function cuda_free(pointer) bind(C, name='cudaFree')
      import :: c_int, c_ptr
      type(c_ptr), value :: pointer
    end function cuda_free
  end interface
#endif

  integer, parameter :: nx = 5, ny = 4
  integer :: rank, size, ierr, devices
  type(cairn_comm) :: comm
  character(len=:), allocatable :: dir

  call MPI_Init(ierr)
  call cairn_comm_create(comm, MPI_COMM_WORLD)
  call cairn_comm_rank(comm, rank)
  call cairn_comm_size(comm, size)
  dir = scratch_dir('cairn-fortran-device')

  call host_pointer()
  devices = device_count()
  ! Every rank takes the same branch (a rank without a device makes it the error case).
  call MPI_Allreduce(MPI_IN_PLACE, devices, 1, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD, ierr)
  if (devices == 0) then
    call without_device()
  else
    call with_device()
  end if

  call cairn_comm_free(comm)
  call remove_scratch_dir(dir)
  if (rank == 0) print '(a,i0,a,l1,a)', 'test_fortran_device: passed on ', size, &
    ' ranks (device round trip: ', devices > 0, ')'
  call MPI_Finalize(ierr)

contains

  ! u(x, y) of this rank's columns y0+1..y0+ny of the global (nx, ny * size) array.
  subroutine fill(u, y0)
    real(c_double), intent(out) :: u(:, :)
    integer, intent(in) :: y0
    integer :: x, y
    do y = 1, ny
      do x = 1, nx
        u(x, y) = 100.0_c_double * (y0 + y) + x
      end do
    end do
  end subroutine fill

  ! The number of CUDA devices this process can use (0 when the runtime reports none or
  ! fails); with some, selects device rank % count.
  integer function device_count()
#if CAIRN_TEST_CUDART
    integer(c_int) :: count
    count = 0
    if (cuda_get_device_count(count) /= cuda_success) then
      count = cuda_get_last_error()
      count = 0
    end if
    if (count > 0) then
      call expect(cuda_set_device(int(mod(rank, int(count)), c_int)) == cuda_success, &
                  'cudaSetDevice')
    end if
    device_count = int(count)
#else
    device_count = 0
#endif
  end function device_count

  ! A host array passed by address: the shapes are given in Fortran order, and the leaf
  ! reads back as the same Fortran array.
  subroutine host_pointer()
    type(cairn_tree) :: tree
    type(cairn_manager) :: manager
    real(c_double), target :: u(nx, ny), expected(nx, ny)
    integer, allocatable :: global_shape(:), offset(:)
    integer :: status
    call fill(u, ny * rank)
    expected = u
    call cairn_tree_create(tree)
    call cairn_tree_add_array_ptr(tree, 'u', CAIRN_FLOAT64, c_loc(u), [nx, ny * size], &
                                  offset=[0, ny * rank], ierr=status)
    call expect_status(status, CAIRN_ERR_INVALID_ARGUMENT, 'offset and local_shape', &
                       'offset without local_shape')
    call cairn_tree_add_array_ptr(tree, 'u', CAIRN_FLOAT64, c_loc(u), [nx, ny * size], &
                                  offset=[0, ny * rank], local_shape=[nx], ierr=status)
    call expect_status(status, CAIRN_ERR_INVALID_ARGUMENT, 'as many dimensions', &
                       'local_shape of the wrong rank')
    call cairn_tree_add_array_ptr(tree, 'u', CAIRN_FLOAT64, c_loc(u), [nx, ny * size], &
                                  offset=[0, ny * rank], local_shape=[nx, ny], memory=7, &
                                  ierr=status)
    call expect_status(status, CAIRN_ERR_INVALID_ARGUMENT, 'memory kind', 'unknown memory kind')
    call cairn_tree_add_array_ptr(tree, 'u', CAIRN_FLOAT64, c_loc(u), [nx, ny * size], &
                                  offset=[0, ny * rank], local_shape=[nx, ny], &
                                  memory=CAIRN_MEMORY_HOST)
    call cairn_tree_array_info(tree, 'u', global_shape=global_shape, offset=offset)
    call expect(all(global_shape == [nx, ny * size]) .and. all(offset == [0, ny * rank]), &
                'array info in Fortran order')
    call cairn_manager_create(manager, comm, dir//'/host', enable_async=.false.)
    call cairn_manager_save(manager, 1_c_int64_t, tree)
    u = -1
    call cairn_manager_restore(manager, tree)
    call expect(all(u == expected), 'host array by address round trips')
    call cairn_manager_free(manager)
    call cairn_tree_free(tree)
  end subroutine host_pointer

  ! A host pointer declared as device memory, without a usable device: a clear error on
  ! every rank, nothing committed.
  subroutine without_device()
    type(cairn_tree) :: tree
    type(cairn_manager) :: manager
    real(c_double), target :: u(nx, ny)
    integer :: status
    integer(c_int64_t) :: step
    logical :: found
    call fill(u, ny * rank)
    call cairn_tree_create(tree)
    call cairn_tree_add_array_ptr(tree, 'fields/on_gpu', CAIRN_FLOAT64, c_loc(u), &
                                  [nx, ny * size], offset=[0, ny * rank], &
                                  local_shape=[nx, ny], memory=CAIRN_MEMORY_CUDA_DEVICE)
    call cairn_manager_create(manager, comm, dir//'/no_device', enable_async=.false.)
    call cairn_manager_save(manager, 1_c_int64_t, tree, ierr=status)
    call expect_status(status, CAIRN_ERR_UNSUPPORTED, &
                       'leaf ''fields/on_gpu'' is in CUDA device memory', 'device leaf')
#if CAIRN_TEST_CUDART
    call expect(index(cairn_last_error(), 'no CUDA device is') > 0, 'the reason')
#else
    call expect(index(cairn_last_error(), 'no CUDA support') > 0, 'the reason')
#endif
    call cairn_manager_latest_step(manager, step, found)
    call expect(.not. found, 'nothing committed after the failed save')
    call cairn_manager_free(manager)
    call cairn_tree_free(tree)
  end subroutine without_device

  ! cudaMalloc memory saved from and restored into the device.
  subroutine with_device()
#if CAIRN_TEST_CUDART
    type(cairn_tree) :: tree
    type(cairn_manager) :: manager
    real(c_double), target :: u(nx, ny), back(nx, ny)
    type(c_ptr) :: device
    integer(c_size_t) :: bytes
    call fill(u, ny * rank)
    bytes = int(c_sizeof(u), c_size_t)
    call expect(cuda_malloc(device, bytes) == cuda_success, 'cudaMalloc')
    call expect(cuda_memcpy(device, c_loc(u), bytes, host_to_device) == cuda_success, &
                'cudaMemcpy to the device')
    call cairn_tree_create(tree)
    call cairn_tree_add_array_ptr(tree, 'fields/on_gpu', CAIRN_FLOAT64, device, &
                                  [nx, ny * size], offset=[0, ny * rank], &
                                  local_shape=[nx, ny], memory=CAIRN_MEMORY_CUDA_DEVICE)
    call cairn_manager_create(manager, comm, dir//'/device', enable_async=.false.)
    call cairn_manager_save(manager, 1_c_int64_t, tree)
    back = 0
    call expect(cuda_memcpy(device, c_loc(back), bytes, host_to_device) == cuda_success, &
                'clearing the device array')
    call cairn_manager_restore(manager, tree)
    call expect(cuda_memcpy(c_loc(back), device, bytes, device_to_host) == cuda_success, &
                'cudaMemcpy from the device')
    call expect(all(back == u), 'device array round trips')
    call cairn_manager_free(manager)
    call cairn_tree_free(tree)
    call expect(cuda_free(device) == cuda_success, 'cudaFree')
#else
    call expect(.false., 'with_device without the CUDA runtime')
#endif
  end subroutine with_device

end program test_fortran_device
