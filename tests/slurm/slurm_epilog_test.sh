#!/usr/bin/env bash
# The auto-invoked path on a real Slurm (issue 37): a private cluster (tests/slurm/cluster.sh) with
# tools/slurm-epilog-diagnose.sh as EpilogSlurmctld. Batch jobs play recorded fixture failures:
# each copies a fixture's log and job dir into the sweep's outputs under its real SLURM_JOB_ID and
# exits non-zero. Checked:
#   1. the epilog runs diagnose and the decision lands in the history, with the action and
#      exclusions diagnose gives the same fixture on its own (computed here, never written down);
#   2. two jobs ending together: their epilogs' diagnose runs never overlap (the history lock) and
#      the history equals the one diagnose writes running the two one after the other;
#   3. the epilog never fails: a job with no log, and a diagnose binary that is missing, still end
#      with the epilog's exit status 0 in slurmctld's log and no node drained;
#   4. `sbatch --test-only --exclude=` accepts every fixture's decision.slurm_exclude (the fixtures'
#      hosts are FUTURE nodes of the cluster);
#   5. examples/sweep-driver.sh resubmits an excluding decision with --exclude= and Slurm records it.
# Exit 77 (skipped) where not root or Slurm/munge are not installed.
#
#   slurm_epilog_test.sh DIAGNOSE_BIN FIXTURE_OUTPUTS SOURCE_DIR
set -uo pipefail

diagnose_bin=$1
fixtures=$2
source_dir=$3
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/slurm/cluster.sh
source "$here/cluster.sh"

why=$(slurm_cluster_missing)
if [[ -n "$why" ]]; then
  echo "SKIP: real Slurm test not run: $why"
  exit 77
fi
for f in "$diagnose_bin" "$source_dir/tools/slurm-epilog-diagnose.sh" "$source_dir/examples/sweep-driver.sh"; do
  [[ -e "$f" ]] || { echo "FAIL: $f is missing"; exit 1; }
done

# Fixtures the jobs play; the expected answers come from diagnose itself.
single_fixture=9196          # one host with an RDMA fault: retry-excluding-nodes in a fresh sweep
# One excluded host each: after the first job's, the second of these spends the sweep's budget of
# two and the third goes over it, so the history depends on the order the lock gave them.
concurrent_fixtures=(9101 9102)

tmp=$(mktemp -d /tmp/diagnose-slurm-XXXXXX)
cleanup() { slurm_cluster_stop; rm -rf -- "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

fixture_log() { local logs=("$fixtures/$1"-*.log); [[ -f "${logs[0]}" ]] && echo "${logs[0]}"; }

# --- every fixture's host is a FUTURE node, so Slurm knows the names an exclusion can carry
printf 'ClusterName=names\nSlurmctldHost=localhost\n' > "$tmp/names.conf"
mapfile -t nodelists < <(sed -n 's/^JOB_NODELIST=//p' "$fixtures"/*.log | sort -u)
[[ ${#nodelists[@]} -gt 0 ]] || { echo "FAIL: no JOB_NODELIST in $fixtures/*.log"; exit 1; }
for nl in "${nodelists[@]}"; do SLURM_CONF="$tmp/names.conf" scontrol show hostnames "$nl"; done | sort -u > "$tmp/fixture-hosts"
future=""
while read -r host; do future+="NodeName=$host State=FUTURE"$'\n'; done < "$tmp/fixture-hosts"

# --- the epilog, wrapped: EpilogSlurmctld starts with an empty environment, so the settings the
# epilog reads are exported here, and diagnose is traced (start/end per run) to see the lock work.
outputs="$tmp/sweep/outputs"
history="$tmp/sweep/sweep-history.jsonl"
reports="$tmp/reports"
trace="$tmp/diagnose-runs"
mkdir -p "$outputs" "$reports" "$tmp/epilog-tmp" "$tmp/job-out"
cat > "$tmp/diagnose-traced" <<EOF
#!/bin/bash
echo "start \$1 \$(date +%s%N)" >> $(printf %q "$trace")
$(printf %q "$diagnose_bin") "\$@"
rc=\$?
echo "end \$1 \$(date +%s%N) \$rc" >> $(printf %q "$trace")
exit \$rc
EOF
cat > "$tmp/epilog-wrapper" <<EOF
#!/bin/bash
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export TMPDIR=$(printf %q "$tmp/epilog-tmp")
export DIAGNOSE_BIN=$(printf %q "$tmp/diagnose-traced")
[[ -f $(printf %q "$tmp/missing-binary") ]] && DIAGNOSE_BIN=$(printf %q "$tmp/no-such-diagnose")
export DIAGNOSE_OUTPUTS=$(printf %q "$outputs")
export DIAGNOSE_SWEEP_HISTORY=$(printf %q "$history")
export DIAGNOSE_REPORT_DIR=$(printf %q "$reports")
export DIAGNOSE_TIMEOUT=240
export DIAGNOSE_RETRY_DELAY=2
/bin/bash $(printf %q "$source_dir/tools/slurm-epilog-diagnose.sh")
rc=\$?
echo "\$SLURM_JOB_ID \$rc" >> $(printf %q "$tmp/epilog-status")
exit \$rc
EOF
# The played failure: the fixture's log and job dir under this job's id, then a non-zero exit.
cat > "$tmp/play-fixture.sh" <<'EOF'
#!/bin/bash
# play-fixture.sh FIXTURE_OUTPUTS FIXTURE_ID OUTPUTS [KEY=VALUE...]
set -eu
logs=("$1/$2"-*.log)
name=$(basename "${logs[0]}" .log)
rest=${name#"$2"-}
sed "s/^JOB_ID=$2\$/JOB_ID=$SLURM_JOB_ID/" "${logs[0]}" > "$3/$SLURM_JOB_ID-$rest.log.tmp"
cp -r "$1/$name" "$3/$SLURM_JOB_ID-$rest"
mv "$3/$SLURM_JOB_ID-$rest.log.tmp" "$3/$SLURM_JOB_ID-$rest.log"
exit 1
EOF
chmod +x "$tmp/diagnose-traced" "$tmp/epilog-wrapper" "$tmp/play-fixture.sh"

started=$SECONDS
if ! slurm_cluster_start "$tmp/cluster" 2 "EpilogSlurmctld=$tmp/epilog-wrapper"$'\n'"$future"; then
  echo "FAIL: the Slurm cluster did not start"
  exit 1
fi
pass "cluster up in $((SECONDS - started)) s: 2 slurmd nodes, $(wc -l < "$tmp/fixture-hosts") fixture hosts as FUTURE nodes"

submit_play() {   # submit_play FIXTURE -> job id
  sbatch --parsable -N1 -J "play-$1" -o "$tmp/job-out/%j.out" "$tmp/play-fixture.sh" "$fixtures" "$1" "$outputs"
}

history_line() { [[ -f "$history" ]] && jq -c --arg job "$1" 'select(.job == $job)' "$history" 2>/dev/null | tail -n 1; }

# Waits (interruptibly, in this shell) until the epilog of JOB has finished, as the wrapper records
# it; sets epilog_rc to its exit status, or "none" after 300 s.
epilog_status() {
  local job=$1 i
  epilog_rc=none
  for i in $(seq 600); do
    if [[ -f "$tmp/epilog-status" ]] && grep -q "^$job " "$tmp/epilog-status"; then
      epilog_rc=$(sed -n "s/^$job //p" "$tmp/epilog-status" | tail -n 1)
      return 0
    fi
    sleep 0.5 & wait $!
  done
}

# The decision diagnose gives FIXTURES on their own, one after the other, in a fresh history of the
# same name (the sweep id): "action exclude-hosts" per line.
expected_decisions() {
  local dir="$tmp/expected-$RANDOM" f
  mkdir -p "$dir"
  for f in "$@"; do
    "$diagnose_bin" "$f" --outputs "$fixtures" --history "$dir/sweep-history.jsonl" --format json >/dev/null 2>"$dir/err" ||
      { echo "diagnose $f failed: $(tail -n 2 "$dir/err")" >&2; }
  done
  jq -r '"\(.action) \([.exclude[].host] | join(","))"' "$dir/sweep-history.jsonl"
}

actual_decision() { history_line "$1" | jq -r '"\(.action) \([.exclude[].host] | join(","))"'; }

# --- 1. one job, one epilog, one decision
job=$(submit_play "$single_fixture")
epilog_status "$job"
[[ "$epilog_rc" == 0 ]] && pass "job $job: the epilog exited 0" || fail "job $job: epilog status '$epilog_rc' (want 0)"
want=$(expected_decisions "$single_fixture")
got=$(actual_decision "$job")
if [[ -n "$got" && "$got" == "$want" ]]; then
  pass "job $job (plays $single_fixture): history says '$got', as diagnose says of $single_fixture"
else
  fail "job $job (plays $single_fixture): history says '${got:-nothing}', diagnose says '$want'"
  tail -n 5 "$reports/$job.diagnose.err" 2>/dev/null
fi
[[ "$want" == retry-excluding-nodes\ ?* ]] || fail "fixture $single_fixture no longer decides an exclusion ('$want'): pick another"
[[ "$(history_line "$job" | jq -r .status)" != "" ]] || fail "job $job: no status in its history line"

# --- 2. two jobs ending together share the history under its lock
: > "$trace"
job_a=$(submit_play "${concurrent_fixtures[0]}")
job_b=$(submit_play "${concurrent_fixtures[1]}")
epilog_status "$job_a"; status_a=$epilog_rc
epilog_status "$job_b"; status_b=$epilog_rc
[[ "$status_a" == 0 && "$status_b" == 0 ]] && pass "jobs $job_a, $job_b: both epilogs exited 0" ||
  fail "concurrent epilogs exited '$status_a' and '$status_b'"
mapfile -t runs < <(awk '{print $1, $2, $3}' "$trace")
if [[ ${#runs[@]} -ne 4 ]]; then
  fail "expected 2 traced diagnose runs, trace has: $(tr '\n' ';' < "$trace")"
else
  # start X, end X, start Y, end Y: never two runs at once
  read -r s1 j1 _ <<<"${runs[0]}"; read -r e1 k1 t1 <<<"${runs[1]}"; read -r s2 j2 t2 <<<"${runs[2]}"; read -r e2 k2 _ <<<"${runs[3]}"
  if [[ "$s1 $e1 $s2 $e2" == "start end start end" && "$j1" == "$k1" && "$j2" == "$k2" && "$j1" != "$j2" ]] && (( t2 >= t1 )); then
    pass "the two epilogs' diagnose runs did not overlap (job $j1, then job $j2)"
  else
    fail "diagnose runs overlapped: $(tr '\n' ';' < "$trace")"
  fi
  # The concurrent history must be the sequential one, in the order the lock gave.
  order=()
  for j in "$j1" "$j2"; do
    [[ "$j" == "$job_a" ]] && order+=("${concurrent_fixtures[0]}") || order+=("${concurrent_fixtures[1]}")
  done
  want=$(expected_decisions "$single_fixture" "${order[@]}")
  got=$( (actual_decision "$job"; actual_decision "$j1"; actual_decision "$j2") )
  if [[ "$got" == "$want" ]]; then
    pass "history after two concurrent epilogs equals diagnose run one job after another: $(echo "$got" | tr '\n' ';')"
  else
    fail "history after the concurrent epilogs: $(echo "$got" | tr '\n' ';') want $(echo "$want" | tr '\n' ';')"
  fi
fi
lines=$(wc -l < "$history")
valid=$(jq -c . "$history" 2>/dev/null | wc -l)
[[ "$lines" -eq 3 && "$valid" -eq 3 ]] && pass "history holds 3 well-formed lines" || fail "history has $lines lines, $valid parse"

# --- 3. the epilog never fails: a job that left no log, and a missing diagnose binary
empty_job=$(sbatch --parsable -N1 -o /dev/null --wrap "exit 3")
epilog_status "$empty_job"
[[ "$epilog_rc" == 0 ]] && pass "job $empty_job (no log written): epilog exited 0" || fail "job $empty_job (no log): epilog status '$epilog_rc'"
touch "$tmp/missing-binary"
nobin_job=$(submit_play "$single_fixture")
epilog_status "$nobin_job"
rm -f "$tmp/missing-binary"
[[ "$epilog_rc" == 0 ]] && pass "job $nobin_job (diagnose binary missing): epilog exited 0" || fail "job $nobin_job (no binary): epilog status '$epilog_rc'"
[[ -z "$(history_line "$empty_job")$(history_line "$nobin_job")" ]] && pass "no history line for the jobs not diagnosed" ||
  fail "a job that could not be diagnosed has a history line"
drained=$(sinfo -h -p test -t drain,draining,drained -o '%N')
[[ -z "$drained" ]] && pass "no node drained" || fail "nodes drained: $drained"
epilog_errors=$(grep -ci "error.*epilog" "$tmp/cluster/log/slurmctld.log")
[[ "$epilog_errors" == 0 ]] && pass "slurmctld logged no epilog error" || fail "slurmctld logged $epilog_errors epilog errors"

# --- 4. sbatch accepts every fixture's slurm_exclude: `diagnose summary` diagnoses every fixture job
# in one run and gives each its decision.slurm_exclude.
summary_started=$SECONDS
"$diagnose_bin" summary "$fixtures" --format json > "$tmp/summary.json" 2>"$tmp/summary.err" ||
  fail "diagnose summary failed: $(tail -n 3 "$tmp/summary.err")"
jobs_total=$(jq 'length' "$tmp/summary.json")
mapfile -t excludes < <(jq -r '.[] | select(.slurm_exclude != null and .slurm_exclude != "") | "\(.id) \(.slurm_exclude)"' "$tmp/summary.json")
refused=0
for row in "${excludes[@]}"; do
  read -r id exclude <<<"$row"
  if ! out=$(sbatch --test-only -N1 "--exclude=$exclude" --wrap true 2>&1); then
    refused=$((refused + 1))
    fail "sbatch --exclude=$exclude (fixture $id): $out"
  fi
done
if (( refused == 0 && ${#excludes[@]} > 0 )); then
  pass "sbatch --test-only accepted the slurm_exclude of all ${#excludes[@]} excluding fixtures ($jobs_total diagnosed in $((SECONDS - summary_started)) s)"
else
  fail "slurm_exclude: $refused of ${#excludes[@]} refused ($jobs_total diagnosed)"
fi
# A name Slurm does not know is refused: the check above can fail.
sbatch --test-only -N1 --exclude=no-such-node-37 --wrap true >/dev/null 2>&1 &&
  fail "sbatch accepted an unknown node name in --exclude"

# --- 5. the sweep driver resubmits with --exclude=
rm -f "$history"
driver_out=$("$source_dir/examples/sweep-driver.sh" --history "$history" --reports "$reports" --max-rounds 2 --poll 1 \
  --decision-timeout 240 -- -N1 -o "$tmp/job-out/%j.out" "$tmp/play-fixture.sh" "$fixtures" "$single_fixture" "$outputs" 2>&1)
echo "$driver_out" | sed 's/^/  driver: /'
first=$(echo "$driver_out" | sed -n 's/^round 1: job \([0-9]*\) .*/\1/p')
second=$(echo "$driver_out" | sed -n 's/^round 2: job \([0-9]*\) .*/\1/p')
want_exclude=$(jq -r '.decision.slurm_exclude' "$reports/$first.diagnose.json" 2>/dev/null)
got_exclude=$(scontrol show job -o "$second" 2>/dev/null | tr ' ' '\n' | sed -n 's/^ExcNodeList=//p')
if [[ -n "$second" && -n "$want_exclude" ]] &&
   [[ "$(SLURM_CONF=$tmp/names.conf scontrol show hostnames "$got_exclude" | sort)" == "$(SLURM_CONF=$tmp/names.conf scontrol show hostnames "$want_exclude" | sort)" ]]; then
  pass "sweep driver resubmitted job $first's retry as job $second with ExcNodeList=$got_exclude"
else
  fail "sweep driver: job $first excluded '${want_exclude}', job '${second}' has ExcNodeList='${got_exclude}'"
fi

echo "slurm epilog test: $failures failure(s) in $((SECONDS - started)) s"
if (( failures > 0 )); then
  echo "--- slurmctld.log (tail)"; tail -n 30 "$tmp/cluster/log/slurmctld.log"
  exit 1
fi
exit 0
