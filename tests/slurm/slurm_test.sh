#!/usr/bin/env bash
# A real Slurm on this host: installs slurm-wlm and munge from Debian when missing, writes a
# one-node slurm.conf, starts munged, slurmctld and slurmd on localhost (private sockets,
# ports, state and logs under one scratch directory), and stops exactly the processes it
# started when it exits.
#
# The job is the batch script that cairn installs as a template (share/cairn/heat2d.sbatch,
# share/cairn/heat2d-srun.sbatch; shown in docs/slurm.md), submitted unchanged: sbatch options
# given on the command line replace its #SBATCH lines (one node, 2 tasks, a short time limit),
# and `mpirun` and `heat2d` on the job's PATH are small wrappers that run the real ones on 2
# ranks with a small problem. heat2d saves the step it is at and stops; the script requeues
# the job itself, and the second run must resume at the saved step, finish, and write exactly
# the field of an uninterrupted run. Modes, one job each:
#   signal   heat2d.sbatch, --signal=B:USR1@45: Slurm signals the batch shell, whose trap
#            forwards SIGUSR1 through mpirun to every rank;
#   srun     heat2d-srun.sbatch, --signal=USR1@45: Slurm signals the tasks started by srun;
#   endtime  heat2d.sbatch with a 3-minute limit and heat2d's --preemption-margin 150: the
#            ranks stop on SLURM_JOB_END_TIME (the script sets it from squeue where Slurm does
#            not), before Slurm's signal could come.
# The jobs of all the modes given are submitted at once to the one Slurm started here (the
# node takes up to 4 jobs at once, OverSubscribe=FORCE:4), each with its own job, scratch and
# working directories: their minutes of waiting for Slurm overlap. Each is checked on its own,
# from cairn's log, for what made heat2d stop (a signal, or the end time).
#
# When Slurm signals: slurmctld checks its jobs every 30 s and sends the signal at the first
# check where now + 45 s + 30 s >= the end time, i.e. 45 to 75 s after the start of a 2-minute
# job. The first run sleeps 100 ms per step (1000 steps: 100 s), so it is mid-way when the
# signal comes and has long installed its handler. The requeued run (SLURM_RESTART_COUNT > 0)
# does not sleep and is done in seconds, well before its own signal.
#
#   slurm_test.sh "MODE..." HEAT2D MPIEXEC "MPIEXEC_FLAGS" TEMPLATE_DIR
# Exit status: 0 every mode passed, 1 one failed (each failure is printed), 77 skipped (the
# machine forbids starting the daemons; the reason is printed).
set -uo pipefail

read -r -a modes <<<"$1"
heat2d="$2"
mpiexec="$3"
read -r -a mpiexec_flags <<<"${4:-}"
templates="$5"
steps=1000
delay_ms=100
problem=(--nx 96 --ny 64 --steps "$steps" --save-every 100 --max-to-keep 2 --quiet)

# mode_settings MODE: sets template, margin, limit, signal and expect for MODE's job.
# margin 0: only the signal preempts (the end time is two minutes away at most). In endtime
# mode the signal comes 105 s after the start at the earliest; the end time, 30 s after.
mode_settings() {
  template=heat2d.sbatch margin=0 limit=2 signal=B:USR1@45 expect="local_signal=SIGUSR1"
  case "$1" in
    signal) ;;
    srun) template=heat2d-srun.sbatch signal=USR1@45 ;;
    endtime) margin=150 limit=3 expect="local_signal=none local_deadline_near=true" ;;
    *) return 1 ;;
  esac
}
[ ${#modes[@]} -gt 0 ] || { echo "slurm_test: no mode given" >&2; exit 2; }
for mode in "${modes[@]}"; do
  mode_settings "$mode" || { echo "slurm_test: unknown mode '$mode'" >&2; exit 2; }
done

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
# Two ports, slurmctld's and slurmd's: an even pair, so that two copies of this test (from two
# build trees) never share one, and the first pair nothing listens on.
port=$((17000 + 2 * ($$ % 1000)))
for _ in $(seq 100); do
  ss -Hltn 2>/dev/null | grep -qE ":($port|$((port + 1)))\b" || break
  port=$((17000 + (port - 17000 + 2) % 2000))
done
export SLURM_CONF="$work/etc/slurm.conf"

started=()  # "name:pidfile" of every daemon started here
cleanup() {
  local rc=$?
  local jobid_file
  for jobid_file in "$work"/*/jobid; do
    [ -s "$jobid_file" ] && scancel "$(cat "$jobid_file")" >/dev/null 2>&1
  done
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
    for log in "$work"/log/*.log "$work"/*/job-*.out; do
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

# --- The jobs: the template as installed, with mpirun and heat2d on its PATH as wrappers; one
# directory per mode ($work/MODE: bin, job, scratch, jobid, job-ID.out).
for mode in "${modes[@]}"; do
  mode_settings "$mode"
  dir="$work/$mode"
  mkdir -p "$dir/bin" "$dir/job" "$dir/scratch"
  cat >"$dir/bin/mpirun" <<WRAP
#!/bin/bash
exec "$mpiexec" -n 2 ${mpiexec_flags[*]} "\$@"
WRAP
  # heat2d: the template's own options, less its --steps, plus this test's small problem; the
  # first run sleeps after every step, the requeued one does not.
  cat >"$dir/bin/heat2d" <<WRAP
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
  chmod +x "$dir/bin/mpirun" "$dir/bin/heat2d"
  cp "$templates/$template" "$dir/job.sbatch"
  PATH="$dir/bin:$PATH" SCRATCH="$dir/scratch" CAIRN_LOG_LEVEL=info \
    sbatch --parsable --nodes=1 --ntasks-per-node=2 --time="$limit" --signal="$signal" \
    --chdir="$dir/job" -o "$dir/job-%j.out" -J "cairn-$mode" "$dir/job.sbatch" >"$dir/jobid" ||
    fail "sbatch $template ($mode) failed"
  echo "$mode: submitted $template as job $(cat "$dir/jobid")" \
    "(--time=$limit --signal=$signal, margin $margin s)"
done

# job_field JOBID FIELD: FIELD of the job in the last `scontrol -o show job` ($work/jobs).
job_field() {
  awk -v id="JobId=$1" -v key="$2=" '$1 == id {
    for (i = 2; i <= NF; i++) if (index($i, key) == 1) { print substr($i, length(key) + 1); exit }
  }' "$work/jobs"
}

# Each script requeues itself when preempted: wait until a run of each job completes. Slurm
# may signal a run again (its signal resolution is up to a minute), so any number of requeues
# that end with the right result is a pass.
pending=("${modes[@]}")
for _ in $(seq 600); do
  scontrol -o show job >"$work/jobs" 2>/dev/null
  still=()
  for mode in "${pending[@]}"; do
    case "$(job_field "$(cat "$work/$mode/jobid")" JobState)" in
      COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) ;;
      *) still+=("$mode") ;;
    esac
  done
  pending=("${still[@]}")
  [ ${#pending[@]} -eq 0 ] && break
  sleep 0.5
done

# check_mode MODE: the checks of one job, from the last listing; prints what failed.
check_mode() {
  local mode="$1" jobid state restarts out saved reason resumes
  mode_settings "$mode"
  jobid="$(cat "$work/$mode/jobid")"
  state="$(job_field "$jobid" JobState)"
  restarts="$(job_field "$jobid" Restarts)"
  out="$work/$mode/job-$jobid.out"
  case "$state" in
    COMPLETED) ;;
    FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY)
      echo "job $jobid ended $state"; return 1 ;;
    *) echo "job $jobid did not finish in 300 s (state $state, restarts $restarts)"; return 1 ;;
  esac
  [ "${restarts:-0}" -ge 1 ] ||
    { echo "job $jobid completed without requeueing itself: $(cat "$out")"; return 1; }
  saved="$(sed -n 's/^heat2d: preempted: saved step \([0-9]*\).*/\1/p' "$out" | head -1)"
  [ -n "$saved" ] || { echo "the first run was not preempted: $(cat "$out")"; return 1; }
  reason="$(grep -m1 -o 'event=preemption.reached .*' "$out")"
  grep -q "event=preemption.reached step=$saved $expect" "$out" ||
    { echo "the first run stopped at step $saved, not as expected ($expect): $reason"; return 1; }
  echo "the first run saved step $saved and stopped ($reason); the script requeued the job"
  # Every requeued run resumes at the step the run before it saved.
  resumes="$(awk '/^heat2d: preempted: saved step / { saved = $5; next }
    /^heat2d: restarted from step / { n++; if ($5 != saved) bad = bad " " $5 "!=" saved }
    END { print n + 0, (bad == "" ? "ok" : bad) }' "$out")"
  [ "${resumes#* }" = ok ] ||
    { echo "a requeued run did not resume where the run before stopped:${resumes#* }"; return 1; }
  [ "${resumes%% *}" -ge 1 ] || { echo "no requeued run restarted: $(cat "$out")"; return 1; }
  grep -q "^heat2d: finished step $steps," "$out" ||
    { echo "the requeued run did not finish: $(cat "$out")"; return 1; }
  cmp "$work/ref.bin" "$work/$mode/job/final.bin" ||
    { echo "the result differs from the uninterrupted run"; return 1; }
  echo "$restarts requeue(s); runs resumed where the one before stopped;" \
    "result equals the uninterrupted run"
}

failed=()
for mode in "${modes[@]}"; do
  if check_mode "$mode" > "$work/$mode/check"; then
    sed "s/^/$mode: /" "$work/$mode/check"
  else
    sed "s/^/FAIL $mode: /" "$work/$mode/check"
    failed+=("$mode")
  fi
done
[ ${#failed[@]} -eq 0 ] || fail "${failed[*]}"
