#!/usr/bin/env bash
# The second tree (issue 14): clang with AddressSanitizer, UndefinedBehaviorSanitizer and
# LeakSanitizer (part of ASan on x86-64 Linux), every parser's libFuzzer target, no benchmarks and
# no fixture generation (it tests against the fixtures scripts/test.sh's build generated). Runs the
# unit and integration tests under the sanitizers, then each fuzzer for FUZZ_SECONDS (default 30).
#   scripts/sanitize.sh            # as CI runs it
#   scripts/sanitize.sh --build-only   # configure and build only (scripts/test.sh builds the tree
#                                      # this way while the main tree's tests run)
#   FUZZ_SECONDS=600 FUZZ_NEW_FINDINGS=report scripts/sanitize.sh   # a campaign
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=0
case "${1:-}" in
  --build-only) build_only=1 ;;
  "") ;;
  *) echo "usage: scripts/sanitize.sh [--build-only]" >&2; exit 2 ;;
esac
build=${SANITIZE_BUILD_DIR:-build-sanitize}
jobs=${JOBS:-2}
if ! compgen -G "fixtures/outputs/*.log" >/dev/null; then
  echo "sanitize: fixtures/outputs is empty; build the main tree first (scripts/test.sh does)" >&2
  exit 2
fi
# -O1: at -O0 the tree compiles in half the time (103 s -> 53 s for the largest batch) but the
# sanitized tests run about five times slower (a private-server test 43 s -> 225 s), which costs
# CI far more than it saves. Line tables are enough for the reports' stack traces. One batch per
# engine module (CMakeLists.txt, DIAGNOSE_UNITY_MODULES): diagnose_dag 79.0 -> 54.6 s of CPU.
source scripts/compiler-cache.sh
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug "${compiler_cache[@]}" \
  -DCMAKE_CXX_FLAGS_DEBUG="${SANITIZE_OPT:--O1} -gline-tables-only" \
  -DDIAGNOSE_SANITIZE=address,undefined -DDIAGNOSE_FUZZ=ON -DDIAGNOSE_UNITY_MODULES=ON \
  -DDIAGNOSE_GENERATE_FIXTURES=OFF -DDIAGNOSE_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build "$build" -j "$jobs"
[ "$build_only" = 1 ] && exit 0

# Every report fails the test that triggered it; leaks are checked at exit of each test process.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/scripts/lsan.supp:print_suppressions=0}
# Not under the sanitizers: the randomized variants (200 s natively; the same code paths as the
# incident fixtures, which do run), the fleet store over every fixture (the same import and remote
# paths as the five-job fleet test, which does run), the JSON form of the all-fixture summary (the
# text form runs the same diagnoses), the report schema check (the JSON of the same diagnoses the
# agreement test runs) and the browser test (Chromium's memory, not ours).
# Two tests mostly wait on the wall clock: the live-job test (~100 s: a 30 s rule interval, a
# Prometheus restart; 2.4 s of CPU in the main tree) and slurm_epilog (~50 s: a private Slurm cluster
# scheduling jobs whose epilogs run diagnose). In the -j pool the first held one of the two slots
# and the second, RUN_SERIAL, both; they run one after the other in a ctest of their own beside the
# pool, whose two slots go to tests that use the CPU.
excluded='^(Shards/ScenarioVariants\.|Shards/FleetStoreEveryFixture\.|SummaryCli\.JsonIsAnArrayOfRows$|report_schema$|browser_reports$)'
waiting='^(LiveJobCliTest\.|slurm_epilog$)'
junit="$PWD/$build/ctest-junit.xml" junit_waiting="$PWD/$build/ctest-junit-waiting.xml"
waiting_log="$PWD/$build/ctest-waiting.log"
bash scripts/test-costs.sh seed "$build" sanitize
ctest --test-dir "$build" --output-on-failure --timeout 900 --output-junit "$junit_waiting" -R "$waiting" \
  > "$waiting_log" 2>&1 &
waiting_pid=$!
tests_rc=0
ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 900 --output-junit "$junit" \
  -E "$excluded|$waiting" \
  || tests_rc=$?
waiting_rc=0
wait "$waiting_pid" || waiting_rc=$?
echo "== the tests run beside the pool ($waiting) =="
cat "$waiting_log"
if [ "$tests_rc" != 0 ] || [ "$waiting_rc" != 0 ]; then exit 1; fi
# The sanitized tests run several times slower than the main tree's, under the same limits: their
# margin is printed (the main tree's is enforced by scripts/test.sh).
python3 scripts/check-test-times.py --build "$build" --junit "$junit" "$junit_waiting" --default-timeout 900 --warn-only
# Regression inputs must pass, and so must the 30 s of each target: every target ran 10 minutes
# clean after the fixes in fuzz/regressions (README). A fixed seed makes a CI failure reproducible.
FUZZ_SEED=${FUZZ_SEED:-1} FUZZ_NEW_FINDINGS=${FUZZ_NEW_FINDINGS:-fail} bash scripts/fuzz.sh "$build" "${FUZZ_SECONDS:-30}"
