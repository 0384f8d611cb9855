#!/usr/bin/env bash
# A throwaway single-node Slurm cluster for perfgate's tests: munged,
# slurmctld and slurmd without systemd, state in a temporary folder, one node
# declaring 8 CPUs and 8 fake gpu and 8 fake npu devices (symlinks to
# /dev/null: Slurm wants a character device behind each). No slurmdbd, so no
# sacct, as on many clusters. Used by ctest (a fixture around the tests that
# need it) and by anyone trying `--executor slurm` by hand.
#
#   scripts/services/slurm.sh start   # prints the SLURM_CONF path on stdout
#   scripts/services/slurm.sh conf    # the SLURM_CONF of the running cluster
#   scripts/services/slurm.sh stop    # cancels every job, stops the daemons, removes the folder
#
# Env: PERFGATE_SLURM_DIR (default ${TMPDIR:-/tmp}/perfgate-slurm-$UID),
#      PERFGATE_SLURM_PORT (16817; slurmd takes the next one).
# Facts this rests on (learned making it work): munged wants its socket
# folder 0755 and its key folder 0700; gres/gpu drops file-less GPUs and the
# node drains; a generic npu resource exports no variable (its indexes show in
# `scontrol -d show job`); without slurmdbd, AccountingStorageTRES is fatal.
set -euo pipefail
dir=${PERFGATE_SLURM_DIR:-${TMPDIR:-/tmp}/perfgate-slurm-$(id -u)}
port=${PERFGATE_SLURM_PORT:-16817}
node=$(hostname -s)
conf=$dir/etc/slurm.conf
export SLURM_CONF=$conf
for b in /usr/sbin/munged /usr/sbin/slurmctld /usr/sbin/slurmd /usr/bin/sbatch; do
  [[ -x $b ]] || { echo "slurm.sh: $b not found (install slurmctld slurmd slurm-client munge; scripts/setup.sh does)" >&2; exit 2; }
done
alive() { [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop() {
  if alive "$dir/slurmctld.pid"; then  # no slurmstepd may outlive slurmd
    timeout 10 scancel --quiet --user="$(id -un)" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do [[ -z $(timeout 5 squeue -h 2>/dev/null) ]] && break; sleep 0.2; done
  fi
  local pids=()
  for p in slurmd slurmctld munge-run/munged; do
    if alive "$dir/$p.pid"; then pids+=("$(cat "$dir/$p.pid")"); kill "${pids[-1]}" 2>/dev/null || true; fi
  done
  for pid in "${pids[@]}"; do
    for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  rm -rf "$dir"
}

case ${1:-} in
  start)
    if alive "$dir/slurmctld.pid" && alive "$dir/slurmd.pid" && timeout 5 sinfo -h >/dev/null 2>&1; then
      echo "$conf"; exit 0
    fi
    stop
    mkdir -p "$dir"/{etc,state,log,dev,munge,munge-run} "$dir/spool"
    chmod 700 "$dir/munge"; chmod 755 "$dir/munge-run"
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$dir/munge/munge.key"
    /usr/sbin/munged --socket="$dir/munge-run/munge.socket.2" --key-file="$dir/munge/munge.key" \
      --pid-file="$dir/munge-run/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed"
    for ((i = 0; i < 8; i++)); do ln -sf /dev/null "$dir/dev/gpu$i"; ln -sf /dev/null "$dir/dev/davinci$i"; done
    cat >"$conf" <<EOF
ClusterName=perfgate-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=$(id -un)
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge-run/munge.socket.2
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
SlurmdParameters=config_overrides
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=30
GresTypes=gpu,npu
NodeName=$node NodeAddr=127.0.0.1 CPUs=8 RealMemory=8000 Gres=gpu:8,npu:8 State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
    cat >"$dir/etc/gres.conf" <<EOF
NodeName=$node Name=gpu File=$dir/dev/gpu[0-7]
NodeName=$node Name=npu File=$dir/dev/davinci[0-7]
EOF
    setsid /usr/sbin/slurmctld -D -c -f "$conf" >"$dir/log/slurmctld.out" 2>&1 </dev/null &
    setsid /usr/sbin/slurmd -D -c -f "$conf" >"$dir/log/slurmd.out" 2>&1 </dev/null &
    st=
    for ((i = 0; i < 300; i++)); do
      st=$(sinfo -h -N -n "$node" -o %t 2>/dev/null || true)
      [[ $st == idle ]] && break
      sleep 0.1
    done
    if [[ $st != idle ]]; then
      echo "slurm.sh: node $node is '$st' after 30 s" >&2
      for f in slurmctld.log slurmd.log slurmd.out slurmctld.out; do echo "--- $f" >&2; tail -n 15 "$dir/log/$f" >&2 2>/dev/null || true; done
      scontrol show node "$node" >&2 2>/dev/null || true
      exit 1
    fi
    echo "$conf"
    ;;
  conf) echo "$conf" ;;
  stop) stop ;;
  *) echo "usage: $0 start|conf|stop" >&2; exit 2 ;;
esac
