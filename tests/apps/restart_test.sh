#!/usr/bin/env bash
# heat2d restarts when checkpoints are damaged or misplaced, and says "saved" only at commit.
#
#   restart_test.sh CASE RANKS HEAT2D CAIRN MPIEXEC "MPIEXEC FLAGS" WORKDIR
# CASE:
#   fallback  the newest step is damaged: the run restarts from the one before, moves the
#             damaged one aside (shown by `cairn ls`) and ends with the field of a run that
#             was never interrupted;
#   nested    --checkpoint-dir naming a committed step, an item of it, or a directory of
#             other files is refused naming the path, and nothing is written there;
#   saved     a save that fails after save() returned is never reported as saved.
set -uo pipefail

case_name="$1" ranks="$2" heat2d="$3" cairn="$4" mpiexec="$5"
read -r -a flags <<<"$6"
work="$7/$case_name.np$ranks"
source "$(dirname "$0")/cli_common.sh"
enter_work
heat() {  # heat NAME STATUS DIR STEPS [ARGS...]: heat2d on $ranks ranks, posix checkpoints
  local name="$1" status="$2" dir="$3" steps="$4"
  shift 4
  run "$name" "$status" mpi "$ranks" "$heat2d" --nx 48 --ny 40 --steps "$steps" --save-every 10 \
    --max-to-keep 5 --format posix --checkpoint-dir "$dir" "$@"
}
# flip FILE: inverts the byte in the middle of FILE.
flip() {
  /usr/bin/python3 - "$1" <<'PY'
import os, sys
with open(sys.argv[1], "r+b") as f:
    size = os.fstat(f.fileno()).st_size
    f.seek(size // 2)
    b = f.read(1)
    f.seek(size // 2)
    f.write(bytes([b[0] ^ 0xFF]))
PY
}

case "$case_name" in
fallback)
  heat reference 0 reference 40 --quiet --output reference.bin
  heat first 0 root 30 --quiet
  # The last rank's shard of step 30: only that rank reads it on a restart at the same size.
  shard="root/30/field/shards/p$((ranks - 1)).bin"
  [ -f "$shard" ] || { fail "no shard $shard"; ls -R root/30; }
  flip "$shard"
  heat again 0 root 40 --output again.bin
  expect again "step 30 is damaged: moved aside"
  expect again "restarted from step 20"
  cmp -s reference.bin again.bin || fail "the restarted run's field differs from the reference"
  [ -d root/30.damaged-1 ] || fail "step 30 was not moved aside as root/30.damaged-1"
  [ -f root/30.damaged-1/COMMITTED ] || fail "the quarantined step lost its files"
  [ -f root/30/COMMITTED ] || fail "step 30 was not saved again"
  run ls 0 "$cairn" ls root
  expect ls "quarantined"; expect ls "30.damaged-1"
  run ls-json 0 "$cairn" ls --json root
  /usr/bin/python3 -c "import json,sys; d=json.load(open('ls-json.out')); q=[s for s in d['steps'] if s['status']=='quarantined']; sys.exit(0 if [s['step'] for s in q]==[30] and q[0]['path'].endswith('30.damaged-1') else 1)" ||
    fail "ls --json does not show step 30 as quarantined"
  # A third run restarts from step 40 and leaves the quarantined step alone.
  heat third 0 root 50 --quiet
  expect third "restarted from step 40"
  [ -d root/30.damaged-1 ] || fail "the quarantined step was removed"
  ;;

nested)
  heat first 0 root 30 --quiet
  before="$(cd root/30 && find . | sort)"
  for inside in root/30 root/30/field root/30/new; do
    heat "inside-${inside//\//_}" 1 "$inside" 40 --quiet
    expect "inside-${inside//\//_}" "'$inside'"
    expect "inside-${inside//\//_}" "checkpoint"
  done
  [ "$(cd root/30 && find . | sort)" = "$before" ] || fail "files were written inside step 30"
  [ -e root/30/new ] && fail "root/30/new was created"
  mkdir -p results && echo "notes" >results/notes.txt
  heat foreign 1 results 10 --quiet
  expect foreign "'results' is not empty"
  [ "$(ls results)" = "notes.txt" ] || fail "files were written into results/"
  heat root-again 0 root 40 --quiet
  expect root-again "restarted from step 30"
  ;;

saved)
  # Rank 0's third shard write fails, in the background: the save of step 20.
  CAIRN_FAULT="storage.posix_write@0#3" heat faulty 1 root 40
  expect faulty "step 1 saved"
  expect faulty "step 10 saved"
  reject faulty "step 20 saved"
  reject faulty "step 30 saved"
  [ -d root/20 ] && fail "step 20 was committed"
  heat after 0 root 30
  expect after "restarted from step 10"
  expect after "step 20 saved"
  expect after "step 30 saved"
  ;;

*)
  echo "unknown case '$case_name'"
  exit 2
  ;;
esac

finish "$case_name on $ranks rank(s)"
