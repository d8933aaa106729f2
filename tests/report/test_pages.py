"""Report package without a browser: figure builders, derived data, escaping, files, CLI."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace
from pathlib import Path

import pytest

from jitbench import RunConfig, discover, load_run, run_workloads, save_run
from jitbench import formatting as fmt
from jitbench.measure import diagnose
from jitbench.measure.machine import MachineState, NoiseProbe
from jitbench.measure.threads import ThreadState
from jitbench.render.run_table import machine_banner, summary_table
from jitbench.report import data, figures, pages, write_index, write_report, write_run_page
from jitbench.results import Case, ErrorInfo, Measurement, Mode, Run, Status, safe_file_stem
from tests.conftest import TINY_SUITE

SWEEP_WORKLOAD = '''

@workload(inputs=vec, sizes={"S": {"n": 64}}, sweep=[{"n": 16}, {"n": 1024}, {"n": 65536}],
          tags=("tiny", "sweep"))
def affine(xp, x):
    """An affine map, measured over a size sweep."""
    return 3 * x + 1
'''
EVIL = (
    '<a href="//x.invalid">a</a><b>b</b>'
    '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
)


def real_run(folder: Path) -> Run:
    """A real measured run of the tiny suite plus a swept workload (quick settings)."""
    suite = folder / "report_suite.py"
    suite.write_text(TINY_SUITE + SWEEP_WORKLOAD)
    workloads = discover([suite]).select((), None)
    config = RunConfig.quick_settings(sweep=True)
    # Six paired rounds at least: the fewest with a distribution-free 95 % speedup interval.
    plan = replace(config.plan, min_samples=6, floor_samples=6, max_samples=8)
    return run_workloads(workloads, replace(config, plan=plan))


def crafted_evil(run: Run) -> Run:
    """`run` with hostile text where a results file from an untrusted artifact could put it."""
    ms = []
    for m in run.measurements:
        case = replace(m.case, workload=f"{EVIL}{m.case.workload}", size=f"{m.case.size}<b>")
        err = ErrorInfo(type="Oops</script>", message=EVIL, hint=EVIL) if m.error else None
        ms.append(replace(m, case=case, error=err))
    env = {**run.environment, "host": EVIL}
    return replace(run, run_id="evil-run", measurements=tuple(ms), environment=env)


def relabelled(run: Run, *, device: str, kind: str, host: str, run_id: str) -> Run:
    """`run` as if measured on another machine's device (for side-by-side reports)."""
    ms = tuple(
        replace(
            m, case=replace(m.case, device=device, device_kind=kind, platform=device.split(":")[0])
        )
        for m in run.measurements
    )
    env = {
        **run.environment,
        "host": host,
        "devices": [{"id": 0, "platform": device.split(":")[0], "kind": kind, "label": device}],
    }
    return replace(
        run, run_id=run_id, measurements=ms, environment=env, started_at="2030-01-01T00:00:00+00:00"
    )


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return real_run(tmp_path_factory.mktemp("suite"))


def _case(run: Run, workload: str):
    return next(c for c in run.cases() if c.workload == workload)


# ---------------------------------------------------------------------------------------
# figures


def test_speedup_figure_is_log_with_ci_and_geomean(run: Run) -> None:
    fig = figures.speedup_figure(run, "cpu:0")
    assert fig.layout.yaxis.type == "log"
    assert "×" in fig.layout.yaxis.title.text
    names = [t.name for t in fig.data if t.showlegend is not False]
    assert names == ["eager vs NumPy", "jit vs NumPy"]  # fixed order
    jit = next(t for t in fig.data if t.name == "jit vs NumPy")
    double = data.case_label(_case(run, "double"))
    i = list(jit.x).index(double)
    r = run.speedup(_case(run, "double").key, Mode.JIT)
    assert r is not None and jit.y[i] == pytest.approx(r.value)
    assert jit.error_y.array[i] == pytest.approx(r.high - r.value)
    assert figures.GEOMEAN in list(fig.layout.xaxis.categoryarray)
    geo = next(t for t in fig.data if t.name == "jit geomean")
    g = next(g for g in data.geomean_speedups(run, "cpu:0") if g.mode is Mode.JIT)
    assert geo.y[0] == pytest.approx(g.value)
    # a 1× reference line
    assert any(s.y0 == 1.0 and s.y1 == 1.0 for s in fig.layout.shapes)
    # deterministic
    assert fig.to_json() == figures.speedup_figure(run, "cpu:0").to_json()


def test_failed_and_mismatched_cases_are_notes_not_points(run: Run) -> None:
    fig = figures.speedup_figure(run, "cpu:0")
    wrong = data.case_label(_case(run, "wrong_in_jit"))
    branch = data.case_label(_case(run, "value_branch"))
    for t in fig.data[1:]:  # data[0] only pins the categories
        assert wrong not in list(t.x)
    jit = next(t for t in fig.data if t.name == "jit vs NumPy")
    assert branch not in list(jit.x)
    notes = {a.x: a.text for a in fig.layout.annotations if a.x in (wrong, branch)}
    assert "✗ jit mismatch" in notes[wrong] and "✗ eager mismatch" in notes[wrong]
    assert "✗ jit error" in notes[branch]

    cfig = figures.compile_figure(run, "cpu:0")
    labels = list(cfig.layout.xaxis.categoryarray)
    for t in cfig.data:
        for label in (wrong, branch):
            assert t.y[labels.index(label)] is None, (t.name, label)
    cnotes = {a.x: a.text for a in cfig.layout.annotations}
    assert cnotes[wrong] == "✗ jit mismatch" and cnotes[branch] == "✗ jit error"


def test_compile_figure_stacks_stages_and_shows_break_even(run: Run) -> None:
    fig = figures.compile_figure(run, "cpu:0")
    key = _case(run, "double").key
    jit = run.get(key, Mode.JIT)
    assert jit is not None and jit.compile is not None
    i = list(fig.layout.xaxis.categoryarray).index(data.case_label(_case(run, "double")))
    by_name = {t.name: t for t in fig.data}
    assert by_name["trace (cold)"].y[i] == pytest.approx(jit.compile.trace_s * 1e3)
    assert by_name["lower (cold)"].base[i] == pytest.approx(jit.compile.trace_s * 1e3)
    assert by_name["compile (cold)"].base[i] == pytest.approx(
        (jit.compile.trace_s + jit.compile.lower_s) * 1e3
    )
    assert by_name["steady state per call"].y[i] == pytest.approx(jit.median_s * 1e3)
    assert "ms" in fig.layout.yaxis.title.text
    be = [a.text for a in fig.layout.annotations if a.text.startswith("break-even")]
    assert be, "break-even count missing"


def test_sweep_figure_is_log_log_in_elements(run: Run) -> None:
    assert data.sweep_workloads(run, "cpu:0") == ["affine"]
    fig = figures.sweep_figure(run, "cpu:0", "affine")
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert "elements" in fig.layout.xaxis.title.text and "(s" in fig.layout.yaxis.title.text
    numpy = next(t for t in fig.data if t.name == "numpy")
    assert list(numpy.x) == [16, 1024, 65536]


def _pts(xs, ys):
    return [data.SweepPoint(f"n={x}", x, y, y, y) for x, y in zip(xs, ys, strict=True)]


def test_crossovers_interpolate_on_log_log_axes() -> None:
    # NumPy time grows as x/10; jit is flat at 5 s: equal at x = 50.
    series = {
        Mode.NUMPY: _pts([10, 100, 1000], [1.0, 10.0, 100.0]),
        Mode.JIT: _pts([10, 100, 1000], [5.0, 5.0, 5.0]),
    }
    (c,) = data.crossovers(series, Mode.JIT)
    assert c.overtakes and c.elements == pytest.approx(50.0)
    assert "overtakes NumPy at ≈ 50 elements" in c.text
    # and the other way round: jit falls behind
    series[Mode.JIT] = _pts([10, 100, 1000], [0.5, 50.0, 500.0])
    (c,) = data.crossovers(series, Mode.JIT)
    assert not c.overtakes and 10 < c.elements < 100
    series[Mode.JIT] = _pts([10, 100, 1000], [0.5, 5.0, 50.0])
    assert data.crossovers(series, Mode.JIT) == []
    assert "faster than NumPy at every size" in data.sweep_verdict(series, Mode.JIT)


def test_crossovers_ignore_noise_around_parity() -> None:
    numpy = [data.SweepPoint(f"n={x}", x, 1.0, 0.5, 2.0) for x in (10, 100, 1000, 10_000)]
    jit = _pts([10, 100, 1000, 10_000], [1.2, 0.9, 1.1, 0.95])  # inside NumPy's CI
    series = {Mode.NUMPY: numpy, Mode.JIT: jit}
    assert data.crossovers(series, Mode.JIT) == []
    assert "no clear crossover" in data.sweep_verdict(series, Mode.JIT)
    # a real change with a noisy wobble on the way is one crossover, not three
    jit = _pts([10, 100, 1000, 10_000], [3.0, 0.9, 1.1, 0.1])
    series[Mode.JIT] = jit
    (c,) = data.crossovers(series, Mode.JIT)
    assert c.overtakes and 10 < c.elements < 100


def test_geomean_leaves_failures_out(run: Run) -> None:
    jit = next(g for g in data.geomean_speedups(run, "cpu:0") if g.mode is Mode.JIT)
    ok = [data.speedup_value(run, c, Mode.JIT) for c in run.cases()]
    ok = [v for v in ok if v is not None]
    assert jit.count == len(ok) and jit.failed == 2  # wrong_in_jit mismatch, value_branch error
    assert jit.value == pytest.approx(math.exp(sum(map(math.log, ok)) / len(ok)))


def test_plot_text_and_file_names_are_safe() -> None:
    assert (
        data.plot_text('<a href="javascript:x">s</a>') == '&lt;a href="javascript:x"&gt;s&lt;/a&gt;'
    )
    clipped = data.plot_text("a" * 100 + "[n=1000]")
    assert len(clipped) == data.MAX_LABEL_CHARS and clipped.endswith("a[n=1000]")
    for bad in ("../../evil", "/abs/path", "..", "a b\\c"):
        stem = safe_file_stem(bad)
        assert "/" not in stem and "\\" not in stem and stem not in ("", ".", "..")


# ---------------------------------------------------------------------------------------
# pages


def test_run_page_escapes_hostile_text(run: Run) -> None:
    html = pages.render_run_page(crafted_evil(run))
    assert "<script>window.__pwned" not in html and "<img src=x" not in html
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html  # shown as text
    # the only script elements are ours: plotly, the page script, one JSON block per figure
    n_figures = html.count('class="jb-figure"')
    assert n_figures >= 3
    assert len(re.findall(r"<script", html)) == 2 + n_figures
    assert "</script><img" not in html


def test_write_report_files_and_index(run: Run, tmp_path: Path) -> None:
    other = relabelled(run, device="gpu:0", kind="NVIDIA H100", host="gpuhost", run_id="gpu-run")
    page = write_report([run, other], tmp_path)
    assert page.name.startswith("report-") and page.parent == tmp_path
    for r in (run, other):
        assert (tmp_path / "runs" / f"{safe_file_stem(r.run_id)}.html").is_file()
        assert load_run(tmp_path / "runs" / f"{safe_file_stem(r.run_id)}.json") is not None
    js = tmp_path / "plotly.min.js"
    before = js.stat().st_mtime_ns
    write_run_page(run, tmp_path)
    assert js.stat().st_mtime_ns == before, "plotly.js must be written once, not every time"
    multi = page.read_text()
    assert multi.count('class="jb-figure"') == 2  # one speedup chart per device
    assert "gpuhost · gpu:0 (NVIDIA H100)" in multi

    (tmp_path / "runs" / "broken.json").write_text("{not json")
    index = write_index(tmp_path).read_text()
    assert index.index("gpu-run") < index.index(run.run_id), "newest first"
    assert "broken.json" in index and "could not be read" in index
    assert "NVIDIA H100" in index and page.name in index


def test_run_id_cannot_escape_the_output_folder(run: Run, tmp_path: Path) -> None:
    evil = replace(run, run_id="../../outside")
    page = write_run_page(evil, tmp_path / "out")
    assert page.resolve().parent == (tmp_path / "out" / "runs").resolve()
    assert not (tmp_path / "outside.html").exists()


# ---------------------------------------------------------------------------------------
# CLI


def test_cli_report_renders_runs_and_rejects_bad_files(cli, run: Run, tmp_path: Path) -> None:
    a = save_run(run, tmp_path / "a.json")
    b = save_run(
        relabelled(run, device="gpu:0", kind="H100", host="h", run_id="b"), tmp_path / "b.json"
    )
    res = cli("report", str(a), str(b), "--out", str(tmp_path / "html"))
    assert res.returncode == 0, res.stderr
    printed = re.search(r"report written to (\S+)", res.stdout)
    assert printed and Path(printed.group(1)).is_file()
    assert (tmp_path / "html" / "index.html").is_file()

    (tmp_path / "bad.json").write_text(json.dumps({"schema": "something else"}))
    res = cli("report", str(tmp_path / "bad.json"), "--out", str(tmp_path / "html"))
    assert res.returncode == 2 and "not a jitbench run" in res.stderr


def test_cli_run_writes_page_and_index(cli, tiny_suite: Path, tmp_path: Path) -> None:
    res = cli("run", "double", "--suite", str(tiny_suite), "--quick", "--out", str(tmp_path))
    assert res.returncode == 0, res.stderr
    printed = re.search(r"report written to (\S+\.html)", res.stdout)
    assert printed, res.stdout
    page = Path(printed.group(1))
    assert page.is_file() and page.parent == tmp_path / "runs"
    assert page.with_suffix(".json").is_file()
    assert (tmp_path / "plotly.min.js").is_file()
    assert page.name in (tmp_path / "index.html").read_text()


def test_status_values_in_run(run: Run) -> None:
    """The real run used above really has the failures the tests rely on."""
    got = {(m.case.workload, m.mode): m.status for m in run.measurements}
    assert got[("wrong_in_jit", Mode.JIT)] is Status.MISMATCH
    assert got[("value_branch", Mode.JIT)] is Status.ERROR
    assert got[("double", Mode.JIT)] is Status.OK


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


@pytest.mark.filterwarnings(
    "ignore:divide by zero:RuntimeWarning", "ignore:invalid value:RuntimeWarning"
)  # stats.ratio_of_medians
def test_zero_times_from_a_crafted_file_do_not_break_the_chart(run: Run) -> None:
    key = _case(run, "double").key
    ms = tuple(
        replace(m, samples_s=(0.0,) * len(m.samples_s))
        if m.case.key == key and m.mode is Mode.JIT
        else m
        for m in run.measurements
    )
    fig = figures.speedup_figure(replace(run, measurements=ms), "cpu:0")
    label = data.case_label(_case(run, "double"))
    jit = next(t for t in fig.data if t.name == "jit vs NumPy")
    assert label not in list(jit.x)
    assert any(a.x == label and "jit no ratio" in a.text for a in fig.layout.annotations)
    assert "Infinity" not in fig.to_json() and "NaN" not in fig.to_json()


# ---------------------------------------------------------------------------------------
# threads, the machine's state and suspect speedups (issue 14)

FIXTURES = Path(__file__).resolve().parents[1] / "results" / "fixtures"


def _gemm(size: str, mode: Mode, median: float, nbytes: int) -> Measurement:
    samples = tuple(median * (1 - 0.01 + 0.02 * i / 11) for i in range(12))
    case = Case(workload="gemm", size=size, device="cpu:0", dtype="float32", input_bytes=nbytes)
    return Measurement(
        case=case, mode=mode, status=Status.OK, samples_s=samples, calls_per_sample=1
    )


def seed_run(environment: dict[str, object] | None = None) -> Run:
    """Issue 14's seed: gemm NumPy at S 49.5 ms (a BLAS stall) slower than at M 45.6 ms,
    which made S look like an 11× jit win; plus a healthy workload."""
    ms = [
        _gemm("S", Mode.NUMPY, 49.5e-3, 980_000),
        _gemm("S", Mode.JIT, 4.5e-3, 980_000),
        _gemm("M", Mode.NUMPY, 45.6e-3, 3_920_000),
        _gemm("M", Mode.JIT, 22.8e-3, 3_920_000),
    ]
    run = Run(
        run_id="seed",
        started_at="2030-01-01T00:00:00+00:00",
        finished_at="2030-01-01T00:01:00+00:00",
        complete=True,
        environment=environment or {"host": "vm"},
        config={},
        measurements=tuple(ms),
    )
    return diagnose.run_diagnostics(run)


def test_a_size_order_inversion_is_no_headline_win() -> None:
    run = seed_run()
    s_case = next(c for c in run.cases() if c.size == "S")
    assert data.speedup_value(run, s_case, Mode.JIT) == pytest.approx(11.0)
    assert data.suspect_speedup(run, s_case, Mode.JIT)
    [jit] = [g for g in data.geomean_speedups(run, "cpu:0") if g.mode is Mode.JIT]
    assert (jit.count, jit.suspect, jit.failed) == (1, 1, 0)
    assert jit.value == pytest.approx(2.0)  # M alone; S's 11× is left out
    fig = figures.speedup_figure(run, "cpu:0")
    suspect = next(t for t in fig.data if t.name == "jit: suspect, left out of ★")
    assert list(suspect.x) == ["gemm[S]"] and suspect.marker.symbol == "diamond-open"
    notes = {a.x: a.text for a in fig.layout.annotations}
    assert "⚠ jit size order" in notes["gemm[S]"]
    rows = data.measurement_rows(run)
    s_jit = next(r for r in rows if r["size"].text == "S" and r["mode"].text == "jit")
    assert s_jit["speedup"].text.endswith(" ⚠") and "geometric mean" in s_jit["speedup"].title
    s_numpy = next(r for r in rows if r["size"].text == "S" and r["mode"].text == "numpy")
    assert "size-order-inverted" in s_numpy["notes"].text
    html = pages.render_run_page(run)
    assert "1 suspect (size order), left out" in html


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


def test_run_page_shows_threads_and_a_busy_machine_banner() -> None:
    html = pages.render_run_page(seed_run(busy_environment()))
    assert "1 thread (core 1; openblas 1)" in html
    assert 'id="machine-banner"' in html
    assert "busy and noisy machine (before and after the run): load 4.50 on 2 cores" in html
    assert "noise floor ±7.4 % before, ±7.4 % after" in html
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
    r = run.speedup(gemm_s.key, Mode.JIT)
    assert r is not None
    assert f"{fmt.ratio_ci(r.value, r.low, r.high)} ⚠" in s_row
    assert "numpy: size-order-inverted" in s_row
    banner = machine_banner(run)
    assert banner is not None and "\n" not in banner.plain
    assert banner.plain.startswith("⚠ busy and noisy machine (before and after the run)")
    assert banner.plain.endswith("noise floor ±7.4 % before, ±7.4 % after")
    assert machine_banner(seed_run()) is None


@pytest.mark.parametrize(
    "fixture", sorted(FIXTURES.glob("run-schema-*.json")), ids=lambda p: p.name
)
def test_old_runs_without_threads_or_machine_still_render(fixture: Path) -> None:
    from rich.console import Console

    run = load_run(fixture)
    assert "threads" not in run.environment and "machine_before" not in run.environment
    html = pages.render_run_page(run)
    assert 'id="machine-banner"' not in html
    console = Console(width=250, record=True)
    console.print(summary_table(run))
    assert console.export_text().splitlines()[0].rstrip() == f"jitbench run {run.run_id}"
