"""Plotly figure builders: pure functions of a Run (no I/O, no timing, fixed trace order).

Every text that comes from a results file goes through `data.plot_text` before it reaches a
figure, because plotly renders a subset of HTML in labels and hover text.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

import plotly.graph_objects as go

from jitbench import formatting as fmt
from jitbench.config import JAX_MODES
from jitbench.report import data
from jitbench.report.data import plot_text
from jitbench.results import Mode, Run, Status

COLORS = {Mode.NUMPY: "#4c72b0", Mode.EAGER: "#dd8452", Mode.JIT: "#55a868"}
SYMBOLS = {Mode.NUMPY: "square", Mode.EAGER: "circle", Mode.JIT: "diamond"}
STAGE_COLORS = {"trace": "#8172b3", "lower": "#937860", "compile": "#c44e52"}
FAIL_COLOR = "#b2182b"
SUSPECT_COLOR = "#9a6700"  # a figure shown but not believed (size-order-inverted)
GEOMEAN = "geometric mean"
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"
_NICE = (1, 2, 5)


def _layout(fig: go.Figure, *, title: str, height: int = 420) -> None:
    fig.update_layout(
        title={
            "text": title,
            "x": 0.01,
            "xref": "container",
            "xanchor": "left",
            "font": {"size": 15},
        },
        template="plotly_white",
        font={"family": FONT, "size": 12},
        height=height,
        margin={"l": 70, "r": 20, "t": 60, "b": 90},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "right", "x": 1},
        hoverlabel={"align": "left"},
    )


MAX_ANNOTATED = 10  # cases per chart beyond which per-case notes would overlap


def _category_margin(labels: Sequence[str]) -> int:
    """Bottom margin (px) that fits category labels drawn at -30° plus the axis title."""
    longest = max((len(html.unescape(x)) for x in labels), default=0)
    return 60 + int(3.8 * min(longest, data.MAX_LABEL_CHARS))


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


def _log_range(values: Sequence[float], pad: float = 1.6) -> tuple[float, float]:
    vals = [v for v in values if v > 0 and math.isfinite(v)]
    lo, hi = (min(vals), max(vals)) if vals else (0.5, 2.0)
    return lo / pad, hi * pad


def speedup_range(runs: Sequence[Run]) -> tuple[float, float]:
    """A y range (×, linear units) that fits every speedup, CI and 1× of `runs`."""
    values = [1.0]
    for run in runs:
        for case in run.cases():
            for mode in JAX_MODES:
                r = run.speedup(case.key, mode)
                if r is not None:
                    values += [r.value, r.low or r.value, r.high or r.value]  # non-finite
                    # and non-positive values are dropped by _log_range
    return _log_range(values)


def speedup_figure(
    run: Run,
    device: str,
    *,
    title: str | None = None,
    y_range: tuple[float, float] | None = None,
) -> go.Figure:
    """Speedup over NumPy of eager and jit per case on `device`, log axis, 95 % CI error bars,
    a 1× line and a geometric-mean column. Failed or mismatched cases get a red note at 1×
    instead of a point; a suspect one (`data.suspect_speedup`: size-order-inverted) is drawn
    hollow in another colour with a note, and left out of the geometric mean.

    Args:
        title: chart title (escaped here); default names the device.
        y_range: (low, high) in × to share an axis between charts; default fits the data.
    """
    cases = data.cases_on(run, device)
    labels = data.case_categories(cases)
    categories = [*labels, GEOMEAN]
    modes_present = {m.mode for m in run.measurements}
    fig = go.Figure()
    # An invisible trace pins every category, including those with no point at all.
    fig.add_trace(
        go.Scatter(
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
    for mode in JAX_MODES:
        if mode not in modes_present:
            continue
        xs, ys, plus, minus, hover = [], [], [], [], []
        suspect: list[int] = []  # indices into xs of points left out of the geometric mean
        for case, label in zip(cases, labels, strict=True):
            r = run.speedup(case.key, mode)
            m = run.get(case.key, mode)
            if r is not None and not (math.isfinite(r.value) and r.value > 0):
                notes.setdefault(label, {})[f"✗ {mode.value} no ratio"] = (
                    f"{mode.value}: speedup {r.value} cannot be drawn on a log axis"
                )
                continue
            if r is None:
                failed = [
                    x for x in (m, run.get(case.key, Mode.NUMPY)) if x is not None and x.failed
                ]
                for x in failed:
                    notes.setdefault(label, {})[f"✗ {x.mode.value} {x.status.value}"] = (
                        f"{x.mode.value}: {plot_text(x.failure_text, limit=120)}"
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
            if data.suspect_speedup(run, case, mode):
                suspect.append(len(xs) - 1)
                hover[-1] += "<br>⚠ size-order-inverted: left out of the geometric mean"
                notes.setdefault(label, {})[f"⚠ {mode.value} size order"] = (
                    f"{mode.value}: a side is slower than at a larger size "
                    "(size-order-inverted); not in the geometric mean"
                )
        fig.add_trace(
            go.Scatter(
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
                go.Scatter(
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
                go.Scatter(
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
                    textposition="top center",
                    hovertext=[
                        f"{mode.value}: geometric mean {fmt.ratio(g.value)} over "
                        f"{g.count} case(s); {g.failed} failed or mismatched and "
                        f"{g.suspect} suspect (size order) left out"
                    ],
                    hoverinfo="text",
                )
            )
    lo, hi = y_range or _log_range(values)
    for label, lines in notes.items():
        fig.add_annotation(
            x=label,
            y=math.log10(lo * 1.05),
            yanchor="bottom",
            showarrow=False,
            text="<br>".join(lines),
            hovertext="<br>".join(lines.values()),
            font={
                "color": FAIL_COLOR if any(t.startswith("✗") for t in lines) else SUSPECT_COLOR,
                "size": 11,
            },
            bgcolor="rgba(255,255,255,0.8)",
        )
    fig.add_hline(
        y=1.0,
        line={"color": "#444", "width": 1, "dash": "dash"},
        annotation_text="1× = NumPy",
        annotation_position="top left",
        annotation_font={"size": 10, "color": "#444"},
    )
    ticks = log_ticks(lo, hi)
    _layout(
        fig,
        title=plot_text(title or f"Speedup over NumPy — {device}", limit=120),
        height=300 + _category_margin(labels),
    )
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
        margin={"r": 40, "b": _category_margin(labels)},
        yaxis={
            "title": {"text": "speedup over NumPy (×, log)"},
            "type": "log",
            "range": [math.log10(lo), math.log10(hi)],
            "tickvals": ticks,
            "ticktext": [fmt.ratio(t) for t in ticks],
        },
    )
    return fig


def compile_figure(run: Run, device: str, *, title: str | None = None) -> go.Figure:
    """jit's cold compile (trace + lower + compile, stacked) beside its cold first call and
    steady-state time per call, per case on `device`, in milliseconds, with the break-even
    call count above each group. Failed or mismatched jit cases get a red note, no bars."""
    cases = data.cases_on(run, device)
    labels = data.case_categories(cases)
    stages: dict[str, list[float | None]] = {"trace": [], "lower": [], "compile": []}
    first: list[float | None] = []
    steady: list[float | None] = []
    notes: list[tuple[str, str, float]] = []
    for case, label in zip(cases, labels, strict=True):
        m = run.get(case.key, Mode.JIT)
        c = m.compile if m is not None else None
        shown = m is not None and m.status is Status.OK and c is not None
        for name, v in (
            ("trace", c.trace_s if c else None),
            ("lower", c.lower_s if c else None),
            ("compile", c.compile_s if c else None),
        ):
            stages[name].append(v * 1e3 if shown and v is not None else None)
        first.append(c.first_call_s * 1e3 if shown and c and c.first_call_s is not None else None)
        steady.append(m.median_s * 1e3 if shown and m and m.median_s is not None else None)
        if m is None:
            continue
        if not shown:
            text = f"✗ jit {m.status.value}" if m.status is not Status.OK else "no compile data"
            notes.append((label, text, 0.0))
        else:
            be = run.break_even_calls(case.key)
            top = max(
                v
                for v in (sum(x[-1] or 0 for x in stages.values()), first[-1] or 0, steady[-1] or 0)
            )
            notes.append(
                (
                    label,
                    f"break-even: {fmt.count(be)}"
                    + (" calls" if be is not None and math.isfinite(be) else ""),
                    top,
                )
            )
    by_label = {label: text for label, text, _ in notes}
    hover_notes = [by_label.get(label, "") for label in labels]
    fig = go.Figure()
    base = [0.0] * len(labels)
    for name, vals in stages.items():
        fig.add_trace(
            go.Bar(
                x=labels,
                y=vals,
                base=list(base),
                name=f"{name} (cold)",
                offsetgroup="compile",
                legendgroup="compile",
                marker_color=STAGE_COLORS[name],
                hovertext=[
                    f"{lab}<br>{name}: {fmt.seconds(v / 1e3) if v is not None else '—'}<br>{note}"
                    for lab, v, note in zip(labels, vals, hover_notes, strict=True)
                ],
                hoverinfo="text",
            )
        )
        base = [b + (v or 0.0) for b, v in zip(base, vals, strict=True)]
    for name, vals, color in (
        ("first call (cold)", first, "#64b5cd"),
        ("steady state per call", steady, COLORS[Mode.JIT]),
    ):
        fig.add_trace(
            go.Bar(
                x=labels,
                y=vals,
                name=name,
                offsetgroup=name,
                marker_color=color,
                text=[fmt.seconds(v / 1e3) if v is not None else "" for v in vals],
                textposition="outside",
                cliponaxis=False,
                hovertext=[
                    f"{lab}<br>{name}: {fmt.seconds(v / 1e3) if v is not None else '—'}<br>{note}"
                    for lab, v, note in zip(labels, vals, hover_notes, strict=True)
                ],
                hoverinfo="text",
            )
        )
    crowded = len(labels) > MAX_ANNOTATED
    for label, text, top in notes:
        failed = text.startswith("✗")
        if crowded and not failed:
            continue  # too many to read: the break-even count is in the hover text instead
        fig.add_annotation(
            x=label,
            y=top,
            yanchor="bottom",
            yshift=18 if not failed else 0,
            showarrow=False,
            text=text,
            font={"size": 11, "color": FAIL_COLOR if failed else "#333"},
        )
    _layout(
        fig,
        title=plot_text(title or f"jit compile vs run — {device}", limit=120),
        height=330 + _category_margin(labels),
    )
    fig.update_layout(margin={"t": 90, "b": _category_margin(labels)})
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
        yaxis={"title": {"text": "time (ms, linear)"}, "rangemode": "tozero"},
    )
    return fig


def sweep_figure(run: Run, device: str, workload: str) -> go.Figure:
    """Median time per call against input size for each mode on log–log axes, 95 % CI error
    bars, and a dotted vertical line where eager or jit crosses NumPy."""
    series = data.sweep_series(run, device, workload)
    fig = go.Figure()
    xs_all: list[float] = []
    ys_all: list[float] = []
    for mode, points in series.items():
        xs_all += [p.elements for p in points]
        ys_all += [p.ci_low_s for p in points] + [p.ci_high_s for p in points]
        fig.add_trace(
            go.Scatter(
                x=[p.elements for p in points],
                y=[p.median_s for p in points],
                mode="lines+markers",
                name=mode.value,
                marker={"color": COLORS[mode], "symbol": SYMBOLS[mode], "size": 8},
                line={"color": COLORS[mode]},
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [p.ci_high_s - p.median_s for p in points],
                    "arrayminus": [p.median_s - p.ci_low_s for p in points],
                    "color": COLORS[mode],
                    "thickness": 1,
                },
                hovertext=[
                    f"{plot_text(p.size)} ({fmt.count(p.elements)} elements)<br>"
                    f"{mode.value}: {fmt.seconds(p.median_s)}"
                    for p in points
                ],
                hoverinfo="text",
            )
        )
    ylo, yhi = _log_range(ys_all, pad=1.3)
    xlo, xhi = _log_range(xs_all, pad=1.5)
    for mode in JAX_MODES:
        for cross in data.crossovers(series, mode):
            # Labels near the right edge go left of their line, so they are not clipped.
            side = "left" if math.log(cross.elements / xlo) > 0.6 * math.log(xhi / xlo) else "right"
            verb = "overtakes" if cross.overtakes else "falls behind"
            label = f"{mode.value} {verb} ≈ {data.approx_elements(cross.elements)}"
            fig.add_trace(
                go.Scatter(
                    x=[cross.elements, cross.elements],
                    y=[ylo, yhi],
                    mode="lines+text",
                    name=plot_text(cross.text),
                    showlegend=True,
                    line={"color": COLORS[mode], "dash": "dot", "width": 2},
                    text=(["", label] if mode is Mode.JIT else [label, ""]),
                    textposition=f"bottom {side}" if mode is Mode.JIT else f"top {side}",
                    textfont={"color": COLORS[mode], "size": 11},
                    hovertext=[plot_text(cross.text)] * 2,
                    hoverinfo="text",
                )
            )
    failures = data.sweep_failures(run, device, workload)
    subtitle = ""
    if failures:
        shown = "; ".join(f"{m.mode.value} {m.status.value} at {c.size}" for c, m in failures[:4])
        more = f" (+{len(failures) - 4} more)" if len(failures) > 4 else ""
        subtitle = (
            f"<br><span style='font-size:11px;color:{FAIL_COLOR}'>left out: "
            f"{plot_text(shown, limit=200)}{more}</span>"
        )
    yt = log_ticks(ylo, yhi)
    _layout(
        fig,
        title=f"{plot_text(workload)} on {plot_text(device)} — time vs size{subtitle}",
        height=380,
    )
    fig.update_layout(
        xaxis={
            "title": {"text": "input size (elements, log scale)"},
            "type": "log",
            "range": [math.log10(xlo), math.log10(xhi)],
        },
        yaxis={
            "title": {"text": "time per call (s, log scale)"},
            "type": "log",
            "range": [math.log10(ylo), math.log10(yhi)],
            "tickvals": yt,
            "ticktext": [fmt.seconds(t) for t in yt],
        },
        legend={"y": -0.3, "yanchor": "top", "x": 0, "xanchor": "left"},
        margin={"b": 110},
    )
    return fig
