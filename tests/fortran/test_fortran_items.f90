! Bytes items, custom metadata per item, empty tree nodes and checkpointers of composites from
! Fortran: each scenario saves, restores and compares what it saved. One ctest case per
! scenario. Exits non-zero on any failure.
program test_fortran_items
  use, intrinsic :: iso_c_binding
  use mpi
  use cairn
  use fortran_test
  implicit none

  integer :: rank, size
  type(cairn_comm) :: comm
  character(len=:), allocatable :: dir
  character(len=64) :: scenario

  call begin_scenario('cairn-fortran-items-', comm, rank, size, scenario, dir)

  select case (trim(scenario))
  case ('bytes')
    call bytes()
  case ('item_metadata')
    call item_metadata()
  case ('empty_nodes')
    call empty_nodes()
  case ('checkpointer_items')
    call checkpointer_items()
  case default
    call expect(.false., 'unknown scenario "'//trim(scenario)//'"')
  end select

  call end_scenario('test_fortran_items', comm, rank, size, scenario, dir)

contains

  ! The bytes rank `r` serializes: its number and r+1 doubles, of a length that differs per rank.
  function payload(r) result(data)
    integer, intent(in) :: r
    integer(c_int8_t), allocatable :: data(:)
    real(c_double) :: values(r + 1)
    integer :: i
    values = [(real(100 * r + i, c_double), i = 1, r + 1)]
    data = [transfer(r, [0_c_int8_t]), transfer(values, [0_c_int8_t])]
  end function payload

  subroutine expect_bytes(items, name, want)
    type(cairn_items), intent(in) :: items
    character(len=*), intent(in) :: name
    integer(c_int8_t), intent(in) :: want(:)
    integer(c_int8_t), allocatable :: got(:)
    call cairn_items_get_bytes(items, name, got)
    call expect(ubound(got, 1) == ubound(want, 1), 'the length of the bytes of '//name)
    call expect(all(got == want), 'the bytes of '//name)
  end subroutine expect_bytes

  subroutine expect_metadata(items, name, want)
    type(cairn_items), intent(in) :: items
    character(len=*), intent(in) :: name, want
    character(len=:), allocatable :: json
    call cairn_items_get_metadata(items, name, json)
    call expect(json == want, 'the metadata of '//name//': '//json)
  end subroutine expect_metadata

  ! Per-rank and replicated bytes through a manager; this rank's and the neighbour's.
  subroutine bytes()
    type(cairn_manager) :: m
    type(cairn_items) :: items
    integer :: status
    character(len=*), parameter :: text = 'the same on every rank'
    integer(c_int8_t) :: shared(len(text))
    shared = transfer(text, shared)
    call cairn_manager_create(m, comm, dir//'/run')
    call cairn_items_create(items)
    call cairn_items_add_bytes(items, 'state', payload(rank))
    call cairn_items_add_bytes(items, 'shared', shared, replicated=.true.)
    call cairn_manager_save_items(m, 1_c_int64_t, items)
    call cairn_manager_wait_until_finished(m)
    call cairn_items_free(items)

    call cairn_items_create(items)
    call cairn_items_add_bytes_target(items, 'state')
    call cairn_items_add_bytes_target(items, 'shared')
    call cairn_manager_restore_items(m, items, step=1_c_int64_t)
    call expect_bytes(items, 'state', payload(rank))
    call expect_bytes(items, 'shared', shared)
    call cairn_items_free(items)

    call cairn_items_create(items)
    call cairn_items_add_bytes_target(items, 'state', from_rank=mod(rank + 1, size))
    call cairn_manager_restore_items(m, items)
    call expect_bytes(items, 'state', payload(mod(rank + 1, size)))
    call cairn_items_free(items)
    call cairn_items_create(items)
    call cairn_items_add_bytes_target(items, 'state', from_rank=size)
    call cairn_manager_restore_items(m, items, ierr=status)
    call expect_status(status, CAIRN_ERR_NOT_FOUND, 'rank', 'bytes of a rank the save lacked')
    call cairn_items_free(items)
    call cairn_manager_free(m)
  end subroutine bytes

  ! Custom metadata per item, saved with a step and given back by a restore of the item.
  subroutine item_metadata()
    type(cairn_manager) :: m
    type(cairn_items) :: items
    type(cairn_tree) :: field
    real(c_double), target :: x(1)
    character(len=32) :: meta
    integer :: status
    write (meta, '(a,i0,a)') '{"units":"m","ranks":', size, '}'
    call make_field(field, x, 2.5_c_double)
    call cairn_manager_create(m, comm, dir//'/run')
    call cairn_items_create(items)
    call cairn_items_add_tree(items, 'field', field)
    call cairn_items_add_json(items, 'config', '{"dt": 1}')
    call cairn_items_set_metadata(items, 'field', trim(meta))
    call cairn_items_set_metadata(items, 'missing', '{}', ierr=status)
    call expect_status(status, CAIRN_ERR_NOT_FOUND, 'missing', 'metadata of an unknown item')
    call cairn_manager_save_items(m, 3_c_int64_t, items)
    call cairn_manager_wait_until_finished(m)
    call cairn_items_free(items)

    x = -1.0_c_double
    call cairn_items_create(items)
    call cairn_items_add_tree(items, 'field', field)
    call cairn_items_add_json(items, 'config')
    call cairn_manager_restore_items(m, items)
    call expect(x(1) == 2.5_c_double, 'the field restored')
    call expect_metadata(items, 'field', trim(meta))
    call expect_metadata(items, 'config', '{}')
    call cairn_items_free(items)
    call cairn_tree_free(field)
    call cairn_manager_free(m)
  end subroutine item_metadata

  ! Empty groups and lists round-trip through a save and a restore as saved.
  subroutine empty_nodes()
    type(cairn_manager) :: m
    type(cairn_tree) :: tree, back
    real(c_double), target :: x(1)
    character(len=:), allocatable :: path
    integer :: count, kind
    call make_field(tree, x, 1.0_c_double)
    call cairn_tree_add_empty(tree, 'optimizer/state')
    call cairn_tree_add_empty(tree, 'history', CAIRN_EMPTY_LIST)
    call cairn_manager_create(m, comm, dir//'/run')
    call cairn_manager_save(m, 1_c_int64_t, tree)
    call cairn_manager_wait_until_finished(m)
    call cairn_manager_restore_as_saved(m, back, step=1_c_int64_t)
    call cairn_tree_empty_count(back, count)
    call expect(count == 2, 'two empty nodes restored')
    call cairn_tree_empty_node(back, 1, path, kind)
    call expect(path == 'history' .and. kind == CAIRN_EMPTY_LIST, 'the empty list: '//path)
    call cairn_tree_empty_node(back, 2, path, kind)
    call expect(path == 'optimizer/state' .and. kind == CAIRN_EMPTY_GROUP, &
                'the empty group: '//path)
    call cairn_tree_free(back)
    call cairn_tree_free(tree)
    call cairn_manager_free(m)
  end subroutine empty_nodes

  ! A checkpointer of composites: a tree and bytes with metadata, restored and compared.
  subroutine checkpointer_items()
    type(cairn_checkpointer) :: c
    type(cairn_items) :: items
    type(cairn_tree) :: field
    real(c_double), target :: x(1)
    character(len=:), allocatable :: json
    call make_field(field, x, 4.0_c_double)
    call cairn_checkpointer_create_composite(c, comm, async=.true.)
    call cairn_items_create(items)
    call cairn_items_add_tree(items, 'field', field)
    call cairn_items_add_bytes(items, 'blob', payload(rank))
    call cairn_items_set_metadata(items, 'blob', '{"v":2}')
    call cairn_checkpointer_save_items(c, dir//'/ckpt', items, custom_metadata='{"origin":"f"}')
    call cairn_checkpointer_wait_until_finished(c)
    call cairn_items_free(items)

    x = -1.0_c_double
    call cairn_items_create(items)
    call cairn_items_add_tree(items, 'field', field)
    call cairn_items_add_bytes_target(items, 'blob')
    call cairn_checkpointer_restore_items(c, dir//'/ckpt', items)
    call expect(x(1) == 4.0_c_double, 'the field restored')
    call expect_bytes(items, 'blob', payload(rank))
    call expect_metadata(items, 'blob', '{"v":2}')
    call cairn_checkpointer_metadata(c, dir//'/ckpt', json)
    call expect(index(json, 'cairn.composite') > 0 .and. index(json, '"origin":"f"') > 0, &
                'the step metadata: '//json)
    call cairn_items_free(items)
    call cairn_checkpointer_free(c)
    call cairn_tree_free(field)
  end subroutine checkpointer_items

end program test_fortran_items
