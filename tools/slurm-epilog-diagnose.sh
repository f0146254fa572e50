#!/usr/bin/env bash
# Example Slurm epilog: when a job ends, run `diagnose` on it and record the sweep decision in a
# sweep history file (JSON lines, one line per job), so an unattended sweep driver can read
# decision.action / decision.exclude from the history instead of parsing logs. A job that exited
# 0:0 is diagnosed too: a run can complete and still have lost a quarter of its throughput to a bad
# link (8308), and diagnose answers `none` quickly for a healthy one.
#
# Install as EpilogSlurmctld (runs once per job on the controller; has SLURM_JOB_EXIT_CODE2) or as
# the node Epilog (runs on every node; only the job's first node acts, see below). Configure with
# environment variables in slurm.conf's wrapper or edit the defaults here:
#   DIAGNOSE_BIN            path to the diagnose binary          (default: diagnose in PATH)
#   DIAGNOSE_OUTPUTS        the sweep's outputs directory         (required: where <jobid>-*.log live)
#   DIAGNOSE_SWEEP_HISTORY  history file to append decisions to   (default: $DIAGNOSE_OUTPUTS/../sweep-history.jsonl)
#   DIAGNOSE_REPORT_DIR     where to keep each job's JSON report  (default: none)
#   DIAGNOSE_TIMEOUT        seconds the whole epilog may take: waiting for the history lock,
#                           diagnose and its one retry            (default: 600)
#   DIAGNOSE_RETRY_DELAY    seconds before the one retry of a run that could not read the
#                           metrics (diagnose exit 3)             (default: 15)
#   DIAGNOSE_SKIP_SUCCESS   1 = leave jobs that exited 0:0 alone  (default: 0)
#   DIAGNOSE_LOGS_ONLY      1 = skip the TSDB (fast path)         (default: 0)
#
# Who runs it: EpilogSlurmctld runs as SlurmUser on the controller, the node Epilog as root (or
# SlurmdUser). That user must be able to read DIAGNOSE_OUTPUTS (logs, job dirs, prometheus/), to
# write the history's directory (the history, its .lock, a temp file renamed over the history)
# and DIAGNOSE_REPORT_DIR, and to use a temp dir (the private Prometheus's copy). diagnose never
# writes into the job's directory. Run it as an unprivileged SlurmUser where you can.
#
# Never fails the epilog: Slurm drains a node whose epilog exits non-zero, and a diagnosis problem
# must not take nodes out of service. Everything is quoted; nothing is eval'd.
set -u

log() { logger -t slurm-epilog-diagnose -- "job ${SLURM_JOB_ID:-?}: $*" 2>/dev/null || printf '%s\n' "$*" >&2; }

job_id="${SLURM_JOB_ID:-}"
if [[ -z "$job_id" || ! "$job_id" =~ ^[0-9]+(_[0-9]+)?$ ]]; then
  log "no usable SLURM_JOB_ID; nothing to do"
  exit 0
fi

# Node Epilog runs on every node of the job: act only on the first one.
if [[ -n "${SLURM_JOB_NODELIST:-}" && -z "${SLURM_JOB_EXIT_CODE2:-}" ]] && command -v scontrol >/dev/null 2>&1; then
  first_node="$(scontrol show hostnames "$SLURM_JOB_NODELIST" 2>/dev/null | head -n 1)"
  if [[ -n "$first_node" && "$first_node" != "$(hostname -s)" && "$first_node" != "$(hostname)" ]]; then
    exit 0
  fi
fi

# "exit:signal" (EpilogSlurmctld) or a raw wait status; 0:0 is success, diagnosed unless asked not to.
exit_spec="${SLURM_JOB_EXIT_CODE2:-${SLURM_JOB_EXIT_CODE:-}}"
if [[ "${DIAGNOSE_SKIP_SUCCESS:-0}" == "1" && ( "$exit_spec" == "0:0" || "$exit_spec" == "0" ) ]]; then
  exit 0
fi

bin="${DIAGNOSE_BIN:-diagnose}"
if ! command -v "$bin" >/dev/null 2>&1; then
  log "diagnose binary '$bin' not found"
  exit 0
fi
outputs="${DIAGNOSE_OUTPUTS:-}"
if [[ -z "$outputs" || ! -d "$outputs" ]]; then
  log "DIAGNOSE_OUTPUTS '${outputs}' is not a directory"
  exit 0
fi
history="${DIAGNOSE_SWEEP_HISTORY:-$(dirname -- "$outputs")/sweep-history.jsonl}"
budget="${DIAGNOSE_TIMEOUT:-600}"
[[ "$budget" =~ ^[0-9]+$ ]] || budget=600
retry_delay="${DIAGNOSE_RETRY_DELAY:-15}"
[[ "$retry_delay" =~ ^[0-9]+$ ]] || retry_delay=15
started=$SECONDS
seconds_left() { echo $(( budget - (SECONDS - started) )); }

args=("$job_id" --outputs "$outputs" --history "$history" --format json)
if [[ "${DIAGNOSE_LOGS_ONLY:-0}" == "1" ]]; then
  args+=(--logs-only)
fi

report_file=/dev/null
err_file=/dev/null
if [[ -n "${DIAGNOSE_REPORT_DIR:-}" && -d "${DIAGNOSE_REPORT_DIR}" ]]; then
  report_file="${DIAGNOSE_REPORT_DIR}/${job_id}.diagnose.json"
  err_file="${DIAGNOSE_REPORT_DIR}/${job_id}.diagnose.err"
fi

# Concurrent epilogs of one sweep serialise on the history file's lock, so each decision sees the
# ones before it (retry counts, exclusion budget). The wait counts against the one budget: an
# epilog never holds Slurm for longer than DIAGNOSE_TIMEOUT, however long the queue.
lock="${history}.lock"
if command -v flock >/dev/null 2>&1; then
  if ! exec 9>>"$lock"; then
    log "cannot open the history lock ${lock}; not diagnosed"
    exit 0
  fi
  if ! flock --wait "$budget" 9; then
    log "the history lock ${lock} was not free within ${budget} s; not diagnosed"
    exit 0
  fi
fi

# diagnose exits 3 when it could not read the job's metrics (a dead server, an endpoint down): a
# fault of the tool, not of the job, so it is tried once more after a pause if time is left.
for attempt in 1 2; do
  left=$(seconds_left)
  if (( left < 10 )); then
    log "the ${budget} s budget ran out before diagnose could run (attempt ${attempt}); not diagnosed"
    break
  fi
  # diagnose stops itself at --deadline; timeout is the backstop, inside the same budget.
  if timeout --kill-after=5 "$(( left - 5 ))" "$bin" "${args[@]}" --deadline "$(( left - 10 > 0 ? left - 10 : 1 ))" \
       >"$report_file" 2>"$err_file"; then
    log "diagnosed (exit spec ${exit_spec:-unknown}, attempt ${attempt}); decision recorded in ${history}"
    break
  else
    rc=$?
  fi
  if (( rc == 3 && attempt == 1 && $(seconds_left) > retry_delay + 20 )); then
    log "diagnose could not read the metrics (status 3); trying once more in ${retry_delay} s"
    sleep "$retry_delay"
    continue
  fi
  log "diagnose failed with status ${rc} (attempt ${attempt}); see ${err_file}"
  break
done
exit 0
