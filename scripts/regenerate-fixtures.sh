#!/usr/bin/env bash
# Rebuilds every fixture from fixtures/scenarios: builds fixturegen, wipes fixtures/outputs and
# regenerates it (logs, Ray/exporter logs, Prometheus TSDB blocks via promtool). Generated outputs are
# never committed (fixtures/outputs/ is git-ignored); the scenarios and the generator are the source.
# Usage: scripts/regenerate-fixtures.sh   (BUILD_DIR, JOBS override the defaults)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
jobs=${JOBS:-2}
cmake -S . -B "$build" -G Ninja >/dev/null
cmake --build "$build" -j "$jobs" --target fixturegen
rm -rf fixtures/outputs
mkdir -p fixtures/outputs
start=$(date +%s.%N)
"./$build/fixturegen" --all fixtures/scenarios --out fixtures/outputs --scratch "$build" --jobs "$jobs"
end=$(date +%s.%N)
# the build's fixtures target is now up to date with what was just generated
touch "$build/fixtures.stamp"
echo "generated $(ls fixtures/scenarios/*.yaml | wc -l) scenarios in $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s;" \
     "fixtures/outputs is $(du -sh fixtures/outputs | cut -f1)"
