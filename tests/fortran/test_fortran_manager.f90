! The checkpoint manager from Fortran (module cairn, communicators of the mpi module): arrays
! of every supported type, scalars, strings and JSON; a series with retention and metrics;
! composed policy objects; restore N->M on fewer ranks into another decomposition; as-saved
! restore; composite items; the multihost restart; array sections and default-kind logicals;
! errors (null handle, wrong dtype, overlapping boxes, wrong shape); should_save_fn and a
! preemption deadline. Exits non-zero on any failure.
!
!   test_fortran_manager FORMAT   (hdf5 or posix: the format of the composite checkpoint)
program test_fortran_manager
  use, intrinsic :: iso_c_binding
  use mpi
  use cairn
  use fortran_test
  implicit none

  integer, parameter :: nx = 6, ny = 8
  integer :: rank, size, ierr
  type(cairn_comm) :: comm
  character(len=:), allocatable :: dir
  integer :: composite_format

  call MPI_Init(ierr)
  call cairn_comm_create(comm, MPI_COMM_WORLD)
  call cairn_comm_rank(comm, rank)
  call cairn_comm_size(comm, size)
  call expect(len(cairn_version()) > 0, 'cairn_version')
  dir = scratch_dir('cairn-fortran-manager')
  composite_format = format_argument(1)

  call series()
  call policies()
  call save_decision_and_deadline()
  call restore_n_to_m()
  call sections_and_logicals()
  call composite()
  call multihost()
  call errors()

  call cairn_comm_free(comm)
  call remove_scratch_dir(dir)
  if (rank == 0) print '(a,i0,a)', 'test_fortran_manager: passed on ', size, ' ranks'
  call MPI_Finalize(ierr)

contains

  ! value of u(x, y) (1-based Fortran indices) at `step`: the C tests' 100*y + x + step with
  ! 0-based C indices, so that Fortran and C checkpoints hold the same bytes.
  real(c_double) function value(x, y, step)
    integer, intent(in) :: x, y
    integer(c_int64_t), intent(in) :: step
    value = 100.0_c_double * (y - 1) + (x - 1) + real(step, c_double)
  end function value

  ! Block partition of n over `parts`: first index (0-based) and count of `part`.
  subroutine block(n, part, parts, first, count)
    integer, intent(in) :: n, part, parts
    integer, intent(out) :: first, count
    first = n * part / parts
    count = n * (part + 1) / parts - first
  end subroutine block

  ! This rank's columns y of u(nx, ny) plus replicated arrays of every type, scalars, text.
  subroutine make_state(tree, u, step)
    type(cairn_tree), intent(out) :: tree
    real(c_double), intent(inout), target :: u(:, :)
    integer(c_int64_t), intent(in) :: step
    real(c_float), save, target :: r4(5)
    integer(c_int32_t), save, target :: i4(3, 2)
    integer(c_int64_t), save, target :: i8(4)
    logical(c_bool), save, target :: mask(2, 2)
    complex(c_double_complex), save, target :: z8(3)
    complex(c_float_complex), save, target :: z4(2)
    integer :: y0, nyl, x, y
    call block(ny, rank, size, y0, nyl)
    do y = 1, nyl
      do x = 1, nx
        u(x, y) = value(x, y0 + y, step)
      end do
    end do
    r4 = [1.5, 2.5, 3.5, 4.5, 5.5]
    i4 = reshape([1, 2, 3, 4, 5, 6], [3, 2])
    i8 = [huge(0_c_int64_t), -1_c_int64_t, 0_c_int64_t, step]
    mask = reshape([.true., .false., .false., .true.], [2, 2])
    z8 = [(1.0_c_double, -1.0_c_double), (2.0_c_double, 0.5_c_double), (0.0_c_double, 3.0_c_double)]
    z4 = [(1.0, 2.0), (3.0, 4.0)]
    call cairn_tree_create(tree)
    call cairn_tree_add_array(tree, 'fields/u', u(:, 1:nyl), global_shape=[nx, ny], &
                              offset=[0, y0])
    call cairn_tree_add_array(tree, 'r4', r4, replicated=.true.)
    call cairn_tree_add_array(tree, 'i4', i4, replicated=.true.)
    call cairn_tree_add_array(tree, 'i8', i8, replicated=.true.)
    call cairn_tree_add_array(tree, 'mask', mask, replicated=.true.)
    call cairn_tree_add_array(tree, 'z8', z8, replicated=.true.)
    call cairn_tree_add_array(tree, 'z4', z4, replicated=.true.)
    call cairn_tree_add_scalar(tree, 'time', 0.5_c_double * real(step, c_double))
    call cairn_tree_add_scalar(tree, 'count', int(step, c_int32_t))
    call cairn_tree_add_scalar(tree, 'done', logical(.true., c_bool))
    call cairn_tree_add_string(tree, 'name', 'heat')
    call cairn_tree_add_json(tree, 'info', '{"order": "fortran"}')
  end subroutine make_state

  subroutine series()
    type(cairn_manager) :: manager
    type(cairn_tree) :: tree
    real(c_double), allocatable, target :: u(:, :)
    integer(c_int64_t) :: step
    integer(c_int64_t), allocatable :: steps(:)
    logical :: saved, found, flag
    character(len=:), allocatable :: text
    character(len=32) :: metrics
    allocate (u(nx, ny))
    call cairn_manager_create(manager, comm, dir//'/series', max_to_keep=2, &
                              barrier_timeout=120.0_c_double)
    do step = 0, 4
      call make_state(tree, u, step)
      write (metrics, '(a,i0,a)') '{"loss": ', 10 - step, '}'
      call cairn_manager_save(manager, step, tree, saved, metrics=trim(metrics), &
                              custom_metadata='{"language": "fortran"}')
      call expect(saved, 'save started')
      call cairn_tree_free(tree)
      ! an async save copied the data: the next step may overwrite u at once
    end do
    call cairn_manager_wait_until_finished(manager)
    call cairn_manager_all_steps(manager, steps)
    call expect(all(steps == [3_c_int64_t, 4_c_int64_t]), 'max_to_keep=2 keeps steps 3 and 4')
    call cairn_manager_latest_step(manager, step, found)
    call expect(found .and. step == 4, 'latest step 4')
    call cairn_manager_metrics(manager, 4_c_int64_t, text)
    call expect(text == '{"loss":6}', 'metrics of step 4')
    call cairn_manager_custom_metadata(manager, 3_c_int64_t, text)
    call expect(text == '{"language":"fortran"}', 'custom metadata of step 3')
    call cairn_manager_should_save(manager, 5_c_int64_t, flag)
    call expect(flag, 'should_save(5)')
    call cairn_manager_reached_preemption(manager, 5_c_int64_t, flag)
    call expect(.not. flag, 'no preemption')
    call cairn_manager_close(manager)
    call cairn_manager_free(manager)
  end subroutine series

  ! Policy objects: save AnyOf(FixedInterval(4), SpecificSteps([7])), keep AnyOf(LatestN(2),
  ! EveryNSteps(8)), freed as soon as the manager has them; a bad argument is an error.
  subroutine policies()
    type(cairn_save_policy) :: every4, on7, save_any
    type(cairn_preservation_policy) :: latest, every8, keep_any
    type(cairn_manager) :: manager
    type(cairn_tree) :: tree
    real(c_double), allocatable, target :: u(:, :)
    integer(c_int64_t) :: step
    integer(c_int64_t), allocatable :: steps(:)
    character(len=:), allocatable :: text
    logical :: saved
    integer :: status
    allocate (u(nx, ny))
    call cairn_save_policy_fixed_interval(every4, 4_c_int64_t)
    call cairn_save_policy_specific_steps(on7, [7_c_int64_t])
    call cairn_save_policy_any_of(save_any, [every4, on7])
    call cairn_preservation_policy_latest_n(latest, 2)
    call cairn_preservation_policy_every_n_steps(every8, 8_c_int64_t)
    call cairn_preservation_policy_any_of(keep_any, [latest, every8])
    call cairn_save_policy_describe(save_any, text)
    call expect(text == 'AnyOf(FixedInterval(4), SpecificSteps({7}))', 'save policy: '//text)
    call cairn_preservation_policy_describe(keep_any, text)
    call expect(text == 'AnyOf(LatestN(2), EveryNSteps(8))', 'preservation policy: '//text)
    call cairn_manager_create(manager, comm, dir//'/policies', save_decision_policy=save_any, &
                              preservation_policy=keep_any, barrier_timeout=120.0_c_double)
    call cairn_save_policy_free(every4)
    call cairn_save_policy_free(on7)
    call cairn_save_policy_free(save_any)
    call cairn_preservation_policy_free(latest)
    call cairn_preservation_policy_free(every8)
    call cairn_preservation_policy_free(keep_any)
    do step = 1, 16
      call make_state(tree, u, step)
      call cairn_manager_save(manager, step, tree, saved)
      call expect(saved .eqv. (mod(step, 4_c_int64_t) == 0 .or. step == 7), 'policy decides')
      call cairn_tree_free(tree)
    end do
    call cairn_manager_wait_until_finished(manager)
    call cairn_manager_all_steps(manager, steps)
    call expect(ubound(steps, 1) == 3, 'three steps kept')
    call expect(all(steps == [8_c_int64_t, 12_c_int64_t, 16_c_int64_t]), 'steps 8, 12, 16 kept')
    call cairn_manager_free(manager)
    call cairn_save_policy_fixed_interval(every4, 0_c_int64_t, ierr=status)
    call expect_status(status, CAIRN_ERR_INVALID_ARGUMENT, 'interval', 'interval 0')
  end subroutine policies

  ! Array sections and default-kind logicals: the interior of a field with halos (not
  ! contiguous), a reversed replicated section and a default-kind logical mask are saved,
  ! overwritten at once (the save read them when called), restored in place into other
  ! sections and logical kinds, and read back into sections; halos and the elements between
  ! a section's are never touched.
  subroutine sections_and_logicals()
    type(cairn_manager) :: manager
    type(cairn_tree) :: tree, target
    real(c_double), allocatable, target :: field(:, :), field2(:, :), buf(:, :)
    logical, allocatable, target :: mask(:, :), mask2(:, :)
    logical(c_bool), allocatable, target :: bools(:, :)
    integer(c_int32_t), target :: ids(10), ids2(20)
    logical :: saved
    integer :: y0, nyl, x, y, i
    call block(ny, rank, size, y0, nyl)
    allocate (field(0:nx + 1, 0:nyl + 1), mask(nx, nyl))
    field = -1
    do y = 1, nyl
      do x = 1, nx
        field(x, y) = value(x, y0 + y, 7_c_int64_t)
        mask(x, y) = mod(x + y0 + y, 3) == 0
      end do
    end do
    ids = [(i, i = 1, 10)]
    call cairn_tree_create(tree)
    call cairn_tree_add_array(tree, 'field', field(1:nx, 1:nyl), global_shape=[nx, ny], &
                              offset=[0, y0])
    call cairn_tree_add_array(tree, 'mask', mask, global_shape=[nx, ny], offset=[0, y0])
    call cairn_tree_add_array(tree, 'ids', ids(10:1:-1), replicated=.true.)
    call cairn_manager_create(manager, comm, dir//'/sections', barrier_timeout=120.0_c_double)
    call cairn_manager_save(manager, 7_c_int64_t, tree, saved)
    call expect(saved, 'sections saved')
    field = 0
    mask = .false.
    ids = 0
    call cairn_manager_wait_until_finished(manager)
    call cairn_tree_free(tree)

    ! Into a field with wider halos, a strided logical section and every other element.
    allocate (field2(-1:nx + 2, -1:nyl + 2), mask2(2 * nx, nyl))
    field2 = -2
    mask2 = .true.
    ids2 = -3
    call cairn_tree_create(target)
    call cairn_tree_add_array(target, 'field', field2(1:nx, 1:nyl), global_shape=[nx, ny], &
                              offset=[0, y0])
    call cairn_tree_add_array(target, 'mask', mask2(1:2 * nx:2, :), global_shape=[nx, ny], &
                              offset=[0, y0])
    call cairn_tree_add_array(target, 'ids', ids2(1:20:2), replicated=.true.)
    call cairn_manager_restore(manager, target)
    do y = 1, nyl
      do x = 1, nx
        call expect(field2(x, y) == value(x, y0 + y, 7_c_int64_t), 'field restored in place')
        call expect(mask2(2 * x - 1, y) .eqv. mod(x + y0 + y, 3) == 0, 'mask restored')
        call expect(mask2(2 * x, y), 'elements between the section''s untouched')
      end do
    end do
    call expect(all(field2(:, -1:0) == -2) .and. all(field2(:, nyl + 1:) == -2) .and. &
                all(field2(-1:0, :) == -2) .and. all(field2(nx + 1:, :) == -2), 'halos untouched')
    call expect(all(ids2(1:20:2) == [(i, i = 10, 1, -1)]), 'reversed section restored')
    call expect(all(ids2(2:20:2) == -3), 'every other element untouched')
    call cairn_tree_free(target)

    ! Read back from a tree restored as saved into sections and default logicals.
    call cairn_manager_restore_as_saved(manager, target)
    allocate (buf(nx + 2, nyl + 1), bools(nx, nyl))
    buf = -4
    call cairn_tree_read_array(target, 'field', buf(2:nx + 1, 2:nyl + 1))
    call expect(all(buf(1, :) == -4) .and. all(buf(nx + 2, :) == -4) .and. &
                all(buf(:, 1) == -4), 'read into a section keeps the rest')
    mask2 = .true.
    call cairn_tree_read_array(target, 'mask', mask2(1:nx, :))
    call cairn_tree_read_array(target, 'mask', bools)
    do y = 1, nyl
      do x = 1, nx
        call expect(buf(x + 1, y + 1) == value(x, y0 + y, 7_c_int64_t), 'read into a section')
        call expect(mask2(x, y) .eqv. mod(x + y0 + y, 3) == 0, 'read default logicals')
        call expect(logical(bools(x, y)) .eqv. mask2(x, y), 'logical(c_bool) reads the same')
      end do
    end do
    call cairn_tree_free(target)
    call cairn_manager_free(manager)
  end subroutine sections_and_logicals

  ! should_save_fn (a bind(C) function) decides alone; a deadline already past is a
  ! preemption on every rank.
  subroutine save_decision_and_deadline()
    type(cairn_manager) :: manager
    type(cairn_tree) :: tree
    real(c_double), allocatable, target :: u(:, :)
    integer(c_int64_t) :: step
    integer(c_int64_t), allocatable :: steps(:)
    logical :: saved, preempted
    allocate (u(nx, ny))
    call cairn_manager_create(manager, comm, dir//'/decision', enable_async=.false., &
                              should_save_fn=c_funloc(every_third_step), &
                              barrier_timeout=120.0_c_double)
    do step = 1, 7
      call make_state(tree, u, step)
      call cairn_manager_save(manager, step, tree, saved)
      call expect(saved .eqv. mod(step, 3_c_int64_t) == 0, 'should_save_fn decides')
      call cairn_tree_free(tree)
    end do
    call cairn_manager_all_steps(manager, steps)
    call expect(ubound(steps, 1) == 2, 'two steps saved')  ! size: a variable here
    call expect(all(steps == [3_c_int64_t, 6_c_int64_t]), 'steps 3 and 6 saved')
    call cairn_manager_free(manager)

    call cairn_manager_create(manager, comm, dir//'/deadline', enable_preemption=.true., &
                              preemption_deadline=1.0_c_double, preemption_margin=60.0_c_double, &
                              preemption_use_slurm_end_time=.false., &
                              barrier_timeout=120.0_c_double)
    call cairn_manager_reached_preemption(manager, 1_c_int64_t, preempted)
    call expect(preempted, 'a deadline in the past is a preemption')
    call cairn_manager_free(manager)
  end subroutine save_decision_and_deadline

  ! Restores the series on the first max(1, size - 1) ranks, split along x instead of y.
  subroutine restore_n_to_m()
    integer :: parts, sub, x0, nxl, x, y
    type(cairn_comm) :: subcomm
    type(cairn_manager) :: manager
    type(cairn_tree) :: target, saved
    real(c_double), allocatable, target :: v(:, :), w(:, :)
    real(c_float), target :: r4(5)
    integer(c_int32_t), target :: i4(3, 2)
    integer(c_int64_t), target :: i8(4)
    logical(c_bool), target :: mask(2, 2)
    complex(c_double_complex), target :: z8(3)
    complex(c_float_complex), target :: z4(2)
    real(c_double) :: time
    integer(c_int32_t) :: count
    logical(c_bool) :: done
    character(len=:), allocatable :: text
    integer, allocatable :: global(:), local(:)
    integer :: dtype, count_leaves
    parts = max(1, size - 1)
    call MPI_Comm_split(MPI_COMM_WORLD, merge(0, MPI_UNDEFINED, rank < parts), rank, sub, ierr)
    if (sub /= MPI_COMM_NULL) then
      call cairn_comm_create(subcomm, sub)
      call cairn_manager_create(manager, subcomm, dir//'/series', read_only=.true.)
      call block(nx, rank, parts, x0, nxl)
      allocate (v(nxl, ny))
      v = -1
      r4 = 0
      i4 = 0
      i8 = 0
      mask = .false.
      z8 = 0
      z4 = 0
      call cairn_tree_create(target)
      call cairn_tree_add_array(target, 'fields/u', v, global_shape=[nx, ny], offset=[x0, 0])
      call cairn_tree_add_array(target, 'r4', r4)
      call cairn_tree_add_array(target, 'i4', i4)
      call cairn_tree_add_array(target, 'i8', i8)
      call cairn_tree_add_array(target, 'mask', mask)
      call cairn_tree_add_array(target, 'z8', z8)
      call cairn_tree_add_array(target, 'z4', z4)
      call cairn_tree_add_scalar(target, 'time', 0.0_c_double)
      call cairn_tree_add_scalar(target, 'count', 0_c_int32_t)
      call cairn_tree_add_scalar(target, 'done', logical(.false., c_bool))
      call cairn_tree_add_string(target, 'name', '')
      call cairn_tree_add_json(target, 'info', 'null')
      call cairn_tree_leaf_count(target, count_leaves)
      call expect(count_leaves == 12, 'twelve leaves')
      call cairn_tree_leaf_path(target, 1, text)
      call expect(text == 'fields/u', 'the first leaf')
      call cairn_tree_leaf_kind(target, 'info', dtype)
      call expect(dtype == CAIRN_LEAF_JSON, 'leaf kind')
      call cairn_manager_restore(manager, target)
      do y = 1, ny
        do x = 1, nxl
          call expect(v(x, y) == value(x0 + x, y, 4_c_int64_t), 'restored u(x, y)')
        end do
      end do
      call expect(all(r4 == [1.5, 2.5, 3.5, 4.5, 5.5]), 'real(4) array')
      call expect(all(i4 == reshape([1, 2, 3, 4, 5, 6], [3, 2])), 'integer(4) array')
      call expect(all(i8 == [huge(0_c_int64_t), -1_c_int64_t, 0_c_int64_t, 4_c_int64_t]), &
                  'integer(8) array')
      call expect(all(mask .eqv. reshape([.true., .false., .false., .true.], [2, 2])), &
                  'logical array')
      call expect(all(z8 == [(1.0_c_double, -1.0_c_double), (2.0_c_double, 0.5_c_double), &
                             (0.0_c_double, 3.0_c_double)]), 'complex(8) array')
      call expect(all(z4 == [(1.0, 2.0), (3.0, 4.0)]), 'complex(4) array')
      call cairn_tree_get_scalar(target, 'time', time)
      call expect(time == 2.0_c_double, 'real scalar')
      call cairn_tree_get_scalar(target, 'count', count)
      call expect(count == 4, 'integer scalar')
      call cairn_tree_get_scalar(target, 'done', done)
      call expect(logical(done), 'logical scalar')
      call cairn_tree_get_string(target, 'name', text)
      call expect(text == 'heat', 'string leaf')
      call cairn_tree_get_json(target, 'info', text)
      call expect(text == '{"order":"fortran"}', 'JSON leaf')
      call cairn_tree_free(target)

      ! as saved, whole arrays, step 3: Fortran order of the shape comes back
      call cairn_manager_restore_as_saved(manager, saved, step=3_c_int64_t, whole_arrays=.true., &
                                          select=['fields'])
      call cairn_tree_array_info(saved, 'fields/u', dtype=dtype, global_shape=global, &
                                 local_shape=local)
      call expect(dtype == CAIRN_FLOAT64, 'dtype float64')
      call expect(all(global == [nx, ny]) .and. all(local == [nx, ny]), 'shape in Fortran order')
      allocate (w(nx, ny))
      call cairn_tree_read_array(saved, 'fields/u', w)
      do y = 1, ny
        do x = 1, nx
          call expect(w(x, y) == value(x, y, 3_c_int64_t), 'as-saved u(x, y)')
        end do
      end do
      call cairn_tree_free(saved)
      call cairn_manager_free(manager)
      call cairn_comm_free(subcomm)
      call MPI_Comm_free(sub, ierr)
    end if
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
  end subroutine restore_n_to_m

  subroutine composite()
    type(cairn_manager) :: manager
    type(cairn_items) :: items
    type(cairn_tree) :: state, target
    real(c_double), allocatable, target :: u(:, :), v(:, :)
    character(len=:), allocatable :: json
    integer :: x0, nxl, x, y
    allocate (u(nx, ny))
    call cairn_manager_create(manager, comm, dir//'/composite', enable_async=.false., &
                              item_names=['state ', 'config'])
    call make_state(state, u, 7_c_int64_t)
    call cairn_items_create(items)
    call cairn_items_add_tree(items, 'state', state)
    call cairn_items_add_json(items, 'config', '{"dt": 0.5}')
    call cairn_manager_save_items(manager, 7_c_int64_t, items, format=composite_format)
    call cairn_items_free(items)
    call cairn_tree_free(state)

    call block(nx, rank, size, x0, nxl)
    allocate (v(nxl, ny))
    call cairn_tree_create(target)
    call cairn_tree_add_array(target, 'fields/u', v, global_shape=[nx, ny], offset=[x0, 0])
    call cairn_items_create(items)
    call cairn_items_add_tree(items, 'state', target)
    call cairn_items_add_json(items, 'config')
    call cairn_manager_restore_items(manager, items)
    call cairn_items_get_json(items, 'config', json)
    call expect(json == '{"dt":5E-1}', 'JSON item')
    do y = 1, ny
      do x = 1, nxl
        call expect(v(x, y) == value(x0 + x, y, 7_c_int64_t), 'composite u(x, y)')
      end do
    end do
    call cairn_items_free(items)
    call cairn_tree_free(target)
    call cairn_manager_free(manager)
  end subroutine composite

  subroutine multihost()
    type(cairn_multihost) :: mh
    type(cairn_tree) :: state
    real(c_double), target :: x(4)
    integer(c_int64_t) :: step
    logical :: found
    x = -1
    call cairn_tree_create(state)
    call cairn_tree_add_array(state, 'x', x, global_shape=[4 * size], offset=[4 * rank])
    call cairn_multihost_create(mh, comm, dir//'/mh', max_to_keep=2)
    call cairn_multihost_restore_or_initialize(mh, state, step, initial_step=1_c_int64_t)
    call expect(step == 1, 'multihost initial step')
    x = [1, 2, 3, 4] + 10 * rank
    call cairn_multihost_save(mh, 6_c_int64_t, state)
    call cairn_multihost_free(mh)
    x = 0
    call cairn_multihost_create(mh, comm, dir//'/mh', max_to_keep=2)
    call cairn_multihost_latest_common_step(mh, step, found)
    call expect(found .and. step == 6, 'multihost latest common step')
    call cairn_multihost_restore_or_initialize(mh, state, step)
    call expect(step == 6 .and. all(x == [1, 2, 3, 4] + 10 * rank), 'multihost restore')
    call cairn_multihost_free(mh)
    call cairn_tree_free(state)
  end subroutine multihost

  subroutine errors()
    type(cairn_tree) :: null_tree, tree, target
    type(cairn_manager) :: manager
    real(c_double), target :: a(6, 4), whole(8)
    real(c_float), target :: wrong(6, 4)
    real(c_double), allocatable :: bad_shape(:, :)
    integer :: status
    integer(c_int64_t) :: step
    logical :: found
    a = 1
    whole = 2
    call cairn_tree_add_array(null_tree, 'a', a, ierr=status)
    call expect_status(status, CAIRN_ERR_INVALID_ARGUMENT, 'tree is NULL', 'null tree')
    call cairn_tree_create(tree)
    call cairn_tree_add_array(tree, 'a', a, global_shape=[6], ierr=status)
    call expect_status(status, CAIRN_ERR_INVALID_ARGUMENT, 'global_shape', 'rank mismatch')
    call cairn_tree_add_json(tree, 'j', '{oops', ierr=status)
    call expect_status(status, CAIRN_ERR_INVALID_ARGUMENT, 'not valid JSON', 'bad JSON')
    call cairn_tree_add_array(tree, 'a', a, global_shape=[6, 4 * size], offset=[0, 4 * rank])
    call cairn_manager_create(manager, comm, dir//'/errors', enable_async=.false.)
    if (size > 1) then
      ! every rank claims the same whole array without replicated=.true.
      call cairn_tree_add_array(tree, 'ov', whole, ierr=status)
      call expect(status == CAIRN_OK, 'add ov')
      call cairn_manager_save(manager, 1_c_int64_t, tree, ierr=status)
      call expect_status(status, CAIRN_ERR_INVALID_ARGUMENT, 'overlap', 'overlapping boxes')
      call cairn_manager_latest_step(manager, step, found)
      call expect(.not. found, 'nothing committed after a failed save')
      call cairn_tree_free(tree)
      call cairn_tree_create(tree)
      call cairn_tree_add_array(tree, 'a', a, global_shape=[6, 4 * size], offset=[0, 4 * rank])
    end if
    call cairn_manager_save(manager, 2_c_int64_t, tree)
    call cairn_tree_create(target)
    call cairn_tree_add_array(target, 'a', wrong, global_shape=[6, 4 * size], offset=[0, 4 * rank])
    call cairn_manager_restore(manager, target, ierr=status)
    call expect_status(status, CAIRN_ERR_INVALID_ARGUMENT, "leaf 'a'", 'wrong dtype')
    call expect(index(cairn_last_error(), 'float32') > 0, 'the message names the dtypes')
    call cairn_manager_restore(manager, target, allow_cast=.true., ierr=status)
    call expect(status == CAIRN_OK .and. all(wrong == 1.0), 'restore with allow_cast')
    call cairn_tree_free(target)
    call cairn_manager_restore_as_saved(manager, target, ierr=status)
    allocate (bad_shape(4, 6))
    call cairn_tree_read_array(target, 'a', bad_shape, ierr=status)
    call expect_status(status, CAIRN_ERR_INVALID_ARGUMENT, 'another shape', 'read wrong shape')
    call cairn_manager_restore(manager, target, step=9_c_int64_t, ierr=status)
    call expect_status(status, CAIRN_ERR_NOT_FOUND, 'step 9', 'missing step')
    call cairn_tree_free(target)
    call cairn_tree_free(tree)
    call cairn_manager_free(manager)
  end subroutine errors

end program test_fortran_manager
