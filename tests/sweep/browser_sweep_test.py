#!/usr/bin/env python3
"""`diagnose sweep --format html` in headless Chromium: no console error, no network request, each
charted variant's interval around its point, the winner marked exactly when the JSON names one.

Generates two tuning sweeps with `campaign sweep-generate` into a temp dir (one with a winner, one
without), renders each as HTML and JSON, and opens the HTML through chromedriver (the ChromeDriver of
tests/report/browser_test.py). Exit 77 when chromium or chromedriver is missing (ctest SKIP)."""
import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "report"))
from browser_test import (SKIP, ChromeDriver, DriverError, console_and_network_problems,  # noqa: E402
                          missing_browser, norm, stop_on_sigterm)

COLLECT_JS = """
const cells = [...document.querySelectorAll('section.cell')].map(s => ({
  label: s.dataset.cell,
  conclusion: s.querySelector('.conclusion')?.textContent || '',
  variants: [...s.querySelectorAll('g.variant')].map(g => {
    const line = g.querySelector('line.interval'), dot = g.querySelector('circle.point');
    const box = dot ? dot.getBoundingClientRect() : null;
    return {name: g.dataset.variant, verdict: g.dataset.verdict, winner: g.classList.contains('winner'),
            x1: line ? +line.getAttribute('x1') : null, x2: line ? +line.getAttribute('x2') : null,
            cx: dot ? +dot.getAttribute('cx') : null, visible: !!box && box.width > 0 && box.height > 0};
  }),
  rules: [...s.querySelectorAll('li[data-rule]')].map(li => [li.dataset.variant, li.dataset.rule]),
}));
return {cells, scripts: document.scripts.length};
"""


def check(name, dom, sweep):
    fails = []
    if dom["scripts"]:
        fails.append(f"{dom['scripts']} script element(s)")
    by_label = {c["label"]: c for c in dom["cells"]}
    for cell in sweep["cells"]:
        page = by_label.get(cell["label"])
        if page is None:
            fails.append(f"cell {cell['label']} missing")
            continue
        if norm(page["conclusion"]) != norm(cell["conclusion"]):
            fails.append(f"conclusion differs: {page['conclusion'][:120]!r}")
        drawn = {v["name"]: v for v in page["variants"]}
        for v in cell["variants"]:
            if v["mean_tgs"] is None or v["name"] not in drawn:
                continue
            d = drawn[v["name"]]
            if not d["visible"]:
                fails.append(f"{v['name']}: point not rendered")
            if v["is_winner"] != d["winner"]:
                fails.append(f"{v['name']}: winner mark {d['winner']} but JSON says {v['is_winner']}")
            if not v["is_baseline"]:
                if d["verdict"] != v["vs_baseline"]["verdict"]:
                    fails.append(f"{v['name']}: verdict {d['verdict']} vs {v['vs_baseline']['verdict']}")
                if not (d["x1"] <= d["cx"] + 1e-6 and d["cx"] <= d["x2"] + 1e-6 and d["x2"] > d["x1"]):
                    fails.append(f"{v['name']}: interval {d['x1']}..{d['x2']} does not hold its point {d['cx']}")
        if cell["winner"] is not None and cell["winner"] not in drawn:
            fails.append(f"winner {cell['winner']} not charted")
        want_rules = sorted([v["name"], v["failures"]["rule"]] for v in cell["variants"] if v["failures"]["rule"] != "none")
        if sorted(page["rules"]) != want_rules:
            fails.append(f"failure rules differ: {page['rules']} vs {want_rules}")
    return fails


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--diagnose", required=True)
    ap.add_argument("--campaign", required=True)
    ap.add_argument("--artifacts", default="build/artifacts/html-screenshots")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--chromedriver", default=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    args = ap.parse_args()
    skip = missing_browser(args.chromium, args.chromedriver)
    if skip:
        print(skip)
        return SKIP
    stop_on_sigterm()
    artifacts = Path(args.artifacts)
    artifacts.mkdir(parents=True, exist_ok=True)
    failures = []
    with tempfile.TemporaryDirectory(prefix="diagnose-sweep-browser-") as tmp:
        tmp = Path(tmp)
        # Seed 1 plans a sweep without a real winner first and one with a winner second.
        subprocess.run([args.campaign, "sweep-generate", "--seed", "1", "--tuning", "2", "--out", str(tmp / "gen")],
                       check=True, timeout=120)
        driver = None
        try:
            driver = ChromeDriver(args.chromedriver, args.chromium, tmp)
            driver.start()
            driver.start_session()
            for k in range(2):
                name = f"sweep-tuning-{k}"
                outputs = tmp / "gen" / f"tuning-{k}" / "outputs"
                html, js = tmp / f"{name}.html", tmp / f"{name}.json"
                for fmt, dest in (("html", html), ("json", js)):
                    with open(dest, "wb") as out:
                        subprocess.run([args.diagnose, "sweep", str(outputs), "--format", fmt], stdout=out,
                                       check=True, timeout=120)
                sweep = json.loads(js.read_text())
                driver.log("browser")
                driver.log("performance")
                driver.cmd("POST", "/url", {"url": html.resolve().as_uri()})
                problems = check(name, driver.execute(COLLECT_JS), sweep)
                driver.full_screenshot(artifacts / f"{name}.png")
                problems += console_and_network_problems(driver)
                for p in problems:
                    failures.append(f"FAIL {name}: {p}")
                    print(failures[-1], flush=True)
                print(f"{'ok' if not problems else 'FAILED'} {name}: {len(problems)} problem(s)", flush=True)
        except (DriverError, subprocess.SubprocessError) as e:
            failures.append(f"FAIL setup: {e}")
            print(failures[-1])
        except KeyboardInterrupt as e:
            failures.append(f"FAIL interrupted: {e or 'SIGINT'}")
        finally:
            if driver:
                driver.close()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
