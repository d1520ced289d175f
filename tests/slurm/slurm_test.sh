#!/usr/bin/env bash
# A real Slurm on this host: installs slurm-wlm and munge from Debian when missing, writes a
# one-node slurm.conf, starts munged, slurmctld and slurmd on localhost (private sockets,
# ports, state and logs under one scratch directory), and stops exactly the processes it
# started when it exits.
#
# The job is the batch script that cairn installs as a template (share/cairn/heat2d.sbatch,
# share/cairn/heat2d-srun.sbatch; shown in README.md), submitted unchanged: sbatch options
# given on the command line replace its #SBATCH lines (one node, 2 tasks, a short time limit),
# and `mpirun` and `heat2d` on the job's PATH are small wrappers that run the real ones on 2
# ranks with a small problem. heat2d saves the step it is at and stops; the script requeues
# the job itself, and the second run must resume at the saved step, finish, and write exactly
# the field of an uninterrupted run. Modes:
#   signal   heat2d.sbatch, --signal=B:USR1@45: Slurm signals the batch shell, whose trap
#            forwards SIGUSR1 through mpirun to every rank;
#   srun     heat2d-srun.sbatch, --signal=USR1@45: Slurm signals the tasks started by srun;
#   endtime  heat2d.sbatch with a 3-minute limit and heat2d's --preemption-margin 150: the
#            ranks stop on SLURM_JOB_END_TIME (the script sets it from squeue where Slurm does
#            not), before Slurm's signal could come.
# Each checks, from cairn's log, what made heat2d stop (a signal, or the end time).
#
# When Slurm signals: slurmctld checks its jobs every 30 s and sends the signal at the first
# check where now + 45 s + 30 s >= the end time, i.e. 45 to 75 s after the start of a 2-minute
# job. The first run sleeps 100 ms per step (1000 steps: 100 s), so it is mid-way when the
# signal comes and has long installed its handler. The requeued run (SLURM_RESTART_COUNT > 0)
# does not sleep and is done in seconds, well before its own signal.
#
#   slurm_test.sh MODE HEAT2D MPIEXEC "MPIEXEC_FLAGS" TEMPLATE_DIR
# Exit status: 0 passed, 1 failed, 77 skipped (the machine forbids starting the daemons; the
# reason is printed).
set -uo pipefail

mode="$1"
heat2d="$2"
mpiexec="$3"
read -r -a mpiexec_flags <<<"${4:-}"
templates="$5"
steps=1000
delay_ms=100
# margin 0: only the signal preempts (the end time is two minutes away at most). In endtime
# mode the signal comes 105 s after the start at the earliest; the end time, 30 s after.
template=heat2d.sbatch margin=0 limit=2 signal=B:USR1@45 expect="local_signal=SIGUSR1"
case "$mode" in
  signal) ;;
  srun) template=heat2d-srun.sbatch signal=USR1@45 ;;
  endtime) margin=150 limit=3 expect="local_signal=none local_deadline_near=true" ;;
  *) echo "slurm_test: unknown mode '$mode'" >&2; exit 2 ;;
esac
problem=(--nx 96 --ny 64 --steps "$steps" --save-every 100 --max-to-keep 2 --quiet)

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

# --- The reference: the same problem, uninterrupted, outside Slurm.
"$mpiexec" -n 2 "${mpiexec_flags[@]}" "$heat2d" "${problem[@]}" \
  --checkpoint-dir "$work/ref-root" --output "$work/ref.bin" || fail "the uninterrupted run failed"

# --- The job: the template as installed, with mpirun and heat2d on its PATH as wrappers.
mkdir -p "$work/bin" "$work/job" "$work/scratch"
cat >"$work/bin/mpirun" <<WRAP
#!/bin/bash
exec "$mpiexec" -n 2 ${mpiexec_flags[*]} "\$@"
WRAP
# heat2d: the template's own options, less its --steps, plus this test's small problem; the
# first run sleeps after every step, the requeued one does not.
cat >"$work/bin/heat2d" <<WRAP
#!/bin/bash
args=()
while [ \$# -gt 0 ]; do
  if [ "\$1" = --steps ]; then shift 2; continue; fi
  args+=("\$1"); shift
done
delay=$delay_ms
if [ "\${SLURM_RESTART_COUNT:-0}" -gt 0 ]; then delay=0; fi
exec "$heat2d" "\${args[@]}" ${problem[*]} --preemption-margin $margin --step-delay-ms "\$delay"
WRAP
chmod +x "$work/bin/mpirun" "$work/bin/heat2d"
cp "$templates/$template" "$work/job.sbatch"
PATH="$work/bin:$PATH" SCRATCH="$work/scratch" CAIRN_LOG_LEVEL=info \
  sbatch --parsable --nodes=1 --ntasks-per-node=2 --time="$limit" --signal="$signal" \
  --chdir="$work/job" -o "$work/job-%j.out" -J "cairn-$mode" "$work/job.sbatch" >"$work/jobid" ||
  fail "sbatch $template failed"
jobid="$(cat "$work/jobid")"
echo "submitted $template as job $jobid (--time=$limit --signal=$signal, margin $margin s)"

job_field() { scontrol show job "$jobid" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$1=//p" | head -1; }

# The script requeues itself when preempted: wait until a run of it completes. Slurm may
# signal a run again (its signal resolution is up to a minute), so any number of requeues that
# end with the right result is a pass.
state=""
restarts=""
for _ in $(seq 600); do
  state="$(job_field JobState)"
  restarts="$(job_field Restarts)"
  case "$state" in
    COMPLETED) break ;;
    FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) fail "job $jobid ended $state" ;;
  esac
  sleep 0.5
done
[ "$state" = COMPLETED ] ||
  fail "job $jobid did not finish in 300 s (state $state, restarts $restarts)"
[ "${restarts:-0}" -ge 1 ] ||
  fail "job $jobid completed without requeueing itself: $(cat "$work"/job-*.out)"

out="$work/job-$jobid.out"
saved="$(sed -n 's/^heat2d: preempted: saved step \([0-9]*\).*/\1/p' "$out" | head -1)"
[ -n "$saved" ] || fail "the first run was not preempted: $(cat "$out")"
reason="$(grep -m1 -o 'event=preemption.reached .*' "$out")"
grep -q "event=preemption.reached step=$saved $expect" "$out" ||
  fail "the first run stopped at step $saved for another reason than expected ($expect): $reason"
echo "the first run saved step $saved and stopped ($reason); the script requeued the job"
# Every requeued run resumes at the step the run before it saved.
resumes="$(awk '/^heat2d: preempted: saved step / { saved = $5; next }
  /^heat2d: restarted from step / { n++; if ($5 != saved) bad = bad " " $5 "!=" saved }
  END { print n + 0, (bad == "" ? "ok" : bad) }' "$out")"
[ "${resumes#* }" = ok ] || fail "a requeued run did not resume where the run before stopped:${resumes#* }"
[ "${resumes%% *}" -ge 1 ] || fail "no requeued run restarted: $(cat "$out")"
grep -q "^heat2d: finished step $steps," "$out" || fail "the requeued run did not finish: $(cat "$out")"
cmp "$work/ref.bin" "$work/job/final.bin" || fail "the result differs from the uninterrupted run"
echo "$restarts requeue(s); runs resumed where the one before stopped; result equals the uninterrupted run"
