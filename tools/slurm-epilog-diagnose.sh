#!/usr/bin/env bash
# Example Slurm epilog: when a job ends unsuccessfully, run `diagnose` on it and append the sweep
# decision to a sweep history file (JSON lines), so an unattended sweep driver can read
# decision.action / decision.exclude from the history instead of parsing logs.
#
# Install as EpilogSlurmctld (runs once per job on the controller; has SLURM_JOB_EXIT_CODE2) or as
# the node Epilog (runs on every node; only the job's first node acts, see below). Configure with
# environment variables in slurm.conf's wrapper or edit the defaults here:
#   DIAGNOSE_BIN            path to the diagnose binary          (default: diagnose in PATH)
#   DIAGNOSE_OUTPUTS        the sweep's outputs directory         (required: where <jobid>-*.log live)
#   DIAGNOSE_SWEEP_HISTORY  history file to append decisions to   (default: $DIAGNOSE_OUTPUTS/../sweep-history.jsonl)
#   DIAGNOSE_REPORT_DIR     where to keep each job's JSON report  (default: none)
#   DIAGNOSE_TIMEOUT        seconds before giving up              (default: 600)
#   DIAGNOSE_LOGS_ONLY      1 = skip the TSDB (fast path)         (default: 0)
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

# "exit:signal" (EpilogSlurmctld) or a raw wait status; 0:0 is success: nothing to diagnose.
exit_spec="${SLURM_JOB_EXIT_CODE2:-${SLURM_JOB_EXIT_CODE:-}}"
if [[ "$exit_spec" == "0:0" || "$exit_spec" == "0" ]]; then
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
timeout_s="${DIAGNOSE_TIMEOUT:-600}"
[[ "$timeout_s" =~ ^[0-9]+$ ]] || timeout_s=600

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
# ones before it (retry counts, exclusion budget).
lock="${history}.lock"
run=(timeout --kill-after=30 "$timeout_s" "$bin" "${args[@]}")
if command -v flock >/dev/null 2>&1; then
  run=(flock --timeout "$timeout_s" "$lock" "${run[@]}")
fi

if "${run[@]}" >"$report_file" 2>"$err_file"; then
  log "diagnosed (exit spec ${exit_spec:-unknown}); decision appended to ${history}"
else
  rc=$?
  log "diagnose failed with status ${rc}; see ${err_file}"
fi
exit 0
