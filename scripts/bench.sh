#!/usr/bin/env bash
# Runs cairn's benchmark suite (apps/bench): fio and memcpy (the physical limit), hand-written
# POSIX and MPI-IO baselines, h5py + mpi4py, Orbax and cairn, on the same data, on one
# machine, in one run. Installs what it needs (apt-get; Orbax and JAX from PyPI into a virtual
# environment cached outside the clone), builds cairn in Release, runs every contender, writes
# <results-dir>/<date>.json and PNG plots, updates the report and checks the JSON.
#
#   scripts/bench.sh            full run: 2 GiB + a 10,000-leaf tree, 5 repetitions, results
#                               in apps/bench/results/, report BENCHMARKS.md
#   scripts/bench.sh --quick    every contender at small sizes, 3 repetitions (smoke test, a
#                               few minutes); results and report under <build-dir>/bench-quick/
#   scripts/bench.sh --scaling  only the scaling study (apps/bench/scaling.py): cairn at 4, 16
#                               and 64 ranks x 10 and 1,000 leaves with MPI calls counted,
#                               results/scaling-<date>.json, a plot and the report's Scaling
#                               section, with a model at 1,024 and 10,000 ranks
#   scripts/bench.sh --soak     the soak run only: 2000 async saves with retention on a small
#                               tree on 2 ranks (about 40 s), <date>-soak.json and the soak
#                               section of the report; fails when memory, descriptors or files
#                               grow. The full run ends with it too (--quick: 300 saves).
#
# Every repetition runs each contender once, interleaved (the order rotated between
# repetitions), after a warm-up repetition that is not counted (--warmup N, default 1).
# Options: --bytes N (total bytes, suffixes K M G), --reps N, --warmup N, --meta-leaves N,
#   --soak-saves N,
#   --build-dir DIR (default build-bench), --driver PATH (an already built cairn_bench: no
#   build), --results-dir DIR, --report FILE, --scratch DIR (default <build-dir>/bench-scratch:
#   the file system measured), --no-drop-caches, --no-orbax, --mpiexec-flags "FLAGS".
# Environment: CAIRN_BENCH_VENV (default ~/.cache/cairn-bench/venv).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# Debian packages of the benchmark only (the core list is in scripts/setup.sh).
bench_packages=(
  fio                          # the physical limit of the file system
  python3-h5py-mpi python3-mpi4py python3-numpy   # the h5py contender
  python3-venv                 # the Orbax environment
  python3-matplotlib           # PNG plots
  util-linux                   # findmnt (which file system is measured)
)
orbax_pins=("orbax-checkpoint==0.12.8" "jax[cpu]==0.10.2")

quick=0
scaling=0
soak=0
soak_saves=""
bytes=""
reps=""
warmup=1
meta_leaves=""
build="build-bench"
driver=""
results=""
report=""
scratch=""
drop=1
orbax=1
mpiexec_flags="--oversubscribe"
command_line="scripts/bench.sh $*"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --scaling) scaling=1 ;;
    --soak) soak=1 ;;
    --soak-saves) soak_saves="$2"; shift ;;
    --bytes) bytes="$(numfmt --from=iec "$2")"; shift ;;
    --reps) reps="$2"; shift ;;
    --warmup) warmup="$2"; shift ;;
    --meta-leaves) meta_leaves="$2"; shift ;;
    --build-dir) build="$2"; shift ;;
    --driver) driver="$2"; shift ;;
    --results-dir) results="$2"; shift ;;
    --report) report="$2"; shift ;;
    --scratch) scratch="$2"; shift ;;
    --no-drop-caches) drop=0 ;;
    --no-orbax) orbax=0 ;;
    --mpiexec-flags) mpiexec_flags="$2"; shift ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

if [ "$quick" -eq 1 ]; then
  bytes="${bytes:-$((64 << 20))}"
  reps="${reps:-3}"
  meta_leaves="${meta_leaves:-1000}"
  results="${results:-$build/bench-quick}"
  report="${report:-$results/BENCHMARKS.md}"
  soak_saves="${soak_saves:-300}"
else
  bytes="${bytes:-$((2 << 30))}"
  reps="${reps:-5}"  # enough for the report's min / median / max of every ratio to mean something
  meta_leaves="${meta_leaves:-10000}"
  results="${results:-apps/bench/results}"
  report="${report:-BENCHMARKS.md}"
  soak_saves="${soak_saves:-2000}"
fi
scratch="${scratch:-$build/bench-scratch}"
work="$scratch/cairn-bench.$$"  # removed on exit; nothing else under --scratch is touched
trap 'rm -rf "$work"' EXIT
start=$SECONDS

scripts/setup.sh "${bench_packages[@]}"

if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  case " $mpiexec_flags " in
    *" --allow-run-as-root "*) ;;
    *) mpiexec_flags="$mpiexec_flags --allow-run-as-root" ;;
  esac
fi
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1

if [ -z "$driver" ]; then
  generator=()
  if [ ! -f "$build/CMakeCache.txt" ] && command -v ninja >/dev/null; then
    generator=(-G Ninja)
  fi
  cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCAIRN_BUILD_TESTS=OFF \
    >/dev/null
  cmake --build "$build" -j "$(nproc)" --target cairn_bench
  driver="$build/apps/bench/cairn_bench"
fi
if [ ! -x "$driver" ]; then
  echo "bench.sh: $driver is not an executable cairn_bench" >&2
  exit 1
fi

if [ "$scaling" -eq 1 ]; then
  # The PMPI counting layer is built next to the driver (--driver: in the driver's directory).
  count_lib="$(dirname "$driver")/libcairn_mpi_count.so"
  if [ ! -f "$count_lib" ]; then
    cmake --build "$build" -j "$(nproc)" --target cairn_mpi_count
  fi
  version="$(sed -n 's/^project(cairn VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)"
  version="$version ($(git -C "$root" describe --always --dirty 2>/dev/null || echo 'no git'))"
  /usr/bin/python3 apps/bench/scaling.py --driver "$driver" --count-lib "$count_lib" \
    --scratch "$work" --results-dir "${results:-apps/bench/results}" \
    --report "${report:-BENCHMARKS.md}" --mpiexec-flags="$mpiexec_flags" \
    --cairn-version "$version" --command "$command_line" ${reps:+--reps "$reps"}
  echo "bench.sh: done in $((SECONDS - start)) s"
  exit 0
fi

# Orbax and JAX come from PyPI, in a virtual environment kept outside the clone. Without it
# (no network, pip fails) the run goes on and the JSON says why Orbax is unavailable.
venv="${CAIRN_BENCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/cairn-bench/venv}"
orbax_python=""
orbax_why=""
orbax_ready() {
  "$venv/bin/python" -c "import orbax.checkpoint, jax" >/dev/null 2>&1
}
if [ "$soak" -eq 1 ]; then
  orbax_why="not needed by --soak"
elif [ "$orbax" -eq 0 ]; then
  orbax_why="disabled by --no-orbax"
else
  mkdir -p "$(dirname "$venv")"
  exec 9>"$venv.lock"
  flock 9  # one environment build at a time (e.g. a manual run next to the ctest)
  if ! orbax_ready; then
    echo "bench.sh: creating the Orbax environment in $venv"
    tmp="$venv.tmp.$$"
    rm -rf "$tmp" "$venv"
    log="$(dirname "$venv")/pip.log"
    if /usr/bin/python3 -m venv "$tmp" >"$log" 2>&1 &&
       "$tmp/bin/pip" install --disable-pip-version-check -q "${orbax_pins[@]}" >>"$log" 2>&1 &&
       mv "$tmp" "$venv"; then
      :
    else
      orbax_why="creating the environment failed: $(grep -v '^\s*$' "$log" | tail -n 1)"
      rm -rf "$tmp"
    fi
  fi
  if [ -z "$orbax_why" ]; then
    if orbax_ready; then
      orbax_python="$venv/bin/python"
    else
      orbax_why="$venv/bin/python cannot import orbax.checkpoint and jax"
    fi
  fi
  exec 9>&-
fi

name="$(date -u +%Y-%m-%d-%H%M)"
[ "$quick" -eq 1 ] && name="$name-quick"
version="$(sed -n 's/^project(cairn VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)"
version="$version ($(git -C "$root" describe --always --dirty 2>/dev/null || echo 'no git'))"
args=(--driver "$driver" --scratch "$work" --results-dir "$results" --report "$report"
      --total-bytes "$bytes" --meta-leaves "$meta_leaves" --reps "$reps" --warmup "$warmup"
      --name "$name"
      --mpiexec-flags "$mpiexec_flags" --cairn-version "$version" --command "$command_line"
      --soak-saves "$soak_saves")
[ "$quick" -eq 1 ] && args+=(--quick)
[ "$soak" -eq 1 ] && args+=(--soak)
[ "$drop" -eq 0 ] && args+=(--no-drop-caches)
if [ -n "$orbax_python" ]; then
  args+=(--orbax-python "$orbax_python")
else
  echo "bench.sh: Orbax unavailable: $orbax_why"
  args+=(--orbax-unavailable "$orbax_why")
fi
/usr/bin/python3 apps/bench/run_bench.py "${args[@]}"
if [ "$soak" -eq 0 ]; then
  /usr/bin/python3 apps/bench/check_results.py "$results/$name.json" --report "$report"
fi
/usr/bin/python3 apps/bench/check_results.py "$results/$name-soak.json" --report "$report"
echo "bench.sh: done in $((SECONDS - start)) s"
