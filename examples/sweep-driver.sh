#!/usr/bin/env bash
# Example sweep driver: submits one job, waits for it to end and for the Slurm epilog
# (tools/slurm-epilog-diagnose.sh) to record diagnose's decision, then acts on the decision:
# resubmits on the same nodes, without the excluded hosts (`sbatch --exclude=` from
# decision.slurm_exclude), or with the decision's changes; stops on none / no-retry / stop-sweep.
# docs/sweep-integration.md describes it; tests/slurm/slurm_epilog_test.sh runs it on a real Slurm.
#
#   sweep-driver.sh --history FILE --reports DIR [--max-rounds N] [--decision-timeout S] [--poll S]
#                   -- SBATCH_OPTIONS... JOB_SCRIPT [JOB_ARGS...]
#
# FILE and DIR are the epilog's DIAGNOSE_SWEEP_HISTORY and DIAGNOSE_REPORT_DIR. A decision's
# changes (retry-with-changes) are appended to the job script's arguments as KEY=VALUE, the way
# maxtext-slurm passes passthrough args. Exclusions accumulate over the rounds. One line per round
# on stdout; exit 0 when the sweep ends on a decision, 1 on a usage or Slurm error, 2 when no
# decision arrived in time. Every command is run from an argument vector; nothing is eval'd.
set -euo pipefail

history="" reports="" max_rounds=3 decision_timeout=900 poll=2
while [[ $# -gt 0 ]]; do
  case "$1" in
    --history) history=$2; shift 2 ;;
    --reports) reports=$2; shift 2 ;;
    --max-rounds) max_rounds=$2; shift 2 ;;
    --decision-timeout) decision_timeout=$2; shift 2 ;;
    --poll) poll=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "sweep-driver: unknown option '$1'" >&2; exit 1 ;;
  esac
done
if [[ -z "$history" || -z "$reports" || $# -eq 0 ]]; then
  echo "usage: sweep-driver.sh --history FILE --reports DIR [--max-rounds N] -- SBATCH_OPTIONS... JOB_SCRIPT [ARGS...]" >&2
  exit 1
fi
for n in "$max_rounds" "$decision_timeout"; do
  [[ "$n" =~ ^[0-9]+$ ]] || { echo "sweep-driver: '$n' is not a whole number" >&2; exit 1; }
done
submit_args=("$@")

job_field() {   # job_field JOB FIELD: one field of `scontrol show job -o`, empty once Slurm forgot the job
  scontrol show job -o "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}

wait_for_end() {   # prints the job's final state and its nodelist
  local job=$1 state nodes=""
  while true; do
    state=$(job_field "$job" JobState)
    [[ -n "$state" ]] && nodes=$(job_field "$job" NodeList)
    case "$state" in
      ""|COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|PREEMPTED|BOOT_FAIL|DEADLINE)
        echo "${state:-GONE} ${nodes}"; return ;;
    esac
    sleep "$poll"
  done
}

# The epilog appends the job's history line after diagnose wrote its report: the line is the signal.
wait_for_decision() {
  local job=$1 waited=0
  while (( waited < decision_timeout )); do
    if [[ -f "$history" ]] && jq -e --arg job "$job" 'select(.job == $job)' "$history" >/dev/null 2>&1 &&
       [[ -s "$reports/$job.diagnose.json" ]]; then
      return 0
    fi
    sleep "$poll"
    waited=$((waited + poll))
  done
  return 1
}

excluded=""
extra_args=()
nodelist=""
for (( round = 1; round <= max_rounds; round++ )); do
  args=(--parsable)
  [[ -n "$excluded" ]] && args+=("--exclude=$excluded")
  [[ -n "$nodelist" ]] && args+=("--nodelist=$nodelist")
  if ! job=$(sbatch "${args[@]}" "${submit_args[@]}" "${extra_args[@]}"); then
    echo "sweep-driver: sbatch refused the submission" >&2
    exit 1
  fi
  job=${job%%;*}
  read -r state nodes <<<"$(wait_for_end "$job")"
  if ! wait_for_decision "$job"; then
    echo "round $round: job $job ended $state; no decision within ${decision_timeout} s"
    exit 2
  fi
  report="$reports/$job.diagnose.json"
  action=$(jq -r '.decision.action' "$report")
  line="round $round: job $job ended $state on ${nodes:-?}; decision $action"
  nodelist=""
  case "$action" in
    retry-excluding-nodes)
      IFS=, read -r -a hosts <<<"$(jq -r '.decision.slurm_exclude' "$report")"
      for host in "${hosts[@]}"; do
        [[ ",$excluded," == *",$host,"* ]] || excluded=${excluded:+$excluded,}$host
      done
      echo "$line; resubmitting with --exclude=$excluded" ;;
    retry-same-nodes)
      nodelist=$nodes
      echo "$line; resubmitting with --nodelist=$nodelist" ;;
    retry-with-changes)
      mapfile -t changes < <(jq -r '.decision.changes | to_entries[] | "\(.key)=\(.value)"' "$report")
      extra_args+=("${changes[@]}")
      echo "$line; resubmitting with ${changes[*]}" ;;
    *)
      echo "$line; the sweep stops here"
      exit 0 ;;
  esac
done
echo "sweep-driver: ${max_rounds} rounds done"
