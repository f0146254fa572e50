#!/usr/bin/env bash
# Runs every test: builds (incl. fixture generation), then ctest, then playbook lint and tests, then
# the second tree under ASan/UBSan/LSan with 30 s of every fuzzer (scripts/sanitize.sh; skipped
# with DIAGNOSE_SKIP_SANITIZE=1 for a quick local run). This is the README's second command and what
# .ci/run calls. After ctest, scripts/check-test-times.py fails the run when a test used more than a
# third of its time limit, so the margin a busy machine needs cannot erode silently.
# The second tree compiles while the main tree's tests run, at the lowest CPU priority: those tests
# leave CPU idle while they wait (the live-job test holds a slot ~100 s for ~2.5 s of CPU; the Slurm
# and browser tests run alone), and at nice 19 the compiler gets what they leave while the tests
# keep precedence (their time check still applies). Its log is printed after the main tree's results.
# Both trees compile through ccache where it is installed (scripts/compiler-cache.sh).
#
#   scripts/test.sh            # everything (CI)
#   scripts/test.sh --quick    # unit and fast integration tests: every test but tests/slow-tests.txt,
#                              # no sanitizer tree, no time check (a few minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
case "${1:-}" in
  --quick) quick=1 ;;
  "") ;;
  *) echo "usage: scripts/test.sh [--quick]" >&2; exit 2 ;;
esac
build=${BUILD_DIR:-build}
jobs=${JOBS:-2}
timeout=600   # for tests without a TIMEOUT property of their own
source scripts/compiler-cache.sh
# A CI run (CI=true) compiles each engine module as one batch: less CPU for a build from nothing. A
# developer's tree keeps batches of 8, so that an edit does not recompile its whole module.
unity_modules=()
if [ "${CI:-}" = true ]; then unity_modules=(-DDIAGNOSE_UNITY_MODULES=ON); fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${compiler_cache[@]}" "${unity_modules[@]}" >/dev/null
cmake --build "$build" -j "$jobs"
echo "test: main tree built at ${SECONDS} s"

sanitize=0
if [ "$quick" != 1 ] && [ "${DIAGNOSE_SKIP_SANITIZE:-0}" != 1 ]; then sanitize=1; fi
sanitize_pid=""
sanitize_log="$PWD/$build/sanitize-build.log"
stop_sanitize_build() {
  if [ -n "$sanitize_pid" ] && kill -0 "$sanitize_pid" 2>/dev/null; then
    kill -TERM -- "-$sanitize_pid" 2>/dev/null || true   # its own process group: ninja and the compilers
    wait "$sanitize_pid" 2>/dev/null || true
  fi
}
trap stop_sanitize_build EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if [ "$sanitize" = 1 ]; then
  # setsid: a process group of its own, so that every exit path above stops all of it. A new
  # session is also a new scheduler autogroup where the kernel has them (Debian's does), and
  # autogroups share the CPU equally whatever their processes' nice: measured here, two nice-19
  # loops in their own session got 170 ticks to the ticks 80 of two nice-0 loops. The autogroup's
  # own nice (19) restores the order: 0 to 93.
  setsid bash -c 'echo 19 2>/dev/null > /proc/self/autogroup; exec nice -n 19 bash scripts/sanitize.sh --build-only' \
    > "$sanitize_log" 2>&1 &
  sanitize_pid=$!
  echo "test: building the sanitized tree alongside the main tree's tests (nice 19; log: $sanitize_log)"
fi

bash scripts/test-costs.sh seed "$build" main
if [ "$quick" = 1 ]; then
  slow=$(grep -v '^\s*#' tests/slow-tests.txt | sed 's/\s*#.*//' | grep -v '^\s*$' | paste -sd'|')
  ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout "$timeout" -E "$slow"
else
  junit="$PWD/$build/ctest-junit.xml"
  ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout "$timeout" --output-junit "$junit"
  python3 scripts/check-test-times.py --build "$build" --junit "$junit" --default-timeout "$timeout" \
    --slow-list tests/slow-tests.txt
fi
# The help is read whole first: `diagnose --help | grep -q` under pipefail failed whenever grep had
# its match and left before the help's second write (SIGPIPE), and the playbook tests were skipped
# without a word (a cold CI run under load did so).
help=$("./$build/diagnose" --help 2>/dev/null || true)
if [ -d playbooks ] && grep -q '^  lint ' <<<"$help"; then
  "./$build/diagnose" lint rules playbooks
fi
if compgen -G "playbooks/tests/*.yaml" >/dev/null && grep -q '^  test ' <<<"$help"; then
  "./$build/diagnose" test playbooks/tests/*.yaml
fi
if [ "$sanitize" = 1 ]; then
  echo "test: main tree tested at ${SECONDS} s"
  build_rc=0
  wait "$sanitize_pid" || build_rc=$?
  sanitize_pid=""
  echo "test: sanitized tree built at ${SECONDS} s"
  echo "== the sanitized tree's build (ran alongside the main tree's tests) =="
  cat "$sanitize_log"
  if [ "$build_rc" != 0 ]; then
    echo "test: the sanitized tree's build failed (exit $build_rc)" >&2
    exit "$build_rc"
  fi
  bash scripts/sanitize.sh
  echo "test: sanitized tree tested and fuzzed at ${SECONDS} s"
fi
