"""Plotly figure builders for a run's page: pure functions of a Run (no I/O, no timing,
fixed trace order) that return plotly.js figures as plain dicts (`Figure`). Titles are the
page's headings, not part of the figure, so they wrap on a phone and never collide with a
legend.

Every text that comes from a results file goes through `data.plot_text` before it reaches a
figure, because plotly renders a subset of HTML in labels and hover text. On a log axis,
plotly reads an annotation's y as log10 of the value (shapes take the value itself):
`parity_line` is the one place that draws the 1× line and its label.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

from jitbench import formatting as fmt
from jitbench.config import ALL_MODES, JAX_MODES
from jitbench.report import data
from jitbench.report.data import plot_text, speedup_title
from jitbench.results import Case, Measurement, Mode, Run, Status
from jitbench.results.analysis import analyse
from jitbench.results.analysis.crossovers import crossovers

COLORS = {Mode.NUMPY: "#4c72b0", Mode.EAGER: "#dd8452", Mode.JIT: "#55a868"}
SYMBOLS = {Mode.NUMPY: "square", Mode.EAGER: "circle", Mode.JIT: "diamond"}
FAIL_COLOR = "#b2182b"
SUSPECT_COLOR = "#9a6700"  # a figure shown but not believed (size-order-inverted)
NOTE_COLOR = "#444444"
GEOMEAN = "geometric mean"
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"
_NICE = (1, 2, 5)
#: Horizontal room (px) a category needs to stay readable; charts wider than the screen
#: scroll sideways inside their box (see `min_width`).
CATEGORY_PX = 26


#: A plotly.js figure as plain JSON-ready data: {"data": [trace, ...], "layout": {...}}.
#: Built as dicts, not plotly.py objects: plotly.py validates every property as it is set,
#: which cost most of a report's time (a second for 24 history figures); the tests validate
#: every builder's output with `go.Figure` instead (`tests/report/figure_check.py`, driven
#: by `tests/report/test_figure_validation.py`).
Figure = dict[str, Any]


def trace(kind: str, **props: Any) -> dict[str, Any]:
    """One plotly.js trace of type `kind` ('scatter', 'bar', 'box') with `props`, as the
    dict plotly.js reads (nested properties as dicts: `marker={"color": ...}`)."""
    return {"type": kind, **props}


class Draft:
    """A figure being put together: traces, shapes, annotations and layout collected as
    they come, then made into one figure dict (`build`)."""

    def __init__(self) -> None:
        self.data: list[dict[str, Any]] = []
        self.layout: dict[str, Any] = {}
        self.shapes: list[dict[str, Any]] = []
        self.annotations: list[dict[str, Any]] = []

    def add_trace(self, trace: dict[str, Any]) -> None:
        self.data.append(trace)

    def add_shape(self, **shape: Any) -> None:
        self.shapes.append(shape)

    def add_annotation(self, **annotation: Any) -> None:
        self.annotations.append(annotation)

    def update_layout(self, **changes: Any) -> None:
        """Merge `changes` into the layout (nested dicts key by key, like plotly)."""
        _merge(self.layout, changes)

    def build(self) -> Figure:
        layout = dict(self.layout)
        if self.shapes:
            layout["shapes"] = [*layout.get("shapes", ()), *self.shapes]
        if self.annotations:
            layout["annotations"] = [*layout.get("annotations", ()), *self.annotations]
        return {"data": self.data, "layout": layout}


def _merge(into: dict[str, Any], changes: dict[str, Any]) -> None:
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            into[key] = dict(into[key])
            _merge(into[key], value)
        else:
            into[key] = value


def base_layout(fig: Draft, *, height: int = 420) -> None:
    """The look every figure shares: no title (the page's heading names the chart), the
    legend in one row above the plot (plotly grows the top margin to fit it), readable
    fonts, and no template (plotly.js has none unless given one; plotly.py's default
    would add kilobytes of JSON per figure)."""
    fig.update_layout(
        font={"family": FONT, "size": 12, "color": "#1d232b"},
        height=height,
        paper_bgcolor="#ffffff",
        plot_bgcolor="#ffffff",
        margin={"l": 64, "r": 24, "t": 36, "b": 60},
        legend={
            "orientation": "h",
            "yanchor": "bottom",
            "y": 1.02,
            "xanchor": "left",
            "x": 0,
            "font": {"size": 11},
        },
        hoverlabel={"align": "left"},
        xaxis={"gridcolor": "#e5e9ef", "linecolor": "#9aa5b1", "automargin": True},
        yaxis={"gridcolor": "#e5e9ef", "linecolor": "#9aa5b1", "automargin": True},
    )


def min_width(categories: int) -> int:
    """The width (px) below which a category chart would crowd its labels."""
    return 120 + CATEGORY_PX * categories


def log_ticks(lo: float, hi: float) -> list[float]:
    """1-2-5 tick values covering [lo, hi] (positive), for readable log axes."""
    if not (lo > 0 and hi > 0):
        return []
    ticks = []
    for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        for m in _NICE:
            v = m * 10.0**e
            if lo <= v <= hi:
                ticks.append(float(f"{v:.12g}"))
    if len(ticks) > 8:  # wide range: decades only
        ticks = [t for t in ticks if f"{t:.12g}".lstrip("0.").startswith("1")]
    return ticks


def log_range(values: Sequence[float], pad: float = 1.6) -> tuple[float, float]:
    """(low, high) around the positive finite `values`, widened by `pad` on a log scale."""
    vals = [v for v in values if v > 0 and math.isfinite(v)]
    lo, hi = (min(vals), max(vals)) if vals else (0.5, 2.0)
    return lo / pad, hi * pad


def ratio_axis(lo: float, hi: float, title: str) -> dict[str, Any]:
    """A log axis of ratios over [lo, hi] with ticks written as '2×'."""
    ticks = log_ticks(lo, hi)
    return {
        "title": {"text": title},
        "type": "log",
        "range": [math.log10(lo), math.log10(hi)],
        "tickvals": ticks,
        "ticktext": [ratio_tick(t) for t in ticks],
    }


def ratio_tick(value: float) -> str:
    """'0.5×', '2×', '1000×' (never '1e+03×' as a tick)."""
    return f"{value:,.12g}×" if value >= 1 else f"{value:.3g}×"


def seconds_axis(lo: float, hi: float, title: str) -> dict[str, Any]:
    """A log axis of seconds over [lo, hi] with ticks written as '25 µs'."""
    ticks = log_ticks(lo, hi)
    return {
        "title": {"text": title},
        "type": "log",
        "range": [math.log10(lo), math.log10(hi)],
        "tickvals": ticks,
        "ticktext": [fmt.seconds(t) for t in ticks],
    }


def parity_line(fig: Draft, text: str = "1× = NumPy", *, y: float = 1.0) -> None:
    """A dashed horizontal line at `y` on the figure's log y axis, labelled at its left
    end, just above the line. The shape takes the value; the annotation takes log10 of it
    (plotly's rule for annotations on log axes), so both sit at `y`."""
    fig.add_shape(
        type="line",
        xref="paper",
        x0=0,
        x1=1,
        yref="y",
        y0=y,
        y1=y,
        line={"color": NOTE_COLOR, "width": 1, "dash": "dash"},
        layer="below",
    )
    fig.add_annotation(
        xref="paper",
        x=0,
        xanchor="left",
        yref="y",
        y=math.log10(y),
        yanchor="bottom",
        text=text,
        showarrow=False,
        font={"size": 10, "color": NOTE_COLOR},
        name="parity",
    )


def _notes_at_bottom(fig: Draft, notes: dict[str, dict[str, str]]) -> None:
    """Per-category notes (a failure, a suspect figure) at the bottom of the plot area."""
    for label, lines in notes.items():
        failed = any(t.startswith("✗") for t in lines)
        fig.add_annotation(
            x=label,
            yref="paper",
            y=0,
            yanchor="bottom",
            showarrow=False,
            text="<br>".join(lines),
            hovertext="<br>".join(lines.values()),
            font={"color": FAIL_COLOR if failed else SUSPECT_COLOR, "size": 11},
            bgcolor="rgba(255,255,255,0.8)",
        )


# ---------------------------------------------------------------------------------------
# Speedups over NumPy, per case


def speedup_range(runs: Sequence[Run]) -> tuple[float, float]:
    """A y range (×, linear units) that fits every speedup, CI and 1× of `runs`."""
    values = [1.0]
    for run in runs:
        figures = analyse(run)
        for case in run.cases():
            for mode in JAX_MODES:
                r = figures.speedup(case, mode)
                if r is not None:
                    values += [r.value, r.low or r.value, r.high or r.value]  # non-finite
                    # and non-positive values are dropped by log_range
    return log_range(values)


def speedup_figure(
    run: Run,
    device: str,
    *,
    cases: Sequence[Case] | None = None,
    y_range: tuple[float, float] | None = None,
) -> Figure:
    """Speedup over NumPy of eager and jit per case on `device` (default: its preset
    sizes; sweeps have their own charts), log axis, 95 % CI error bars, a 1× line and a
    geometric-mean column. Failed or mismatched cases get a red note instead of a point; a
    suspect one (size-order-inverted) is drawn hollow in another colour with a note, an
    uncertain one (processes that disagree, an interval too wide: `ModeFigure.uncertain`)
    faded and hollow; both are left out of the geometric mean.

    Args:
        cases: the cases to show, in order (default `data.headline_cases`).
        y_range: (low, high) in × to share an axis between charts; default fits the data.
    """
    if cases is None:
        cases = data.headline_cases(run, device)[0]
    labels = data.case_categories(cases)
    categories = [*labels, GEOMEAN]
    modes_present = {m.mode for m in run.measurements}
    fig = Draft()
    # An invisible trace pins every category, including those with no point at all.
    fig.add_trace(
        trace(
            "scatter",
            x=categories,
            y=[1.0] * len(categories),
            mode="markers",
            marker={"opacity": 0},
            hoverinfo="skip",
            showlegend=False,
        )
    )
    values: list[float] = [1.0]
    notes: dict[str, dict[str, str]] = {}  # label -> {short text: hover detail}
    geo = {g.mode: g for g in data.geomean_speedups(run, device)}
    figures = analyse(run)
    for mode in JAX_MODES:
        if mode not in modes_present:
            continue
        xs, ys, plus, minus, hover = [], [], [], [], []
        suspect: list[int] = []  # indices into xs of points left out of the geometric mean
        faded: list[int] = []  # ... and of those too uncertain to headline
        for case, label in zip(cases, labels, strict=True):
            f = figures.figure(case, mode)
            r = f.speedup if f is not None else None
            m = run.get(case.key, mode)
            if r is not None and not (math.isfinite(r.value) and r.value > 0):
                notes.setdefault(label, {})[f"✗ {mode.value} no ratio"] = (
                    f"{mode.value}: speedup {r.value} cannot be drawn on a log axis"
                )
                continue
            if r is None:
                numpy_m = run.get(case.key, Mode.NUMPY)
                failed = [x for x in (m, numpy_m) if x is not None and x.failed]
                for x in failed:
                    notes.setdefault(label, {})[f"✗ {x.mode.value} {x.status.value}"] = (
                        f"{x.mode.value}: {plot_text(x.failure_text, limit=120)}"
                    )
                if not failed and m is not None and m.ok and numpy_m is not None and numpy_m.ok:
                    notes.setdefault(label, {})[f"✗ {mode.value} no ratio"] = (
                        f"{mode.value}: no speedup can be drawn on a log axis (a time is zero)"
                    )
                continue
            lo = r.low if r.low is not None and 0 < r.low <= r.value else r.value
            hi = r.high if r.high is not None and math.isfinite(r.high) else r.value
            xs.append(label)
            ys.append(r.value)
            plus.append(hi - r.value)
            minus.append(r.value - lo)
            values += [lo, hi]
            hover.append(f"{label}<br>{mode.value}: {fmt.ratio_ci(r.value, r.low, r.high)}")
            assert f is not None
            if f.uncertain and not f.suspect:
                faded.append(len(xs) - 1)
                hover[-1] += f"<br>{f.marks or '?'} {plot_text(speedup_title(f), limit=160)}"
            if f.suspect:
                suspect.append(len(xs) - 1)
                hover[-1] += "<br>⚠ size-order-inverted: left out of the geometric mean"
                notes.setdefault(label, {})[f"⚠ {mode.value} size order"] = (
                    f"{mode.value}: a side is slower than at a larger size "
                    "(size-order-inverted); not in the geometric mean"
                )
        solid = [i for i in range(len(xs)) if i not in faded]

        def pick(values: list[Any], chosen: list[int]) -> list[Any]:
            return [values[i] for i in chosen]

        if faded:
            # Uncertain figures: faded and hollow, their error bars faded too; drawn, not
            # headlined (never the strongest-looking point without a mark).
            fig.add_trace(
                trace(
                    "scatter",
                    x=pick(xs, faded),
                    y=pick(ys, faded),
                    mode="markers",
                    name=f"{mode.value}: uncertain, left out of ★",
                    legendgroup=mode.value,
                    offsetgroup=mode.value,
                    marker={
                        "color": _rgba(COLORS[mode], 0.35),
                        "symbol": f"{SYMBOLS[mode]}-open",
                        "size": 10,
                        "line": {"width": 1.5, "color": _rgba(COLORS[mode], 0.5)},
                    },
                    error_y={
                        "type": "data",
                        "symmetric": False,
                        "array": pick(plus, faded),
                        "arrayminus": pick(minus, faded),
                        "color": _rgba(COLORS[mode], 0.3),
                        "thickness": 1,
                        "width": 3,
                    },
                    hovertext=pick(hover, faded),
                    hoverinfo="text",
                )
            )
        suspect = [solid.index(i) for i in suspect if i in solid]
        xs, ys, plus, minus, hover = (pick(v, solid) for v in (xs, ys, plus, minus, hover))
        fig.add_trace(
            trace(
                "scatter",
                x=xs,
                y=ys,
                mode="markers",
                name=f"{mode.value} vs NumPy",
                legendgroup=mode.value,
                offsetgroup=mode.value,
                marker={
                    "color": COLORS[mode],
                    "symbol": SYMBOLS[mode],
                    "size": 10,
                    "line": {"width": 1, "color": "white"},
                },
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": plus,
                    "arrayminus": minus,
                    "color": COLORS[mode],
                    "thickness": 1.5,
                    "width": 4,
                },
                hovertext=hover,
                hoverinfo="text",
            )
        )
        if suspect:
            # Drawn over the solid point, hollow and in another colour: seen, not believed.
            fig.add_trace(
                trace(
                    "scatter",
                    x=[xs[i] for i in suspect],
                    y=[ys[i] for i in suspect],
                    mode="markers",
                    name=f"{mode.value}: suspect, left out of ★",
                    legendgroup=mode.value,
                    offsetgroup=mode.value,
                    marker={
                        "color": SUSPECT_COLOR,
                        "symbol": f"{SYMBOLS[mode]}-open",
                        "size": 13,
                        "line": {"width": 2, "color": SUSPECT_COLOR},
                    },
                    hovertext=[hover[i] for i in suspect],
                    hoverinfo="text",
                )
            )
        g = geo.get(mode)
        if g is not None and g.value is not None:
            values.append(g.value)
            fig.add_trace(
                trace(
                    "scatter",
                    x=[GEOMEAN],
                    y=[g.value],
                    mode="markers+text",
                    name=f"{mode.value} geomean",
                    legendgroup=mode.value,
                    offsetgroup=mode.value,
                    showlegend=False,
                    marker={
                        "color": COLORS[mode],
                        "symbol": "star",
                        "size": 15,
                        "line": {"width": 1, "color": "black"},
                    },
                    text=[fmt.ratio(g.value)],
                    # Beside the star, never above it: the top of the plot would cut it.
                    textposition="middle left" if mode is Mode.EAGER else "middle right",
                    cliponaxis=False,
                    hovertext=[
                        f"{mode.value}: geometric mean {fmt.ratio(g.value)} over "
                        f"{g.count} case(s) at {g.scope}; {g.failed} failed or mismatched, "
                        f"{g.suspect} suspect (size order) and {g.uncertain} uncertain left out"
                    ],
                    hoverinfo="text",
                )
            )
    lo, hi = y_range or log_range(values)
    _notes_at_bottom(fig, notes)
    parity_line(fig)
    base_layout(fig, height=300 + _category_margin(labels))
    fig.update_layout(
        scattermode="group",
        scattergap=0.5,
        xaxis={
            "title": {"text": "workload [size]"},
            "type": "category",
            "categoryorder": "array",
            "categoryarray": categories,
            "tickangle": -30,
        },
        margin={"r": 56, "b": 40},
        yaxis=ratio_axis(lo, hi, "speedup over NumPy (×, log)"),
    )
    return fig.build()


def _category_margin(labels: Sequence[str]) -> int:
    """Room (px) for category labels drawn at -30° below the plot."""
    longest = max((len(html.unescape(x)) for x in labels), default=0)
    return 40 + int(3.8 * min(longest, data.MAX_LABEL_CHARS))


# ---------------------------------------------------------------------------------------
# jit: compile against run time


def compile_figure(run: Run, device: str, *, cases: Sequence[Case] | None = None) -> Figure:
    """jit's cold compile (`ModeFigure.compile_s`: trace + lower + XLA compile, the median
    of its cold compiles), its cold first call and its steady-state time per call, per
    case on `device` (default: preset sizes), on a log axis in seconds so a slow compile
    does not flatten the others. The break-even call
    count and the stage split are in the hover text (and the table). Failed or mismatched
    jit cases get a red note, no bars."""
    if cases is None:
        cases = data.headline_cases(run, device)[0]
    labels = data.case_categories(cases)
    compile_s: list[float | None] = []
    first: list[float | None] = []
    steady: list[float | None] = []
    hover_notes: list[str] = []
    notes: dict[str, dict[str, str]] = {}
    values: list[float] = []
    for case, label in zip(cases, labels, strict=True):
        m = run.get(case.key, Mode.JIT)
        c = m.compile if m is not None else None
        shown = m is not None and m.status is Status.OK and c is not None
        jit = analyse(run).figure(case, Mode.JIT) if shown else None
        compile_s.append(jit.compile_s if jit is not None else None)
        first.append(c.first_call_s if shown and c else None)
        t = analyse(run).time(case, Mode.JIT) if shown else None
        steady.append(t.value if t is not None else None)
        values += [v for v in (compile_s[-1], first[-1], steady[-1]) if v]
        if m is not None and not shown:
            text = f"✗ jit {m.status.value}" if m.status is not Status.OK else "no compile data"
            notes.setdefault(label, {})[text] = plot_text(m.failure_text, limit=120)
        be = analyse(run).break_even_calls(case)
        split = (
            f"trace {fmt.seconds(c.trace_s)} · lower {fmt.seconds(c.lower_s)} · "
            f"XLA {fmt.seconds(c.compile_s)}"
            if c
            else ""
        )
        hover_notes.append(
            f"{split}<br>break-even: {fmt.count(be)}"
            + (" calls" if be is not None and math.isfinite(be) else "")
        )
    fig = Draft()
    for name, vals, color in (
        ("compile (trace + lower + XLA)", compile_s, "#c44e52"),
        ("first call (cold)", first, "#64b5cd"),
        ("steady state per call", steady, COLORS[Mode.JIT]),
    ):
        fig.add_trace(
            trace(
                "bar",
                x=labels,
                y=vals,
                name=name,
                offsetgroup=name,
                marker={"color": color},
                hovertext=[
                    f"{lab}<br>{name}: {fmt.seconds(v)}<br>{note}"
                    for lab, v, note in zip(labels, vals, hover_notes, strict=True)
                ],
                hoverinfo="text",
            )
        )
    lo, hi = log_range(values, pad=2.0)
    _notes_at_bottom(fig, notes)
    base_layout(fig, height=300 + _category_margin(labels))
    fig.update_layout(
        barmode="group",
        bargap=0.25,
        xaxis={
            "title": {"text": "workload [size]"},
            "type": "category",
            "categoryorder": "array",
            "categoryarray": labels,
            "tickangle": -30,
        },
        yaxis=seconds_axis(lo, hi, "time (log)"),
    )
    return fig.build()


# ---------------------------------------------------------------------------------------
# Size sweeps


def sweep_xaxis(title: str, lo: float, hi: float) -> dict[str, Any]:
    """The log axis of a sweep's own parameter over [lo, hi]."""
    return {
        "title": {"text": plot_text(title, limit=80)},
        "type": "log",
        "range": [math.log10(lo), math.log10(hi)],
    }


def sweep_speedup_figure(run: Run, device: str, workload: str) -> Figure:
    """Speedup over NumPy of eager and jit against the sweep's own parameter (log–log),
    with 95 % interval bands, a 1× line and a dotted vertical line where a mode crosses
    NumPy, labelled in the parameter ('jit overtakes at n ≈ 73')."""
    cases = data.sweep_cases(run, device, workload)
    axis = data.sweep_axis(cases)
    series = data.speedup_series(run, device, workload)
    fig = Draft()
    values: list[float] = [1.0]
    xs_all: list[float] = []
    for mode, points in series.items():
        xs = [p.x for p in points]
        xs_all += xs
        values += [p.low for p in points] + [p.high for p in points]
        fig.add_trace(
            trace(
                "scatter",  # the 95 % band: upper edge, then lower edge filled to it
                x=xs + xs[::-1],
                y=[p.high for p in points] + [p.low for p in points][::-1],
                fill="toself",
                fillcolor=_rgba(COLORS[mode], 0.15),
                line={"width": 0},
                hoverinfo="skip",
                showlegend=False,
                legendgroup=mode.value,
            )
        )
        fig.add_trace(
            trace(
                "scatter",
                x=xs,
                y=[p.value for p in points],
                mode="lines+markers",
                name=f"{mode.value} vs NumPy",
                legendgroup=mode.value,
                marker={
                    "color": [SUSPECT_COLOR if p.suspect else COLORS[mode] for p in points],
                    "symbol": [
                        f"{SYMBOLS[mode]}-open" if p.suspect else SYMBOLS[mode] for p in points
                    ],
                    "size": 8,
                },
                line={"color": COLORS[mode]},
                hovertext=[
                    f"{plot_text(axis.name)} = {approx_value(p.x)} ({plot_text(p.size)})<br>"
                    f"{mode.value}: {fmt.ratio_ci(p.value, p.low, p.high)}"
                    + ("<br>⚠ size-order-inverted" if p.suspect else "")
                    for p in points
                ],
                hoverinfo="text",
            )
        )
    lo, hi = log_range(values, pad=1.4)
    xlo, xhi = log_range(xs_all, pad=1.3)
    crosses = [c for m in JAX_MODES if m in series for c in crossovers(series[m], m, axis.name)]
    for row, cross in enumerate(crosses):
        fig.add_shape(
            type="line",
            x0=cross.x,
            x1=cross.x,
            yref="paper",
            y0=0,
            y1=1,
            line={"color": COLORS[cross.mode], "dash": "dot", "width": 2},
        )
        right = math.log(cross.x / xlo) < 0.6 * math.log(xhi / xlo)
        fig.add_annotation(
            x=math.log10(cross.x),  # a log x axis: annotations take log10
            xanchor="left" if right else "right",
            yref="paper",
            y=1.0 - 0.09 * row,  # a row each: labels never sit on each other
            yanchor="top",
            text=plot_text(cross.short, limit=80),
            showarrow=False,
            font={"size": 11, "color": COLORS[cross.mode]},
            bgcolor="rgba(255,255,255,0.8)",
        )
    parity_line(fig)
    base_layout(fig, height=380)
    fig.update_layout(
        xaxis=sweep_xaxis(axis.title, xlo, xhi),
        yaxis=ratio_axis(lo, hi, "speedup over NumPy (×, log)"),
    )
    return fig.build()


def approx_value(x: float) -> str:
    return f"{x:,.0f}" if x >= 1 and float(x).is_integer() else fmt.approx(x)


def _rgba(hex_color: str, alpha: float) -> str:
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def sweep_time_figure(run: Run, device: str, workload: str) -> Figure:
    """Median time per call of every mode against the sweep's parameter, log–log, with
    95 % CI error bars; failed sizes are listed under the chart by the page."""
    cases = data.sweep_cases(run, device, workload)
    axis = data.sweep_axis(cases)
    series = data.sweep_series(run, device, workload)
    fig = Draft()
    xs_all: list[float] = []
    ys_all: list[float] = []
    for mode, points in series.items():
        xs_all += [p.x for p in points]
        ys_all += [p.low_s for p in points] + [p.high_s for p in points]
        fig.add_trace(
            trace(
                "scatter",
                x=[p.x for p in points],
                y=[p.time_s for p in points],
                mode="lines+markers",
                name=mode.value,
                marker={"color": COLORS[mode], "symbol": SYMBOLS[mode], "size": 8},
                line={"color": COLORS[mode]},
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [p.high_s - p.time_s for p in points],
                    "arrayminus": [p.time_s - p.low_s for p in points],
                    "color": COLORS[mode],
                    "thickness": 1,
                },
                hovertext=[
                    f"{plot_text(axis.name)} = {approx_value(p.x)} ({plot_text(p.size)})<br>"
                    f"{mode.value}: {fmt.seconds(p.time_s)}"
                    for p in points
                ],
                hoverinfo="text",
            )
        )
    ylo, yhi = log_range(ys_all, pad=1.3)
    xlo, xhi = log_range(xs_all, pad=1.3)
    base_layout(fig, height=360)
    fig.update_layout(
        xaxis=sweep_xaxis(axis.title, xlo, xhi),
        yaxis=seconds_axis(ylo, yhi, "time per call (log)"),
    )
    return fig.build()


# ---------------------------------------------------------------------------------------
# Several devices: the same case on each, on one axis

#: Marker colours of the devices in a device comparison, in first-seen order (cycled).
DEVICE_COLORS = ("#55a868", "#8172b3", "#c44e52", "#937860", "#da8bc3", "#64b5cd")


def device_comparison_figure(run: Run, mode: Mode = Mode.JIT) -> Figure | None:
    """`mode`'s median time per call of every preset case on each device of the run, side
    by side on one log axis, with NumPy's (host code, the same on every device) as the
    reference: which device runs which case fastest, and by how much. Hover for the
    interval and the speedup over NumPy. None with fewer than two devices measuring `mode`.
    """
    devices = [
        d
        for d in data.device_labels(run)
        if any(m.mode is mode and m.case.device == d for m in run.measurements)
    ]
    if len(devices) < 2:
        return None
    # One category per workload × size × dtype, in the order the cases were measured.
    groups: dict[tuple[str, str, str], dict[str, Case]] = {}
    for case in run.cases():
        if not data.is_sweep_case(case):
            groups.setdefault((case.workload, case.size, case.dtype), {})[case.device] = case
    if not groups:
        return None
    dtypes = len({k[2] for k in groups}) > 1
    labels = data.case_categories([next(iter(g.values())) for g in groups.values()])
    if dtypes:
        labels = [f"{label} {plot_text(k[2])}" for label, k in zip(labels, groups, strict=True)]
    fig = Draft()
    values: list[float] = []
    figures = analyse(run)

    def add(name: str, color: str, symbol: str, pick: Any) -> None:
        xs, ys, hover = [], [], []
        for label, cases in zip(labels, groups.values(), strict=True):
            found = pick(cases)
            if found is None:
                continue
            m, note = found
            t = figures.time(m.case, m.mode)
            if t is None or not m.ok or not t.value > 0:
                continue
            low = t.low if t.low is not None else t.value
            high = t.high if t.high is not None else t.value
            xs.append(label)
            ys.append(t.value)
            values.extend((low, high))
            hover.append(
                f"{label} · {plot_text(name)}<br>{fmt.seconds(t.value)} "
                f"[{fmt.seconds(low)}–{fmt.seconds(high)}]{note}"
            )
        if xs:
            fig.add_trace(
                trace(
                    "scatter",
                    x=xs,
                    y=ys,
                    mode="markers",
                    name=name,
                    offsetgroup=name,  # side by side within a case (`scattermode`)
                    marker={"color": color, "symbol": symbol, "size": 10},
                    hovertext=hover,
                    hoverinfo="text",
                )
            )

    def numpy_side(cases: dict[str, Case]) -> tuple[Measurement, str] | None:
        for case in cases.values():  # one baseline per case, shared by the devices
            m = run.get(case.key, Mode.NUMPY)
            if m is not None:
                return m, ""
        return None

    add("NumPy (host)", COLORS[Mode.NUMPY], SYMBOLS[Mode.NUMPY], numpy_side)
    for i, device in enumerate(devices):

        def on_device(cases: dict[str, Case], device: str = device) -> Any:
            case = cases.get(device)
            if case is None:
                return None
            m = run.get(case.key, mode)
            if m is None:
                return None
            r = figures.speedup(case, mode)
            note = f"<br>{fmt.ratio(r.value)} vs NumPy" if r is not None else ""
            return m, note

        kind = data.device_kind(run, device)
        name = f"{mode.value} on {device}" + (f" ({kind})" if kind else "")
        add(plot_text(name, limit=60), DEVICE_COLORS[i % len(DEVICE_COLORS)], "diamond", on_device)
    if not values:
        return None
    lo, hi = log_range(values, pad=1.4)
    base_layout(fig, height=400)
    fig.update_layout(
        scattermode="group",
        scattergap=0.4,
        xaxis={"type": "category", "categoryorder": "array", "categoryarray": labels},
        yaxis=seconds_axis(lo, hi, "time per call (log; lower is faster)"),
    )
    return fig.build()


# ---------------------------------------------------------------------------------------
# One case: the distribution of its samples


def distribution_figure(run: Run, case: Case) -> Figure | None:
    """Every raw sample (seconds per call) of each mode of `case`, as a box with all points
    on a log axis: the spread behind each median. None when nothing was sampled."""
    fig = Draft()
    values: list[float] = []
    for mode in ALL_MODES:
        m = run.get(case.key, mode)
        if m is None or not m.samples_s:
            continue
        samples = [s for s in m.samples_s if s > 0 and math.isfinite(s)]
        values += samples
        fig.add_trace(
            trace(
                "box",
                x=samples,
                name=mode.value,
                orientation="h",
                boxpoints="all",
                jitter=0.5,
                pointpos=0,
                marker={"color": COLORS[mode], "size": 4, "opacity": 0.6},
                line={"color": COLORS[mode], "width": 1.5},
                fillcolor="rgba(0,0,0,0)",
                hoverinfo="x",
                showlegend=False,
            )
        )
    if not values:
        return None
    lo, hi = log_range(values, pad=1.15)
    base_layout(fig, height=120 + 50 * len(fig.data))
    fig.update_layout(
        xaxis=seconds_axis(lo, hi, "seconds per call, one point per sample (log)"),
        yaxis={"type": "category", "autorange": "reversed"},
        margin={"t": 16, "b": 50},
    )
    return fig.build()


# ---------------------------------------------------------------------------------------
# Roofline and memory


def roofline_figure(run: Run, device: str) -> Figure | None:
    """Achieved GFLOP/s against arithmetic intensity (XLA's flops ÷ bytes accessed of the
    jit program) for each mode, log–log, with the empirical roofs this run reached (the
    best bandwidth and the best rate seen, not the hardware's peaks). Each point is the
    analysis layer's `CaseAnalysis.achieved_flops_per_s` (jit's: the tables' GFLOP/s).
    Cases whose program has loops (XLA counts a loop body once), lacks a cost analysis
    or failed are left out; None when no case has both figures."""
    points: dict[Mode, list[tuple[float, float, str]]] = {}
    for case in data.headline_cases(run, device)[0]:
        figures = analyse(run).case(case)
        intensity = figures.arithmetic_intensity if figures is not None else None
        if figures is None or intensity is None:
            continue
        for mode in ALL_MODES:
            rate = figures.achieved_flops_per_s(mode)
            if rate is not None:
                label = plot_text(data.case_label(case))
                points.setdefault(mode, []).append((intensity, rate / 1e9, label))
    if Mode.JIT not in points:
        return None
    fig = Draft()
    xs = [p[0] for ps in points.values() for p in ps]
    ys = [p[1] for ps in points.values() for p in ps]
    bandwidth = max(y / x for x, y in zip(xs, ys, strict=True))  # GB/s
    peak = max(ys)
    xlo, xhi = log_range(xs, pad=2.0)
    ylo, yhi = log_range(ys, pad=2.0)
    knee = peak / bandwidth
    roof_x = [xlo, *([knee] if xlo < knee < xhi else []), xhi]
    fig.add_trace(
        trace(
            "scatter",
            x=roof_x,
            y=[min(bandwidth * x, peak) for x in roof_x],
            mode="lines",
            name=f"best seen: {bandwidth:.3g} GB/s, {peak:.3g} GFLOP/s",
            line={"color": "#8b949e", "dash": "dash", "width": 1.5},
            hoverinfo="name",
        )
    )
    for mode in ALL_MODES:
        if mode not in points:
            continue
        ps = points[mode]
        fig.add_trace(
            trace(
                "scatter",
                x=[p[0] for p in ps],
                y=[p[1] for p in ps],
                mode="markers",
                name=mode.value,
                marker={"color": COLORS[mode], "symbol": SYMBOLS[mode], "size": 9},
                hovertext=[
                    f"{p[2]}<br>{mode.value}: {p[1]:.3g} GFLOP/s at {p[0]:.3g} FLOP/byte"
                    for p in ps
                ],
                hoverinfo="text",
            )
        )
    base_layout(fig, height=400)
    fig.update_layout(
        xaxis=_number_axis(xlo, xhi, "arithmetic intensity (FLOP/byte, log)"),
        yaxis=_number_axis(ylo, yhi, "achieved GFLOP/s (log)"),
    )
    return fig.build()


def _number_axis(lo: float, hi: float, title: str) -> dict[str, Any]:
    ticks = log_ticks(lo, hi)
    return {
        "title": {"text": title},
        "type": "log",
        "range": [math.log10(lo), math.log10(hi)],
        "tickvals": ticks,
        "ticktext": [f"{t:,.6g}" for t in ticks],
    }


_MEMORY_PARTS = (
    ("argument_bytes", "arguments", "#4c72b0"),
    ("output_bytes", "outputs", "#55a868"),
    ("temp_bytes", "temporaries", "#dd8452"),
)


def memory_figure(run: Run, device: str, *, cases: Sequence[Case] | None = None) -> Figure | None:
    """XLA's memory analysis of each case's jit program on `device` (arguments, outputs,
    temporaries, with the peak marked) on a log axis of bytes; None when no case has one.

    Args:
        cases: the cases to show, in order (default `data.headline_cases`).
    """
    if cases is None:
        cases = data.headline_cases(run, device)[0]
    cases = [
        c
        for c in cases
        if (m := run.get(c.key, Mode.JIT)) is not None and m.compile and m.compile.memory
    ]
    if not cases:
        return None
    labels = data.case_categories(cases)
    mems = [run.get(c.key, Mode.JIT).compile.memory or {} for c in cases]  # type: ignore[union-attr]
    fig = Draft()
    values: list[float] = []
    for key, name, color in _MEMORY_PARTS:
        ys = [float(m[key]) if m.get(key) else None for m in mems]
        values += [y for y in ys if y]
        fig.add_trace(
            trace(
                "bar",
                x=labels,
                y=ys,
                name=name,
                marker={"color": color},
                hovertext=[
                    f"{lab}<br>{name}: {fmt.bytes_(y)}" for lab, y in zip(labels, ys, strict=True)
                ],
                hoverinfo="text",
            )
        )
    peaks = [float(m["peak_bytes"]) if m.get("peak_bytes") else None for m in mems]
    values += [p for p in peaks if p]
    fig.add_trace(
        trace(
            "scatter",
            x=labels,
            y=peaks,
            mode="markers",
            name="peak",
            marker={"symbol": "line-ew", "size": 22, "line": {"width": 3, "color": "#1d232b"}},
            hovertext=[
                f"{lab}<br>peak: {fmt.bytes_(p)}" for lab, p in zip(labels, peaks, strict=True)
            ],
            hoverinfo="text",
        )
    )
    lo, hi = log_range(values, pad=2.0)
    step = max(1, math.ceil(math.log2(hi / lo) / 6))  # about six ticks, powers of two
    ticks = [t for t in (2.0**k for k in range(0, 64, step)) if lo <= t <= hi]
    base_layout(fig, height=300 + _category_margin(labels))
    fig.update_layout(
        barmode="group",
        xaxis={"type": "category", "tickangle": -30, "title": {"text": "workload [size]"}},
        yaxis={
            "title": {"text": "bytes (log)"},
            "type": "log",
            "range": [math.log10(lo), math.log10(hi)],
            "tickvals": ticks,
            "ticktext": [fmt.bytes_(t) for t in ticks],
        },
    )
    return fig.build()
