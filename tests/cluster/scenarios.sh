#!/usr/bin/env bash
# heat2d with a node-local level on an emulated cluster (cluster.sh): whole hosts are lost,
# replaced or cut off, and each restart must end with the field of a run that was never
# interrupted, bit for bit, served by the level and step stated below. Every host has its own
# /dev/shm, so `--local-dir /dev/shm/heat2d` is a node-local directory as on a real cluster,
# and the nodes are those MPI finds (no --ranks-per-node).
#
#   scenarios.sh SCENARIO HEAT2D MPIEXEC "MPIEXEC FLAGS" WORKDIR
# The uninterrupted reference runs on this machine with MPIEXEC and its flags; everything else
# runs on the cluster: hosts hosta..hostd, and hoste as a spare.
# SCENARIO:
#   lose_host     hostc is killed (its init and every process on it) while the newest local
#                 step is on no other level; the restart on the same host names, with a fresh
#                 hostc, is served by the local level, node 2 rebuilt from its copies;
#   spare_last    the same loss; the restart on hosta,hostb,hostd,hoste (the spare appended
#                 last) finds each part on the host that holds it and rebuilds hostc's part on
#                 hoste (node 3 of the new layout);
#   survivors     the same loss; the restart on the three survivors (3 ranks) is served by the
#                 persistent level, its newest step (issue 51 item 4: the local level's);
#   other_grid    the job (2 x 2) is killed, no host lost; the restart as 4 x 1 on the same
#                 hosts is served by the local level, cells exchanged between the hosts;
#   silent_loss   hostc's cable is cut during a save: nothing tells the job, which blocks until
#                 it is stopped from outside (SIGTERM, then SIGKILL, as `timeout -k` does);
#                 hostc is then replaced and the restart is served by the local level, node 2
#                 rebuilt from its copies;
#   nothing_left  run last: the clusters of the other scenarios left no namespace, mount or
#                 host process behind, even those of a test that was killed.
# Each scenario ends by tearing its cluster down and checking that nothing of it is left.
set -uo pipefail

scenario="$1" heat2d="$2" mpiexec="$3"
read -r -a flags <<<"$4"
work="$5/$scenario"
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../apps/cli_common.sh"
source "$here/cluster.sh"
if ! why="$(cluster_requirements)"; then
  echo "skipped: $why"
  exit 77
fi
if [ "$scenario" = nothing_left ]; then
  # After the other scenarios (ctest's fixture cleanup): none of their clusters left anything.
  cluster_leftovers "$5" || exit 1
  echo "the clusters of the ended tests left nothing behind"
  exit 0
fi
enter_work
cluster_up "$work/cluster" hosta hostb hostc hostd hoste || exit 1

root="$work/root"
problem=(--nx 64 --ny 48 --save-every 10 --format posix)
# heat2d saves step 1 and every 10th; every third save is drained to the root (steps 20, 50,
# 80): when the job is interrupted after local step 40, the newest step is on the local level
# only.
level=(--local-dir /dev/shm/heat2d --redundancy partner --persistent-every 3)
killed_steps=80
job_seconds=120  # the interrupted job's limit

# reference STEPS: the uninterrupted run's field after STEPS steps, in referenceSTEPS.bin, on
# this machine (as root, which the cluster needs anyway); ends the test when it fails.
reference() {
  run "reference$1" 0 env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    timeout -k 10 120 "$mpiexec" -n 4 "${flags[@]}" "$heat2d" "${problem[@]}" --steps "$1" \
    --checkpoint-dir "reference$1" --quiet --output "reference$1.bin"
  [ -f "reference$1.bin" ] || finish "$scenario"
}

# heat NAME HOSTS STEPS [ARGS...]: heat2d on the cluster, one rank per host of HOSTS
# (comma-separated, rank i on the i-th), from the checkpoints in $root; must exit 0.
heat() {
  local name="$1" hosts="$2" steps="$3"
  shift 3
  local -a list
  IFS=, read -r -a list <<<"$hosts"
  run "$name" 0 cluster_mpiexec 120 -n "${#list[@]}" --host "$hosts" "$heat2d" "${problem[@]}" \
    --steps "$steps" --checkpoint-dir "$root" "${level[@]}" --output "$name.bin" "$@"
}

# local_steps HOST: the steps the local level of HOST has recorded, ascending.
local_steps() {
  local dir record
  dir="$(cluster_path "$1" /dev/shm/heat2d/cairn-level)" || return 0
  for record in "$dir"/*.json; do
    [ -e "$record" ] || continue
    record="${record##*/}"
    echo "${record%.json}"
  done | sort -n
}

# newest_common HOST...: the newest step recorded by the local level of every HOST (0: none).
newest_common() {
  local host common="" steps
  for host in "$@"; do
    steps="$(local_steps "$host")"
    if [ -z "$common" ]; then
      common="$steps"
    else
      common="$(grep -Fx -f <(echo "$steps") <<<"$common")"
    fi
  done
  echo "$common" | tail -1 | grep . || echo 0
}

# start_interruptible FAULT [ARGS...]: heat2d on hosta..hostd (4 ranks) in the background,
# with CAIRN_FAULT=FAULT, until every host has recorded local step 40 and the root holds step
# 20; returns 1 (having said why) when the run ended first. FAULT holds the job at its sixth
# save (step 50), so that local step 40 stays the newest complete one, whatever the timing of
# what interrupts the job.
start_interruptible() {
  local fault="$1"
  shift
  cluster_mpiexec_bg killed.out "$job_seconds" -n 4 --host hosta,hostb,hostc,hostd \
    -x CAIRN_FAULT="$fault" "$heat2d" "${problem[@]}" --steps "$killed_steps" \
    --checkpoint-dir "$root" "${level[@]}" "$@"
  local start=$SECONDS
  while [ $((SECONDS - start)) -lt 120 ]; do
    [ "$(newest_common hosta hostb hostc hostd)" -ge 40 ] && [ -f "$root/20/COMMITTED" ] &&
      return 0
    kill -0 "$cluster_job" 2>/dev/null || break
    sleep 0.02
  done
  fail "the run ended (or took two minutes) before local step 40 and persistent step 20"
  sed 's/^/    /' killed.out
  return 1
}
# Every rank sleeps for a minute before its part of step 50 (and of any later step) is written.
hold_at_50="level.local_save@*:stall=60000#6+"

# lose HOST: the whole host dies (its init is killed, with every process of the host), the job
# ends (mpiexec notices the lost daemon), and the host's namespaces and /dev/shm are removed.
lose() {
  local victim="$1" host survivors=()
  for host in hosta hostb hostc hostd; do [ "$host" != "$victim" ] && survivors+=("$host"); done
  cluster_kill_host "$victim" || fail "cannot kill $victim"
  cluster_job_wait
  echo "mpiexec's status after $victim was lost: $?" >>killed.out
  cluster_wait_idle "${survivors[@]}" || fail "processes of the killed job are left"
  expect_interrupted "${survivors[@]}"
}

# expect_interrupted HOST...: the interrupted run did not finish, local step 40 is the newest
# that every HOST recorded (the run was held before step 50), and it is not on the persistent
# level: only the local level can serve it.
expect_interrupted() {
  local newest
  reject killed "finished step"
  newest="$(newest_common "$@")"
  [ "$newest" -eq 40 ] || fail "the interrupted run's newest local step is $newest, not 40"
  [ -e "$root/40" ] && fail "step 40 reached the persistent level"
  return 0
}

# expect_served NAME LEVEL STEP: NAME restarted from STEP, read from LEVEL.
expect_served() {
  expect "$1" "restarted from step $3 ("
  expect "$1" "read from the $2"
}

# expect_exact NAME STEPS: NAME's field is the uninterrupted run's.
expect_exact() {
  cmp -s "reference$2.bin" "$1.bin" || fail "$1: the field differs from the uninterrupted run's"
}

reference "$killed_steps"
case "$scenario" in
lose_host)
  start_interruptible "$hold_at_50" || finish "$scenario"
  lose hostc
  cluster_add_host hostc || fail "cannot replace hostc"
  heat again hosta,hostb,hostc,hostd "$killed_steps"
  expect_served again local 40
  expect again "rebuilt the local files of node 2 from their copies"
  expect_exact again "$killed_steps"
  ;;

spare_last)
  start_interruptible "$hold_at_50" || finish "$scenario"
  lose hostc
  heat again hosta,hostb,hostd,hoste "$killed_steps"
  expect_served again local 40
  # The lost part (node 2 of the saved layout) is rebuilt on hoste, node 3 of this one.
  expect again "rebuilt the local files of node 3 from their copies"
  expect_exact again "$killed_steps"
  ;;

survivors)
  start_interruptible "$hold_at_50" || finish "$scenario"
  lose hostc
  # Issue 51 item 4: on fewer nodes the newest local step (40) should serve, its parts
  # exchanged between the survivors and the lost one rebuilt from its copies. Today the local
  # level does not serve another world size, and the persistent level's newest step does.
  heat again hosta,hostb,hostd "$killed_steps"
  expect_served again persistent 20
  expect again "the local level could not serve"
  expect_exact again "$killed_steps"
  ;;

other_grid)
  # The job is killed (its mpiexec, then its daemons end the ranks); no host is lost.
  start_interruptible "$hold_at_50" --px 2 --py 2 || finish "$scenario"
  cluster_kill_job
  cluster_job_wait
  cluster_wait_idle hosta hostb hostc hostd || fail "processes of the killed job are left"
  expect_interrupted hosta hostb hostc hostd
  heat again hosta,hostb,hostc,hostd "$killed_steps" --px 4 --py 1
  expect_served again local 40
  expect again "exchanged between the nodes"
  expect_exact again "$killed_steps"
  ;;

silent_loss)
  # hostc's cable is cut while step 50 is being saved: each host's part of step 50 is
  # committed and the copies are about to be exchanged (the fault holds the job there for
  # five seconds, long enough to cut the cable). Issue 51 item 7 asks that the job then end
  # within its deadline with a message naming the host. Today nothing notices a host that
  # stops answering: the exchange with hostc blocks, mpiexec keeps waiting for hostc's daemon
  # (cairn's collective deadline, CommOptions::barrier_timeout, is 10 minutes, and heat2d has
  # no option to shorten it), and the job must be stopped from outside. This checks that it is
  # still blocked 30 s after the cut; once cairn ends it sooner, check its message here.
  start_interruptible "level.copies@*:stall=5000#6" || finish "$scenario"
  committed=0
  start=$SECONDS
  while [ "$committed" -lt 4 ] && [ $((SECONDS - start)) -lt 60 ]; do
    committed=0
    for host in hosta hostb hostc hostd; do
      [ -f "$(cluster_path "$host" /dev/shm/heat2d/50/COMMITTED)" ] && committed=$((committed + 1))
    done
    sleep 0.02
  done
  [ "$committed" -eq 4 ] || fail "the hosts' parts of step 50 were not committed"
  cluster_cut_host hostc || fail "cannot cut hostc"
  cut_at=$SECONDS
  while kill -0 "$cluster_job" 2>/dev/null && [ $((SECONDS - cut_at)) -lt 30 ]; do sleep 0.2; done
  if kill -0 "$cluster_job" 2>/dev/null; then
    echo "the job was still blocked $((SECONDS - cut_at)) s after hostc was cut: stopping it"
    cluster_stop_job
  else
    fail "the job ended by itself $((SECONDS - cut_at)) s after hostc was cut: check its message"
  fi
  cluster_job_wait
  echo "mpiexec's status: $?; its output:"
  sed 's/^/    /' killed.out
  expect_interrupted hosta hostb hostd
  cluster_kill_host hostc || fail "cannot kill hostc"
  cluster_wait_idle hosta hostb hostd || fail "processes of the stopped job are left"
  cluster_add_host hostc || fail "cannot replace hostc"
  heat again hosta,hostb,hostc,hostd "$killed_steps"
  expect_served again local 40
  expect again "rebuilt the local files of node 2 from their copies"
  expect_exact again "$killed_steps"
  ;;

*)
  echo "unknown scenario '$scenario'"
  exit 2
  ;;
esac

cluster_down || fail "the cluster left something behind"
finish "cluster scenario $scenario"
