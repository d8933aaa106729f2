"""Every figure agrees with the figures beside it, in every output format.

The analysis layer computes each figure once; these tests generate runs (random process
counts, processes that disagree, missing and failed modes, several devices) and check the
identities on the analysis itself and on what each reader prints: the terminal tables,
CSV, markdown, the HTML table and heatmap, the page's CSV, the index summary and the run
JSON's derived figures. Stored runs (the schema fixtures, the example runs) are checked too.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from jitbench import formatting as fmt
from jitbench.config import JAX_MODES, Mode
from jitbench.render.run_csv import run_csv
from jitbench.render.run_markdown import run_markdown
from jitbench.render.run_table import compact_table, summary_table
from jitbench.report import summary, table
from jitbench.results import Case, Measurement, Run, Status, load_run, run_to_dict
from jitbench.results.analysis import PROCESS_SPLIT_FACTOR, WIDE_FACTOR, analyse

ROOT = Path(__file__).resolve().parents[2]
STORED = sorted(
    [
        *(ROOT / "tests" / "results" / "fixtures").glob("*.json"),
        *(ROOT / "reports" / "examples" / "runs").glob("*.json"),
    ]
)
EXACT = 1e-9

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
                measurements.append(replace(m, status=status) if status is not Status.OK else m)
    return Run(
        run_id="generated",
        started_at="2026-11-26T00:00:00+00:00",
        finished_at="2026-11-26T00:01:00+00:00",
        complete=True,
        environment={},
        measurements=tuple(measurements),
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


def close(a: float, b: float, rel: float) -> bool:
    return math.isclose(a, b, rel_tol=rel) or (math.isinf(a) and math.isinf(b))


# ---------------------------------------------------------------------------------------
# The identities, on the analysis and on each format


def check_analysis(run: Run) -> None:
    figures = analyse(run)
    for c in figures:
        numpy = c.get(Mode.NUMPY)
        for mode in JAX_MODES:
            f = c.get(mode)
            if f is None or f.speedup is None:
                continue
            assert numpy is not None and numpy.time is not None and f.time is not None
            r = f.speedup
            assert close(r.value, numpy.time.value / f.time.value, EXACT)
            assert r.low is None or r.low <= r.value <= (r.high or math.inf)
            assert f.headline == (not (f.disagree or f.wide or f.suspect))
            if f.process_speedups:
                split = max(f.process_speedups) / min(f.process_speedups)
                assert f.disagree == (split >= PROCESS_SPLIT_FACTOR)
            assert f.wide == (r.factor is not None and r.factor > WIDE_FACTOR)
        jit, eager = c.get(Mode.JIT), c.get(Mode.EAGER)
        if c.eager_over_jit is not None:
            assert eager is not None and jit is not None and eager.time and jit.time
            assert close(c.eager_over_jit.value, eager.time.value / jit.time.value, EXACT)
        if c.break_even_calls is not None and jit is not None and jit.measurement.compile:
            saved = numpy.time.value - jit.time.value  # type: ignore[union-attr]
            total = jit.measurement.compile.total_compile_s
            assert total is not None
            expected = total / saved if saved > 0 else math.inf
            assert close(c.break_even_calls, expected, EXACT)
    for g in figures.geomeans(run.cases()):
        values = [
            f.speedup.value
            for c in figures
            if (f := c.get(g.mode)) is not None and f.speedup is not None and f.headline
        ]
        assert g.count == len(values)
        if values:
            assert g.value is not None and close(
                g.value, math.exp(sum(map(math.log, values)) / len(values)), EXACT
            )


def check_csv(run: Run) -> None:
    """`run --format csv` / `report --format csv`: full precision, so the identity is exact."""
    for row in csv.DictReader(io.StringIO(run_csv(run))):
        for mode in ("eager", "jit"):
            if row[f"{mode}_speedup"] and row["numpy_s"] and row[f"{mode}_s"]:
                quotient = float(row["numpy_s"]) / float(row[f"{mode}_s"])
                assert close(float(row[f"{mode}_speedup"]), quotient, EXACT), row


def check_page(run: Run) -> None:
    """The HTML table's cells (their sort keys hold the figures), the page's CSV, the
    heatmap, the index summary and the run JSON."""
    for row in table.case_rows(run):
        numpy = row.cells["numpy"].sort
        for mode in ("eager", "jit"):
            speedup, time = row.cells[f"{mode}_x"].sort, row.cells[mode].sort
            if speedup is not None and numpy is not None and time is not None:
                assert close(speedup, numpy / time, EXACT)
    by_case: dict[tuple[str, ...], dict[str, dict[str, str]]] = {}
    for r in csv.DictReader(io.StringIO(table.run_csv(run))):
        by_case.setdefault((r["workload"], r["size"], r["device"]), {})[r["mode"]] = r
    for modes in by_case.values():
        for mode in ("eager", "jit"):
            r, n = modes.get(mode), modes.get("numpy")
            if r and n and r["speedup"] and n["time_s"] and r["time_s"]:
                quotient = float(n["time_s"]) / float(r["time_s"])
                assert close(float(r["speedup"]), quotient, EXACT)
    s = summary.summarize(run)
    for figs in s.cases.values():
        for mode, (value, _, _) in figs.speedups.items():
            t = figs.times
            if "numpy" in t and mode in t:
                assert close(value, t["numpy"][0] / t[mode][0], EXACT)
    for m in run_to_dict(run)["measurements"]:
        shown = m.get("figures")
        if shown and shown["speedup"]:
            numpy = analyse(run).time(
                tuple(m["case"][k] for k in ("workload", "size", "device", "dtype")), Mode.NUMPY
            )  # type: ignore[arg-type]
            assert numpy is not None
            assert close(shown["speedup"]["value"], numpy.value / shown["time_s"]["value"], EXACT)


_TIME = re.compile(r"(\d[\d,.]*)\s?(ns|µs|ms|s)\b")
_UNITS = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


def _seconds(text: str) -> float:
    m = _TIME.fullmatch(text.strip())
    assert m, text
    return float(m.group(1).replace(",", "")) * _UNITS[m.group(2)]


def _ratio(text: str) -> float:
    return float(text.strip().split("×")[0].replace(",", ""))


def check_markdown(run: Run) -> int:
    """Markdown rounds to three digits: the speedup shown agrees with the times shown to
    within that rounding (three figures, each within 0.5 %). Returns how many it checked."""
    checked = 0
    for line in run_markdown(run).splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) < 10:
            continue
        numpy, eager, jit, eager_x, jit_x = cells[3:8]
        for time, speedup in ((eager, eager_x), (jit, jit_x)):
            if "×" not in speedup or not _TIME.fullmatch(numpy) or not _TIME.fullmatch(time):
                continue
            assert close(_ratio(speedup), _seconds(numpy) / _seconds(time), 0.016), line
            checked += 1
    return checked


def check_terminal(run: Run) -> int:
    """The compact table (roomy layout: three digits) and `--wide` render every case, and
    their speedups agree with their times to display rounding. Returns how many it
    checked."""
    checked = 0
    for renderable in (compact_table(run, None), summary_table(run)):
        console = Console(width=400, record=True, color_system=None)
        console.print(renderable)
        text = console.export_text()
        assert all(case.workload in text for case in run.cases())
    console = Console(width=400, record=True, color_system=None)
    console.print(summary_table(run))
    for line in console.export_text().splitlines():
        # '│ workload │ size │ device │ numpy │ eager │ jit │ eager × │ jit × │ …'
        parts = [p.strip() for p in line.split("│")]
        if len(parts) < 10 or not _TIME.fullmatch(parts[4] or "x"):
            continue
        numpy = _seconds(parts[4])
        for time, speedup in ((parts[5], parts[7]), (parts[6], parts[8])):
            if "×" in speedup and _TIME.fullmatch(time):
                assert close(_ratio(speedup), numpy / _seconds(time), 0.016), line
                checked += 1
    return checked


CHECKS = (check_analysis, check_csv, check_page, check_markdown, check_terminal)


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
