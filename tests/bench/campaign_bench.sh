#!/usr/bin/env bash
# Campaign benchmark: 300 randomized jobs over three seeds (100 each), scored against the current
# diagnose. Prints each seed's score table and the wall times. Takes a while on 2 cores (about
# 10-15 minutes of generation per seed); data go under the build tree.
#   tests/bench/campaign_bench.sh [BUILD_DIR] [SEEDS...]
set -euo pipefail
build=${1:-build}
shift || true
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(1 2 3)
cmake --build "$build" -j2 --target campaign diagnose
for seed in "${seeds[@]}"; do
  dir="$build/campaign-bench/seed-$seed"
  rm -rf "$dir"
  mkdir -p "$build/campaign-bench"
  echo "=== seed $seed: generating 100 jobs into $dir"
  start=$(date +%s)
  "$build/campaign" generate --seed "$seed" --jobs 100 --out "$dir" --jobs-parallel 2 > "$dir.generate.log"
  echo "generation: $(( $(date +%s) - start )) s"
  start=$(date +%s)
  "$build/campaign" score --diagnose "$build/diagnose" "$dir" --json "$dir/score.json" || true
  echo "scoring: $(( $(date +%s) - start )) s"
done
