"""Every figure agrees with the figures beside it, in every output format.

The analysis layer computes each figure once; these tests generate runs (random process
counts, processes that disagree, missing and failed modes, several devices) and check the
identities on the analysis itself and on what each reader prints: the terminal tables,
CSV, markdown, the HTML table and heatmap, the page's CSV, the index summary and the run
JSON's derived figures. Stored runs (the schema fixtures, the example runs) are checked too.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jitbench import formatting as fmt
from jitbench.config import JAX_MODES, Mode, RunConfig
from jitbench.report import table
from jitbench.results import Case, CompileInfo, Measurement, Run, Status, load_run
from jitbench.results.analysis import analyse
from jitbench.results.model import RecordedConfig
from tests.agreement import CHECKS, check_compile, check_markdown, check_terminal

ROOT = Path(__file__).resolve().parents[2]
STORED = sorted(
    [
        *(ROOT / "tests" / "results" / "fixtures").glob("*.json"),
        *(ROOT / "reports" / "examples" / "runs").glob("*.json"),
    ]
)

# ---------------------------------------------------------------------------------------
# Generated runs


@st.composite
def runs(draw: st.DrawFn) -> Run:
    """A run of 1-4 cases on one or two devices; 1-4 processes; each mode's speed drawn
    per process (so processes disagree at will), some modes missing or failed."""
    processes = draw(st.integers(1, 4))
    devices = draw(st.sampled_from([("cpu:0",), ("cpu:0", "gpu:0")]))
    cases = draw(st.integers(1, 4))
    measurements = []
    for i in range(cases):
        rounds = [draw(st.integers(3, 12)) for _ in range(processes)]
        base = draw(st.floats(1e-6, 1e-1))
        numpy_parts = _parts(draw, rounds, base)
        for device in devices:
            case = Case(workload=f"w{i}", size="S", device=device, dtype="float32")
            measurements.append(_measurement(case, Mode.NUMPY, numpy_parts, rounds))
            for mode in JAX_MODES:
                status = draw(
                    st.sampled_from([Status.OK] * 6 + [Status.ERROR, Status.MISMATCH, None])
                )
                if status is None:  # not measured
                    continue
                speed = base / draw(st.floats(0.05, 50.0))
                parts = _parts(draw, rounds, speed)
                m = _measurement(case, mode, parts, rounds)
                if mode is Mode.JIT:
                    m = replace(m, compile=draw(_compiles()))
                measurements.append(replace(m, status=status) if status is not Status.OK else m)
    return Run(
        run_id="generated",
        started_at="2026-11-26T00:00:00+00:00",
        finished_at="2026-11-26T00:01:00+00:00",
        complete=True,
        environment={},
        measurements=tuple(measurements),
    )


@st.composite
def _compiles(draw: st.DrawFn) -> CompileInfo | None:
    """jit's cold compile: none, one (its stages), or several (each process's, the
    repeats) whose median is not the one the stages are of."""
    if draw(st.booleans()) and draw(st.booleans()):
        return None
    stage = st.floats(1e-4, 1.0)
    trace_s, lower_s, compile_s = draw(stage), draw(stage), draw(stage)
    repeats = draw(st.lists(st.floats(1e-3, 3.0), max_size=5))
    total = trace_s + lower_s + compile_s
    return CompileInfo(
        trace_s=trace_s,
        lower_s=lower_s,
        compile_s=compile_s,
        compile_repeats_s=(total, *repeats) if repeats else (),
    )


def _parts(draw: st.DrawFn, rounds: list[int], centre: float) -> list[list[float]]:
    """Each process's samples: its own speed (up to 2x off the centre), then noise."""
    out = []
    for n in rounds:
        speed = centre * draw(st.floats(0.5, 2.0))
        noise = draw(st.lists(st.floats(0.8, 1.5), min_size=n, max_size=n))
        out.append([speed * x for x in noise])
    return out


def _measurement(
    case: Case, mode: Mode, parts: list[list[float]], rounds: list[int]
) -> Measurement:
    return Measurement(
        case=case,
        mode=mode,
        status=Status.OK,
        samples_s=tuple(x for part in parts for x in part),
        calls_per_sample=1,
        run_sample_counts=tuple(rounds) if len(rounds) > 1 else (),
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_figures_agree_in_every_format_on_generated_runs(run: Run) -> None:
    for check in CHECKS:
        check(run)


@pytest.mark.parametrize("path", STORED, ids=lambda p: p.name)
def test_figures_agree_in_every_format_on_stored_runs(path: Path) -> None:
    run = load_run(path)
    for check in CHECKS:
        check(run)
    speedups = sum(f.speedup is not None for c in analyse(run) for f in c.figures.values())
    # the display checks parsed every speedup the tables show (they can fail)
    assert check_markdown(run) == check_terminal(run) == speedups
    # the compile column was read in both tables, a row each (it can fail)
    assert check_compile(run) == 2 * len(run.cases())


def test_processes_that_disagree_are_marked_faded_and_left_out() -> None:
    """Two processes 3x apart in jit only: the speedup is no headline, its mark is '≠',
    each process's figure is kept, and the geometric mean leaves it out."""
    case = Case(workload="w", size="S", device="cpu:0", dtype="float32")
    numpy = _measurement(case, Mode.NUMPY, [[1e-3] * 6, [1e-3] * 6], [6, 6])
    jit = _measurement(case, Mode.JIT, [[1e-4] * 6, [3e-4] * 6], [6, 6])
    steady = replace(_measurement(case, Mode.EAGER, [[5e-4] * 6, [5e-4] * 6], [6, 6]), case=case)
    run = Run(
        run_id="r", started_at="t", finished_at="t", complete=True, environment={},
        measurements=(numpy, steady, jit),
    )  # fmt: skip
    f = analyse(run).figure(case, Mode.JIT)
    assert f is not None and f.speedup is not None
    assert f.disagree and not f.headline and f.marks == fmt.DISAGREE_MARK
    assert f.process_speedups == pytest.approx((10.0, 10 / 3))
    assert f.speedup.value == pytest.approx(math.sqrt(10 * 10 / 3))
    [eager_g, jit_g] = analyse(run).geomeans(run.cases())
    assert (jit_g.count, jit_g.uncertain, jit_g.value) == (0, 1, None)
    assert eager_g.count == 1 and eager_g.value == pytest.approx(2.0)
    cell = next(iter(table.case_rows(run))).cells["jit_x"]
    assert cell.css == "uncertain" and "10× / 3.33×" in cell.sub
    from jitbench.render.run_table import mark_legend

    legend = mark_legend(run)
    assert legend is not None and legend.startswith("≠ its processes measured it ≥ 1.5× apart")
    [heat_jit, _] = table.heatmaps(run)
    heat = heat_jit.rows[0][1][0]
    assert heat.background == table.UNCERTAIN_BACKGROUND and "≠" in heat.text


def test_a_case_that_fails_in_every_mode_is_broken() -> None:
    case = Case(workload="w", size="S", device="cpu:0", dtype="float32")
    ms = tuple(
        replace(_measurement(case, mode, [[1e-3] * 3], [3]), status=Status.ERROR, samples_s=())
        for mode in (Mode.NUMPY, *JAX_MODES)
    )
    run = Run(run_id="r", started_at="t", finished_at="t", complete=True, environment={},
              measurements=ms)  # fmt: skip
    assert [c.case for c in analyse(run).broken] == [case]
    ok = replace(ms[0], status=Status.OK, samples_s=(1e-3,) * 3)
    assert not analyse(replace(run, measurements=(ok, *ms[1:]))).broken


def test_the_footer_counts_the_processes_each_case_had() -> None:
    """A run whose extra processes measured some cases says so, not 'from 4 processes'."""
    from jitbench.results.analysis.machine import processes_text

    run = _run_with_process_counts([2, 2, 3, 4])
    assert processes_text(run) == "2 processes (3–4 for 2 of 4 measurements)"
    assert processes_text(_run_with_process_counts([2, 2])) == "2 processes"
    assert processes_text(_run_with_process_counts([2, 3])) == (
        "2 processes (3 for 1 of 2 measurements)"
    )
    # Where the first two measured side by side (--overlap), it says so.
    overlapped = replace(run, config=RecordedConfig(settings=RunConfig(overlap=True), selection=()))
    assert processes_text(overlapped) == (
        "2 processes, two at a time, side by side (3–4 for 2 of 4 measurements)"
    )
    # Three processes or more: the third ran alone.
    assert processes_text(_with_overlap(_run_with_process_counts([3, 3]))) == (
        "3 processes, the first two side by side"
    )
    one = replace(
        _run_with_process_counts([1]),
        config=RecordedConfig(settings=RunConfig(overlap=True), selection=()),
    )
    assert processes_text(one) == "1 process"


def _run_with_process_counts(counts: list[int]) -> Run:
    """One NumPy measurement per count, each of that many processes of three samples."""
    ms = tuple(
        _measurement(
            Case(workload=f"w{i}", size="S", device="cpu:0", dtype="float32"),
            Mode.NUMPY,
            [[1e-3] * 3] * n,
            [3] * n,
        )
        for i, n in enumerate(counts)
    )
    return Run(run_id="r", started_at="t", finished_at="t", complete=True, environment={},
               measurements=ms)  # fmt: skip


def _with_overlap(run: Run) -> Run:
    return replace(run, config=RecordedConfig(settings=RunConfig(overlap=True), selection=()))


def test_numpy_is_one_series_on_every_device() -> None:
    """softmax S on cpu:0 and cpu:1: an extra process measured cpu:0's case again, NumPy
    included, so cpu:0's copy of the host series held a third process and its row showed
    another time than cpu:1's (297 against 307 µs). Every device's NumPy row shows the one
    series; cpu:1's speedups still pair its own two processes' rounds."""
    from jitbench.results.merge import pool_runs

    def process(numpy_s: float, jit_s: float, devices: tuple[str, ...]) -> Run:
        ms = []
        for device in devices:
            case = Case(workload="softmax", size="S", device=device, dtype="float32")
            numpy = [numpy_s * (1 + i / 100) for i in range(6)]
            jit = [jit_s * (1 + i / 90) for i in range(6)]
            ms += [_measurement(case, Mode.NUMPY, [numpy], [6])]
            ms += [_measurement(case, Mode.JIT, [jit], [6])]
        return Run(run_id="r", started_at="t", finished_at="t", complete=True, environment={},
                   measurements=tuple(ms))  # fmt: skip

    both = ("cpu:0", "cpu:1")
    first, second = process(297e-6, 30e-6, both), process(310e-6, 31e-6, both)
    run = pool_runs([first, second, process(330e-6, 33e-6, ("cpu:0",))])
    figures = analyse(run)
    cpu0, cpu1 = (Case(workload="softmax", size="S", device=d, dtype="float32").key for d in both)
    assert figures.time(cpu0, Mode.NUMPY) == figures.time(cpu1, Mode.NUMPY)
    numpy1 = figures.figure(cpu1, Mode.NUMPY)
    assert numpy1 is not None and len(numpy1.process_times) == 3
    jit1 = figures.figure(cpu1, Mode.JIT)
    assert jit1 is not None and len(jit1.process_speedups) == 2
    for check in CHECKS:
        check(run)
