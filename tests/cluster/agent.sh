#!/usr/bin/env bash
# Open MPI's rsh agent for the emulated cluster (OMPI_MCA_plm_rsh_agent): what ssh does for a
# real host, it does for a host of tests/cluster/cluster.sh. It runs the command in the
# namespaces of the host's init (network, mount, hostname, IPC and pid) with a clean
# environment, through a shell, as sshd would.
#
#   agent.sh HOST COMMAND...
# CAIRN_CLUSTER_DIR (inherited from mpiexec) is the cluster's state directory, where
# hosts/HOST.pid holds the pid of the host's init.
set -uo pipefail

host="$1"
shift
dir="${CAIRN_CLUSTER_DIR:?agent.sh: CAIRN_CLUSTER_DIR is not set}"
pid="$(cat "$dir/hosts/$host.pid" 2>/dev/null)"
if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
  echo "agent.sh: no such host: $host" >&2
  exit 255  # ssh's status for a host it cannot reach
fi
exec nsenter -t "$pid" -n -m -u -i -p --wd=/ -- \
  env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  /bin/sh -c "$*"
