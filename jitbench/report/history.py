"""History: each workload's time and speedup across every run of a report folder, in run
order (labelled by git commit) or by date, with the runs whose environment changed marked,
the way asv's site shows a benchmark over commits.

Pure functions of runs' summaries (`summary.RunSummary`: what the history draws of a run,
cached beside the runs so a refresh does not load every run again); no I/O.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from jitbench import formatting as fmt
from jitbench.config import ALL_MODES, JAX_MODES
from jitbench.gate.program import compile_change_of
from jitbench.report import data, figures
from jitbench.report.data import plot_text
from jitbench.report.figures import Figure, trace
from jitbench.report.summary import (
    PROGRAM_MODES,
    CaseFigures,
    CaseKey,
    ProgramMetrics,
    RunSummary,
    summarize,
)
from jitbench.results import Mode, Run
from jitbench.results.analysis.changes import HistoryStep, Point, history_steps

#: One colour per size preset series (sizes beyond these cycle).
SIZE_COLORS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860")
MODE_DASH = {Mode.NUMPY: "dot", Mode.EAGER: "dash", Mode.JIT: "solid"}
#: The marker of a run whose compiled program of the mode changed since the run before.
PROGRAM_CHANGED_SYMBOL = "star-diamond"


def environment_changes(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """'jax 0.10.1 → 0.10.2' for each field that differs between two fingerprints."""
    return [
        f"{k} {before.get(k, '—')} → {after.get(k, '—')}"
        for k in dict.fromkeys([*before, *after])
        if before.get(k) != after.get(k)
    ]


@dataclass(frozen=True)
class HistoryRun:
    """One run on the history axis: `category` is its place in run order (commit or
    label), `date` its start time (ISO), `changes` what changed since the previous run."""

    summary: RunSummary
    name: str
    category: str
    date: str | None
    commit: str | None
    changes: tuple[str, ...]
    #: the run's preset cases in its own order with their figures (a dict: ordered, quick
    #: to look up)
    cases: Mapping[CaseKey, CaseFigures] = field(default_factory=dict)
    #: its place in the history, counted from 1
    number: int = 0

    @property
    def run_id(self) -> str:
        return self.summary.run_id


def history_runs(runs: Sequence[Run | RunSummary]) -> list[HistoryRun]:
    """`runs` (or their summaries) oldest first, with their axis labels and environment
    changes."""
    out: list[HistoryRun] = []
    previous: dict[str, str] | None = None
    summaries = [r if isinstance(r, RunSummary) else summarize(r) for r in runs]
    for i, s in enumerate(data.oldest_first(summaries)):
        fp = s.fingerprint
        changes = tuple(environment_changes(previous, fp)) if previous is not None else ()
        previous = fp
        short = (s.commit or "").split(" ")[0][:8]
        tag = s.label or short or s.run_id[-6:]
        when = data.started(s)
        out.append(
            HistoryRun(
                summary=s,
                name=s.name,
                category=f"{i + 1}: {tag}" + (f" {short}" if s.label and short else ""),
                date=when.isoformat() if when else None,
                commit=s.commit,
                changes=changes,
                cases=s.cases,
                number=i + 1,
            )
        )
    return out


@dataclass(frozen=True)
class Series:
    """One case × JAX mode's speedup over NumPy across a history: the runs that have it
    (oldest first), its figure in each, and the steps it took (`analysis.changes`)."""

    key: CaseKey
    mode: Mode
    runs: tuple[HistoryRun, ...]
    points: tuple[Point, ...]
    steps: tuple[HistoryStep, ...]

    @property
    def workload(self) -> str:
        return self.key[0]

    @property
    def size(self) -> str:
        return self.key[1]

    def run_of(self, point: Point) -> HistoryRun:
        """The history run of one of the series' points."""
        return self.runs[self.points.index(point)]

    def to_json(self) -> dict[str, object]:
        """The series as plain data (`jitbench history --format json`): its runs' figures
        and its steps with their two runs and bisect line (None without commits)."""
        workload, size, device, dtype = self.key
        return {
            "workload": workload,
            "size": size,
            "device": device,
            "dtype": dtype,
            "mode": self.mode.value,
            "figure": "speedup",
            "runs": [
                {
                    "number": self.run_of(p).number,
                    "run_id": p.run_id,
                    "commit": p.commit,
                    "value": p.value,
                    "low": p.low,
                    "high": p.high,
                }
                for p in self.points
            ],
            "steps": [
                {
                    "at_run": self.run_of(found.after).number,
                    "before": {"run_id": found.before.run_id, "commit": found.before.commit},
                    "after": {"run_id": found.after.run_id, "commit": found.after.commit},
                    "ratio": found.step.ratio.value,
                    "low": found.step.ratio.low,
                    "high": found.step.ratio.high,
                    "p_value": found.step.p_value,
                    "bisect": found.bisect_command(self.workload, self.size),
                }
                for found in self.steps
            ],
        }


def history_series(hruns: Sequence[HistoryRun]) -> list[Series]:
    """Every case × JAX mode with a speedup in any run, first seen first, with its steps:
    what the history page marks and `jitbench history` prints."""
    keys = list(dict.fromkeys(k for h in hruns for k in h.cases))
    out = []
    for key in keys:
        for mode in JAX_MODES:
            runs, points = [], []
            for h in hruns:
                figs = h.cases.get(key)
                if figs is None or mode.value not in figs.speedups:
                    continue
                v, low, high = figs.speedups[mode.value]
                runs.append(h)
                points.append(Point(h.run_id, h.commit, v, low, high))
            if points:
                out.append(
                    Series(key, mode, tuple(runs), tuple(points), tuple(history_steps(points)))
                )
    return out


def history_workloads(hruns: Sequence[HistoryRun]) -> list[str]:
    """Every workload measured at a preset size in any of the runs, first seen first."""
    return list(dict.fromkeys(k[0] for h in hruns for k in h.cases))


#: What stands for the bisect line where a run of the step recorded no git commit.
NO_COMMIT = "no bisect line: the runs recorded no git commit"


def step_head(series: Series, found: HistoryStep) -> str:
    """'selu S jit: ×1.15 slower [1.09–1.21] at run 7': a step of a series, its size and
    interval (of the speedup's change, so of the mode's time against NumPy's)."""
    r = found.step.ratio
    return (
        f"{series.workload} {series.size} {series.mode.value}: "
        f"{fmt.speedup_step(r.value, r.low, r.high)} at run {series.run_of(found.after).number}"
    )


def step_text(series: Series, found: HistoryStep) -> str:
    """One line for a step of a series: its size and interval, the two runs and the
    `jitbench bisect` line that finds its commit (or why there is none)."""
    before, after = series.run_of(found.before), series.run_of(found.after)
    command = found.bisect_command(series.workload, series.size)
    return (
        f"{step_head(series, found)} (p {found.step.p_value:.2g}), between {before.name} "
        f"and {after.name}; {command or NO_COMMIT}"
    )


def _steps(
    series: Sequence[Series], label: Mapping[CaseKey, str], pages: Mapping[str, str]
) -> list[tuple[HistoryRun, float, str, str]]:
    """Each step of the workload's series: the first run after it, its speedup there, the
    annotation (the step's size, linked to the two runs' pages) and the hover text."""
    out = []
    for s in series:
        for found in s.steps:
            before, after = s.run_of(found.before), s.run_of(found.after)
            links = [
                f'<a href="{html.escape(pages[h.run_id])}">{h.number}</a>'
                if h.run_id in pages
                else str(h.number)
                for h in (before, after)
            ]
            text = f"step {fmt.ratio(found.step.ratio.value)} ({links[0]}→{links[1]})"
            hover = f"{label.get(s.key, '')} " + step_text(s, found)
            out.append((after, found.after.value, text, plot_text(hover, limit=400)))
    return out


def workload_figure(
    hruns: Sequence[HistoryRun],
    workload: str,
    *,
    series: Sequence[Series] | None = None,
    pages: Mapping[str, str] | None = None,
) -> Figure | None:
    """Two panels over the runs: eager and jit speedup over NumPy (top) and time per call
    of every mode (bottom), one series per size × device, log axes with 95 % intervals.
    Buttons switch the x axis between run order (commits) and date; a dotted line marks
    each run whose environment changed, its hover text says what; an arrow marks each
    step of a speedup series (`history_series`, or `series` when given), linked to the
    two runs' pages (`pages`: run id → link), its hover text with the bisect line. None
    when no run measured the workload."""
    keys: dict[tuple[str, str, str], None] = {}
    for h in hruns:
        for case_key in h.cases:
            if case_key[0] == workload:
                keys.setdefault(case_key[1:])
    if not keys:
        return None
    devices = {k[1] for k in keys}
    dtypes = {k[2] for k in keys}

    def series_name(size: str, device: str, dtype: str) -> str:
        parts = [
            size,
            *([device] if len(devices) > 1 else []),
            *([dtype] if len(dtypes) > 1 else []),
        ]
        return plot_text(" ".join(parts), limit=30)

    fig = figures.Draft()
    x_cat: list[list[str]] = []
    x_date: list[list[str | None]] = []
    speedups: list[float] = [1.0]
    times: list[float] = []
    labels: dict[CaseKey, str] = {}
    for k, (size, device, dtype) in enumerate(keys):
        color = SIZE_COLORS[k % len(SIZE_COLORS)]
        label = series_name(size, device, dtype)
        for panel, modes in ((1, JAX_MODES), (2, ALL_MODES)):
            for mode in modes:
                cats, dates, ys, plus, minus, hover = [], [], [], [], [], []
                symbols: list[str] = []
                key = (workload, size, device, dtype)
                program = None  # the mode's program in the run before
                for h in hruns:
                    figs = h.cases.get(key)
                    now = figs.programs.get(mode.value) if figs else None
                    moved = program is not None and now is not None and now != program
                    program = now or program
                    found = (figs.speedups if panel == 1 else figs.times) if figs else {}
                    if mode.value not in found:
                        continue
                    v, low, high = found[mode.value]
                    text = fmt.ratio_ci(v, low, high) if panel == 1 else fmt.seconds(v)
                    lo = low if low is not None and 0 < low <= v else v
                    hi = high if high is not None and math.isfinite(high) else v
                    cats.append(h.category)
                    dates.append(h.date)
                    ys.append(v)
                    plus.append(hi - v)
                    minus.append(v - lo)
                    (speedups if panel == 1 else times).extend([lo, hi])
                    hover.append(
                        f"{plot_text(h.name, limit=40)}<br>{plot_text(h.commit or 'no commit')}"
                        f"<br>{label} {mode.value}: {text}"
                        + (
                            "<br>◆ the compiled program changed since the run before"
                            if moved
                            else ""
                        )
                    )
                    symbols.append(PROGRAM_CHANGED_SYMBOL if moved else str(figures.SYMBOLS[mode]))
                if not ys:
                    continue
                labels[key] = label
                fig.add_trace(
                    trace(
                        "scatter",
                        x=cats,
                        y=ys,
                        mode="lines+markers",
                        name=f"{mode.value} {'×' if panel == 1 else 'time'} {label}",
                        legendgroup=label,
                        line={"color": color, "dash": MODE_DASH[mode], "width": 1.5},
                        marker={
                            "color": color,
                            "symbol": symbols,
                            "size": [11 if s == PROGRAM_CHANGED_SYMBOL else 7 for s in symbols],
                        },
                        error_y={
                            "type": "data",
                            "symmetric": False,
                            "array": plus,
                            "arrayminus": minus,
                            "color": color,
                            "thickness": 1,
                            "width": 2,
                        },
                        hovertext=hover,
                        hoverinfo="text",
                        xaxis="x" if panel == 1 else "x2",
                        yaxis="y" if panel == 1 else "y2",
                    ),
                )
                x_cat.append(cats)
                x_date.append(dates)
    if not fig.data:
        return None
    mine = [s for s in (history_series(hruns) if series is None else series) if s.key in labels]
    steps = _steps(mine, labels, pages or {})
    slo, shi = figures.log_range(speedups, pad=1.3)
    tlo, thi = figures.log_range(times, pad=1.3)
    categories = [h.category for h in hruns]
    changed = [(i, h) for i, h in enumerate(hruns) if h.changes]

    def marks(by_date: bool) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
        # 1× line on the speedup panel: the shape takes the value (a label would take log10).
        shapes: list[dict[str, object]] = [
            {
                "type": "line",
                "xref": "x domain",
                "x0": 0,
                "x1": 1,
                "yref": "y",
                "y0": 1,
                "y1": 1,
                "line": {"color": figures.NOTE_COLOR, "width": 1, "dash": "dash"},
            }
        ]
        notes: list[dict[str, object]] = []
        for i, h in changed:
            x = h.date if by_date else i
            if x is None:
                continue
            for axis in ("x", "x2"):
                shapes.append(
                    {
                        "type": "line",
                        "xref": axis,
                        "x0": x,
                        "x1": x,
                        "yref": "paper",
                        "y0": 0,
                        "y1": 1,
                        "line": {"color": "#8b949e", "dash": "dot", "width": 1},
                    }
                )
            notes.append(
                {
                    "xref": "x",
                    "x": x,
                    "yref": "paper",
                    "y": 1.0,
                    "yanchor": "bottom",
                    "text": "env",
                    "showarrow": False,
                    "font": {"size": 10, "color": "#6e7781"},
                    "hovertext": plot_text("; ".join(h.changes), limit=400),
                }
            )
        for after, y, text, hover in steps:
            x = after.date if by_date else after.category
            if x is None:
                continue
            notes.append(
                {
                    "x": x,
                    "y": math.log10(y),
                    "xref": "x",
                    "yref": "y",
                    "text": text,
                    "hovertext": hover,
                    "showarrow": True,
                    "arrowhead": 2,
                    "ax": 0,
                    "ay": -28,
                    "font": {"size": 11, "color": figures.SUSPECT_COLOR},
                }
            )
        return shapes, notes

    shapes, notes = marks(False)
    date_shapes, date_notes = marks(True)
    figures.base_layout(fig, height=560)
    fig.update_layout(
        shapes=shapes,
        annotations=notes,
        margin={"t": 70},
        updatemenus=[
            {
                "type": "buttons",
                "direction": "right",
                "x": 1,
                "xanchor": "right",
                "y": 1.0,
                "yanchor": "bottom",
                "pad": {"b": 24},
                "showactive": True,
                "buttons": [
                    {
                        "label": "by run (commit)",
                        "method": "update",
                        "args": [
                            {"x": x_cat},
                            {
                                "xaxis.type": "category",
                                "xaxis2.type": "category",
                                "shapes": shapes,
                                "annotations": notes,
                            },
                        ],
                    },
                    {
                        "label": "by date",
                        "method": "update",
                        "args": [
                            {"x": x_date},
                            {
                                "xaxis.type": "date",
                                "xaxis2.type": "date",
                                "shapes": date_shapes,
                                "annotations": date_notes,
                            },
                        ],
                    },
                ],
            }
        ],
    )
    # Two panels sharing the x axis: speedups above, times below.
    x_axis = {
        "type": "category",
        "categoryorder": "array",
        "categoryarray": categories,
        "gridcolor": "#e5e9ef",
        "automargin": True,
    }
    fig.update_layout(
        xaxis={**x_axis, "anchor": "y", "matches": "x2", "showticklabels": False},
        xaxis2={**x_axis, "anchor": "y2", "tickangle": -30},
        yaxis={
            **figures.ratio_axis(slo, shi, "speedup (×, log)"),
            "domain": [0.54, 1.0],
            "anchor": "x",
            "gridcolor": "#e5e9ef",
            "automargin": True,
        },
        yaxis2={
            **figures.seconds_axis(tlo, thi, "time per call (log)"),
            "domain": [0.0, 0.46],
            "anchor": "x2",
            "gridcolor": "#e5e9ef",
            "automargin": True,
        },
    )
    return fig.build()


# ---------------------------------------------------------------------------------------
# The compiled programs over runs


def _count(value: float) -> str:
    return f"{value:,.0f}"


#: The program metrics drawn over runs: key, name, how a raw value reads.
PROGRAM_METRICS: tuple[tuple[str, str, Callable[[float], str]], ...] = (
    ("instructions", "HLO instructions", _count),
    ("fusions", "fusions", _count),
    ("bytes_accessed", "bytes accessed", lambda v: fmt.bytes_(int(v))),
    ("flops", "flops", _count),
    ("temp_bytes", "temp memory", lambda v: fmt.bytes_(int(v))),
    ("peak_bytes", "peak memory", lambda v: fmt.bytes_(int(v))),
    ("recompiles", "recompiles during timing", _count),
)


def metric_values(metrics: ProgramMetrics) -> dict[str, float]:
    """A program's metrics by `PROGRAM_METRICS` key (those recorded)."""
    values: dict[str, float | None] = {
        "instructions": float(sum(metrics.opcodes.values())) if metrics.opcodes else None,
        "fusions": float(metrics.opcodes.get("fusion", 0)) if metrics.opcodes else None,
        "bytes_accessed": metrics.bytes_accessed,
        "flops": metrics.flops,
        "temp_bytes": metrics.temp_bytes,
        "peak_bytes": metrics.peak_bytes,
        "recompiles": float(metrics.recompiles),
    }
    return {k: float(v) for k, v in values.items() if v is not None}


@dataclass(frozen=True)
class ProgramPoint:
    """One run's compiled program of a case × mode: its metrics, and whether it changed
    since the case's program in the run before that had one (`moved`: what moved, as
    `gate.program` says it)."""

    run: HistoryRun
    values: Mapping[str, float]
    changed: bool
    moved: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProgramSeries:
    """A case × jit/sharded mode's compiled-program metrics across the runs that
    recorded them (schema 1.8 on: older runs have no point)."""

    key: CaseKey
    mode: Mode
    points: tuple[ProgramPoint, ...]

    @property
    def changes(self) -> tuple[ProgramPoint, ...]:
        return tuple(p for p in self.points if p.changed)


def program_series(hruns: Sequence[HistoryRun]) -> list[ProgramSeries]:
    """Every case × jit/sharded mode with a recorded program in any run, first seen first:
    its metrics in each run and the runs where its program changed (what the history
    page draws and lists)."""
    keys = list(dict.fromkeys(k for h in hruns for k in h.cases))
    out = []
    for key in keys:
        for mode in PROGRAM_MODES:
            points: list[ProgramPoint] = []
            before: ProgramMetrics | None = None
            for h in hruns:
                figs = h.cases.get(key)
                now = figs.compiled.get(mode.value) if figs else None
                if now is None:
                    continue
                change = (
                    compile_change_of(before.compile_info(), now.compile_info())
                    if before is not None
                    else None
                )
                changed = change is not None and change.changed
                moved = change.moved if change is not None and changed else ()
                points.append(ProgramPoint(h, metric_values(now), changed, moved))
                before = now
            if points:
                out.append(ProgramSeries(key, mode, tuple(points)))
    return out


def program_change_text(series: ProgramSeries, point: ProgramPoint) -> str:
    """'◆ double S jit at run 5: program changed: +2 fusion, bytes accessed +31 %'."""
    workload, size = series.key[0], series.key[1]
    what = ", ".join(point.moved) or "program changed"
    return f"◆ {workload} {size} {series.mode.value} at run {point.run.number}: {what}"


def _program_marker(points: Sequence[ProgramPoint]) -> dict[str, object]:
    """◆ at the points whose program changed (one symbol for the trace where none did)."""
    if not any(p.changed for p in points):
        return {"symbol": "circle", "size": 7}
    return {
        "symbol": [PROGRAM_CHANGED_SYMBOL if p.changed else "circle" for p in points],
        "size": [11 if p.changed else 7 for p in points],
    }


def program_figure(
    hruns: Sequence[HistoryRun], workload: str, *, series: Sequence[ProgramSeries] | None = None
) -> Figure | None:
    """The workload's compiled-program metrics over the runs, one metric at a time (a
    menu picks it): one series per size × device × jit/sharded, each as a multiple of its
    first run so every size shares the axis, the raw value in the hover; a run whose
    program changed is drawn ◆, its hover says what moved (`program_series`, or `series`
    when given). None when no run recorded the workload's programs."""
    mine = [
        s for s in (program_series(hruns) if series is None else series) if s.key[0] == workload
    ]
    if not mine:
        return None
    devices = {s.key[2] for s in mine}
    dtypes = {s.key[3] for s in mine}
    colors: dict[CaseKey, str] = {}
    fig = figures.Draft()
    visible: list[str] = []
    drawn: list[str] = []
    for metric, name, show in PROGRAM_METRICS:
        for s in mine:
            _, size, device, dtype = s.key
            parts = [
                size,
                *([device] if len(devices) > 1 else []),
                *([dtype] if len(dtypes) > 1 else []),
            ]
            label = plot_text(" ".join(parts), limit=30)
            color = colors.setdefault(s.key, SIZE_COLORS[len(colors) % len(SIZE_COLORS)])
            points = [p for p in s.points if metric in p.values]
            if not points:
                continue
            first = next((p.values[metric] for p in points if p.values[metric] != 0), None)
            ys = [round(p.values[metric] / first, 6) if first else 1.0 for p in points]
            hover = [
                show(p.values[metric])
                + (f" (×{y:.3g})" if first else "")
                + (
                    "<br>◆ the compiled program changed since the run before: "
                    + plot_text(", ".join(p.moved) or "other instructions", limit=200)
                    if p.changed
                    else ""
                )
                for p, y in zip(points, ys, strict=True)
            ]
            fig.add_trace(
                trace(
                    "scatter",
                    x=[p.run.category for p in points],
                    y=ys,
                    mode="lines+markers",
                    name=f"{s.mode.value} {label}",
                    legendgroup=f"{s.mode.value} {label}",
                    visible=metric == PROGRAM_METRICS[0][0],
                    line={"color": color, "dash": "dash" if s.mode is Mode.SHARDED else "solid"},
                    marker={"color": color, **_program_marker(points)},
                    # the trace's words once, each point's value and what moved
                    hovertemplate=f"{s.mode.value} {label} {name}: %{{hovertext}}"
                    "<extra>%{x}</extra>",
                    hovertext=hover,
                )
            )
            drawn.append(metric)
        if metric in drawn:
            visible.append(metric)
    if not fig.data:
        return None
    figures.base_layout(fig, height=320)
    names = {k: n for k, n, _ in PROGRAM_METRICS}
    fig.update_layout(
        margin={"t": 50},
        xaxis={
            "type": "category",
            "categoryorder": "array",
            "categoryarray": [h.category for h in hruns],
            "tickangle": -30,
            "gridcolor": "#e5e9ef",
            "automargin": True,
        },
        yaxis={
            "title": {"text": "× its first run"},
            "gridcolor": "#e5e9ef",
            "rangemode": "tozero",
            "automargin": True,
        },
        updatemenus=[
            {
                "type": "dropdown",
                "x": 0,
                "xanchor": "left",
                "y": 1.0,
                "yanchor": "bottom",
                "pad": {"b": 8},
                "active": 0,
                "buttons": [
                    {
                        "label": names[metric],
                        "method": "update",
                        "args": [{"visible": [m == metric for m in drawn]}],
                    }
                    for metric in visible
                ],
            }
        ],
    )
    return fig.build()
