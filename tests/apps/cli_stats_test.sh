#!/usr/bin/env bash
# The statistics of array leaves that a save records (min and max of the finite values, NaN and
# inf counts), as `cairn inspect` (text and --json) and `cairn ls -l` show them without reading
# any data: known values saved by stats_writer in every format at 1 and 4 ranks, a heat2d root
# (against `cairn dump --stats`), and steps whose index has none (written before cairn recorded
# them).
#
#   cli_stats_test.sh CASE HEAT2D CAIRN MPIEXEC "MPIEXEC FLAGS" WORKDIR HAVE_HDF5 STATS_WRITER
# CASE: leaf_stats
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
source "$here/cli_common.sh"
cli_args "$@"
stats_writer="$8"
enter_work

# run_json NAME EXPECTED_STATUS COMMAND...: as run, stdout alone in NAME.out (JSON).
run_json() {
  local name="$1" expected="$2"
  shift 2
  "$@" >"$name.out" 2>"$name.err"
  local status=$?
  if [ "$status" -ne "$expected" ]; then
    fail "$name: exit status $status, expected $expected ($*)"
    sed 's/^/    /' "$name.out" "$name.err"
  fi
}

formats=(posix)
if [ "$have_hdf5" = 1 ]; then formats+=(hdf5); fi

# What stats_writer.cpp saves, as inspect --json shows it (float16 "h" and int "i32" included).
expected_json='{"f64": {"min": -10, "max": 37, "nan": 1, "inf": 2},
  "f32": {"min": -1, "max": 3.5, "nan": 0, "inf": 0},
  "i32": {"min": -64, "max": 5, "nan": 0, "inf": 0},
  "u8": {"min": 0, "max": 220, "nan": 0, "inf": 0},
  "h": {"min": -2, "max": 3, "nan": 0, "inf": 1},
  "z": {"min": 100, "max": 105.75, "nan": 1, "inf": 0},
  "digits": {"min": -0.6666666666666666, "max": 0.30000000000000004, "nan": 0, "inf": 0},
  "nan": {"nan": 4, "inf": 0}}'
expected_text=("f64: min -10, max 37, 1 NaN, 2 inf" "f32: min -1, max 3.5"
  "i32: min -64, max 5" "u8: min 0, max 220" "h: min -2, max 3, 1 inf"
  "z: min 100, max 105.75, 1 NaN" "digits: min -0.6666666666666666, max 0.30000000000000004"
  "nan: no finite value, 4 NaN")

case "$case_name" in
leaf_stats)
  for f in "${formats[@]}"; do
    for n in 1 4; do
      root="known-$f-$n"
      mpi "$n" "$stats_writer" "$root" "$f" >"$root.log" 2>&1 || { cat "$root.log"; exit 2; }
      run_json "inspect-json-$f-$n" 0 "$cairn" inspect --json "$root/1"
      json_check "inspect-json-$f-$n" "(lambda want: {l['path']: l['stats'] for l in d['items']['(item)']['leaves'] if 'stats' in l} == want)($expected_json)"
      json_check "inspect-json-$f-$n" "[l for l in d['items']['(item)']['leaves'] if l['path'] == 'flags'][0].get('stats') is None"
      run "inspect-$f-$n" 0 "$cairn" inspect "$root/1"
      run "ls-$f-$n" 0 "$cairn" ls -l "$root"
      for line in "${expected_text[@]}"; do
        expect "inspect-$f-$n" "values: ${line#*: }"
        expect "ls-$f-$n" "$line"
      done
      reject "ls-$f-$n" "flags:"
      run "ls-short-$f-$n" 0 "$cairn" ls "$root"
      reject "ls-short-$f-$n" "min -10"
      run_json "ls-json-$f-$n" 0 "$cairn" ls -l --json "$root"
      json_check "ls-json-$f-$n" "d['steps'][0]['stats'] == $expected_json"
    done
  done

  # A heat2d root: the statistics recorded match those dump reads from the data.
  simulate h 2 "$fmt"
  run_json heat-dump 0 "$cairn" dump --json --stats h/30 field/u
  run_json heat-inspect 0 "$cairn" inspect --json h/30
  /usr/bin/python3 -c "
import json, sys
read = json.load(open('heat-dump.out'))['leaves'][0]['stats']
leaves = json.load(open('heat-inspect.out'))['items']['field']['leaves']
saved = [l for l in leaves if l['path'] == 'u'][0]['stats']
ok = saved == {'min': read['min'], 'max': read['max'], 'nan': 0, 'inf': 0}
print(saved, read) if not ok else None
sys.exit(0 if ok else 1)" || fail "heat2d: recorded statistics differ from dump --stats"
  run heat-inspect-text 0 "$cairn" inspect h/30
  expect heat-inspect-text "values: min "
  run heat-ls 0 "$cairn" ls -l h
  [ "$(grep -c 'field/u: min ' heat-ls.out)" -eq "$(grep -c ' committed ' heat-ls.out)" ] ||
    { fail "heat-ls: not one line of statistics per step"; cat heat-ls.out; }

  # Steps whose index has no statistics (written before cairn recorded them): listed as before.
  cp -r h old
  for tree in old/*/field/cairn-tree.json; do
    /usr/bin/python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
for l in d['leaves']: l.pop('stats', None)
json.dump(d, open(sys.argv[1], 'w'))" "$tree"
  done
  run old-ls 0 "$cairn" ls -l old
  expect old-ls "committed"
  reject old-ls "field/u:"
  run_json old-ls-json 0 "$cairn" ls -l --json old
  json_check old-ls-json "all(s['stats'] == {} for s in d['steps'])"
  run old-inspect 0 "$cairn" inspect old/30
  expect old-inspect "float64"
  reject old-inspect "values:"
  ;;

*)
  echo "cli_stats_test.sh: unknown case '$case_name'" >&2
  exit 2
  ;;
esac

finish "$case_name"
