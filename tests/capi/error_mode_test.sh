#!/usr/bin/env bash
# capi.test_capi_error_mode.fatal, fortran.test_fortran_error_mode.fatal*: in
# CAIRN_ERRORS_FATAL, a failing call on the last rank (PROGRAM SCENARIO) ends the whole job:
# mpiexec exits non-zero, stderr holds "cairn (rank <last>): <MESSAGE>", and no rank gets past
# the call ("not aborted").
#   error_mode_test.sh RANKS PROGRAM SCENARIO MESSAGE MPIEXEC [MPIEXEC FLAGS...]
set -uo pipefail
ranks="$1" program="$2" scenario="$3" message="$4" mpiexec="$5"
shift 5
out="$("$mpiexec" -n "$ranks" "$@" "$program" "$scenario" 2>&1)"
status=$?
fail() {
  printf 'error_mode_test: FAILED: %s\n--- output ---\n%s\n' "$1" "$out" >&2
  exit 1
}
[ "$status" -ne 0 ] || fail "the job exited 0: the failing call did not abort it"
want="cairn (rank $((ranks - 1))): $message"
grep -qF "$want" <<<"$out" || fail "stderr lacks '$want'"
! grep -q "not aborted" <<<"$out" || fail "a rank went on after the failing call"
echo "error_mode_test: the failing call on rank $((ranks - 1)) of $ranks aborted the job (status $status)"
