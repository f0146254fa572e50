#!/usr/bin/env python3
"""Regenerates every fixture job's JSON report with a diagnose binary and compares it with a
baseline directory of <id>.json (made the same way by another build: `diagnose <id> --outputs
fixtures/outputs --format json` for every fixtures/outputs/<id>*.log), ignoring wall-clock fields
(`timings`, `elapsed_seconds`). A refactoring that must not change behaviour shows 'identical N/N'.

    python3 scripts/compare-reports.py BINARY BASELINE_DIR [REPO]

BASELINE_ROOT, when set, is the checkout the baseline was made in: its absolute paths are read
as REPO's. run_window.end from a log's mtime moves with the fixtures' generation (a
second either way): compare two binaries on the same generated fixtures for an exact answer."""
import difflib
import json
import os
import re
import subprocess
import sys

binary, baseline = sys.argv[1], sys.argv[2]
TIMING_KEYS = {"timings", "elapsed_seconds"}   # wall-clock measurements, different on every run
BASELINE_ROOT = os.environ.get("BASELINE_ROOT", "")
repo = sys.argv[3] if len(sys.argv) > 3 else os.getcwd()
outputs = os.path.join(repo, "fixtures", "outputs")

def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k not in TIMING_KEYS}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x

ids = sorted({re.match(r"(\d+)", f).group(1) for f in os.listdir(outputs) if f.endswith(".log") and re.match(r"\d+", f)})
same, differ, missing = [], [], []
for jid in ids:
    base_path = os.path.join(baseline, jid + ".json")
    if not os.path.exists(base_path):
        missing.append(jid); continue
    run = subprocess.run([binary, jid, "--outputs", "fixtures/outputs", "--format", "json"], cwd=repo,
                         capture_output=True, text=True)
    try:
        new = strip(json.loads(run.stdout))
    except json.JSONDecodeError:
        differ.append((jid, f"not JSON (exit {run.returncode}): {run.stderr[:200]}")); continue
    with open(base_path) as f:
        # The baseline was made in another checkout: its absolute paths name that checkout.
        text = f.read()
        if BASELINE_ROOT:
            text = text.replace(BASELINE_ROOT.rstrip("/") + "/", os.path.abspath(repo) + "/")
        old = strip(json.loads(text))
    if new == old:
        same.append(jid)
    else:
        a = json.dumps(old, indent=1, sort_keys=True).splitlines()
        b = json.dumps(new, indent=1, sort_keys=True).splitlines()
        differ.append((jid, "\n".join(list(difflib.unified_diff(a, b, lineterm="", n=1))[:30])))
print(f"identical {len(same)}/{len(ids)}; differ {len(differ)}; no baseline {len(missing)} {missing}")
for jid, why in differ:
    print(f"--- {jid}\n{why}")
sys.exit(1 if differ else 0)
