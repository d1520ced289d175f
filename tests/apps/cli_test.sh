#!/usr/bin/env bash
# Tests of the cairn command-line tool, one subcommand per case, on checkpoints written by
# heat2d and then damaged on purpose. Every damaged input must give a report and exit code 1
# (or 2 for a refused command), never a crash.
#
#   cli_test.sh CASE HEAT2D CAIRN MPIEXEC "MPIEXEC FLAGS" WORKDIR HAVE_HDF5
# CASE: help ls inspect verify diff convert gc hostile_items hostile_step heat2d_sizes
# HAVE_HDF5: 1 when cairn was built with HDF5, else 0. The checkpoints are written in hdf5
# when it is 1 and in posix when it is 0; checks of HDF5 files are skipped (saying so), and
# in their place the tools must refuse --format hdf5 naming the configure option.
set -uo pipefail

source "$(dirname "$0")/cli_common.sh"
cli_args "$@"
enter_work

case "$case_name" in
help)
  run help 0 "$cairn" --help
  expect help "ls"; expect help "verify"; expect help "convert"
  for sub in ls inspect verify diff convert gc dump; do
    run "help-$sub" 0 "$cairn" "$sub" --help
    expect "help-$sub" "Usage"
  done
  run no-command 2 "$cairn"
  ;;

ls)
  simulate root 2 "$fmt"
  run ls 0 "$cairn" ls root
  expect ls "committed"; expect ls "energy="; expect ls "field,run"
  run ls-json 0 "$cairn" ls --json root
  json_check ls-json "[s['step'] for s in d['steps']] == [1, 10, 20, 30] and all(s['status'] == 'committed' for s in d['steps'])"
  json_check ls-json "'residual' in d['steps'][-1]['metrics'] and d['steps'][-1]['items'] == ['field', 'run']"
  # Damage and leftovers: every state shows, nothing crashes.
  cp -r root/30 root/40.cairn-tmp
  mv root/20 root/20.cairn-deleting
  rm root/10/COMMITTED
  echo '{"handler": "cairn.composite", broken' >root/30/cairn-step.json
  mkdir -p root/trash && cp -r root/1 root/trash/1
  run ls-damaged 0 "$cairn" ls --json root
  json_check ls-damaged "[(s['step'], s['status']) for s in d['steps']] == [(1, 'committed'), (1, 'being deleted'), (10, 'incomplete'), (20, 'being deleted'), (30, 'committed'), (40, 'incomplete')]"
  json_check ls-damaged "'not valid JSON' in [s for s in d['steps'] if s['step'] == 30][0]['problem']"
  run ls-damaged-text 0 "$cairn" ls root
  expect ls-damaged-text "DAMAGED"; expect ls-damaged-text "40.cairn-tmp"
  run ls-checkpoint 2 "$cairn" ls root/30
  expect ls-checkpoint "cairn inspect"
  run ls-missing 2 "$cairn" ls does-not-exist
  expect ls-missing "does-not-exist"
  ;;

inspect)
  simulate root 2 "$fmt"
  run inspect 0 "$cairn" inspect root/30
  expect inspect "committed at"; expect inspect "float64"; expect inspect "(40, 48)"
  expect inspect "$fmt"; expect inspect '"nx": 48'; expect inspect "step"; expect inspect "= 30"
  run inspect-item 0 "$cairn" inspect root/30 run
  expect inspect-item '"process_grid": [2,1]'; reject inspect-item "float64"
  run inspect-json 0 "$cairn" inspect --json root/30
  json_check inspect-json "d['items']['field']['leaves'][0]['path'] == 'step' and d['items']['field']['leaves'][1]['shape'] == [40, 48] and d['items']['field']['leaves'][1]['shards'] == 2"
  json_check inspect-json "d['items']['field']['index']['version'] == 6 and len(d['items']['field']['index']['leaves'][1]['shards']) == 2 and len(d['items']['field']['index']['leaves'][1]['shards'][0]['xxh3']) % 16 == 0"
  run inspect-no-item 2 "$cairn" inspect root/30 nothing
  expect inspect-no-item "no item 'nothing'"
  # Damaged metadata: reported, no crash.
  echo 'not json' >root/20/field/cairn-tree.json
  run inspect-bad-tree 1 "$cairn" inspect root/20
  expect inspect-bad-tree "DAMAGED"; expect inspect-bad-tree "cairn-tree.json"
  : >root/10/cairn-step.json
  run inspect-bad-step 1 "$cairn" inspect root/10
  expect inspect-bad-step "not valid JSON"; expect inspect-bad-step "float64"
  ;;

verify)
  simulate sim 2 "$fmt"
  simulate px 2 posix
  run verify-ok 0 "$cairn" verify sim/30
  expect verify-ok "OK"
  run verify-root-ok 0 mpi 2 "$cairn" verify px
  expect verify-root-ok "4 checkpoints verified, 0 damaged"
  # Truncated posix shard file.
  truncate -s 100 px/30/field/shards/p1.bin
  run verify-truncated 1 mpi 2 "$cairn" verify px/30
  expect verify-truncated "DAMAGED"; expect verify-truncated "p1.bin"
  # A flipped byte inside a posix shard: checksum mismatch.
  printf '\x55' | dd of=px/20/field/shards/p0.bin bs=1 seek=200 conv=notrunc status=none
  run verify-flipped 1 "$cairn" verify px/20
  expect verify-flipped "checksum mismatch"
  # Missing shard file.
  rm px/10/field/shards/p0.bin
  run verify-missing-file 1 "$cairn" verify px/10
  expect verify-missing-file "p0.bin"
  # The whole root: three damaged steps, one intact.
  run verify-root-damaged 1 "$cairn" verify --quiet px
  expect verify-root-damaged "3 damaged"
  if [ "$have_hdf5" = 1 ]; then
    # Truncated HDF5 file.
    truncate -s 3000 sim/30/field/data.h5
    run verify-h5-truncated 1 mpi 2 "$cairn" verify sim/30
    expect verify-h5-truncated "DAMAGED"; expect verify-h5-truncated "data.h5"
  else
    echo "verify: skipped the truncated data.h5 check: cairn was built without HDF5"
  fi
  # Missing commit marker, bad step metadata, bad tree index, bad JSON item.
  rm sim/20/COMMITTED
  run verify-no-marker 1 "$cairn" verify sim/20
  expect verify-no-marker "no COMMITTED marker"
  echo '{"handler": 3' >sim/10/cairn-step.json
  run verify-bad-step 1 "$cairn" verify sim/10
  expect verify-bad-step "not valid JSON"
  echo '{"version": 1, "world_size": -4, "leaves": 7}' >sim/1/field/cairn-tree.json
  echo '[1, 2' >sim/1/run/value.json
  run verify-bad-index 1 mpi 2 "$cairn" verify sim/1
  expect verify-bad-index "cairn-tree.json"; expect verify-bad-index "value.json"
  run verify-missing 2 "$cairn" verify nothing-here
  ;;

diff)
  simulate a 2 "$fmt"
  simulate b 1 posix
  run diff-same-run 1 "$cairn" diff a/10 a/30
  expect diff-same-run "field/u:"; expect diff-same-run "max abs diff"; expect diff-same-run "field/step: "
  # Same problem, other ranks (and format, with HDF5): the field is identical, the run info
  # is not.
  run diff-decomposition 1 mpi 2 "$cairn" diff --brief a/30 b/30
  reject diff-decomposition "field/u"; expect diff-decomposition "run: the values differ"
  run diff-self 0 mpi 3 "$cairn" diff a/30 a/30
  expect diff-self "field/u: equal"; expect diff-self "no differences"
  mpi 1 "$heat2d" --nx 48 --ny 30 --steps 10 --save-every 10 --checkpoint-dir c --quiet >/dev/null 2>&1
  run diff-shape 1 "$cairn" diff a/10 c/10
  expect diff-shape "shape (40, 48) -> (30, 48)"
  run diff-missing 2 "$cairn" diff a/30 nowhere
  ;;

convert)
  simulate src 2 "$fmt"
  run convert 0 mpi 3 "$cairn" convert src/30 out-posix --format posix
  expect convert "converted"
  run convert-inspect 0 "$cairn" inspect out-posix
  expect convert-inspect "posix"; expect convert-inspect "energy="
  run convert-diff 0 "$cairn" diff src/30 out-posix
  expect convert-diff "no differences"
  if [ "$have_hdf5" = 1 ]; then
    run convert-back 0 "$cairn" convert out-posix out-hdf5 --format hdf5
    run convert-verify 0 mpi 2 "$cairn" verify out-hdf5
    run convert-diff-back 0 mpi 2 "$cairn" diff src/30 out-hdf5
  else
    # Without HDF5 both tools refuse the format before writing anything, naming the option
    # that brings it.
    run convert-no-hdf5 2 "$cairn" convert out-posix out-hdf5 --format hdf5
    expect convert-no-hdf5 "format hdf5 is not available"; expect convert-no-hdf5 "CAIRN_USE_HDF5"
    [ ! -e out-hdf5 ] || fail "convert --format hdf5 created out-hdf5 in a build without HDF5"
    if mpi 1 "$heat2d" --nx 16 --ny 12 --steps 10 --format hdf5 --checkpoint-dir h5 \
         >heat2d-no-hdf5.out 2>&1; then
      fail "heat2d --format hdf5 succeeded in a build without HDF5"
    fi
    expect heat2d-no-hdf5 "format hdf5 is not available"; expect heat2d-no-hdf5 "CAIRN_USE_HDF5"
    [ ! -e h5 ] || fail "heat2d --format hdf5 created its checkpoint root without HDF5"
  fi
  run convert-exists 2 "$cairn" convert src/30 out-posix --format posix
  expect convert-exists "already exists"
  rm src/20/COMMITTED
  run convert-incomplete 2 "$cairn" convert src/20 out-incomplete --format posix
  expect convert-incomplete "not a committed checkpoint"
  run convert-bad-format 2 "$cairn" convert src/30 out-x --format zarr
  ;;

gc)
  simulate root 1 posix
  cp -r root/30 root/40.cairn-tmp
  cp -r root/20 root/20.cairn-deleting
  mkdir -p root/trash && cp -r root/10 root/trash/10
  cp -r root/30 root/50 && rm root/50/COMMITTED
  run gc-dry 0 "$cairn" gc --dry-run root
  expect gc-dry "would remove 3 directories"
  [ -d root/40.cairn-tmp ] && [ -d root/trash/10 ] || fail "gc --dry-run removed something"
  echo '{"host": "elsewhere", "pid": 1, "slurm_job_id": "77"}' >root/cairn.lock
  # Slurm says job 77 runs (a stand-in squeue: the test must not depend on a real queue).
  mkdir -p fakebin && printf '#!/bin/sh\necho RUNNING\n' >fakebin/squeue && chmod +x fakebin/squeue
  PATH="$work/fakebin:$PATH" run gc-locked 2 "$cairn" gc root
  expect gc-locked "locked by host elsewhere, pid 1, Slurm job 77"
  [ -d root/40.cairn-tmp ] || fail "gc removed something from a locked root"
  run gc 0 "$cairn" gc --force root
  expect gc "removed 3 directories"; expect gc "kept"
  [ ! -e root/40.cairn-tmp ] && [ ! -e root/20.cairn-deleting ] && [ ! -e root/trash/10 ] ||
    fail "gc left temporary directories"
  [ -d root/50 ] || fail "gc removed a directory that is not temporary"
  rm -rf root/50
  run gc-verify 0 "$cairn" verify root
  expect gc-verify "4 checkpoints verified, 0 damaged"
  ;;

hostile_items)
  # cairn-step.json lists hostile item names ("../x", an absolute path, "..", "."): each is
  # reported as damage naming the file and the item, and nothing outside the checkpoint is read.
  mpi 1 "$heat2d" --nx 16 --ny 12 --steps 10 --save-every 10 \
    --format posix --checkpoint-dir root --quiet >heat2d.log 2>&1 || { cat heat2d.log; exit 2; }
  [ -f root/10/cairn-step.json ] || { echo "heat2d left no root/10"; exit 2; }

  # A JSON item outside the checkpoint, damaged so that reading it would show in any report.
  mkdir -p outside && cp -r root/10/run outside/item && echo 'OUTSIDE-MARKER' >outside/item/value.json
  /usr/bin/python3 - root/10/cairn-step.json "$work/outside/item" <<'EOF' || exit 2
import json, sys
path, absolute = sys.argv[1], sys.argv[2]
step = json.load(open(path))
step["items"].update({"../../outside/item": "cairn.json", absolute: "cairn.json",
                      "..": "cairn.json", ".": "cairn.json"})
json.dump(step, open(path, "w"))
EOF

  run inspect 1 "$cairn" inspect root/10
  run verify 1 "$cairn" verify root/10
  run ls 0 "$cairn" ls --json root
  for out in inspect verify; do
    expect "$out" "cairn-step.json"
    expect "$out" "item name '../../outside/item'"
    expect "$out" "item name '$work/outside/item'"
    expect "$out" "item name '..'"
    expect "$out" "item name '.'"
    reject "$out" "OUTSIDE-MARKER"
    reject "$out" "outside/item/value.json"
  done
  expect ls "cairn-step.json"
  # The real items are still read.
  expect inspect '"nx": 16'
  ;;

hostile_step)
  # Numbers in cairn-step.json that are negative, huge or of the wrong type: every tool
  # reports the damage naming the file and the field, and nothing aborts.
  mpi 1 "$heat2d" --nx 16 --ny 12 --steps 10 --save-every 10 \
    --format posix --checkpoint-dir root --quiet >heat2d.log 2>&1 || { cat heat2d.log; exit 2; }
  [ -f root/10/cairn-step.json ] || { echo "heat2d left no root/10"; exit 2; }
  # "step field value": each damaged copy of step 10 is a step of its own.
  cases='101 bytes -1
102 bytes 1e300
103 bytes 18446744073709551615
104 bytes "12"
105 world_size -4
106 world_size 99999999999999999999
107 version -3'
  while read -r step field value; do
    cp -r root/10 "root/$step"
    # The value goes in as written (json.dumps would rewrite 1e300).
    /usr/bin/python3 -c '
import json, sys
path, field, value = sys.argv[1:]
step = json.load(open(path))
step[field] = "@VALUE@"
open(path, "w").write(json.dumps(step).replace("\"@VALUE@\"", value))
' "root/$step/cairn-step.json" "$field" "$value" || exit 2
  done <<<"$cases"
  while read -r step field value; do
    run "inspect-$step" 1 "$cairn" inspect "root/$step"
    expect "inspect-$step" "root/$step/cairn-step.json"; expect "inspect-$step" "field '$field'"
    expect "inspect-$step" "DAMAGED"; expect "inspect-$step" "float64"
    reject "inspect-$step" "not exact"
    run "inspect-json-$step" 1 "$cairn" inspect --json "root/$step"
    json_check "inspect-json-$step" "d['step_metadata'] is None and any(\"field '$field'\" in p for p in d['problems'])"
    run "verify-$step" 1 "$cairn" verify "root/$step"
    expect "verify-$step" "root/$step/cairn-step.json"; expect "verify-$step" "field '$field'"
    run "convert-$step" 2 "$cairn" convert "root/$step" "out-$step" --format posix
    expect "convert-$step" "root/$step/cairn-step.json"
    [ ! -e "out-$step" ] || fail "convert wrote out-$step from a damaged checkpoint"
  done <<<"$cases"
  run ls 0 "$cairn" ls --json root
  json_check ls "len([s for s in d['steps'] if s['step'] > 100]) == 7 and all('cairn-step.json' in s.get('problem', '') for s in d['steps'] if s['step'] > 100)"
  run ls-text 0 "$cairn" ls root
  expect ls-text "DAMAGED"
  run verify-root 1 "$cairn" verify --quiet root
  expect verify-root "7 damaged"
  # The root metadata is read as the manager reads it.
  /usr/bin/python3 -c '
import json, sys
root = json.load(open(sys.argv[1])); root["world_size"] = -1; json.dump(root, open(sys.argv[1], "w"))
' root/cairn-root.json || exit 2
  run verify-root-metadata 1 "$cairn" verify --quiet root
  expect verify-root-metadata "root/cairn-root.json: field 'world_size'"
  ;;

heat2d_sizes)
  # Field sizes that cannot work are refused up front, once, in words, on 1, 2 and 4 ranks:
  # never an abort with std::bad_alloc, never a range of 309 digits.
  for n in 1 2 4; do
    for side in nx ny; do
      if mpi "$n" "$heat2d" "--$side" 99999999999 --steps 1 --checkpoint-dir "huge-$n" \
           >"huge-$side-$n.out" 2>&1; then
        fail "heat2d --$side 99999999999 on $n ranks succeeded"
      fi
      expect "huge-$side-$n" "--$side"; expect "huge-$side-$n" "from 1 to 2147483647"
      if mpi "$n" "$heat2d" "--$side" 0 --steps 1 --checkpoint-dir "zero-$n" \
           >"zero-$side-$n.out" 2>&1; then
        fail "heat2d --$side 0 on $n ranks succeeded"
      fi
      expect "zero-$side-$n" "'0' is not a number of"
      reject "zero-$side-$n" "0.000000"
    done
    # Each side allowed, the field too large for memory.
    if mpi "$n" "$heat2d" --nx 2000000000 --ny 2000000000 --steps 1 --checkpoint-dir "big-$n" \
         >"big-$n.out" 2>&1; then
      fail "heat2d with a 2e9 x 2e9 field on $n ranks succeeded"
    fi
    expect "big-$n" "GiB on each rank, more than the"
    [ "$(grep -c 'GiB on each rank' "big-$n.out")" = 1 ] ||
      fail "big-$n: the error is not printed exactly once"
    for out in "huge-nx-$n" "zero-nx-$n" "big-$n"; do
      reject "$out" "bad_alloc"; reject "$out" "MPI_ABORT"; reject "$out" "max_size"
    done
    [ ! -e "big-$n" ] || fail "heat2d created its checkpoint root for a field it refused"
    # A diffusion number that is no finite number would fill every checkpoint with NaN.
    for alpha in nan NaN inf -inf; do
      if mpi "$n" "$heat2d" --alpha "$alpha" --nx 8 --ny 8 --steps 1 \
           --checkpoint-dir "alpha-$alpha-$n" >"alpha-$alpha-$n.out" 2>&1; then
        fail "heat2d --alpha $alpha on $n ranks succeeded"
      fi
      expect "alpha-$alpha-$n" "--alpha"; expect "alpha-$alpha-$n" "'$alpha' is not a finite number"
      [ ! -e "alpha-$alpha-$n" ] || fail "heat2d --alpha $alpha created its checkpoint root"
    done
  done
  ;;

*)
  echo "cli_test.sh: unknown case '$case_name'" >&2
  exit 2
  ;;
esac

finish "$case_name"
