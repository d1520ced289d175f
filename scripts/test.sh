#!/usr/bin/env bash
# Checks everything CI checks (.ci/run runs it), from a clean or an existing checkout.
#
#   scripts/test.sh [--quick]
#   --quick     the contributors' lane: steps 1, 2, 2a, 3 and 3a only, and step 3 without the tests
#               of label long (the Slurm jobs, the kill trials, the benchmarks, the install
#               checks, the 64-rank run, the emulated cluster's silent host loss): minutes, once
#               built
#   -h, --help  prints this text
#
# Steps:
#   1. scripts/setup.sh (installs missing packages; instant when all are there);
#   2. formatting of every C/C++/CUDA file under include lib apps tests (clang-format);
#   2a. the docs name only files and symbols that exist (scripts/check_docs.sh);
#   3. configure, build and ctest in $BUILD_DIR (every step configures with
#      -DCAIRN_WERROR=ON, and the steps that build tests with -DCAIRN_FAULT_INJECTION=ON: both
#      are off by default, for people who install);
#   3a. the API reference (target cairn_docs, Doxygen: C++, C and the Fortran module) in
#      $BUILD_DIR, which step 3's `all` already built unless CAIRN_BUILD_DOCS is off there: any
#      warning, such as a public declaration without a doc comment, fails it; the other steps
#      build the programs they test only, and the fuzz step turns the reference off;
#   3b. "no-hdf5": a Release build without HDF5 (and CUDA) in $NOHDF5_BUILD_DIR, of the
#      library, the cairn tool, heat2d and the tests whose behaviour depends on the storage
#      format (storage, conformance, checkpoint, the C API's manager and cross-language tests,
#      the command-line tool's tests): checkpoints in posix, hdf5 refused with a message;
#   4. the same with AddressSanitizer + UndefinedBehaviorSanitizer in $ASAN_BUILD_DIR (a Debug
#      build: assertions on, and it compiles about four times faster than an optimised
#      sanitizer build), without the suites that check something other than memory use, and
#      building only the programs of the tests it runs;
#   5. the threaded tests (labels async, manager; 2 ranks) under ThreadSanitizer in
#      $TSAN_BUILD_DIR;
#   6. the libFuzzer targets of tests/fuzz (clang, ASan + UBSan, Debug) in $FUZZ_BUILD_DIR,
#      each run for CAIRN_FUZZ_SECONDS (ctest label fuzz).
# Runs every step it can, prints a summary, and exits non-zero when any step failed.
#
# Environment:
#   BUILD_DIR                   build directory of step 3 (default: build)
#   ASAN_BUILD_DIR              build directory of step 4 (default: build-asan)
#   TSAN_BUILD_DIR              build directory of step 5 (default: build-tsan)
#   FUZZ_BUILD_DIR              build directory of step 6 (default: build-fuzz)
#   NOHDF5_BUILD_DIR            build directory of step 3b (default: build-nohdf5)
#   CAIRN_TEST_NOHDF5=0         skip step 3b
#   CAIRN_TEST_SANITIZERS=0     skip step 4
#   CAIRN_TEST_TSAN=0           skip step 5
#   CAIRN_TEST_FUZZ=0           skip step 6
#   CAIRN_FUZZ_SECONDS          seconds per fuzz target in step 6 (default: 10)
#   CAIRN_SANITIZER_CTEST_ARGS  extra ctest arguments for step 4, e.g. "-L mpi -LE slow"
#                               (default: "-LE kill|np4|np64|demo|install|apps|examples|xlang|
#                               orbax_parity|slurm|cluster": the kill trials, the demo, the install
#                               checks, the command-line and example programs, the cross-language
#                               and Orbax-parity scenarios, the Slurm jobs and the emulated
#                               cluster's scenarios test crash consistency,
#                               behaviour and packaging, not memory use (the library code they
#                               run is covered by the GoogleTest suites, the tools' parsing by
#                               the fuzzers), and the 4- and 64-rank runs repeat the code paths
#                               of the 2-rank ones; all run in step 3. Set it empty to run every
#                               test)
#   CAIRN_CTEST_ARGS            extra ctest arguments for step 3 (default: none; with --quick:
#                               "-LE long")
#   CAIRN_CMAKE_ARGS            extra configure arguments for steps 3, 3b and 4
#   JOBS                        build and ctest parallelism (default: nproc)
set -uo pipefail

# usage: prints the comment at the top of this file.
usage() { sed -n '2,/^set -uo pipefail$/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }
quick=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "test.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 1

BUILD_DIR="${BUILD_DIR:-build}"
ASAN_BUILD_DIR="${ASAN_BUILD_DIR:-build-asan}"
TSAN_BUILD_DIR="${TSAN_BUILD_DIR:-build-tsan}"
FUZZ_BUILD_DIR="${FUZZ_BUILD_DIR:-build-fuzz}"
NOHDF5_BUILD_DIR="${NOHDF5_BUILD_DIR:-build-nohdf5}"
JOBS="${JOBS:-$(nproc)}"
read -r -a extra_cmake_args <<<"${CAIRN_CMAKE_ARGS:-}"

start_all=$(date +%s)
failed=()
summary=()

say() { printf '\n== %s\n' "$*"; }
elapsed() { echo "$(($(date +%s) - $1))s"; }

# --- 1. Packages.
say "setup"
if ! scripts/setup.sh; then
  echo "test.sh: scripts/setup.sh failed; cannot build" >&2
  exit 1
fi

# --- MPI environment for the tests. mpiexec refuses to run as root without these, and the
# 4-rank tests need more ranks than this machine may have cores.
mpiexec_flags="--oversubscribe"
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_rmaps_base_oversubscribe=1
  mpiexec_flags="--oversubscribe;--allow-run-as-root"
fi
# ctest runs several mpiexec at once and none of them knows about the others: let idle ranks
# yield the CPU instead of spinning, or oversubscribed tests crawl (and time out).
export OMPI_MCA_mpi_yield_when_idle=1

# --- 2. Formatting.
say "format (clang-format $(clang-format --version | grep -o '[0-9][0-9.]*' | head -1))"
start=$(date +%s)
unformatted=()
while IFS= read -r -d '' f; do
  if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
    unformatted+=("$f")
  fi
done < <(find include lib apps tests -type f \
           \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.cu' \) -print0 2>/dev/null |
         sort -z)
if [ ${#unformatted[@]} -eq 0 ]; then
  summary+=("format: ok ($(elapsed "$start"))")
else
  echo "These files are not formatted with .clang-format:"
  printf '  %s\n' "${unformatted[@]}"
  echo "Fix with: clang-format -i ${unformatted[*]}"
  failed+=("format")
  summary+=("format: ${#unformatted[@]} files need clang-format")
fi

# --- 2a. The docs name only files and symbols that exist (scripts/check_docs.sh).
say "docs (scripts/check_docs.sh)"
start=$(date +%s)
if scripts/check_docs.sh; then
  summary+=("docs: ok ($(elapsed "$start"))")
else
  failed+=("docs")
  summary+=("docs: names files or symbols that do not exist (scripts/check_docs.sh)")
fi

# cuda_linkage <build dir>: one line saying whether libcairn was built with CUDA/NCCL (from the
# generated config.hpp) and which CUDA libraries it links (ldd).
cuda_linkage() {
  local dir="$1" config="$1/include/cairn/config.hpp" lib have libs
  have="$(sed -n 's/^#define CAIRN_HAVE_\(CUDA\|NCCL\) \([01]\)$/\1=\2/p' "$config" 2>/dev/null | tr '\n' ' ')"
  lib="$(find "$dir/lib" -maxdepth 1 -name 'libcairn.so*' -type f 2>/dev/null | head -1)"
  libs=""
  if [ -n "$lib" ]; then
    libs="$(ldd "$lib" 2>/dev/null | grep -oE 'lib(cudart|nccl)\.so[.0-9]*' | sort -u | tr '\n' ' ')"
  fi
  echo "cuda: ${have:-unknown }links ${libs:-no CUDA libraries}"
}

# configure_build_test <name> <build dir> <ctest args> <targets> [cmake args...]
# <targets>: space-separated build targets, "" for everything, or "@tests" for the programs
# (and shared libraries) of the tests that <ctest args> select (scripts/ctest_programs.py;
# Ninja only, everything otherwise).
configure_build_test() {
  local name="$1" dir="$2" ctest_args="$3" targets="$4"
  shift 4
  local start generator log line
  start=$(date +%s)

  # Keep the generator of an existing build directory; otherwise Ninja when available.
  generator=""
  if [ -f "$dir/CMakeCache.txt" ]; then
    generator="$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$dir/CMakeCache.txt")"
  elif command -v ninja >/dev/null; then
    generator="Ninja"
  else
    generator="Unix Makefiles"
  fi

  say "$name: configure $dir ($generator)"
  if ! cmake -S . -B "$dir" -G "$generator" "-DCAIRN_MPIEXEC_FLAGS=$mpiexec_flags" \
       -DCAIRN_WERROR=ON "${extra_cmake_args[@]}" "$@"; then
    failed+=("$name configure")
    summary+=("$name: configure failed")
    return
  fi

  if [ "$targets" = "@tests" ]; then
    targets=""
    if [ "$generator" = "Ninja" ]; then
      local -a selection
      read -r -a selection <<<"$ctest_args"
      if ! targets="$(/usr/bin/python3 scripts/ctest_programs.py "$dir" "${selection[@]}")"; then
        failed+=("$name configure")
        summary+=("$name: listing the programs of its tests failed")
        return
      fi
    fi
  fi
  say "$name: build (-j$JOBS)${targets:+ $targets}"
  local -a target_args=()
  if [ -n "$targets" ]; then
    read -r -a target_args <<<"$targets"
    target_args=(--target "${target_args[@]}")
  fi
  if ! cmake --build "$dir" -j "$JOBS" "${target_args[@]}"; then
    failed+=("$name build")
    summary+=("$name: build failed ($(elapsed "$start"))")
    return
  fi

  # Show what the CUDA code linked against (CI must show it was compiled and linked).
  local cuda_line
  cuda_line="$(cuda_linkage "$dir")"
  echo "$name: $cuda_line"
  summary+=("$name: $cuda_line")

  # ctest starts at most CTEST_SLOTS (default JOBS) processors' worth of tests at once,
  # counting each test's PROCESSORS (its rank count); a test wider than that runs alone.
  local slots="${CTEST_SLOTS:-$JOBS}"
  say "$name: ctest -j$slots $ctest_args"
  log="$dir/test.sh-ctest.log"
  local -a args
  read -r -a args <<<"$ctest_args"
  ctest --test-dir "$dir" --output-on-failure -j "$slots" "${args[@]}" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  line="$(grep -E '[0-9]+% tests passed|No tests were found' "$log" | tail -1)"
  [ -n "$line" ] || line="ctest exited with status $rc"
  if [ "$rc" -ne 0 ]; then
    failed+=("$name tests")
  fi
  summary+=("$name: $line ($(elapsed "$start"))")
}

# --- 3. Default configuration. Its tests mostly wait rather than compute (MPI's start-up, the
# deadlines the fault tests provoke, the Slurm test's scheduler signals): on 2 cores the whole
# suite took 9.6 minutes at -j5 (2.4 minutes of user CPU, 3.6 of system), against 11.8 minutes
# at -j3. So this step and the no-hdf5 one start WAITING_SLOTS processors' worth of tests at
# once, three more than JOBS; a 4-rank test then runs next to a 1-rank one instead of alone.
WAITING_SLOTS=$((JOBS + 3))
if [ "$quick" = 1 ]; then
  CTEST_SLOTS=$WAITING_SLOTS configure_build_test "default" "$BUILD_DIR" \
    "${CAIRN_CTEST_ARGS--LE long}" "" -DCAIRN_FAULT_INJECTION=ON
else
  CTEST_SLOTS=$WAITING_SLOTS configure_build_test "default" "$BUILD_DIR" "${CAIRN_CTEST_ARGS:-}" \
    "" -DCAIRN_FAULT_INJECTION=ON
fi

# --- 3a. The API reference: Doxygen over include/cairn and the Fortran module; with
# CAIRN_WERROR every warning (an undocumented public declaration, a broken doc command) fails
# the target.
say "docs: cairn_docs (Doxygen) in $BUILD_DIR"
start=$(date +%s)
if ! command -v doxygen >/dev/null; then
  failed+=("docs")
  summary+=("docs: doxygen not found (scripts/setup.sh installs it)")
elif cmake --build "$BUILD_DIR" --target cairn_docs; then
  summary+=("docs: API reference without warnings ($(elapsed "$start"))")
else
  failed+=("docs")
  summary+=("docs: Doxygen warnings (see above) ($(elapsed "$start"))")
fi

# --- 3b. Without HDF5: only the programs whose tests depend on the storage format, and exactly
# their tests (ctest would run, and fail, a test whose program was not built), on 2 ranks
# and on 1 where a suite has no 2-rank copy: the default step runs their posix cases on 1, 2
# and 4 ranks already, this one checks that a build without HDF5 works.
if [ "$quick" = 1 ]; then
  summary+=("no-hdf5: skipped (--quick)")
elif [ "${CAIRN_TEST_NOHDF5:-1}" != "0" ]; then
  nohdf5_gtests="test_storage test_verify_tree test_prefetch test_scatter test_conformance"
  nohdf5_gtests+=" test_format_v1"
  nohdf5_gtests+=" test_damaged_chunks test_checkpointer test_async test_faults"
  nohdf5_gtests+=" test_stalls test_file_safety"
  nohdf5_gtests+=" test_save_args test_derived_leaves test_empty_nodes test_restore_memory"
  nohdf5_gtests+=" test_compression test_binary_index"
  nohdf5_gtests+=" test_aggregation test_aggregation_faults test_incremental"
  nohdf5_regex="^(${nohdf5_gtests// /|})\\.|^capi\\.test_capi_manager\\."
  nohdf5_regex+="|^xlang\\.c_(save|restores_c)\\.|^apps\\.cli\\."
  CTEST_SLOTS=$WAITING_SLOTS configure_build_test "no-hdf5" "$NOHDF5_BUILD_DIR" \
    "-R $nohdf5_regex -LE np4|np1_twin" \
    "cairn cairn_tool cairn_stats_writer heat2d $nohdf5_gtests test_capi_manager xlang_c" \
    -DCAIRN_USE_HDF5=OFF -DCAIRN_USE_CUDA=OFF -DCMAKE_BUILD_TYPE=Release \
    -DCAIRN_FAULT_INJECTION=ON
else
  summary+=("no-hdf5: skipped (CAIRN_TEST_NOHDF5=0)")
fi

# --- 4. Sanitizers: the suites on 1 rank that have no 2-rank copy, and the 2-rank copies
# (np1_twin: a 1-rank copy of a suite that also runs on 2 ranks, see tests/CMakeLists.txt).
if [ "$quick" = 1 ]; then
  summary+=("sanitizers: skipped (--quick)")
elif [ "${CAIRN_TEST_SANITIZERS:-1}" != "0" ]; then
  # Open MPI keeps allocations alive past MPI_Finalize on purpose (and its helpers leak), so
  # LeakSanitizer would fail every MPI test on memory cairn does not own: leaks are off.
  # Any other ASan or UBSan report stops the test with a stack trace.
  # protect_shadow_gap=0: on a GPU node the CUDA driver maps memory where ASan keeps its
  # shadow gap; without it every CUDA test would fail there (no effect without a GPU).
  export ASAN_OPTIONS="detect_leaks=0:protect_shadow_gap=0:${ASAN_OPTIONS:-}"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
  # Two slots more than JOBS: these tests wait too, if less than the default step's (on 2
  # cores, 2.4 minutes at -j4 against 3.6 at -j2).
  CTEST_SLOTS=$((JOBS + 2)) configure_build_test "sanitizers" "$ASAN_BUILD_DIR" \
    "${CAIRN_SANITIZER_CTEST_ARGS--LE kill|np4|np64|np1_twin|demo|install|apps|examples|xlang|orbax_parity|slurm|cluster}" "@tests" \
    -DCMAKE_BUILD_TYPE=Debug "-DCAIRN_SANITIZE=address,undefined" -DCAIRN_FAULT_INJECTION=ON
else
  summary+=("sanitizers: skipped (CAIRN_TEST_SANITIZERS=0)")
fi

# --- 5. ThreadSanitizer on the tests that run background threads (async saves and their
# staging memory, the manager's async commits and background deletes, preemption signals).
# Open MPI and HDF5 are not built for TSan; tests/tsan.supp silences reports whose stacks
# pass through them (never an entry naming cairn).
if [ "$quick" = 1 ]; then
  summary+=("tsan: skipped (--quick)")
elif [ "${CAIRN_TEST_TSAN:-1}" != "0" ]; then
  export TSAN_OPTIONS="suppressions=$root/tests/tsan.supp:halt_on_error=1:second_deadlock_stack=1:${TSAN_OPTIONS:-}"
  configure_build_test "tsan" "$TSAN_BUILD_DIR" "-L async|manager -LE np1|np4|restart|funneled" \
    "test_async test_staging test_manager test_restart_fallback test_on_commit_fault test_preemption test_manager_threads test_manager_semantics test_incremental_manager test_levels test_redundancy" \
    "-DCAIRN_SANITIZE=thread" -DCAIRN_FAULT_INJECTION=ON
else
  summary+=("tsan: skipped (CAIRN_TEST_TSAN=0)")
fi

# --- 6. libFuzzer targets for the metadata parsers (clang only).
if [ "$quick" = 1 ]; then
  summary+=("fuzz: skipped (--quick)")
elif [ "${CAIRN_TEST_FUZZ:-1}" = "0" ]; then
  summary+=("fuzz: skipped (CAIRN_TEST_FUZZ=0)")
elif ! command -v clang++ >/dev/null; then
  failed+=("fuzz")
  summary+=("fuzz: clang++ not found (scripts/setup.sh installs clang)")
else
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
  configure_build_test "fuzz" "$FUZZ_BUILD_DIR" "-L fuzz" "" \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
    -DCAIRN_BUILD_FUZZERS=ON \
    -DCAIRN_BUILD_TESTS=OFF -DCAIRN_BUILD_APPS=OFF -DBUILD_SHARED_LIBS=OFF \
    -DCAIRN_FAULT_INJECTION=OFF \
    -DCAIRN_USE_CUDA=OFF -DCAIRN_USE_NCCL=OFF -DCAIRN_USE_FORTRAN=OFF -DCAIRN_BUILD_DOCS=OFF \
    "-DCAIRN_SANITIZE=address,undefined" "-DCAIRN_FUZZ_SECONDS=${CAIRN_FUZZ_SECONDS:-10}"
fi

say "summary"
printf '  %s\n' "${summary[@]}"
echo "  total: $(elapsed "$start_all")"
if [ ${#failed[@]} -gt 0 ]; then
  joined="$(printf '%s, ' "${failed[@]}")"
  echo "FAILED: ${joined%, }"
  exit 1
fi
echo "OK"
