#!/usr/bin/env bash
# The first process of one emulated host (tests/cluster/cluster.sh starts it in the host's
# network namespace under `unshare --uts --mount --ipc --pid --fork --mount-proc`): it gives
# the host its name, its own /dev/shm and the cluster's /etc/hosts, then waits as the host's
# init until it is killed, which ends every process of the host.
#
#   host_init.sh NAME HOSTS_FILE READY_FILE
# READY_FILE is created once the host is set up. Without a pid namespace of its own (the head
# host, which must see the other hosts' processes) it does the same but /dev/shm.
set -uo pipefail

name="$1" hosts_file="$2" ready="$3"
hostname "$name" || exit 1
if [ "$$" -eq 1 ]; then
  mount -t tmpfs -o size=256m,mode=1777 tmpfs /dev/shm || exit 1
fi
mount --bind "$hosts_file" /etc/hosts || exit 1
# The copies of /run/netns in this mount namespace hold the other hosts' network namespaces
# alive after `ip netns delete`: drop them.
for ns in /run/netns/*; do
  [ -e "$ns" ] && umount -l "$ns" 2>/dev/null
done
umount -l /run/netns 2>/dev/null
: >"$ready"
# As the host's init, this shell inherits the processes whose parents die (Open MPI's orted
# daemonizes): each `wait` after a SIGCHLD reaps them, so that none stays a zombie.
while :; do
  sleep 1 &
  wait $!
done
