#!/usr/bin/env bash
# Serving a TSDB that lives on another filesystem than the temp dir (job outputs on NFS, /tmp local):
# `diagnose 8308` on the fixture (~9 MB TSDB) and on the same job padded to ~2 GiB with an
# unreferenced chunk segment (valid header, zeros), with TMPDIR on /dev/shm (tmpfs) while the jobs
# sit on the build tree's filesystem. Prints wall time per run and the temp dir's peak usage.
#   tests/bench/cross_fs_bench.sh [BUILD_DIR] [RUNS]
set -euo pipefail
build=${1:-build}
runs=${2:-3}
diagnose="$build/diagnose"
tmp_fs=/dev/shm
[ "$(stat -c %d "$tmp_fs")" != "$(stat -c %d "$build")" ] || { echo "need $tmp_fs on another filesystem"; exit 1; }
work="$build/cross-fs-bench"
rm -rf "$work" && mkdir -p "$work/small" "$work/big"
cp -a fixtures/outputs/8308-* "$work/small/"
cp -a fixtures/outputs/8308-* "$work/big/"
block=$(ls -d "$work"/big/8308-*/prometheus/01* | head -1)
python3 - "$block/chunks/000099" <<'PY'
import struct, sys
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack(">IB3x", 0x85BD40DD, 1))   # chunk segment magic, version 1
    zeros = b"\0" * (1 << 24)
    for _ in range(128):
        f.write(zeros)
PY
du -sh "$work"/small/8308-*/prometheus "$work"/big/8308-*/prometheus
for size in small big; do
  for run in $(seq "$runs"); do
    start=$(date +%s.%N)
    TMPDIR=$tmp_fs "$diagnose" 8308 --outputs "$work/$size" --format json > "$work/$size.json" &
    pid=$!
    peak=0
    while kill -0 "$pid" 2>/dev/null; do
      used=$(du -sk "$tmp_fs" | cut -f1); [ "$used" -gt "$peak" ] && peak=$used; sleep 0.05
    done
    wait "$pid"
    echo "$size run $run: $(echo "$(date +%s.%N) - $start" | bc) s, temp dir peak ${peak} KB"
  done
done
rm -rf "$work"
