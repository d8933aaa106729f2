"""What a `bench()` result shows: a `%timeit`-like text summary, the notebook's HTML (a
table and a small log-scale chart, as inline SVG: no script, works offline) and a rich
renderable. Every figure comes from the analysis layer; nothing is computed here but the
chart's geometry.
"""

from __future__ import annotations

import html
import math
from typing import Any, Protocol

from rich.console import Group
from rich.table import Table
from rich.text import Text

from jitbench import formatting as fmt
from jitbench.config import ALL_MODES, Mode
from jitbench.results import Run
from jitbench.results.analysis import CaseAnalysis, ModeFigure, RunAnalysis


class BenchResult(Protocol):
    """What these renderers read of `jitbench.interactive.BenchResult`."""

    @property
    def run(self) -> Run: ...
    @property
    def name(self) -> str: ...
    @property
    def notes(self) -> tuple[str, ...]: ...
    @property
    def analysis(self) -> RunAnalysis: ...
    @property
    def diagnostics(self) -> list[tuple[str, str, str, str]]: ...


def _time(f: ModeFigure | None) -> str:
    if f is None:
        return "—"
    if f.time is None or not f.ok:
        return f.status.value
    t = f.time
    return f"{fmt.seconds(t.value)} {fmt.seconds_pm(t.value, t.low, t.high)}".rstrip()


def _speedup(c: CaseAnalysis, f: ModeFigure) -> str:
    """'13.2× NumPy ±3%' and, for jit, ' · 4.1× eager'."""
    parts = []
    if f.speedup is not None and f.over is Mode.NUMPY:
        r = f.speedup
        parts.append(f"{fmt.ratio_pm(r.value, r.low, r.high)} vs NumPy{f.marks and ' ' + f.marks}")
    if f.mode is Mode.JIT and c.eager_over_jit is not None:
        r = c.eager_over_jit
        parts.append(f"{fmt.ratio_pm(r.value, r.low, r.high)} vs eager")
    return " · ".join(parts)


def _case_lines(c: CaseAnalysis, *, several: bool) -> list[str]:
    lines = [f"{c.case.size} ({c.case.dtype}, {c.case.device}):" if several else ""]
    shown = [(mode, f) for mode in ALL_MODES if (f := c.get(mode)) is not None]
    width = max((len(_time(f)) for _, f in shown), default=0)
    for mode, f in shown:
        lines.append(f"  {mode.value:<6} {_time(f):>{width}}   {_speedup(c, f)}".rstrip())
    jit = c.get(Mode.JIT)
    total = jit.compile_s if jit is not None else None
    if total is not None:
        tail = ""
        if c.break_even_calls is not None:
            base = "NumPy" if c.baseline is Mode.NUMPY else "eager"
            tail = (
                f"; never pays back vs {base}"
                if math.isinf(c.break_even_calls)
                else f"; pays back vs {base} after {fmt.count(c.break_even_calls)} calls"
            )
        lines.append(f"  jit compile {fmt.seconds(total)}{tail}")
    return [line for line in lines if line]


def _problems(result: BenchResult) -> list[str]:
    out = [f"note: {n}" for n in result.notes]
    # The same finding in several modes (an error every mode raised) is one line.
    modes_of: dict[tuple[str, str, str], list[str]] = {}
    for mode, code, message, hint in result.diagnostics:
        if code in ("noisy", "outlier-samples"):
            continue
        first = message.splitlines()[0] if message else ""
        modes_of.setdefault((code, first, hint), []).append(mode)
    for (code, first, hint), modes in modes_of.items():
        out.append(f"{', '.join(modes)}: {code}: {first}" + (f" — fix: {hint}" if hint else ""))
    return out


def _header(result: BenchResult) -> str:
    run = result.run
    settings = run.config.settings
    processes = settings.processes if settings is not None else run.processes
    how = f"{processes} process{'es' if processes != 1 else ''}"
    return f"{result.name}: jitbench, {how}, 95 % intervals"


def summary_text(result: BenchResult) -> str:
    """The plain summary: each mode's time with its interval, the speedups, compile and
    break-even, then the diagnostics with their fixes."""
    cases = list(result.analysis)
    lines = [_header(result)]
    for c in cases:
        lines += _case_lines(c, several=len(cases) > 1)
    lines += _problems(result)
    return "\n".join(lines)


def summary_line(result: BenchResult) -> str:
    """One line per size: the name, jit's time and its speedups (what a test session's
    summary lists)."""
    parts = []
    for c in result.analysis:
        f = c.get(Mode.JIT) or next((f for m in ALL_MODES if (f := c.get(m))), None)
        if f is None:
            continue
        size = f"[{c.case.size}] " if len(result.analysis.cases) > 1 else ""
        speedup = _speedup(c, f)
        parts.append(f"{size}{f.mode.value} {_time(f)}" + (f" ({speedup})" if speedup else ""))
    return f"{result.name}: " + "; ".join(parts or ["nothing measured"])


def summary_renderable(result: BenchResult) -> Any:
    """The summary for a rich console."""
    table = Table(title=_header(result), title_justify="left", box=None, pad_edge=False)
    for col, justify in (
        ("size", "left"),
        ("mode", "left"),
        ("time", "right"),
        ("speedup", "left"),
    ):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for c in result.analysis:
        for mode in ALL_MODES:
            f = c.get(mode)
            if f is not None:
                table.add_row(c.case.size, mode.value, _time(f), _speedup(c, f))
    notes = [Text(line, style="yellow") for line in _problems(result)]
    return Group(table, *notes)


# ---------------------------------------------------------------------------------------
# The notebook's HTML

_COLORS = {Mode.EAGER: "#dd8452", Mode.JIT: "#55a868"}


def _chart(result: BenchResult) -> str:
    """Speedup over NumPy (over eager where there is no NumPy) per size, log axis, with
    the 95 % intervals and a 1× line: inline SVG."""
    points = []
    for c in result.analysis:
        for mode in (Mode.EAGER, Mode.JIT):
            f = c.get(mode)
            if f is not None and f.speedup is not None:
                points.append((c.case.size, mode, f.speedup, f.headline))
            elif mode is Mode.JIT and c.eager_over_jit is not None and c.get(Mode.NUMPY) is None:
                points.append((c.case.size, mode, c.eager_over_jit, True))
    if not points:
        return ""
    values = [1.0]
    for *_, r, _ in points:
        values += [x for x in (r.value, r.low, r.high) if x is not None and x > 0]
    lo, hi = math.log10(min(values)) - 0.15, math.log10(max(values)) + 0.15
    width, height, left, bottom = 360, 40 + 26 * len(points), 90, 24

    def x(v: float) -> float:
        return left + (math.log10(v) - lo) / (hi - lo) * (width - left - 10)

    base = "NumPy" if any(c.get(Mode.NUMPY) for c in result.analysis) else "eager"
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="speedup over {base}, log scale" '
        'style="font:11px system-ui,sans-serif">',
        f'<line x1="{x(1):.1f}" y1="6" x2="{x(1):.1f}" y2="{height - bottom}" stroke="#888" '
        'stroke-dasharray="3,3"/>',
        f'<text x="{x(1):.1f}" y="{height - 8}" text-anchor="middle" fill="#555">'
        f"1× = {base}</text>",
    ]
    for i, (size, mode, r, headline) in enumerate(points):
        y = 18 + 26 * i
        color = _COLORS[mode]
        opacity = "1" if headline else "0.4"
        label = html.escape(f"{size} {mode.value}")
        out.append(f'<text x="4" y="{y + 4}" fill="#333">{label}</text>')
        if r.low is not None and r.high is not None and r.low > 0:
            out.append(
                f'<line x1="{x(r.low):.1f}" y1="{y}" x2="{x(r.high):.1f}" y2="{y}" '
                f'stroke="{color}" stroke-width="2" opacity="{opacity}"/>'
            )
        out.append(
            f'<circle cx="{x(r.value):.1f}" cy="{y}" r="5" fill="{color}" opacity="{opacity}">'
            f"<title>{html.escape(fmt.ratio_ci(r.value, r.low, r.high))}</title></circle>"
        )
        out.append(
            f'<text x="{min(x(r.value) + 8, width - 40):.1f}" y="{y - 7}" fill="#333">'
            f"{html.escape(fmt.ratio(r.value))}</text>"
        )
    out.append("</svg>")
    return "".join(out)


def summary_html(result: BenchResult) -> str:
    """A table of each size and mode (time with its interval, speedups) and the chart."""
    rows = []
    for c in result.analysis:
        for mode in ALL_MODES:
            f = c.get(mode)
            if f is None:
                continue
            cells = (c.case.size, mode.value, _time(f), _speedup(c, f))
            rows.append(
                "<tr>"
                + "".join(
                    ('<td style="text-align:right">' if i == 2 else "<td>")
                    + f"{html.escape(v)}</td>"
                    for i, v in enumerate(cells)
                )
                + "</tr>"
            )
    notes = "".join(f"<li>{html.escape(line)}</li>" for line in _problems(result))
    compile_lines = "".join(
        f"<li>{html.escape(c.case.size)}: {html.escape(line.strip())}</li>"
        for c in result.analysis
        for line in _case_lines(c, several=False)
        if line.strip().startswith("jit compile")
    )
    return (
        '<div class="jitbench-result">'
        f"<p><b>{html.escape(_header(result))}</b></p>"
        '<table class="jitbench-table"><thead><tr><th>size</th><th>mode</th><th>time</th>'
        f"<th>speedup</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f"{_chart(result)}"
        f"<ul>{compile_lines}{notes}</ul></div>"
    )
