# shellcheck shell=bash
# A private single-machine Slurm cluster for tests (sourced, not run): munged, slurmctld and one
# slurmd per node, all on free ports, configured and kept in one temp dir that slurm_cluster_stop
# removes. Every daemon is started by pid file and stopped by that pid only, never by name.
#
#   slurm_cluster_missing                 -> prints why a cluster cannot run here (empty: it can)
#   slurm_cluster_start DIR NODES EXTRA   -> NODES slurmd nodes named slurmtest[1-NODES]; EXTRA is
#                                            appended to slurm.conf (FUTURE nodes, EpilogSlurmctld)
#   slurm_cluster_stop                    -> stops what started, removes DIR (safe to call twice)
#
# Slurm 22.05 on Debian is built with multiple-slurmd support: several NodeName entries share
# NodeHostname=localhost on distinct ports. No cgroups: proctrack/linuxproc, task/none.

SLURM_CLUSTER_DIR=""
SLURM_CLUSTER_PIDFILES=()
SLURM_CLUSTER_WATCHDOG=""

slurm_cluster_missing() {
  if [[ $(id -u) -ne 0 ]]; then
    echo "not root: slurmctld, slurmd and munged run as root here"
    return
  fi
  local tool
  for tool in munged slurmctld slurmd sbatch scontrol squeue sinfo python3 jq flock; do
    if ! command -v "$tool" >/dev/null 2>&1; then
      echo "$tool not installed (scripts/install-deps.sh installs munge, slurmctld, slurmd, slurm-client, jq)"
      return
    fi
  done
}

# Free TCP ports on 127.0.0.1, as many as asked, held open together while chosen so they differ.
slurm_cluster_free_ports() {
  python3 - "$1" <<'EOF'
import socket, sys
held = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    held.append(s)
print(" ".join(str(s.getsockname()[1]) for s in held))
EOF
}

slurm_cluster_stop() {
  local pidfile pid i n
  # slurmd first, munged last: each stops cleanly while what it talks to is still there.
  for (( n = ${#SLURM_CLUSTER_PIDFILES[@]} - 1; n >= 0; n-- )); do
    pidfile=${SLURM_CLUSTER_PIDFILES[$n]}
    [[ -s "$pidfile" ]] || continue
    pid=$(<"$pidfile")
    [[ "$pid" =~ ^[0-9]+$ ]] || continue
    kill -TERM "$pid" 2>/dev/null || continue
    for i in $(seq 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
  done
  SLURM_CLUSTER_PIDFILES=()
  if [[ -n "${SLURM_CLUSTER_WATCHDOG:-}" ]]; then
    kill "$SLURM_CLUSTER_WATCHDOG" 2>/dev/null || true
    SLURM_CLUSTER_WATCHDOG=""
  fi
  if [[ -n "$SLURM_CLUSTER_DIR" && -d "$SLURM_CLUSTER_DIR" ]]; then
    rm -rf -- "$SLURM_CLUSTER_DIR"
  fi
  SLURM_CLUSTER_DIR=""
}

# Waits for a daemon's pid file (they daemonise) and records it for slurm_cluster_stop.
slurm_cluster_track() {
  local pidfile=$1 what=$2 i
  for i in $(seq 100); do
    [[ -s "$pidfile" ]] && break
    sleep 0.1
  done
  if [[ ! -s "$pidfile" ]]; then
    echo "slurm cluster: $what wrote no pid file $pidfile" >&2
    return 1
  fi
  SLURM_CLUSTER_PIDFILES+=("$pidfile")
}

slurm_cluster_start() {
  local dir=$1 nodes=$2 extra=${3:-}
  SLURM_CLUSTER_DIR=$dir
  mkdir -p "$dir/munge" "$dir/state" "$dir/log"
  chmod 700 "$dir/munge"
  head -c 1024 /dev/urandom > "$dir/munge/munge.key"
  chmod 400 "$dir/munge/munge.key"
  munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.sock" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed" ||
    { echo "slurm cluster: munged did not start" >&2; return 1; }
  slurm_cluster_track "$dir/munge/munged.pid" munged || return 1

  local ports
  read -r -a ports <<<"$(slurm_cluster_free_ports $((nodes + 2)))"
  {
    echo "ClusterName=diagnosetest"
    echo "SlurmctldHost=localhost"
    echo "SlurmctldPort=${ports[0]}"
    echo "SlurmdPort=${ports[1]}"   # the default; each node below has its own Port
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "AuthInfo=socket=$dir/munge/munge.sock"
    echo "CredType=cred/munge"
    echo "StateSaveLocation=$dir/state"
    echo "SlurmdSpoolDir=$dir/spool/%n"
    echo "SlurmctldPidFile=$dir/slurmctld.pid"
    echo "SlurmdPidFile=$dir/slurmd-%n.pid"
    echo "SlurmctldLogFile=$dir/log/slurmctld.log"
    echo "SlurmdLogFile=$dir/log/slurmd-%n.log"
    echo "SlurmctldDebug=debug"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "JobCompType=jobcomp/none"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_CPU"
    echo "SchedulerType=sched/builtin"
    echo "ReturnToService=2"
    echo "MpiDefault=none"
    echo "SwitchType=switch/none"
    echo "MinJobAge=600"
    local n
    for n in $(seq "$nodes"); do
      echo "NodeName=slurmtest$n NodeHostname=localhost NodeAddr=127.0.0.1 Port=${ports[$((n + 1))]} CPUs=2 State=UNKNOWN"
      mkdir -p "$dir/spool/slurmtest$n"
    done
    echo "PartitionName=test Nodes=slurmtest[1-$nodes] Default=YES MaxTime=INFINITE State=UP"
    printf '%s\n' "$extra"
  } > "$dir/slurm.conf"
  export SLURM_CONF="$dir/slurm.conf"

  slurmctld -i -f "$SLURM_CONF" || { echo "slurm cluster: slurmctld did not start" >&2; return 1; }
  slurm_cluster_track "$dir/slurmctld.pid" slurmctld || return 1
  for n in $(seq "$nodes"); do
    slurmd -N "slurmtest$n" -f "$SLURM_CONF" || { echo "slurm cluster: slurmd slurmtest$n did not start" >&2; return 1; }
    slurm_cluster_track "$dir/slurmd-slurmtest$n.pid" "slurmd slurmtest$n" || return 1
  done

  # The daemons outlive a test killed with SIGKILL (ctest's timeout): a watchdog in its own session
  # stops them by pid file once the test's shell is gone.
  local owner=$$
  setsid bash -c '
    owner=$1; dir=$2; shift 2
    while kill -0 "$owner" 2>/dev/null; do sleep 2; done
    for (( n = $#; n >= 1; n-- )); do
      pid=$(cat "${!n}" 2>/dev/null) && [[ "$pid" =~ ^[0-9]+$ ]] && kill -KILL "$pid" 2>/dev/null
    done
    rm -rf -- "$dir"' slurm-cluster-watchdog "$owner" "$dir" "${SLURM_CLUSTER_PIDFILES[@]}" </dev/null >/dev/null 2>&1 &
  SLURM_CLUSTER_WATCHDOG=$!

  # Ready when every node is idle.
  local i idle
  for i in $(seq 120); do
    idle=$(sinfo -h -p test -t idle -o '%D' 2>/dev/null | head -n 1)
    [[ "$idle" == "$nodes" ]] && return 0
    sleep 0.5
  done
  echo "slurm cluster: $nodes nodes not idle after 60 s:" >&2
  sinfo >&2 || true
  tail -n 20 "$dir/log/slurmctld.log" >&2 || true
  return 1
}
