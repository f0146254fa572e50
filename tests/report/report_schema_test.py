#!/usr/bin/env python3
"""Validate diagnose/v1 reports against docs/report.schema.json.

usage: report_schema_test.py --schema SCHEMA (--diagnose BIN --outputs DIR | REPORT.json...)

With --diagnose, runs `BIN LOG --format json` for every job log of DIR
(plus one --baseline comparison, whose report carries two jobs) and validates each report; without
it, validates the given files. Before trusting the schema it checks that it rejects a report with an
action outside the vocabulary and one without a verdict, so a schema that accepts everything fails.

Prints one line per invalid report (job or file, JSON path and message of its first error). Exits 1
when any report is invalid or missing, 2 on a usage error, an invalid schema or no python3-jsonschema
(Debian: python3-jsonschema, which scripts/install-deps.sh installs), 0 when all validate. Uses only
what jsonschema 4.10 provides; the schema is draft-07.
"""
import argparse
import concurrent.futures
import copy
import json
import os
import subprocess
import sys

try:
    import jsonschema
except ImportError:
    print("report_schema_test.py: python3 module jsonschema not found (Debian: python3-jsonschema)",
          file=sys.stderr)
    sys.exit(2)

# `diagnose` exits 3 with a complete report on stdout when metrics it needed were unreadable
# (docs/contract.md, exit codes); every other non-zero status carries no report.
REPORT_EXIT_CODES = (0, 3)


def json_path(error):
    path = "$"
    for part in error.absolute_path:
        path += "[%d]" % part if isinstance(part, int) else "." + str(part)
    return path


def first_error(validator, report):
    errors = sorted(validator.iter_errors(report), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    more = " (%d more)" % (len(errors) - 1) if len(errors) > 1 else ""
    return "%s: %s%s" % (json_path(errors[0]), errors[0].message, more)


def load_validator(schema_path):
    with open(schema_path, encoding="utf-8") as f:
        schema = json.load(f)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def schema_rejects_broken_reports(validator, report):
    """The schema must say no to what a sweep driver could not act on."""
    bad_action = copy.deepcopy(report)
    bad_action["decision"]["action"] = "reboot-the-cluster"
    no_verdict = copy.deepcopy(report)
    del no_verdict["verdict"]
    problems = []
    if first_error(validator, bad_action) is None:
        problems.append("accepts decision.action 'reboot-the-cluster'")
    if first_error(validator, no_verdict) is None:
        problems.append("accepts a report without a verdict")
    return problems


def fixture_logs(outputs):
    """Every job log of DIR, by path: a job id need not be a number (`k8s-20260301-101500-a3f9`)."""
    return sorted(os.path.join(outputs, n) for n in os.listdir(outputs) if n.endswith(".log"))


def run_diagnose(binary, args):
    proc = subprocess.run([binary] + args + ["--format", "json"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    label = " ".join(os.path.basename(a) for a in args)
    if proc.returncode not in REPORT_EXIT_CODES:
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        return label, None, "exit %d, no report: %s" % (proc.returncode, tail[0])
    try:
        return label, json.loads(proc.stdout), None
    except ValueError as e:
        return label, None, "stdout is not one JSON document: %s" % e


def generated_reports(binary, outputs, parallel):
    runs = [[log] for log in fixture_logs(outputs)]
    # A --baseline comparison is the only report with two jobs[]; take the first pair the directory
    # offers (any two jobs make a valid comparison for the shape of the report).
    if len(runs) >= 2:
        runs.append([runs[-1][0], "--baseline", runs[-2][0]])
    with concurrent.futures.ThreadPoolExecutor(max_workers=parallel) as pool:
        return list(pool.map(lambda a: run_diagnose(binary, a), runs))


def file_reports(paths):
    out = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                out.append((path, json.load(f), None))
        except (OSError, ValueError) as e:
            out.append((path, None, "cannot read a JSON document: %s" % e))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--schema", required=True)
    parser.add_argument("--diagnose")
    parser.add_argument("--outputs")
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("reports", nargs="*")
    args = parser.parse_args()
    if bool(args.diagnose) != bool(args.outputs) or bool(args.diagnose) == bool(args.reports):
        parser.print_usage(sys.stderr)
        return 2
    try:
        validator = load_validator(args.schema)
    except (OSError, ValueError, jsonschema.exceptions.SchemaError) as e:
        print("%s: invalid schema: %s" % (args.schema, e), file=sys.stderr)
        return 2

    reports = (generated_reports(args.diagnose, args.outputs, args.parallel) if args.diagnose
               else file_reports(args.reports))
    if not reports:
        print("%s: no job with a log to diagnose" % args.outputs, file=sys.stderr)
        return 1
    failed = 0
    checked_schema = False
    for label, report, problem in reports:
        if problem is None:
            problem = first_error(validator, report)
        if problem is None and not checked_schema:
            checked_schema = True
            for p in schema_rejects_broken_reports(validator, report):
                print("%s: the schema %s" % (args.schema, p))
                failed += 1
        if problem is not None:
            print("%s: %s" % (label, problem))
            failed += 1
    print("%d of %d reports valid against %s" % (len(reports) - failed, len(reports), args.schema),
          file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
