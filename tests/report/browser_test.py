#!/usr/bin/env python3
"""Browser test of diagnose's HTML reports (issue 13) in headless Chromium, Python standard library only.

For each case it runs the real binary twice (--format html and --format json) on the fixture
outputs, writes both into a temporary directory, opens the HTML in headless Chromium through
chromedriver's W3C HTTP API and checks:
  (a) the browser log has no SEVERE entry (console errors, CSP violations, blocked loads);
  (b) the performance log has no request other than file: and data: URLs (no network);
  (c) the DOM follows the report's chart contract, with expectations derived from the JSON report
      (fired findings, exclusions, phases, checkpoints, hosts, jobs), never from hard-coded hosts;
  (d) a full-page PNG screenshot is kept in the artifacts directory.
Every problem is one line starting with FAIL; the exit status is 0 when there is none, 1 otherwise,
77 when chromium or chromedriver is missing (ctest SKIP_RETURN_CODE) and 2 on a usage error.

  tests/report/browser_test.py --diagnose build/diagnose --outputs fixtures/outputs
  tests/report/browser_test.py --html DIR/8308.html ...   (a pre-rendered file; DIR/8308.json beside it)
"""

import argparse
import base64
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

SKIP = 77
# name, diagnose arguments. The name is also the screenshot's and the temp files' stem.
CASES = [
    ("8308", ["8308"]),
    ("8043", ["8043"]),
    ("7938", ["7938"]),
    ("7882-baseline-7879", ["7882", "--baseline", "7879"]),
    ("8104", ["8104"]),   # a job with a profiler window: per-GPU stacked bars and the kernel-family table
]
CHROME_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,2400",
               "--disable-dev-shm-usage"]
WINDOW = (1400, 2400)
MAX_SCREENSHOT_HEIGHT = 16000     # Chromium's largest window is about 16k px
HEATMAP_MIN_HOSTS = 16


class DriverError(Exception):
    pass


class ChromeDriver:
    """One chromedriver child process (its own process group, so its browsers die with it)."""

    def __init__(self, chromedriver, chromium, workdir):
        self.chromium = chromium
        self.proc = None
        self.session = None
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        sock.close()
        self.chromedriver = chromedriver
        self.workdir = workdir
        self.log_path = Path(workdir) / "chromedriver.log"

    def start(self):
        env = dict(os.environ, TMPDIR=str(self.workdir))   # its profile dirs go where we clean up
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen([self.chromedriver, f"--port={self.port}"], stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT, env=env,
                                         start_new_session=True)
        deadline = time.monotonic() + 30
        while True:
            try:
                if self._call("GET", "/status", timeout=2).get("ready"):
                    break
            except (OSError, DriverError):
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise DriverError(f"chromedriver did not start on port {self.port}: {self._log_tail()}")
            time.sleep(0.1)

    def _log_tail(self):
        try:
            return " | ".join(self.log_path.read_text(errors="replace").strip().splitlines()[-5:])
        except OSError:
            return "(no chromedriver log)"

    def _call(self, method, path, body=None, timeout=120):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                payload = json.load(resp)
        except urllib.error.HTTPError as e:
            try:
                value = json.load(e).get("value", {})
                detail = f"{value.get('error')}: {str(value.get('message', '')).splitlines()[0]}"
            except (ValueError, AttributeError, IndexError):
                detail = str(e)
            raise DriverError(f"{method} {path}: {detail}") from None
        return payload.get("value")

    def start_session(self):
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": self.chromium, "args": CHROME_ARGS},
            "goog:loggingPrefs": {"browser": "ALL", "performance": "ALL"},
        }}}
        self.session = self._call("POST", "/session", caps)["sessionId"]
        self.cmd("POST", "/timeouts", {"pageLoad": 60000, "script": 30000})

    def cmd(self, method, path, body=None):
        return self._call(method, f"/session/{self.session}{path}", body)

    def log(self, kind):
        return self.cmd("POST", "/se/log", {"type": kind}) or []

    def execute(self, script, *args):
        return self.cmd("POST", "/execute/sync", {"script": script, "args": list(args)})

    def full_screenshot(self, path):
        """The whole page: the window is grown to the document's height, shot, and restored."""
        height, chrome = self.execute(
            "return [document.documentElement.scrollHeight, window.outerHeight - window.innerHeight]")
        want = min(max(WINDOW[1], height + chrome), MAX_SCREENSHOT_HEIGHT)
        if want != WINDOW[1]:
            self.cmd("POST", "/window/rect", {"width": WINDOW[0], "height": want})
        try:
            png = base64.b64decode(self.cmd("GET", "/screenshot"))
        finally:
            if want != WINDOW[1]:
                self.cmd("POST", "/window/rect", {"width": WINDOW[0], "height": WINDOW[1]})
        Path(path).write_bytes(png)
        return height + chrome > MAX_SCREENSHOT_HEIGHT

    def close(self):
        if self.session:
            try:
                self._call("DELETE", f"/session/{self.session}", timeout=15)
            except (OSError, DriverError):
                pass
            self.session = None
        if self.proc and self.proc.poll() is None:
            for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
                try:
                    os.killpg(self.proc.pid, sig)   # the group this script created: driver + browsers
                except ProcessLookupError:
                    break
                try:
                    self.proc.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if self.proc:
            try:   # browsers left in the group after the driver exited
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


# Everything the contract names, gathered in one pass; Python judges it against the JSON report.
COLLECT_JS = r"""
const all = (sel, root) => Array.from((root || document).querySelectorAll(sel));
const external = /^\s*(https?:)?\/\//i;
const out = {};
out.csp = all('meta').filter(m => (m.getAttribute('http-equiv') || '').toLowerCase() === 'content-security-policy')
  .map(m => ({content: m.getAttribute('content') || '', inHead: document.head.contains(m)}));
out.scriptSrc = all('script[src]').map(e => e.getAttribute('src'));
out.externalRefs = [];
for (const e of all('*')) {
  if (e.localName === 'a') continue;   // a link is a navigation, not a load
  for (const a of ['src', 'href', 'xlink:href', 'srcset', 'poster', 'data', 'action']) {
    const v = e.getAttribute(a);
    if (v && external.test(v)) out.externalRefs.push(`<${e.localName} ${a}="${v}">`);
  }
}
out.promql = all('pre.promql').map(e => e.textContent);
out.graphLinks = all('a.graph-link').map(e => e.getAttribute('href') || '');
out.blamedHosts = all('[data-blamed-host]').map(e => e.getAttribute('data-blamed-host'));
out.families = all('table.kernel-families tr[data-family]').map(r => r.getAttribute('data-family'));
out.horizontalOverflow = document.documentElement.scrollWidth - document.documentElement.clientWidth;
out.charts = all('figure.chart').map((f, i) => {
  const svg = f.querySelector('svg');
  const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
  const inSvg = sel => svg ? all(sel, svg) : [];
  return {
    index: i,
    chart: f.getAttribute('data-chart'),
    finding: f.getAttribute('data-finding'),
    svg: !!svg, width: box.width, height: box.height,
    tgsLines: inSvg('path.tgs-line').length,
    phases: inSvg('rect.phase').length,
    checkpoints: inSvg('line.checkpoint').length,
    onsets: inSvg('line.onset').length,
    blamed: inSvg('path.series.blamed').map(p => p.getAttribute('data-host')),
    series: inSvg('path.series').length,
    bands: inSvg('path.band').length,
    medians: inSvg('path.median').length,
    jobs: inSvg('path.series[data-job]').map(p => p.getAttribute('data-job')),
    cells: inSvg('rect.cell').length,
    blamedRows: all('[data-blamed-host]', f).map(e => e.getAttribute('data-blamed-host')),
    bars: inSvg('g.bar').map(g => ({
      gpu: g.getAttribute('data-gpu'), file: g.getAttribute('data-file'),
      parts: all('rect.bar-part', g).map(r => ({part: r.getAttribute('data-part'),
        seconds: parseFloat(r.getAttribute('data-seconds')), drawn: r.getBoundingClientRect().width})),
    })),
    badPaths: inSvg('path').filter(p => {
      const d = p.getAttribute('d') || '';
      return !/\d/.test(d) || /NaN|Infinity|undefined|null/.test(d);
    }).map(p => `path.${(p.getAttribute('class') || '').trim().replace(/\s+/g, '.')}` +
                (p.getAttribute('data-host') ? `[data-host=${p.getAttribute('data-host')}]` : '') +
                ` d="${(p.getAttribute('d') || '').slice(0, 40)}"`),
  };
});
return out;
"""


def norm(text):
    return " ".join(str(text).split())


def subject_job(report):
    jobs = report.get("jobs") or []
    for job in jobs:
        if job.get("role", "subject") == "subject":
            return job
    return jobs[0] if jobs else {}


def host_of(key):
    """"host/device" -> "host", as the report keys per-device values."""
    return str(key).split("/")[0]


def hosts_in(evidence):
    """The hosts a PromQL evidence's per-host value names."""
    value = evidence.get("value")
    return [host_of(k) for k in value] if isinstance(value, dict) else []


def is_range(evidence):
    w = evidence.get("window")
    return (evidence.get("kind") == "promql" and isinstance(w, dict)
            and (w.get("end") or 0) > (w.get("start") or 0))


def check_dom(name, dom, report):
    """The chart contract (issue 13) against what the JSON report says the HTML must show."""
    fails = []

    def fail(check, detail):
        fails.append(f"{check}: {detail}")

    # Self-contained: a CSP that forbids everything by default, and nothing fetched from outside.
    csp = [c for c in dom["csp"] if re.search(r"default-src\s+'none'", c["content"])]
    if not csp:
        fail("csp", "no <meta http-equiv=\"Content-Security-Policy\"> with default-src 'none'"
             + (f" (found: {[c['content'] for c in dom['csp']]})" if dom["csp"] else ""))
    elif not any(c["inHead"] for c in csp):
        fail("csp", "the Content-Security-Policy <meta> is not in <head>, so the browser ignores it")
    for src in dom["scriptSrc"]:
        fail("no-script-src", f"<script src=\"{src}\">")
    for ref in dom["externalRefs"]:
        fail("no-external-ref", ref)

    charts = dom["charts"]
    for c in charts:
        label = f"figure.chart#{c['index']}[data-chart={c['chart']}" + (
            f"][data-finding={c['finding']}]" if c["finding"] else "]")
        if not c["svg"]:
            fail("chart-svg", f"{label} has no <svg>")
        elif c["width"] < 50 or c["height"] < 30:
            fail("chart-size", f"{label} svg is drawn {c['width']:.0f}x{c['height']:.0f} px")
        for p in c["badPaths"]:
            fail("chart-path", f"{label} has an empty or non-numeric {p}")

    def of(kind):
        return [c for c in charts if c["chart"] == kind]

    jobs = report.get("jobs") or []
    subject = subject_job(report)
    facts = (report.get("facts") or {}).get(subject.get("id", ""), {}) or {}
    phases = len(((facts.get("tgs") or {}).get("phases")) or [])
    checkpoints = facts.get("checkpoint_saves") or []
    steps = facts.get("steps") or []
    fired = [f for f in report.get("findings") or [] if f.get("status") == "fired"]
    # Where TGS left its healthy level, as triage found it (a drop, or a material dip): the TGS chart's
    # red line, and only then (another finding's onset on a steady line would read as a slowdown).
    onset = []
    tgs_facts = facts.get("tgs") or {}
    if isinstance(tgs_facts.get("degradation_onset_step"), (int, float)):
        onset.append(f"facts.tgs.degradation_onset_step {tgs_facts['degradation_onset_step']}")
    if tgs_facts.get("dips"):
        onset.append(f"facts.tgs.dips from step {tgs_facts['dips'][0].get('first_step')}")

    # TGS timeline over steps, phases shaded, checkpoints marked, the onset drawn.
    if len(steps) >= 2 or (subject.get("steps") or {}).get("last"):
        tgs = of("tgs")
        if not tgs:
            fail("tgs-chart", f"no figure.chart[data-chart=tgs] ({len(steps)} steps in the log)")
        for c in tgs:
            if c["tgsLines"] < 1:
                fail("tgs-line", "figure.chart[data-chart=tgs] svg has no path.tgs-line")
        if tgs:
            best = max(tgs, key=lambda c: (c["phases"], c["checkpoints"], c["onsets"]))
            if phases > 1 and best["phases"] < phases:
                fail("tgs-phases", f"{phases} TGS phases in facts.tgs.phases, {best['phases']} rect.phase "
                                   "in the TGS chart")
            if checkpoints and best["checkpoints"] < 1:
                fail("tgs-checkpoints", f"{len(checkpoints)} checkpoint saves (facts.checkpoint_saves), "
                                        "no line.checkpoint in the TGS chart")
            if onset and best["onsets"] < 1:
                fail("tgs-onset", f"onset known ({'; '.join(onset)}), no line.onset in the TGS chart")
            if not onset and max(c["onsets"] for c in tgs) > 0:
                fail("tgs-onset", "a line.onset in the TGS chart, but triage found no drop and no material dip")

    # A chart per fired finding with PromQL range evidence (series; or baseline for a query asked of
    # both jobs), its blamed hosts highlighted over a band of the rest, the phases shaded.
    job_hosts = set(subject.get("hosts") or [])
    with_range = [f for f in fired if any(is_range(e) for e in f.get("evidence") or [])]

    def ranges(f):
        return [e for e in f.get("evidence") or [] if is_range(e) and e.get("role", "subject") == "subject"]

    def charts_of(fid, kinds=("series", "baseline")):
        # data-finding may list several ids (one chart of a query that several findings share).
        return [c for c in charts if c["chart"] in kinds and fid in (c["finding"] or "").split()]

    for f in with_range:
        mine = charts_of(f["id"])
        if not mine:
            queries = {norm(e["query"]) for e in f.get("evidence") or [] if is_range(e)}
            sharing = [g["id"] for g in with_range if g is not f and charts_of(g["id"])
                       and queries & {norm(e["query"]) for e in g.get("evidence") or [] if is_range(e)}]
            fail("series-chart", f"no figure.chart[data-chart=series|baseline][data-finding~=\"{f['id']}\"] for this fired "
                                 "finding with PromQL range evidence" +
                                 (f" (its range queries are shared with {', '.join(sharing)}, charted there)"
                                  if sharing else ""))
            continue
        series = [c for c in mine if c["chart"] == "series"]
        expected = {host_of(h) for h in f.get("hosts") or []}
        if series and expected and not job_hosts <= expected:   # blaming every host highlights none
            missing = expected - {h for c in series for h in c["blamed"]}
            if missing:
                fail("series-blamed", f"{f['id']}: blamed host(s) {sorted(missing)} have no "
                                      "path.series.blamed[data-host] in its series charts")
        # A band is owed when every range query of the finding returned hosts it does not blame.
        rest = [set(hosts_in(e)) - expected for e in ranges(f)]
        if series and rest and all(rest) and not any(c["bands"] and c["medians"] for c in series):
            fail("series-band", f"{f['id']}: its range queries return unblamed hosts "
                                f"({len(set().union(*rest))}) but no series chart has path.band + path.median")
        if series and phases > 1 and not any(c["phases"] for c in series):
            fail("series-phases", f"{f['id']}: {phases} TGS phases, no rect.phase in its series chart")
    hosts_of = {f["id"]: {host_of(h) for h in f.get("hosts") or []} for f in fired}
    excluded = {x.get("host") for x in (report.get("decision") or {}).get("exclude") or []}
    for c in of("series"):
        ids = (c["finding"] or "").split()
        if not ids:
            fail("series-chart", f"figure.chart#{c['index']}[data-chart=series] has no data-finding")
            continue
        unknown = [i for i in ids if i not in hosts_of]
        if unknown:
            fail("series-chart", f"figure.chart#{c['index']}[data-chart=series] names {unknown}, not fired findings")
        # A finding that names no host may highlight the job's exclusions instead.
        allowed = set().union(*(hosts_of.get(i, set()) for i in ids)) or excluded
        extra = set(c["blamed"]) - allowed
        if extra:
            fail("series-blamed", f"figure.chart#{c['index']}[data-finding={c['finding']}] highlights "
                                  f"{sorted(extra)}, which its finding(s) do not blame")

    # Both jobs on one axis for --baseline.
    if len(jobs) >= 2:
        ids = [j.get("id") for j in jobs]
        base = of("baseline")
        if not base:
            fail("baseline-chart", f"{len(jobs)} jobs ({', '.join(ids)}) but no figure.chart[data-chart=baseline]")
        elif not any(set(ids) <= set(c["jobs"]) for c in base):
            fail("baseline-series", f"expected path.series[data-job] for {ids}, found "
                                    f"{[c['jobs'] for c in base]}")

    # A host x time heatmap when the job has many hosts with per-host series in a fired finding.
    wide = [f["id"] for f in with_range if any(len(set(hosts_in(e))) >= HEATMAP_MIN_HOSTS for e in ranges(f))]
    if len(job_hosts) >= HEATMAP_MIN_HOSTS and wide:
        heat = of("heatmap")
        if not heat:
            fail("heatmap", f"{len(job_hosts)} hosts, per-host range series of >= {HEATMAP_MIN_HOSTS} hosts in "
                            f"{', '.join(wide[:3])}, but no figure.chart[data-chart=heatmap]")
        elif not any(c["cells"] for c in heat):
            fail("heatmap-cells", "figure.chart[data-chart=heatmap] has no rect.cell")

    # Every PromQL query of a fired finding is in a pre.promql; graph links only to a live endpoint.
    shown = {norm(t) for t in dom["promql"]}
    for f in fired:
        for e in f.get("evidence") or []:
            if e.get("kind") == "promql" and e.get("query") and norm(e["query"]) not in shown:
                fail("promql", f"{f['id']}: query not in any pre.promql: {norm(e['query'])[:100]}")
    private = all(t.get("mode") != "remote" for t in report.get("tsdb") or [])
    if private and dom["graphLinks"]:
        fail("graph-link", f"{len(dom['graphLinks'])} a.graph-link on a private snapshot Prometheus "
                           f"(first: {dom['graphLinks'][0][:80]})")
    for href in dom["graphLinks"]:
        if not re.match(r"https?://", href):
            fail("graph-link", f"a.graph-link href is not http(s): {href[:80]}")

    # Every excluded host is highlighted in a chart and listed as [data-blamed-host].
    heat_rows = {h for c in of("heatmap") for h in c["blamedRows"]}
    series_blamed = {h for c in charts for h in c["blamed"]}
    for x in (report.get("decision") or {}).get("exclude") or []:
        h = x.get("host")
        if h not in series_blamed and h not in heat_rows:
            fail("excluded-host", f"{h} (decision.exclude) has no path.series.blamed[data-host=\"{h}\"] "
                                  f"and no heatmap row [data-blamed-host=\"{h}\"]")
        if h not in dom["blamedHosts"]:
            fail("excluded-host", f"{h} (decision.exclude) is not listed in any [data-blamed-host] element")

    # 8308: the bad hosts' bursts against the TGS phases (the blog's picture).
    if name.startswith("8308"):
        if len(excluded) < 2:
            fail("8308", f"the JSON report excludes {len(excluded)} host(s); expected the bad hosts (>= 2)")
        good = [c for c in of("series")
                if len(set(c["blamed"]) & excluded) >= 2 and c["phases"] >= 3]
        if not good:
            fail("8308", "no series chart with >= 2 excluded hosts as path.series.blamed and >= 3 rect.phase "
                         f"(series charts: {[(c['finding'], sorted(set(c['blamed'])), c['phases']) for c in of('series')]})")

    check_profile(dom, report, fail)
    return fails


def check_profile(dom, report, fail):
    """A job with a profile: one stacked bar per GPU the drill found, each part as long as its seconds
    on one scale, and a row per kernel family that launched anything, all read from the JSON report."""
    profile = report.get("profile") or {}
    if not profile or profile.get("error"):
        if any(c["chart"] == "profile-bars" for c in dom["charts"]):
            fail("profile-bars", "a profile-bars chart but the JSON report has no readable profile")
        return
    charts = [c for c in dom["charts"] if c["chart"] == "profile-bars"]
    if len(charts) != 1:
        fail("profile-bars", f"{len(charts)} figure.chart[data-chart=profile-bars]; expected 1 (profile.gpus "
                             f"{profile.get('gpus')})")
        return
    bars = charts[0]["bars"]
    gpus = profile.get("gpus") or 0
    if len(bars) != min(gpus, 256):
        fail("profile-bars", f"{len(bars)} g.bar, profile.gpus is {gpus}: one bar per GPU expected")
    if len({(b["file"], b["gpu"]) for b in bars}) != len(bars):
        fail("profile-bars", "two bars for the same (file, GPU)")
    wanted = {"compute", "exposed communication", "idle", "overlap"}
    ratios = []
    for b in bars:
        if {p["part"] for p in b["parts"]} != wanted:
            fail("profile-bars", f"GPU {b['gpu']} of {b['file']}: parts {sorted(p['part'] for p in b['parts'])}")
        for p in b["parts"]:
            if p["seconds"] > 0.05:
                ratios.append((p["drawn"] / p["seconds"], b, p))
            elif p["seconds"] <= 0 and p["drawn"] > 0.5:
                fail("profile-bars", f"GPU {b['gpu']} {p['part']}: {p['seconds']} s drawn {p['drawn']:.1f} px wide")
    if ratios:
        lo, hi = min(r[0] for r in ratios), max(r[0] for r in ratios)
        if hi > lo * 1.02 + 1e-9:
            worst = max(ratios, key=lambda r: abs(r[0] - lo))
            fail("profile-bars", f"widths not proportional to seconds: {lo:.3f}..{hi:.3f} px/s "
                                 f"(GPU {worst[1]['gpu']} {worst[2]['part']}: {worst[2]['seconds']} s, "
                                 f"{worst[2]['drawn']:.1f} px)")
    else:
        fail("profile-bars", "no bar part longer than 0.05 s")
    median = (profile.get("median_gpu") or {}).get("compute")
    computes = sorted(p["seconds"] for b in bars for p in b["parts"] if p["part"] == "compute")
    if isinstance(median, (int, float)) and computes and len(bars) == gpus:
        n = len(computes)
        drawn_median = computes[n // 2] if n % 2 else (computes[n // 2 - 1] + computes[n // 2]) / 2
        if abs(drawn_median - median) > max(1e-3, 0.005 * abs(median)):
            fail("profile-bars", f"median compute of the bars {drawn_median:.4f} s, profile.median_gpu.compute "
                                 f"{median:.4f} s")
    families = [f.get("id") for f in profile.get("families") or [] if (f.get("launches") or 0) > 0]
    if dom["families"] != families:
        fail("profile-families", f"table.kernel-families rows {dom['families']}, profile.families with launches "
                                 f"{families}")


def run_diagnose(binary, outputs, args, fmt, dest, timeout):
    cmd = [binary, *args, "--outputs", str(outputs), "--format", fmt]
    try:
        with open(dest, "wb") as out, tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
            try:
                rc = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                return f"`{' '.join(cmd)}` did not finish in {timeout} s"
            finally:
                if proc.poll() is None:   # timeout or SIGTERM: let diagnose stop its Prometheus first
                    proc.terminate()
                    try:
                        proc.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait()
            err.seek(0)
            stderr = err.read().decode(errors="replace")
    except OSError as e:
        return f"`{' '.join(cmd)}` could not run: {e}"
    if rc != 0:
        tail = " | ".join(stderr.strip().splitlines()[-3:])
        return f"`{' '.join(cmd)}` exited {rc}: {tail}"
    return None


def check_page(driver, name, html, report, artifacts):
    fails = []
    driver.log("browser")       # drain what earlier pages left
    driver.log("performance")
    driver.cmd("POST", "/url", {"url": html.resolve().as_uri()})
    dom = driver.execute(COLLECT_JS)
    fails += check_dom(name, dom, report)
    shot = artifacts / f"{name}.png"
    if driver.full_screenshot(shot):
        print(f"note {name}: page taller than {MAX_SCREENSHOT_HEIGHT} px, screenshot cut")
    print(f"screenshot {name}: {shot}")
    if dom["horizontalOverflow"] > 0:
        print(f"warning {name}: page scrolls sideways by {dom['horizontalOverflow']} px at {WINDOW[0]} px")
    # Logs last: asynchronous errors and CSP reports have had the DOM walk and the shot to arrive.
    return fails + console_and_network_problems(driver)


def console_and_network_problems(driver):
    """Severe console messages and requests that left the page's own file since the logs were drained."""
    fails = []
    for entry in driver.log("browser"):
        if entry.get("level") == "SEVERE":
            fails.append(f"console: {entry.get('source', '')}: {norm(entry.get('message', ''))[:300]}")
    for entry in driver.log("performance"):
        try:
            msg = json.loads(entry["message"])["message"]
        except (KeyError, ValueError, TypeError):
            continue
        if msg.get("method") in ("Network.requestWillBeSent", "Network.webSocketCreated"):
            params = msg.get("params") or {}
            url = (params.get("request") or {}).get("url") or params.get("url") or ""
            if not url.startswith(("file:", "data:")):
                fails.append(f"network: request to {url[:200]}")
    return fails


def missing_browser(chromium, chromedriver):
    """The SKIP line when chromium or chromedriver is not installed, else None."""
    for tool in (chromium, chromedriver):
        if not (os.path.isfile(tool) and os.access(tool, os.X_OK)):
            return f"SKIP: {tool} not found (install chromium and chromium-driver: scripts/install-deps.sh)"
    return None


def stop_on_sigterm():
    """SIGTERM (ctest's timeout, CI cancel) unwinds through `finally` like Ctrl-C does."""
    def on_term(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_term)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--diagnose", help="the diagnose binary (runs the fixture cases)")
    ap.add_argument("--outputs", help="fixture outputs dir (fixtures/outputs)")
    ap.add_argument("--html", action="append", default=[],
                    help="check a pre-rendered HTML file instead; its JSON report is beside it as NAME.json")
    ap.add_argument("--artifacts", default="build/artifacts/html-screenshots", help="screenshot dir")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--chromedriver", default=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per diagnose run")
    args = ap.parse_args()
    if not args.html and not (args.diagnose and args.outputs):
        ap.error("give --diagnose and --outputs, or --html FILE")

    skip = missing_browser(args.chromium, args.chromedriver)
    if skip:
        print(skip)
        return SKIP
    stop_on_sigterm()

    artifacts = Path(args.artifacts)
    artifacts.mkdir(parents=True, exist_ok=True)
    failures = []
    pages = []   # (name, html path, json path)

    def fail(line):
        failures.append(line)
        print(line, flush=True)

    with tempfile.TemporaryDirectory(prefix="diagnose-browser-") as tmp:
        tmp = Path(tmp)
        driver = None
        try:
            if args.diagnose:
                outputs = Path(args.outputs)
                if not outputs.is_dir():
                    fail(f"FAIL setup: fixture outputs dir {outputs} does not exist (build the `fixtures` target)")
                    return 1
                for name, case_args in CASES:
                    html, js = tmp / f"{name}.html", tmp / f"{name}.json"
                    errors = [e for e in (run_diagnose(args.diagnose, outputs, case_args, fmt, dest, args.timeout)
                                          for fmt, dest in (("html", html), ("json", js))) if e]
                    for e in errors:
                        fail(f"FAIL {name}: diagnose: {e}")
                    if not errors:
                        pages.append((name, html, js))
            for h in args.html:
                h = Path(h)
                pages.append((h.stem, h, h.with_suffix(".json")))

            driver = ChromeDriver(args.chromedriver, args.chromium, tmp)
            driver.start()
            driver.start_session()
            for name, html, js in pages:
                try:
                    report = json.loads(js.read_text())
                except (OSError, ValueError) as e:
                    fail(f"FAIL {name}: json report {js}: {e}")
                    continue
                try:
                    problems = check_page(driver, name, html, report, artifacts)
                except DriverError as e:
                    problems = [f"browser: {e}"]
                for p in problems:
                    fail(f"FAIL {name}: {p}")
                print(f"{'ok' if not problems else 'FAILED'} {name}: {len(problems)} problem(s)", flush=True)
        except DriverError as e:
            fail(f"FAIL setup: {e}")
        except KeyboardInterrupt as e:
            fail(f"FAIL interrupted: {e or 'SIGINT'}")
        finally:
            if driver:
                driver.close()

    print(f"browser_test: {len(pages)} page(s), {len(failures)} failure(s); screenshots in {artifacts}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
