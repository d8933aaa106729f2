"""The identities every reader's figures must keep, checked on a run: a speedup is the
shown NumPy time ÷ the shown mode time in the analysis and in each output format. Used by
tests/results/test_analysis.py and, on every run file the tests write, by conftest.py."""

from __future__ import annotations

import csv
import io
import itertools
import math
import re
from collections.abc import Sequence

from rich.console import Console

from jitbench import formatting as fmt
from jitbench.config import JAX_MODES, Mode
from jitbench.formatting import OVER_EAGER_MARK
from jitbench.render.progress_line import plain_case_line, processes_held
from jitbench.render.run_csv import run_csv
from jitbench.render.run_markdown import run_markdown
from jitbench.render.run_table import compact_table, summary_table
from jitbench.report import summary, table
from jitbench.results import Run, is_host_copy, run_to_dict
from jitbench.results.analysis import PROCESS_SPLIT_FACTOR, WIDE_FACTOR, analyse

EXACT = 1e-9


def geomean(xs: Sequence[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs))


def close(a: float, b: float, rel: float) -> bool:
    return math.isclose(a, b, rel_tol=rel) or (math.isinf(a) and math.isinf(b))


# ---------------------------------------------------------------------------------------
# The identities, on the analysis and on each format


def check_analysis(run: Run) -> None:
    figures = analyse(run)
    for c in figures:
        for f in c.figures.values():
            # The process parts `compare` tests multiply out to the time every run shows.
            if f.time is not None:
                parts = f.shown_process_times
                assert parts and close(geomean(parts), f.time.value, EXACT), (f.mode, parts)
        base = c.get(c.baseline)  # NumPy, or eager for a JAX-only case
        for mode in JAX_MODES:
            f = c.get(mode)
            if f is None or f.speedup is None:
                continue
            assert f.over is c.baseline
            assert base is not None and base.time is not None and f.time is not None
            r = f.speedup
            assert close(r.value, base.time.value / f.time.value, EXACT)
            assert r.low is None or r.low <= r.value <= (r.high or math.inf)
            assert f.headline == (not (f.disagree or f.wide or f.suspect))
            if f.process_speedups:
                split = max(f.process_speedups) / min(f.process_speedups)
                assert f.disagree == (split >= PROCESS_SPLIT_FACTOR)
            assert f.wide == (r.factor is not None and r.factor > WIDE_FACTOR)
        # Any pair's speedup (what `bench()`'s result gives) is the quotient of the two
        # times shown, its interval around it.
        for a, b in itertools.permutations(c.figures.values(), 2):
            pair = c.speedup(b.mode, over=a.mode)
            if a.time is None or b.time is None:
                assert pair is None
                continue
            assert pair is not None and close(pair.value, a.time.value / b.time.value, 1e-9)
            assert pair.low is None or pair.low <= pair.value <= (pair.high or math.inf)
        jit, eager = c.get(Mode.JIT), c.get(Mode.EAGER)
        if c.eager_over_jit is not None:
            assert eager is not None and jit is not None and eager.time and jit.time
            assert close(c.eager_over_jit.value, eager.time.value / jit.time.value, EXACT)
        if c.break_even_calls is not None and jit is not None and jit.measurement.compile:
            saved = base.time.value - jit.time.value  # type: ignore[union-attr]
            total = jit.measurement.compile.total_compile_s
            assert total is not None
            expected = total / saved if saved > 0 else math.inf
            assert close(c.break_even_calls, expected, EXACT)
    for g in figures.geomeans(run.cases()):
        values = [
            f.speedup.value
            for c in figures
            if (f := c.get(g.mode)) is not None
            and f.speedup is not None
            and f.headline
            and c.baseline is Mode.NUMPY
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
            base = analyse(run).time(
                tuple(m["case"][k] for k in ("workload", "size", "device", "dtype")),  # type: ignore[arg-type]
                Mode(shown["speedup_over"]),
            )
            assert base is not None
            assert close(shown["speedup"]["value"], base.value / shown["time_s"]["value"], EXACT)


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
        if OVER_EAGER_MARK in jit_x and _TIME.fullmatch(eager) and _TIME.fullmatch(jit):
            assert close(_ratio(jit_x), _seconds(eager) / _seconds(jit), 0.016), line
            checked += 1
    return checked


def check_terminal(run: Run) -> int:
    """The compact table (roomy layout: three digits) and `--wide` render every case, and
    their speedups agree with their times to display rounding. Returns how many it
    checked."""
    checked = 0
    text = ""
    for renderable in (compact_table(run, None), summary_table(run)):
        console = Console(width=400, record=True, color_system=None)
        console.print(renderable)
        text = console.export_text()
        # (a name with control characters is shown escaped: the fault tests' business)
        assert all(c.workload in text for c in run.cases() if c.workload.isprintable())
    for line in text.splitlines():  # the --wide table's text, the last rendered
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


def check_numpy_one_series(run: Run) -> None:
    """NumPy is host code, measured once per case whatever the devices: every device's
    NumPy row of a workload × size × dtype shows the same time and interval (an extra
    process that measured one device's copy again counts for every copy)."""
    figures = analyse(run)
    shown: dict[tuple[str, str, str], list[object]] = {}
    for c in figures:
        f = c.get(Mode.NUMPY)
        if f is not None and f.ok and f.time is not None:
            host = (c.case.workload, c.case.size, c.case.dtype)
            shown.setdefault(host, []).append(f.time)
    for host, times in shown.items():
        assert all(t == times[0] for t in times), (host, times)


def check_progress_line(run: Run) -> None:
    """The line printed as a case finishes, handed the case's measurements (every
    process's share), quotes the times its row shows. Left out: a case whose NumPy row
    shows a series another device's copy holds more of, which its event does not carry."""
    numpy = [m for m in run.measurements if m.mode is Mode.NUMPY and m.samples_s]
    for c in analyse(run):
        own = c.get(Mode.NUMPY)
        host = (c.case.workload, c.case.size, c.case.dtype)
        if own is not None and any(
            (o.case.workload, o.case.size, o.case.dtype) == host
            and o.case != c.case
            and not is_host_copy(o, own.measurement)
            for o in numpy
        ):
            continue
        ms = [f.measurement for f in c.figures.values()]
        line = plain_case_line(ms, processes=processes_held(ms))
        assert "(first" not in line, line
        for f in c.figures.values():
            if f.ok and f.time is not None:
                assert f"{f.mode.value} {fmt.seconds(f.time.value)}" in line, (line, f.mode)


CHECKS = (
    check_analysis,
    check_csv,
    check_page,
    check_markdown,
    check_terminal,
    check_numpy_one_series,
    check_progress_line,
)
