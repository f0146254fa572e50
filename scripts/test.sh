#!/usr/bin/env bash
# Runs every test: builds (incl. fixture generation), then ctest, then playbook lint and tests, then
# the second tree under ASan/UBSan/LSan with 30 s of every fuzzer (scripts/sanitize.sh; skipped
# with DIAGNOSE_SKIP_SANITIZE=1 for a quick local run). This is the README's second command and what
# .ci/run calls.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
jobs=${JOBS:-2}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$jobs"
ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 600
if [ -d playbooks ] && "./$build/diagnose" --help 2>/dev/null | grep -q ' lint'; then
  "./$build/diagnose" lint rules playbooks
fi
if compgen -G "playbooks/tests/*.yaml" >/dev/null && "./$build/diagnose" --help 2>/dev/null | grep -q ' test'; then
  "./$build/diagnose" test playbooks/tests/*.yaml
fi
if [ "${DIAGNOSE_SKIP_SANITIZE:-0}" != 1 ]; then
  bash scripts/sanitize.sh
fi
