"""How long report pages take to load in headless Chromium, opened from disk.

For each page, in a fresh browser context per repeat (nothing cached), prints the median
over the repeats of: DOMContentLoaded and the load event (navigation timing), "ready"
(every chart in the first screen drawn: what a reader waits for), and "all charts" (every
chart on display drawn, as a screenshot needs), and "busy": the main thread's busy time
until "ready" (Chrome's TaskDuration: what the page costs, less sensitive than the wall
clock to other processes on the machine). Also the page's size and the plotly.js it loads.

Usage: python tools/page_load.py PAGE.html [PAGE.html ...] [--repeats 5] [--phone]
Needs Chromium and playwright, as the browser tests do (tests/report/browser.py).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's jitbench

from tests.report.browser import DESKTOP, PHONE, chromium_path, launched, wait_until

# Runs before the page's own scripts (outside its content-security policy, which refuses
# Playwright's `wait_for_function`): notes the time, on every frame, at which every chart
# whose box starts inside the first screen has been drawn by plotly.
_WATCH = """(() => {
  const check = () => {
    if (document.readyState !== 'loading') {
      const boxes = Array.from(document.querySelectorAll('.chart'))
        .filter(el => el.offsetParent !== null && el.getBoundingClientRect().top < innerHeight);
      if (boxes.every(el => el.querySelector('.main-svg') ||
                            el.classList.contains('plotly-missing'))) {
        window.__jbReady = performance.now();
        return;
      }
    }
    requestAnimationFrame(check);
  };
  requestAnimationFrame(check);
})();"""
_ALL = """(() => {
  if (window.jbRenderAll) window.jbRenderAll();
  const c = window.jbCharts ? window.jbCharts() : {shown: 0, drawn: 0};
  return c.drawn === c.shown ? performance.now() : false;
})()"""


def measure(browser: Any, page_path: Path, viewport: dict[str, int]) -> dict[str, float]:
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Performance.enable")
    page.add_init_script(_WATCH)
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
    page.goto(page_path.resolve().as_uri(), wait_until="load")
    timing = page.evaluate(
        "(() => { const n = performance.getEntriesByType('navigation')[0];"
        " return {dcl: n.domContentLoadedEventEnd, load: n.loadEventEnd}; })()"
    )
    ready = wait_until(page, "window.__jbReady")
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    every = wait_until(page, _ALL)
    context.close()
    return {
        "domcontentloaded": timing["dcl"] / 1e3,
        "load": timing["load"] / 1e3,
        "ready": float(ready) / 1e3,
        "busy": float(metrics.get("TaskDuration", float("nan"))),
        "all charts": float(every) / 1e3,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="+", type=Path)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--phone", action="store_true", help="390x844 instead of 1400x900")
    args = parser.parse_args()
    exe = chromium_path()
    if exe is None:
        print("no Chromium found (Debian: apt-get install chromium)", file=sys.stderr)
        return 2
    viewport = PHONE if args.phone else DESKTOP
    print(f"headless Chromium, {viewport['width']}x{viewport['height']}, medians of "
          f"{args.repeats} loads from disk, fresh context each (seconds)")  # fmt: skip
    print(
        f"{'page':<44} {'KiB':>6} {'plotly':>8} {'DCL':>6} {'load':>6} {'ready':>6} "
        f"{'busy':>6} {'all':>6}"
    )
    with launched(exe) as browser:
        for path in args.pages:
            runs = [measure(browser, path, viewport) for _ in range(args.repeats)]
            med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            html = path.read_text("utf-8")
            js = path.parent / (
                "../plotly.min.js" if path.parent.name == "runs" else "plotly.min.js"
            )
            plotly = (
                f"{js.stat().st_size / 2**20:.1f}M"
                if ('data-plotly="' in html or 'plotly.min.js"></script>' in html) and js.exists()
                else "none"
            )
            name = path.name if len(path.name) <= 44 else "…" + path.name[-43:]
            print(
                f"{name:<44} {len(html.encode()) / 1024:6.0f} {plotly:>8} "
                f"{med['domcontentloaded']:6.3f} {med['load']:6.3f} {med['ready']:6.3f} "
                f"{med['busy']:6.3f} {med['all charts']:6.3f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
