#!/usr/bin/env bash
# The C++ quickstart: README.md shows apps/quickstart/quickstart.cpp verbatim; the program runs
# to the end on 2 ranks, then a second run on 3 ranks restores the newest step (the program
# exits non-zero unless every value survived the N->M restore).
#   quickstart_test.sh QUICKSTART_BIN MPIEXEC "MPIEXEC FLAGS" WORKDIR SOURCE_DIR
set -euo pipefail
bin="$1" mpiexec="$2" work="$4" src="$5"
read -r -a flags <<<"$3"
/usr/bin/python3 - "$src/apps/quickstart/quickstart.cpp" "$src/README.md" <<'PY'
import sys
code, readme = (open(p).read() for p in sys.argv[1:3])
if code not in readme:
    sys.exit("README.md does not show apps/quickstart/quickstart.cpp verbatim: update one of them")
PY
rm -rf "$work" && mkdir -p "$work" && cd "$work"
"$mpiexec" -n 2 "${flags[@]}" "$bin"
ls quickstart-run
"$mpiexec" -n 3 "${flags[@]}" "$bin"
echo "quickstart: ran on 2 ranks, restarted on 3"
