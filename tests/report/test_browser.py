"""Report pages in a real headless Chromium: no JavaScript errors, no network, the charts
present with log axes, hostile text shown as text. Screenshots go to tests/artifacts/
(or $JITBENCH_TEST_ARTIFACTS) for a person or CI to look at.

Needs Chromium (Debian packages `chromium`, `chromium-driver`) and the `playwright` Python
package (no browser download: Playwright drives the system Chromium). Skipped only when no
Chromium executable exists.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from jitbench import load_run
from jitbench.report import write_report, write_run_page
from jitbench.results import Run
from tests.report.test_pages import crafted_evil, real_run, relabelled

ARTIFACTS = Path(
    os.environ.get("JITBENCH_TEST_ARTIFACTS") or Path(__file__).resolve().parents[1] / "artifacts"
)


def _chromium() -> str | None:
    env = os.environ.get("JITBENCH_CHROMIUM")
    if env:
        return env
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    exe = _chromium()
    if exe is None:
        pytest.skip("no Chromium executable (install Debian packages chromium chromium-driver)")
    # Chromium is here, so a missing driver package is a broken test setup, not a skip.
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return real_run(tmp_path_factory.mktemp("suite"))


@dataclass
class Loaded:
    page: Any
    errors: list[str] = field(default_factory=list)
    network: list[str] = field(default_factory=list)

    def charts(self) -> dict[str, dict[str, Any]]:
        """Every rendered plotly chart by element id: axis types, title, trace names."""
        return {
            c["id"]: c
            for c in self.page.evaluate("""() =>
            Array.from(document.querySelectorAll('.js-plotly-plot')).map(gd => ({
              id: gd.id, x: gd.layout.xaxis.type, y: gd.layout.yaxis.type,
              yrange: gd._fullLayout.yaxis.range,
              title: gd.layout.title.text, traces: gd.data.map(t => t.name || ''),
              ticks: Array.from(gd.querySelectorAll('.xtick text')).map(t => t.textContent),
            }))""")
        }


def open_page(browser: Any, path: Path, shot: str) -> Iterator[Loaded]:
    """Open `path` from disk with every non-file request blocked and recorded; screenshot."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    loaded = Loaded(page)
    page.on("pageerror", lambda e: loaded.errors.append(f"pageerror: {e}"))
    page.on(
        "console",
        lambda m: (
            loaded.errors.append(f"console {m.type}: {m.text}")
            if m.type in ("error", "warning")
            else None
        ),
    )

    def route(r: Any) -> None:
        if r.request.url.startswith("file:"):
            r.continue_()
        else:
            loaded.network.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.goto(path.resolve().as_uri())
    page.wait_for_function(
        "document.querySelectorAll('.js-plotly-plot').length === "
        "document.querySelectorAll('script.jb-figure').length"
    )
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / ".gitignore").write_text("*\n")
    page.screenshot(path=str(ARTIFACTS / shot), full_page=True)
    try:
        yield loaded
    finally:
        page.close()


def test_run_page_in_chromium(browser: Any, run: Run, tmp_path: Path) -> None:
    path = write_run_page(run, tmp_path)
    for p in open_page(browser, path, "report-run.png"):
        assert p.errors == [] and p.network == []
        charts = p.charts()
        assert charts["speedup-1"]["y"] == "log"
        assert "cpu:0" in charts["speedup-1"]["title"]
        assert charts["compile-1"]["traces"][:3] == [
            "trace (cold)",
            "lower (cold)",
            "compile (cold)",
        ]
        sweeps = [c for k, c in charts.items() if k.startswith("sweep-")]
        assert len(sweeps) == 1 and (sweeps[0]["x"], sweeps[0]["y"]) == ("log", "log")
        # every measurement in the table, failures marked as such
        rows = p.page.locator("#measurements tbody tr")
        assert rows.count() == len(run.measurements)
        failed = [m for m in run.measurements if m.status.value in ("error", "mismatch")]
        assert p.page.locator("#measurements tbody tr.failed").count() == len(failed) >= 2
        assert "TracerBoolConversionError" in p.page.inner_text("#measurements")
        assert "jax" in p.page.inner_text("#environment + table")
        # the table sorts numerically by median
        p.page.click("#measurements th:nth-child(7)")
        keys = p.page.eval_on_selector_all(
            "#measurements tbody td:nth-child(7)", "tds => tds.map(td => td.dataset.sort)"
        )
        nums = [float(k) for k in keys if k]
        assert nums == sorted(nums) and len(nums) >= 10


def test_two_devices_in_one_run(browser: Any, cli, tiny_suite: Path, tmp_path: Path) -> None:
    res = cli(
        "run",
        "double",
        "--suite",
        str(tiny_suite),
        "--quick",
        "--devices",
        "cpu:0,cpu:1",
        "--out",
        str(tmp_path),
        env={"XLA_FLAGS": "--xla_force_host_platform_device_count=2"},
    )
    assert res.returncode == 0, res.stderr
    page = Path(re.search(r"report written to (\S+\.html)", res.stdout).group(1))
    assert {c.device for c in load_run(page.with_suffix(".json")).cases()} == {"cpu:0", "cpu:1"}
    for p in open_page(browser, page, "report-two-devices.png"):
        assert p.errors == [] and p.network == []
        charts = p.charts()
        titles = [charts[f"speedup-{i}"]["title"] for i in (1, 2)]
        assert "cpu:0" in titles[0] and "cpu:1" in titles[1]
        assert all(charts[f"speedup-{i}"]["y"] == "log" for i in (1, 2))
        assert {"compile-1", "compile-2"} <= set(charts)
    for p in open_page(browser, tmp_path / "index.html", "report-index.png"):
        assert p.errors == [] and p.network == []
        assert page.name in p.page.inner_html("#runs")


def test_hostile_names_render_as_text(browser: Any, run: Run, tmp_path: Path) -> None:
    path = write_report([crafted_evil(run)], tmp_path)
    for p in open_page(browser, path, "report-hostile.png"):
        assert p.errors == [] and p.network == []  # also: no request for <img src=x>
        assert p.page.evaluate("window.__pwned") is None
        assert "<script>window.__pwned=1</script>" in p.page.inner_text("#measurements")
        ticks = p.charts()["speedup-1"]["ticks"]
        # plotly renders <a>, <b>, <span style> in labels: escaped, they stay literal text
        assert any(t.startswith('<a href="//x.invalid">a</a><b') for t in ticks), ticks
        assert len(set(ticks)) == len(ticks) == len(run.cases()) + 1  # clipped, not merged
        assert p.page.locator(".js-plotly-plot a").count() == 0
    for p in open_page(browser, tmp_path / "index.html", "report-hostile-index.png"):
        assert p.errors == [] and p.network == []
        assert p.page.evaluate("window.__pwned") is None
        assert "<img src=x" in p.page.inner_text("#runs")


def test_runs_from_two_devices_side_by_side(browser: Any, run: Run, tmp_path: Path) -> None:
    gpu = relabelled(run, device="gpu:0", kind="NVIDIA H100", host="gpuhost", run_id="gpu-run")
    path = write_report([run, gpu], tmp_path)
    for p in open_page(browser, path, "report-side-by-side.png"):
        assert p.errors == [] and p.network == []
        charts = p.charts()
        assert len(charts) == 2  # one speedup chart per device
        titles = sorted(c["title"] for c in charts.values())
        assert any("gpuhost · gpu:0 (NVIDIA H100)" in t for t in titles)
        assert any("cpu:0" in t and "gpuhost" not in t for t in titles)
        assert all(c["y"] == "log" for c in charts.values())
        ranges = [c["yrange"] for c in charts.values()]
        assert ranges[0] == pytest.approx(ranges[1])  # a shared axis, comparable by eye
