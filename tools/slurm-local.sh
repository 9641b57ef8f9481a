#!/bin/sh
# slurm-local.sh - a private Slurm cluster on this machine, for tests.
#
#   tools/slurm-local.sh start DIR [NODES [CPUS]]
#   tools/slurm-local.sh stop DIR
#
# start brings up munged, slurmctld and one slurmd per node (default 2
# nodes of 4 CPUs, all on this host, each slurmd on its own port) with
# every file - configuration, munge key and socket, spool, state, logs,
# pid files - under DIR, and prints `export SLURM_CONF=DIR/slurm.conf`
# once every node is idle.  Nothing outside DIR is written or read but the
# installed programs: PlugStackConfig and AuthInfo keep Slurm away from
# /etc/slurm and /run/munge.  stop cancels every job, stops the daemons
# and kills whatever a job left behind (by SLURM_CONF in its environment:
# processes that daemonise escape proctrack/linuxproc); DIR stays, with the
# logs, for the caller to read or delete.
#
# Every directory above DIR must be searchable by all (munged refuses a
# socket that others cannot reach).  Needs root (slurmd starts the jobs' processes; the tests run as root) and
# Debian 12's packages slurmctld slurmd slurm-client munge
# (tools/bootstrap.sh).  When a daemon does not come up, start prints the
# daemons' logs on stderr, stops what did start and exits 1
# (docs/batch.md says what it was run with).
#
# Choices forced by a VM without usable cgroups: ProctrackType=
# proctrack/linuxproc, TaskPlugin=task/none; the node's CPUs are declared
# (config_overrides), not counted.  batch_sched_delay=0 and
# sched_min_interval=0 start a job as soon as it is submitted.
set -eu

usage() {
    echo "usage: $0 start DIR [NODES [CPUS]] | stop DIR" >&2
    exit 2
}

[ $# -ge 2 ] || usage
cmd=$1
dir=$2
case $dir in /*) ;; *) dir=$(pwd)/$dir ;; esac
conf=$dir/slurm.conf

# logs: every daemon log on stderr (why a start failed).
logs() {
    for f in "$dir"/log/*.log; do
        [ -f "$f" ] || continue
        echo "---- $f" >&2
        tail -n 40 "$f" >&2
    done
}

# free_port: a TCP port nobody listens on now (the kernel's choice).
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# kill_pidfiles FILE...: SIGTERM the processes whose pids the FILEs hold,
# all at once (each daemon takes 1-2 s to end), wait up to 5 s for them to
# end, then SIGKILL those left.
kill_pidfiles() {
    pids=""
    for f in "$@"; do
        [ -f "$f" ] || continue
        pid=$(cat "$f" 2>/dev/null || true)
        rm -f "$f"
        case $pid in '' | *[!0-9]*) continue ;; esac
        kill -TERM "$pid" 2>/dev/null && pids="$pids $pid"
    done
    i=0
    while [ $i -lt 50 ]; do
        left=""
        for pid in $pids; do
            kill -0 "$pid" 2>/dev/null && left="$left $pid"
        done
        [ -n "$left" ] || return 0
        sleep 0.1
        i=$((i + 1))
    done
    kill -KILL $left 2>/dev/null || true
}

# conf_pids: the processes of a job (SLURM_CONF=$conf and a SLURM_JOB_ID in
# their environment: leftovers, slurmstepd, srun) and those whose command
# line names $dir (the daemons), but for this script and its ancestors.
conf_pids() {
    python3 - "$conf" "$dir/" "$$" <<'EOF'
import os, sys
conf = ("SLURM_CONF=" + sys.argv[1]).encode()
mine, pid = {str(os.getpid())}, sys.argv[3]  # this script and its callers
while pid not in mine and pid != "0":
    mine.add(pid)
    try:
        with open("/proc/%s/stat" % pid) as f:
            pid = f.read().rsplit(")", 1)[1].split()[1]
    except OSError:
        break
for pid in filter(str.isdigit, os.listdir("/proc")):
    if pid in mine:
        continue
    try:
        with open("/proc/%s/environ" % pid, "rb") as f:
            env = f.read().split(b"\0")
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            cmd = f.read()
    except OSError:
        continue
    job = any(e.startswith(b"SLURM_JOB_ID=") for e in env)
    if (conf in env and job) or sys.argv[2].encode() in cmd:
        print(pid)
EOF
}

stop() {
    [ -f "$conf" ] || { echo "$0: no $conf: nothing to stop" >&2; return 0; }
    export SLURM_CONF="$conf"
    if [ -f "$dir/run/slurmctld.pid" ]; then
        # Every job of the private cluster, whoever owns it.
        timeout 5 scancel --full --quiet --user="$(id -un)" 2>/dev/null || true
    fi
    kill_pidfiles "$dir"/run/slurmd.*.pid "$dir/run/slurmctld.pid" "$dir/run/munged.pid"
    # slurmstepd outlives slurmd; daemonised task processes escape it.
    pids=$(conf_pids)
    if [ -n "$pids" ]; then
        kill -KILL $pids 2>/dev/null || true
    fi
    rm -f "$dir/munge/munge.socket.2" "$dir/munge/munge.socket.2.lock"
}

write_conf() {
    nodes=$1
    cpus=$2
    host=$(hostname -s)
    user=$(id -un)
    : > "$dir/plugstack.conf"
    cat > "$conf" <<EOF
# Private single-host cluster of tools/slurm-local.sh: every path in $dir.
ClusterName=pmclocal
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket.2
PlugStackConfig=$dir/plugstack.conf
StateSaveLocation=$dir/spool/ctld
SlurmdSpoolDir=$dir/spool/d.%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
ReturnToService=2
KillWait=5
MinJobAge=300
InactiveLimit=0
Waittime=0
EOF
    i=1
    names=""
    while [ $i -le "$nodes" ]; do
        echo "NodeName=n$i NodeHostname=$host NodeAddr=127.0.0.1 Port=$(free_port) CPUs=$cpus State=UNKNOWN" >> "$conf"
        names="$names${names:+,}n$i"
        i=$((i + 1))
    done
    echo "PartitionName=local Nodes=$names Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO" >> "$conf"
    echo "$names"
}

# wait_idle NODES: until sinfo shows NODES nodes idle (20 s at most).
wait_idle() {
    i=0
    while [ $i -lt 200 ]; do
        n=$(sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l)
        [ "$n" -ge "$1" ] && return 0
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}

start() {
    nodes=${1:-2}
    cpus=${2:-4}
    if [ "$(id -u)" -ne 0 ]; then
        echo "$0: needs root (slurmd starts the jobs' processes)" >&2
        exit 1
    fi
    for p in munged mungekey slurmctld slurmd sbatch sinfo; do
        command -v "$p" > /dev/null 2>&1 || PATH=$PATH:/usr/sbin
        command -v "$p" > /dev/null 2>&1 || {
            echo "$0: $p not found: install slurmctld slurmd slurm-client munge (tools/bootstrap.sh)" >&2
            exit 1
        }
    done
    [ ! -f "$dir/run/slurmctld.pid" ] || { echo "$0: $dir: a cluster runs there already" >&2; exit 1; }
    mkdir -p "$dir/munge" "$dir/spool/ctld" "$dir/log" "$dir/run"
    chmod 0755 "$dir" "$dir/munge"
    chmod 0700 "$dir/spool/ctld"
    names=$(write_conf "$nodes" "$cpus")
    export SLURM_CONF="$conf"

    rm -f "$dir/munge/munge.key"
    mungekey --create --keyfile="$dir/munge/munge.key" 2>> "$dir/log/munged.log"
    chmod 0400 "$dir/munge/munge.key"
    if ! munged --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket.2" \
        --pid-file="$dir/run/munged.pid" --seed-file="$dir/munge/munge.seed" \
        --log-file="$dir/log/munged.log" 2>> "$dir/log/munged.log"; then
        echo "$0: munged did not start" >&2
        logs
        stop
        exit 1
    fi
    ok=1
    slurmctld -f "$conf" 2>> "$dir/log/slurmctld.log" || ok=0
    for n in $(echo "$names" | tr , ' '); do
        mkdir -p "$dir/spool/d.$n"
        slurmd -f "$conf" -N "$n" 2>> "$dir/log/slurmd.$n.log" || ok=0
    done
    if [ $ok -eq 0 ] || ! wait_idle "$nodes"; then
        echo "$0: the Slurm daemons did not bring $nodes nodes up in $dir:" >&2
        sinfo -N >&2 2>&1 || true
        logs
        stop
        exit 1
    fi
    echo "export SLURM_CONF=$conf"
}

case $cmd in
    start) shift 2; start "$@" ;;
    stop) stop ;;
    *) usage ;;
esac
