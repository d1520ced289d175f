#!/usr/bin/env bash
# The cairn demo: a simulation is preempted the way Slurm does it, restarts on another number
# of ranks, and ends with exactly the same result as a run that was never interrupted.
#
#   1. heat2d (apps/heat2d) runs to the end on 4 ranks: the reference result.
#   2. heat2d runs again on 4 ranks (a 2 x 2 process grid); once its first periodic checkpoint
#      is committed, mpirun gets SIGUSR1, as `sbatch --signal=B:USR1@...` delivers it to a batch
#      script that forwards it. mpirun forwards SIGUSR1 to every rank; cairn's preemption
#      watcher makes all ranks agree on a step, save it and stop.
#   3. `cairn ls` and `cairn inspect` show what is on disk.
#   4. heat2d restarts on 3 ranks (a 1 x 3 grid) from that checkpoint and runs to the end.
#   5. The final field must equal the reference bit for bit (cmp), and `cairn verify` must
#      find the checkpoints intact. Any difference makes the script exit non-zero.
#
# Which signal: Open MPI's mpirun (4.1) forwards SIGUSR1, SIGUSR2, SIGTSTP, SIGCONT, SIGALRM
# and SIGABRT to the ranks (MCA parameter ess_base_forward_signals; it prints "Forwarding
# signal 10 to job" and exits 0 once the ranks stopped). SIGTERM makes mpirun abort the job
# instead: it passes SIGTERM on to the ranks, sends SIGKILL after odls_base_sigkill_timeout
# (1 second by default), and exits 1 -- a small checkpoint may make it, a large one will not.
# So under mpirun, preempt with SIGUSR1; under srun, Slurm signals the ranks itself.
#
# Without arguments: installs what is missing (scripts/setup.sh), builds in $BUILD_DIR
# (default build-demo) when needed, and works in a temporary directory. The test suite calls
#   demo.sh --heat2d BIN --cairn BIN --mpiexec MPIEXEC [--mpiexec-flags "F ..."] [--work DIR]
# Environment: DEMO_NX, DEMO_NY (field size, default 384 x 384), DEMO_STEPS (default 3000).
set -euo pipefail
trap 'echo "demo: FAILED (line $LINENO: $BASH_COMMAND)" >&2' ERR

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
heat2d="" cairn="" mpiexec="" work="" flags=""
while [ $# -gt 0 ]; do
  case "$1" in
    --heat2d) heat2d="$2"; shift 2 ;;
    --cairn) cairn="$2"; shift 2 ;;
    --mpiexec) mpiexec="$2"; shift 2 ;;
    --mpiexec-flags) flags="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# 4 ranks may be more than this machine has cores; idle ranks then yield the CPU.
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1

if [ -z "$heat2d" ]; then
  cd "$root"
  scripts/setup.sh
  build="${BUILD_DIR:-build-demo}"
  if [ ! -x "$build/apps/heat2d/heat2d" ] || [ ! -x "$build/apps/cairn/cairn" ]; then
    generator=()
    if [ ! -f "$build/CMakeCache.txt" ] && command -v ninja >/dev/null; then generator=(-G Ninja); fi
    cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCAIRN_BUILD_TESTS=OFF
  fi
  cmake --build "$build" -j "$(nproc)" --target heat2d cairn_tool
  heat2d="$build/apps/heat2d/heat2d"
  cairn="$build/apps/cairn/cairn"
  flags="--oversubscribe"
fi
mpiexec="${mpiexec:-mpiexec}"
read -r -a mpi_flags <<<"$flags"
if [ -z "$work" ]; then
  work="$(mktemp -d "${TMPDIR:-/tmp}/cairn-demo.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
rm -rf "$work/reference" "$work/run" "$work"/*.bin "$work"/*.log

nx="${DEMO_NX:-384}" ny="${DEMO_NY:-384}" steps="${DEMO_STEPS:-3000}"
problem=(--nx "$nx" --ny "$ny" --steps "$steps" --save-every 100 --max-to-keep 2 --quiet)
step() { printf '\n== %s\n' "$*"; }
fail() { echo "demo: FAILED: $*" >&2; exit 1; }

step "1. reference: heat2d on 4 ranks, uninterrupted ($ny x $nx, $steps steps)"
"$mpiexec" -n 4 "${mpi_flags[@]}" "$heat2d" "${problem[@]}" --checkpoint-dir "$work/reference" \
  --output "$work/reference.bin"

step "2. heat2d on 4 ranks (2 x 2), preempted with SIGUSR1 after its checkpoint of step 100"
# --step-delay-ms keeps this run going (5 ms a step) until the signal finds it; the field does
# not depend on it.
"$mpiexec" -n 4 "${mpi_flags[@]}" "$heat2d" "${problem[@]}" --py 2 --px 2 --step-delay-ms 5 \
  --checkpoint-dir "$work/run" --output "$work/run.bin" >"$work/first.log" 2>&1 &
job=$!
for _ in $(seq 1 600); do
  # The initial checkpoint (step 1) and the first periodic one (step 100): well under way.
  committed="$( (compgen -G "$work/run/*/COMMITTED" || true) | wc -l)"
  if [ "$committed" -ge 2 ] || ! kill -0 "$job" 2>/dev/null; then break; fi
  sleep 0.1
done
echo "demo: sending SIGUSR1 to mpirun (pid $job), as a Slurm batch script forwards it"
kill -USR1 "$job" 2>/dev/null || true
status=0
wait "$job" || status=$?
cat "$work/first.log"
[ "$status" -eq 0 ] || fail "the preempted run exited with status $status"
if [ -e "$work/run.bin" ]; then
  fail "the run finished before the signal arrived (a very slow machine?); raise DEMO_STEPS"
fi
grep -q "preempted" "$work/first.log" || fail "heat2d did not report the preemption"

step "3. what is on disk: cairn ls, cairn inspect"
"$cairn" ls "$work/run"
latest="$(ls -d "$work"/run/[0-9]* | sort -V | tail -1)"
"$cairn" inspect "$latest"

step "4. restart on 3 ranks (1 x 3) from the newest checkpoint, to the end"
"$mpiexec" -n 3 "${mpi_flags[@]}" "$heat2d" "${problem[@]}" --py 1 --px 3 \
  --checkpoint-dir "$work/run" --output "$work/run.bin"

step "5. checks"
if ! cmp "$work/reference.bin" "$work/run.bin"; then
  fail "the final field differs from the uninterrupted run's"
fi
echo "demo: the final field equals the uninterrupted run's bit for bit ($(stat -c %s "$work/run.bin") bytes)"
"$mpiexec" -n 2 "${mpi_flags[@]}" "$cairn" verify --quiet "$work/run" ||
  fail "cairn verify found damage"
echo "demo: OK"
