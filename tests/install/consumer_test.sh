#!/usr/bin/env bash
# Installs a cairn build tree into a scratch prefix and uses it the ways a user would:
#   1. a CMake project (consumer/) with find_package(cairn) and cairn::cairn;
#   2. one source file compiled with `pkg-config --cflags --libs cairn` only;
#   3. a C-only CMake project (consumer_c/) with find_package(cairn) and cairn::cairn_c.
# The programs run under mpiexec with 2 ranks and must print one line per rank.
#
# Registered as the ctest test install.consumer (tests/install/CMakeLists.txt), which passes:
#   --build DIR        the cairn build tree to install (must be built)
#   --work DIR         scratch directory (emptied first)
#   --cmake PATH       the cmake executable
#   --cxx PATH         the C++ compiler cairn was built with
#   --cc PATH          the C compiler cairn was built with
#   --generator NAME   CMake generator for the consumer
#   --build-type TYPE  CMAKE_BUILD_TYPE for the consumer
#   --sanitize LIST    CAIRN_SANITIZE of the build (consumers must link the same runtime)
#   --mpiexec PATH --np-flag FLAG [-- extra mpiexec flags...]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="" work="" cmake="cmake" cxx="${CXX:-c++}" cc="${CC:-cc}" generator="" build_type="" sanitize=""
mpiexec="mpiexec" np_flag="-n"
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --cmake) cmake="$2"; shift 2 ;;
    --cxx) cxx="$2"; shift 2 ;;
    --cc) cc="$2"; shift 2 ;;
    --generator) generator="$2"; shift 2 ;;
    --build-type) build_type="$2"; shift 2 ;;
    --sanitize) sanitize="$2"; shift 2 ;;
    --mpiexec) mpiexec="$2"; shift 2 ;;
    --np-flag) np_flag="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "consumer_test: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
mpiexec_flags=("$@")
if [ -z "$build" ] || [ -z "$work" ]; then
  echo "consumer_test: --build and --work are required" >&2
  exit 2
fi

fail() {
  echo "consumer_test: FAILED: $*" >&2
  exit 1
}
step() { echo "consumer_test: $*"; }

# Runs "$@" quietly; shows its output only when it fails.
quiet() {
  local log
  log="$(mktemp)"
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    return 1
  fi
  rm -f "$log"
}

# Runs a program on 2 ranks and checks that each rank reported.
run_two_ranks() {
  local what="$1" exe="$2" out
  out="$("$mpiexec" "$np_flag" 2 "${mpiexec_flags[@]}" "$exe" 2>&1)" ||
    fail "$what exited non-zero under $mpiexec:"$'\n'"$out"
  echo "$out"
  for r in 0 1; do
    grep -q "rank $r of 2, cairn " <<<"$out" || fail "$what: no line from rank $r of 2"
  done
}

rm -rf "$work"
mkdir -p "$work"
prefix="$work/prefix"

step "installing $build into $prefix"
quiet "$cmake" --install "$build" --prefix "$prefix" || fail "cmake --install"
for f in include/cairn/comm.hpp include/cairn/error.hpp include/cairn/config.hpp \
         include/cairn/cairn.hpp include/cairn/cairn.h include/cairn/c/common.h include/cairn/c/manager.h; do
  [ -f "$prefix/$f" ] || fail "$f is not installed"
done
config="$(find "$prefix" -name cairnConfig.cmake -print -quit)"
pc="$(find "$prefix" -name cairn.pc -print -quit)"
[ -n "$config" ] || fail "cairnConfig.cmake is not installed"
[ -f "$(dirname "$config")/cairnConfigVersion.cmake" ] || fail "no cairnConfigVersion.cmake"
[ -n "$pc" ] || fail "cairn.pc is not installed"

sanitize_flags=()
if [ -n "$sanitize" ]; then
  sanitize_flags=("-fsanitize=$sanitize" "-fno-omit-frame-pointer")
fi

# --- 1. CMake consumer.
step "configuring consumer/ with CMAKE_PREFIX_PATH=$prefix"
configure=("$cmake" -S "$here/consumer" -B "$work/consumer-build"
           "-DCMAKE_PREFIX_PATH=$prefix" "-DCMAKE_CXX_COMPILER=$cxx")
[ -n "$generator" ] && configure+=(-G "$generator")
[ -n "$build_type" ] && configure+=("-DCMAKE_BUILD_TYPE=$build_type")
[ -n "$sanitize" ] && configure+=("-DCMAKE_CXX_FLAGS=${sanitize_flags[*]}"
                                  "-DCMAKE_EXE_LINKER_FLAGS=${sanitize_flags[*]}")
quiet "${configure[@]}" || fail "configuring the consumer project"
quiet "$cmake" --build "$work/consumer-build" || fail "building the consumer project"
run_two_ranks "CMake consumer" "$work/consumer-build/cairn_consumer"

# --- 2. pkg-config consumer.
PKG_CONFIG_PATH="$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export PKG_CONFIG_PATH
command -v pkg-config >/dev/null || fail "pkg-config is not installed"
pkg-config --print-errors --exists cairn || fail "pkg-config cannot resolve cairn.pc"
pc_prefix="$(pkg-config --variable=prefix cairn)"
[ "$(cd "$pc_prefix" && pwd -P)" = "$(cd "$prefix" && pwd -P)" ] ||
  fail "cairn.pc prefix '$pc_prefix' is not the install prefix '$prefix'"
libdir="$(pkg-config --variable=libdir cairn)"
static=()
if [ ! -e "$libdir/libcairn.so" ] && [ -e "$libdir/libcairn.a" ]; then
  static=(--static)  # a static libcairn also needs its private dependencies (Libs.private)
fi
read -r -a cflags <<<"$(pkg-config "${static[@]}" --cflags cairn)"
read -r -a libs <<<"$(pkg-config "${static[@]}" --libs cairn)"
step "compiling with pkg-config ${static[*]}: $cxx -std=c++20 ${cflags[*]} ... ${libs[*]}"
# The rpath only spares the test an LD_LIBRARY_PATH; cairn.pc itself has none, like any .pc.
quiet "$cxx" -std=c++20 "${sanitize_flags[@]}" "${cflags[@]}" "$here/pkgconfig_main.cpp" \
  -o "$work/pkgconfig_consumer" "${libs[@]}" "-Wl,-rpath,$libdir" ||
  fail "compiling with pkg-config --cflags --libs cairn"
run_two_ranks "pkg-config consumer" "$work/pkgconfig_consumer"

# --- 3. C consumer (cairn::cairn_c, no C++ enabled).
step "configuring consumer_c/ with CMAKE_PREFIX_PATH=$prefix"
configure=("$cmake" -S "$here/consumer_c" -B "$work/consumer-c-build"
           "-DCMAKE_PREFIX_PATH=$prefix" "-DCMAKE_C_COMPILER=$cc")
[ -n "$generator" ] && configure+=(-G "$generator")
[ -n "$build_type" ] && configure+=("-DCMAKE_BUILD_TYPE=$build_type")
[ -n "$sanitize" ] && configure+=("-DCMAKE_C_FLAGS=${sanitize_flags[*]}"
                                  "-DCMAKE_EXE_LINKER_FLAGS=${sanitize_flags[*]}")
quiet "${configure[@]}" || fail "configuring the C consumer project"
quiet "$cmake" --build "$work/consumer-c-build" || fail "building the C consumer project"
run_two_ranks "C consumer" "$work/consumer-c-build/cairn_c_consumer"

step "passed"
