#!/usr/bin/env bash
# Tests of taking data out of cairn checkpoints with the command-line tool: `cairn dump --npy`
# and `--raw` (checked with numpy against h5py and the numpy reader of posix checkpoints, for
# checkpoints saved on 1 and 4 ranks, exported on 1 and 3), glob patterns of leaves in `dump`
# and `inspect`, `inspect -D` (each writer's block), and `convert --compression`.
#
#   cli_export_test.sh CASE HEAT2D CAIRN MPIEXEC "MPIEXEC FLAGS" WORKDIR HAVE_HDF5
# CASE: npy glob decomposition convert_compression
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
source "$here/cli_common.sh"
cli_args "$@"
enter_work
samples="$here/../data/v1"
reader_dir="$here/../../scripts"

# py NAME CODE: runs CODE with Debian's python3 (numpy, h5py); a failure is counted.
py() {
  local name="$1"
  shift
  /usr/bin/python3 -c "$1" >"$name.out" 2>&1 || { fail "$name"; sed 's/^/    /' "$name.out"; }
}

case "$case_name" in
npy)
  formats=posix
  [ "$have_hdf5" = 1 ] && formats="posix hdf5"
  for f in $formats; do
    for n in 1 4; do
      simulate "$f$n" "$n" "$f"
      for m in 1 3; do
        run "npy-$f$n-$m" 0 mpi "$m" "$cairn" dump -q "$f$n/30" field/u --npy "$f$n-$m.npy"
        run "slice-$f$n-$m" 0 mpi "$m" "$cairn" dump -q "$f$n/30" field/u --slice 38:,-3 \
          --npy "$f$n-$m-slice.npy"
        run "raw-$f$n-$m" 0 mpi "$m" "$cairn" dump -q "$f$n/30" field/u --slice 1:39 \
          --raw "$f$n-$m.raw"
      done
      expect "npy-$f$n-3" "wrote field/u float64 (40, 48)"
    done
  done
  # The independent readers: h5py reads data.h5, cairn_posix_reader.py the posix files.
  py npy-values "
import sys; sys.path.insert(0, '$reader_dir')
import numpy as np, cairn_posix_reader as reader
refs = {'posix%d' % n: reader.read_checkpoint('posix%d/30' % n)['field']['u'] for n in (1, 4)}
if '$have_hdf5' == '1':
    import h5py
    for n in (1, 4):
        refs['hdf5%d' % n] = h5py.File('hdf5%d/30/field/data.h5' % n, 'r')['u'][...]
assert len(refs) == (4 if '$have_hdf5' == '1' else 2)
for name, ref in refs.items():
    assert ref.shape == (40, 48) and ref.dtype == np.float64 and ref.max() == 1.0, name
    for m in (1, 3):
        a = np.load('%s-%d.npy' % (name, m))
        assert a.shape == (40, 48) and a.dtype == np.dtype('<f8'), (name, m, a.shape, a.dtype)
        assert np.array_equal(a, ref), (name, m)
        s = np.load('%s-%d-slice.npy' % (name, m))
        assert s.shape == (2, 1) and np.array_equal(s, ref[38:, 45:46]), (name, m, s)
        r = np.fromfile('%s-%d.raw' % (name, m), dtype='<f8')
        assert r.size == 38 * 48 and np.array_equal(r.reshape(38, 48), ref[1:39]), (name, m)
print('ok')"
  # Other dtypes, a replicated leaf and a leaf of 2 writers: the format-version-1 samples.
  for f in $formats; do
    for m in 1 2; do
      for leaf in particles/ids mesh/weights fields/temperature; do
        name="v1-$f-$m-${leaf%%/*}"
        run "$name" 0 mpi "$m" "$cairn" dump -q "$samples/$f" "$leaf" --npy "$name.npy"
      done
    done
  done
  py v1-values "
import numpy as np
for f in '$formats'.split():
    for m in (1, 2):
        ids = np.load('v1-%s-%d-particles.npy' % (f, m))
        assert ids.dtype == np.dtype('<i4') and ids.tolist() == [-30, -20, -10, 0, 10, 20, 30], ids
        w = np.load('v1-%s-%d-mesh.npy' % (f, m))
        assert w.dtype == np.dtype('<f4') and w.tolist() == [1, 1.25, 1.5, 1.75], w
        t = np.load('v1-%s-%d-fields.npy' % (f, m))
        want = np.array([[100 * i + j for j in range(5)] for i in range(6)], dtype='<f8')
        assert t.dtype == want.dtype and np.array_equal(t, want), t
print('ok')"
  # What cannot be exported is refused, naming the leaf or the file; nothing is lost.
  src=posix1/30
  run no-leaf 2 "$cairn" dump "$src" field/v --npy x.npy
  expect no-leaf "no leaf 'field/v'"
  run not-array 2 "$cairn" dump "$src" field/step --npy x.npy
  expect not-array "'field/step' is a scalar leaf, not an array"
  run json-item 2 "$cairn" dump "$src" run --npy x.npy
  expect json-item "'run' is a JSON item"
  run several 2 "$cairn" dump "$src" field --npy x.npy
  expect several "2 leaves were chosen (field/step, field/u)"
  run none-named 2 "$cairn" dump "$src" --raw x.raw
  expect none-named "name its leaf"
  # An empty file name is a usage error, not the whole array printed to stdout.
  for flag in --npy --raw; do
    run "empty$flag" 2 "$cairn" dump "$src" field/u "$flag" ''
    expect "empty$flag" "the file name is empty"; reject "empty$flag" "(0,0)"
  done
  [ ! -e x.npy ] && [ ! -e x.raw ] || fail "a refused export left a file"
  run no-dir 2 "$cairn" dump "$src" field/u --npy missing/u.npy
  expect no-dir "cannot write 'missing/u.npy'"
  mkdir a-dir
  run is-dir 2 "$cairn" dump "$src" field/u --npy a-dir
  expect is-dir "'a-dir' is a directory"
  echo "keep me" >kept.npy
  run exists 2 mpi 2 "$cairn" dump "$src" field/u --npy kept.npy
  expect exists "'kept.npy' already exists; pass --force"
  [ "$(cat kept.npy)" = "keep me" ] || fail "dump --npy changed an existing file without --force"
  run bad-slice 2 "$cairn" dump --force "$src" field/u --npy kept.npy --slice 0:100
  [ "$(cat kept.npy)" = "keep me" ] || fail "a failed dump --force replaced the file"
  run forced 0 mpi 2 "$cairn" dump --force "$src" field/u --npy kept.npy --slice 0
  py forced-values "
import numpy as np
a = np.load('kept.npy'); assert a.shape == (1, 48) and np.array_equal(a, np.load('posix1-1.npy')[0:1])
print('ok')"
  run both 2 "$cairn" dump "$src" field/u --npy y.npy --raw y.raw
  run_json_out() { "$@" >json.out 2>json.err || fail "json: $*"; }
  run_json_out "$cairn" dump --json "$src" field/u --npy j.npy --slice 0:2
  json_check json "d['leaf'] == 'field/u' and d['file'] == 'j.npy' and d['file_format'] == 'npy' and d['slice']['extent'] == [2, 48] and d['file_bytes'] == 128 + 2 * 48 * 8"
  leftovers=$(find . -name '*.cairn-tmp*')
  [ -z "$leftovers" ] || fail "temporary files left: $leftovers"
  ;;

glob)
  simulate p 2 posix
  names() {  # names NAME PATTERN...: the leaves `dump --json --stats` chooses, into NAME.out
    local name="$1"
    shift
    "$cairn" dump --json --stats p/30 "$@" >"$name.out" 2>&1 || fail "$name: dump $*"
  }
  names star 'field/*'
  json_check star "[l['leaf'] for l in d['leaves']] == ['field/step', 'field/u']"
  names item-star '*/u'
  json_check item-star "[l['leaf'] for l in d['leaves']] == ['field/u']"
  names question 'f?eld/[su]*'
  json_check question "[l['leaf'] for l in d['leaves']] == ['field/step', 'field/u']"
  names class 'field/[!s]'
  json_check class "[l['leaf'] for l in d['leaves']] == ['field/u']"
  names prefix 'fi*'
  json_check prefix "[l['leaf'] for l in d['leaves']] == ['field/step', 'field/u']"
  names two '*/step' 'r?n'
  json_check two "[l['leaf'] for l in d['leaves']] == ['field/step', 'run']"
  run no-match 2 "$cairn" dump p/30 'x*'
  expect no-match "no leaf matching 'x*'"
  # * stays within a name, ** crosses '/'; a pattern that matches an item or group chooses
  # what lies under it.
  v1() {  # v1 NAME PATTERN: the leaves of the posix sample that PATTERN chooses, into NAME.out
    "$cairn" dump --json --stats "$samples/posix" "$2" >"$1.out" 2>&1 || fail "$1: dump '$2'"
  }
  v1 v1-star '*/ids'
  json_check v1-star "[l['leaf'] for l in d['leaves']] == ['particles/ids']"
  v1 v1-deep '**/*s'
  json_check v1-deep "[l['leaf'] for l in d['leaves']] == ['mesh/weights', 'particles/ids']"
  v1 v1-top '*s'
  json_check v1-top "[l['leaf'] for l in d['leaves']] == ['fields/temperature', 'particles/ids']"
  run v1-star-top 0 "$cairn" dump "$samples/posix" 'fields/*'
  expect v1-star-top "fields/temperature float64"; reject v1-star-top "particles"
  # inspect takes the same patterns.
  "$cairn" inspect --json p/30 '*/u' >inspect.out 2>&1 || fail "inspect '*/u'"
  json_check inspect "list(d['items']) == ['field'] and [l['path'] for l in d['items']['field']['leaves']] == ['u']"
  run inspect-text 0 "$cairn" inspect p/30 'field/s*'
  expect inspect-text "step"; reject inspect-text "float64"; reject inspect-text "item run"
  run inspect-item 0 "$cairn" inspect p/30 run
  expect inspect-item "item run"; reject inspect-item "item field"
  run inspect-none 2 "$cairn" inspect p/30 'nothing*'
  expect inspect-none "no item or leaf matching 'nothing*'"
  ;;

decomposition)
  formats=posix
  [ "$have_hdf5" = 1 ] && formats="posix hdf5"
  for f in $formats; do
    simulate "$f" 4 "$f"
    "$cairn" inspect --json -D "$f/30" >"$f-json.out" 2>&1 || fail "inspect -D --json $f"
    # The blocks tile the field: 4 writers, ranks 0-3, disjoint, covering every cell.
    json_check "$f-json" "(lambda b: sorted(x['rank'] for x in b) == [0, 1, 2, 3] and sum(x['extent'][0] * x['extent'][1] for x in b) == 40 * 48 and len({(i, j) for x in b for i in range(x['offset'][0], x['offset'][0] + x['extent'][0]) for j in range(x['offset'][1], x['offset'][1] + x['extent'][1])}) == 40 * 48)(d['items']['field']['decomposition']['u'])"
    run "$f-text" 0 mpi 2 "$cairn" inspect -D "$f/30"
    expect "$f-text" "decomposition (blocks of each array leaf, one per writing rank)"
    expect "$f-text" "u: 4 blocks"; expect "$f-text" "block 3: rank 3, offset ("
    run "$f-plain" 0 "$cairn" inspect "$f/30"
    reject "$f-plain" "block 0"
  done
  expect posix-text "shards/p3.bin"
  # The samples (items without a step: inspect says so, exit 1), whose blocks are known.
  for f in $formats; do
    run "v1-$f" 1 "$cairn" inspect --decomposition "$samples/$f" 'fields/*'
    expect "v1-$f" "fields/temperature: 2 blocks"
    expect "v1-$f" "block 0: rank 0, offset (0, 0), shape (3, 5)"
    expect "v1-$f" "block 1: rank 1, offset (3, 0), shape (3, 5)"
    reject "v1-$f" "particles/ids: "
  done
  run v1-ids 1 "$cairn" inspect -D "$samples/posix" particles/ids
  expect v1-ids "block 0: rank 0, offset (0,), shape (2,)"
  expect v1-ids "block 1: rank 1, offset (2,), shape (5,)"
  ;;

convert_compression)
  simulate h 2 "$fmt"
  run zstd 0 mpi 2 "$cairn" convert h/30 z --format posix --compression zstd
  expect zstd "compression zstd"
  "$cairn" inspect --json z >z.out 2>&1
  json_check z "(lambda u: u['compression'] == {'kind': 'zstd', 'level': 3, 'shuffle': True} and u['stored_bytes'] < u['bytes'])([l for l in d['items']['field']['leaves'] if l['path'] == 'u'][0])"
  run diff-zstd 0 "$cairn" diff h/30 z
  expect diff-zstd "no differences"
  run zfp 0 mpi 3 "$cairn" convert h/30 f --format posix --compression zfp=1e-3
  run inspect-zfp 0 "$cairn" inspect f
  expect inspect-zfp "zfp absolute error 0.001"
  run verify-zfp 0 "$cairn" verify f
  "$cairn" dump -q h/30 field/u --npy exact.npy >/dev/null || fail "dump exact"
  "$cairn" dump -q f field/u --npy lossy.npy >/dev/null || fail "dump lossy"
  py zfp-error "
import numpy as np
a, b = np.load('exact.npy'), np.load('lossy.npy')
assert a.shape == b.shape == (40, 48) and 0 < np.abs(a - b).max() <= 1e-3, np.abs(a - b).max()
print('ok')"
  # Back to none: the values of the zstd copy, uncompressed.
  run none 0 "$cairn" convert z plain --format posix --compression none
  "$cairn" inspect --json plain >plain.out 2>&1
  json_check plain "all(l['compression'] == {'kind': 'none'} for l in d['items']['field']['leaves'] if l['kind'] == 'array')"
  run diff-none 0 "$cairn" diff h/30 plain
  run bad 2 "$cairn" convert h/30 bad --format posix --compression zstd=99
  expect bad "zstd=<level 1-19>"
  [ ! -e bad ] || fail "a refused convert left bad"
  run force-user 2 "$cairn" convert --force h/30 . --format posix --compression zstd
  expect force-user "nothing was changed"
  if [ "$have_hdf5" = 1 ]; then
    run zstd-h5 0 mpi 2 "$cairn" convert h/30 zh --format hdf5 --compression zstd=7
    run diff-h5 0 "$cairn" diff h/30 zh
    expect diff-h5 "no differences"
    run version 0 "$cairn" --version
    plugins=$(sed -n 's/^hdf5 zstd filter plugin: \(\/.*\)$/\1/p' version.out)
    if [ -f "$plugins/libH5Zcairn_zstd.so" ] && /usr/bin/python3 -c "import h5py" 2>/dev/null; then
      run h5py 0 env -i PATH=/usr/bin:/bin HDF5_PLUGIN_PATH="$plugins" /usr/bin/python3 -c "
import h5py, numpy as np
u = h5py.File('zh/field/data.h5', 'r')['u']
dcpl = u.id.get_create_plist()
filters = [dcpl.get_filter(i)[0] for i in range(dcpl.get_nfilters())]
assert 32015 in filters, filters
assert np.array_equal(u[...], np.load('exact.npy'))
print('h5py read zstd', filters)"
    else
      fail "no zstd plugin or no h5py: $(cat version.out)"
    fi
  fi
  ;;

*)
  echo "cli_export_test.sh: unknown case '$case_name'" >&2
  exit 2
  ;;
esac

finish "$case_name"
