#!/usr/bin/env bash
# Builds cairn (Release, in $BUILD_DIR, default build-demo) and runs the demo program
# apps/cairn_demo on 4 ranks. Extra arguments are passed to the demo.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
BUILD="${BUILD_DIR:-build-demo}"
RANKS="${RANKS:-4}"

scripts/setup.sh

mpiexec_flags=(--oversubscribe)
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_rmaps_base_oversubscribe=1
  mpiexec_flags+=(--allow-run-as-root)
fi

generator=()
if [ ! -f "$BUILD/CMakeCache.txt" ] && command -v ninja >/dev/null; then
  generator=(-G Ninja)
fi
cmake -S . -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCAIRN_BUILD_TESTS=OFF
cmake --build "$BUILD" -j "$(nproc)"

demo=""
for candidate in "$BUILD/apps/cairn_demo" "$BUILD/apps/demo/cairn_demo"; do
  if [ -x "$candidate" ]; then
    demo="$candidate"
    break
  fi
done
if [ -z "$demo" ]; then
  echo "demo.sh: no cairn_demo under $BUILD/apps: the apps/ target cairn_demo was not built" >&2
  exit 1
fi
echo "demo.sh: mpiexec -n $RANKS $demo $*"
exec mpiexec -n "$RANKS" "${mpiexec_flags[@]}" "$demo" "$@"
