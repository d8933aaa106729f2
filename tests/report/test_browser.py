"""Report pages in a real headless Chromium at 1400×900 and 390×844 (a phone): no JavaScript
errors, no network, charts with log axes, the 1× label on its line, no page wider than the
phone outside scroll containers, no header broken inside a word, hostile text shown as
text, inline scripts allowed by hash only. Screenshots go to tests/artifacts/ (or
$JITBENCH_TEST_ARTIFACTS) for a person or CI to look at.

Skipped only when no Chromium executable exists (see tests/report/browser.py). The default
run opens the run page once (its inline scripts run by hash only); the rest is end-to-end,
`-m e2e`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jitbench import load_run
from jitbench.gate import compare
from jitbench.report import write_index, write_report, write_run_page
from jitbench.results import Mode, Run
from tests.report.browser import DESKTOP, PHONE, Loaded, chromium_path, launched, open_page
from tests.report.builders import crafted_evil, labelled, seed_run, slower

ARTIFACTS = Path(
    os.environ.get("JITBENCH_TEST_ARTIFACTS") or Path(__file__).resolve().parents[1] / "artifacts"
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    exe = chromium_path()
    if exe is None:
        pytest.skip("no Chromium executable (install Debian packages chromium chromium-driver)")
    # Chromium is here, so a missing driver package is a broken test setup, not a skip.
    with launched(exe) as b:
        yield b


def visit(browser: Any, path: Path, shot: str, viewport: dict[str, int] = DESKTOP) -> Loaded:
    """Open `path`, draw its charts, save a full-page screenshot as `shot`."""
    loaded = open_page(browser, path, viewport=viewport)
    loaded.render_all()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / ".gitignore").write_text("*\n")
    loaded.page.screenshot(path=str(ARTIFACTS / shot), full_page=True)
    return loaded


@pytest.fixture(scope="module")
def site(run: Run, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A report folder with every page kind: two labelled runs compared, a history."""
    root = tmp_path_factory.mktemp("site")
    before = labelled(run, "before")
    after = labelled(
        slower(run, "double", 3.0, run_id="after-run"),
        "after",
        started_at="2030-01-01T00:00:00+00:00",
    )
    compare_page = write_report([before, after], root)
    (root / "verdict.txt").write_text(
        next(
            e.verdict.value
            for e in compare(before, after).entries
            if e.workload == "double" and e.mode is Mode.JIT
        )
    )
    return {
        "run": root / "runs" / f"{re.sub(r'[^A-Za-z0-9._-]+', '_', run.run_id)}.html",
        "compare": compare_page,
        "history": root / "history.html",
        "index": root / "index.html",
    }


@pytest.mark.e2e
def test_run_page_in_chromium(browser: Any, run: Run, site: dict[str, Path]) -> None:
    p = visit(browser, site["run"], "report-run.png")
    assert p.errors == [] and p.network == []
    _assert_reads_well(p, "run")
    _assert_parity_label_on_its_line(p)
    # plotly.js was fetched (once) for the charts, from beside the report folder's root
    assert p.page.locator("script[src='../plotly.min.js']").count() == 1
    charts = p.charts()
    assert charts["speedup-1"]["y"] == "log"
    # the overview heatmap is a table, eager one click away (and in the link)
    assert p.page.locator("table.heat").first.is_visible()
    p.page.click("button.toggle[data-show=eager]")
    assert p.page.locator("[data-panel-group=heat][data-panel=eager]").is_visible()
    assert "heat=eager" in p.page.url
    assert charts["compile-1"]["y"] == "log"
    assert (charts["sweep-1-1"]["x"], charts["sweep-1-1"]["y"]) == ("log", "log")
    # one row per case, failures marked
    rows = p.page.locator("#measurements tbody tr")
    assert rows.count() == len(run.cases())
    assert p.page.locator("#measurements tbody tr.failed").count() == 2
    assert "TracerBoolConversionError" in p.page.inner_text("#measurements")
    assert p.page.locator("#run-notes").count() == 1
    assert "jax" in p.page.inner_text("#environment + .table-scroll")
    # the table sorts numerically by jit time, and the link keeps the order
    heads = p.page.eval_on_selector_all("#measurements th", "ths => ths.map(t => t.textContent)")
    col = heads.index("jit") + 1
    p.page.click(f"#measurements th:nth-child({col})")
    keys = p.page.eval_on_selector_all(
        f"#measurements tbody td:nth-child({col})", "tds => tds.map(td => td.dataset.sort)"
    )
    nums = [float(k) for k in keys if k]
    assert nums == sorted(nums) and len(nums) >= 4
    assert f"sort.measurements={col - 1}%3Aasc" in p.page.url
    # a case's details: every figure and its sample distribution, in the link too
    assert p.page.locator("#case-c1").is_hidden()
    p.page.click("#measurements button.case >> nth=0")
    first = p.page.get_attribute("#measurements tbody tr >> nth=0", "data-case")
    assert p.page.locator(f"#case-{first}").is_visible()
    p.page.wait_for_selector(f"#dist-{first}.js-plotly-plot")
    assert f"case={first}" in p.page.url
    url = p.page.url
    p.page.close()
    again = browser.new_page(viewport=DESKTOP)
    again.goto(url)
    assert again.locator(f"#case-{first}").is_visible()
    assert again.get_attribute(f"#measurements th:nth-child({col})", "aria-sort") == "ascending"
    again.close()


def _parity(p: Loaded, chart: str) -> dict[str, float]:
    """Where the rendered SVG puts the 1× label and the dashed 1× line of `chart`."""
    return p.page.evaluate(
        """id => {
      const gd = document.getElementById(id);
      const text = Array.from(gd.querySelectorAll('.annotation-text'))
        .find(t => t.textContent.startsWith('1× ='));
      const line = Array.from(gd.querySelectorAll('.shapelayer path, .layer-below path'))
        .find(p => (p.style.strokeDasharray || '') !== '' &&
                   Math.abs(p.getBBox().height) < 1);
      const plot = gd.querySelector('.nsewdrag').getBoundingClientRect();
      const t = text.getBoundingClientRect(), l = line.getBoundingClientRect();
      return {label_bottom: t.bottom, label_top: t.top, line_y: l.top,
              plot_top: plot.top, plot_bottom: plot.bottom};
    }""",
        chart,
    )


def _assert_parity_label_on_its_line(p: Loaded) -> None:
    """Issue 16: plotly read the label's y as log10, putting it at 10× (and off charts
    whose top is below 10×). Read from the SVG: the label sits just above the line."""
    pos = _parity(p, "speedup-1")
    assert abs(pos["label_bottom"] - pos["line_y"]) < 6, pos
    assert pos["plot_top"] <= pos["label_top"] and pos["line_y"] <= pos["plot_bottom"], pos


@pytest.mark.e2e
def test_the_parity_label_sits_on_the_dashed_line_of_the_seed_run(
    browser: Any, tmp_path: Path
) -> None:
    # (and of the real run: `test_run_page_in_chromium`)
    p = visit(browser, write_run_page(seed_run(), tmp_path), "report-parity-seed.png")
    _assert_parity_label_on_its_line(p)
    p.page.close()


PAGES = ["run", "compare", "history", "index"]


@pytest.mark.e2e
def test_every_page_fits_and_reads_on_a_phone(browser: Any, site: dict[str, Path]) -> None:
    for kind in PAGES:
        p = visit(browser, site[kind], f"report-{kind}-phone.png", PHONE)
        _assert_reads_well(p, kind)
        p.page.close()


@pytest.mark.e2e
def test_the_history_page_fits_and_reads_on_a_desktop(browser: Any, site: dict[str, Path]) -> None:
    # (the other pages: in the tests that visit them on a desktop, before any click)
    p = visit(browser, site["history"], "report-history-desktop.png")
    _assert_reads_well(p, "history")
    p.page.close()


def _assert_reads_well(p: Loaded, kind: str) -> None:
    """No error or request, nothing wider than the window, no header broken inside a word,
    no legend on a plot nor a label cut off."""
    assert p.errors == [] and p.network == [], (kind, p.errors, p.network)
    assert p.overflow() == [], (kind, p.overflow())  # no sideways page on a phone
    assert p.broken_words("th") == [], kind  # no 'worklo/ad'
    # legends never sit on the plot, nor labels outside the picture
    clashes = p.page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot'))
      .flatMap(gd => {
        const legend = gd.querySelector('.legend'), plot = gd.querySelector('.nsewdrag');
        const svg = gd.querySelector('svg.main-svg').getBoundingClientRect();
        const out = [];
        if (legend && plot && legend.getBoundingClientRect().bottom >
            plot.getBoundingClientRect().top + 1 &&
            legend.getBoundingClientRect().top < plot.getBoundingClientRect().top)
          out.push(gd.id + ': legend over the plot');
        for (const t of gd.querySelectorAll('.textpoint text, .annotation-text')) {
          const r = t.getBoundingClientRect();
          if (r.width && (r.left < svg.left - 1 || r.right > svg.right + 1 ||
                          r.top < svg.top - 1 || r.bottom > svg.bottom + 1))
            out.push(gd.id + ': "' + t.textContent + '" cut off');
        }
        return out;
      })""")
    assert clashes == [], (kind, clashes)


@pytest.mark.e2e
def test_comparison_page_and_the_index_picker(browser: Any, site: dict[str, Path]) -> None:
    p = visit(browser, site["compare"], "report-compare.png")
    _assert_reads_well(p, "compare")
    assert "before → after" in p.page.inner_text("h1")
    charts = p.charts()
    assert set(charts) == {"ratio-1", "speedup-side-by-side"}
    assert charts["speedup-side-by-side"]["traces"] == ["before", "after"]
    # the gate's verdict, as the gate gave it, in the aligned row
    row = p.page.locator("#aligned tbody tr", has_text="double[S]").filter(has_text="jit")
    verdict = (site["compare"].parent / "verdict.txt").read_text()
    assert row.locator("td").nth(5).inner_text().startswith(verdict)
    p.page.close()

    p = visit(browser, site["index"], "report-index.png")
    _assert_reads_well(p, "index")
    assert p.page.locator("script[src$='plotly.min.js']").count() == 0  # no chart, no plotly
    assert p.page.locator("#pick-bar").is_hidden()
    p.page.check("input.pick >> nth=0")
    p.page.check("input.pick >> nth=1")
    assert p.page.locator("#pick-bar").is_visible()
    assert p.page.get_attribute("#pick-link", "href") == site["compare"].name
    assert p.page.inner_text("#pick-command").startswith("jitbench report ")
    p.page.close()


@pytest.mark.e2e
def test_dark_mode_from_the_link(browser: Any, site: dict[str, Path]) -> None:
    page = browser.new_page(viewport=DESKTOP)
    page.goto(site["run"].resolve().as_uri() + "?theme=dark")
    page.evaluate("window.jbRenderAll()")
    page.wait_for_selector("#speedup-1.js-plotly-plot")
    assert page.get_attribute("html", "data-theme") == "dark"
    bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert bg == "rgb(13, 17, 23)"
    paper = page.evaluate("document.getElementById('speedup-1')._fullLayout.paper_bgcolor")
    assert paper == "#161b22"
    page.screenshot(path=str(ARTIFACTS / "report-run-dark.png"), full_page=False)
    page.click("#theme-toggle")  # dark → light
    assert page.get_attribute("html", "data-theme") == "light"
    assert "theme=light" in page.url
    page.close()


def test_inline_scripts_run_by_hash_only(browser: Any, site: dict[str, Path]) -> None:
    """The policy is a second line of defence: markup that slipped past escaping could not
    run an inline script."""
    p = open_page(browser, site["run"])
    assert p.errors == []
    p.page.evaluate("""() => { const s = document.createElement('script');
        s.textContent = 'window.__injected = 1'; document.body.appendChild(s); }""")
    assert p.page.evaluate("window.__injected") is None
    assert any("Content Security Policy" in e for e in p.errors), p.errors
    p.page.close()


@pytest.mark.e2e
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
    p = visit(browser, page, "report-two-devices.png")
    assert p.errors == [] and p.network == []
    charts = p.charts()
    assert all(charts[f"speedup-{i}"]["y"] == "log" for i in (1, 2))
    assert {"compile-1", "compile-2"} <= set(charts)
    # Both devices' jit on one axis, beside NumPy's time on the host.
    assert charts["devices-chart"]["y"] == "log"
    assert p.page.locator("#devices .legend .traces").count() == 3
    titles = p.page.eval_on_selector_all("section.device h2", "hs => hs.map(h => h.textContent)")
    assert "cpu:0" in titles[0] and "cpu:1" in titles[1]
    heads = p.page.eval_on_selector_all("#measurements th", "ths => ths.map(t => t.textContent)")
    assert "device" in heads
    p.page.close()


@pytest.mark.e2e
def test_hostile_names_render_as_text(browser: Any, run: Run, tmp_path: Path) -> None:
    path = write_report([crafted_evil(run)], tmp_path)
    p = visit(browser, path, "report-hostile.png")
    assert p.errors == [] and p.network == []  # also: no request for <img src=x>
    assert p.page.evaluate("window.__pwned") is None
    assert "<script>window.__pwned=1</script>" in p.page.inner_text("#measurements")
    assert "<script>window.__pwned=1</script>" in p.page.inner_text("h1")  # the label
    ticks = p.charts()["speedup-1"]["ticks"]
    # plotly renders <a>, <b>, <span style> in labels: escaped, they stay literal text
    assert any(t.startswith('<a href="//x.invalid">a</a><b') for t in ticks), ticks
    assert len(set(ticks)) == len(ticks)  # clipped, not merged
    assert p.page.locator(".js-plotly-plot a").count() == 0
    p.page.close()
    p = visit(browser, tmp_path / "index.html", "report-hostile-index.png")
    assert p.errors == [] and p.network == []
    assert p.page.evaluate("window.__pwned") is None
    assert "<img src=x" in p.page.inner_text("#runs")
    p.page.close()
    write_index(tmp_path)
