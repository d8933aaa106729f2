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
from jitbench.render.progress_line import plain_case_line
from jitbench.render.run_csv import run_csv
from jitbench.render.run_markdown import run_markdown
from jitbench.render.run_table import compact_table, summary_table
from jitbench.report import summary, table
from jitbench.results import Run, is_host_copy, run_to_dict
from jitbench.results.analysis import PROCESS_SPLIT_FACTOR, WIDE_FACTOR, analyse
from jitbench.results.merge import processes_in

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
            # Break-even pays back the compile figure the tables show beside it.
            saved = base.time.value - jit.time.value  # type: ignore[union-attr]
            assert jit.compile_s is not None
            expected = jit.compile_s / saved if saved > 0 else math.inf
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


def _table_rows(lines: Sequence[str], head: str, sep: str) -> list[dict[str, str]]:
    """A printed table's rows as {header: cell}: the header line is the one holding
    `head`, cells split on `sep`; continuation lines (folded notes: no first cell) and
    lines of another width (a hostile name holding `sep`) are left out."""
    split = [[c.strip() for c in line.split(sep)] for line in lines]
    found = [cells for cells in split if head in cells]
    if not found:
        return []
    headers = found[0]
    return [
        dict(zip(headers, cells, strict=True))
        for cells in split
        if len(cells) == len(headers) and cells != headers and cells[1] and "---" not in cells[1]
    ]


def terminal_rows(run: Run) -> list[dict[str, str]]:
    """The rows of the `--format wide` table as {header: cell}."""
    console = Console(width=400, record=True, color_system=None, file=io.StringIO())
    console.print(summary_table(run))
    lines = console.export_text().splitlines()
    heads = [line.replace("┃", "│") for line in lines if line.startswith("┃")]
    body = [line for line in lines if line.startswith("│")]
    return _table_rows([*heads, *body], "workload", "│")


def markdown_rows(run: Run) -> list[dict[str, str]]:
    """The rows of `run_markdown` as {header: cell} (the size cell as the case's size)."""
    rows = _table_rows(run_markdown(run).splitlines(), "workload", "|")
    for r in rows:
        r["size"] = r["size"].split(" (")[0]
        r["workload"] = r["workload"].strip("`")
    return rows


def _by_case(rows: Sequence[dict[str, str]], run: Run) -> dict[tuple[str, ...], dict[str, str]]:
    """`rows` by (workload, size, device), where exactly one row and one case has it."""
    seen: dict[tuple[str, ...], list[dict[str, str]]] = {}
    for r in rows:
        seen.setdefault((r["workload"], r["size"], r["device"]), []).append(r)
    cases: dict[tuple[str, ...], int] = {}
    for c in run.cases():
        k = (c.workload, c.size, c.device)
        cases[k] = cases.get(k, 0) + 1
    return {k: rs[0] for k, rs in seen.items() if len(rs) == 1 and cases.get(k) == 1}


def check_compile(run: Run) -> int:
    """jit's compile figure (`ModeFigure.compile_s`, the median of every cold compile)
    is what every reader shows: the wide terminal table, markdown and CSV, the HTML
    table and its CSV, the compile chart, the run JSON's figures, bench()'s summary and
    `compare`'s compile change. Returns how many cases it checked."""
    from jitbench.gate import compare
    from jitbench.interactive.one_call import BenchResult
    from jitbench.render.bench_summary import summary_text

    figures = analyse(run)
    expected: dict[tuple[str, ...], float | None] = {}
    by_key: dict[tuple[str, str, str, str], float] = {}
    for c in figures:
        jit = c.get(Mode.JIT)
        compile_s = jit.compile_s if jit is not None else None
        expected[(c.case.workload, c.case.size, c.case.device)] = compile_s
        if compile_s is not None:
            by_key[c.case.key] = compile_s
    checked = 0
    for rows, column in ((terminal_rows(run), "jit compile"), (markdown_rows(run), "jit compile")):
        for k, r in _by_case(rows, run).items():
            assert r[column] == fmt.seconds(expected[k]), (k, r[column], expected[k])
            checked += 1
    # The CSVs hold a row per case (per measurement on the page), in the run's order; a
    # hostile name is written escaped, so rows are matched by position, not by name.
    rows = list(csv.DictReader(io.StringIO(run_csv(run))))
    assert len(rows) == len(run.cases())
    for case, r in zip(run.cases(), rows, strict=True):
        got = float(r["jit_compile_s"]) if r["jit_compile_s"] else None
        assert got == by_key.get(case.key), (case, got)
    for row in table.case_rows(run):
        assert row.cells["compile"].sort == by_key.get(row.case.key), row.case
    rows = list(csv.DictReader(io.StringIO(table.run_csv(run))))
    assert len(rows) == len(run.measurements)
    for m, r in zip(run.measurements, rows, strict=True):
        if m.mode is Mode.JIT:
            got = float(r["compile_s"]) if r["compile_s"] else None
            assert got == by_key.get(m.case.key), (m.case, got)
    for m in run_to_dict(run)["measurements"]:
        shown = m.get("figures")
        if shown and m["mode"] == "jit":
            key = tuple(m["case"][k] for k in ("workload", "size", "device", "dtype"))
            assert shown.get("compile_s") == by_key.get(key), key  # type: ignore[arg-type]
    lines = summary_text(BenchResult(run=run, name="run")).splitlines()
    said = sorted(line.strip().split(";")[0] for line in lines if line.startswith("  jit compile "))
    assert said == sorted(f"jit compile {fmt.seconds(x)}" for x in by_key.values())
    for e in compare(run, run).entries:
        if e.mode is Mode.JIT and e.compile is not None:
            assert e.compile.base_s == e.compile.new_s == by_key[e.key], e.key
    return checked


def check_numpy_one_series(run: Run) -> None:
    """NumPy is host code, measured once per case whatever the devices: every device's
    NumPy row of a workload × size × dtype shows the same time and interval (an extra
    process that measured one device's copy again counts for every copy), in the
    analysis and in the terminal's wide table, markdown, CSV, the HTML table and its CSV
    and the run JSON."""
    figures = analyse(run)
    shown: dict[tuple[str, str, str], list[object]] = {}
    for c in figures:
        f = c.get(Mode.NUMPY)
        if f is not None and f.ok and f.time is not None:
            host = (c.case.workload, c.case.size, c.case.dtype)
            shown.setdefault(host, []).append(f.time)
    for host, times in shown.items():
        assert all(t == times[0] for t in times), (host, times)
    dtype = {
        (c.case.workload, c.case.size, c.case.device): c.case.dtype
        for c in figures
        if (f := c.get(Mode.NUMPY)) is not None and f.ok and f.time is not None
    }

    def same(found: dict[tuple[str, ...], set[object]], where: str) -> None:
        for host, values in found.items():
            assert len(values) == 1, (where, host, values)

    for where, rows, column in (
        ("terminal", terminal_rows(run), "numpy"),
        ("markdown", markdown_rows(run), "NumPy"),
        ("csv", list(csv.DictReader(io.StringIO(run_csv(run)))), "numpy_s"),
    ):
        found: dict[tuple[str, ...], set[object]] = {}
        for k, r in _by_case(rows, run).items():
            if k in dtype:
                found.setdefault((k[0], k[1], dtype[k]), set()).add(r[column])
        same(found, where)
    page: dict[tuple[str, ...], set[object]] = {}
    for row in table.case_rows(run):
        if (numpy := row.cells["numpy"].sort) is not None:
            page.setdefault((row.case.workload, row.case.size, row.case.dtype), set()).add(numpy)
    same(page, "page")
    page_csv: dict[tuple[str, ...], set[object]] = {}
    for r in csv.DictReader(io.StringIO(table.run_csv(run))):
        if r["mode"] == "numpy" and r["time_s"]:
            page_csv.setdefault((r["workload"], r["size"], r["dtype"]), set()).add(r["time_s"])
    same(page_csv, "page csv")
    json_times: dict[tuple[str, ...], set[object]] = {}
    for m in run_to_dict(run)["measurements"]:
        if m["mode"] == "numpy" and m.get("figures") and m["status"] == "ok":
            host = tuple(m["case"][k] for k in ("workload", "size", "dtype"))
            json_times.setdefault(host, set()).add(m["figures"]["time_s"]["value"])
    same(json_times, "json")


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
        line = plain_case_line(ms, processes=processes_in(ms))
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
    check_compile,
    check_numpy_one_series,
    check_progress_line,
)
