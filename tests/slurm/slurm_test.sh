#!/usr/bin/env bash
# A real Slurm on this host: installs slurm-wlm and munge from Debian when missing, writes a
# one-node slurm.conf, starts munged, slurmctld and slurmd on localhost (private sockets,
# ports, state and logs under one scratch directory), and stops exactly the processes it
# started when it exits.
#
# The job (apps/heat2d on 2 ranks) is submitted with a 2-minute time limit and
# --signal=B:USR1@45, so Slurm itself signals it: heat2d saves the step it is at and stops.
# Then `scontrol requeue` runs it again (once the credentials of the first run expire,
# cred_expire=10 s here): it must resume at the step it saved, finish, and write
# exactly the field of an uninterrupted run.
#
# When Slurm signals: slurmctld checks its jobs every 30 s and sends the signal at the first
# check where now + 45 s + 30 s >= the end time, i.e. 45 to 75 s after the start here. The
# first run sleeps 100 ms per step (1000 steps: 100 s), so it is mid-way when the signal comes
# and has long installed its handler. The requeued run (SLURM_RESTART_COUNT > 0) does not
# sleep and is done in seconds, well before its own signal.
#
#   slurm_test.sh HEAT2D MPIEXEC "MPIEXEC_FLAGS"
# Exit status: 0 passed, 1 failed, 77 skipped (the machine forbids starting the daemons; the
# reason is printed).
set -uo pipefail

heat2d="$1"
mpiexec="$2"
read -r -a mpiexec_flags <<<"${3:-}"
steps=1000
delay_ms=100
# margin 0: only the signal preempts (the Slurm end time is two minutes away at most).
problem=(--nx 96 --ny 64 --steps "$steps" --save-every 100 --max-to-keep 2 --quiet
         --preemption-margin 0)

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || skip "starting slurmctld, slurmd and munged needs root"

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null ||
   ! command -v munged >/dev/null; then
  echo "installing slurm-wlm and munge"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null ||
    fail "apt-get install slurm-wlm munge failed"
fi
id munge >/dev/null 2>&1 || fail "the munge package did not create the user 'munge'"

work="$(mktemp -d /tmp/cairn-slurm.XXXXXX)"
chmod 755 "$work"
host="$(hostname)"
port=$((17000 + $$ % 2000))
export SLURM_CONF="$work/etc/slurm.conf"

started=()  # "name:pidfile" of every daemon started here
cleanup() {
  local rc=$?
  if [ -f "$work/jobid" ]; then scancel "$(cat "$work/jobid")" >/dev/null 2>&1; fi
  for entry in "${started[@]}"; do
    local name="${entry%%:*}" pidfile="${entry#*:}" pid
    pid="$(cat "$pidfile" 2>/dev/null)" || continue
    [ -n "$pid" ] || continue
    kill "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "$name ($pid) did not stop; killing it"
      kill -9 "$pid" 2>/dev/null
    fi
  done
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
    for log in "$work"/log/*.log "$work"/job-*.out; do
      [ -f "$log" ] && { echo "--- $log"; tail -n 30 "$log"; }
    done
  fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# --- munge, on a private socket and key.
mkdir -p "$work/munge" "$work/log" "$work/etc" "$work/state" "$work/spool"
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chown -R munge:munge "$work/munge"
chmod 700 "$work/munge"
chmod 400 "$work/munge/munge.key"
socket="$work/munge/munge.socket"
runuser -u munge -- munged --force --key-file="$work/munge/munge.key" --socket="$socket" \
  --pid-file="$work/munge/munged.pid" --log-file="$work/munge/munged.log" \
  --seed-file="$work/munge/munged.seed" ||
  skip "munged could not start here: $(tail -n 3 "$work/munge/munged.log" 2>/dev/null)"
started+=("munged:$work/munge/munged.pid")
munge -n -S "$socket" | unmunge -S "$socket" >/dev/null || fail "munge does not work"

# --- slurm.conf for this host.
cat >"$SLURM_CONF" <<CONF
ClusterName=cairntest
SlurmctldHost=$host
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$socket,cred_expire=10
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
KillWait=5
MinJobAge=600
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF

slurmctld -c -f "$SLURM_CONF" || skip "slurmctld could not start: $(tail -n 3 "$work/log/slurmctld.log" 2>/dev/null)"
started+=("slurmctld:$work/slurmctld.pid")
slurmd -f "$SLURM_CONF" || skip "slurmd could not start: $(tail -n 3 "$work/log/slurmd.log" 2>/dev/null)"
started+=("slurmd:$work/slurmd.pid")
for _ in $(seq 60); do
  state="$(sinfo -h -n "$host" -o %t 2>/dev/null)"
  [ "$state" = "idle" ] && break
  sleep 1
done
[ "$state" = "idle" ] || fail "the node did not come up (sinfo state '$state'): $(tail -n 3 "$work/log/slurmd.log")"
echo "slurm is up on $host (ports $port, $((port + 1)))"

# --- The reference: the same job, uninterrupted, outside Slurm.
"$mpiexec" -n 2 "${mpiexec_flags[@]}" "$heat2d" "${problem[@]}" \
  --checkpoint-dir "$work/ref-root" --output "$work/ref.bin" || fail "the uninterrupted run failed"

# --- The batch job. mpiexec inside the allocation runs the ranks locally and forwards SIGUSR1.
cat >"$work/job.sh" <<JOB
#!/bin/bash
delay=$delay_ms
if [ "\${SLURM_RESTART_COUNT:-0}" -gt 0 ]; then delay=0; fi
exec "$mpiexec" -n 2 ${mpiexec_flags[*]} "$heat2d" ${problem[*]} --step-delay-ms "\$delay" \\
  --checkpoint-dir "$work/root" --output "$work/out.bin"
JOB
chmod +x "$work/job.sh"
sbatch --parsable -n 2 --time=2 --signal=B:USR1@45 --requeue --open-mode=append \
  -o "$work/job-%j.out" -J cairn-requeue "$work/job.sh" >"$work/jobid" || fail "sbatch failed"
jobid="$(cat "$work/jobid")"
echo "submitted job $jobid"

job_field() { scontrol show job "$jobid" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$1=//p" | head -1; }

# wait_done <restarts>: waits until the run with that restart count has ended.
wait_done() {
  local restarts="$1" state
  for _ in $(seq 360); do
    state="$(job_field JobState)"
    if [ "$(job_field Restarts)" = "$restarts" ]; then
      case "$state" in
        COMPLETED) return 0 ;;
        FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) fail "job $jobid ended $state" ;;
      esac
    fi
    sleep 0.5
  done
  fail "job $jobid did not finish run $restarts in 180 s (state $state)"
}

wait_done 0
out="$work/job-$jobid.out"
saved="$(sed -n 's/^heat2d: preempted: saved step \([0-9]*\).*/\1/p' "$out" | head -1)"
[ -n "$saved" ] || fail "the first run was not preempted by Slurm's signal: $(cat "$out")"
echo "Slurm signalled the job: it saved step $saved and stopped"

scontrol requeue "$jobid" || fail "scontrol requeue $jobid failed"
wait_done 1
resumed="$(sed -n 's/^heat2d: restarted from step \([0-9]*\).*/\1/p' "$out" | head -1)"
[ "$resumed" = "$saved" ] || fail "the requeued run resumed at step '$resumed', not $saved"
grep -q "^heat2d: finished step $steps," "$out" || fail "the requeued run did not finish: $(cat "$out")"
cmp "$work/ref.bin" "$work/out.bin" || fail "the result differs from the uninterrupted run"
echo "requeued run resumed at step $resumed and finished; result equals the uninterrupted run"
