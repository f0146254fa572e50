#!/usr/bin/env bash
# Runs every test: builds (incl. fixture generation), then ctest, then playbook lint and tests, then
# the second tree under ASan/UBSan/LSan with 30 s of every fuzzer (scripts/sanitize.sh; skipped
# with DIAGNOSE_SKIP_SANITIZE=1 for a quick local run). This is the README's second command and what
# .ci/run calls. After ctest, scripts/check-test-times.py fails the run when a test used more than a
# third of its time limit, so the margin a busy machine needs cannot erode silently.
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
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$jobs"
if [ "$quick" = 1 ]; then
  slow=$(grep -v '^\s*#' tests/slow-tests.txt | sed 's/\s*#.*//' | grep -v '^\s*$' | paste -sd'|')
  ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout "$timeout" -E "$slow"
else
  junit="$PWD/$build/ctest-junit.xml"
  ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout "$timeout" --output-junit "$junit"
  python3 scripts/check-test-times.py --build "$build" --junit "$junit" --default-timeout "$timeout" \
    --slow-list tests/slow-tests.txt
fi
if [ -d playbooks ] && "./$build/diagnose" --help 2>/dev/null | grep -q ' lint'; then
  "./$build/diagnose" lint rules playbooks
fi
if compgen -G "playbooks/tests/*.yaml" >/dev/null && "./$build/diagnose" --help 2>/dev/null | grep -q ' test'; then
  "./$build/diagnose" test playbooks/tests/*.yaml
fi
if [ "$quick" != 1 ] && [ "${DIAGNOSE_SKIP_SANITIZE:-0}" != 1 ]; then
  bash scripts/sanitize.sh
fi
