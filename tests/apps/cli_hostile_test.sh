#!/usr/bin/env bash
# The cairn command-line tool on a checkpoint whose cairn-step.json lists hostile item names
# ("../x", "/abs", "..", "."): each is reported as damage naming the file and the item, and the
# tool reads nothing outside the checkpoint.
#
#   cli_hostile_test.sh HEAT2D CAIRN MPIEXEC "MPIEXEC FLAGS" WORKDIR
set -uo pipefail

heat2d="$1" cairn="$2" mpiexec="$3"
read -r -a flags <<<"$4"
work="$5/hostile"
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 2

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# run NAME EXPECTED_STATUS COMMAND...: runs, keeps output in NAME.out, checks the status.
run() {
  local name="$1" expected="$2"
  shift 2
  "$@" >"$name.out" 2>&1
  local status=$?
  if [ "$status" -ne "$expected" ]; then
    fail "$name: exit status $status, expected $expected ($*)"
    sed 's/^/    /' "$name.out"
  fi
}
expect() {  # expect NAME TEXT: NAME.out contains TEXT
  grep -qF -- "$2" "$1.out" || { fail "$1: output lacks '$2'"; sed 's/^/    /' "$1.out"; }
}
reject() {  # reject NAME TEXT: NAME.out does not contain TEXT
  if grep -qF -- "$2" "$1.out"; then fail "$1: output contains '$2'"; sed 's/^/    /' "$1.out"; fi
}

"$mpiexec" -n 1 "${flags[@]}" "$heat2d" --nx 16 --ny 12 --steps 10 --save-every 10 \
  --format posix --checkpoint-dir root --quiet >heat2d.log 2>&1 || { cat heat2d.log; exit 2; }
[ -f root/10/cairn-step.json ] || { echo "heat2d left no root/10"; exit 2; }

# A JSON item outside the checkpoint, damaged so that reading it would show in any report.
mkdir -p outside && cp -r root/10/run outside/item && echo 'OUTSIDE-MARKER' >outside/item/value.json
/usr/bin/python3 - root/10/cairn-step.json "$work/outside/item" <<'EOF' || exit 2
import json, sys
path, absolute = sys.argv[1], sys.argv[2]
step = json.load(open(path))
step["items"].update({"../../outside/item": "cairn.json", absolute: "cairn.json",
                      "..": "cairn.json", ".": "cairn.json"})
json.dump(step, open(path, "w"))
EOF

run inspect 0 "$cairn" inspect root/10
run verify 1 "$cairn" verify root/10
run ls 0 "$cairn" ls --json root
for out in inspect verify; do
  expect "$out" "cairn-step.json"
  expect "$out" "item name '../../outside/item'"
  expect "$out" "item name '$work/outside/item'"
  expect "$out" "item name '..'"
  expect "$out" "item name '.'"
  reject "$out" "OUTSIDE-MARKER"
  reject "$out" "outside/item/value.json"
done
expect ls "cairn-step.json"
# The real items are still read.
expect inspect '"nx": 16'

if [ "$failures" -ne 0 ]; then
  echo "cli_hostile_test: $failures check(s) failed"
  exit 1
fi
echo "cli_hostile_test: all checks passed"
