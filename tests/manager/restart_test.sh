#!/usr/bin/env bash
# Kills one rank (SIGKILL, through the fault point storage.posix_write) while the async save of
# step 3 is being written, restarts the job, and checks that it resumes from step 2 (the
# newest committed step) with identical data, that step 3 was never committed, and that the
# restarted job finishes.
#   restart_test.sh MPIEXEC "MPIEXEC FLAGS" RESTART_JOB
set -u
mpiexec="$1"
read -r -a flags <<<"$2"
job="$3"
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT

echo "== run 1: rank 1 is killed during the save of step 3"
if CAIRN_FAULT="storage.posix_write@1:kill#4" "$mpiexec" -n 2 "${flags[@]}" "$job" "$root/ckpt" 6; then
  echo "FAIL: the job was expected to die"
  exit 1
fi
ls -a "$root/ckpt"
if [ -e "$root/ckpt/3/COMMITTED" ]; then
  echo "FAIL: step 3 was committed although a rank died while writing it"
  exit 1
fi
if [ ! -e "$root/ckpt/2/COMMITTED" ]; then
  echo "FAIL: step 2, committed before the kill, is missing"
  exit 1
fi

# A scheduler restarts a job only once its processes are gone: wait for the killed job's
# ranks (mpiexec may return before every rank has exited).
pid="$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$root/ckpt/cairn.lock")"
for _ in $(seq 1 300); do
  state="$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)"
  if [ -z "$state" ] || [ "$state" = "Z" ]; then break; fi
  sleep 0.1
done

echo "== run 2: restart"
output="$("$mpiexec" -n 2 "${flags[@]}" "$job" "$root/ckpt" 6)" || { echo "$output"; echo "FAIL: restart failed"; exit 1; }
echo "$output"
grep -qx "restored 2" <<<"$output" || { echo "FAIL: did not resume from step 2"; exit 1; }
grep -qx "latest 5" <<<"$output" || { echo "FAIL: did not finish at step 5"; exit 1; }
echo "OK"
