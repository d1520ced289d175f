# What the shell tests of the command-line programs share (cli_test.sh, cli_tool_test.sh,
# restart_test.sh). The functions use `mpiexec`, `flags` (an array), `heat2d` and `work`, which
# the test sets (cli_args sets them for the two cli tests). Each check that fails says so and
# is counted; finish() sums them up as the exit status.

# cli_args CASE HEAT2D CAIRN MPIEXEC "MPIEXEC FLAGS" WORKDIR HAVE_HDF5: the arguments of
# cli_test.sh and cli_tool_test.sh. HAVE_HDF5 is 1 when cairn was built with HDF5; `fmt`, the
# format of the checkpoints the test writes, is then hdf5, else posix.
cli_args() {
  case_name="$1" heat2d="$2" cairn="$3" mpiexec="$4"
  read -r -a flags <<<"$5"
  work="$6/$case_name"
  have_hdf5="$7"
  fmt=posix
  if [ "$have_hdf5" = 1 ]; then fmt=hdf5; fi
}

# enter_work: an empty $work as the current directory (exit 2 when it cannot be made).
enter_work() { rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 2; }

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
mpi() { local n="$1"; shift; "$mpiexec" -n "$n" "${flags[@]}" "$@"; }
# simulate DIR RANKS FORMAT [STEPS]: a small heat2d run with checkpoints every 10 steps.
simulate() {
  mpi "$2" "$heat2d" --nx 48 --ny 40 --steps "${4:-30}" --save-every 10 --max-to-keep 5 \
    --format "$3" --checkpoint-dir "$1" --quiet >"$1.log" 2>&1 || { cat "$1.log"; exit 2; }
}
json_check() {  # json_check NAME PYTHON-EXPRESSION over `d`
  /usr/bin/python3 -c "import json,sys; d=json.load(open('$1.out')); sys.exit(0 if ($2) else 1)" ||
    { fail "$1: JSON check failed: $2"; sed 's/^/    /' "$1.out"; }
}
# finish LABEL: prints how the checks of LABEL went; exits 1 when one failed.
finish() {
  if [ "$failures" -ne 0 ]; then
    echo "$1: $failures check(s) failed"
    exit 1
  fi
  echo "$1: all checks passed"
}
