#!/usr/bin/env python3
"""Fails when a test used more than a third of its time limit on this run (issue 39).

A test that needs most of its limit on an idle machine times out on a busy one; this check makes
the margin visible on every CI run instead of letting it erode until the suite turns red at random.

  scripts/check-test-times.py --build build --junit build/ctest-junit.xml [--default-timeout 600]
                              [--max-ratio 0.3334] [--slow-list tests/slow-tests.txt]

Reads each test's TIMEOUT from `ctest --show-only=json-v1` (tests without one get --default-timeout,
the --timeout that scripts/test.sh gives ctest) and its time from ctest's JUnit file. Prints the
worst ratios, exits 1 naming every test over --max-ratio with both numbers. Tests listed as slow in
--slow-list are what `scripts/test.sh --quick` leaves out; a test not listed that took longer than
--quick-budget seconds is named as a warning, so the quick subset does not grow slow unnoticed.
"""
import argparse
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET


def timeouts(build, default):
    out = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"], check=True,
                         capture_output=True, text=True).stdout
    limits = {}
    for test in json.loads(out).get("tests", []):
        limit = default
        for prop in test.get("properties", []):
            if prop.get("name") == "TIMEOUT":
                limit = float(prop["value"])
        limits[test["name"]] = limit
    return limits


def times(junit):
    measured = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        status = case.get("status", "")
        if status in ("notrun", "disabled") or case.find("skipped") is not None:
            continue
        measured[case.get("name")] = float(case.get("time", "0"))
    return measured


def slow_patterns(path):
    if not path:
        return []
    patterns = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                patterns.append(re.compile(line))
    return patterns


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--junit", required=True, nargs="+", help="the JUnit files of one tree's ctest runs")
    ap.add_argument("--default-timeout", type=float, default=600)
    ap.add_argument("--max-ratio", type=float, default=1 / 3)
    ap.add_argument("--slow-list", default="")
    ap.add_argument("--quick-budget", type=float, default=20)
    ap.add_argument("--show", type=int, default=5, help="how many of the worst ratios to print")
    ap.add_argument("--warn-only", action="store_true",
                    help="name the tests over --max-ratio but exit 0 (the sanitized tree: another build type)")
    args = ap.parse_args()

    limits = timeouts(args.build, args.default_timeout)
    # Only the tests this build defines: a JUnit file left from an older build may name others.
    measured = {name: t for junit in args.junit for name, t in times(junit).items() if name in limits}
    if not measured:
        print(f"check-test-times: no test times in {' '.join(args.junit)}", file=sys.stderr)
        return 2
    rows = sorted(((t / limits[name], name, t, limits[name]) for name, t in measured.items()), reverse=True)
    print(f"check-test-times: {len(rows)} tests; worst time / timeout ratios (limit {args.max_ratio:.2f}):")
    for ratio, name, t, limit in rows[:args.show]:
        print(f"  {ratio:5.2f}  {t:7.1f} s of {limit:5.0f} s  {name}")
    over = [r for r in rows if r[0] > args.max_ratio]
    verdict = "warning" if args.warn_only else "FAIL"
    for ratio, name, t, limit in over:
        print(f"check-test-times: {verdict} {name}: {t:.1f} s is {ratio:.2f} of its {limit:.0f} s timeout "
              f"(more than {args.max_ratio:.2f}); shard it or raise its TIMEOUT", file=sys.stderr)
    patterns = slow_patterns(args.slow_list)
    if patterns:
        for name, t in sorted(measured.items(), key=lambda kv: -kv[1]):
            if t > args.quick_budget and not any(p.search(name) for p in patterns):
                print(f"check-test-times: warning: {name} took {t:.1f} s but is not in {args.slow_list}, "
                      f"so `scripts/test.sh --quick` runs it", file=sys.stderr)
    return 1 if over and not args.warn_only else 0


if __name__ == "__main__":
    sys.exit(main())
