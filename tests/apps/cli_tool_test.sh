#!/usr/bin/env bash
# Tests of the cairn command-line tool's reports: --version, --json on every command, exit
# codes for what is not a checkpoint or a root, locks (live, stale, of Slurm jobs),
# convert --force, writes refused inside a checkpoint, progress bars, and `cairn dump` (values,
# slices, statistics) in every format and on several ranks, checked against h5py and numpy.
#
#   cli_tool_test.sh CASE HEAT2D CAIRN MPIEXEC "MPIEXEC FLAGS" WORKDIR HAVE_HDF5
# CASE: version json exit_codes locks convert_force write_inside denied fifo progress dump
#       dump_stats compression aggregated incremental shipping_full_shm
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
source "$here/cli_common.sh"
cli_args "$@"
enter_work

# run_json NAME EXPECTED_STATUS COMMAND...: as run, stdout alone in NAME.out (JSON).
run_json() {
  local name="$1" expected="$2"
  shift 2
  "$@" >"$name.out" 2>"$name.err"
  local status=$?
  if [ "$status" -ne "$expected" ]; then
    fail "$name: exit status $status, expected $expected ($*)"
    sed 's/^/    /' "$name.out" "$name.err"
  fi
}
# A fake squeue: job 77 runs, 88 is unknown to Slurm, 99 has completed, others: no controller.
fake_squeue() {
  mkdir -p fakebin
  cat >fakebin/squeue <<'SQ'
#!/bin/sh
for a in "$@"; do case "$a" in
  77) echo RUNNING; exit 0 ;;
  88) echo "slurm_load_jobs error: Invalid job id specified"; exit 1 ;;
  99) echo COMPLETED; exit 0 ;;
esac; done
echo "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"; exit 1
SQ
  chmod +x fakebin/squeue
}

case "$case_name" in
version)
  run version 0 "$cairn" --version
  grep -Eq '^cairn [0-9]+\.[0-9]+\.[0-9]+' version.out || fail "version: no 'cairn X.Y.Z' line"
  expect version "cairn-step.json 1"; expect version "cairn-tree.json 6"
  expect version "cairn-root.json 1"; expect version "posix"; expect version "compression: "
  if [ "$have_hdf5" = 1 ]; then expect version "hdf5"; else reject version "hdf5"; fi
  if [ "$have_hdf5" = 1 ] && grep -q "^compression: zstd" version.out; then
    # The zstd plugin: HDF5_PLUGIN_PATH, when set, is what HDF5 searches instead of its
    # default directories (install.hdf5_plugin checks those); the hint only when none holds it.
    plugins=$(sed -n 's/^hdf5 zstd filter plugin: \(\/.*\)$/\1/p' version.out)
    [ -f "$plugins/libH5Zcairn_zstd.so" ] || fail "--version names no plugin directory"
    run version-found 0 env HDF5_PLUGIN_PATH="$PWD:$plugins" "$cairn" --version
    expect version-found "hdf5 plugin directories searched (HDF5_PLUGIN_PATH): $PWD (does not hold it), $plugins (holds it)"
    reject version-found "h5py and h5dump read"
    run version-missing 0 env HDF5_PLUGIN_PATH="$PWD" "$cairn" --version
    expect version-missing "h5py and h5dump read zstd data.h5 files with HDF5_PLUGIN_PATH=$plugins"
  fi
  ;;

json)
  simulate a 2 "$fmt"
  simulate b 1 posix
  run_json verify 0 "$cairn" verify --json a/30
  json_check verify "d['ok'] and d['path'] == 'a/30' and [i['name'] for i in d['items']] == ['field', 'run'] and d['shards'] == 2"
  run_json verify-root 0 mpi 2 "$cairn" verify --json a
  json_check verify-root "d['ok'] and d['checked'] == 4 and d['damaged'] == 0 and len(d['checkpoints']) == 4"
  truncate -s 100 b/30/field/shards/p0.bin
  run_json verify-damaged 1 "$cairn" verify --json b
  json_check verify-damaged "not d['ok'] and d['damaged'] == 1 and any('p0.bin' in p for c in d['checkpoints'] for p in c['problems'])"
  run_json diff 1 mpi 2 "$cairn" diff --json a/10 a/30
  json_check diff "d['differences'] >= 2 and any(e['what'] == 'field/u' and not e['equal'] and e['max_abs_diff'] > 0 for e in d['leaves'])"
  run_json diff-same 0 "$cairn" diff --json a/30 a/30
  json_check diff-same "d['differences'] == 0 and all(e['equal'] for e in d['leaves'])"
  run_json convert 0 mpi 2 "$cairn" convert --json a/30 c --format posix
  json_check convert "d['destination'] == 'c' and d['format'] == 'posix' and d['ranks'] == 2"
  cp -r a/30 a/40.cairn-tmp
  run_json gc 0 "$cairn" gc --json --dry-run a
  json_check gc "d['dry_run'] and d['removed'] == 1 and d['directories'][0]['action'] == 'would remove' and d['lock'] is None"
  # The cost of each save: bytes, save time and bandwidth (ls -l, inspect).
  run ls-long 0 "$cairn" ls -l a
  expect ls-long "BANDWIDTH"; expect ls-long "/s  field,run"
  run_json ls-json 0 "$cairn" ls --json a
  json_check ls-json "all(s['data_bytes'] > 48 * 40 * 8 and s['save_s'] > 0 and s['bandwidth_bytes_per_s'] > 0 for s in d['steps'])"
  run_json inspect-cost 0 "$cairn" inspect --json a/30
  json_check inspect-cost "d['save']['data_bytes'] == d['step_metadata']['bytes'] and d['save']['save_s'] > 0"
  run inspect-cost-text 0 "$cairn" inspect a/30
  expect inspect-cost-text "  saved:    "
  run_json dump 0 "$cairn" dump --json a/30 field/step
  json_check dump "d['leaves'][0]['value'] == 30"
  run_json dump-array 0 mpi 2 "$cairn" dump --json a/30 field/u --slice 0:3,0:2
  json_check dump-array "all(isinstance(v, float) for r in d['leaves'][0]['values'] for v in r) and len(d['leaves'][0]['values']) == 3 and len(d['leaves'][0]['values'][0]) == 2 and d['notes'] == []"
  # A failing --json run prints one JSON document too: the error alone when it fails before
  # printing anything, else what was printed closed and followed by "error".
  err="d['error']['exit_code'] == 2 and d['error']['command'] == 'cairn"
  for cmd in ls inspect verify gc dump; do
    run_json "$cmd-missing" 2 "$cairn" "$cmd" --json does-not-exist
    json_check "$cmd-missing" "list(d) == ['error'] and $err $cmd' and 'does-not-exist' in d['error']['message']"
  done
  run_json diff-missing 2 mpi 2 "$cairn" diff --json does-not-exist a/30
  json_check diff-missing "list(d) == ['error'] and $err diff' and 'does-not-exist' in d['error']['message']"
  run_json convert-missing 2 mpi 2 "$cairn" convert --json does-not-exist c2 --format posix
  json_check convert-missing "list(d) == ['error'] and $err convert'"
  run_json dump-no-leaf 2 "$cairn" dump --json a/30 field/nope
  json_check dump-no-leaf "list(d) == ['error'] and \"no leaf 'field/nope'\" in d['error']['message']"
  run_json parse-error 2 "$cairn" ls --json --no-such-flag a
  json_check parse-error "list(d) == ['error'] and 'no-such-flag' in d['error']['message']"
  # A damaged shard met midway through `dump`: the leaves printed so far, then the error.
  cp -r b/30 b/40
  run_json dump-damaged 2 mpi 2 "$cairn" dump --json b/40
  json_check dump-damaged "d['checkpoint'] == 'b/40' and 'error' in d and 'p0.bin' in d['error']['message'] and isinstance(d['leaves'], list)"
  ;;

exit_codes)
  simulate root 1 posix 10
  mkdir empty other && echo text >a-file && echo x >other/notes.txt
  for target in does-not-exist a-file root empty other; do
    run "inspect-$target" 2 "$cairn" inspect "$target"
    expect "inspect-$target" "$target"
  done
  expect inspect-does-not-exist "does not exist"; expect inspect-a-file "is a file"
  expect inspect-root "cairn ls root"; expect inspect-empty "not a cairn checkpoint"
  run inspect-ok 0 "$cairn" inspect root/10
  for target in empty other; do
    run "verify-$target" 2 mpi 2 "$cairn" verify "$target"
    expect "verify-$target" "not a cairn root"; reject "verify-$target" "0 checkpoints verified"
  done
  run verify-file 2 "$cairn" verify a-file
  run dump-root 2 "$cairn" dump root
  expect dump-root "cairn ls root"
  # One judgement of root, step and item (the library's): directories whose names end in
  # digits are not steps unless cairn's own files make them so.
  mkdir -p scratch/lib32 scratch/results_2024 scratch/run.0 scratch/007
  echo notes >scratch/results_2024/notes.txt
  cp -r root/10 root/copy30; mkdir root/lib32 root/40
  for cmd in ls verify gc; do
    run "$cmd-scratch" 2 "$cairn" $cmd scratch
    expect "$cmd-scratch" "not a cairn root"
    run "$cmd-item" 2 "$cairn" $cmd root/10/field
    expect "$cmd-item" "an item of a checkpoint"
    run "$cmd-empty" 2 "$cairn" $cmd empty
    run "$cmd-parent" 2 "$cairn" $cmd .
  done
  for cmd in ls gc; do  # verify takes one checkpoint as well as a root
    run "$cmd-step" 2 "$cairn" $cmd root/10
    expect "$cmd-step" "one checkpoint"
  done
  run ls-root 0 "$cairn" ls root
  expect ls-root "2 step directories"; reject ls-root "copy30"; reject ls-root "lib32"
  run verify-root 0 "$cairn" verify root
  expect verify-root "2 checkpoints verified, 0 damaged"
  # inspect: damage is exit 1, an item is shown as the item of its committed checkpoint.
  run inspect-item 0 "$cairn" inspect root/10/field
  expect inspect-item "committed"; reject inspect-item "INCOMPLETE"
  cp -r root/10 damaged-copy && echo '{' >damaged-copy/cairn-step.json
  run inspect-damaged 1 "$cairn" inspect damaged-copy
  expect inspect-damaged "DAMAGED"
  run dump-empty-slice 2 "$cairn" dump root/10 --slice ""
  expect dump-empty-slice "the slice is empty"
  # A step this user may not read (another user's) is "unreadable", not "incomplete"; gc keeps
  # it and verify cannot vouch for the root (exit 2). As root, the tool runs as nobody.
  cp -a root locked && rm -rf locked/copy30 locked/lib32 locked/40
  if [ "$(id -u)" -eq 0 ]; then
    chmod -R a+rX locked && chmod 700 locked/10
    as_other() { setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/tmp "$@"; }
  else
    chmod 000 locked/10
    as_other() { "$@"; }
  fi
  run ls-locked 0 as_other "$cairn" ls locked
  expect ls-locked "unreadable"; reject ls-locked "incomplete"
  run verify-locked 2 as_other "$cairn" verify locked
  expect verify-locked "unreadable"
  chmod 755 locked/10
  ;;

locks)
  fake_squeue
  export PATH="$work/fakebin:$PATH"
  simulate root 1 posix 20
  host=$(hostname)
  dead=$(bash -c 'echo $$')  # a process that has exited
  leftovers() { cp -r root/20 root/30.cairn-tmp; }
  lock() { echo "{\"host\": \"$1\", \"pid\": $2, \"start_time\": \"\", \"slurm_job_id\": \"$3\"}" >root/cairn.lock; }

  # A live process on this host (this shell): running, gc refuses.
  lock "$host" $$ ""
  run_json ls-live 0 "$cairn" ls --json root
  json_check ls-live "d['lock']['host'] == '$host' and d['lock']['pid'] == $$ and d['lock']['alive'] is True and not d['lock']['stale'] and d['lock']['slurm_job_id'] is None"
  leftovers
  run gc-live 2 "$cairn" gc root
  expect gc-live "locked by host $host, pid $$"
  [ -d root/30.cairn-tmp ] || fail "gc removed leftovers of a root a live process holds"

  # A dead process on this host: stale, gc goes on.
  lock "$host" "$dead" ""
  run_json ls-dead 0 "$cairn" ls --json root
  json_check ls-dead "d['lock']['pid'] == $dead and d['lock']['alive'] is False and d['lock']['stale']"
  run ls-dead-text 0 "$cairn" ls root
  expect ls-dead-text "STALE"
  run gc-dead 0 "$cairn" gc root
  expect gc-dead "stale"; expect gc-dead "removed 1 directory"
  [ ! -e root/30.cairn-tmp ] || fail "a stale lock blocked gc"

  # Slurm jobs on another host, as squeue reports them.
  for job in 77 88 99 55; do
    lock elsewhere 4242 "$job"
    run_json "ls-slurm-$job" 0 "$cairn" ls --json root
  done
  json_check ls-slurm-77 "d['lock']['slurm_job_id'] == '77' and d['lock']['alive'] is True"
  json_check ls-slurm-88 "d['lock']['alive'] is False and d['lock']['stale']"
  json_check ls-slurm-99 "d['lock']['alive'] is False and 'COMPLETED' in d['lock']['why']"
  json_check ls-slurm-55 "d['lock']['alive'] is None and not d['lock']['stale']"
  lock elsewhere 4242 77; leftovers
  run gc-slurm-running 2 "$cairn" gc root
  lock elsewhere 4242 55
  run gc-slurm-unknown 2 "$cairn" gc root
  lock elsewhere 4242 88
  run gc-slurm-gone 0 "$cairn" gc root
  [ ! -e root/30.cairn-tmp ] || fail "the lock of a Slurm job that is gone blocked gc"
  # Another host outside Slurm: cannot be told, gc refuses.
  lock elsewhere 4242 ""; leftovers
  run gc-other-host 2 "$cairn" gc root
  # A damaged lock: an object with the problem and the raw text.
  echo 'not a lock' >root/cairn.lock
  run_json ls-damaged 0 "$cairn" ls --json root
  json_check ls-damaged "'damaged lock file' in d['lock']['problem'] and d['lock']['text'].startswith('not a lock') and d['lock']['alive'] is False and d['lock']['stale']"
  # One rule with the manager: a damaged or empty lock is no running job's, so gc goes on.
  for text in 'not a lock' ''; do
    printf '%s' "$text" >root/cairn.lock; leftovers
    run gc-damaged-lock 0 "$cairn" gc root
    [ ! -e root/30.cairn-tmp ] || fail "a damaged lock ('$text') blocked gc"
  done
  # A stale lock whose pid now belongs to another process (pid 1 always runs).
  echo '{"host": "'"$host"'", "pid": 1, "start_time": "999999999999", "slurm_job_id": ""}' >root/cairn.lock
  run ls-reused 0 "$cairn" ls root
  expect ls-reused "now belongs to a newer process"; reject ls-reused "process 1 is gone"
  ;;

convert_force)
  simulate src 2 "$fmt"
  run convert 0 "$cairn" convert src/30 dst --format posix
  run convert-exists 2 "$cairn" convert src/10 dst --format posix
  expect convert-exists "already exists"; expect convert-exists "--force"
  reject convert-exists "force = true"
  run convert-force 0 mpi 2 "$cairn" convert --force src/10 dst --format posix
  run diff-forced 0 "$cairn" diff src/10 dst
  run convert-self 2 "$cairn" convert --force src/30 src/30 --format posix
  expect convert-self "same checkpoint"
  run verify-src 0 "$cairn" verify src/30
  # --force replaces a checkpoint and nothing else: not the root that holds SRC, not a
  # directory above SRC, not a directory of the user's files, not an item; every byte stays.
  mkdir -p user/notes && echo keep >user/notes/a.txt && echo keep >user/b.json
  cp -a src src-before
  snapshot() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }
  snapshot src >src.sums; snapshot user >user.sums
  run force-root 2 "$cairn" convert --force src/30 src --format posix
  expect force-root "holds the checkpoint"; expect force-root "nothing was changed"
  run force-ancestor 2 "$cairn" convert --force src/30 . --format posix
  expect force-ancestor "holds the checkpoint"
  run force-user 2 mpi 2 "$cairn" convert --force src/30 user --format posix
  expect force-user "is not a cairn checkpoint"; expect force-user "nothing was changed"
  run force-other-root 2 "$cairn" convert --force src/30 src-before --format posix
  expect force-other-root "checkpoint root"
  run force-item 2 "$cairn" convert --force src/30 src-before/20/field --format posix
  expect force-item "an item of a checkpoint"
  run force-file 2 "$cairn" convert --force src/30 user/b.json --format posix
  expect force-file "is a file"
  snapshot src | cmp -s - src.sums || fail "convert --force changed a file of the root src"
  snapshot user | cmp -s - user.sums || fail "convert --force changed the user's files"
  run verify-after 0 "$cairn" verify src-before
  ;;

denied)
  # A path this user may not read is "permission denied", named, not "not a checkpoint" or
  # "not a cairn root"; a missing one "does not exist" for verify as for the other commands.
  simulate r 1 posix
  run verify-missing 2 "$cairn" verify missing
  expect verify-missing "'missing' does not exist"
  # Root reads everything: the commands then run as nobody.
  as_user=()
  if [ "$(id -u)" -eq 0 ]; then
    command -v setpriv >/dev/null || { echo "SKIP: root without setpriv"; exit 77; }
    as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  fi
  mkdir hidden && cp -a r hidden/r
  chmod 000 r/30 r/20 hidden
  for args in "inspect r/30" "dump r/30 field/u" "verify r/30" "ls r/30" "ls hidden/r" \
              "verify hidden/r" "inspect hidden/r/30" "gc hidden/r"; do
    name="denied-$(echo "$args" | tr ' /' '__')"
    run "$name" 2 "${as_user[@]}" "$cairn" $args
    expect "$name" "permission denied"
    reject "$name" "not a cairn"; reject "$name" "does not exist"
  done
  chmod 755 r/30 r/20 hidden
  ;;

fifo)
  # A FIFO in place of a step's marker, its cairn-step.json or a shard: no command waits on it
  # (a generous timeout guards against a wait, it measures nothing); verify, and dump of a
  # leaf whose shard it is, fail naming it, and inspect names a FIFO cairn-step.json.
  simulate r 1 posix
  # ends NAME ARGS: runs cairn ARGS under the guard into NAME.out; sets `status`.
  ends() {
    timeout -k 10 120 "$cairn" $2 >"$1.out" 2>&1
    status=$?
    [ "$status" -ne 124 ] && [ "$status" -ne 137 ] ||
      { fail "$1: did not end ($2)"; sed 's/^/    /' "$1.out"; }
  }
  for file in COMMITTED cairn-step.json field/shards/p0.bin; do
    name="${file//\//_}"
    rm -rf "f-$name" && cp -a r "f-$name"
    rm "f-$name/30/$file" && mkfifo "f-$name/30/$file"
    readers=("verify f-$name/30")
    [ "$file" = field/shards/p0.bin ] && readers+=("dump f-$name/30 field/u")
    for args in "${readers[@]}"; do
      out="fifo-$(echo "$args" | tr ' /' '__')"
      ends "$out" "$args"
      [ "$status" -ne 0 ] || fail "$out: exit status 0 ($args)"
      expect "$out" "'f-$name/30/$file' is a FIFO, not a regular file"
    done
    [ "$file" = cairn-step.json ] && {
      ends fifo-inspect-step "inspect f-$name/30"
      expect fifo-inspect-step "'f-$name/30/$file' is a FIFO, not a regular file"
    }
    for args in "ls f-$name" "ls -l f-$name" "inspect f-$name/30" "dump f-$name/30 field/u"; do
      ends "fifo-$(echo "$args" | tr ' /' '__')" "$args"
    done
  done
  ;;

write_inside)
  # Nothing is written inside a checkpoint: `convert --force` replaces a directory only when
  # cairn's marker makes it a checkpoint, an export never lands in a checkpoint or a root
  # (with --force or not), and no writer (convert, a manager's root or local level) puts its
  # files inside a step of another root. Every byte of that root stays.
  simulate r 2 posix
  snapshot() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }
  snapshot r >r.sums
  # A directory of the user's files with a file named COMMITTED, or a copy of a real marker
  # without the files it lists, is no checkpoint.
  mkdir junk copied && echo precious >junk/notes.txt && echo precious >copied/notes.txt
  touch junk/COMMITTED && cp r/30/COMMITTED copied/
  for dir in junk copied; do
    run "force-$dir" 2 "$cairn" convert r/30 "$dir" --force --format posix
    expect "force-$dir" "is not a cairn checkpoint"; expect "force-$dir" "nothing was changed"
    [ "$(cat "$dir/notes.txt")" = precious ] || fail "convert --force replaced $dir"
  done
  # `gc` removes a step moved to a todelete_subdir; a user's directory there is no such step.
  mkdir -p r/mine/5 && echo precious >r/mine/5/notes.txt && touch r/mine/5/COMMITTED
  run gc-user 0 "$cairn" gc r
  [ "$(cat r/mine/5/notes.txt 2>/dev/null)" = precious ] || fail "gc removed r/mine/5"
  rm -r r/mine
  # An export, forced or not, is refused in a checkpoint (a shard, any step, any item, through
  # a link) and in a root (its metadata, beside the steps).
  ln -s r/30/field field-link
  for target in r/30/field/shards/p0.bin r/20/u.raw r/30/field/u.raw field-link/x.raw \
                r/cairn-root.json r/u.raw; do
    for force in --force ""; do
      name="dump-$(echo "$target$force" | tr '/' '_')"
      run "$name" 2 "$cairn" dump r/30 field/u --raw "$target" $force
      expect "$name" "'$target' is inside "; expect "$name" "nothing was written"
    done
  done
  run dump-npy 2 "$cairn" dump r/30 field/u --npy r/30/field/u.npy --force
  expect dump-npy "inside the checkpoint '$PWD/r/30'"
  run dump-root 2 "$cairn" dump r/30 field/u --npy r/u.npy
  expect dump-root "inside the checkpoint root '$PWD/r'"
  # A checkpoint converted into a step, a manager's root or local level in a step: refused.
  run convert-inside 2 "$cairn" convert r/30 r/30/x --format posix
  expect convert-inside "inside the checkpoint '$PWD/r/30'"
  run convert-inside-force 2 "$cairn" convert r/20 r/30/field/y --force --format posix
  expect convert-inside-force "inside the checkpoint '$PWD/r/30'"
  run root-inside 1 mpi 2 "$heat2d" --nx 48 --ny 40 --steps 10 --save-every 10 \
    --format posix --checkpoint-dir r/30/sim --quiet
  expect root-inside "inside the checkpoint"
  run local-inside 1 mpi 2 "$heat2d" --nx 48 --ny 40 --steps 10 --save-every 10 \
    --format posix --checkpoint-dir elsewhere --local-dir "r/30/{node}" --quiet
  expect local-inside "local_level.directory 'r/30/{node}'"; expect local-inside "inside the checkpoint"
  snapshot r | cmp -s - r.sums || fail "a refused write changed a file of the root r"
  for left in r/30/x r/30/field/y r/30/sim r/30/0 $(find . -name '*.cairn-tmp*'); do
    [ ! -e "$left" ] || fail "a refused write left $left"
  done
  run verify-after 0 "$cairn" verify r
  ;;

shipping_full_shm)
  # A shipping save (4 ranks, one file per node, the aggregator alone writes) while /dev/shm
  # is full: in a private mount namespace with a tmpfs of 64 KiB over /dev/shm, too small for
  # the aggregator's rings, every rank writes its own region of the node's file instead, with
  # a warning; the steps commit, verify, and hold what a run with every rank writing holds.
  # Open MPI's own shared memory goes to /tmp.
  [ "$(id -u)" -eq 0 ] || { echo "SKIP: mounting a tmpfs needs root"; exit 77; }
  unshare -m true 2>/dev/null || { echo "SKIP: unshare -m is not allowed here"; exit 77; }
  common=(--nx 96 --ny 80 --steps 20 --save-every 10 --format posix --posix-files per-node)
  mpi 4 "$heat2d" "${common[@]}" --checkpoint-dir every --quiet >every.log 2>&1 ||
    { fail "the run with every rank writing failed"; cat every.log; }
  CAIRN_LOG_LEVEL=warn OMPI_MCA_btl_vader_backing_directory=/tmp unshare -m sh -c '
    mount -t tmpfs -o size=64k tmpfs /dev/shm || exit 3
    dd if=/dev/zero of=/dev/shm/filler bs=4k count=16 2>/dev/null
    exec "$@"' sh "$mpiexec" -n 4 "${flags[@]}" "$heat2d" "${common[@]}" --posix-writers aggregator \
    --checkpoint-dir full >full.out 2>&1
  status=$?
  [ "$status" -eq 0 ] || { fail "the shipping run with a full /dev/shm exited with $status"; cat full.out; }
  expect full "storage.shipping_fallback"; expect full "finished step 20"
  run verify-full 0 "$cairn" verify full
  run diff-full 0 "$cairn" diff every/20 full/20
  ;;

progress)
  simulate a 2 "$fmt"
  # `script` gives the tool a terminal, where the bar is drawn (and only there).
  tty() { local name="$1"; shift; script -qec "$*" /dev/null >"$name.out" 2>&1; }
  for cmd in "verify a/30" "diff a/10 a/30" "convert a/30 conv --format posix" \
             "dump a/30 field/u --stats"; do
    name=$(echo "$cmd" | cut -d' ' -f1)
    tty "$name" "$cairn" "$cmd"
    expect "$name" "] "; expect "$name" "#"
    tty "$name-quiet" "$cairn" "$cmd" -q
    reject "$name-quiet" "#"
    rm -rf conv
  done
  expect diff "field/u"; expect convert "reading field"; expect dump "field/u"
  # Not a terminal: no bar.
  run diff-pipe 1 "$cairn" diff a/10 a/30
  reject diff-pipe "#"
  ;;

dump)
  simulate h 2 "$fmt"
  run convert 0 "$cairn" convert h/30 p --format posix
  # Every element of field/u, printed by 1 and 3 ranks from either format, equals what an
  # independent reader gets (h5py from data.h5, else the posix checkpoint on 1 rank).
  for n in 1 3; do
    for src in h/30 p; do
      run_json "dump-$n-$(basename "$src")" 0 mpi "$n" "$cairn" dump --json "$src" field/u
    done
  done
  json_check dump-1-p "d['leaves'][0]['shape'] == [40, 48] and len(d['leaves'][0]['values']) == 40 and len(d['leaves'][0]['values'][0]) == 48"
  for out in dump-3-p dump-1-30 dump-3-30; do
    /usr/bin/python3 -c "
import json, sys
a, b = (json.load(open(f + '.out'))['leaves'] for f in ('dump-1-p', '$out'))
sys.exit(0 if a == b else 1)" || fail "$out differs from dump-1-p"
  done
  if [ "$have_hdf5" = 1 ]; then
    /usr/bin/python3 -c "
import json, h5py, numpy, sys
d = json.load(open('dump-3-30.out'))['leaves'][0]['values']
u = h5py.File('h/30/field/data.h5', 'r')['u'][...]
sys.exit(0 if numpy.array_equal(numpy.array(d), u) else 1)" || fail "dump differs from h5py"
  fi
  # Slices: ranges, an index, negatives, missing dimensions.
  run_json slice 0 mpi 2 "$cairn" dump --json p field/u --slice 38:,-3
  json_check slice "d['leaves'][0]['slice'] == {'offset': [38, 45], 'extent': [2, 1]}"
  /usr/bin/python3 -c "
import json, sys
full = json.load(open('dump-1-p.out'))['leaves'][0]['values']
part = json.load(open('slice.out'))['leaves'][0]['values']
sys.exit(0 if part == [[full[38][45]], [full[39][45]]] else 1)" || fail "slice values wrong"
  run_json slice-rows 0 "$cairn" dump --json p field/u --slice 3
  json_check slice-rows "d['leaves'][0]['slice'] == {'offset': [3, 0], 'extent': [1, 48]}"
  run text 0 mpi 2 "$cairn" dump p field/u --slice 0:2,0:3
  expect text "field/u float64 (40, 48)"; expect text "(0,0) "; expect text "(1,0) "
  run scalar 0 "$cairn" dump p field/step
  expect scalar "= 30"
  run item 0 "$cairn" dump p run
  expect item '"nx":48'
  for bad in "0:100" "1,2,3" "a:b" "5:5" "-41"; do
    run "bad-slice-$bad" 2 "$cairn" dump p field/u --slice "$bad"
    expect "bad-slice-$bad" "--slice"
  done
  # Other dtypes, a replicated leaf, strings: the format-version-1 samples.
  samples=posix
  [ "$have_hdf5" = 1 ] && samples="posix hdf5"
  for sample in $samples; do
    run "v1-$sample" 0 mpi 2 "$cairn" dump "$here/../data/v1/$sample"
    expect "v1-$sample" "(0) -30 -20 -10 0 10 20 30"; expect "v1-$sample" "(0) 1 1.25 1.5 1.75"
    expect "v1-$sample" "(5,0) 500 501 502 503 504"; expect "v1-$sample" 'run/name (string) = "cairn v1 sample"'
    run "v1-stats-$sample" 0 mpi 3 "$cairn" dump --stats "$here/../data/v1/$sample"
    expect "v1-stats-$sample" "particles/ids int32 (7): min -30, max 30, mean 0, 7 elements"
    expect "v1-stats-$sample" "mesh/weights float32 (4): min 1, max 1.75, mean 1.375"
  done
  run_json v1-json 0 "$cairn" dump --json "$here/../data/v1/posix" mesh/weights particles
  json_check v1-json "[l['values'] for l in d['leaves']] == [[1, 1.25, 1.5, 1.75], [-30, -20, -10, 0, 10, 20, 30]]"
  run no-leaf 2 "$cairn" dump p field/v
  expect no-leaf "no leaf 'field/v'"; expect no-leaf "field/u"
  # Damage is reported, exit 2, never a crash.
  truncate -s 100 p/field/shards/p0.bin
  run damaged 2 "$cairn" dump p field/u
  expect damaged "p0.bin"
  ;;

dump_stats)
  simulate h 2 "$fmt"
  run convert 0 "$cairn" convert h/30 p --format posix
  for n in 1 2 4; do
    run_json "stats-$n" 0 mpi "$n" "$cairn" dump --json --stats p
    run_json "stats-h-$n" 0 mpi "$n" "$cairn" dump --json --stats h/30 field/u
  done
  run_json values 0 "$cairn" dump --json p field/u
  /usr/bin/python3 -c "
import json, numpy, sys
u = numpy.array(json.load(open('values.out'))['leaves'][0]['values'])
ok = True
for name in ['stats-1', 'stats-2', 'stats-4', 'stats-h-1', 'stats-h-2', 'stats-h-4']:
    leaves = {l['leaf']: l for l in json.load(open(name + '.out'))['leaves']}
    s = leaves['field/u']['stats']
    good = (s['count'] == u.size and s['nan'] == 0 and s['min'] == u.min() and s['max'] == u.max()
            and abs(s['mean'] - u.mean()) <= 1e-12 * max(1.0, abs(u.mean())))
    if not good: print(name, s, u.min(), u.max(), u.mean()); ok = False
sys.exit(0 if ok else 1)" || fail "stats differ from numpy"
  json_check stats-2 "[l['leaf'] for l in d['leaves']] == ['field/step', 'field/u', 'run']"
  run_json stats-slice 0 mpi 2 "$cairn" dump --json --stats p field/u --slice 0
  json_check stats-slice "d['leaves'][0]['stats']['count'] == 48 and d['leaves'][0]['stats']['max'] == 1.0"
  run stats-text 0 "$cairn" dump --stats p field/u
  expect stats-text "min 0, max 1, mean "; expect stats-text "1920 elements"
  ;;

compression)
  # heat2d saves its field compressed (posix); inspect, verify, convert and diff read it.
  for kind in zstd zfp=1e-6; do
    mpi 2 "$heat2d" --nx 48 --ny 40 --steps 20 --save-every 10 --format posix \
      --compression "$kind" --checkpoint-dir "${kind%%=*}" --quiet >"${kind%%=*}.log" 2>&1 ||
      { cat "${kind%%=*}.log"; exit 2; }
  done
  run_json inspect 0 "$cairn" inspect --json zstd/20
  json_check inspect "[l for l in d['items']['field']['leaves'] if l['path'] == 'u'][0]['compression']['kind'] == 'zstd' and 0 < [l for l in d['items']['field']['leaves'] if l['path'] == 'u'][0]['stored_bytes'] < 48 * 40 * 8"
  run inspect-text 0 "$cairn" inspect zfp/20
  expect inspect-text "zfp absolute error 1e-06"
  run verify 0 mpi 2 "$cairn" verify zstd
  run convert 0 mpi 3 "$cairn" convert zfp/20 plain --format posix
  run diff 0 "$cairn" diff zfp/20 plain
  expect diff "no differences"
  /usr/bin/python3 -c "
f = open('zstd/20/field/shards/p1.bin', 'r+b'); f.seek(20); b = f.read(1); f.seek(20)
f.write(bytes([b[0] ^ 0x5a]))"
  run verify-damaged 1 "$cairn" verify zstd/20
  expect verify-damaged "for leaf 'u'"; expect verify-damaged "compressed bytes"
  if [ "$have_hdf5" = 1 ]; then
    # zfp in hdf5 (H5Z-ZFP's filter): the index holds the checksums of the decompressed values.
    mpi 2 "$heat2d" --nx 48 --ny 40 --steps 20 --save-every 10 --format hdf5 \
      --compression zfp=1e-4 --checkpoint-dir zfp-h5 --quiet >zfp-h5.log 2>&1 ||
      { cat zfp-h5.log; exit 2; }
    run inspect-h5 0 "$cairn" inspect zfp-h5/20
    expect inspect-h5 "zfp absolute error 0.0001"
    run verify-h5 0 mpi 2 "$cairn" verify zfp-h5
    run convert-h5 0 mpi 3 "$cairn" convert zfp-h5/20 plain-h5 --format posix
    run diff-h5 0 "$cairn" diff zfp-h5/20 plain-h5
    expect diff-h5 "no differences"
    # zstd in hdf5: h5dump and h5py, in a fresh environment, read it through the plugin
    # directory that `cairn --version` names.
    mpi 2 "$heat2d" --nx 48 --ny 40 --steps 20 --save-every 10 --format hdf5 \
      --compression zstd --checkpoint-dir zstd-h5 --quiet >zstd-h5.log 2>&1 ||
      { cat zstd-h5.log; exit 2; }
    run version 0 "$cairn" --version
    plugins=$(sed -n 's/^hdf5 zstd filter plugin: \(\/.*\)$/\1/p' version.out)
    [ -f "$plugins/libH5Zcairn_zstd.so" ] || fail "--version names no plugin directory: $(cat version.out)"
    run_json expected 0 "$cairn" dump --json zstd-h5/20 field/u --slice 5,0:4
    if command -v h5dump >/dev/null; then
      run h5dump 0 env -i PATH=/usr/bin:/bin HDF5_PLUGIN_PATH="$plugins" \
        h5dump -m %.17g -d /u -s 5,0 -c 1,4 zstd-h5/20/field/data.h5
      /usr/bin/python3 - <<'PY' || fail "h5dump: not the values cairn dump prints: $(cat h5dump.out)"
import json, re, sys
want = json.load(open("expected.out"))["leaves"][0]["values"][0]
text = open("h5dump.out").read()
got = [float(v) for v in re.findall(r"\(5,[0-3]\): ([-+0-9.eE]+)", text)]
sys.exit(0 if got == want else 1)
PY
    fi
    if /usr/bin/python3 -c "import h5py" 2>/dev/null; then
      run h5py 0 env -i PATH=/usr/bin:/bin HDF5_PLUGIN_PATH="$plugins" /usr/bin/python3 -c "
import h5py, json
want = json.load(open('expected.out'))['leaves'][0]['values'][0]
got = [float(v) for v in h5py.File('zstd-h5/20/field/data.h5', 'r')['u'][5, 0:4]]
assert got == want, (got, want)
print('h5py read', got)"
    fi
  fi
  ;;

aggregated)
  # heat2d on 4 ranks with one posix shard file per node, written by every rank or by the
  # aggregator alone (the others ship their shards to it), and per group of 2 ranks: a step
  # holds one (two) shard files, and the node's file is the same written either way; verify, inspect,
  # convert, diff and the Python reader read them, a restart on 3 ranks continues bit for bit,
  # and verify names the leaf and the file of a damaged byte.
  for files in per-node 2 shipped; do
    case "$files" in
      shipped) how=(--posix-files per-node --posix-writers aggregator) ;;
      *) how=(--posix-files "$files") ;;
    esac
    mpi 4 "$heat2d" --nx 48 --ny 40 --steps 20 --save-every 10 --format posix \
      "${how[@]}" --checkpoint-dir "agg-$files" --quiet >"agg-$files.log" 2>&1 ||
      { cat "agg-$files.log"; exit 2; }
  done
  [ "$(ls agg-per-node/20/field/shards | tr '\n' ' ')" = "a0.bin " ] ||
    fail "per-node: shard files $(ls agg-per-node/20/field/shards | tr '\n' ' ')"
  [ "$(ls agg-2/20/field/shards | tr '\n' ' ')" = "a0.bin a1.bin " ] ||
    fail "2 files: shard files $(ls agg-2/20/field/shards | tr '\n' ' ')"
  cmp -s agg-per-node/20/field/shards/a0.bin agg-shipped/20/field/shards/a0.bin ||
    fail "the shipped node file differs from the one every rank wrote"
  run verify 0 mpi 2 "$cairn" verify agg-per-node
  run inspect 0 "$cairn" inspect agg-2/20
  expect inspect "posix"
  run convert 0 mpi 3 "$cairn" convert agg-2/20 plain --format posix
  run diff 0 "$cairn" diff agg-per-node/20 plain
  expect diff "no differences"
  run reader 0 /usr/bin/python3 -c "
import sys; sys.path.insert(0, '$(dirname "$0")/../../scripts')
import cairn_posix_reader as c, numpy as np
a = c.read_checkpoint('agg-per-node/20')['field']['u']; b = c.read_checkpoint('plain')['field']['u']
sys.exit(0 if a.shape == (40, 48) and np.array_equal(a, b) else 1)"
  mpi 3 "$heat2d" --nx 48 --ny 40 --steps 30 --save-every 10 --format posix \
    --posix-files per-node --checkpoint-dir agg-2 --output restarted.bin --quiet >restart.log 2>&1
  mpi 2 "$heat2d" --nx 48 --ny 40 --steps 30 --save-every 100 --format posix \
    --checkpoint-dir straight --output straight.bin --quiet >straight.log 2>&1
  cmp -s restarted.bin straight.bin || fail "the restart from aggregated files differs"
  /usr/bin/python3 -c "
f = open('agg-per-node/20/field/shards/a0.bin', 'r+b'); f.seek(100); b = f.read(1); f.seek(100)
f.write(bytes([b[0] ^ 0x5a]))"
  run verify-damaged 1 "$cairn" verify agg-per-node/20
  expect verify-damaged "'u'"; expect verify-damaged "a0.bin"
  ;;

incremental)
  # heat2d --incremental: heat spreads from the hot edge and two warm patches one row per step,
  # so the chunks (1 MiB: 128 rows) between them stay unchanged and each checkpoint refers to
  # them in the one before. Retention deletes the oldest step; the newest
  # still verifies, converts, reads in Python and restarts on 3 ranks bit for bit, and verify
  # names the linked file of a damaged referred chunk.
  mpi 2 "$heat2d" --nx 1024 --ny 1024 --steps 30 --save-every 10 --max-to-keep 2 \
    --format posix --incremental --checkpoint-dir inc --quiet >inc.log 2>&1 ||
    { cat inc.log; exit 2; }
  [ ! -e inc/10 ] || fail "retention kept step 10"
  ls inc/30/field/shards | grep -q '^r[0-9]*\.bin$' ||
    fail "step 30 links no earlier file: $(ls inc/30/field/shards | tr '\n' ' ')"
  run_json inspect 0 "$cairn" inspect --json inc/30
  json_check inspect "[l for l in d['items']['field']['leaves'] if l['path'] == 'u'][0]['referenced_chunks'] >= 2"
  run inspect-text 0 "$cairn" inspect inc/30
  expect inspect-text "in earlier saves"
  run verify 0 mpi 2 "$cairn" verify inc
  run convert 0 mpi 3 "$cairn" convert inc/30 plain --format posix
  run diff 0 "$cairn" diff inc/30 plain
  expect diff "no differences"
  run reader 0 /usr/bin/python3 -c "
import sys; sys.path.insert(0, '$(dirname "$0")/../../scripts')
import cairn_posix_reader as c, numpy as np
a = c.read_checkpoint('inc/30')['field']['u']; b = c.read_checkpoint('plain')['field']['u']
sys.exit(0 if a.shape == (1024, 1024) and a[0].max() == 1.0 and np.array_equal(a, b) else 1)"
  mpi 3 "$heat2d" --nx 1024 --ny 1024 --steps 40 --save-every 10 --format posix --incremental \
    --checkpoint-dir inc --output restarted.bin --quiet >restart.log 2>&1
  mpi 2 "$heat2d" --nx 1024 --ny 1024 --steps 40 --save-every 100 --format posix \
    --checkpoint-dir straight --output straight.bin --quiet >straight.log 2>&1
  cmp -s restarted.bin straight.bin || fail "the restart from incremental checkpoints differs"
  # Step 40 was saved on 3 ranks: its boxes are not those of step 30, so it is written whole.
  run_json inspect-40 0 "$cairn" inspect --json inc/40
  json_check inspect-40 "[l for l in d['items']['field']['leaves'] if l['path'] == 'u'][0]['referenced_chunks'] == 0"
  run verify-40 0 mpi 2 "$cairn" verify inc/40
  # The bottom rows stay cold: the last chunk of the lower shard of step 30 lies in the file
  # of the first save, linked into step 30.
  /usr/bin/python3 -c "
import glob
for name in glob.glob('inc/30/field/shards/r*.bin'):
    f = open(name, 'r+b'); f.seek(-8, 2); b = f.read(1); f.seek(-8, 2); f.write(bytes([b[0] ^ 0x5a]))"
  run verify-damaged 1 "$cairn" verify inc/30
  expect verify-damaged "'u'"; expect verify-damaged "shards/r"
  # The same damage in a root that keeps the whole chain: verify of the root says which steps
  # share the damaged file.
  mpi 2 "$heat2d" --nx 1024 --ny 1024 --steps 30 --save-every 10 --max-to-keep 5 \
    --format posix --incremental --checkpoint-dir chain --quiet >chain.log 2>&1 ||
    { cat chain.log; exit 2; }
  /usr/bin/python3 -c "
import glob
for name in glob.glob('chain/30/field/shards/r*.bin'):
    f = open(name, 'r+b'); f.seek(-8, 2); b = f.read(1); f.seek(-8, 2); f.write(bytes([b[0] ^ 0x5a]))"
  run verify-chain 1 "$cairn" verify chain
  expect verify-chain "share the damaged file"
  run_json verify-chain-json 1 "$cairn" verify --json chain
  json_check verify-chain-json "len(d['shared_damage']) >= 1 and 30 in d['shared_damage'][0]['steps'] and len(d['shared_damage'][0]['steps']) >= 2"
  ;;

*)
  echo "cli_tool_test.sh: unknown case '$case_name'" >&2
  exit 2
  ;;
esac

finish "$case_name"
