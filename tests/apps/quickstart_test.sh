#!/usr/bin/env bash
# A quickstart of README.md (C++, C or Fortran, apps/quickstart): README.md shows the source
# file verbatim; the program runs to the end on 2 ranks, then a second run on 3 ranks restores
# the newest step (the program exits non-zero unless every value survived the N->M restore).
#   quickstart_test.sh SOURCE BIN MPIEXEC "MPIEXEC FLAGS" WORKDIR README
set -euo pipefail
source="$1" bin="$2" mpiexec="$3" work="$5" readme="$6"
read -r -a flags <<<"$4"
/usr/bin/python3 - "$source" "$readme" <<'PY'
import os, sys
code, readme = (open(p).read() for p in sys.argv[1:3])
if code not in readme:
    sys.exit(f"README.md does not show {os.path.basename(sys.argv[1])} verbatim: update one of them")
PY
rm -rf "$work" && mkdir -p "$work" && cd "$work"
"$mpiexec" -n 2 "${flags[@]}" "$bin"
ls quickstart-run
"$mpiexec" -n 3 "${flags[@]}" "$bin"
echo "$(basename "$source"): ran on 2 ranks, restarted on 3"
