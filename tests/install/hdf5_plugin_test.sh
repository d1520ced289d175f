#!/usr/bin/env bash
# install.hdf5_plugin: once cairn is installed where HDF5 looks for plugins by default, h5dump
# and h5py read a zstd-compressed data.h5 in a fresh shell, with no HDF5_PLUGIN_PATH.
#
#  1. `DESTDIR=STAGE cmake --install BUILD --prefix /usr` (as a distribution package installs):
#     the plugin is in STAGE<d> for each of HDF5's default plugin directories d (the build's
#     CAIRN_HDF5_DEFAULT_PLUGIN_DIRS), the same file as the prefix's own copy; an install with
#     --prefix /opt/cairn writes nothing outside /opt/cairn (the build's rule
#     CAIRN_HDF5_PLUGIN_IN_DEFAULT_DIRS is AUTO; with ON it installs into every d, with OFF
#     into none and the test ends there), and the install script with rule ON puts it into
#     every d even then.
#  2. heat2d writes a zstd data.h5 on 2 ranks; `cairn dump` gives the expected values.
#  3. In a private mount namespace (unshare: only this test's processes see it, nothing is
#     written to the system's directories), STAGE<d> is bound over each d (over its nearest
#     existing parent when d does not exist yet, if that lies in a directory named hdf5).
#     Then, in a fresh environment (env -i with PATH only): h5dump, h5py (Debian's serial
#     build, what python3 loads outside mpirun) and h5py-mpi read the values `cairn dump`
#     printed, and the installed `cairn --version` says that every default directory holds
#     the plugin and gives no HDF5_PLUGIN_PATH hint. With empty directories bound there
#     instead, h5py cannot read the data and `cairn --version` names HDF5_PLUGIN_PATH: the
#     readers found the plugin through the default directories and nothing else.
#
#   hdf5_plugin_test.sh --build DIR --work DIR --source DIR --cmake PATH --plugin FILE
#                       --plugin-dirs D1:D2 --rule AUTO|ON|OFF --heat2d PATH --cairn PATH
#                       --mpiexec PATH
#                       [-- extra mpiexec flags...]
# Exit status 0: passed; 1: failed (with the reason); 77: skipped (neither h5dump nor h5py, no
# mount namespace for step 3, or a d that cannot be bound there).
set -euo pipefail

fail() {
  echo "hdf5_plugin_test: FAILED: $*" >&2
  exit 1
}
step() { echo "hdf5_plugin_test: $*"; }

# --inside plugin|empty ROOT WORK DIR...: run by step 3 in the mount namespace; binds ROOT<d>
# over each d, then checks the readers (plugin) or that they do not find it (empty).
if [ "${1:-}" = --inside ]; then
  what="$2" root="$3" work="$4"
  shift 4
  for d in "$@"; do
    target="$d"
    while [ ! -d "$target" ]; do target="$(dirname "$target")"; done
    mount --bind "$root$target" "$target" || fail "mount --bind $root$target $target"
  done
  fresh=(env -i PATH=/usr/bin:/bin)
  cd "$work"
  if [ "$what" = empty ]; then
    if [ -f have-h5py ] &&
      "${fresh[@]}" /usr/bin/python3 -c "import h5py; h5py.File('ckpt/20/field/data.h5')['u'][5, 0:4]" \
        >control-h5py.out 2>&1; then
      fail "h5py read the zstd data with empty plugin directories: the check cannot tell"
    fi
    "${fresh[@]}" stage/usr/bin/cairn --version >control-version.out 2>&1 ||
      fail "cairn --version: $(cat control-version.out)"
    grep -qxF "h5py and h5dump read zstd data.h5 files with HDF5_PLUGIN_PATH=$work/stage/usr/lib/hdf5/plugin" \
      control-version.out || fail "cairn --version gives no hint without the plugin:
$(cat control-version.out)"
    exit 0
  fi
  if [ -f have-h5dump ]; then
    "${fresh[@]}" h5dump -m %.17g -d /u -s 5,0 -c 1,4 ckpt/20/field/data.h5 >h5dump.out 2>&1 ||
      fail "h5dump: $(cat h5dump.out)"
    /usr/bin/python3 - <<'PY' || fail "h5dump did not print the values cairn dump prints: $(cat h5dump.out)"
import json, re, sys
want = json.load(open("expected.out"))["leaves"][0]["values"][0]
got = [float(v) for v in re.findall(r"\(5,[0-3]\): ([-+0-9.eE]+)", open("h5dump.out").read())]
sys.exit(0 if got == want else 1)
PY
    step "h5dump read the zstd data with no HDF5_PLUGIN_PATH"
  fi
  if [ -f have-h5py ]; then
    for variant in serial mpi; do
      extra=()
      [ "$variant" = mpi ] && extra=(H5PY_ALWAYS_USE_MPI=1)
      [ "$variant" = mpi ] && [ ! -f have-h5py-mpi ] && continue
      "${fresh[@]}" "${extra[@]}" /usr/bin/python3 - >"h5py-$variant.out" 2>&1 <<'PY' ||
import h5py, json
want = json.load(open("expected.out"))["leaves"][0]["values"][0]
got = [float(v) for v in h5py.File("ckpt/20/field/data.h5", "r")["u"][5, 0:4]]
assert got == want, (got, want)
print("mpi" if h5py.get_config().mpi else "serial", "h5py, HDF5", h5py.version.hdf5_version)
PY
        fail "h5py ($variant): $(cat "h5py-$variant.out")"
      step "$(cat "h5py-$variant.out") read the zstd data with no HDF5_PLUGIN_PATH"
    done
  fi
  "${fresh[@]}" stage/usr/bin/cairn --version >version.out 2>&1 ||
    fail "cairn --version: $(cat version.out)"
  for d in "$@"; do
    grep -qF "$d (holds it)" version.out || fail "cairn --version: $d does not hold it:
$(cat version.out)"
  done
  grep -q "HDF5_PLUGIN_PATH=" version.out && fail "cairn --version hints HDF5_PLUGIN_PATH:
$(cat version.out)"
  step "the installed cairn --version: $(grep "^hdf5 plugin" version.out)"
  exit 0
fi

build="" work="" source="" cmake="cmake" plugin="" plugin_dirs="" rule="" heat2d="" cairn=""
mpiexec=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --source) source="$2"; shift 2 ;;
    --cmake) cmake="$2"; shift 2 ;;
    --plugin) plugin="$2"; shift 2 ;;
    --plugin-dirs) plugin_dirs="$2"; shift 2 ;;
    --rule) rule="$2"; shift 2 ;;
    --heat2d) heat2d="$2"; shift 2 ;;
    --cairn) cairn="$2"; shift 2 ;;
    --mpiexec) mpiexec="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "hdf5_plugin_test: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
mpiexec_flags=("$@")
IFS=':' read -r -a dirs <<<"$plugin_dirs"
name="$(basename "$plugin")"

rm -rf "$work"
mkdir -p "$work"
work="$(cd "$work" && pwd -P)"
unset LD_LIBRARY_PATH HDF5_PLUGIN_PATH
[ "${#dirs[@]}" -gt 0 ] ||
  fail "HDF5's default plugin directories were not found at configure time (CAIRN_HDF5_DEFAULT_PLUGIN_DIRS)"

# 1. The installs.
DESTDIR="$work/stage" "$cmake" --install "$build" --prefix /usr >"$work/install.log" 2>&1 ||
  fail "cmake --install --prefix /usr: $(tail -n 20 "$work/install.log")"
own="$(find "$work/stage/usr" -path "*/hdf5/plugin/$name" -print -quit)"
[ -n "$own" ] || fail "the install has no <libdir>/hdf5/plugin/$name"
if [ "$rule" = OFF ]; then
  for d in "${dirs[@]}"; do
    [ ! -e "$work/stage$d/$name" ] || fail "CAIRN_HDF5_PLUGIN_IN_DEFAULT_DIRS=OFF installed into $d"
  done
  step "rule OFF: --prefix /usr (DESTDIR) installs only ${own#"$work/stage"}"
  step "passed"
  exit 0
fi
for d in "${dirs[@]}"; do
  [ -f "$work/stage$d/$name" ] || fail "--prefix /usr did not install $name into $d"
  cmp -s "$own" "$work/stage$d/$name" || fail "$d/$name differs from $own"
done
step "--prefix /usr (DESTDIR): $name in ${dirs[*]} and in ${own#"$work/stage"}"
DESTDIR="$work/opt" "$cmake" --install "$build" --prefix /opt/cairn >"$work/install-opt.log" 2>&1 ||
  fail "cmake --install --prefix /opt/cairn: $(tail -n 20 "$work/install-opt.log")"
outside="$(cd "$work/opt" && find . -path ./opt/cairn -prune -o ! -type d -print | sort)"
if [ "$rule" = ON ]; then
  want="$(for d in "${dirs[@]}"; do echo ".$d/$name"; done | sort)"
  [ "$outside" = "$want" ] || fail "rule ON, --prefix /opt/cairn installed outside it: $outside"
else
  [ -z "$outside" ] || fail "--prefix /opt/cairn installed outside the prefix: $outside"
fi
DESTDIR="$work/on" "$cmake" "-Dcairn_plugin=$plugin" "-Dcairn_plugin_dirs=${plugin_dirs//:/;}" \
  -Dcairn_plugin_rule=ON -DCMAKE_INSTALL_PREFIX=/opt/cairn \
  -P "$source/lib/cmake/install_hdf5_plugin.cmake" >"$work/install-on.log" 2>&1 ||
  fail "install_hdf5_plugin.cmake with rule ON: $(cat "$work/install-on.log")"
for d in "${dirs[@]}"; do
  [ -f "$work/on$d/$name" ] || fail "rule ON with --prefix /opt/cairn did not install into $d"
done
step "--prefix /opt/cairn: outside it only what rule $rule allows; into ${dirs[*]} with ON"

# 2. A zstd data.h5 and its values.
"$mpiexec" -n 2 "${mpiexec_flags[@]}" "$heat2d" --nx 48 --ny 40 --steps 20 --save-every 10 \
  --format hdf5 --compression zstd --checkpoint-dir "$work/ckpt" --quiet >"$work/heat2d.log" 2>&1 ||
  fail "heat2d: $(cat "$work/heat2d.log")"
"$cairn" dump --json "$work/ckpt/20" field/u --slice 5,0:4 >"$work/expected.out" ||
  fail "cairn dump"

# 3. The readers, in a fresh environment, with the plugin only in HDF5's default directories.
command -v h5dump >/dev/null && touch "$work/have-h5dump"
/usr/bin/python3 -c "import h5py" 2>/dev/null && touch "$work/have-h5py"
env -i PATH=/usr/bin:/bin H5PY_ALWAYS_USE_MPI=1 /usr/bin/python3 -c \
  "import h5py, sys; sys.exit(0 if h5py.get_config().mpi else 1)" 2>/dev/null &&
  touch "$work/have-h5py-mpi"
if [ ! -f "$work/have-h5dump" ] && [ ! -f "$work/have-h5py" ]; then
  step "SKIP: neither h5dump nor h5py to read with"
  exit 77
fi
for d in "${dirs[@]}"; do
  target="$d"
  while [ ! -d "$target" ]; do target="$(dirname "$target")"; done
  case "$target/" in
    */hdf5/*) ;;
    *)
      step "SKIP: $d does not exist and $target is not in an hdf5 directory: not bound over"
      exit 77
      ;;
  esac
  mkdir -p "$work/empty$d"
done
ns=(unshare --mount --propagation private)
[ "$(id -u)" = 0 ] || ns+=(--map-root-user)
if ! "${ns[@]}" true 2>/dev/null; then
  step "SKIP: no private mount namespace (${ns[*]}) to show the default directories in"
  exit 77
fi
self="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
"${ns[@]}" bash "$self" --inside plugin "$work/stage" "$work" "${dirs[@]}"
"${ns[@]}" bash "$self" --inside empty "$work/empty" "$work" "${dirs[@]}"
step "with empty default directories h5py cannot read it and cairn --version names HDF5_PLUGIN_PATH"
step "passed"
