#!/usr/bin/env bash
# Kill trials: run kill_job with a SIGKILL armed at a named fault point on one rank
# (CAIRN_FAULT=<point>@<rank>:kill#<n>), then restart it with a fresh mpiexec and check that
#   - it resumes from the newest step committed on disk when the job died (directory with its
#     final name and the COMMITTED marker; for MultihostCheckpoint: the newest step every
#     process has), never from a step whose commit did not finish;
#   - that step is at least the newest one the killed job had been told was committed, so
#     retention or the crash did not lose the last good checkpoint;
#   - every restored value equals what was saved at that step (kill_job checks them);
#   - the restarted job finishes, and no *.cairn-tmp, *.cairn-deleting or *.cairn-old is left.
#
#   kill_trials.sh MPIEXEC "MPIEXEC FLAGS" KILL_JOB FORMATS SUITE
#     FORMATS  "posix hdf5" or "posix" (the formats this build has)
#     SUITE    matrix:<np>  every fault point of the save path at <np> ranks (2 or 4), in
#                           each format and each mode (sync, async)
#              multihost    the points of a MultihostCheckpoint save at 2 and 4 ranks; at
#                           least one trial must leave a process without the newest step
#              random       seeded random points, ranks, hits, formats and modes
# Environment:
#   CAIRN_FAULT_SEED=<n>       seed of the random suite (default 10)
#   CAIRN_FAULT_TRIALS=<n>     number of random trials (default 20)
#   CAIRN_FAULT_EXHAUSTIVE=1   manual mode: the matrix kills every rank (not only the last or
#                              the primary), at more hits,
#                              and the random suite runs 200 trials unless CAIRN_FAULT_TRIALS
#                              says otherwise
# Prints one line per trial and a tally; exits non-zero when any trial failed.
set -u
mpiexec="$1"
read -r -a flags <<<"$2"
job="$3"
read -r -a formats <<<"$4"
suite="$5"

exhaustive="${CAIRN_FAULT_EXHAUSTIVE:-0}"
steps=4          # kill_job saves steps 0..3
leaves=3         # array leaves per step, so shards per rank per step
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

trials=0 fired=0 broken=0 lost=0 failed=0 uneven=0

# committed_steps <root>: the committed step directories of a manager root, ascending.
committed_steps() {
  local dir
  for dir in "$1"/*; do
    [[ "$(basename "$dir")" =~ ^[0-9]+$ ]] && [ -e "$dir/COMMITTED" ] && basename "$dir"
  done | sort -n | tr '\n' ' ' | sed 's/ $//'
}

# process_steps <dir>: the committed steps of one MultihostCheckpoint process directory.
process_steps() {
  local dir
  for dir in "$1"/ckpt-*; do
    [[ "$(basename "$dir")" =~ ^ckpt-([0-9]+)$ ]] && [ -e "$dir/COMMITTED" ] &&
      echo "${BASH_REMATCH[1]}"
  done | sort -n
}

# common_steps <root> <np>: the steps every process directory holds committed, ascending.
common_steps() {
  local r
  for ((r = 0; r < $2; r++)); do process_steps "$1/proc-$r"; done |
    sort -n | uniq -c | awk -v n="$2" '$1 == n {print $2}' | tr '\n' ' ' | sed 's/ $//'
}

# newest_per_rank <root> <np>: the newest committed step of each process directory.
newest_per_rank() {
  local r
  for ((r = 0; r < $2; r++)); do
    process_steps "$1/proc-$r" | tail -1 | grep . || echo none
  done | tr '\n' ' ' | sed 's/ $//'
}

# wait_for_exit <root>: waits until the processes that held a lock under <root> are gone
# (mpiexec may return before every rank of a killed job has exited; a scheduler restarts a
# job only once its processes are gone).
wait_for_exit() {
  local pid state _
  for pid in $(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' $(find "$1" -name cairn.lock) /dev/null); do
    for _ in $(seq 1 300); do
      state="$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)"
      if [ -z "$state" ] || [ "$state" = "Z" ]; then break; fi
      sleep 0.1
    done
  done
}

# trial <np> <format> <mode> <fault rule> [must_fire]
trial() {
  local np="$1" format="$2" mode="$3" rule="$4" must_fire="${5:-}"
  local dir="$work/t$trials" root label out1 out2 rc1 rc2 known on_disk expected restored
  trials=$((trials + 1))
  mkdir -p "$dir"
  root="$dir/ckpt"
  label="np$np $format $mode $rule"

  # Open MPI: once a rank died, kill the others at once rather than after a 1 s grace. With
  # MultihostCheckpoint the grace is kept: it lets the other processes finish the commit of
  # their own directories, which leaves the killed one without their newest step.
  local grace=0
  [ "$mode" = multihost ] && grace=1
  CAIRN_FAULT="$rule" OMPI_MCA_odls_base_sigkill_timeout=$grace "$mpiexec" -n "$np" "${flags[@]}" "$job" "$root" "$steps" "$format" \
    "$mode" </dev/null >"$dir/out1" 2>"$dir/err1"
  rc1=$?
  out1="$(cat "$dir/out1")"
  local killed=0
  if grep -qiE 'signal 9|killed' "$dir/err1"; then killed=1; fi
  if [ "$rc1" -ne 0 ] && [ "$killed" -eq 0 ]; then
    echo "FAIL $label: the first run failed without being killed (status $rc1)"
    cat "$dir/err1"
    failed=$((failed + 1))
    return
  fi
  if [ "$killed" -eq 1 ]; then
    fired=$((fired + 1))
  elif [ -n "$must_fire" ]; then
    echo "FAIL $label: the fault point was never reached"
    failed=$((failed + 1))
    return
  fi
  wait_for_exit "$root"

  # What survived the kill, and what the job had been told before it died.
  known="$(sed -n 's/^committed //p' <<<"$out1" | tail -1)"
  local newest=""
  if [ "$mode" = multihost ]; then
    on_disk="$(common_steps "$root" "$np")"
    newest="$(newest_per_rank "$root" "$np")"
    # One process lacks a step that another finished.
    if [ "$(tr ' ' '\n' <<<"$newest" | sort -u | wc -l)" -gt 1 ]; then uneven=$((uneven + 1)); fi
    newest=", newest per rank [$newest]"
  else
    on_disk="$(committed_steps "$root")"
  fi
  expected="${on_disk##* }"

  "$mpiexec" -n "$np" "${flags[@]}" "$job" "$root" "$steps" "$format" "$mode" \
    </dev/null >"$dir/out2" 2>"$dir/err2"
  rc2=$?
  out2="$(cat "$dir/out2")"
  restored="$(sed -n 's/^restored \([0-9]*\).*/\1/p' <<<"$out2")"

  local problems=()
  if [ -n "$known" ] && { [ -z "$expected" ] || [ "$expected" -lt "$known" ]; }; then
    problems+=("the job had committed step $known but the newest step on disk is '${expected:-none}'")
    lost=$((lost + 1))
  elif [ -n "$expected" ] && [ "$restored" != "$expected" ]; then
    problems+=("resumed from '${restored:-nothing}', not from step $expected")
    if [ -z "$restored" ] || [ "$restored" -lt "$expected" ]; then
      lost=$((lost + 1))
    else
      broken=$((broken + 1))
    fi
  elif [ -z "$expected" ] && ! grep -qx "fresh start" <<<"$out2"; then
    problems+=("nothing was committed, yet the restart did not start afresh")
    broken=$((broken + 1))
  elif grep -q "WRONG VALUES" <<<"$out2" || [ "$rc2" -eq 3 ]; then
    problems+=("restored values differ from those saved at step $expected")
    broken=$((broken + 1))
  elif [ "$rc2" -ne 0 ]; then
    problems+=("the restart failed (status $rc2)")
    failed=$((failed + 1))
  fi
  if [ ${#problems[@]} -eq 0 ]; then
    local listed
    if [ "$mode" = multihost ]; then
      # MultihostCheckpoint names only the newest common step at start.
      [ -n "$expected" ] && on_disk="$expected"
    fi
    listed="$(sed -n 's/^steps *//p' <<<"$out2")"
    if [ "$listed" != "$on_disk" ]; then
      problems+=("the restart listed steps '$listed', the disk held '$on_disk'")
      failed=$((failed + 1))
    elif ! grep -qx "latest $((steps - 1))" <<<"$out2"; then
      problems+=("the restarted job did not reach step $((steps - 1))")
      failed=$((failed + 1))
    else
      local leftovers
      leftovers="$(find "$root" -name '*.cairn-tmp' -o -name '*.cairn-deleting' -o -name '*.cairn-old')"
      if [ -n "$leftovers" ]; then
        problems+=("left behind: $(echo $leftovers)")
        failed=$((failed + 1))
      fi
    fi
  fi

  local fate="killed"
  [ "$killed" -eq 1 ] || fate="not reached"
  if [ ${#problems[@]} -eq 0 ]; then
    echo "ok   $label: $fate; disk [${on_disk}]$newest, told ${known:-none}, resumed ${restored:-fresh}"
    rm -rf "$dir"
  else
    echo "FAIL $label: $fate; $(printf '%s; ' "${problems[@]}")"
    echo "  --- first run"; sed 's/^/  /' "$dir/out1" "$dir/err1" | tail -20
    echo "  --- restart"; sed 's/^/  /' "$dir/out2" "$dir/err2" | tail -20
    ls -laR "$root" | sed 's/^/  /' | head -60
  fi
}

# The rules of the manager's save path at which a job of `np` ranks dies while it saves step
# 2 (the third save, after steps 0 and 1 committed), on the ranks to kill.
manager_rules() {
  local np="$1" format="$2" mode="$3" last=$(($1 - 1)) ranks shard_point
  ranks="$last"
  [ "$exhaustive" = 1 ] && ranks="$(seq 0 "$last")"
  shard_point="storage.${format}_write"
  for r in $ranks; do
    echo "checkpoint.before_data@$r:kill#3"
    echo "$shard_point@$r:kill#$((2 * leaves + 2))"  # after one shard of step 2
    [ "$mode" = async ] && echo "checkpoint.async_drain@$r:kill#3"
    echo "checkpoint.before_metadata@$r:kill#3"
  done
  # Reached by the primary only.
  echo "checkpoint.before_rename@0:kill#3"
  echo "checkpoint.after_rename@0:kill#3"
  # The commit of step 2 makes retention (max_to_keep 2) delete step 0 in the background.
  echo "manager.background_delete@0:kill#1"
  if [ "$exhaustive" = 1 ]; then
    # Every other save too, and every shard of step 2.
    for n in 1 2 4; do
      echo "checkpoint.before_rename@0:kill#$n"
      echo "checkpoint.after_rename@0:kill#$n"
    done
    for n in $(seq $((2 * leaves + 1)) $((3 * leaves))); do echo "$shard_point@$last:kill#$n"; done
    echo "manager.background_delete@0:kill#2"
  fi
}

# Points of a MultihostCheckpoint save: each process commits its own directory, so the
# primary-only points fire on any rank.
multihost_rules() {
  local r=$(($1 - 1))
  echo "checkpoint.before_data@$r:kill#3"
  echo "storage.posix_write@$r:kill#$((2 * leaves + 2))"
  echo "checkpoint.before_metadata@$r:kill#3"
  echo "checkpoint.before_rename@$r:kill#3"
  echo "checkpoint.after_rename@$r:kill#3"
  [ "$exhaustive" = 1 ] && echo "checkpoint.before_rename@0:kill#3"
}

random_trials() {
  local count="${CAIRN_FAULT_TRIALS:-}"
  [ -n "$count" ] || { [ "$exhaustive" = 1 ] && count=200 || count=20; }
  RANDOM="${CAIRN_FAULT_SEED:-10}"
  echo "random trials: seed ${CAIRN_FAULT_SEED:-10}, $count trials"
  local i np format mode point rank hit modes=(sync async multihost)
  for ((i = 0; i < count; i++)); do
    np=$((RANDOM % 2 ? 4 : 2))
    mode="${modes[RANDOM % 3]}"
    format="${formats[RANDOM % ${#formats[@]}]}"
    [ "$mode" = multihost ] && format=posix
    rank=$((RANDOM % np))
    local points=(checkpoint.before_data "storage.${format}_write" checkpoint.before_metadata
                  checkpoint.before_rename checkpoint.after_rename)
    [ "$mode" = async ] && points+=(checkpoint.async_drain)
    [ "$mode" = multihost ] || points+=(manager.background_delete)
    point="${points[RANDOM % ${#points[@]}]}"
    case "$point" in
      storage.*) hit=$((RANDOM % (steps * leaves) + 1)) ;;
      manager.background_delete) hit=$((RANDOM % (steps - 2) + 1)) ;;
      *) hit=$((RANDOM % steps + 1)) ;;
    esac
    # Points of the primary fire only on rank 0 of a manager (any rank in multihost).
    if [ "$mode" != multihost ]; then
      case "$point" in checkpoint.*_rename | manager.*) rank=0 ;; esac
    fi
    trial "$np" "$format" "$mode" "$point@$rank:kill#$hit" must_fire
  done
}

# matrix_pairs: the (format, mode) pairs the matrix runs.
matrix_pairs() {
  for format in "${formats[@]}"; do echo "$format sync"; echo "$format async"; done
}

case "$suite" in
  matrix:*)
    np="${suite#matrix:}"
    while read -r format mode; do
      while read -r rule; do
        trial "$np" "$format" "$mode" "$rule" must_fire
      done < <(manager_rules "$np" "$format" "$mode")
    done < <(matrix_pairs)
    ;;
  multihost)
    for np in 2 4; do
      while read -r rule; do trial "$np" posix multihost "$rule" must_fire; done < <(multihost_rules "$np")
    done
    if [ "$uneven" -eq 0 ]; then
      echo "FAIL no trial left a process without the newest step of another"
      failed=$((failed + 1))
    fi
    ;;
  random) random_trials ;;
  *) echo "unknown suite '$suite'"; exit 2 ;;
esac

[ "$uneven" -gt 0 ] && echo "$uneven trials left a process without the newest step of another"
echo "$trials kill trials ($fired killed a rank), $broken resumed from a broken checkpoint," \
  "$lost lost the last good one, $failed failed otherwise"
[ $((broken + lost + failed)) -eq 0 ]
