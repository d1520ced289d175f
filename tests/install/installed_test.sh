#!/usr/bin/env bash
# Installs a cairn build tree into a scratch prefix, moves the prefix elsewhere (as a user who
# copies an install to another machine or directory does), and checks one thing about it:
#
#   relocated   the installed programs (bin/cairn, bin/heat2d) carry a RUNPATH relative to
#               themselves ($ORIGIN/../<libdir>) and start with `--help` with no
#               LD_LIBRARY_PATH; README, its docs pages, LICENSE and the examples are under
#               share/ (the README's links to docs/ resolve there); bin/cairn_posix_reader.py
#               is installed, and `cairn --version` names the moved plugin directory; an
#               install of one component (cairn_tools) installs the programs only. With
#               --docs 1 (the build has the API reference): share/doc/cairn/html holds the
#               C and C++ reference (cairn::CheckpointManager, cairn_manager_save) and, with
#               Fortran, html/fortran the module's (cairn_manager_create, cairn_tree_add_array).
#   pkgconfig   the "With pkg-config" block of docs/building.md, run as it stands (with /opt/cairn
#               replaced by the moved prefix): it compiles the installed quickstarts in C++, C
#               and Fortran with cairn.pc, cairn-c.pc and cairn-fortran.pc and runs the C one;
#               then each program runs on 2 ranks.
#   components  find_package(cairn COMPONENTS ...) from a CMake project (components/): the
#               components this build has are found; a component it lacks and a made-up one
#               make the package not found, with a message that names them.
#
#   installed_test.sh MODE --build DIR --work DIR --source DIR --cmake PATH [--generator G]
#                     [--mpiexec PATH] [--docs 0|1] [-- extra mpiexec flags...]
# Exit status 0: passed; 1: failed (with the reason).
set -euo pipefail

mode="$1"
shift
build="" work="" source="" cmake="cmake" generator="" mpiexec="mpiexec" docs=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --source) source="$2"; shift 2 ;;
    --cmake) cmake="$2"; shift 2 ;;
    --generator) generator="$2"; shift 2 ;;
    --mpiexec) mpiexec="$2"; shift 2 ;;
    --docs) docs="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "installed_test: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
mpiexec_flags=("$@")
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

fail() {
  echo "installed_test $mode: FAILED: $*" >&2
  exit 1
}
step() { echo "installed_test $mode: $*"; }

# The build's features, from the generated config.hpp.
have() { grep -q "^#define CAIRN_HAVE_$1 1$" "$build/include/cairn/config.hpp"; }

rm -rf "$work"
mkdir -p "$work"
unset LD_LIBRARY_PATH

# install_moved: installs into $work/staging, then moves it to $work/moved; sets $prefix.
install_moved() {
  "$cmake" --install "$build" --prefix "$work/staging" >"$work/install.log" 2>&1 ||
    fail "cmake --install: $(tail -n 20 "$work/install.log")"
  mv "$work/staging" "$work/moved"
  prefix="$work/moved"
  step "installed into $work/staging, moved to $prefix"
}

case "$mode" in
relocated)
  install_moved
  for program in cairn heat2d; do
    exe="$prefix/bin/$program"
    [ -x "$exe" ] || fail "bin/$program is not installed"
    runpath="$(readelf -d "$exe" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p')"
    case ":$runpath:" in
      *':$ORIGIN/'*) ;;
      *) fail "bin/$program has no \$ORIGIN-relative RUNPATH (it has '$runpath')" ;;
    esac
    out="$(env -u LD_LIBRARY_PATH "$exe" --help 2>&1)" ||
      fail "the installed, moved bin/$program --help exited non-zero:"$'\n'"$out"
    grep -qi "usage" <<<"$out" || fail "bin/$program --help printed no usage:"$'\n'"$out"
    step "bin/$program --help runs from the moved prefix (RUNPATH $runpath)"
  done
  # The numpy reader of posix checkpoints is installed as a program.
  reader="$prefix/bin/cairn_posix_reader.py"
  [ -x "$reader" ] || fail "bin/cairn_posix_reader.py is not installed"
  out="$(/usr/bin/python3 "$reader" "$work/no-such-checkpoint" 2>&1)" &&
    fail "cairn_posix_reader.py read a checkpoint that does not exist:"$'\n'"$out"
  grep -q "no-such-checkpoint" <<<"$out" || fail "cairn_posix_reader.py: $out"
  step "bin/cairn_posix_reader.py is installed and names what it cannot read"
  # The zstd filter plugin: `cairn --version` finds it in the moved prefix.
  if have ZSTD && have HDF5; then
    out="$(env -u LD_LIBRARY_PATH "$prefix/bin/cairn" --version 2>&1)"
    plugin_dir="$(cd "$prefix" && pwd -P)/lib/hdf5/plugin"
    [ -f "$plugin_dir/libH5Zcairn_zstd.so" ] || plugin_dir="$(cd "$prefix" && pwd -P)/lib64/hdf5/plugin"
    grep -qxF "hdf5 zstd filter plugin: $plugin_dir" <<<"$out" ||
      fail "cairn --version does not name the moved plugin directory $plugin_dir:"$'\n'"$out"
    step "cairn --version names the moved prefix's plugin directory"
  fi
  for f in share/doc/cairn/README.md share/doc/cairn/LICENSE share/doc/cairn/docs/building.md \
           share/cairn/examples/quickstart.cpp share/cairn/examples/quickstart_c.c \
           share/cairn/examples/heat_c.c share/cairn/heat2d.sbatch \
           share/cairn/heat2d-srun.sbatch; do
    [ -f "$prefix/$f" ] || fail "$f is not installed"
  done
  # The API reference: an index page and the pages of what a user looks up first, in C++, C
  # and (with Fortran) the Fortran module.
  if [ "$docs" = 1 ]; then
    html="$prefix/share/doc/cairn/html"
    [ -f "$html/index.html" ] || fail "share/doc/cairn/html/index.html is not installed"
    grep -rlq "CheckpointManager" "$html" || fail "the installed reference has no CheckpointManager"
    grep -rlq "cairn_manager_save" "$html" || fail "the installed reference has no cairn_manager_save"
    step "share/doc/cairn/html holds the C and C++ reference"
    if have FORTRAN; then
      [ -f "$html/fortran/index.html" ] || fail "share/doc/cairn/html/fortran/index.html is not installed"
      module="$(grep -l "cairn Module Reference" "$html"/fortran/*.html | head -n 1)"
      [ -n "$module" ] || fail "share/doc/cairn/html/fortran has no page of the module cairn"
      for name in cairn_manager_create cairn_tree_add_array cairn_set_error_mode cairn_tree; do
        grep -q "$name" "$module" || fail "the Fortran module's page $(basename "$module") lacks $name"
      done
      step "share/doc/cairn/html/fortran holds the Fortran module's reference ($(basename "$module"))"
    fi
  fi
  # One component: the programs, and nothing else.
  "$cmake" --install "$build" --prefix "$work/tools" --component cairn_tools >/dev/null ||
    fail "cmake --install --component cairn_tools"
  installed="$(cd "$work/tools" && find . -type f | sort | tr '\n' ' ')"
  [ "$installed" = "./bin/cairn ./bin/cairn_posix_reader.py ./bin/heat2d " ] ||
    fail "--component cairn_tools installed '$installed', not bin/cairn, bin/cairn_posix_reader.py and bin/heat2d"
  step "share/doc/cairn and share/cairn/examples installed; component cairn_tools = bin/"
  ;;

pkgconfig)
  install_moved
  pcdir="$(dirname "$(find "$prefix" -name cairn-c.pc -print -quit)")"
  [ -f "$pcdir/cairn-c.pc" ] || fail "cairn-c.pc is not installed"
  if have FORTRAN; then
    [ -f "$pcdir/cairn-fortran.pc" ] || fail "cairn-fortran.pc is not installed"
  fi
  # The block of docs/building.md, as written, for this prefix. Without Fortran its mpifort line
  # is left out.
  block="$(awk '/^With pkg-config/ { found = 1 } found && /^```sh$/ { inside = 1; next }
                inside && /^```$/ { exit } inside { print }' "$source/docs/building.md")"
  [ -n "$block" ] || fail "docs/building.md has no sh block after 'With pkg-config'"
  block="$(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' <<<"$block")"  # one line per command
  block="${block//\/opt\/cairn\/lib\/pkgconfig/$pcdir}"
  block="${block//\/opt\/cairn/$prefix}"
  if ! have FORTRAN; then
    block="$(grep -v 'cairn-fortran' <<<"$block")"
  fi
  for pc in cairn cairn-c cairn-fortran; do
    if [ "$pc" = cairn-fortran ] && ! have FORTRAN; then continue; fi
    grep -q -- "--libs $pc)" <<<"$block" || fail "the docs/building.md block does not link with $pc"
  done
  mkdir -p "$work/run"
  step "running docs/building.md's pkg-config block in $work/run:"$'\n'"$block"
  # mpiexec in the block gets this build's mpiexec flags (e.g. --oversubscribe as root).
  (
    cd "$work/run"
    mpiexec() { "$mpiexec" "${mpiexec_flags[@]}" "$@"; }
    eval "$block"
  ) || fail "docs/building.md's pkg-config block failed"
  programs=(quickstart quickstart_c)
  if have FORTRAN; then programs+=(quickstart_fortran); fi
  for program in "${programs[@]}"; do
    [ -x "$work/run/$program" ] || fail "docs/building.md's block did not build $program"
    rm -rf "$work/run/quickstart-run"
    (cd "$work/run" && env -u LD_LIBRARY_PATH "$mpiexec" -n 2 "${mpiexec_flags[@]}" "./$program") ||
      fail "$program (built with pkg-config) failed on 2 ranks"
    [ -d "$work/run/quickstart-run" ] || fail "$program wrote no checkpoint"
    step "$program: built with pkg-config, ran on 2 ranks, found libcairn through its rpath"
  done
  ;;

components)
  install_moved
  configure() {
    local name="$1" components="$2"
    local args=("$cmake" -S "$here/components" -B "$work/$name" "-DCMAKE_PREFIX_PATH=$prefix"
                "-DCAIRN_COMPONENTS=${components// /;}")
    [ -n "$generator" ] && args+=(-G "$generator")
    "${args[@]}" >"$work/$name.log" 2>&1
  }
  present="C CXX"
  missing=""
  for c in HDF5 CUDA NCCL ZSTD ZFP; do
    if have "$c"; then present+=" $c"; else missing="${missing:-$c}"; fi
  done
  if have FORTRAN; then present+=" Fortran"; else missing="${missing:-Fortran}"; fi
  configure present "$present" ||
    fail "find_package(cairn COMPONENTS $present): $(cat "$work/present.log")"
  grep -q "cairn components found: $present$" "$work/present.log" ||
    fail "COMPONENTS $present: $(cat "$work/present.log")"
  step "find_package(cairn REQUIRED COMPONENTS $present) found them"

  expect_missing() {
    local name="$1" components="$2" named="$3"
    if configure "$name" "$components"; then
      fail "find_package(cairn REQUIRED COMPONENTS $components) succeeded"
    fi
    local text  # CMake wraps the message: one line, single spaces
    text="$(tr -s ' \n' '  ' <"$work/$name.log")"
    grep -q "component $named: " <<<"$text" ||
      fail "COMPONENTS $components: the message does not name $named: $(cat "$work/$name.log")"
    step "COMPONENTS $components: not found; $(grep -o "cannot provide [^)]*)" <<<"$text")"
  }
  expect_missing madeup "C NoSuchComponent" NoSuchComponent
  if [ -n "$missing" ]; then
    expect_missing lacking "C $missing" "$missing"
  else
    step "this build has every component: only the made-up one can be missing"
  fi
  # An optional component that is missing leaves the package found.
  configure optional "C;OPTIONAL:NoSuchComponent" ||
    fail "OPTIONAL_COMPONENTS NoSuchComponent: package not found: $(cat "$work/optional.log")"
  grep -q "cairn_NoSuchComponent_FOUND=FALSE" "$work/optional.log" ||
    fail "OPTIONAL_COMPONENTS NoSuchComponent: $(cat "$work/optional.log")"
  step "OPTIONAL_COMPONENTS NoSuchComponent: found, cairn_NoSuchComponent_FOUND=FALSE"
  ;;

*)
  echo "installed_test: unknown mode '$mode'" >&2
  exit 2
  ;;
esac
step "passed"
