"""Report pages without a browser: escaping, files on disk, banners, the CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from jitbench import formatting as fmt
from jitbench import load_run, save_run
from jitbench.errors import OutputError
from jitbench.measure.threads import ThreadState
from jitbench.render.run_table import machine_banner, summary_table
from jitbench.report import assets, data, pages, write_index, write_report, write_run_page
from jitbench.results import (
    Diagnostic,
    Mode,
    Run,
    Severity,
    Status,
    dump_run,
    run_from_dict,
    safe_file_stem,
)
from jitbench.results.analysis import analyse
from jitbench.results.analysis.machine import MachineState, NoiseProbe
from tests.report.builders import crafted_evil, labelled, relabelled, seed_run


def test_run_page_escapes_hostile_text(run: Run) -> None:
    html = pages.render_run_page(crafted_evil(run))
    assert "<script>window.__pwned" not in html and "<img src=x" not in html
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html  # shown as text
    # the only script elements are ours: theme, the page script, one JSON per figure
    n_figures = html.count('class="jb-figure"')
    assert n_figures >= 4
    assert len(re.findall(r"<script", html)) == 2 + n_figures
    assert "</script><img" not in html


def test_bidirectional_controls_in_a_label_are_shown_not_obeyed(run: Run, tmp_path: Path) -> None:
    data = json.loads(dump_run(replace(run, run_id="bidi")))
    data["config"]["label"] = "\u202eevil\u2066x\u2069"  # a crafted file: no --label check
    hostile = run_from_dict(data, source="a crafted file")
    write_report([hostile, run], tmp_path)
    for page in [*tmp_path.glob("*.html"), *(tmp_path / "runs").glob("*.html")]:
        text = page.read_text()
        assert not re.search("[\u202a-\u202e\u2066-\u2069]", text), page.name
    assert "\\u202eevil" in (tmp_path / "runs" / "bidi.html").read_text()


def test_write_report_files_and_index(run: Run, tmp_path: Path) -> None:
    other = relabelled(run, device="gpu:0", kind="NVIDIA H100", host="gpuhost", run_id="gpu-run")
    page = write_report([run, other], tmp_path)
    assert page.name == f"compare-{safe_file_stem(run.run_id)}-vs-gpu-run.html"
    for r in (run, other):
        stem = safe_file_stem(r.run_id)
        assert (tmp_path / "runs" / f"{stem}.html").is_file()
        assert (tmp_path / "runs" / f"{stem}.csv").is_file()
        assert load_run(tmp_path / "runs" / f"{stem}.json") is not None
    js = tmp_path / "plotly.min.js"
    assert js.read_text() == assets.plotly_bundle().text
    before = js.stat().st_mtime_ns
    write_run_page(run, tmp_path)
    assert js.stat().st_mtime_ns == before, "plotly.js must be written once, not every time"
    assert (tmp_path / "history.html").is_file()

    (tmp_path / "runs" / "broken.json").write_text("{not json")
    index = write_index(tmp_path).read_text()
    assert index.index("gpu-run") < index.index(run.run_id), "newest first"
    assert "broken.json" in index and "could not be read" in index
    assert "NVIDIA H100" in index and page.name in index
    assert 'plotly.min.js"></script>' not in index  # no chart, no plotly
    pairs = json.loads(re.search(r'id="compare-pages">(.*?)</script>', index).group(1))
    assert pairs == {f"{run.run_id}\ngpu-run": page.name}  # the picker finds the page


def test_run_id_cannot_escape_the_output_folder(run: Run, tmp_path: Path) -> None:
    evil = replace(run, run_id="../../outside")
    page = write_run_page(evil, tmp_path / "out")
    assert page.resolve().parent == (tmp_path / "out" / "runs").resolve()
    assert not (tmp_path / "outside.html").exists()


def test_one_banner_for_run_wide_notes(run: Run) -> None:
    noisy = Diagnostic(code="noisy", severity=Severity.INFO, message="wide CI")
    ms = tuple(replace(m, diagnostics=(*m.diagnostics, noisy)) for m in run.measurements)
    html = pages.render_run_page(replace(run, measurements=ms))
    assert html.count('class="banner"') == 1
    n = len(run.measurements)
    assert f"{n} of {n} measurements did not reach the ±5 % target" in html
    assert "failed or did not match NumPy" in html


def test_run_page_names_the_label_and_renders_the_selection(run: Run) -> None:
    html = pages.render_run_page(labelled(run, "before-fusion"))
    assert '<h1>before-fusion <span class="sub">run ' in html
    items = dict(data.environment_items(labelled(run, "x")))
    assert "config.selection" not in items and "{'workload'" not in str(items)
    assert items["workloads"].startswith("4 workloads: double, wrong_in_jit")


def test_sweep_runs_describe_crossovers_in_their_parameter(run: Run) -> None:
    html = pages.render_run_page(run)
    assert "affine: speedup vs n" in html
    assert 'id="sweep-1-1"' in html and 'id="sweep-time-1-1"' in html


def busy_environment() -> dict[str, object]:
    noisy = NoiseProbe(samples_s=(0.9, 0.95, 1.0, 1.05, 1.1))
    state = MachineState(
        cores_total=2, cores_used=1, load_avg=(4.5, 3.0, 2.0), others_cores=1.5, probe=noisy
    )
    threads = ThreadState(
        requested=1,
        cores=(1,),
        pinned=True,
        blas=({"internal_api": "openblas", "num_threads": 1},),
        xla_flags="",
    )
    return {
        "host": "vm",
        "threads": threads.to_dict(),
        "machine_before": state.to_dict(),
        "machine_after": state.to_dict(),
    }


def test_the_index_tags_a_run_of_a_busy_noisy_or_unstable_machine() -> None:
    from jitbench.report.summary import summarize

    assert summarize(seed_run()).flags == []
    assert summarize(seed_run(busy_environment())).flags == ["busy", "noisy"]


def test_run_page_shows_threads_and_a_busy_machine_banner() -> None:
    html = pages.render_run_page(seed_run(busy_environment()))
    assert "1 thread (core 1; openblas 1)" in html
    assert 'id="run-notes"' in html
    assert "busy and noisy machine (before and after the run): load 4.50 on 2 cores" in html
    assert "noise floor ±7.4 % before, ±7.4 % after" in html
    assert "1 suspect (size order), left out" in html
    items = dict(data.environment_items(seed_run(busy_environment())))
    assert items["threads"] == "1 thread (core 1; openblas 1)"
    assert items["machine before"].startswith("load 4.50/3.00/2.00 on 2 cores")
    assert items["machine after"].endswith("(busy and noisy)")


def test_terminal_title_names_threads_and_carries_the_banner() -> None:
    from rich.console import Console

    run = seed_run(busy_environment())
    console = Console(width=250, record=True)
    console.print(summary_table(run))
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    assert lines[0] == "jitbench run seed · 1 thread (core 1; openblas 1)"
    s_row = next(line for line in lines if line.startswith("│ gemm     │ S"))
    gemm_s = next(c for c in run.cases() if c.workload == "gemm" and c.size == "S")
    r = analyse(run).speedup(gemm_s.key, Mode.JIT)
    assert r is not None
    assert f"{fmt.ratio_ci(r.value, r.low, r.high)} ⚠" in s_row
    assert "numpy: size-order-inverted" in s_row
    banner = machine_banner(run)
    assert banner is not None and "\n" not in banner.plain
    assert banner.plain.startswith("⚠ busy and noisy machine (before and after the run)")
    assert banner.plain.endswith(
        "noise floor ±7.4 % before, ±7.4 % after · --clock cpu leaves other processes' time out"
    )
    assert machine_banner(seed_run()) is None


FIXTURES = Path(__file__).resolve().parents[1] / "results" / "fixtures"


@pytest.mark.parametrize(
    "fixture", sorted(FIXTURES.glob("run-schema-*.json")), ids=lambda p: p.name
)
def test_old_runs_without_threads_or_machine_still_render(fixture: Path) -> None:
    from rich.console import Console

    run = load_run(fixture)
    html = pages.render_run_page(run)
    if "machine_before" not in run.environment:  # files from before the machine was recorded
        assert "busy" not in html and "noisy machine" not in html
    console = Console(width=250, record=True)
    console.print(summary_table(run))
    title = console.export_text().splitlines()[0].rstrip()
    assert title.startswith(f"jitbench run {run.run_id}")
    if "threads" not in run.environment:  # nothing recorded: nothing claimed
        assert title == f"jitbench run {run.run_id}"


@pytest.mark.parametrize("keep", ["numpy", "jit", "none"])
def test_pages_for_partial_runs(run: Run, keep: str, tmp_path: Path) -> None:
    """Runs measured with fewer modes (or nothing) still render, saying what is missing."""
    ms = tuple(m for m in run.measurements if m.mode.value == keep)
    partial = replace(run, measurements=ms, run_id=f"only-{keep}", complete=False)
    html = write_run_page(partial, tmp_path).read_text()
    assert "incomplete" in html
    if keep == "none":
        assert "No measurements" in html
    else:
        assert "No speedups" in html and 'id="speedup-1"' not in html
        assert ("jit was not measured" in html) == (keep != "jit")
    assert f"only-{keep}" in write_index(tmp_path).read_text()


def test_status_values_in_run(run: Run) -> None:
    """The real run used above really has the failures the tests rely on."""
    got = {(m.case.workload, m.mode): m.status for m in run.measurements}
    assert got[("wrong_in_jit", Mode.JIT)] is Status.MISMATCH
    assert got[("value_branch", Mode.JIT)] is Status.ERROR
    assert got[("double", Mode.JIT)] is Status.OK


# ---------------------------------------------------------------------------------------
# CLI


def test_cli_report_renders_runs_and_rejects_bad_files(cli_here, run: Run, tmp_path: Path) -> None:
    a = save_run(labelled(run, "cpu box"), tmp_path / "a.json")
    b = save_run(
        relabelled(run, device="gpu:0", kind="H100", host="h", run_id="b"), tmp_path / "b.json"
    )
    res = cli_here("report", str(a), str(b), "--out", str(tmp_path / "html"))
    assert res.returncode == 0, res.stderr
    printed = re.search(r"report written to (\S+)", res.stdout)
    assert printed and Path(printed.group(1)).name == "compare-cpu_box-vs-b.html"
    assert (tmp_path / "html" / "index.html").is_file()

    (tmp_path / "bad.json").write_text(json.dumps({"schema": "something else"}))
    res = cli_here("report", str(tmp_path / "bad.json"), "--out", str(tmp_path / "html"))
    assert res.returncode == 2 and "not a jitbench run" in res.stderr


def test_cli_run_writes_page_index_and_label(cli_here, tiny_suite: Path, tmp_path: Path) -> None:
    res = cli_here(
        "run", "double", "--suite", str(tiny_suite), "--quick", "--out", str(tmp_path),
        "--label", "my label",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    printed = re.search(r"report written to (\S+\.html)", res.stdout)
    assert printed, res.stdout
    page = Path(printed.group(1))
    assert page.is_file() and page.parent == tmp_path / "runs"
    run = load_run(page.with_suffix(".json"))
    assert run.config.settings is not None and run.config.settings.label == "my label"
    assert "<h1>my label" in page.read_text()
    assert (tmp_path / "plotly.min.js").is_file()
    assert "my label" in (tmp_path / "index.html").read_text()
    res = cli_here("run", "double", "--suite", str(tiny_suite), "--quick", "--label", "a\nb")
    assert res.returncode == 2 and "--label" in res.stderr


@pytest.mark.e2e  # a fresh interpreter: what it imports
def test_a_report_never_imports_plotly_graph_objects(tmp_path: Path) -> None:
    """Figures are plain dicts: plotly.py's validating classes cost most of a small report's
    time, so the report path must not import them (plotly.py only supplies plotly.js)."""
    code = (
        "import sys; from jitbench.report import load_runs, write_report; "
        "write_report(load_runs(sys.argv[1:2]), sys.argv[2]); "
        "print(sorted(m for m in sys.modules if m.startswith(('plotly.graph_obj', 'plotly.io'))))"
    )
    fixture = FIXTURES / "run-schema-1.3.json"
    res = subprocess.run(
        [sys.executable, "-c", code, str(fixture), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert res.stdout.strip() == "[]", res.stdout
    assert (tmp_path / "out" / "history.html").is_file()


def test_a_different_stored_run_is_never_replaced(run: Run, tmp_path: Path) -> None:
    stored = tmp_path / "runs" / f"{run.run_id}.json"
    stored.parent.mkdir()
    other = replace(run, measurements=run.measurements[:1])  # an older partial copy
    save_run(other, stored)
    before = stored.read_bytes()
    with pytest.raises(OutputError, match="different version"):
        write_run_page(run, tmp_path)
    assert stored.read_bytes() == before
    assert not (tmp_path / "runs" / f"{run.run_id}.html").exists()
    write_run_page(other, tmp_path)  # the same run again: kept as it is, page written
    assert stored.read_bytes() == before
    assert (tmp_path / "runs" / f"{run.run_id}.html").is_file()


def test_big_runs_get_capped_charts_with_a_note(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run of thousands of cases keeps its whole table but charts only the first cases,
    and says so (here with the caps lowered to fit the small real run)."""
    monkeypatch.setattr(pages, "MAX_CHART_CASES", 1)
    monkeypatch.setattr(pages, "MAX_DISTRIBUTIONS", 1)
    monkeypatch.setattr(pages, "MAX_SWEEP_CHARTS", 0)
    monkeypatch.setattr(pages, "MAX_HISTORY_WORKLOADS", 1)
    write_report([run], tmp_path)
    html = (tmp_path / "runs" / f"{run.run_id}.html").read_text()
    presets = [c for c in run.cases() if not data.is_sweep_case(c)]
    assert f"Showing the first 1 of {len(presets)} cases" in html
    assert "Charts for the first 0 of 1 sweeps" in html
    assert html.count("No sample chart") == len(run.cases()) - 1
    assert len(re.findall(r"<tr [^>]*data-case=", html)) == len(run.cases())  # every row
    speedup = json.loads(
        re.search(r'data-target="speedup-1">(.*?)</script>', html, re.S).group(1)  # type: ignore[union-attr]
    )
    assert speedup["layout"]["xaxis"]["categoryarray"] == [
        data.case_label(presets[0]),
        "geometric mean",
    ]
    history = (tmp_path / "history.html").read_text()
    # the one workload drawn: its speedups and times, and its compiled program's metrics
    assert "Showing the first 1 of" in history and history.count('class="jb-figure"') == 2
