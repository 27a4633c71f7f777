#!/usr/bin/env bash
# experiments/slurm/sweep_array.sbatch on a real one-node Slurm (Debian's slurm-wlm: munged, slurmctld and slurmd on
# localhost, every file and port private to this test), end to end as its header documents it:
#   - the file as written is accepted by sbatch (--test-only; the node has one pretend GPU for that);
#   - a small array on the CPU partition recipe (BACKEND=emulated, --gpus-per-task=0), in which shard 1 is killed
#     (kill -9 of its sweep after its first finished run): its task fails, and the merge job is cancelled instead of
#     waiting forever;
#   - the documented recovery (load OUTDIR/sweep_array.env, sbatch --array=1) resumes shard 1 and merges all shards;
#   - the merged file equals an unsharded `replayssm sweep` of the same options, dataset for dataset, bit for bit;
#   - a partial array without N is refused by the job with a message that names N.
# Needs root (slurmd runs jobs as root here). Installs slurmctld, slurmd, slurm-client and munge with apt-get when
# they are missing (REPLAYSSM_SLURM_INSTALL=0: do not); as any install of munge, that may start Debian's own munge
# service, which this test does not use. Exit 0: passed; 1: failed; 77: skipped, reason printed.
# REPLAYSSM_SLURM_KEEP=1 keeps the work folder (logs, slurm.conf, results); REPLAYSSM_SLURM_NS=0 runs the daemons
# without a PID namespace of their own (what happens where unshare is not allowed).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CLI=${REPLAYSSM_CLI:-${1:-}}
SCRIPT=$ROOT/experiments/slurm/sweep_array.sbatch
PY=/usr/bin/python3
T0=$SECONDS

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
pass() { echo "PASS: $*"; }

[ -n "$CLI" ] && [ -x "$CLI" ] || fail "no replayssm CLI (REPLAYSSM_CLI or the first argument)"
CLI=$(realpath "$CLI")  # jobs run in another folder
[ "$(id -u)" -eq 0 ] || skip "not root: slurmctld and slurmd need root to run jobs on this host"
"$PY" -c 'import h5py, numpy' 2>/dev/null || skip "$PY cannot import h5py and numpy (python3-h5py python3-numpy)"

command -v setpriv >/dev/null || skip "setpriv (util-linux) not found"
tools=(munged munge slurmctld slurmd sbatch squeue scancel scontrol sinfo srun)
missing() { for t in "${tools[@]}"; do command -v "$t" >/dev/null || { echo "$t"; return; }; done; }
if [ -n "$(missing)" ]; then
  if [ "${REPLAYSSM_SLURM_INSTALL:-1}" = "0" ] || ! command -v apt-get >/dev/null; then
    skip "$(missing) not found, and no apt-get or REPLAYSSM_SLURM_INSTALL=0" \
      "(apt-get install slurmctld slurmd slurm-client munge)"
  fi
  echo "slurm test: installing slurmctld slurmd slurm-client munge"
  pkgs=(slurmctld slurmd slurm-client munge)
  apt_opts=(-y -qq --no-install-recommends -o DPkg::Lock::Timeout=60 -o Acquire::http::Timeout=20)
  export DEBIAN_FRONTEND=noninteractive
  # Download under a time limit (safe to interrupt), then install from the cache, which must not be interrupted.
  if ! timeout 120 apt-get install --download-only "${apt_opts[@]}" "${pkgs[@]}" >/dev/null 2>&1; then
    timeout 60 apt-get update -qq -o DPkg::Lock::Timeout=60 >/dev/null 2>&1 || true
    timeout 120 apt-get install --download-only "${apt_opts[@]}" "${pkgs[@]}" >/dev/null 2>&1 ||
      skip "could not download ${pkgs[*]} (no network or no Debian mirror?)"
  fi
  apt-get install "${apt_opts[@]}" "${pkgs[@]}" >/dev/null 2>&1 || skip "apt-get install ${pkgs[*]} failed"
  [ -z "$(missing)" ] || skip "$(missing) still missing after installing slurm-wlm's packages"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/replayssm-slurm.XXXXXX")
chmod 755 "$WORK"  # munged refuses a socket folder that others cannot traverse
others=()      # the reference sweep and the watchdog
munged_pid=""
slurm_pid=""   # the launcher of slurmctld and slurmd (below)
in_ns=0
cleanup() {
  local rc=$?
  set +e
  trap - INT TERM
  for p in "${others[@]}"; do kill "$p" 2>/dev/null; done
  if [ -n "$slurm_pid" ]; then
    # Jobs first: slurmstepd outlives slurmd, so stop them while slurmd still tracks them.
    scancel --full --quiet --user=root 2>/dev/null
    for _ in $(seq 40); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.25; done
  fi
  # The launcher's end ends slurmctld and slurmd (their pdeathsig, or the PID namespace). Outside a namespace their
  # pid files name them, to wait for; inside one those numbers mean other processes out here.
  local daemons=()
  if [ "$in_ns" = 0 ]; then
    for f in "$WORK/run/slurmd.pid" "$WORK/run/slurmctld.pid"; do [ -f "$f" ] && daemons+=("$(cat "$f")"); done
  fi
  if [ -n "$slurm_pid" ]; then
    # unshare ignores TERM while its child runs; its KILL takes the whole namespace down.
    if [ "$in_ns" = 1 ]; then kill -9 "$slurm_pid"; else kill "$slurm_pid"; fi 2>/dev/null
    wait "$slurm_pid" 2>/dev/null
  fi
  for p in "${daemons[@]}" $munged_pid; do
    kill "$p" 2>/dev/null
    for _ in $(seq 40); do kill -0 "$p" 2>/dev/null || break; sleep 0.25; done
    kill -0 "$p" 2>/dev/null && kill -9 "$p"
  done
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
    for f in "$WORK"/log/*.log "$WORK"/run/slurm-*.out; do
      [ -f "$f" ] && { echo "--- tail of $f"; tail -n 25 "$f"; }
    done
  fi
  if [ "${REPLAYSSM_SLURM_KEEP:-0}" = "1" ]; then echo "slurm test: kept $WORK"; else rm -rf "$WORK"; fi
  echo "slurm test: $((SECONDS - T0)) s"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 143' INT TERM
# Our own deadline, under CTest's TIMEOUT: CTest's kill cannot be trapped, ours can (for a kill outright, the
# daemons get a parent-death signal, and Slurm's run in a PID namespace that dies with them where the host allows).
limit=${REPLAYSSM_SLURM_LIMIT_S:-240}
main_pid=$$
(
  for ((w = 0; w < limit * 4; w++)); do sleep 0.25; kill -0 "$main_pid" 2>/dev/null || exit 0; done
  echo "FAIL: over the test's ${limit} s limit, stopping" >&2
  kill -TERM "$main_pid"
) &
others+=($!)

# The unsharded reference, in the background while the daemons start.
cat > "$WORK/tiny.ini" <<'EOF'
tokens = 64
formats = fp32,bf16,fp8_e4m3:row,nvfp4
policies = conventional-shared,replay-split
L = 16
EOF
setpriv --pdeathsig KILL "$CLI" sweep --config "$WORK/tiny.ini" --offset 1000 --backend emulated --jobs 1 --quiet \
  --out "$WORK/ref.h5" >"$WORK/ref.log" 2>&1 &
ref_pid=$!
others+=("$ref_pid")

# munge: its own key, socket and files.
mkdir -p "$WORK/munge" "$WORK/key" "$WORK/state" "$WORK/spool" "$WORK/log" "$WORK/run"
chmod 700 "$WORK/key"
dd if=/dev/urandom of="$WORK/key/munge.key" bs=1024 count=1 status=none
chmod 400 "$WORK/key/munge.key"
setpriv --pdeathsig TERM munged --foreground --force --key-file="$WORK/key/munge.key" \
  --socket="$WORK/munge/munge.sock" --pid-file="$WORK/munge/munged.pid" --log-file="$WORK/log/munged.log" \
  --seed-file="$WORK/munge/munged.seed" 2>>"$WORK/log/munged.out" &
munged_pid=$!
for _ in $(seq 40); do [ -S "$WORK/munge/munge.sock" ] && break; sleep 0.25; done
munge -S "$WORK/munge/munge.sock" -n </dev/null | unmunge -S "$WORK/munge/munge.sock" >/dev/null 2>&1 ||
  skip "munged did not start ($(tail -n 1 "$WORK/log/munged.log" 2>/dev/null))"

# Two free TCP ports on the loopback, for slurmctld and slurmd.
read -r ctld_port slurmd_port < <("$PY" -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
host=$(hostname -s)
# One node of 8 "CPUs" and 64 GB (config_overrides: more than the host has, so that the header's 8-CPU, 32G request
# fits) with one pretend GPU (a gres on /dev/null), so that sbatch checks the file's GPU lines as a GPU cluster would.
cat > "$WORK/slurm.conf" <<EOF
ClusterName=replayssmtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$WORK/munge/munge.sock
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool
SlurmctldPidFile=$WORK/run/slurmctld.pid
SlurmdPidFile=$WORK/run/slurmd.pid
SlurmctldLogFile=$WORK/log/slurmctld.log
SlurmdLogFile=$WORK/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=1
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
KillWait=2
MinJobAge=3600
GresTypes=gpu
NodeName=$host NodeAddr=127.0.0.1 CPUs=8 RealMemory=65536 Gres=gpu:1 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
echo "NodeName=$host Name=gpu File=/dev/null" > "$WORK/gres.conf"
export SLURM_CONF=$WORK/slurm.conf
# The caller's sbatch settings must not reach this private cluster.
while read -r v; do unset "$v"; done < <(env | sed -n 's/^\(S[A-Z]*_[A-Za-z_]*\)=.*/\1/p' |
                                          grep -E '^(SBATCH|SLURM)_' | grep -vx SLURM_CONF)
# slurmctld and slurmd under one launcher, each dying with it. In a PID namespace of their own (where the host
# allows unshare) slurmd's job processes die with it too, even if this shell is killed outright: slurmstepd
# outlives slurmd otherwise.
cat > "$WORK/slurm_daemons.sh" <<'EOF'
#!/usr/bin/env bash
set -uo pipefail
setpriv --pdeathsig TERM slurmctld -D -i -f "$SLURM_CONF" >"$1/log/slurmctld.out" 2>&1 &
setpriv --pdeathsig TERM slurmd -D -f "$SLURM_CONF" -N "$2" >"$1/log/slurmd.out" 2>&1 &
wait
EOF
ns=()
if [ "${REPLAYSSM_SLURM_NS:-1}" = 1 ] && unshare --pid --fork --kill-child --mount-proc true 2>/dev/null; then
  ns=(unshare --pid --fork --kill-child --mount-proc)
  in_ns=1
fi
setpriv --pdeathsig KILL "${ns[@]}" bash "$WORK/slurm_daemons.sh" "$WORK" "$host" &
slurm_pid=$!
state=""
for _ in $(seq 120); do
  state=$(sinfo -h -N -o %t 2>/dev/null || true)
  [ "$state" = idle ] && break
  sleep 0.25
done
[ "$state" = idle ] || skip "slurmctld + slurmd did not bring the node up (state '${state:-none}'): $(grep -h error \
  "$WORK"/log/slurmctld.log "$WORK"/log/slurmd.log 2>/dev/null | tail -n 2 | tr '\n' ' ')"
where=$( ((in_ns)) && echo "in a PID namespace of its own" || echo "without a PID namespace")
echo "slurm test: one-node Slurm up on $host, ports $ctld_port and $slurmd_port, $where, after $((SECONDS - T0)) s"

# Waits until the jobs given have left the queue (or the deadline in seconds passes; then fails).
wait_jobs() {
  local deadline=$((SECONDS + $1)) left
  shift
  while :; do
    left=$(squeue -h -o %i -j "$(IFS=,; echo "$*")" 2>/dev/null || true)
    [ -z "$left" ] && return 0
    ((SECONDS < deadline)) ||
      fail "jobs still queued after the deadline: $(squeue -h -o '%i %T %r' -j "$(IFS=,; echo "$*")" | tr '\n' ';')"
    sleep 0.5
  done
}
job_state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -n 1; }
job_field() { scontrol show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1; }
log_tail() { echo "$1: $(tail -n 3 "$1" 2>/dev/null | tr '\n' ' ')"; }

cd "$WORK/run"  # jobs start (and write slurm-*.out) in the submission folder

# 1. The file as written: one GPU per task needs --ntasks, which sbatch checks at submission.
out=$(sbatch --test-only "$SCRIPT" 2>&1) || fail "sbatch --test-only rejects the file as written: $out"
pass "the file as written is accepted (sbatch --test-only: $(echo "$out" | tail -n 1))"

# 2. The array, CPU partition recipe. REPLAYSSM points at a wrapper that, once each (the mark files), holds shard 0
# (for the test to requeue, as a preemption would) and kills shard 1's sweep after its first finished run; otherwise
# it runs the CLI as is, so requeued and recovered shards run the real thing.
cat > "$WORK/replayssm" <<EOF
#!/usr/bin/env bash
set -euo pipefail
if [[ " \$* " == *" --shard 0/3 "* ]] && [ ! -e "$WORK/held-once" ]; then
  touch "$WORK/held-once"
  exec sleep 60
fi
if [[ " \$* " == *" --shard 1/3 "* ]] && [ ! -e "$WORK/killed-once" ]; then
  touch "$WORK/killed-once"
  "$CLI" "\$@" &
  pid=\$!
  until compgen -G "$WORK/out/results.1.h5.runs/*.h5" >/dev/null || ! kill -0 \$pid 2>/dev/null; do sleep 0.05; done
  kill -9 \$pid 2>/dev/null || true
  wait \$pid || true
  echo "test wrapper: killed the sweep of shard 1 (kill -9) after its first finished run" >&2
  exit 137
fi
exec "$CLI" "\$@"
EOF
chmod +x "$WORK/replayssm"
export CONFIG=$WORK/tiny.ini OUTDIR=$WORK/out REPLAYSSM=$WORK/replayssm BACKEND=emulated SWEEP_ARGS="--offset 1000"
export MERGE_SBATCH_ARGS="--ntasks=1 --cpus-per-task=1 --mem=256M --time=00:05:00"
cpu_opts=(--gpus-per-task=0 --cpus-per-task=1 --mem=512M --time=00:05:00)
array=$(sbatch --parsable --array=0-2 "${cpu_opts[@]}" "$SCRIPT") || fail "sbatch of the array"
array=${array%%;*}
merge=""
for _ in $(seq 120); do
  merge=$(squeue -h -o '%i %j' | awk '$2 == "replayssm-merge" {print $1}' | head -n 1)
  [ -n "$merge" ] && break
  [ -n "$(squeue -h -j "$array" -o %i 2>/dev/null)" ] || break
  sleep 0.25
done
[ -n "$merge" ] || fail "the first task did not submit the merge job ($(log_tail "slurm-${array}_0.out"))"
pass "array $array submitted merge job $merge (dependency $(job_field "$merge" Dependency))"
p=$(job_field "$merge" Partition)
[ "$p" = debug ] || fail "merge job partition '$p', not the array's"
# Requeue shard 0, the task that submitted the merge, as a preemption would. Slurm holds a requeued job for a
# while (its begin time); the test brings that forward, but not into the second of the requeue: slurmd refuses a
# job credential as revoked if it is not newer, by the second, than the revocation.
for _ in $(seq 120); do [ -e "$WORK/held-once" ] && break; sleep 0.25; done
[ -e "$WORK/held-once" ] || fail "shard 0 did not start"
scontrol requeue "${array}_0" || fail "scontrol requeue ${array}_0"
for _ in $(seq 60); do
  [ "$(job_state "${array}_0")" = PENDING ] && scontrol update jobid="${array}_0" StartTime=now+2 2>/dev/null && break
  sleep 0.25
done
wait_jobs 120 "$array" "$merge"
for i in 0 2; do
  s=$(job_state "${array}_$i")
  [ "$s" = COMPLETED ] || fail "shard $i ended $s"
done
log0=slurm-${array}_0.out
[ "$(grep -c "=== sweep_array: shard 0/3" "$log0")" = 2 ] && grep -q "restart 1" "$log0" ||
  fail "the requeued shard 0 did not keep the log of both attempts: $(grep "===" "$log0" | tr '\n' ';')"
[ "$(grep -c "merge job" "$log0")" = 1 ] || fail "the requeued shard 0 submitted the merge again"
pass "requeued shard 0 completed; its log holds both attempts, and it did not submit a second merge"
s=$(job_state "${array}_1")
[ "$s" = FAILED ] || fail "the killed shard 1 ended ${s:-?}, not FAILED"
s=$(job_state "$merge")
[ "$s" = CANCELLED ] || fail "the merge ended ${s:-?} after a failed shard (expected CANCELLED: --kill-on-invalid-dep)"
pass "shard 1 killed: its task FAILED, the merge job was CANCELLED rather than left pending"
[ ! -e "$OUTDIR/results.1.h5" ] && compgen -G "$OUTDIR/results.1.h5.runs/*.h5" >/dev/null ||
  fail "shard 1 should have left finished runs and no results file"
grep -q "sweep_array: recover with:" "slurm-${array}_1.out" || fail "the log of shard 1 gives no recovery command"
[ -f "$OUTDIR/sweep_array.env" ] || fail "no $OUTDIR/sweep_array.env"

# 3. Recovery exactly as documented, from a clean environment: only the env file carries the settings.
unset CONFIG OUTDIR REPLAYSSM BACKEND SWEEP_ARGS MERGE_SBATCH_ARGS N
recovery=$(set -a && . "$WORK/out/sweep_array.env" && set +a &&
           sbatch --parsable --array=1 "${cpu_opts[@]}" "$SCRIPT") || fail "sbatch of the recovery"
recovery=${recovery%%;*}
for _ in $(seq 120); do
  merge2=$(squeue -h -o '%i %j' | awk -v old="$merge" '$2 == "replayssm-merge" && $1 != old {print $1}' | head -n 1)
  [ -n "$merge2" ] && break
  [ -n "$(squeue -h -j "$recovery" -o %i 2>/dev/null)" ] || break
  sleep 0.25
done
[ -n "${merge2:-}" ] || fail "the recovery did not submit a merge ($(log_tail "slurm-${recovery}_1.out"))"
wait_jobs 120 "$recovery" "$merge2"
[ "$(job_state "${recovery}_1")" = COMPLETED ] || fail "recovered shard 1 ended $(job_state "${recovery}_1")"
[ "$(job_state "$merge2")" = COMPLETED ] ||
  fail "the recovery's merge ended $(job_state "$merge2") ($(log_tail "slurm-$merge2-merge.out"))"
grep -q "resuming, [1-9]" "slurm-${recovery}_1.out" || fail "the recovered shard 1 did not resume its finished runs"
pass "recovery (sweep_array.env + sbatch --array=1) resumed shard 1, merge job $merge2 completed"
compgen -G "$WORK/out/reference/reference-*.h5" >/dev/null || fail "the shards wrote no reference cache in OUTDIR/reference"
grep -q "reference: reused" "slurm-${recovery}_1.out" ||
  fail "the recovered shard 1 did not reuse the shared FP64 reference ($(log_tail "slurm-${recovery}_1.out"))"
pass "the shards share the FP64 reference through OUTDIR/reference; the recovered shard reused it"

# 4. Merged == unsharded, bit for bit.
wait "$ref_pid" || fail "the unsharded reference sweep failed: $(tail -n 3 "$WORK/ref.log")"
"$PY" - "$WORK/ref.h5" "$WORK/out/results.h5" <<'EOF' || fail "the merged file differs from the unsharded run"
import sys
import h5py
import numpy as np


def load(path):
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda n, o: out.__setitem__(n, o[...]) if isinstance(o, h5py.Dataset) else None)
        out.update({"config@" + k: v for k, v in f["config"].attrs.items()})
        runs = list(f["runs"])
    return out, runs


a, runs = load(sys.argv[1])
b, _ = load(sys.argv[2])
bad = sorted(set(a) ^ set(b))
for k in sorted(set(a) & set(b)):
    x, y = np.asarray(a[k]), np.asarray(b[k])
    if x.dtype != y.dtype or x.shape != y.shape:
        bad.append(k)
    elif x.dtype.kind == "O":  # variable-length strings: compare the values, not the object pointers
        if x.tolist() != y.tolist():
            bad.append(k)
    elif x.tobytes() != y.tobytes():  # numbers bit for bit (NaN included)
        bad.append(k)
if bad:
    sys.exit("differs: " + ", ".join(bad[:5]))
print(f"{len(a)} datasets and config attributes of {len(runs)} runs identical")
EOF
pass "merged results.h5 equals the unsharded sweep bit for bit"

# 5. A partial array without N (nor an env file) fails with a message naming N rather than sweeping 1 shard.
bad=$(CONFIG=$WORK/tiny.ini OUTDIR=$WORK/other REPLAYSSM=$CLI BACKEND=emulated \
      sbatch --parsable --array=1 "${cpu_opts[@]}" "$SCRIPT")
bad=${bad%%;*}
wait_jobs 60 "$bad"
[ "$(job_state "${bad}_1")" = FAILED ] && grep -q "N is not set" "slurm-${bad}_1.out" ||
  fail "--array=1 without N: $(job_state "${bad}_1"), $(cat "slurm-${bad}_1.out" 2>/dev/null)"
[ ! -e "$WORK/other/results.1.h5" ] || fail "--array=1 without N swept"
pass "--array=1 without N is refused: $(grep -o 'N is not set.\{0,60\}' "slurm-${bad}_1.out" | head -n 1)..."
echo "slurm test: all passed in $((SECONDS - T0)) s"
