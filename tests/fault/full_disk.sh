#!/usr/bin/env bash
# Full disk: full_disk_job saves two small steps, then a step that does not fit; every rank
# must throw from the same call and the two earlier steps must stay restorable.
#   1. a real full disk: an 8 MiB tmpfs (needs root and permission to mount; unmounted at the
#      end in every case), each format, sync and async; then with a node-local level (each
#      rank a node, partner copies), posix: the tmpfs as the local directories (the local
#      save or its copies do not fit) and as the root (the drain does not fit);
#   2. an injected one: ENOSPC from cairn's write wrapper (fault point storage.pwrite) on the
#      last rank from its second shard of step 2 on, posix format (hdf5 data does not go
#      through that wrapper), sync and async.
# Says which parts ran; fails when a part that ran failed.
#   full_disk.sh MPIEXEC "MPIEXEC FLAGS" FULL_DISK_JOB FORMATS NP
set -u
mpiexec="$1"
read -r -a flags <<<"$2"
job="$3"
read -r -a formats <<<"$4"
np="$5"

work="$(mktemp -d)"
mnt="$work/tmpfs"
mounted=0
cleanup() {
  if [ "$mounted" = 1 ]; then umount "$mnt" 2>/dev/null || umount -l "$mnt"; fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

status=0
# run <label> <root> <format> <mode> <big KiB> [CAIRN_FAULT rule] [local directory]
run() {
  local label="$1" root="$2" format="$3" mode="$4" kib="$5" rule="${6:-}" local_dir="${7:-}" out
  local extra=()
  if [ -n "$local_dir" ]; then extra=("$local_dir"); fi
  # timeout: a hang is a failure of this test, not something to wait for.
  if out="$(CAIRN_FAULT="$rule" timeout 300 "$mpiexec" -n "$np" "${flags[@]}" "$job" "$root" "$format" \
            "$mode" "$kib" "${extra[@]}" 2>&1 </dev/null)"; then
    if ! grep -q "No space left on device" <<<"$out"; then
      echo "FAIL $label: the error does not say the device is full"
      echo "$out" | sed 's/^/  /'
      status=1
      return
    fi
    echo "ok   $label: $(grep -m1 '^threw' <<<"$out" | cut -c1-200)"
  else
    echo "FAIL $label"
    echo "$out" | sed 's/^/  /'
    status=1
  fi
}

mkdir -p "$mnt"
if reason="$(mount -t tmpfs -o size=8m tmpfs "$mnt" 2>&1)"; then
  mounted=1
  echo "== full disk: 8 MiB tmpfs at $mnt"
  for format in "${formats[@]}"; do
    for mode in sync async; do
      # 4 MiB per rank: at least 8 MiB in all, more than the tmpfs holds.
      run "tmpfs np$np $format $mode" "$mnt/$format-$mode" "$format" "$mode" 4096
    done
  done
  # The local level: 2 MiB per rank, with partner copies 4 MiB per node.
  run "tmpfs np$np local level full" "$work/level-root" posix local 2048 "" "$mnt/local/node{node}"
  rm -rf "${mnt:?}"/*
  run "tmpfs np$np drain to a full root" "$mnt/drain-root" posix drain 4096 "" \
    "$work/level-local/node{node}"
  umount "$mnt" && mounted=0
  ran="tmpfs and injected ENOSPC"
else
  echo "== full disk: mounting a tmpfs is not permitted here ($reason): that part is skipped"
  ran="injected ENOSPC only (no tmpfs: $reason)"
fi

echo "== full disk: ENOSPC injected at storage.pwrite on rank $((np - 1))"
# The last rank writes, in each of steps 0 and 1, one shard per leaf (3 leaves), then the
# index sections it owns (leaf j is owned by rank (j + 1) mod np); the write after those and
# the first shard of step 2 is the second shard of step 2, and the "disk" stays full from then
# on.
owned=0
for j in 0 1 2; do
  if [ $(((j + 1) % np)) -eq $((np - 1)) ]; then owned=$((owned + 1)); fi
done
nth=$((2 * (3 + owned) + 2))
for mode in sync async; do
  run "injected np$np posix $mode" "$work/injected-$mode" posix "$mode" 256 \
    "storage.pwrite@$((np - 1)):errno=ENOSPC#$nth+"
done
echo "full disk tests ran: $ran"
exit "$status"
