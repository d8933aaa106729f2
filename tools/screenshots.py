"""Screenshots of every kind of report page at 1400x900 and 390x844 (a phone), full page,
with every chart drawn: the index, the history, a run page, a sweep run page and a
comparison page (plus the run page in dark mode). For a person to look at, and kept by CI.

Without --from, measures a small demo first (about a minute): two labelled quick runs of a
few default-suite workloads at S and M, and a quick sweep of two, into OUT/site.
With --from DIR, uses the report folder DIR as it is (its newest run, sweep run and
comparison page).

Usage: python tools/screenshots.py --out DIR [--from REPORT_DIR]
Needs Chromium and playwright, as the browser tests do (tests/report/browser.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's jitbench

from jitbench import api
from jitbench.config import RunConfig
from jitbench.report import write_index, write_report, write_run_page
from jitbench.report.data import newest_first
from jitbench.results import Run, load_run
from tests.report.browser import VIEWPORTS, chromium_path, launched, open_page

REPO = Path(__file__).resolve().parents[1]
DEMO = ["selu", "gelu", "gemm", "logsumexp", "mandelbrot", "ema"]


def demo_site(site: Path) -> None:
    """Measure the demo runs into `site` and render every page kind there."""
    suites = [REPO / "suites"]
    runs = []
    for label in ("before", "after"):
        config = RunConfig.quick_settings(sizes=("S", "M"), label=label)
        runs.append(api.run(DEMO, suites=suites, config=config, out=site))
        print(f"measured {label}", file=sys.stderr)
    sweep = RunConfig.quick_settings(sweep=True, label="sweep")
    write_run_page(api.run(["selu", "gemm"], suites=suites, config=sweep, out=site), site)
    write_report(runs, site)


def pages(site: Path) -> dict[str, Path]:
    """The page of each kind in a report folder."""
    write_index(site)
    runs: list[Run] = newest_first(load_run(p) for p in sorted((site / "runs").glob("*.json")))
    found = {"index": site / "index.html", "history": site / "history.html"}
    sweep = next((r for r in runs if r.config.settings and r.config.settings.sweep), None)
    plain = next((r for r in runs if r is not sweep), None)
    for kind, run in (("run", plain), ("sweep", sweep)):
        if run is not None:
            found[kind] = write_run_page(run, site)
    compares = sorted(site.glob("compare-*.html"), key=lambda p: p.stat().st_mtime)
    if compares:
        found["compare"] = compares[-1]
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the PNG files")
    parser.add_argument("--from", dest="source", type=Path, help="an existing report folder")
    args = parser.parse_args()
    exe = chromium_path()
    if exe is None:
        print("no Chromium found (Debian: apt-get install chromium)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    site = args.source or args.out / "site"
    if args.source is None:
        demo_site(site)
    shots = []
    with launched(exe) as browser:
        for kind, path in pages(site).items():
            for width, viewport in VIEWPORTS.items():
                loaded = open_page(browser, path, viewport=viewport)
                loaded.render_all()
                problems = loaded.errors + loaded.network + loaded.overflow()
                shot = args.out / f"{kind}-{width}.png"
                loaded.page.screenshot(path=str(shot), full_page=True)
                loaded.page.close()
                shots.append(shot)
                print(f"{shot}  {'OK' if not problems else 'problems: ' + '; '.join(problems)}")
            if kind == "run":
                page = browser.new_page(viewport=VIEWPORTS["desktop"])
                page.goto(path.resolve().as_uri() + "?theme=dark")
                page.evaluate("window.jbRenderAll()")
                page.wait_for_timeout(500)
                shot = args.out / "run-desktop-dark.png"
                page.screenshot(path=str(shot), full_page=True)
                page.close()
                print(f"{shot}  OK")
    print(f"{len(shots) + 1} screenshots in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
