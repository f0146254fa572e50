#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build (scripts/sanitize.sh makes one) for SECONDS each, two
# at a time, on a corpus seeded from the fixtures, playbooks and fuzz/seeds. Prints one line per
# target (execs/s, coverage, corpus) and fails when a target finds a crash, leak or timeout; the
# input that did it is kept in BUILD/fuzz/artifacts/ and belongs in fuzz/regressions/<target>/
# (and a unit test) before the fix.
# First every file in fuzz/regressions/<target>/ is replayed: a failure there always fails. Then
# each target fuzzes; what it finds fails the run unless FUZZ_NEW_FINDINGS=report, which prints it
# (stack and input) and goes on (for long campaigns). FUZZ_SEED fixes libFuzzer's seed, so that a
# CI run explores what the same run explored before (scripts/sanitize.sh sets it).
#   scripts/fuzz.sh [BUILD_DIR] [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-sanitize}
seconds=${2:-60}
shift $(( $# > 2 ? 2 : $# ))
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for bin in "$build"/fuzz/fuzz_*; do targets+=("$(basename "$bin" | sed 's/^fuzz_//')"); done
fi
work="$build/fuzz"
mkdir -p "$work/artifacts" "$work/logs"

# Seeds: a mode byte first where the target has modes (fuzz/fuzz_input.h TakeMode).
seed() {   # seed TARGET NAME MODE_BYTE_OR_EMPTY < content
  local dir="$work/corpus/$1"; mkdir -p "$dir"
  if [ -n "$3" ]; then { printf "$3"; cat; } > "$dir/$2"; else cat > "$dir/$2"; fi
}
log_chunks() {   # 4 KiB pieces of the fixture logs: every kind of line the launcher prints
  local n=0
  for log in fixtures/outputs/*.log; do
    for offset in 0 4096 65536 262144; do
      head -c $((offset + 4096)) "$log" | tail -c 4096; printf '\0'
      n=$((n + 1)); [ $n -ge 120 ] && return
    done
  done
}
make_seeds() {
  set +o pipefail   # `head` ends the seed pipelines early on purpose
  local i=0
  while IFS= read -r -d '' chunk; do
    i=$((i + 1))
    printf '%s' "$chunk" | seed log_line "log$i" ""
    printf '%s' "$chunk" | seed signature_matcher "log$i" '\x01'
  done < <(log_chunks)
  seed signature_matcher table '\x00' < rules/triage/failure-signatures.yaml
  for f in playbooks/*.yaml playbooks/examples/*.yaml; do
    [ -f "$f" ] || continue
    seed playbook_yaml "pb-$(basename "$f")" '\x00' < "$f"
    seed playbook_yaml "pbc-$(basename "$f")" '\x02' < "$f"
  done
  for f in rules/common/*.yaml; do seed playbook_yaml "rules-$(basename "$f")" '\x01' < "$f"; done
  # Expressions and templates as the playbooks write them.
  i=0
  grep -hoE "(when|condition|value|expr): .*" playbooks/*.yaml rules/common/*.yaml 2>/dev/null | cut -d' ' -f2- |
    sed "s/^['\"]//; s/['\"]$//" | head -200 | while IFS= read -r line; do
      i=$((i + 1)); printf '%s' "$line" | seed expr_template "expr$i" '\x01'; done
  grep -hoE "\{\{[^}]*\}\}[^'\"]*" playbooks/*.yaml 2>/dev/null | head -100 | while IFS= read -r line; do
      i=$((i + 1)); printf '%s' "$line" | seed expr_template "tmpl$i" '\x00'; done
  # Input series from the playbook tests: selector line, values line.
  mkdir -p "$work/corpus/series_notation"
  awk '/- series:/{sub(/.*series: */,""); gsub(/^'"'"'|'"'"'$/,""); s=$0; next}
       /values:/ && s!=""{sub(/.*values: */,""); gsub(/^'"'"'|'"'"'$/,""); print s "\n" $0 "\001"; s=""}' \
      playbooks/tests/*.yaml | head -c 200000 | awk -v RS='\001' -v dir="$work/corpus/series_notation" \
      'NF{f=dir "/s" NR; printf "%s", $0 > f; close(f)}' || true
  i=0
  for meta in fixtures/outputs/*/prometheus/*/meta.json; do
    [ -f "$meta" ] || continue
    i=$((i + 1)); [ $i -gt 20 ] && break
    { basename "$(dirname "$meta")"; cat "$meta"; } | seed tsdb_meta "meta$i" '\x00'
  done
  # The playbooks' PromQL as the engine-side answer readers meet it (templates filled with a window),
  # once per reader (mode byte 0 composite, 1 count, 2 derived).
  i=0
  grep -hoE "query: '.*'" playbooks/*.yaml rules/common/*.yaml 2>/dev/null | sed "s/^query: '//; s/'$//; s/{{[^}]*}}/600s/g" |
    head -150 | while IFS= read -r line; do
      i=$((i + 1))
      for mode in 0 1 2; do printf '%s' "$line" | seed promql_answer "q$i-$mode" "\\x0$mode"; done
    done
  for t in prometheus_response sweep_history expr_template tsdb_meta trace_reader sweep_artifact; do
    mkdir -p "$work/corpus/$t"; cp -n fuzz/seeds/$t/* "$work/corpus/$t/" 2>/dev/null || true
  done
  set -o pipefail
}
make_seeds

replay_failed=0
for t in "${targets[@]}"; do
  inputs=(fuzz/regressions/"$t"/*)
  [ -e "${inputs[0]}" ] || continue
  if ! "$build/fuzz/fuzz_$t" -timeout=10 -rss_limit_mb=2048 "${inputs[@]}" > "$work/logs/$t-replay.log" 2>&1; then
    echo "fuzz: $t fails on a regression input (see $work/logs/$t-replay.log)" >&2
    grep -E "ERROR|SUMMARY|Running:" "$work/logs/$t-replay.log" | tail -4 >&2 || true
    replay_failed=1
  fi
done

run_one() {
  local t=$1 bin="$build/fuzz/fuzz_$1"
  mkdir -p "$work/corpus/$t"
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    ${FUZZ_SEED:+-seed="$FUZZ_SEED"} \
    -artifact_prefix="$work/artifacts/$t-" "$work/corpus/$t" > "$work/logs/$t.log" 2>&1
}

failed=0
pids=(); names=()
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "${FUZZ_JOBS:-2}" ]; do sleep 1; done
  run_one "$t" & pids+=($!); names+=("$t")
done
printf '%-22s %10s %10s %8s %8s %8s  %s\n' target execs execs/s cov ft corpus result
for i in "${!pids[@]}"; do
  t=${names[$i]}; log="$work/logs/$t.log"
  if wait "${pids[$i]}"; then
    result=ok
  elif [ "${FUZZ_NEW_FINDINGS:-fail}" = report ]; then
    result="NEW FINDING, reported (see $log)"
  else
    result="FAILED (see $log)"; failed=1
  fi
  stat() { grep -E "^stat::$1:" "$log" | awk '{print $2}' | tail -1 || true; }
  runs=$(stat number_of_executed_units); rate=$(stat average_exec_per_sec)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(sed -nE 's/.*cov: ([0-9]+).*/\1/p' <<<"$last"); ft=$(sed -nE 's/.*ft: ([0-9]+).*/\1/p' <<<"$last")
  corp=$(sed -nE 's/.*corp: ([0-9]+).*/\1/p' <<<"$last")
  printf '%-22s %10s %10s %8s %8s %8s  %s\n' "$t" "${runs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$result"
  if [ "$result" != ok ]; then grep -E "ERROR|SUMMARY|Test unit written" "$log" | head -5 || true; fi
done
exit $(( failed || replay_failed ))
