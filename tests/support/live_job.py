#!/usr/bin/env python3
"""A generated job replayed as if it were running now (tests/cli/live_job_cli_test.cc).

Serves the job's series (fixturegen --series-out: one JSON line per series, VictoriaMetrics import
format) as the launcher's exporters would: one scrape target per (Prometheus job, instance), each
answering with every series of that target at its latest sample not after the wall clock. A target
answers 503 before its first sample and after its last (a node that is gone). The series' own `job`
and `instance` labels are left out: Prometheus sets them from the target, as on a real cluster.

It also writes the job's logs as the job would have (the job log and every file of the job dir with
step lines, e.g. the Ray worker logs): the lines up to `completed step: K` once the `tb_step` series
reached K, the rest after the last step. The job dir's other files are copied at start. Standard library only; the port it listens on is written to --port-file.
"""
import argparse
import bisect
import http.server
import json
import os
import re
import socketserver
import sys
import threading
import time

STEP_LINE = re.compile(rb"completed step: (\d+)")
FROM_PROMETHEUS = {"up", "scrape_duration_seconds", "scrape_samples_scraped", "scrape_series_added",
                   "scrape_samples_post_metric_relabeling"}


def label_text(labels):
    def escape(v):
        return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
    inner = ",".join('%s="%s"' % (k, escape(v)) for k, v in sorted(labels.items()))
    return "{" + inner + "}" if inner else ""


class Targets:
    """(job, instance) -> list of (name, labels text, timestamps in s, values)."""

    def __init__(self, path):
        self.by_target = {}
        with open(path, "rb") as f:
            for line in f:
                d = json.loads(line)
                metric = dict(d["metric"])
                name = metric.pop("__name__")
                if name in FROM_PROMETHEUS:
                    continue
                key = (metric.pop("job", ""), metric.pop("instance", ""))
                times = [t / 1000.0 for t in d["timestamps"]]
                self.by_target.setdefault(key, []).append((name, label_text(metric), times, d["values"]))

    def page(self, job, instance, now):
        series = self.by_target.get((job, instance))
        if not series:
            return None
        first = min(s[2][0] for s in series)
        last = max(s[2][-1] for s in series)
        if now < first or now > last + 30:
            return None
        out = []
        for name, labels, times, values in series:
            i = bisect.bisect_right(times, now) - 1
            if i < 0 or now - times[i] > 30:   # not yet, or this series ended
                continue
            out.append("%s%s %r\n" % (name, labels, float(values[i])))
        return "".join(out)


def step_times(targets):
    """Step -> the first time the job's tb_step series reached it."""
    times = {}
    for series in targets.by_target.values():
        for name, _labels, ts, values in series:
            if name != "tb_step":
                continue
            for t, v in zip(ts, values):
                times.setdefault(int(v), t)
    return times


def line_due_times(lines, steps):
    """When each line is written: a step line when tb_step reached its step, the lines after it with
    it, the lines before the first step at once, the lines after the last step once the job ends."""
    last = max(steps.values()) if steps else 0
    last_step_line = max((i for i, l in enumerate(lines) if STEP_LINE.search(l)), default=-1)
    due, out = 0.0, []
    for i, line in enumerate(lines):
        m = STEP_LINE.search(line)
        if m:
            due = steps.get(int(m.group(1)), due)
        elif 0 <= last_step_line < i:
            due = last + 5
        out.append(due)
    return out


def replay_log(source, dest, steps, stop):
    """Writes `source` into `dest` line by line as the job reaches each step (at once when it has
    no step line)."""
    with open(source, "rb") as f:
        lines = f.readlines()
    dues = line_due_times(lines, steps) if any(STEP_LINE.search(l) for l in lines) else [0.0] * len(lines)
    with open(dest, "ab", buffering=0) as out:
        for line, due in zip(lines, dues):
            while due > time.time():
                if stop.wait(min(0.2, due - time.time())):
                    return
            out.write(line)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--series", required=True)
    p.add_argument("--job-dir", required=True, help="the generated job dir (its log beside it: <dir>.log)")
    p.add_argument("--outputs", required=True, help="the live outputs dir the job is replayed into")
    p.add_argument("--port-file", required=True)
    args = p.parse_args()

    targets = Targets(args.series)
    steps = step_times(targets)
    name = os.path.basename(os.path.normpath(args.job_dir))
    stop = threading.Event()
    # The job log beside its dir, and every file inside it: a file with step lines (the job log, the
    # Ray worker logs) grows as the job reaches each step; the rest is there from the start.
    sources = [(args.job_dir.rstrip("/") + ".log", os.path.join(args.outputs, name + ".log"))]
    for root, dirs, files in os.walk(args.job_dir):
        rel = os.path.relpath(root, args.job_dir)
        dest_root = os.path.normpath(os.path.join(args.outputs, name, rel))
        os.makedirs(dest_root, exist_ok=True)
        for d in dirs:
            if os.path.islink(os.path.join(root, d)):
                os.symlink(os.readlink(os.path.join(root, d)), os.path.join(dest_root, d))
        for f in files:
            src, dest = os.path.join(root, f), os.path.join(dest_root, f)
            if os.path.islink(src):
                os.symlink(os.readlink(src), dest)
            else:
                sources.append((src, dest))
    for src, dest in sources:
        threading.Thread(target=replay_log, args=(src, dest, steps, stop), daemon=True).start()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            # /metrics/<job>/<instance>
            parts = self.path.split("/")
            page = targets.page(parts[2], parts[3], time.time()) if len(parts) == 4 and parts[1] == "metrics" else None
            if page is None:
                self.send_error(503, "no such target now")
                return
            body = page.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True

    server = Server(("127.0.0.1", 0), Handler)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % server.server_address[1])
    os.rename(tmp, args.port_file)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        stop.set()


if __name__ == "__main__":
    sys.exit(main())
