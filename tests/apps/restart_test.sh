#!/usr/bin/env bash
# heat2d restarts when checkpoints are damaged or misplaced, and says "saved" only at commit.
#
#   restart_test.sh CASE RANKS HEAT2D CAIRN MPIEXEC "MPIEXEC FLAGS" WORKDIR
# CASE:
#   fallback  the newest step is damaged: the run restarts from the one before, moves the
#             damaged one aside (shown by `cairn ls`) and ends with the field of a run that
#             was never interrupted;
#   log_once  every rank's shard of the newest step is damaged: each warning of the restart
#             (the collective failure, the failed restore, the older step restored) is
#             printed once, by the primary, with the ranks grouped; each rank's own message
#             is in its debug log;
#   nested    --checkpoint-dir naming a committed step, an item of it, or a directory of
#             other files is refused naming the path, and nothing is written there;
#   saved     a save that fails after save() returned is never reported as saved;
#   resealed  a field of the wrong kind in the newest step's run record (nx: null), with the
#             marker's checksum resealed: the run restarts from the step before, naming the
#             file and the field;
#   resealed_shape  the run record's process_grid made [] and then its ranks a number above
#             INT64_MAX, each with the marker resealed: the run restarts from the step before
#             (no rank waits for another that stopped), naming the field;
#   fifo      a FIFO in place of the newest step's COMMITTED, cairn-step.json or a shard: the
#             run neither waits on it nor stops, it restarts from the step before, naming the
#             path;
#   unmarked  the newest step lost its COMMITTED marker: the next run moves it aside, saves
#             that step again and completes; `cairn gc` says what it does with such a step;
#   levels    a run with a node-local level (--local-dir) is killed, one simulated node's
#             local files are wiped, and the restart rebuilds them from the other nodes'
#             copies and ends with the field of a run never interrupted;
#   levels_grid  a run with a node-local level is killed before its newest local step reaches
#             the root; restarts under other process grids (and, at 4 ranks, with 2 ranks per
#             node) are served by the local level, cells exchanged between nodes, and end with
#             the field of a run never interrupted;
#   late_signal  SIGUSR1 sent again and again once heat2d printed that it finished (1 rank,
#             no mpiexec): it still exits 0.
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

# reseal DIR: rewrites the checksum lines of DIR/COMMITTED for the files as they are now
# (what a tool that "repairs" checkpoints, or a hostile user, leaves behind).
reseal() {
  /usr/bin/python3 - "$1" <<'PY'
import ctypes, os, sys
xxh = ctypes.CDLL("libxxhash.so.0")
xxh.XXH3_64bits.restype = ctypes.c_uint64
xxh.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
marker = os.path.join(sys.argv[1], "COMMITTED")
out = []
for line in open(marker).read().splitlines():
    if line.startswith("xxh3 "):
        name = line[22:]
        data = open(os.path.join(sys.argv[1], name), "rb").read()
        line = "xxh3 %016x %s" % (xxh.XXH3_64bits(data, len(data)), name)
    out.append(line)
open(marker, "w").write("\n".join(out) + "\n")
PY
}

case "$case_name" in
resealed)
  heat reference 0 reference 40 --quiet --output reference.bin
  heat first 0 root 30 --quiet
  /usr/bin/python3 - root/30/run/value.json <<'PY'
import json, sys
v = json.load(open(sys.argv[1])); v["nx"] = None
open(sys.argv[1], "w").write(json.dumps(v))
PY
  reseal root/30
  run verify-resealed 0 "$cairn" verify root/30
  heat again 0 root 40 --output again.bin
  expect again "step 30 is damaged: moved aside"
  expect again "root/30/run/value.json"; expect again "'/nx' is null"
  expect again "restarted from step 20"
  cmp -s reference.bin again.bin || fail "the restarted run's field differs from the reference"
  [ -d root/30.damaged-1 ] || fail "step 30 was not moved aside as root/30.damaged-1"
  ;;

resealed_shape)
  heat reference 0 reference 40 --quiet --output reference.bin
  # edit NAME PYTHON: a copy of a run stopped at step 30 whose run record PYTHON edits (`v`),
  # resealed; heat2d must end (a timeout guards against a wait) and restart from step 20.
  edit() {
    rm -rf "root-$1" && cp -a first-root "root-$1"
    /usr/bin/python3 - "root-$1/30/run/value.json" "$2" <<'PY'
import json, sys
v = json.load(open(sys.argv[1])); exec(sys.argv[2])
open(sys.argv[1], "w").write(json.dumps(v))
PY
    reseal "root-$1/30"
    run "again-$1" 0 timeout -k 10 240 "$mpiexec" -n "$ranks" "${flags[@]}" "$heat2d" --nx 48 \
      --ny 40 --steps 40 --save-every 10 --max-to-keep 5 --format posix \
      --checkpoint-dir "root-$1" --output "again-$1.bin"
    expect "again-$1" "step 30 is damaged: moved aside"
    expect "again-$1" "restarted from step 20"
    cmp -s reference.bin "again-$1.bin" || fail "$1: the restarted run's field differs"
  }
  heat first 0 first-root 30 --quiet
  edit empty_grid 'v["process_grid"] = []'
  expect again-empty_grid "'/process_grid' has 0 elements where 2 are expected"
  edit huge 'v["ranks"] = 2**64 - 1'
  expect again-huge "'/ranks' is 18446744073709551615, an integer out of the range"
  ;;

fifo)
  heat reference 0 reference 40 --quiet --output reference.bin
  heat first 0 first-root 30 --quiet
  for file in COMMITTED cairn-step.json "field/shards/p$((ranks - 1)).bin"; do
    name="${file//\//_}"
    rm -rf "root-$name" && cp -a first-root "root-$name"
    rm "root-$name/30/$file" && mkfifo "root-$name/30/$file"
    # A generous guard against a wait, not a measure of time.
    run "again-$name" 0 timeout -k 10 240 "$mpiexec" -n "$ranks" "${flags[@]}" "$heat2d" \
      --nx 48 --ny 40 --steps 40 --save-every 10 --max-to-keep 5 --format posix \
      --checkpoint-dir "root-$name" --output "again-$name.bin"
    expect "again-$name" "root-$name/30/$file"
    expect "again-$name" "restarted from step 20"
    cmp -s reference.bin "again-$name.bin" || fail "$name: the restarted run's field differs"
  done
  ;;

unmarked)
  heat reference 0 reference 40 --quiet --output reference.bin
  heat first 0 root 30 --quiet
  rm root/30/COMMITTED
  run gc-unmarked 0 "$cairn" gc --dry-run root
  expect gc-unmarked "a save that did not finish"
  expect gc-unmarked "moves it aside"
  [ -d root/30 ] || fail "gc --dry-run changed root/30"
  heat again 0 root 40 --output again.bin
  expect again "restarted from step 20"
  expect again "step 30 saved"
  cmp -s reference.bin again.bin || fail "the restarted run's field differs from the reference"
  [ -f root/30/COMMITTED ] || fail "step 30 was not saved again"
  [ -d root/30.damaged-1 ] || fail "the unmarked step 30 was not moved aside as root/30.damaged-1"
  [ -e root/30.damaged-1/COMMITTED ] && fail "the quarantined step gained a marker"
  ;;

late_signal)
  # A notice can come after the run is over (Slurm signals up to a minute early, or again).
  # Until heat2d exits, SIGUSR1 is sent every millisecond; a handful of tries make sure some
  # were sent while it closed its manager and MPI.
  sent_total=0
  for try in 1 2 3; do
    rm -rf "root$try"
    "$heat2d" --nx 48 --ny 40 --steps 20 --save-every 10 --format posix \
      --checkpoint-dir "root$try" >"late$try.out" 2>&1 &
    pid=$!
    until grep -q "finished step" "late$try.out" || ! kill -0 "$pid" 2>/dev/null; do
      sleep 0.01
    done
    sent=0
    while [ "$sent" -lt 20000 ] && kill -USR1 "$pid" 2>/dev/null; do
      sent=$((sent + 1))
      sleep 0.001
    done
    wait "$pid"
    status=$?
    sent_total=$((sent_total + sent))
    [ "$status" -eq 0 ] || { fail "try $try: heat2d exited with $status after $sent late SIGUSR1"; cat "late$try.out"; }
    grep -q "finished step 20" "late$try.out" || fail "try $try: the run did not finish"
  done
  [ "$sent_total" -gt 0 ] || fail "no SIGUSR1 reached heat2d before it exited"
  ;;

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
  # The cost of each save and of the run's checkpointing, as SCR reports it.
  grep -Eq "step 30 saved \(.*; blocked [0-9.]+ s, committed after [0-9.]+ s: 0\.0 MiB at [0-9]+ MiB/s\)" again.out ||
    fail "no cost of the save of step 30: $(cat again.out)"
  grep -Eq "^heat2d: checkpointing: 2 saves of 0\.0 MiB, blocked [0-9.]+ s in all: [0-9.]+% of the run's" again.out ||
    fail "no summary of the run's checkpointing: $(cat again.out)"
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

log_once)
  heat first 0 root 30 --quiet
  for shard in root/30/field/shards/p*.bin; do flip "$shard"; done
  heat again 0 root 40 --quiet
  # count NAME EVENT N: NAME.out holds N lines of EVENT.
  count() {
    local n
    n=$(grep -c "event=$2 " "$1.out")
    [ "$n" -eq "$3" ] || { fail "$1: $n lines of $2, expected $3"; grep -F "event=$2 " "$1.out"; }
  }
  count again collective.failure 1
  count again manager.restore_failed 1
  count again manager.restored_older_step 1
  expect again "rank=0 level=warn event=collective.failure"
  expect again "failed on $ranks of $ranks rank"
  # Each rank's own message, at debug level on every rank when asked for.
  for shard in root/40/field/shards/p*.bin; do flip "$shard"; done
  CAIRN_LOG_LEVEL=debug CAIRN_LOG_ALL_RANKS=1 heat debug 0 root 50 --quiet
  count debug collective.rank_failure "$ranks"
  count debug collective.failure 1
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

levels)
  # The node-local level, each rank a simulated node with its own directory: a run killed
  # (SIGKILL) once its third local step is recorded, one node's local files wiped, then a
  # restart that rebuilds them from the other nodes' copies and ends with the field of a run
  # that was never interrupted.
  redundancy=partner
  [ "$ranks" -ge 4 ] && redundancy=xor=4
  level=(--local-dir "local{node}" --persistent-every 3 --ranks-per-node 1)
  heat reference 0 reference 60 --quiet --output reference.bin
  "$mpiexec" -n "$ranks" "${flags[@]}" "$heat2d" --nx 48 --ny 40 --steps 60 --save-every 10 \
    --format posix --checkpoint-dir root "${level[@]}" --redundancy "$redundancy" \
    --step-delay-ms 40 >killed.out 2>&1 &
  launcher=$!
  until [ -f local0/cairn-level/30.json ] || ! kill -0 "$launcher" 2>/dev/null; do sleep 0.02; done
  pkill -KILL -P "$launcher"
  wait "$launcher"
  [ -f local0/cairn-level/30.json ] || fail "the run ended before step 30 was saved locally"
  grep -q "finished step" killed.out && fail "the run finished before it was killed"
  rm -rf local1
  heat again 0 root 60 "${level[@]}" --redundancy "$redundancy" --output again.bin
  expect again "read from the local"
  expect again "rebuilt the local files of node 1 from their copies"
  cmp -s reference.bin again.bin || fail "the restarted run's field differs from the reference"
  [ -f local1/cairn-level/60.json ] || fail "node 1 does not hold the last local step"
  [ -f root/60/COMMITTED ] || fail "the last step was not drained to the root at the end"
  run ls-local 0 "$cairn" ls local1
  expect ls-local "committed"
  run verify-local 0 "$cairn" verify local0
  # A restart at another world size reads the persistent level.
  if [ "$ranks" -gt 2 ]; then
    run fewer 0 mpi $((ranks - 1)) "$heat2d" --nx 48 --ny 40 --steps 70 --save-every 10 \
      --format posix --checkpoint-dir root "${level[@]}" --redundancy partner --quiet
    expect fewer "restarted from step 60"
    expect fewer "read from the persistent"
  fi
  ;;

levels_grid)
  # Saved as 1 x N (or 2 x 2) with every node holding its ranks' rows; the newest local step
  # is not on the root, so only the local level can serve it.
  for per_node in 1 2; do
    [ "$per_node" -eq 2 ] && [ "$ranks" -lt 4 ] && continue
    mkdir -p "rpn$per_node" && cd "rpn$per_node" || fail "cannot enter rpn$per_node"
    level=(--local-dir "local{node}" --persistent-every 100 --ranks-per-node "$per_node"
      --redundancy none)
    saved_grid=(--px 1 --py "$ranks")
    [ "$ranks" -eq 4 ] && saved_grid=(--px 2 --py 2)
    heat reference40 0 reference40 40 --quiet --output reference40.bin
    heat reference50 0 reference50 50 --quiet --output reference50.bin
    "$mpiexec" -n "$ranks" "${flags[@]}" "$heat2d" --nx 48 --ny 40 --steps 40 --save-every 10 \
      --format posix --checkpoint-dir root "${level[@]}" "${saved_grid[@]}" \
      --step-delay-ms 40 >killed.out 2>&1 &
    launcher=$!
    until [ -f local0/cairn-level/30.json ] || ! kill -0 "$launcher" 2>/dev/null; do
      sleep 0.02
    done
    pkill -KILL -P "$launcher"
    wait "$launcher"
    [ -f local0/cairn-level/30.json ] || fail "the run ended before step 30 was saved locally"
    [ -e root/30 ] && fail "step 30 reached the root before the kill"
    # Restarted as N x 1 from local step 30, then as 1 x N from local step 40 (saved as N x 1).
    from=30
    for grid in "$ranks 1 40" "1 $ranks 50"; do
      read -r px py steps <<<"$grid"
      name="grid${px}x${py}"
      heat "$name" 0 root "$steps" "${level[@]}" --px "$px" --py "$py" --output "$name.bin"
      expect "$name" "restarted from step $from"
      expect "$name" "read from the local"
      [ "$ranks" -gt 1 ] && expect "$name" "exchanged between the nodes"
      cmp -s "reference$steps.bin" "$name.bin" || fail "$name: the field differs from the reference"
      from="$steps"
    done
    cd .. || fail "cannot leave rpn$per_node"
  done
  ;;

*)
  echo "unknown case '$case_name'"
  exit 2
  ;;
esac

finish "$case_name on $ranks rank(s)"
