#!/usr/bin/env bash
# Tests of `cairn drain`, SCR's scavenge: a heat2d job with a node-local level (4 ranks as 2
# simulated nodes of 2 ranks) ends without draining its newest steps to the root, as a killed
# job would; `cairn drain` then writes the newest local step to the root as an ordinary
# checkpoint, rebuilding a lost node from its partner's copy, and the step restores bit for
# bit as an uninterrupted run ends. It refuses, exit 1 with the reason, a lost node without
# redundancy and a run with another rank layout than the job's.
#
#   cli_drain_test.sh CASE HEAT2D CAIRN MPIEXEC "MPIEXEC FLAGS" WORKDIR HAVE_HDF5
# CASE: drain drain_refused
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
source "$here/cli_common.sh"
cli_args "$@"
enter_work

# job ROOT STEPS REDUNDANCY EVERY [HEAT2D OPTIONS...]: heat2d on 4 ranks as 2 nodes of 2 ranks,
# with a local level in local-ROOT/<node>, every EVERY-th save of the run drained, and no drain
# at the end (--no-final-drain).
job() {
  local root="$1" steps="$2" redundancy="$3" every="$4"
  shift 4
  mpi 4 "$heat2d" --nx 48 --ny 40 --steps "$steps" --save-every 10 --format "$fmt" \
    --checkpoint-dir "$root" --local-dir "$work/local-$root/{node}" --redundancy "$redundancy" \
    --persistent-every "$every" --ranks-per-node 2 --no-final-drain "$@" >"$root.log" 2>&1 ||
    { cat "$root.log"; exit 2; }
}
# scavenge NAME STATUS ROOT RANKS RANKS_PER_NODE REDUNDANCY: `cairn drain` of ROOT's level.
scavenge() {
  run "$1" "$2" mpi "$4" "$cairn" drain "$3" --local-dir "$work/local-$3/{node}" \
    --ranks-per-node "$5" --redundancy "$6"
}

case "$case_name" in
drain)
  mpi 4 "$heat2d" --nx 48 --ny 40 --steps 30 --save-every 10 --format "$fmt" \
    --checkpoint-dir ref --output ref.bin --quiet >ref.log 2>&1 || { cat ref.log; exit 2; }
  job root 30 partner 100 --quiet
  run ls-before 0 "$cairn" ls root
  reject ls-before "committed"
  # Node 1's local files are lost with the job (a node that died): its partner holds a copy.
  rm -rf "$work/local-root/1"
  scavenge drain 0 root 4 2 partner
  expect drain "drained step 30 to root (rebuilt node 1 from its copies)"
  run verify 0 "$cairn" verify root
  run ls-after 0 "$cairn" ls root
  expect ls-after "committed"
  # The drained step is an ordinary checkpoint: a run without the local level restarts from
  # it and ends with the field of the uninterrupted run, bit for bit.
  run restored 0 mpi 3 "$heat2d" --nx 48 --ny 40 --steps 30 --save-every 10 --format "$fmt" \
    --checkpoint-dir root --output restored.bin
  expect restored "restarted from step 30 (saved by 4 ranks as 2 x 2)"
  cmp -s ref.bin restored.bin || fail "the field restored from the drained step differs"
  scavenge drain-again 0 root 4 2 partner
  expect drain-again "nothing to drain: local step 30 is not newer than the root's step 30"
  # The job goes on to step 50 from its local level, draining every 5th save of the run: step
  # 40, its 5th (the count goes on from the first job's saves of steps 1, 10, 20 and 30), then
  # ends without a drain.
  job root 50 partner 5
  cp root.log job50.out
  expect job50 "restarted from step 30 (saved by 4 ranks as 2 x 2), read from the local"
  [ -e root/40/COMMITTED ] || fail "step 40, the run's 5th save, was not drained"
  mpi 4 "$cairn" drain root --local-dir "$work/local-root/{node}" --ranks-per-node 2 \
    --redundancy partner --json >drain-json.out 2>drain-json.err ||
    fail "drain --json: exit status $?"
  json_check drain-json "d['drained'] == 50 and d['newest_persistent'] == 40 and not d['failed'] and d['rebuilt_nodes'] == []"
  run verify-50 0 "$cairn" verify root/50
  # Step 50 is stored as the job's drains stored step 40 (its format: the same files).
  [ "$(ls root/40/field)" = "$(ls root/50/field)" ] ||
    fail "step 50's field is not stored as step 40's: $(ls root/40/field) / $(ls root/50/field)"
  ;;

drain_refused)
  job root 30 none 100 --quiet
  # Without redundancy a lost node's part cannot be rebuilt: nothing is written.
  rm -rf "$work/local-root/1"
  scavenge lost 1 root 4 2 none
  expect lost "could not drain: node 1 lost its part of step 30 and redundancy is none"
  run ls-lost 0 "$cairn" ls root
  reject ls-lost "committed"
  [ -e root/30 ] && fail "a step was written to the root"
  # The parts were saved by 2 ranks per node: one rank per node cannot read them.
  job other 30 partner 100 --quiet
  scavenge layout 1 other 2 1 partner
  expect layout "could not drain: the local level in"
  expect layout "it holds step 30, saved by 4 ranks as 2 nodes of 2, 2 ranks: run the drain with that many ranks and that many per node"
  [ -e other/30 ] && fail "a step was written to the root by another layout"
  ;;

*)
  echo "unknown case $case_name"
  exit 2
  ;;
esac
finish "cli_drain_test $case_name"
