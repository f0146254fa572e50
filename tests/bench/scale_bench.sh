#!/usr/bin/env bash
# Scale benchmark: how the cost of `diagnose` grows with the number of nodes of a job. For each node
# count N it writes a scenario derived from fixtures/scenarios/incident-8308-rdma-tgs-phases.yaml
# (same TGS phases, same RDMA retransmit + ACK-timeout faults on 4 hosts and the TCP-only decoy on a
# 5th, spread over a generated hostlist "sc-n[0001-N]" at the same relative positions as in 8308;
# the launcher's real scrape intervals: node_hw 10 s, ray 5 s), generates it with fixturegen (one
# job at a time), then runs `diagnose JOB --format json` RUNS times and records the median wall time,
# the peak RSS of diagnose and of its private `prometheus` child (VmHWM polled from /proc every
# 50 ms), and the verdict against the scaled expectation. One extra run under strace (not timed)
# counts the HTTP requests diagnose sends and the bytes it receives (on the wire: since e2c9241 the
# private server's answers are not compressed on loopback; an older AGAINST binary's were deflated),
# since the report only gives discovery's query count.
# Prints a Markdown table and least-squares fits on log-log of time and RSS against nodes.
#
#   tests/bench/scale_bench.sh [BUILD_DIR] [--hours H] [NODES...]      (default nodes: 24 128 512 1024)
#
# --hours H scales 8308's 380 steps (~3.9 h of job) and its phase boundaries to a job of H hours;
# without it the job keeps 8308's length. Environment: WORK (default /tmp/scale-bench: scenarios,
# outputs, results; never the source tree), RUNS (3), GEN_TIMEOUT (seconds per generation; default
# 1800 or one second per 50 k samples the size is expected to hold, whichever is longer),
# MIN_FREE_GB (refuse a size when less is free, 5), GEN_MAX_RSS_GB (stop a generation whose
# fixturegen + promtool RSS passes this, 16), CLEAN (1: delete a size's outputs after
# measuring it), APPEND (1: keep earlier rows of WORK/results.tsv in the table and fits),
# DIAGNOSE_ARGS (extra diagnose arguments, e.g. "--deadline 0"), REUSE (1: measure a job already
# generated in WORK by an earlier invocation for the same size and hours instead of generating it),
# ENCODER (how fixturegen writes the blocks: native, the default, or promtool, the old path through
# OpenMetrics text that the following applies to),
# SCRATCH (where fixturegen stages its OpenMetrics text and promtool its head chunks: the text is
# ~100x the size of the blocks, so on disk generation is bound by writing it. Default: a private dir
# in /dev/shm when that has room for two promtool batches of this size's text and MemAvailable keeps
# SHM_RESERVE_GB (6) beside it; otherwise WORK/nN/scratch).
# The binaries are copied into WORK first, so a concurrent rebuild of BUILD_DIR cannot swap them
# between runs; nothing is built. Data files and playbooks still come from the source tree
# (diagnose's compiled-in DIAGNOSE_SOURCE_DIR).
# PROM_MEMORY_LIMIT (e.g. 1G, 768M) runs each measured diagnosis's private `prometheus` in a fresh
# cgroup-v1 memory cgroup of that limit (a wrapper first on PATH enters it, then execs the real
# server), the job's block pages evicted from the page cache first so that the server is charged for
# every page it reads (pages cached by an earlier reader stay charged to it); each run then prints
# the cgroup's peak usage and how often the limit was hit. Where no writable memory cgroup exists it
# says so and runs unconfined.
# AGAINST=/path/to/diagnose times a second binary (e.g. a frozen copy of an earlier build) on the
# same generated job, alternating with this build's runs (the order swapped every run), and prints
# the ratio of the medians per size; AGAINST_DATA sets its DIAGNOSE_DATA_DIR (its rules/playbooks).
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
shift || true
hours=""
sizes=()
while [ $# -gt 0 ]; do
  case "$1" in
    --hours) hours=$2; shift 2 ;;
    --hours=*) hours=${1#--hours=}; shift ;;
    *) sizes+=("$1"); shift ;;
  esac
done
[ ${#sizes[@]} -gt 0 ] || sizes=(24 128 512 1024)
work=${WORK:-/tmp/scale-bench}
runs=${RUNS:-3}
shm_reserve_gb=${SHM_RESERVE_GB:-6}
min_free_gb=${MIN_FREE_GB:-5}
encoder=${ENCODER:-native}
case "$encoder" in native|promtool) ;; *) echo "ENCODER=$encoder: expected native or promtool"; exit 2 ;; esac
gen_max_rss_gb=${GEN_MAX_RSS_GB:-16}
clean=${CLEAN:-0}
read -r -a diagnose_args <<< "${DIAGNOSE_ARGS:-}"
base_scenario="$repo/fixtures/scenarios/incident-8308-rdma-tgs-phases.yaml"
[ -f "$base_scenario" ] || { echo "missing $base_scenario (the scenario this benchmark scales)"; exit 1; }
case "$(realpath -m "$work")" in "$repo"/fixtures*) echo "WORK must not be under fixtures/"; exit 2 ;; esac

mkdir -p "$work/bin"
for tool in diagnose fixturegen; do
  [ -x "$build/$tool" ] || { echo "missing $build/$tool (this script builds nothing)"; exit 1; }
  cp "$build/$tool" "$work/bin/$tool"
done
diagnose="$work/bin/diagnose"
fixturegen="$work/bin/fixturegen"
against_bin=""
if [ -n "${AGAINST:-}" ]; then
  [ -x "$AGAINST" ] || { echo "AGAINST=$AGAINST is not an executable"; exit 1; }
  cp "$AGAINST" "$work/bin/against-diagnose"
  against_bin="$work/bin/against-diagnose"
fi
sha256sum "$work/bin/diagnose" "$work/bin/fixturegen" ${against_bin:+"$against_bin"} | sed 's|  .*/| |' > "$work/bin/SHA256"
shm_scratch=""   # this invocation's dir in /dev/shm, removed however the script ends
prom_cgroup=""   # the memory cgroup of the run under way (PROM_MEMORY_LIMIT), removed however the script ends
trap '[ -z "$shm_scratch" ] || rm -rf "$shm_scratch"; [ -z "$prom_cgroup" ] || rmdir "$prom_cgroup" 2>/dev/null' EXIT
results="$work/results.tsv"
[ "${APPEND:-0}" = 1 ] || : > "$results"   # APPEND=1 adds rows to an earlier invocation's table
[ "${APPEND:-0}" = 1 ] || : > "$work/against.tsv"

# --- scenario: 8308 scaled to N hosts ----------------------------------------------------------
# 8308's 24 hosts; the faulty ones sit at indices 7 (chi2822: phase-2 retransmits), 12 and 22
# (chi2834/chi2882: strong, last phase), 13 (chi2835: weak, last phase) and the TCP decoy at 17
# (chi2860). Host i of 24 maps to sc-n(floor(i*N/24)+1), so N=24 keeps the positions.
write_scenario() {  # N OUT_YAML -> prints the expected exclusions, space separated
  python3 - "$1" "$2" "$hours" <<'PY'
import sys
n, out, hours = int(sys.argv[1]), sys.argv[2], sys.argv[3]
width = max(4, len(str(n)))
host = lambda i: f"sc-n{i * n // 24 + 1:0{width}d}"
h22, h34, h35, h82, h60 = host(7), host(12), host(13), host(22), host(17)
# 380 steps span ~14,176 s (3.94 h) of 8308's job (block range incl. init); scale the step count
# and every phase boundary by the same factor.
steps = 380 if not hours else max(60, round(380 * float(hours) * 3600 / 14176))
b = lambda s: round(s * steps / 380)          # an 8308 boundary step scaled
p1, p2, p3, last = b(97), b(217), b(251), steps - 1
yaml = f"""description: >
  Scale benchmark: incident 8308 (RDMA retransmit phases aligned with TGS phases) on {n} hosts,
  {steps} steps, node_hw scraped every 10 s and ray every 5 s (the launcher's real intervals).
job:
  id: "8308"
  name: JAX-mixtral-8x22b
  model: mixtral-8x22b
  launcher: slurm
  ray: true
  start: 2026-02-19T06:00:00Z
  seed: 8308
  hosts: "sc-n[{1:0{width}d}-{n:0{width}d}]"
  passthrough: [steps={steps}, per_device_batch_size=12, enable_checkpointing=true, checkpoint_period=200,
                jax_distributed_heartbeat_timeout_seconds=14400, dataset_type=synthetic]
training:
  moe: true
  first_step: 0
  last_step: {last}
  phases:
    - {{steps: 0-{p1 - 1}, tgs: 3293}}
    - {{steps: {p1}-{p2 - 1}, tgs: 2620}}
    - {{steps: {p2}-{p3 - 1}, tgs: 3288}}
    - {{steps: {p3}, tgs: 2890}}
    - {{steps: {p3 + 1}-{last}, tgs: 2520}}
metrics: {{tsdb: true, node_hw_interval: 10, ray_interval: 5}}
faults:
  - {{kind: rdma_retx, hosts: [{h22}], steps: {p1}-{p2 - 1}, rate: 850, devices: [3, 6]}}
  - {{kind: rdma_ack_timeout, hosts: [{h22}], steps: {p1}-{p2 - 1}, rate: 12, devices: [3, 6]}}
  - {{kind: rdma_retx, hosts: [{h34}, {h82}], steps: {p3 + 1}-{last}, rate: 1400, devices: [1, 5]}}
  - {{kind: rdma_ack_timeout, hosts: [{h34}, {h82}], steps: {p3 + 1}-{last}, rate: 25, devices: [1, 5]}}
  - {{kind: rdma_retx, hosts: [{h35}], steps: {p3 + 1}-{last}, rate: 220, devices: [2]}}
  - {{kind: rdma_ack_timeout, hosts: [{h35}], steps: {p3 + 1}-{last}, rate: 4, devices: [2]}}
  - {{kind: tcp_retx, hosts: [{h60}], rate: 900}}
summary: {{status: SUCCESS, exit: 0}}
expect:
  status: completed
  failure_class: tgs-degradation
  root_cause: rdma-link-degradation
  action: retry-excluding-nodes
  exclude: [{h22}, {h34}, {h82}, {h35}]
  not_excluded: [{h60}]
"""
open(out, "w").write(yaml)
print(steps, h22, h34, h82, h35)
PY
}

# --- one measured run -----------------------------------------------------------------------------
# Runs a command under /usr/bin/time -v, polls /proc every 50 ms for the VmHWM (peak RSS) of every
# descendant, and prints "wall_s exit time_maxrss_kb name=peak_kb..." with the largest peak per
# command name (diagnose, prometheus, fixturegen, promtool). /usr/bin/time's "Maximum resident set
# size" is max(the process, its reaped children), i.e. the private prometheus's peak when that is
# larger, so it is printed only as a cross-check. With MAX_RSS_KB set, the process tree is killed
# (SIGTERM, then SIGKILL, by pid) once its summed RSS passes it and the exit is "rss-limit": a
# generation that outgrows the machine stops before the OOM killer picks someone else's process.
cat > "$work/measure.py" <<'PY'
import os, re, signal, subprocess, sys, time
timefile, outfile, errfile, argv = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
def read(path):
    try:
        with open(path) as f: return f.read()
    except OSError: return ""
def hwm(pid):
    m = re.search(r"^VmHWM:\s+(\d+)", read(f"/proc/{pid}/status"), re.M)
    return int(m.group(1)) if m else 0
def children(pid):
    try: tasks = os.listdir(f"/proc/{pid}/task")
    except OSError: return []
    return [int(c) for t in tasks for c in read(f"/proc/{pid}/task/{t}/children").split()]
def rss(pid):
    m = re.search(r"^VmRSS:\s+(\d+)", read(f"/proc/{pid}/status"), re.M)
    return int(m.group(1)) if m else 0
limit = int(os.environ.get("MAX_RSS_KB", "0"))
start = time.monotonic()
peaks, over = {}, None
with open(outfile, "wb") as out, open(errfile, "wb") as err:
    p = subprocess.Popen(["/usr/bin/time", "-v", "-o", timefile] + argv, stdout=out, stderr=err)
    while p.poll() is None:
        stack, tree, total = children(p.pid), [], 0
        while stack:
            c = stack.pop()
            name = read(f"/proc/{c}/comm").strip()
            peaks[name] = max(peaks.get(name, 0), hwm(c))
            tree.append(c)
            total += rss(c)
            stack += children(c)
        if limit and total > limit and over is None:
            over = total
            for sig in (signal.SIGTERM, signal.SIGKILL):
                for c in reversed(tree):
                    try: os.kill(c, sig)
                    except OSError: pass
                time.sleep(2)
        time.sleep(0.05)
wall = time.monotonic() - start
text = read(timefile)
m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
e = re.search(r"Exit status: (\d+)", text)
k = re.search(r"terminated by signal (\d+)", text)
code = "rss-limit" if over else (128 + int(k.group(1))) if k else e.group(1) if e else p.returncode
if over: open(errfile, "a").write(f"killed: process tree RSS {over} KB > MAX_RSS_KB {limit}\n")
print(f"{wall:.3f} {code} {m.group(1) if m else 0}",
      " ".join(f"{k}={v}" for k, v in sorted(peaks.items()) if k))
PY
peak_of() { tr ' ' '\n' | awk -F= -v k="$1" '$1 == k {print $2; f=1} END{if (!f) print 0}'; }

# Report fields: "root_cause action exclude(sorted,comma) discovery_queries tsdb_state incomplete
# t_triage t_tsdb t_playbooks not_evaluated hours" (hours: the TSDB's data range from discovery).
report_fields() {
  python3 - "$1" <<'PY'
import json, sys
try: r = json.load(open(sys.argv[1]))
except Exception: print("no-report - - - - - - - - - -"); sys.exit()
v, d, t = r.get("verdict", {}), r.get("decision", {}), r.get("timings", {})
ex = ",".join(sorted(e["host"] if isinstance(e, dict) else e for e in d.get("exclude", []))) or "-"
ts = (r.get("tsdb") or [{}])[0]
q = ts.get("discovery", {}).get("queries", "-")
rg = ts.get("discovery", {}).get("range", {})
hours = f"{(rg['end'] - rg['start']) / 3600:.2f}" if "end" in rg and "start" in rg else "-"
f = lambda k: f"{t[k]:.2f}" if k in t else "-"
print(v.get("root_cause", "-"), d.get("action", "-"), ex, q, ts.get("state", "-"),
      "yes" if r.get("incomplete") else "no", f("triage"), f("tsdb"), f("playbooks"), len(r.get("not_evaluated", [])), hours)
PY
}

# PROM_MEMORY_LIMIT: confine_begin before a run sets confine_env (empty when unconfined);
# confine_end after it prints what the cgroup saw and removes it.
memory_cgroups=/sys/fs/cgroup/memory
confine_limit=""
if [ -n "${PROM_MEMORY_LIMIT:-}" ]; then
  real_prometheus=$(command -v prometheus || true)
  if [ ! -w "$memory_cgroups" ] || [ ! -f "$memory_cgroups/memory.limit_in_bytes" ]; then
    echo "PROM_MEMORY_LIMIT=$PROM_MEMORY_LIMIT: no writable cgroup-v1 memory controller at $memory_cgroups; running unconfined"
  elif [ -z "$real_prometheus" ]; then
    echo "PROM_MEMORY_LIMIT=$PROM_MEMORY_LIMIT: no prometheus on PATH; running unconfined"
  else
    confine_limit=$(numfmt --from=iec "$PROM_MEMORY_LIMIT")
    mkdir -p "$work/bin/memory-cgroup"
    printf '#!/bin/sh\necho $$ > "%s/${SCALE_BENCH_CGROUP:?}/cgroup.procs" || exit 97\nexec "%s" "$@"\n' \
      "$memory_cgroups" "$real_prometheus" > "$work/bin/memory-cgroup/prometheus"
    chmod +x "$work/bin/memory-cgroup/prometheus"
  fi
fi
confine_env=()
confine_begin() {
  confine_env=()
  [ -n "$confine_limit" ] || return 0
  local name="scale-bench-$$-$1"
  prom_cgroup="$memory_cgroups/$name"
  mkdir "$prom_cgroup" && echo "$confine_limit" > "$prom_cgroup/memory.limit_in_bytes"
  python3 -c 'import os, sys
for root, _, files in os.walk(sys.argv[1]):
    for f in files:
        path = os.path.join(root, f)
        if not os.path.isfile(path) or os.path.islink(path): continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError: continue
        try: os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally: os.close(fd)' "$dir/outputs"
  confine_env=("SCALE_BENCH_CGROUP=$name" "PATH=$work/bin/memory-cgroup:$PATH")
}
confine_end() {
  [ -n "$prom_cgroup" ] || return 0
  echo "  memory cgroup (limit $PROM_MEMORY_LIMIT): peak usage $(( $(cat "$prom_cgroup/memory.max_usage_in_bytes") >> 20 )) MiB," \
    "limit hit $(cat "$prom_cgroup/memory.failcnt") times, OOM kills $(awk '/^oom_kill / {print $2}' "$prom_cgroup/memory.oom_control")"
  # A killed server may still be freeing its heap inside the cgroup: retry, never stop the bench on it.
  for _ in 1 2 3 4 5 6 7 8 9 10; do rmdir "$prom_cgroup" 2>/dev/null && break; sleep 0.2; done
  prom_cgroup=""
}

# One timed run of the AGAINST binary on size $n's job (run number $1); adds its wall time to against_walls.
against_run() {
  local wall code trss peaks
  confine_begin "against$1"
  read -r wall code trss peaks < <(env ${AGAINST_DATA:+"DIAGNOSE_DATA_DIR=$AGAINST_DATA"} "${confine_env[@]}" python3 "$work/measure.py" \
    "$dir/against$1.time" "$dir/against$1.json" "$dir/against$1.err" "$against_bin" 8308 --outputs "$dir/outputs" \
    --format json "${diagnose_args[@]}")
  echo "against run $1: ${wall}s exit $code"
  confine_end
  against_walls+=" $wall"
}

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END{print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
maxof() { tr ' ' '\n' | grep -v '^$' | sort -g | tail -1; }
mb() { awk -v k="$1" 'BEGIN{printf "%.1f", k/1024}'; }

echo "binaries: $(tr '\n' ' ' < "$work/bin/SHA256")"
echo "hours: ${hours:-as 8308 (380 steps)}, runs: $runs, work: $work"
for n in "${sizes[@]}"; do
  dir="$work/n$n"
  reuse=no
  if [ "${REUSE:-0}" = 1 ] && [ -s "$dir/gen.out" ] && [ -s "$dir/gen.summary" ] && [ -f "$dir/scenario.yaml" ]; then
    write_scenario "$n" "$dir/scenario.new.yaml" > /dev/null
    cmp -s "$dir/scenario.yaml" "$dir/scenario.new.yaml" && reuse=yes
  fi
  [ "$reuse" = yes ] || { rm -rf "$dir" && mkdir -p "$dir/outputs" "$dir/scratch"; }
  read -r steps expected_hosts < <(write_scenario "$n" "$dir/scenario.yaml")
  expected=$(echo "$expected_hosts" | tr ' ' '\n' | grep -v '^$' | sort | paste -sd,)
  # ~1,700 samples per node and step (1,024 nodes x 97 steps held 168 M); ~130 B of text per sample.
  samples_estimate=$((n * steps * 1700))
  gen_timeout=${GEN_TIMEOUT:-$(( samples_estimate / 50000 > 1800 ? samples_estimate / 50000 : 1800 ))}
  free_gb=$(df -P -BG "$work" | awk 'NR==2{sub("G","",$4); print $4}')
  echo "=== $n nodes, $steps steps: expected exclusions $expected; free disk ${free_gb} GiB"
  if [ "$free_gb" -lt "$min_free_gb" ]; then
    echo "skipped: ${free_gb} GiB free < MIN_FREE_GB=$min_free_gb"
    printf '%s\t%s\tSKIPPED (disk: %s GiB free)\n' "$n" "$steps" "$free_gb" >> "$results"; continue
  fi
  # Generation: one job, one worker; fixturegen's own line gives series, samples and TSDB size.
  # REUSE=1 keeps an earlier invocation's job of the same scenario (and its generation figures).
  if [ "$reuse" = yes ]; then
    read -r gen_s rc gen_time_rss gen_peaks < "$dir/gen.summary"
    echo "reusing the job generated earlier in $dir"
  else
  text_mb=""
  if [ "$encoder" = native ]; then
    scratch="$dir/scratch"   # unused: the native encoder stages nothing
    text_mb=0
  elif [ -n "${SCRATCH:-}" ]; then
    scratch=$(mktemp -d "$SCRATCH/scale-bench-n$n.XXXXXX")
  else
    batch_samples=$(( samples_estimate < 20000000 ? samples_estimate : 20000000 ))
    text_mb=$(( 2 * batch_samples * 130 / 1048576 ))
    shm_free_mb=$(df -P -BM /dev/shm 2>/dev/null | awk 'NR==2{sub("M","",$4); print $4}')
    avail_mb=$(awk '/^MemAvailable:/ {print int($2 / 1024)}' /proc/meminfo)
    scratch="$dir/scratch"
    if [ -n "$shm_free_mb" ] && [ "$shm_free_mb" -gt "$text_mb" ] && [ "$avail_mb" -gt $(( text_mb + shm_reserve_gb * 1024 )) ]; then
      [ -n "$shm_scratch" ] || shm_scratch=$(mktemp -d /dev/shm/scale-bench.XXXXXX)
      scratch="$shm_scratch/n$n"
    fi
  fi
  mkdir -p "$scratch"
  echo "generation scratch: $scratch (up to ~${text_mb:-?} MB of text), timeout ${gen_timeout} s"
  read -r gen_s rc gen_time_rss gen_peaks < <(TMPDIR="$scratch" MAX_RSS_KB=$((gen_max_rss_gb * 1048576)) python3 "$work/measure.py" "$dir/gen.time" "$dir/gen.out" \
    "$dir/gen.err" timeout "$gen_timeout" "$fixturegen" "$dir/scenario.yaml" --out "$dir/outputs" --jobs 1 \
    --scratch "$scratch" --encoder "$encoder")
  rm -rf "$scratch"
  echo "$gen_s $rc $gen_time_rss $gen_peaks" > "$dir/gen.summary"
  fi
  gen_rss=$(echo "$gen_peaks" | peak_of fixturegen)
  promtool_rss=$(echo "$gen_peaks" | peak_of promtool)
  cat "$dir/gen.out"
  if [ "$rc" != 0 ]; then
    why=$( [ "$rc" = 124 ] && echo "timeout after ${gen_timeout}s" || tail -c 400 "$dir/gen.err" | tr '\n\t' '  ')
    [ "$rc" = 137 ] && why="killed by SIGKILL (OOM killer?) $why"
    echo "generation FAILED (exit $rc after ${gen_s}s; peak RSS fixturegen $(mb "$gen_rss") MB, promtool $(mb "$promtool_rss") MB): $why"
    printf '%s\t%s\tGENERATION FAILED (exit %s after %.0f s): %s\n' "$n" "$steps" "$rc" "$gen_s" "$why" >> "$results"
    rm -rf "$dir/outputs" "$dir/scratch"; continue
  fi
  read -r series samples tsdb_mb < <(awk '{for(i=1;i<=NF;i++){if($(i+1)=="series")s=$i; if($(i+1)=="samples")p=$i; if($i=="tsdb")m=$(i+1)}} END{print s, p, m}' "$dir/gen.out")
  read -r gen_cpu gen_written_gb < <(awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} /File system outputs/ {o=$2}
    END {printf "%.1f %.2f\n", u + s, o * 512 / 1e9}' "$dir/gen.time")
  echo "generation: ${gen_s} s wall, ${gen_cpu} s CPU (fixturegen + promtool), ${gen_written_gb} GB written to disk," \
    "peak RSS fixturegen $(mb "$gen_rss") MB, promtool $(mb "$promtool_rss") MB, $(du -sh "$dir/outputs" | cut -f1) on disk;" \
    "load average $(cut -d' ' -f1-3 /proc/loadavg)"
  # Diagnose: RUNS measured runs.
  walls="" diags="" proms="" verdict_ok=yes against_walls="" job_hours="-"   # job_hours: RUNS=0 only generates
  for run in $(seq "$runs"); do
    if [ -n "$against_bin" ] && [ $((run % 2)) = 0 ]; then against_run "$run"; fi
    confine_begin "run$run"
    read -r wall code trss peaks < <(env "${confine_env[@]}" python3 "$work/measure.py" "$dir/run$run.time" "$dir/run$run.json" \
      "$dir/run$run.err" "$diagnose" 8308 --outputs "$dir/outputs" --format json "${diagnose_args[@]}")
    dhwm=$(echo "$peaks" | peak_of diagnose)
    phwm=$(echo "$peaks" | peak_of prometheus)
    read -r rc_cause rc_action rc_exclude dq tstate incomplete tt ts tp ne job_hours < <(report_fields "$dir/run$run.json")
    ok=no
    [ "$code" = 0 ] && [ "$rc_cause" = rdma-link-degradation ] && [ "$rc_action" = retry-excluding-nodes ] \
      && [ "$rc_exclude" = "$expected" ] && ok=yes
    [ "$ok" = yes ] || verdict_ok=no
    echo "run $run: ${wall}s exit $code, diagnose VmHWM $(mb "$dhwm") MB, prometheus VmHWM $(mb "$phwm") MB," \
      "time -v max RSS $(mb "$trss") MB; tsdb $tstate, incomplete $incomplete; timings triage $tt tsdb $ts" \
      "playbooks $tp; discovery queries $dq; not_evaluated $ne; data range ${job_hours} h; verdict $rc_cause / $rc_action / $rc_exclude ($ok)"
    confine_end
    if [ -s "$dir/run$run.err" ]; then sed 's/^/  stderr: /' "$dir/run$run.err" | head -5; fi
    walls+=" $wall" diags+=" $dhwm" proms+=" $phwm"
    if [ -n "$against_bin" ] && [ $((run % 2)) = 1 ]; then against_run "$run"; fi
  done
  if [ -n "$against_bin" ]; then
    echo "$n nodes: this build / against, ratio of median wall times: $(awk -v a="$(echo "$walls" | median)" \
      -v b="$(echo "$against_walls" | median)" 'BEGIN{printf "%.3f (%.3f s / %.3f s)", a/b, a, b}')"
    printf '%s\t%s\t%s\n' "$n" "$(echo "$walls" | median)" "$(echo "$against_walls" | median)" >> "$work/against.tsv"
  fi
  # One untimed run under strace: HTTP requests sent (GET/POST lines, /-/ready included) and bytes received.
  strace -f --seccomp-bpf -qq -e trace=sendto,recvfrom -e signal=none -yy -s 32 -o "$dir/strace.txt" \
    "$diagnose" 8308 --outputs "$dir/outputs" --format json "${diagnose_args[@]}" > "$dir/strace.json" 2>/dev/null || true
  queries=$(grep -c 'sendto(.*"\(GET\|POST\) /' "$dir/strace.txt" || true)
  http_mb=$(awk '/recvfrom\(.*TCP/ && $NF ~ /^[0-9]+$/ {s+=$NF} END{printf "%.2f", s/1048576}' "$dir/strace.txt")
  printf '%s\t%s\t%s\t%s\t%s\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$steps" "$series" "$samples" "$tsdb_mb" \
    "$gen_s" "$(echo "$walls" | median)" "$(mb "$(echo "$diags" | maxof)")" "$(mb "$(echo "$proms" | maxof)")" \
    "$queries" "$http_mb" "$verdict_ok" "$(mb "$gen_rss")" "$job_hours" "$(mb "$promtool_rss")" "$gen_cpu" "$gen_written_gb" >> "$results"
  rm -rf "$dir/scratch"
  if [ "$clean" = 1 ]; then rm -rf "$dir/outputs"; fi
done

# --- table and fits --------------------------------------------------------------------------------
echo
echo "| nodes | hours | series | samples | TSDB MB | generation s | diagnose wall s (median of $runs) | diagnose RSS MB | prometheus RSS MB | queries | HTTP MB | verdict ok |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:--|"
sort -t$'\t' -k1,1n "$results" | awk -F'\t' '{h=(NF >= 14 && $14 != "-") ? $14 : sprintf("~%.1f", $2*14176/380/3600)
  if (NF < 13) printf "| %s | %s | %s | | | | | | | | | |\n", $1, h, $3
  else printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, h, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12}'
echo "(hours: the TSDB's data range from the report; diagnose/prometheus RSS: max VmHWM over the runs;"
echo " queries/HTTP MB: one strace'd run, requests sent incl. /-/ready and bytes received on the wire, uncompressed on loopback since e2c9241)"
echo
echo "| nodes | steps | generation CPU s | written to disk GB | fixturegen peak RSS MB | promtool peak RSS MB |"
echo "|---:|---:|---:|---:|---:|---:|"
sort -t$'\t' -k1,1n "$results" | awk -F'\t' 'NF >= 15 {printf "| %s | %s | %s | %s | %s | %s |\n", $1, $2, $16, $17, $13, $15}'
awk -F'\t' 'NF < 13 {printf "nodes %s (%s steps): %s\n", $1, $2, $3}' "$results"
echo
fit() {  # column label: least squares of log(col) on log(nodes) over the measured rows
  awk -F'\t' -v c="$1" -v label="$2" 'NF >= 13 && $c > 0 {x=log($1); y=log($c); n++; sx+=x; sy+=y; sxx+=x*x; sxy+=x*y}
    END{ if (n < 2) { printf "%s: fewer than 2 measured sizes\n", label; exit }
         b=(n*sxy-sx*sy)/(n*sxx-sx*sx); a=(sy-b*sx)/n
         printf "%s ~ nodes^%.2f (%d sizes, a=%.3f)\n", label, b, n, exp(a) }' "$results"
}
fit 7 "diagnose wall time"
fit 8 "diagnose RSS"
fit 9 "prometheus RSS"
fit 6 "generation time"
if [ -s "$work/against.tsv" ]; then
  echo
  echo "| nodes | this build wall s | against wall s | ratio |"
  echo "|---:|---:|---:|---:|"
  sort -t$'\t' -k1,1n "$work/against.tsv" | awk -F'\t' '{printf "| %s | %s | %s | %.3f |\n", $1, $2, $3, $2/$3}'
fi
