"""The run page's case table (one row per case: NumPy, eager and jit side by side), each
case's details (every figure of every mode, diagnostics in full) and the CSV download.

Pure functions of a Run: cells carry text (escaped by the template), a sort key and a
tooltip; nothing here writes files.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from jitbench import formatting as fmt
from jitbench.config import ALL_MODES, JAX_MODES
from jitbench.report import data
from jitbench.results import Case, Measurement, Mode, Run, Status
from jitbench.results.analysis import (
    CaseAnalysis,
    ModeFigure,
    analyse,
    judgement,
)


@dataclass(frozen=True)
class Cell:
    """A table cell: `text` to show, `sub` in smaller type after it, a `sort` key (number
    or text) for the sortable table, a tooltip `title`, and a CSS `css` class."""

    text: str
    sort: float | str | None = None
    title: str = ""
    sub: str = ""
    css: str = ""


@dataclass(frozen=True)
class Column:
    key: str
    head: str
    numeric: bool = False
    title: str = ""


@dataclass(frozen=True)
class CaseRow:
    """One case: its `id` (for its details panel), cells by column key, whether any of its
    measurements failed."""

    id: str
    case: Case
    cells: dict[str, Cell]
    failed: bool


_STATUS_CSS = {
    Status.ERROR: "status-error",
    Status.MISMATCH: "status-mismatch",
    Status.TIMEOUT: "status-timeout",
    Status.SKIPPED: "status-skipped",
}


def case_id(index: int) -> str:
    return f"c{index + 1}"


def case_columns(run: Run) -> list[Column]:
    """The columns of the case table; device and dtype only when the run has several."""
    modes = {m.mode for m in run.measurements}
    cols = [Column("workload", "workload"), Column("size", "size", title="sorts S < M < L")]
    if len(data.device_labels(run)) > 1:
        cols.append(Column("device", "device"))
    if len(data.dtypes(run)) > 1:
        cols.append(Column("dtype", "dtype"))
    for mode in ALL_MODES:
        if mode in modes:
            cols.append(
                Column(
                    mode.value,
                    "NumPy" if mode is Mode.NUMPY else mode.value,
                    numeric=True,
                    title="median time per call; ± the 95 % interval's half-width",
                )
            )
    for mode in JAX_MODES:
        if mode in modes and Mode.NUMPY in modes:
            cols.append(
                Column(
                    f"{mode.value}_x",
                    f"{mode.value} ×",
                    numeric=True,
                    title=f"speedup of {mode.value} over NumPy with its 95 % interval",
                )
            )
    if Mode.JIT in modes:
        cols += [
            Column("compile", "jit compile", True, "cold trace + lower + XLA compile"),
            Column(
                "break_even",
                "break-even",
                True,
                "calls after which jit's compile is paid back against NumPy",
            ),
            Column("gflops", "GFLOP/s", True, "jit: XLA's flop count ÷ median time"),
        ]
    if Mode.SHARDED in modes:
        cols += [
            Column(
                "sharded",
                "sharded",
                True,
                "median time per call of jit's program over a mesh of the platform's devices "
                "(the sub-line: how many)",
            ),
            Column(
                "scaling",
                "vs 1 device ×",
                True,
                "jit time on one device ÷ sharded time, with its 95 % interval",
            ),
            Column(
                "efficiency",
                "efficiency",
                True,
                "that speedup ÷ the number of devices (100 %: perfect scaling)",
            ),
        ]
    if modes & set(JAX_MODES):
        cols.append(
            Column("transfer", "H→D", True, "host → device copy of the inputs (device_put)")
        )
        if any(m.transfer_back_s is not None for m in run.measurements):
            cols.append(
                Column(
                    "transfer_back",
                    "D→H",
                    True,
                    "device → host copy of jit's first output (device_get; eager's where jit "
                    "failed)",
                )
            )
    split_modes = {m.mode for m in run.measurements if m.time_split is not None}
    for mode in JAX_MODES:
        if mode in split_modes:
            cols.append(
                Column(
                    f"{mode.value}_split",
                    f"{mode.value} host · device",
                    True,
                    f"{mode.value}: host dispatch and device execution per call, from a "
                    "jax.profiler trace of a few calls (--setting time_split=true); the larger "
                    "bounds the call",
                )
            )
    cols.append(Column("notes", "notes", title="diagnostic codes by mode; details per case"))
    return cols


def _time_cell(f: ModeFigure | None) -> Cell:
    if f is None:
        return Cell("")
    m, t = f.measurement, f.time
    if m.status is not Status.OK or t is None:
        return Cell(m.status.value, None, title=m.failure_text, css=_STATUS_CSS.get(m.status, ""))
    calls = f"{len(m.samples_s)} samples, each timing {m.calls_per_sample:,} back-to-back call" + (
        "s" if m.calls_per_sample != 1 else ""
    )
    processes = (
        f"; its {len(f.process_times)} processes: "
        + ", ".join(fmt.seconds(x) for x in f.process_times)
        + " (the time is their geometric mean)"
        if len(f.process_times) > 1
        else ""
    )
    interval = (
        f"95 % interval {fmt.seconds(t.low)} – {fmt.seconds(t.high)}; "
        if t.low is not None and t.high is not None
        else ""
    )
    return Cell(
        fmt.seconds(t.value),
        t.value,
        title=f"{interval}{calls}{processes}",
        sub=fmt.seconds_pm(t.value, t.low, t.high),
    )


def _speedup_cell(f: ModeFigure | None) -> Cell:
    r = f.speedup if f is not None else None
    if f is None or r is None:
        return Cell("—")
    marks = f.marks
    interval = fmt.interval(r.low, r.high) if r.low is not None and r.high is not None else ""
    if f.disagree:
        interval += " · " + " / ".join(fmt.ratio(x) for x in f.process_speedups)
    return Cell(
        fmt.ratio(r.value) + (f" {marks}" if marks else ""),
        r.value,
        title=data.speedup_title(f),
        sub=interval,
        css="suspect" if f.suspect else ("uncertain" if f.uncertain else ""),
    )


def _transfer(case: Case, by_mode: dict[Mode, Measurement | None]) -> Cell:
    m = next(
        (x for x in (by_mode.get(Mode.JIT), by_mode.get(Mode.EAGER)) if x and x.transfer_s),
        None,
    )
    if m is None or m.transfer_s is None:
        return Cell("—")
    nbytes = m.transfer_bytes if m.transfer_bytes is not None else case.input_bytes
    return _copy_cell(m.transfer_s, nbytes, "jax.device_put of the inputs, timed on its own")


def _transfer_back(by_mode: dict[Mode, Measurement | None]) -> Cell:
    m = next(
        (
            x
            for x in (by_mode.get(Mode.JIT), by_mode.get(Mode.EAGER))
            if x and x.transfer_back_s is not None
        ),
        None,
    )
    if m is None or m.transfer_back_s is None:
        return Cell("—")
    what = "jit's" if m.mode is Mode.JIT else "eager's"
    return _copy_cell(
        m.transfer_back_s,
        m.transfer_back_bytes,
        f"the copy of {what} first output to the host, timed on its own",
    )


def _copy_cell(seconds: float, nbytes: int | None, what: str) -> Cell:
    rate = f"; {nbytes / seconds / 1e9:.3g} GB/s" if nbytes and seconds > 0 else ""
    return Cell(
        fmt.seconds(seconds),
        seconds,
        title=f"{what}{rate}",
        sub=fmt.bytes_(nbytes) if nbytes is not None else "",
    )


def _sharded_cells(c: CaseAnalysis) -> dict[str, Cell]:
    """The sharded time (with the mesh's size), its speedup over jit on one device and the
    scaling efficiency (`CaseAnalysis.scaling`)."""
    f = c.get(Mode.SHARDED)
    m = f.measurement if f is not None else None
    time = _time_cell(f)
    if m is not None and m.sharding is not None:
        devices = m.sharding.device_count
        time = replace(time, sub=" · ".join(filter(None, (time.sub, f"{devices} devices"))))
    scaling = c.scaling
    if scaling is None:
        return {"sharded": time, "scaling": Cell("—"), "efficiency": Cell("—")}
    r, e = scaling.speedup, scaling.efficiency
    interval = fmt.interval(r.low, r.high) if r.low is not None and r.high is not None else ""
    return {
        "sharded": time,
        "scaling": Cell(fmt.ratio(r.value), r.value, sub=interval),
        "efficiency": Cell(f"{e.value:.0%}", e.value),
    }


def _split_cell(m: Measurement | None) -> Cell:
    """'137 µs · 83 µs' (host dispatch · device execution per call), sorted by the host's
    share of the two: which one bounds the call."""
    t = m.time_split if m is not None else None
    if t is None:
        return Cell("—")
    bound = "host dispatch" if t.host_s > t.device_s else "device execution"
    total = t.host_s + t.device_s
    return Cell(
        f"{fmt.seconds(t.host_s)} · {fmt.seconds(t.device_s)}",
        t.host_s / total if total > 0 else None,
        title=f"bound by {bound}; traced wall {fmt.seconds(t.wall_s)} per call over "
        f"{t.calls} calls (the profiler slows them: compare host with device, not with the "
        "median)",
        sub="host-bound" if t.host_s > t.device_s else "device-bound",
    )


def case_notes(measurements: Sequence[Measurement | None]) -> tuple[str, str]:
    """('jit: jit-slower-than-numpy', full messages) for one case: codes grouped by mode,
    the run-wide `noisy` left to the page's banner; an error shows its exception type."""
    short, full = [], []
    for m in measurements:
        if m is None:
            continue
        codes = [d.code for d in m.diagnostics if d.code != judgement.NOISY]
        if m.error is not None:
            codes.insert(0, m.error.type)
            full.append(f"{m.mode.value}: {m.failure_text}")
        full += [f"{m.mode.value}: {d.code}: {d.message}" for d in m.diagnostics]
        if codes:
            short.append(f"{m.mode.value}: {', '.join(dict.fromkeys(codes))}")
    return "; ".join(short), "\n".join(full)


def case_rows(run: Run) -> list[CaseRow]:
    """One row per case, in the run's order."""
    rows = []
    figures = analyse(run)
    for i, case in enumerate(run.cases()):
        shown = figures.case(case)
        assert shown is not None
        by_mode = {m: run.get(case.key, m) for m in ALL_MODES}
        jit = by_mode[Mode.JIT]
        c = jit.compile if jit is not None else None
        jit_f = shown.get(Mode.JIT)
        compile_s = jit_f.compile_s if jit_f is not None else None
        be = shown.break_even_calls
        flops = jit_f.achieved_flops_per_s if jit_f is not None else None
        short, full = case_notes(list(by_mode.values()))
        cells = {
            "workload": Cell(case.workload, case.workload, title=data.params_text(case)),
            "size": Cell(
                case.size,
                data.size_sort_key(case),
                title=f"{data.params_text(case)}; {fmt.count(case.input_elements)} input elements"
                if case.input_elements
                else data.params_text(case),
            ),
            "device": Cell(case.device, case.device, title=case.device_kind),
            "dtype": Cell(case.dtype, case.dtype),
            **{m.value: _time_cell(shown.get(m)) for m in ALL_MODES},
            **{f"{m.value}_x": _speedup_cell(shown.get(m)) for m in JAX_MODES},
            "compile": Cell(
                fmt.seconds(compile_s),
                compile_s,
                title=compile_title(jit) if jit is not None else "",
            ),
            "break_even": Cell(
                fmt.count(be),
                be if be is None or be != float("inf") else 1e300,
                title="never: jit is not faster than NumPy" if be == float("inf") else "",
            ),
            "gflops": Cell(
                "—" if flops is None else f"{flops / 1e9:.3g}",
                flops,
                title="loops: XLA counts the body once, so no rate"
                if c is not None and c.has_loops
                else "",
            ),
            **_sharded_cells(shown),
            "transfer": _transfer(case, by_mode),
            "transfer_back": _transfer_back(by_mode),
            **{f"{m.value}_split": _split_cell(by_mode[m]) for m in JAX_MODES},
            "notes": Cell(short, short, title=full),
        }
        rows.append(
            CaseRow(
                case_id(i),
                case,
                cells,
                failed=any(m is not None and m.failed for m in by_mode.values()),
            )
        )
    return rows


def compile_title(m: Measurement) -> str:
    c = m.compile
    if c is None:
        return ""
    parts = [
        f"trace {fmt.seconds(c.trace_s)}",
        f"lower {fmt.seconds(c.lower_s)}",
        f"XLA compile {fmt.seconds(c.compile_s)}",
        f"{c.compile_count} compile(s) on the first call",
    ]
    if c.jaxpr_eqn_count is not None:
        parts.append(f"{c.jaxpr_eqn_count} jaxpr equations")
    return ", ".join(parts)


# ---------------------------------------------------------------------------------------
# Overview heatmap (an HTML table: no chart library, readable and selectable)

#: ColorBrewer RdBu (11 classes): red where a mode is slower than NumPy, blue where faster.
_RDBU = (
    "#67001f", "#b2182b", "#d6604d", "#f4a582", "#fddbc7", "#f7f7f7",
    "#d1e5f0", "#92c5de", "#4393c3", "#2166ac", "#053061",
)  # fmt: skip


def heat_color(log_ratio: float, span: float) -> tuple[str, str]:
    """(background, text colour) for log10(speedup) on a diverging scale over ±`span`:
    1× is near white; the text is white on dark cells."""
    t = max(-1.0, min(1.0, log_ratio / span)) if span > 0 else 0.0
    x = (t + 1) / 2 * (len(_RDBU) - 1)
    i = min(int(x), len(_RDBU) - 2)
    f = x - i
    a, b = (tuple(int(c[k : k + 2], 16) for k in (1, 3, 5)) for c in _RDBU[i : i + 2])
    rgb = [round(p + (q - p) * f) for p, q in zip(a, b, strict=True)]
    luminance = (0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]) / 255
    return "#{:02x}{:02x}{:02x}".format(*rgb), "#ffffff" if luminance < 0.55 else "#1d232b"


#: A heatmap cell whose speedup is no headline (`ModeFigure.uncertain`): grey on light grey,
#: marked, so it never reads as the strongest result.
UNCERTAIN_BACKGROUND = "#eeeeee"
UNCERTAIN_TEXT = "#6b7280"


@dataclass(frozen=True)
class HeatCell:
    text: str
    title: str
    background: str = ""
    color: str = ""


@dataclass(frozen=True)
class Heatmap:
    """Workload × size (× device) → speedup of `mode` over NumPy at preset sizes, with the
    colour scale's `span` (log10) and its legend ticks (value, background, text colour)."""

    mode: Mode
    columns: list[str]
    rows: list[tuple[str, list[HeatCell]]]
    span: float
    legend: list[tuple[str, str, str]]


def heatmaps(run: Run) -> list[Heatmap]:
    """The overview heatmaps of `run`, jit first then eager; empty when the run has no
    speedups at preset sizes (a sweep has its own charts)."""
    modes = {m.mode for m in run.measurements}
    devices = data.device_labels(run)
    columns: list[tuple[str, str]] = []
    for d in devices:
        sizes = {c.size: c for c in data.cases_on(run, d) if not data.is_sweep_case(c)}
        columns += [(s, d) for s in sorted(sizes, key=lambda s: data.size_sort_key(sizes[s]))]
    names = list(dict.fromkeys(c.workload for c in run.cases() if not data.is_sweep_case(c)))
    if Mode.NUMPY not in modes or not columns:
        return []
    # Preset cases only: a sweep's extreme sizes must not stretch the colour scale.
    by_key = {(c.workload, c.size, c.device): c for c in run.cases() if not data.is_sweep_case(c)}
    figures = analyse(run)
    shown = {
        (mode, key): figures.figure(case, mode)
        for mode in JAX_MODES
        if mode in modes
        for key, case in by_key.items()
    }
    # The colour scale spans the headline figures: a speedup too uncertain to headline
    # must not stretch it (nor be its darkest cell).
    logs = [
        abs(math.log10(f.speedup.value))
        for f in shown.values()
        if f is not None and f.speedup is not None and f.headline
    ]
    span = max([math.log10(2.0), *logs])
    ticks = [0.1, 0.5, 1, 2, 10] if span >= 1 else [0.5, 1, 2]
    ticks = [t for t in (*ticks, 0.01, 100) if abs(math.log10(t)) <= span + 1e-9]
    legend = [(fmt.ratio(t), *heat_color(math.log10(t), span)) for t in sorted(set(ticks))]
    out = []
    for mode in (Mode.JIT, Mode.EAGER):
        if mode not in modes:
            continue
        rows = []
        for w in names:
            cells = []
            for s, d in columns:
                case = by_key.get((w, s, d))
                f = shown.get((mode, (w, s, d)))
                r = f.speedup if f is not None else None
                if case is None:
                    cells.append(HeatCell("", "not measured"))
                elif r is None or not (math.isfinite(r.value) and r.value > 0):
                    failed = [
                        f"{x.mode.value} {x.status.value}"
                        for x in (run.get(case.key, Mode.NUMPY), run.get(case.key, mode))
                        if x is not None and x.failed
                    ]
                    cells.append(
                        HeatCell("✗" if failed else "—", ", ".join(failed) or "no speedup")
                    )
                else:
                    assert f is not None
                    marks = f.marks
                    why = data.speedup_title(f)
                    text = f"{data.case_label(case)} {case.device}: {mode.value} " + (
                        fmt.ratio_ci(r.value, r.low, r.high)
                    )
                    if f.headline:
                        bg, fg = heat_color(math.log10(r.value), span)
                    else:  # drawn faded: the neutral colour, never a strong one
                        bg, fg = UNCERTAIN_BACKGROUND, UNCERTAIN_TEXT
                    cells.append(
                        HeatCell(
                            fmt.ratio(r.value)
                            + (f" {marks}" if marks else "")
                            + ("" if f.headline or marks else " ?"),
                            text + (f" ({why})" if why else ""),
                            bg,
                            fg,
                        )
                    )
            rows.append((w, cells))
        heads = [s if len(devices) == 1 else f"{s} · {d}" for s, d in columns]
        out.append(Heatmap(mode, heads, rows, span, legend))
    return out


# ---------------------------------------------------------------------------------------
# Case details


@dataclass(frozen=True)
class Detail:
    """Everything measured for one case, mode by mode: `rows` are (figure name, text per
    mode) for the detail table; `messages` the diagnostics and errors in full."""

    id: str
    case: Case
    title: str
    modes: list[Mode]
    rows: list[tuple[str, list[str]]]
    messages: list[tuple[str, str, str, str]] = field(default_factory=list)  # mode, sev, text, hint


def _mode_figures(f: ModeFigure) -> dict[str, str]:
    """Every figure of one measurement as text, by the name the detail table shows."""
    m = f.measurement
    s, c, t = m.summary, m.compile, f.time
    r = f.speedup
    mem = (c.memory or {}) if c is not None else {}
    jit_c = c if m.mode is Mode.JIT else None

    def rate(value: float | None) -> str:
        return "—" if value is None else f"{value / 1e9:.3g}"

    return {
        "status": m.status.value,
        "time / call": fmt.seconds(t.value) if t else "—",
        "95 % interval": f"{fmt.seconds(t.low)} – {fmt.seconds(t.high)}"
        if t and t.low is not None and t.high is not None
        else "—",
        "each process's median": ", ".join(fmt.seconds(x) for x in f.process_times)
        if len(f.process_times) > 1
        else "—",
        "samples": f"{len(m.samples_s)} × {m.calls_per_sample:,} calls" if m.samples_s else "—",
        "min – max": f"{fmt.seconds(s.min)} – {fmt.seconds(s.max)}" if s else "—",
        "speedup over NumPy": (
            fmt.ratio_ci(r.value, r.low, r.high)
            + (f" {fmt.OVER_EAGER_MARK} over eager" if f.over is Mode.EAGER else "")
        )
        if r
        else "—",
        "each process's speedup": ", ".join(fmt.ratio(x) for x in f.process_speedups)
        if f.process_speedups
        else "—",
        "first call (cold)": fmt.seconds(c.first_call_s) if c else "—",
        "compiles on first call": str(c.compile_count) if c else "—",
        "trace / lower / compile": " / ".join(
            fmt.seconds(x) for x in (jit_c.trace_s, jit_c.lower_s, jit_c.compile_s)
        )
        if jit_c
        else "—",
        "jaxpr equations": str(c.jaxpr_eqn_count) if c and c.jaxpr_eqn_count is not None else "—",
        "program fingerprint": c.program_fingerprint or "—" if c else "—",
        "fusions · custom calls": f"{c.fusion_count} · {c.custom_call_count}"
        if c and c.hlo_opcodes is not None
        else "—",
        "HLO instructions": f"{sum(c.hlo_opcodes.values()):,}"
        if c and c.hlo_opcodes is not None
        else "—",
        f"top {TOP_OPCODES} opcodes": top_opcodes(c.hlo_opcodes) if c and c.hlo_opcodes else "—",
        "collectives": str(c.collective_count)
        if c and c.collective_count and m.mode is Mode.SHARDED
        else "—",
        "generated code": fmt.bytes_(c.code_bytes) if c and c.code_bytes is not None else "—",
        "transfer (device_put)": f"{fmt.seconds(m.transfer_s)} · {fmt.bytes_(m.transfer_bytes)}"
        if m.transfer_s is not None
        else "—",
        "transfer back (first output)": (
            f"{fmt.seconds(m.transfer_back_s)} · {fmt.bytes_(m.transfer_back_bytes)}"
        )
        if m.transfer_back_s is not None
        else "—",
        "device memory peak (allocator)": fmt.peak_bytes(
            m.device_peak_bytes, bool(m.device_peak_exact)
        ),
        "XLA flops": f"{c.flops:,.0f}" if c and c.flops is not None else "—",
        "XLA bytes accessed": fmt.bytes_(c.bytes_accessed)
        if c and c.bytes_accessed is not None
        else "—",
        "achieved GFLOP/s": rate(f.achieved_flops_per_s),
        "achieved GB/s": rate(f.achieved_bytes_per_s),
        **{
            f"memory: {name}": fmt.bytes_(mem[key]) if key in mem else "—"
            for key, name in (
                ("argument_bytes", "arguments"),
                ("output_bytes", "outputs"),
                ("temp_bytes", "temporaries"),
                ("peak_bytes", "peak"),
            )
        },
    }


#: Opcodes a case's details name (the most frequent first).
TOP_OPCODES = 5


def top_opcodes(opcodes: Mapping[str, int], n: int = TOP_OPCODES) -> str:
    """The `n` most frequent opcodes of a program, 'fusion 3 · multiply 2 · …' (parameters
    and constants aside: every program has them)."""
    ranked = sorted(
        ((count, op) for op, count in opcodes.items() if op not in ("parameter", "constant")),
        key=lambda x: (-x[0], x[1]),
    )
    return " · ".join(f"{op} {count:,}" for count, op in ranked[:n]) or "—"


def case_details(run: Run) -> list[Detail]:
    """The details of every case, in the table's order: figures no mode has are left out."""
    out = []
    analysis = analyse(run)
    for i, case in enumerate(run.cases()):
        c = analysis.case(case)
        assert c is not None
        shown = [f for mode in ALL_MODES if (f := c.get(mode)) is not None]
        ms = [f.measurement for f in shown]
        figures = [_mode_figures(f) for f in shown]
        names = list(figures[0]) if figures else []
        rows = [(name, [f[name] for f in figures]) for name in names]
        rows = [(name, cells) for name, cells in rows if any(x != "—" for x in cells)]
        messages = []
        for m in ms:
            if m.error is not None:
                messages.append(
                    (m.mode.value, "error", f"{m.error.type}: {m.error.message}", m.error.hint)
                )
            for d in m.diagnostics:
                messages.append((m.mode.value, d.severity.value, f"{d.code}: {d.message}", d.hint))
        title = f"{data.case_label(case)} on {case.device} ({case.dtype})"
        out.append(Detail(case_id(i), case, title, [m.mode for m in ms], rows, messages))
    return out


# ---------------------------------------------------------------------------------------
# CSV

CSV_FIELDS = (
    "run_id", "label", "workload", "size", "params", "input_elements", "input_bytes",
    "device", "device_kind", "dtype", "mode", "status", "time_s", "time_low_s", "time_high_s",
    "samples", "calls_per_sample", "speedup", "speedup_low", "speedup_high", "first_call_s",
    "compile_s", "trace_s", "lower_s", "xla_compile_s", "break_even_calls", "gflop_per_s",
    "transfer_s", "transfer_bytes", "transfer_back_s", "transfer_back_bytes", "peak_bytes",
    "device_peak_bytes", "device_peak_exact", "host_dispatch_s", "device_execution_s",
    "diagnostics", "error", "headline", "process_times_s", "process_speedups",
)  # fmt: skip


def run_csv(run: Run) -> str:
    """Every measurement of `run` as CSV: one row per case × mode, SI units (seconds,
    bytes), empty where a figure is missing."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    label = data.run_label(run) or ""
    figures = analyse(run)
    for m in run.measurements:
        case, c = m.case, m.compile
        shown = figures.case(case)
        f = shown.get(m.mode) if shown is not None else None
        t = f.time if f is not None else None
        r = f.speedup if f is not None else None
        be = shown.break_even_calls if shown is not None and m.mode is Mode.JIT else None
        row = {
            "run_id": run.run_id,
            "label": label,
            "workload": case.workload,
            "size": case.size,
            "params": json.dumps(dict(case.params), sort_keys=True, default=str),
            "input_elements": case.input_elements,
            "input_bytes": case.input_bytes,
            "device": case.device,
            "device_kind": case.device_kind,
            "dtype": case.dtype,
            "mode": m.mode.value,
            "status": m.status.value,
            "time_s": t.value if t else None,
            "time_low_s": t.low if t else None,
            "time_high_s": t.high if t else None,
            "samples": len(m.samples_s),
            "calls_per_sample": m.calls_per_sample,
            "speedup": r.value if r else None,
            "speedup_low": r.low if r else None,
            "speedup_high": r.high if r else None,
            "first_call_s": c.first_call_s if c else None,
            "compile_s": f.compile_s if f is not None else None,
            "trace_s": c.trace_s if c else None,
            "lower_s": c.lower_s if c else None,
            "xla_compile_s": c.compile_s if c else None,
            # 'inf', as the terminal's CSV writes it: a break-even that never comes is not
            # an unknown one.
            "break_even_calls": be,
            "gflop_per_s": f.achieved_flops_per_s / 1e9
            if f is not None and f.achieved_flops_per_s
            else None,
            "transfer_s": m.transfer_s,
            "transfer_bytes": m.transfer_bytes,
            "transfer_back_s": m.transfer_back_s,
            "transfer_back_bytes": m.transfer_back_bytes,
            "peak_bytes": (c.memory or {}).get("peak_bytes") if c else None,
            "device_peak_bytes": m.device_peak_bytes,
            "device_peak_exact": m.device_peak_exact,
            "host_dispatch_s": m.time_split.host_s if m.time_split else None,
            "device_execution_s": m.time_split.device_s if m.time_split else None,
            "diagnostics": " ".join(d.code for d in m.diagnostics),
            "error": f"{m.error.type}: {m.error.message}" if m.error else "",
            "headline": "" if r is None or f is None else str(f.headline).lower(),
            "process_times_s": ";".join(repr(x) for x in f.process_times) if f else "",
            "process_speedups": ";".join(repr(x) for x in f.process_speedups) if f else "",
        }
        writer.writerow({k: fmt.csv_cell(v) for k, v in row.items()})
    return buf.getvalue()
