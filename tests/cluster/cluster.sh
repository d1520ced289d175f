# An emulated cluster on one machine, for the tests of tests/cluster (sourced by them).
#
# Each host is a network namespace on a private bridge (10.77.0.0/24, in a namespace of its
# own: the machine's own network is never touched) and an init process (host_init.sh) in new
# UTS, mount, IPC and pid namespaces: its own hostname, its own tmpfs on /dev/shm, and a pid
# namespace, so that killing the init ends every process of the host at once, as a crash of
# the node does. /tmp and the rest of the file system are shared, as a parallel file system
# is. mpiexec runs on a "head" host (a network namespace without a pid namespace of its own)
# and starts its daemons with Open MPI's stock rsh launcher, agent.sh standing in for ssh.
# Ranks go to the hosts in the order of --host: rank i on the i-th host.
#
#   cluster_up STATE_DIR HOST...   creates the hosts (and the head); installs an EXIT trap that
#                                  tears everything down, so that a failed test leaves nothing
#   cluster_mpiexec SECONDS ARGS   mpiexec ARGS from the head, stopped by `timeout` (SIGTERM,
#                                  then SIGKILL 10 s later); returns its status
#   cluster_mpiexec_bg LOG SECONDS ARGS   the same in the background: the job's pid in
#                                  cluster_job, output in LOG; cluster_job_wait waits for it
#   cluster_kill_job               SIGKILL to the job's mpiexec
#   cluster_stop_job               SIGTERM to the job's mpiexec, SIGKILL 10 s later (as timeout)
#   cluster_kill_host HOST         SIGKILL to the host's init (every process of the host dies),
#                                  then its namespaces and its /dev/shm are removed
#   cluster_add_host HOST          a fresh host (empty /dev/shm) under that name
#   cluster_cut_host HOST          unplugs the host's cable (its processes live on, unreachable)
#   cluster_path HOST PATH         prints PATH as the host sees it (through /proc/PID/root)
#   cluster_wait_idle HOST...      waits until no process is left on the hosts but their init
#   cluster_down                   tears the cluster down and checks that nothing is left:
#                                  no namespace, veth, mount or process of this cluster
#   cluster_leftovers WORKDIR      what the clusters of ended tests left behind (none: 0)
# Functions print "cluster: ..." on failure and return non-zero. Everything is named after
# cluster_prefix ("cairncl<pid of the test>"), so that clusters of tests run at once never
# share a name, and only what this cluster started is ever killed or removed.

# cluster_requirements: prints why the emulated cluster cannot run here and returns 1, or
# returns 0.
cluster_requirements() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "cluster: needs root (network, mount and pid namespaces)"
    return 1
  fi
  local tool
  for tool in ip unshare nsenter timeout mountpoint; do
    if ! command -v "$tool" >/dev/null; then
      echo "cluster: needs '$tool'"
      return 1
    fi
  done
  local probe="cairncl$$-probe"
  if ! ip netns add "$probe" 2>/dev/null; then
    echo "cluster: cannot create a network namespace (ip netns add failed)"
    return 1
  fi
  ip netns delete "$probe"
  if ! unshare --uts --mount --ipc --pid --fork --mount-proc --propagation private true \
       2>/dev/null; then
    echo "cluster: cannot create UTS, mount, IPC and pid namespaces (unshare failed)"
    return 1
  fi
  return 0
}

cluster_dir=""
cluster_prefix="cairncl$$"
cluster_bridge="${cluster_prefix}-bridge"
cluster_hosts=()          # names, in the order of their addresses
cluster_job=""            # pid of the background job's `timeout`
cluster_namespaces=()     # network namespaces created (deleted again by cluster_down)
declare -A cluster_init   # host -> pid of its init (in this pid namespace)
declare -A cluster_outer  # host -> pid of the `unshare` that waits for the init
declare -A cluster_cable  # host -> name of its veth in the bridge's namespace
cluster_generation=0      # counts hosts created, so that a replacement's veth has a new name
cluster_subnet="10.77.0.0/24"

cluster_fail() { echo "cluster: $*" >&2; return 1; }

# cluster_started PID: a process of this cluster that cluster_down must find gone, recorded
# with its start time (a pid is only reused by a process that started later).
cluster_started() {
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 0
  stat="${stat##*) }"
  echo "$1 $(echo "$stat" | cut -d' ' -f20)" >>"$cluster_dir/pids"
}

# cluster_address HOST: the host's address (the head is .1, the k-th host .(10 + k)).
cluster_address() {
  local i
  [ "$1" = head ] && { echo 10.77.0.1; return 0; }
  for i in "${!cluster_hosts[@]}"; do
    if [ "${cluster_hosts[$i]}" = "$1" ]; then
      echo "10.77.0.$((10 + i))"
      return 0
    fi
  done
  cluster_fail "unknown host '$1'"
}

# cluster_start_host HOST PID_NAMESPACE(0|1): namespaces, cable and init of one host.
cluster_start_host() {
  local host="$1" own_pids="$2" ns="${cluster_prefix}-$1" address mac
  address="$(cluster_address "$host")" || return 1
  # The host's end of its cable is eth0 in its own namespace; the other end, in the bridge's
  # namespace, gets a new name for each host started (a replacement's old cable may still be
  # going away). Both carry the namespace's name as their alias.
  cluster_generation=$((cluster_generation + 1))
  local cable="cable${cluster_generation}"
  # A fixed MAC address per host name: a replacement host answers at the address the others
  # already have in their ARP caches.
  mac="$(printf '02:77:00:00:00:%02x' "${address##*.}")"
  ip netns add "$ns" || return 1
  cluster_namespaces+=("$ns")
  if ! { ip -n "$ns" link set lo up &&
    ip -n "$ns" link add eth0 address "$mac" type veth peer name "$cable" netns "$cluster_bridge" &&
    ip -n "$ns" addr add "$address/24" dev eth0 &&
    ip -n "$ns" link set eth0 alias "$ns" up &&
    ip -n "$cluster_bridge" link set "$cable" alias "$ns" master br0 up; }; then
    cluster_fail "cannot wire host $host"
    return 1
  fi
  cluster_cable[$host]="$cable"
  local ready="$cluster_dir/hosts/$host.ready" flags=(--uts --mount --propagation private)
  rm -f "$ready"
  [ "$own_pids" = 1 ] && flags=(--uts --mount --ipc --pid --fork --mount-proc --propagation private)
  ip netns exec "$ns" unshare "${flags[@]}" \
    "$cluster_source_dir/host_init.sh" "$host" "$cluster_dir/hosts.txt" "$ready" \
    </dev/null >>"$cluster_dir/hosts/$host.log" 2>&1 &
  local outer=$!
  cluster_outer[$host]="$outer"
  cluster_started "$outer"
  local tries=0
  until [ -e "$ready" ]; do
    tries=$((tries + 1))
    if [ "$tries" -gt 300 ] || ! kill -0 "$outer" 2>/dev/null; then
      cat "$cluster_dir/hosts/$host.log" >&2
      cluster_fail "host $host did not start"
      return 1
    fi
    sleep 0.05
  done
  # With a pid namespace, `unshare --fork` waits for the host's init, its only child.
  local init="$outer"
  if [ "$own_pids" = 1 ]; then
    init="$(cat "/proc/$outer/task/$outer/children" 2>/dev/null)"
    init="${init%% *}"
    [ -n "$init" ] || { cluster_fail "host $host: no init under pid $outer"; return 1; }
    cluster_started "$init"
  fi
  cluster_init[$host]="$init"
  echo "$init" >"$cluster_dir/hosts/$host.pid"
}

# cluster_up STATE_DIR HOST...: see the top of this file.
cluster_up() {
  cluster_dir="$1"
  shift
  cluster_hosts=("$@")
  cluster_source_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  rm -rf "$cluster_dir" && mkdir -p "$cluster_dir/hosts" && : >"$cluster_dir/pids" || return 1
  trap cluster_down EXIT
  trap 'exit 143' TERM INT
  {
    echo "127.0.0.1 localhost"
    echo "10.77.0.1 head"
    local i
    for i in "${!cluster_hosts[@]}"; do echo "10.77.0.$((10 + i)) ${cluster_hosts[$i]}"; done
  } >"$cluster_dir/hosts.txt"
  ip netns add "$cluster_bridge" || return 1
  cluster_namespaces+=("$cluster_bridge")
  ip -n "$cluster_bridge" link add br0 type bridge &&
    ip -n "$cluster_bridge" link set br0 up || return 1
  cluster_start_host head 0 || return 1
  local host
  for host in "${cluster_hosts[@]}"; do
    cluster_start_host "$host" 1 || return 1
  done
}

cluster_add_host() { cluster_start_host "$1" 1; }

# cluster_stop_host HOST: kills the host's init and removes its network namespace.
cluster_stop_host() {
  local host="$1" init="${cluster_init[$1]:-}" outer="${cluster_outer[$1]:-}"
  # The init's death ends its pid namespace; `unshare` then reaps it and exits.
  [ -n "$init" ] && kill -KILL "$init" 2>/dev/null
  [ -n "$outer" ] && wait "$outer" 2>/dev/null
  unset "cluster_init[$host]" "cluster_outer[$host]" "cluster_cable[$host]"
  rm -f "$cluster_dir/hosts/$host.pid"
  ip netns delete "${cluster_prefix}-$host" 2>/dev/null
  return 0
}

cluster_kill_host() {
  [ -n "${cluster_init[$1]:-}" ] || { cluster_fail "host $1 is not running"; return 1; }
  cluster_stop_host "$1"
}

cluster_cut_host() {
  [ -n "${cluster_cable[$1]:-}" ] || { cluster_fail "host $1 is not running"; return 1; }
  ip -n "$cluster_bridge" link set "${cluster_cable[$1]}" down
}

cluster_path() {
  [ -n "${cluster_init[$1]:-}" ] || { cluster_fail "host $1 is not running"; return 1; }
  echo "/proc/${cluster_init[$1]}/root$2"
}

# cluster_wait_idle HOST...: waits (up to a minute) until each host runs nothing but its init
# and the init's sleep: the daemons and ranks of a job that ended are gone.
cluster_wait_idle() {
  local host tries pid count
  for host in "$@"; do
    local ns
    ns="$(readlink "/proc/${cluster_init[$host]}/ns/pid")" || return 1
    for ((tries = 0; tries < 600; tries++)); do
      count=0
      for pid in /proc/[0-9]*; do
        [ "$(readlink "$pid/ns/pid" 2>/dev/null)" = "$ns" ] && count=$((count + 1))
      done
      [ "$count" -le 2 ] && break
      sleep 0.1
    done
    [ "$count" -le 2 ] || { cluster_fail "host $host still runs $((count - 2)) processes"; return 1; }
  done
}

# cluster_environment: the environment of mpiexec on the head. Open MPI's Slurm components
# would pick up SLURM_* variables, and CAIRN_RANKS_PER_NODE would replace the hosts as nodes.
cluster_environment() {
  local var
  for var in "${!SLURM_@}" CAIRN_RANKS_PER_NODE; do echo "-u"; echo "$var"; done
  printf '%s\n' OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    "CAIRN_CLUSTER_DIR=$cluster_dir" \
    "OMPI_MCA_plm_rsh_agent=$cluster_source_dir/agent.sh" \
    OMPI_MCA_plm_rsh_no_tree_spawn=1 \
    OMPI_MCA_btl=tcp,vader,self \
    "OMPI_MCA_btl_tcp_if_include=$cluster_subnet" \
    "OMPI_MCA_oob_tcp_if_include=$cluster_subnet" \
    OMPI_MCA_hwloc_base_binding_policy=none \
    OMPI_MCA_rmaps_base_oversubscribe=1 \
    OMPI_MCA_mpi_yield_when_idle=1
}

# cluster_command SECONDS ARGS: sets cluster_argv to the command line of mpiexec ARGS on the
# head under `timeout` (env and nsenter replace themselves by mpiexec: it is timeout's child).
cluster_command() {
  local seconds="$1"
  shift
  local -a environment
  mapfile -t environment < <(cluster_environment)
  cluster_argv=(timeout -k 10 "$seconds" env "${environment[@]}"
    nsenter -t "${cluster_init[head]}" -n -m -u --wd="$PWD" -- mpiexec "$@")
}

cluster_mpiexec() {
  cluster_command "$@"
  "${cluster_argv[@]}"
}

cluster_mpiexec_bg() {
  local log="$1"
  shift
  cluster_command "$@"
  "${cluster_argv[@]}" >"$log" 2>&1 &
  cluster_job=$!
  cluster_started "$cluster_job"
}

# cluster_job_wait: waits for the background job; returns its status.
cluster_job_wait() {
  [ -n "$cluster_job" ] || return 0
  wait "$cluster_job"
  local status=$?
  cluster_job=""
  return "$status"
}

# cluster_kill_job: SIGKILL to the background job's mpiexec (the child of its `timeout`); its
# daemons then end the ranks.
cluster_kill_job() {
  [ -n "$cluster_job" ] || return 0
  local child
  child="$(cat "/proc/$cluster_job/task/$cluster_job/children" 2>/dev/null)"
  child="${child%% *}"
  [ -n "$child" ] && kill -KILL "$child" 2>/dev/null
  return 0
}

# cluster_stop_job: stops the background job as `timeout -k 10` would: SIGTERM to its
# mpiexec, SIGKILL 10 s later if it still runs. Prints which of them ended it.
cluster_stop_job() {
  [ -n "$cluster_job" ] || return 0
  local child tries
  child="$(cat "/proc/$cluster_job/task/$cluster_job/children" 2>/dev/null)"
  child="${child%% *}"
  [ -n "$child" ] || return 0
  kill -TERM "$child" 2>/dev/null
  for ((tries = 0; tries < 100; tries++)); do
    kill -0 "$child" 2>/dev/null || { echo "SIGTERM ended mpiexec"; return 0; }
    sleep 0.1
  done
  kill -KILL "$child" 2>/dev/null
  echo "mpiexec ignored SIGTERM for 10 s: SIGKILL ended it"
}

# cluster_leftovers WORKDIR: prints what clusters of tests that have ended left behind:
# namespaces and their mounts named after a test whose process is gone, and host inits of
# clusters whose state directory is under WORKDIR. Returns 1 when there is any.
cluster_leftovers() {
  local work="$1" left=0 name pid
  while read -r name _; do
    pid="${name#cairncl}"
    pid="${pid%%-*}"
    [[ "$pid" =~ ^[0-9]+$ ]] || continue
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "cluster: namespace left by an ended test: $name"
      left=1
    fi
  done < <(ip netns list | grep '^cairncl')
  if grep -E "/run/netns/cairncl[0-9]+-" /proc/self/mountinfo | while read -r line; do
       pid="$(echo "$line" | sed -n 's|.*/run/netns/cairncl\([0-9]*\)-.*|\1|p')"
       kill -0 "$pid" 2>/dev/null || echo "cluster: mount left by an ended test: $line"
     done | grep .; then
    left=1
  fi
  for pid in /proc/[0-9]*; do
    if grep -qa "host_init.sh" "$pid/cmdline" 2>/dev/null &&
       grep -qaF "$work" "$pid/cmdline" 2>/dev/null; then
      echo "cluster: host init left: ${pid#/proc/} ($(tr '\0' ' ' <"$pid/cmdline"))"
      left=1
    fi
  done
  return "$left"
}

# cluster_down: see the top of this file. Returns 1 (and says what) when something is left.
cluster_down() {
  trap - EXIT
  [ -n "$cluster_dir" ] || return 0
  local host pid left=0
  if [ -n "$cluster_job" ]; then
    cluster_kill_job
    kill -KILL "$cluster_job" 2>/dev/null
    wait "$cluster_job" 2>/dev/null
    cluster_job=""
  fi
  for host in "${!cluster_init[@]}"; do
    cluster_stop_host "$host"
  done
  local ns
  for ns in "${cluster_namespaces[@]}"; do
    [ -e "/run/netns/$ns" ] && ip netns delete "$ns"
  done
  # Nothing of this cluster may be left: namespaces, their mounts, veths, processes.
  if ip netns list | grep -q "^$cluster_prefix-"; then
    echo "cluster: namespaces left: $(ip netns list | grep "^$cluster_prefix-" | tr '\n' ' ')" >&2
    left=1
  fi
  if grep -qF "/run/netns/$cluster_prefix-" /proc/self/mountinfo; then
    echo "cluster: mounts left: $(grep -F "/run/netns/$cluster_prefix-" /proc/self/mountinfo)" >&2
    left=1
  fi
  # The veths go with their namespaces; one that had moved to this namespace would show its
  # alias.
  if ip -o link show | grep -qF "alias $cluster_prefix-"; then
    echo "cluster: veths left: $(ip -o link show | grep -F "alias $cluster_prefix-")" >&2
    left=1
  fi
  local started now tries
  while read -r pid started; do
    for ((tries = 0; tries < 100; tries++)); do
      now="$(cat "/proc/$pid/stat" 2>/dev/null)" || break
      now="${now##*) }"
      [ "$(echo "$now" | cut -d' ' -f20)" = "$started" ] || break
      sleep 0.1
    done
    if [ "$tries" -eq 100 ]; then
      echo "cluster: process left: $pid ($(tr '\0' ' ' <"/proc/$pid/cmdline"))" >&2
      left=1
    fi
  done <"$cluster_dir/pids"
  [ "$left" -eq 0 ] && echo "cluster: torn down, nothing left"
  cluster_dir=""
  return "$left"
}
