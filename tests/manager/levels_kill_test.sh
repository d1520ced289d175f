#!/usr/bin/env bash
# A job with a node-local level (2 simulated nodes, partner copies, every second local save
# drained) is killed (SIGKILL, through a fault point) during a local save, during the
# exchange of the copies, or during a drain. The previous local step and the persistent root
# stay intact, a step whose drain was killed is never committed on the root, and the restart
# resumes bit-exact from the newest step a level holds, removes what the killed drain left on
# the root, then finishes.
#   levels_kill_test.sh MPIEXEC "MPIEXEC FLAGS" RESTART_JOB
set -u
mpiexec="$1"
read -r -a flags <<<"$2"
job="$3"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# kill_case NAME FAULT RESUMED LEVEL [LEFT]: run 1 dies at FAULT (leaving LEFT on the root when
# given); run 2 resumes from RESUMED read from LEVEL; step 3 (the save that was hit) is never
# committed on the root, and no temporary directory stays there.
kill_case() {
  local name="$1" fault="$2" resumed="$3" level="$4" left="${5:-}"
  local root="$work/$name/root" local="$work/$name/local{node}"
  echo "== $name: run 1 dies at $fault"
  if CAIRN_FAULT="$fault" "$mpiexec" -n 2 "${flags[@]}" "$job" "$root" 6 "$local"; then
    fail "$name: the job was expected to die"
  fi
  [ -e "$root/3/COMMITTED" ] && fail "$name: step 3 is committed on the root"
  [ -e "$root/1/COMMITTED" ] || fail "$name: step 1, drained before the kill, is missing"
  if [ -n "$left" ] && [ ! -e "$root/$left" ]; then fail "$name: the kill left no $left"; fi
  # A scheduler restarts a job once its processes are gone.
  pid="$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$root/cairn.lock")"
  for _ in $(seq 1 300); do
    state="$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)"
    if [ -z "$state" ] || [ "$state" = "Z" ]; then break; fi
    sleep 0.1
  done
  echo "== $name: restart"
  output="$("$mpiexec" -n 2 "${flags[@]}" "$job" "$root" 6 "$local")" || fail "$name: restart failed"
  echo "$output"
  grep -qx "restored $resumed from $level" <<<"$output" ||
    fail "$name: did not resume from step $resumed read from the $level level"
  grep -qx "latest 5" <<<"$output" || fail "$name: did not finish at step 5"
  for tmp in "$root"/*.cairn-tmp; do
    [ -e "$tmp" ] && fail "$name: $tmp stayed on the root after the restart"
  done
}

# Saves are steps 0, 1, 2, ...: the 4th local save is step 3; drains are of steps 1, 3, 5.
kill_case local_save "level.local_save@1:kill#4" 2 local
kill_case copies "level.copies@1:kill#4" 2 local
kill_case drain "checkpoint.async_drain@1:kill#2" 3 local 3.cairn-tmp
[ "$failures" -eq 0 ] && echo "OK" || exit 1
