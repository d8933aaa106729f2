"""The comparison page's data and figures: cases aligned across runs (or revisions), each
later run against the first with the gate's verdicts, ratios with their intervals, and
what differs between the case sets.

The verdicts are the gate's (`jitbench.gate.Comparison`, one per later run, base = the
first run), taken as given: nothing is judged here. Pure functions; no I/O.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from jitbench import formatting as fmt
from jitbench.config import ALL_MODES
from jitbench.gate import Comparison, Entry, Verdict
from jitbench.report import data, figures
from jitbench.report.data import plot_text
from jitbench.report.figures import Figure, trace
from jitbench.results import Case, Measurement, Mode, Run, safe_file_stem
from jitbench.results.analysis import Estimate, analyse, time_ratio

#: One colour per run on side-by-side charts (the first is the baseline).
RUN_COLORS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3")
VERDICT_COLORS = {
    Verdict.REGRESSION: "#b2182b",
    Verdict.NOW_FAILING: "#b2182b",
    Verdict.IMPROVEMENT: "#1a7f37",
    Verdict.FIXED: "#1a7f37",
    Verdict.INCONCLUSIVE: "#9a6700",
    Verdict.UNCHANGED: "#6e7781",
}
#: Verdicts shown as a change (everything else is "no change" or "not compared").
CHANGED = frozenset({Verdict.REGRESSION, Verdict.IMPROVEMENT, Verdict.NOW_FAILING, Verdict.FIXED})

AlignKey = tuple[str, ...]


def side_names(runs: Sequence[Run]) -> list[str]:
    """A distinct name per run: its label or id (the id added where labels repeat)."""
    names = [data.run_name(r) for r in runs]
    return [
        f"{n} ({r.run_id})" if names.count(n) > 1 and n != r.run_id else n
        for n, r in zip(names, runs, strict=True)
    ]


#: Longest comparison page name made of the runs' names; a longer one (ten runs of
#: 40-character ids passed the 255 bytes a file name may have) is named by a digest.
_PAGE_NAME_MAX = 120


def page_name(runs: Sequence[Run]) -> str:
    """The comparison page's file name, from the runs' labels or ids:
    'compare-before-vs-after.html'; where that is long (many runs), from how many and a
    digest of their ids: 'compare-10-runs-1a2b3c4d5e6f.html'."""
    name = "compare-" + "-vs-".join(_name_stem(n) for n in side_names(runs)) + ".html"
    if len(name) <= _PAGE_NAME_MAX:
        return name
    digest = hashlib.sha256("\n".join(r.run_id for r in runs).encode("utf-8")).hexdigest()
    return f"compare-{len(runs)}-runs-{digest[:12]}.html"


def _name_stem(name: str) -> str:
    """`name` as a file name part ('cpu box': 'cpu_box'); one that lost characters a file
    name cannot hold (as '速い' does, to '_') or was cut at 48 keeps a short digest of the
    whole name, so that two such labels name two pages, not one."""
    stem, plain = safe_file_stem(name), name.replace(" ", "_")
    if stem == plain and len(stem) <= 48:
        return stem
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
    return f"{stem[:40]}-{digest}"


def _same_devices(runs: Sequence[Run]) -> bool:
    """Whether every run shares a device label with the first (else cases are aligned by
    workload, size and dtype: a CPU run beside a GPU run)."""
    base = set(data.device_labels(runs[0]))
    return all(base & set(data.device_labels(r)) for r in runs[1:])


@dataclass(frozen=True)
class Change:
    """One later run against the base for one case × mode: the time ratio new/base (above
    1 is slower) with its 95 % interval, and the gate's verdict ('—' where the gate did not
    judge the pair, with `note` saying why)."""

    ratio: float | None
    low: float | None
    high: float | None
    verdict: Verdict | None
    fails_gate: bool = False
    p: float | None = None
    note: str = ""
    compile_text: str = ""
    compile_verdict: Verdict | None = None

    @property
    def verdict_text(self) -> str:
        return self.verdict.value if self.verdict is not None else "—"


@dataclass(frozen=True)
class Row:
    """One case × mode aligned across the runs: a measurement per run (None where a run
    lacks it) and a change per later run."""

    key: AlignKey
    label: str
    devices: str
    mode: Mode
    measurements: tuple[Measurement | None, ...]
    changes: tuple[Change | None, ...]
    #: each run's time per call as its own tables show it (None where it has none)
    times: tuple[Estimate | None, ...] = ()


@dataclass(frozen=True)
class Alignment:
    """Runs aligned case by case. `by_device` is False when the runs were measured on
    different devices (a CPU run beside a GPU run): cases then match by workload, size and
    dtype. `only_in[i]` lists the cases only run i has."""

    runs: tuple[Run, ...]
    names: tuple[str, ...]
    rows: tuple[Row, ...]
    by_device: bool
    common: frozenset[AlignKey]
    only_in: tuple[tuple[str, ...], ...]
    same_run: bool

    @property
    def sets_differ(self) -> bool:
        return any(self.only_in)

    def headline_keys(self, run: Run, mode: Mode) -> frozenset[tuple[str, str, str, str]]:
        """`run`'s own case keys that every run has with a headline `mode` speedup
        (`ModeFigure.headline`): the like-for-like cases of the runs' geometric means, so
        that a case left out on one side (processes that disagree, a wide interval, a
        failure) is left out on every side."""
        everywhere = set(self.common)
        for r in self.runs:
            figures = analyse(r)
            everywhere -= {
                self.key_of(c)
                for c in r.cases()
                if (f := figures.figure(c, mode)) is None or not f.headline
            }
        return frozenset(c.key for c in run.cases() if self.key_of(c) in everywhere)

    def key_of(self, case: Case) -> AlignKey:
        return align_key(case, by_device=self.by_device)


def align_key(case: Case, *, by_device: bool) -> AlignKey:
    """What matches a case across runs: its key, or without the device when the runs
    were measured on different devices."""
    if by_device:
        return (case.workload, case.size, case.device, case.dtype)
    return (case.workload, case.size, case.dtype)


def _change(
    entry: Entry | None,
    base: Measurement | None,
    new: Measurement | None,
    why: str,
    times: tuple[Estimate | None, Estimate | None] = (None, None),
) -> Change | None:
    if base is None and new is None:
        return None
    if entry is not None:
        compile_text, compile_verdict = "", None
        if entry.compile is not None:
            c = entry.compile
            compile_text = f"{fmt.seconds(c.base_s)} → {fmt.seconds(c.new_s)}"
            compile_verdict = c.verdict
        ratio = entry.ratio if entry.ratio is not None and math.isfinite(entry.ratio) else None
        return Change(
            ratio,
            entry.ratio_low,
            entry.ratio_high,
            entry.verdict,
            fails_gate=entry.fails_gate,
            p=entry.p_judged,
            note=entry.note,
            compile_text=compile_text,
            compile_verdict=compile_verdict,
        )
    base_t, new_t = times
    if base is not None and new is not None and base.ok and new.ok and base_t and new_t:
        # Not judged (another device): the change of the two times shown beside it.
        r = time_ratio(base_t.value, new_t.value)
        if r is not None:
            return Change(r, None, None, None, note=why)
    return Change(None, None, None, None, note=why)


def align(runs: Sequence[Run], comparisons: Sequence[Comparison]) -> Alignment:
    """Align `runs` case by case (base = the first); `comparisons[i]` is the gate's
    comparison of runs[0] with runs[i + 1]."""
    if len(comparisons) != len(runs) - 1:
        raise ValueError("one comparison per run after the first is needed")
    by_device = _same_devices(runs)

    def key_of(c: Case) -> AlignKey:
        return align_key(c, by_device=by_device)

    found: dict[AlignKey, list[dict[Mode, Measurement]]] = {}
    cases: dict[AlignKey, list[Case]] = {}
    for i, run in enumerate(runs):
        for m in run.measurements:
            k = key_of(m.case)
            slots = found.setdefault(k, [{} for _ in runs])
            slots[i].setdefault(m.mode, m)
            cases.setdefault(k, [])
            if m.case not in cases[k]:
                cases[k].append(m.case)
    entries = [{(e.key, e.mode): e for e in cmp.entries} for cmp in comparisons]
    # NumPy is judged once per case, on one device (`gate.judge.numpy_copies`); its rows
    # on the other devices show that verdict.
    numpy_judged = [
        {(e.workload, e.size, e.dtype): e for e in cmp.entries if e.mode is Mode.NUMPY}
        for cmp in comparisons
    ]
    why = "" if by_device else "measured on different devices: the gate compares one device"
    rows = []
    for k, slots in found.items():
        first = cases[k][0]
        devices = " · ".join(dict.fromkeys(c.device for c in cases[k]))
        for mode in ALL_MODES:
            ms = tuple(s.get(mode) for s in slots)
            if all(m is None for m in ms):
                continue
            times = tuple(
                None if m is None or not m.ok else analyse(run).time(m.case, mode)
                for m, run in zip(ms, runs, strict=True)
            )
            changes = []
            for j, new in enumerate(ms[1:]):
                entry = entries[j].get((first.key, mode)) if by_device else None
                if by_device and entry is None and mode is Mode.NUMPY:
                    entry = numpy_judged[j].get((first.workload, first.size, first.dtype))
                    if entry is not None:
                        entry = replace(
                            entry,
                            note="; ".join(filter(None, (f"judged on {entry.device}", entry.note))),
                        )
                changes.append(_change(entry, ms[0], new, why, (times[0], times[j + 1])))
            rows.append(Row(k, data.case_label(first), devices, mode, ms, tuple(changes), times))
    present = [{key_of(c) for c in r.cases()} for r in runs]
    common = frozenset(set.intersection(*present)) if present else frozenset()
    # With other dtypes (an --x64 run beside a float32 one) 'workload[size]' is the same on
    # both sides: "Only in A: selu[S]. Only in B: selu[S]." read as a contradiction.
    dtyped = len({c.dtype for r in runs for c in r.cases()}) > 1

    def only_label(case: Case) -> str:
        return f"{data.case_label(case)} {case.dtype}" if dtyped else data.case_label(case)

    only_in = tuple(
        tuple(only_label(cases[k][0]) for k in found if k in present[i] and k not in common)
        for i in range(len(runs))
    )
    return Alignment(
        runs=tuple(runs),
        names=tuple(side_names(runs)),
        rows=tuple(rows),
        by_device=by_device,
        common=common,
        only_in=only_in,
        same_run=len({r.run_id for r in runs}) < len(runs),
    )


def ratio_text(change: Change | None) -> tuple[str, str]:
    """('1.12×', '[1.05–1.19]') for a change's time ratio, or ('—', '')."""
    if change is None or change.ratio is None:
        return "—", ""
    interval = (
        f"[{change.low:.3g}–{change.high:.3g}]"
        if change.low is not None and change.high is not None
        else ""
    )
    return fmt.ratio(change.ratio), interval


# ---------------------------------------------------------------------------------------
# Figures


def row_labels(alignment: Alignment) -> dict[AlignKey, str]:
    """A chart category per aligned case: 'workload[size]', with the device added where
    one label would otherwise cover cases on several devices. Escaped for plotly."""
    keys = list(dict.fromkeys(r.key for r in alignment.rows))
    first = {r.key: r for r in reversed(alignment.rows)}
    plain = [first[k].label for k in keys]
    return {
        k: plot_text(
            first[k].label
            if plain.count(first[k].label) == 1
            else f"{first[k].label} {first[k].devices}"
        )
        for k in keys
    }


def speedup_side_by_side(alignment: Alignment, mode: Mode = Mode.JIT) -> Figure | None:
    """Speedup over NumPy of `mode` per case, one trace per run, the runs' points side by
    side in each case (log axis, 95 % intervals, 1× line). None when no run has one."""
    rows = [r for r in alignment.rows if r.mode is mode]
    if not rows:
        return None
    labels = row_labels(alignment)
    row_cat = {r.key: labels[r.key] for r in rows}
    cats = list(row_cat.values())
    fig = figures.Draft()
    values = [1.0]
    drawn = False
    for i, (run, name) in enumerate(zip(alignment.runs, alignment.names, strict=True)):
        xs, ys, plus, minus, hover = [], [], [], [], []
        for r in rows:
            m = r.measurements[i]
            s = analyse(run).speedup(m.case, mode) if m is not None else None
            if s is None or not (math.isfinite(s.value) and s.value > 0):
                continue
            lo = s.low if s.low is not None and 0 < s.low <= s.value else s.value
            hi = s.high if s.high is not None and math.isfinite(s.high) else s.value
            xs.append(row_cat[r.key])
            ys.append(s.value)
            plus.append(hi - s.value)
            minus.append(s.value - lo)
            values += [lo, hi]
            hover.append(
                f"{row_cat[r.key]}<br>{plot_text(name)}: {mode.value} "
                f"{fmt.ratio_ci(s.value, s.low, s.high)}"
            )
        drawn = drawn or bool(xs)
        color = RUN_COLORS[i % len(RUN_COLORS)]
        fig.add_trace(
            trace(
                "scatter",
                x=xs,
                y=ys,
                mode="markers",
                name=plot_text(name, limit=40),
                offsetgroup=str(i),
                marker={"color": color, "symbol": figures.SYMBOLS[mode], "size": 9},
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": plus,
                    "arrayminus": minus,
                    "color": color,
                    "thickness": 1.5,
                    "width": 3,
                },
                hovertext=hover,
                hoverinfo="text",
            )
        )
    if not drawn:
        return None
    lo, hi = figures.log_range(values)
    figures.parity_line(fig)
    figures.base_layout(fig, height=360 + 4 * max(len(c) for c in cats))
    fig.update_layout(
        scattermode="group",
        scattergap=0.4,
        xaxis={
            "type": "category",
            "categoryorder": "array",
            "categoryarray": list(row_cat.values()),
            "tickangle": -30,
            "title": {"text": "workload [size]"},
        },
        yaxis=figures.ratio_axis(lo, hi, f"{mode.value} speedup over NumPy (×, log)"),
    )
    return fig.build()


def ratio_figure(alignment: Alignment, index: int) -> Figure | None:
    """Time of run `index + 1` over the base run per case and mode (log axis, 95 %
    intervals, 1× = no change; above is slower), each point coloured by the gate's verdict.
    None when no pair has a ratio."""
    rows = [r for r in alignment.rows if r.changes and r.changes[index] is not None]
    labels = row_labels(alignment)
    fig = figures.Draft()
    values = [1.0]
    cats: list[str] = []
    for mode in ALL_MODES:
        xs, ys, plus, minus, colors, hover = [], [], [], [], [], []
        for r in rows:
            if r.mode is not mode:
                continue
            c = r.changes[index]
            if c is None or c.ratio is None:
                continue
            label = labels[r.key]
            if label not in cats:
                cats.append(label)
            lo = c.low if c.low is not None and 0 < c.low <= c.ratio else c.ratio
            hi = c.high if c.high is not None and math.isfinite(c.high) else c.ratio
            xs.append(label)
            ys.append(c.ratio)
            plus.append(hi - c.ratio)
            minus.append(c.ratio - lo)
            values += [lo, hi]
            colors.append(VERDICT_COLORS.get(c.verdict, "#6e7781") if c.verdict else "#6e7781")
            hover.append(
                f"{label} {mode.value}<br>time ratio {fmt.ratio_ci(c.ratio, c.low, c.high)}"
                f"<br>verdict: {c.verdict_text}" + (f"<br>p = {c.p:.2g}" if c.p is not None else "")
            )
        if not xs:
            continue
        fig.add_trace(
            trace(
                "scatter",
                x=xs,
                y=ys,
                mode="markers",
                name=mode.value,
                offsetgroup=mode.value,
                marker={
                    "color": colors,
                    "symbol": figures.SYMBOLS[mode],
                    "size": 9,
                    "line": {"width": 1, "color": "white"},
                },
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": plus,
                    "arrayminus": minus,
                    "color": "#8b949e",
                    "thickness": 1.2,
                    "width": 3,
                },
                hovertext=hover,
                hoverinfo="text",
            )
        )
    if not fig.data:
        return None
    lo, hi = figures.log_range(values, pad=1.3)
    figures.parity_line(fig, "1× = no change (above: slower)")
    figures.base_layout(fig, height=360 + 4 * max(len(c) for c in cats))
    fig.update_layout(
        scattermode="group",
        scattergap=0.4,
        xaxis={
            "type": "category",
            "categoryorder": "array",
            "categoryarray": cats,
            "tickangle": -30,
            "title": {"text": "workload [size]"},
        },
        yaxis=figures.ratio_axis(
            lo, hi, f"time {plot_text(alignment.names[index + 1], limit=30)} ÷ base (×, log)"
        ),
    )
    return fig.build()


__all__ = [
    "Alignment",
    "Change",
    "Row",
    "align",
    "align_key",
    "page_name",
    "ratio_figure",
    "ratio_text",
    "row_labels",
    "side_names",
    "speedup_side_by_side",
]
