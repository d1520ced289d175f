! Callbacks of test_fortran_parity: a fake clock moved by the test (every rank alike), a
! should_save_fn(step, latest_step), a should_keep_fn, and a custom step name format.
module parity_callbacks
  use, intrinsic :: iso_c_binding
  implicit none
  private
  public :: fake_now, fake_clock, every_third_after_latest, keep_two, build_name, parse_name
  public :: second, funloc

  integer(c_int64_t), parameter :: second = 1000000000_c_int64_t
  integer(c_int64_t) :: fake_now = 1700000000_c_int64_t * second

contains

  ! The address of a callback, by name. Passing c_funloc(f) straight to an argument makes
  ! gfortran put the address in read-only data, which needs a text relocation in a PIE.
  type(c_funptr) function funloc(name) result(fn)
    character(len=*), intent(in) :: name
    select case (name)
    case ('fake_clock')
      fn = c_funloc(fake_clock)
    case ('every_third_after_latest')
      fn = c_funloc(every_third_after_latest)
    case ('keep_two')
      fn = c_funloc(keep_two)
    case ('build_name')
      fn = c_funloc(build_name)
    case ('parse_name')
      fn = c_funloc(parse_name)
    case default
      fn = c_null_funptr
    end select
  end function funloc

  integer(c_int64_t) function fake_clock(user_data) bind(C)
    type(c_ptr), value :: user_data
    fake_clock = fake_now
  end function fake_clock

  ! Saves when nothing was saved yet, or 3 steps after the newest saved step.
  integer(c_int) function every_third_after_latest(step, latest_step, has_latest, user_data) &
      bind(C)
    integer(c_int64_t), value :: step, latest_step
    integer(c_int), value :: has_latest
    type(c_ptr), value :: user_data
    every_third_after_latest = merge(1_c_int, 0_c_int, &
                                     has_latest == 0 .or. step >= latest_step + 3)
  end function every_third_after_latest

  integer(c_int) function keep_two(step, user_data) bind(C)
    integer(c_int64_t), value :: step
    type(c_ptr), value :: user_data
    keep_two = merge(1_c_int, 0_c_int, step == 2)
  end function keep_two

  ! "f<step, 4 digits>".
  integer(c_int) function build_name(step, name, capacity, user_data) bind(C)
    integer(c_int64_t), value :: step
    character(kind=c_char), intent(out) :: name(*)
    integer(c_size_t), value :: capacity
    type(c_ptr), value :: user_data
    character(len=16) :: text
    integer :: i
    build_name = 1
    if (step > 9999 .or. capacity < 6) return
    write (text, '(a,i4.4)') 'f', step
    do i = 1, 5
      name(i) = text(i:i)
    end do
    name(6) = c_null_char
    build_name = 0
  end function build_name

  integer(c_int) function parse_name(name, step, user_data) bind(C)
    character(kind=c_char), intent(in) :: name(*)
    integer(c_int64_t), intent(out) :: step
    type(c_ptr), value :: user_data
    integer :: i, digit
    parse_name = 0
    step = 0
    if (name(1) /= 'f' .or. name(6) /= c_null_char) return
    do i = 2, 5
      digit = iachar(name(i)) - iachar('0')
      if (digit < 0 .or. digit > 9) return
      step = step * 10 + digit
    end do
    parse_name = 1
  end function parse_name

end module parity_callbacks

! The options of Orbax's and CLU's managers from Fortran, one scenario per ctest case (first
! command-line argument): the injectable clock, should_save(step, latest_step), CLU's and
! custom step names, the EveryNSteps / EveryNStepsClosest / LatestDuration policies,
! should_keep_fn, restore from another root, the user's root metadata with
! save_root_metadata and lightweight_initialize, prevent_write_metrics, the plain
! checkpointers, the restore of a given multihost step and keep_time_interval on the fake
! clock. Exits non-zero on any failure.
program test_fortran_parity
  use, intrinsic :: iso_c_binding
  use mpi
  use cairn
  use fortran_test
  use parity_callbacks
  implicit none

  integer :: rank, size
  type(cairn_comm) :: comm
  character(len=:), allocatable :: dir
  character(len=64) :: scenario

  call begin_scenario('cairn-fortran-parity-', comm, rank, size, scenario, dir)

  select case (trim(scenario))
  case ('clock')
    call clock_scenario()
  case ('should_save_latest')
    call should_save_latest()
  case ('step_names')
    call step_names()
  case ('policies')
    call policies()
  case ('should_keep')
    call should_keep()
  case ('restore_from')
    call restore_from()
  case ('root_metadata')
    call root_metadata()
  case ('prevent_write_metrics')
    call prevent_write_metrics()
  case ('checkpointers')
    call checkpointers()
  case ('multihost_restore')
    call multihost_restore()
  case ('keep_time_interval')
    call keep_time_interval()
  case ('incremental')
    call incremental()
  case ('local_level')
    call local_level()
  case default
    call expect(.false., 'unknown scenario "'//trim(scenario)//'"')
  end select

  call end_scenario('test_fortran_parity', comm, rank, size, scenario, dir)

contains

  ! Saves `step` with value `step` (and `metrics`); returns whether it saved.
  logical function save_step(manager, step, metrics) result(saved)
    type(cairn_manager), intent(inout) :: manager
    integer(c_int64_t), intent(in) :: step
    character(len=*), intent(in), optional :: metrics
    type(cairn_tree) :: tree
    real(c_double), target :: x(1)
    call make_field(tree, x, real(step, c_double))
    call cairn_manager_save(manager, step, tree, saved, metrics=metrics)
    call cairn_manager_wait_until_finished(manager)
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

  ! The value restored from `step` of `manager`.
  real(c_double) function restored(manager, step)
    type(cairn_manager), intent(inout) :: manager
    integer(c_int64_t), intent(in) :: step
    type(cairn_tree) :: tree
    real(c_double), target :: x(1)
    call make_field(tree, x, -1.0_c_double)
    call cairn_manager_restore(manager, tree, step=step)
    restored = x(1)
    call cairn_tree_free(tree)
  end function restored

  subroutine clock_scenario()
    type(cairn_manager) :: manager
    type(cairn_save_policy) :: every_10s
    character(len=:), allocatable :: json
    character(len=32) :: t0
    logical :: flag
    call cairn_save_policy_continuous(every_10s, 10_c_int64_t)
    call cairn_manager_create(manager, comm, dir//'/clock', save_decision_policy=every_10s, &
                              enable_async=.false., clock=funloc('fake_clock'))
    call cairn_save_policy_free(every_10s)
    call expect(save_step(manager, 0_c_int64_t), 'the first step is saved')
    write (t0, '(i0)') fake_now
    call cairn_manager_step_metadata(manager, 0_c_int64_t, json)
    call expect(index(json, trim(t0)) > 0, 'the step time is the fake clock''s: '//json)
    fake_now = fake_now + 9 * second
    call cairn_manager_should_save(manager, 1_c_int64_t, flag)
    call expect(.not. flag, '9 s after the last save: no save')
    fake_now = fake_now + second
    call expect(save_step(manager, 2_c_int64_t), '10 s after the last save: saved')
    call expect(steps_are(manager, [0_c_int64_t, 2_c_int64_t]), 'steps 0 and 2')
    call cairn_manager_free(manager)
  end subroutine clock_scenario

  subroutine should_save_latest()
    type(cairn_manager) :: manager
    type(cairn_save_policy) :: policy
    character(len=:), allocatable :: text
    integer(c_int64_t) :: step
    logical :: saved
    type(c_funptr) :: fn
    fn = funloc('every_third_after_latest')
    call cairn_manager_create(manager, comm, dir//'/latest', enable_async=.false., &
                              should_save_latest_fn=fn)
    do step = 0, 7
      saved = save_step(manager, step)
    end do
    call expect(steps_are(manager, [0_c_int64_t, 3_c_int64_t, 6_c_int64_t]), 'steps 0, 3, 6')
    call cairn_manager_free(manager)
    call cairn_save_policy_fn_latest(policy, fn)
    call cairn_save_policy_describe(policy, text)
    call expect(index(text, 'ShouldSaveFn') > 0, 'the policy of should_save_fn: '//text)
    call cairn_save_policy_free(policy)
  end subroutine should_save_latest

  subroutine step_names()
    type(cairn_manager) :: manager
    character(len=:), allocatable :: json
    character(len=32) :: suffix
    logical :: there
    call cairn_manager_create(manager, comm, dir//'/clu', enable_async=.false., &
                              step_name_format=CAIRN_STEP_NAME_CLU)
    call expect(save_step(manager, 3_c_int64_t), 'CLU step saved')
    call cairn_manager_free(manager)
    inquire (file=dir//'/clu/ckpt-3/COMMITTED', exist=there)
    call expect(there, 'CLU step name ckpt-3')
    call cairn_manager_create(manager, comm, dir//'/custom', enable_async=.false., &
                              step_name_format=CAIRN_STEP_NAME_CUSTOM, &
                              step_name_build=funloc('build_name'), &
                              step_name_parse=funloc('parse_name'), &
                              step_name_description='f<step>')
    call expect(save_step(manager, 7_c_int64_t), 'custom step saved')
    call cairn_manager_root_metadata(manager, json)
    call expect(index(json, 'f<step>') > 0, 'the format is described: '//json)
    call cairn_manager_free(manager)
    write (suffix, '(a)') '/custom/f0007/COMMITTED'
    inquire (file=dir//trim(suffix), exist=there)
    call expect(there, 'custom step name f0007')
    call cairn_manager_create(manager, comm, dir//'/custom', enable_async=.false., &
                              step_name_format=CAIRN_STEP_NAME_CUSTOM, &
                              step_name_build=funloc('build_name'), &
                              step_name_parse=funloc('parse_name'))
    call expect(steps_are(manager, [7_c_int64_t]), 'the custom step is listed')
    call expect(restored(manager, 7_c_int64_t) == 7.0_c_double, 'the custom step restores')
    call cairn_manager_free(manager)
  end subroutine step_names

  ! Saves `steps`, 60 s apart on the fake clock, with `policy`; whether `kept` remain.
  logical function keeps(name, policy, steps, kept)
    character(len=*), intent(in) :: name
    type(cairn_preservation_policy), intent(in) :: policy
    integer(c_int64_t), intent(in) :: steps(:), kept(:)
    type(cairn_manager) :: manager
    integer :: i
    call cairn_manager_create(manager, comm, dir//'/'//name, enable_async=.false., &
                              clock=funloc('fake_clock'), preservation_policy=policy)
    do i = 1, ubound(steps, 1)
      call expect(save_step(manager, steps(i)), name//': saved')
      fake_now = fake_now + 60 * second
    end do
    keeps = steps_are(manager, kept)
    call cairn_manager_free(manager)
  end function keeps

  subroutine policies()
    type(cairn_preservation_policy) :: p
    call cairn_preservation_policy_every_n_steps_ex(p, 3_c_int64_t, exact_interval=.false.)
    call expect(keeps('inexact', p, [0_c_int64_t, 2_c_int64_t, 4_c_int64_t, 5_c_int64_t, &
                                     7_c_int64_t, 9_c_int64_t], &
                      [0_c_int64_t, 4_c_int64_t, 7_c_int64_t, 9_c_int64_t]), &
                'EveryNSteps(3, exact_interval=.false.) keeps 0, 4, 7, 9')
    call cairn_preservation_policy_free(p)
    call cairn_preservation_policy_every_n_steps_closest(p, 4_c_int64_t)
    call expect(keeps('closest', p, [0_c_int64_t, 3_c_int64_t, 5_c_int64_t, 9_c_int64_t], &
                      [0_c_int64_t, 5_c_int64_t, 9_c_int64_t]), &
                'EveryNStepsClosest(4) keeps 0, 5, 9')
    call cairn_preservation_policy_free(p)
    call cairn_preservation_policy_latest_duration(p, 100_c_int64_t, clock=funloc('fake_clock'))
    call expect(keeps('duration', p, [0_c_int64_t, 1_c_int64_t, 2_c_int64_t], &
                      [1_c_int64_t, 2_c_int64_t]), 'LatestDuration(100 s) keeps 1, 2')
    call cairn_preservation_policy_free(p)
  end subroutine policies

  ! keep_time_interval on the fake clock: steps 0 to 5 saved 60 s apart, max_to_keep 1; one step
  ! per 100 s window is kept besides the newest. On the system clock (saves within a second)
  ! the steps share one window and only 0 and 5 would remain.
  subroutine keep_time_interval()
    type(cairn_manager) :: manager
    integer(c_int64_t) :: step
    call cairn_manager_create(manager, comm, dir//'/time_interval', enable_async=.false., &
                              clock=funloc('fake_clock'), max_to_keep=1, &
                              keep_time_interval=100_c_int64_t)
    do step = 0, 5
      call expect(save_step(manager, step), 'keep_time_interval: saved')
      fake_now = fake_now + 60 * second
    end do
    call expect(steps_are(manager, [0_c_int64_t, 2_c_int64_t, 4_c_int64_t, 5_c_int64_t]), &
                'keep_time_interval 100 s keeps 0, 2, 4 and the newest, 5')
    call cairn_manager_free(manager)
  end subroutine keep_time_interval

  subroutine should_keep()
    type(cairn_manager) :: manager
    type(cairn_preservation_policy) :: p
    integer(c_int64_t) :: step
    call cairn_manager_create(manager, comm, dir//'/keep', enable_async=.false., max_to_keep=1, &
                              should_keep_fn=funloc('keep_two'))
    do step = 0, 4
      call expect(save_step(manager, step), 'saved')
    end do
    call expect(steps_are(manager, [2_c_int64_t, 4_c_int64_t]), &
                'max_to_keep=1 and should_keep_fn keep 2 and 4')
    call cairn_manager_free(manager)
    call cairn_preservation_policy_fn(p, funloc('keep_two'))
    call expect(keeps('keep_policy', p, [0_c_int64_t, 1_c_int64_t, 2_c_int64_t, 3_c_int64_t], &
                      [2_c_int64_t, 3_c_int64_t]), 'the policy of should_keep_fn keeps 2, 3')
    call cairn_preservation_policy_free(p)
  end subroutine should_keep

  subroutine restore_from()
    type(cairn_manager) :: a, b
    type(cairn_tree) :: tree
    real(c_double), target :: x(1)
    integer :: status
    integer(c_int64_t), allocatable :: steps(:)
    call cairn_manager_create(a, comm, dir//'/pretrained', enable_async=.false.)
    call expect(save_step(a, 5_c_int64_t), 'saved')
    call expect(save_step(a, 6_c_int64_t), 'saved')
    call cairn_manager_free(a)
    call cairn_manager_create(b, comm, dir//'/finetune')
    call make_field(tree, x, -1.0_c_double)
    call cairn_manager_restore_from(b, dir//'/pretrained', tree, step=5_c_int64_t)
    call expect(x(1) == 5.0_c_double, 'step 5 of the other root')
    call cairn_manager_restore_from(b, dir//'/pretrained', tree)
    call expect(x(1) == 6.0_c_double, 'the newest step of the other root')
    call cairn_manager_restore_from(b, dir//'/pretrained', tree, step=9_c_int64_t, ierr=status)
    call expect_status(status, CAIRN_ERR_NOT_FOUND, '9', 'a step the other root lacks')
    call cairn_manager_all_steps(b, steps, reload=.true.)
    call expect(ubound(steps, 1) == 0, 'nothing written to the manager''s root')
    call cairn_tree_free(tree)
    call cairn_manager_free(b)
  end subroutine restore_from

  subroutine root_metadata()
    type(cairn_manager) :: manager
    character(len=:), allocatable :: json
    logical :: there, found
    integer(c_int64_t) :: step
    call cairn_manager_create(manager, comm, dir//'/meta', enable_async=.false., &
                              metadata='{"run": "r1"}')
    call expect(save_step(manager, 1_c_int64_t), 'saved')
    call cairn_manager_root_metadata(manager, json)
    call expect(index(json, '"user":{"run":"r1"}') > 0, 'the user''s metadata: '//json)
    call cairn_manager_free(manager)
    inquire (file=dir//'/meta/cairn-root.json', exist=there)
    call expect(there, 'cairn-root.json written')
    call cairn_manager_create(manager, comm, dir//'/meta', metadata='{"run": "r2"}', &
                              lightweight_initialize=.true.)
    call cairn_manager_root_metadata(manager, json)
    call expect(index(json, '"run":"r1"') > 0, 'the first manager''s metadata stays: '//json)
    call cairn_manager_latest_step(manager, step, found)
    call expect(found .and. step == 1, 'lightweight_initialize lists the steps')
    call cairn_manager_free(manager)
    call cairn_manager_create(manager, comm, dir//'/unsaved', metadata='{"run": "r3"}', &
                              save_root_metadata=.false.)
    call cairn_manager_root_metadata(manager, json)
    call expect(json == '{}', 'no root metadata without a file (as Orbax): '//json)
    call cairn_manager_free(manager)
    inquire (file=dir//'/unsaved/cairn-root.json', exist=there)
    call expect(.not. there, 'save_root_metadata=.false. writes no cairn-root.json')
  end subroutine root_metadata

  subroutine prevent_write_metrics()
    type(cairn_manager) :: manager
    character(len=:), allocatable :: json
    logical :: found
    integer(c_int64_t) :: step
    call cairn_manager_create(manager, comm, dir//'/metrics', enable_async=.false., &
                              max_to_keep=2, best_metric='loss', best_mode=CAIRN_BEST_MIN, &
                              prevent_write_metrics=.true.)
    call expect(save_step(manager, 0_c_int64_t, '{"loss": 3}'), 'saved')
    call expect(save_step(manager, 1_c_int64_t, '{"loss": 1}'), 'saved')
    call expect(save_step(manager, 2_c_int64_t, '{"loss": 2}'), 'saved')
    call cairn_manager_best_step(manager, step, found)
    call expect(found .and. step == 1, 'the best step while the manager holds the metrics')
    ! retention ranked by them too (steps_are reloads: they are gone from here on)
    call expect(steps_are(manager, [1_c_int64_t, 2_c_int64_t]), 'ranked by the metrics held')
    call cairn_manager_step_metadata(manager, 1_c_int64_t, json)
    call expect(index(json, '"metrics":{}') > 0, 'no metrics written: '//json)
    call cairn_manager_free(manager)
    call cairn_manager_create(manager, comm, dir//'/metrics', best_metric='loss')
    call cairn_manager_metrics(manager, 1_c_int64_t, json)
    call expect(json == '{}', 'a later manager finds no metrics: '//json)
    call cairn_manager_best_step(manager, step, found)
    call expect(.not. found, 'no best step without metrics on disk')
    call cairn_manager_free(manager)
  end subroutine prevent_write_metrics

  ! incremental=.true.: each step changes the first of the 8 checksum chunks of every rank's
  ! block, so a step refers to the 7 others in the step before; retention deletes the older
  ! steps, and the newest restores exactly.
  subroutine incremental()
    integer, parameter :: n = 4096
    type(cairn_manager) :: manager
    type(cairn_tree) :: tree
    real(c_double), target :: u(n)
    character(len=:), allocatable :: json
    character(len=64) :: expected
    logical :: saved
    integer :: step, i
    call cairn_manager_create(manager, comm, dir//'/incremental', enable_async=.false., &
                              max_to_keep=1, incremental=.true.)
    call cairn_tree_create(tree)
    call cairn_tree_add_array(tree, 'u', u, global_shape=[n * size], offset=[rank * n])
    do step = 0, 2
      do i = 1, n
        u(i) = 1.0e6_c_double * rank + i
        if (i <= n / 8) u(i) = u(i) + 0.5_c_double * step
      end do
      call cairn_manager_save(manager, int(step, c_int64_t), tree, saved, &
                              checksum_chunk_bytes=4096_c_size_t)
      call expect(saved, 'saved')
    end do
    call expect(steps_are(manager, [2_c_int64_t]), 'retention kept the newest step')
    call cairn_manager_item_metadata(manager, 2_c_int64_t, json)
    write (expected, '(a, i0)') '"referenced_bytes":', 7 * 4096 * size
    call expect(index(json, trim(expected)) > 0, '7 of 8 chunks in earlier steps: '//json)
    u = -1.0_c_double
    call cairn_manager_restore(manager, tree, step=2_c_int64_t)
    do i = 1, n
      if (i <= n / 8) then
        call expect(u(i) == 1.0e6_c_double * rank + i + 1.0_c_double, 'a changed value')
      else
        call expect(u(i) == 1.0e6_c_double * rank + i, 'an unchanged value')
      end if
    end do
    call cairn_tree_free(tree)
    call cairn_manager_free(manager)
  end subroutine incremental

  ! local_dir=: every save goes to a node-local directory per rank (ranks_per_node=1) with
  ! partner copies, every second one is drained to the root; a manager without the level sees
  ! the drained step only, and the local level serves the newest step.
  subroutine local_level()
    type(cairn_manager) :: manager, plain
    type(cairn_tree) :: tree
    real(c_double), target :: x(1)
    character(len=:), allocatable :: redundancy
    logical :: saved
    integer :: step
    redundancy = 'none'
    if (size > 1) redundancy = 'partner'
    call cairn_manager_create(manager, comm, dir//'/levels', local_dir=dir//'/local{node}', &
                              local_redundancy=redundancy, local_keep=2, &
                              persistent_every=2_c_int64_t, drain_at_close=.false., &
                              ranks_per_node=1)
    do step = 1, 3
      call make_field(tree, x, real(step, c_double))
      call cairn_manager_save(manager, int(step, c_int64_t), tree, saved)
      call expect(saved, 'saved')
      call cairn_tree_free(tree)
    end do
    call cairn_manager_wait_until_finished(manager)
    call expect(steps_are(manager, [2_c_int64_t, 3_c_int64_t]), 'local steps 2 and 3')
    call cairn_manager_create(plain, comm, dir//'/levels', read_only=.true.)
    call expect(steps_are(plain, [2_c_int64_t]), 'step 2 drained to the root')
    call cairn_manager_free(plain)
    call expect(restored(manager, 3_c_int64_t) == 3.0_c_double, 'step 3 from the local level')
    call cairn_manager_free(manager)
  end subroutine local_level

  subroutine checkpointers()
    type(cairn_checkpointer) :: sync, async
    type(cairn_tree) :: tree
    real(c_double), target :: x(1)
    character(len=:), allocatable :: json
    logical :: busy
    integer :: status
    call cairn_checkpointer_create(sync, comm)
    call make_field(tree, x, 1.0_c_double)
    call cairn_checkpointer_save(sync, dir//'/plain', tree, custom_metadata='{"origin": "f"}')
    call cairn_checkpointer_save(sync, dir//'/plain', tree, ierr=status)
    call expect_status(status, CAIRN_ERR_INVALID_ARGUMENT, 'already exists', 'a second save')
    x = 2.0_c_double
    call cairn_checkpointer_save(sync, dir//'/plain', tree, custom_metadata='{"origin": "f"}', &
                                 force=.true.)
    x = -1.0_c_double
    call cairn_checkpointer_restore(sync, dir//'/plain', tree)
    call expect(x(1) == 2.0_c_double, 'the forced save replaced the checkpoint')
    call cairn_checkpointer_metadata(sync, dir//'/plain', json)
    call expect(index(json, 'cairn.array_tree') > 0 .and. index(json, '"origin":"f"') > 0, &
                'the step metadata: '//json)
    call cairn_checkpointer_create(async, comm, async=.true.)
    x = 3.0_c_double
    call cairn_checkpointer_save(async, dir//'/async', tree)
    x = 99.0_c_double  ! the save staged a copy
    call cairn_checkpointer_wait_until_finished(async)
    call cairn_checkpointer_is_saving_in_progress(async, busy)
    call expect(.not. busy, 'no save in flight after wait_until_finished')
    call cairn_checkpointer_restore(sync, dir//'/async', tree)
    call expect(x(1) == 3.0_c_double, 'the asynchronous save has the value at the call')
    call cairn_checkpointer_free(async)
    call cairn_checkpointer_free(sync)
    call cairn_tree_free(tree)
  end subroutine checkpointers

  subroutine multihost_restore()
    type(cairn_multihost) :: mh
    type(cairn_tree) :: tree
    real(c_double), target :: x(1)
    integer :: status
    call cairn_multihost_create(mh, comm, dir//'/mh')
    call make_field(tree, x, 1.0_c_double)
    call cairn_multihost_save(mh, 1_c_int64_t, tree)
    x = 2.0_c_double
    call cairn_multihost_save(mh, 2_c_int64_t, tree)
    x = -1.0_c_double
    call cairn_multihost_restore(mh, 1_c_int64_t, tree)
    call expect(x(1) == 1.0_c_double, 'step 1 restored')
    call cairn_multihost_restore(mh, 5_c_int64_t, tree, ierr=status)
    call expect_status(status, CAIRN_ERR_NOT_FOUND, '5', 'a step no process has')
    call cairn_multihost_free(mh)
    call cairn_tree_free(tree)
  end subroutine multihost_restore

end program test_fortran_parity
