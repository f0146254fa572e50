#!/usr/bin/env bash
# ctest starts the longest tests first when it knows their cost (Testing/Temporary/CTestCostData.txt,
# which it writes after each run), so the last minutes of a -j2 run are not one long test beside an
# idle slot. A fresh clone has no such file: the committed ones (tests/ctest-costs/, from a full run
# on an idle 2-core machine) stand in until the build directory has its own. A test missing from
# them counts as cheapest and starts last; after adding slow tests, refresh with `save`.
#   scripts/test-costs.sh seed BUILD_DIR main|sanitize   # before ctest (scripts/test.sh, sanitize.sh)
#   scripts/test-costs.sh save BUILD_DIR main|sanitize   # after a full run, to commit its costs
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 3 ] || { echo "usage: scripts/test-costs.sh seed|save BUILD_DIR main|sanitize" >&2; exit 2; }
action=$1 build=$2 tree=$3
committed="tests/ctest-costs/$tree.txt"
measured="$build/Testing/Temporary/CTestCostData.txt"
case "$action" in
  seed) if [ ! -e "$measured" ]; then mkdir -p "$(dirname "$measured")"; cp "$committed" "$measured"; fi ;;
  save) sed '/^---$/q' "$measured" > "$committed" ;;   # without the list of failed tests
  *) echo "usage: scripts/test-costs.sh seed|save BUILD_DIR main|sanitize" >&2; exit 2 ;;
esac
