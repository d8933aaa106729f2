"""Derived views of a Run that the report needs: devices, speedups, geometric means,
size-sweep series and crossovers, table rows, and safe text for names from results files.

Everything here is a pure function of Run objects: no I/O, no timing, no plotting.
"""

from __future__ import annotations

import html
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from jitbench import formatting as fmt
from jitbench import stats
from jitbench.config import ALL_MODES, JAX_MODES
from jitbench.measure import diagnose
from jitbench.measure import machine as machine_state
from jitbench.measure.threads import recorded_summary
from jitbench.results import Case, Measurement, Mode, Run

MAX_LABEL_CHARS = 60


def plot_text(text: object, *, limit: int = MAX_LABEL_CHARS) -> str:
    """Text from a results file made safe for plotly labels and hover text.

    Plotly renders a subset of HTML (`<a href>`, `<b>`, `<br>`, …) in labels, so every
    character it could read as markup is turned into an entity, which plotly displays as the
    literal character. Long text is clipped to `limit` characters in the middle, keeping
    both ends (names often differ only at the end, e.g. the size).
    """
    s = str(text)
    if limit and len(s) > limit:
        head = (limit - 1) // 2
        s = s[:head] + "…" + s[len(s) - (limit - 1 - head) :]
    # Quotes stay as they are: plotly decodes &lt; &gt; &amp; but shows &quot; literally,
    # and without < no tag (so no attribute) can start.
    return html.escape(s, quote=False)


def device_labels(run: Run) -> list[str]:
    """Devices measured in `run`, in first-seen order."""
    return list(dict.fromkeys(c.device for c in run.cases()))


def device_kind(run: Run, device: str) -> str:
    """The device kind (e.g. 'cpu', 'NVIDIA H100') of `device` in `run`, or ''."""
    for c in run.cases():
        if c.device == device and c.device_kind:
            return c.device_kind
    for d in run.environment.get("devices") or ():
        if isinstance(d, Mapping) and d.get("label") == device:
            return str(d.get("kind") or "")
    return ""


def host(run: Run) -> str:
    return str(run.environment.get("host") or "unknown host")


def device_title(run: Run, device: str, *, with_host: bool = False) -> str:
    """'cpu:0 (cpu)' or, across machines, 'host · cpu:0 (cpu)'. Not escaped."""
    kind = device_kind(run, device)
    base = f"{device} ({kind})" if kind and kind != device else device
    return f"{host(run)} · {base}" if with_host else base


def cases_on(run: Run, device: str) -> list[Case]:
    return [c for c in run.cases() if c.device == device]


def case_label(case: Case) -> str:
    """'workload[size]', the category a case is shown under. Not escaped."""
    return f"{case.workload}[{case.size}]"


def case_categories(cases: Sequence[Case]) -> list[str]:
    """Chart categories for `cases`: escaped, clipped and still distinct (clipping long
    names must not merge two cases into one category)."""
    out: list[str] = []
    for case in cases:
        label = plot_text(case_label(case))
        n = 1
        while label in out:
            n += 1
            label = plot_text(case_label(case), limit=MAX_LABEL_CHARS - 4) + f" #{n}"
        out.append(label)
    return out


def speedup_value(run: Run, case: Case, mode: Mode) -> float | None:
    """NumPy median / `mode` median without a CI (cheap; for summaries)."""
    base = run.get(case.key, Mode.NUMPY)
    other = run.get(case.key, mode)
    if not (base and other and base.ok and other.ok):
        return None
    if not base.median_s or not other.median_s:
        return None
    return base.median_s / other.median_s


def suspect_speedup(run: Run, case: Case, mode: Mode) -> bool:
    """Whether the speedup of `mode` over NumPy for `case` rests on a suspect figure (a side
    carries `size-order-inverted`): shown, marked, and left out of the geometric mean."""
    return diagnose.suspect_speedup(run, case.key, mode)


@dataclass(frozen=True)
class GeoMeanSpeedup:
    """Geometric-mean speedup of one mode on one device over `count` cases; `failed` cases
    failed or mismatched and `suspect` ones had a size-order inversion: both left out."""

    mode: Mode
    value: float | None
    count: int
    failed: int
    suspect: int = 0


def geomean_speedups(run: Run, device: str) -> list[GeoMeanSpeedup]:
    """Geometric mean of the speedup over NumPy per JAX mode, over cases where both sides
    are `ok`; failed and mismatched cases are counted apart, never averaged in, and so are
    cases whose figures are suspect (`suspect_speedup`)."""
    out = []
    modes = {m.mode for m in run.measurements}
    for mode in JAX_MODES:
        if mode not in modes:
            continue
        values, failed, suspect = [], 0, 0
        for case in cases_on(run, device):
            m = run.get(case.key, mode)
            if m is None:
                continue
            if m.failed:
                failed += 1
            v = speedup_value(run, case, mode)
            if v is None:
                continue
            if suspect_speedup(run, case, mode):
                suspect += 1
            else:
                values.append(v)
        out.append(GeoMeanSpeedup(mode, stats.geometric_mean(values), len(values), failed, suspect))
    return out


# ---------------------------------------------------------------------------------------
# Size sweeps


@dataclass(frozen=True)
class SweepPoint:
    size: str
    elements: int
    median_s: float
    ci_low_s: float
    ci_high_s: float


@dataclass(frozen=True)
class Crossover:
    """Where `mode` and NumPy cross: `elements` is interpolated on log–log axes.

    `overtakes` is True where `mode` becomes faster than NumPy as the size grows, False
    where it falls behind.
    """

    mode: Mode
    elements: float
    overtakes: bool

    @property
    def text(self) -> str:
        verb = "overtakes" if self.overtakes else "falls behind"
        return f"{self.mode.value} {verb} NumPy at ≈ {approx_elements(self.elements)} elements"


def approx_elements(value: float) -> str:
    """An interpolated element count to three significant figures, e.g. '21,600'."""
    return fmt.count(float(f"{value:.3g}"))


def sweep_workloads(run: Run, device: str) -> list[str]:
    """Workloads on `device` measured at two or more input sizes (a size sweep)."""
    sizes: dict[str, set[int]] = {}
    for c in cases_on(run, device):
        if c.input_elements:
            sizes.setdefault(c.workload, set()).add(c.input_elements)
    return [w for w, s in sizes.items() if len(s) >= 2]


def sweep_series(run: Run, device: str, workload: str) -> dict[Mode, list[SweepPoint]]:
    """Per mode, the `ok` points of one workload on one device, smallest input first."""
    series: dict[Mode, list[SweepPoint]] = {}
    for c in cases_on(run, device):
        if c.workload != workload or not c.input_elements:
            continue
        for mode in ALL_MODES:
            m = run.get(c.key, mode)
            if m is None or not m.ok or m.summary is None:
                continue
            s = m.summary
            series.setdefault(mode, []).append(
                SweepPoint(c.size, int(c.input_elements), s.median, s.ci_low, s.ci_high)
            )
    for points in series.values():
        points.sort(key=lambda p: p.elements)
    return {m: series[m] for m in ALL_MODES if m in series}


def sweep_failures(run: Run, device: str, workload: str) -> list[tuple[Case, Measurement]]:
    """Failed or mismatched measurements of one workload's sweep (left off the lines)."""
    return [
        (c, m)
        for c in cases_on(run, device)
        if c.workload == workload
        for m in (run.get(c.key, mode) for mode in ALL_MODES)
        if m is not None and m.failed
    ]


def _order(p: SweepPoint, base: SweepPoint) -> int:
    """-1 if `p` is clearly faster than `base` (95 % CIs of the medians apart), +1 if
    clearly slower, 0 if the two cannot be told apart."""
    if p.ci_high_s < base.ci_low_s:
        return -1
    if p.ci_low_s > base.ci_high_s:
        return 1
    return 0


def crossovers(series: Mapping[Mode, Sequence[SweepPoint]], mode: Mode) -> list[Crossover]:
    """Sizes where `mode` and NumPy swap places, from points measured at the same sizes.

    The size is interpolated on log–log axes between the two points where the ratio of
    medians crosses 1. A crossing counts only when it is real: the nearest points on either
    side where the two modes' confidence intervals do not overlap must have them in opposite
    order, so noise around parity is not drawn as a crossover.
    """
    base = {p.elements: p for p in series.get(Mode.NUMPY, ()) if p.median_s > 0}
    pts = [(p, base[p.elements]) for p in series.get(mode, ()) if p.elements in base]
    order = [_order(p, b) for p, b in pts]
    out: list[Crossover] = []
    for i, ((p0, b0), (p1, b1)) in enumerate(itertools.pairwise(pts)):
        l0, l1 = math.log(p0.median_s / b0.median_s), math.log(p1.median_s / b1.median_s)
        if (l0 > 0) == (l1 > 0) or l0 == l1 or p0.elements == p1.elements:
            continue
        before = next((o for o in reversed(order[: i + 1]) if o), 0)
        after = next((o for o in order[i + 1 :] if o), 0)
        if before != (1 if l0 > 0 else -1) or after != -before:
            continue
        if out and out[-1].overtakes == (l0 > 0):
            continue  # the same real change, crossed twice more by noise on the way
        t = l0 / (l0 - l1)
        lx = math.log(p0.elements) + t * (math.log(p1.elements) - math.log(p0.elements))
        out.append(Crossover(mode, math.exp(lx), overtakes=l0 > 0))
    return out


def sweep_verdict(series: Mapping[Mode, Sequence[SweepPoint]], mode: Mode) -> str:
    """A sentence on how `mode` compares with NumPy across the sweep. Not escaped."""
    cross = crossovers(series, mode)
    if cross:
        return "; ".join(c.text for c in cross)
    base = {p.elements: p for p in series.get(Mode.NUMPY, ())}
    order = [_order(p, base[p.elements]) for p in series.get(mode, ()) if p.elements in base]
    if not order:
        return f"{mode.value}: no sizes to compare with NumPy"
    if all(o < 0 for o in order):
        return f"{mode.value} is faster than NumPy at every size measured"
    if all(o > 0 for o in order):
        return f"{mode.value} is slower than NumPy at every size measured"
    return f"{mode.value}: no clear crossover (within noise of NumPy at some sizes)"


# ---------------------------------------------------------------------------------------
# Table rows


@dataclass(frozen=True)
class Cell:
    """A table cell: `text` to show and `sort` key (number or text) for the sortable table."""

    text: str
    sort: float | str | None = None
    title: str = ""


def measurement_rows(run: Run) -> list[dict[str, Cell]]:
    """One row per measurement, cells already formatted (text is escaped by the template)."""
    rows = []
    for m in run.measurements:
        s = m.summary
        c = m.compile
        speed = run.speedup(m.case.key, m.mode) if m.mode is not Mode.NUMPY else None
        suspect = speed is not None and suspect_speedup(run, m.case, m.mode)
        compile_s = c.total_compile_s if c else None
        problem = ""
        if m.error is not None:
            problem = f"{m.error.type}: {m.error.message}"
            if m.error.hint:
                problem += f" — hint: {m.error.hint}"
        diags = "; ".join(
            f"[{d.severity.value}] {d.code}: {d.message}" + (f" — {d.hint}" if d.hint else "")
            for d in m.diagnostics
        )
        rows.append(
            {
                "workload": Cell(m.case.workload, m.case.workload),
                "size": Cell(
                    m.case.size,
                    m.case.input_elements or m.case.size,
                    title=f"{fmt.count(m.case.input_elements)} input elements"
                    if m.case.input_elements
                    else "",
                ),
                "device": Cell(m.case.device, m.case.device, title=m.case.device_kind),
                "dtype": Cell(m.case.dtype, m.case.dtype),
                "mode": Cell(m.mode.value, ALL_MODES.index(m.mode)),
                "status": Cell(m.status.value, m.status.value),
                "median": Cell(fmt.seconds(s.median) if s else "—", s.median if s else None),
                "ci": Cell(
                    f"{fmt.seconds(s.ci_low)} – {fmt.seconds(s.ci_high)}" if s else "—",
                    s.ci_halfwidth_rel if s else None,
                    title="95 % CI of the median; sorts by relative half-width",
                ),
                "samples": Cell(
                    f"{s.n} × {m.calls_per_sample}" if s else "—",
                    s.n if s else None,
                    title="samples × calls per sample",
                ),
                "speedup": Cell(
                    (fmt.ratio_ci(speed.value, speed.low, speed.high) if speed else "—")
                    + (" ⚠" if suspect else ""),
                    speed.value if speed else None,
                    title="size-order-inverted: left out of the geometric mean" if suspect else "",
                ),
                "first_call": Cell(
                    fmt.seconds(c.first_call_s) if c else "—", c.first_call_s if c else None
                ),
                "compile": Cell(fmt.seconds(compile_s), compile_s, title=_compile_title(m)),
                "notes": Cell("; ".join(x for x in (problem, diags) if x), problem or diags),
            }
        )
    return rows


def _compile_title(m: Measurement) -> str:
    c = m.compile
    if c is None:
        return ""
    parts = [
        f"trace {fmt.seconds(c.trace_s)}",
        f"lower {fmt.seconds(c.lower_s)}",
        f"compile {fmt.seconds(c.compile_s)}",
        f"{c.compile_count} compile(s) on first call",
    ]
    if c.jaxpr_eqn_count is not None:
        parts.append(f"{c.jaxpr_eqn_count} jaxpr equations")
    return ", ".join(parts)


# ---------------------------------------------------------------------------------------
# Run-level summaries (index, headers)


def started(run: Run) -> datetime | None:
    try:
        return datetime.fromisoformat(run.started_at.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return None


def started_text(run: Run) -> str:
    when = started(run)
    return when.strftime("%Y-%m-%d %H:%M:%S %Z").strip() if when else str(run.started_at)


def newest_first(runs: Iterable[Run]) -> list[Run]:
    """Runs sorted by start time, newest first (unparseable dates last)."""

    def key(r: Run) -> tuple[int, float, str]:
        when = started(r)
        if when is None:
            return (1, 0.0, r.run_id)
        ts = when.timestamp() if when.tzinfo else when.replace(tzinfo=None).timestamp()
        return (0, -ts, r.run_id)

    return sorted(runs, key=key)


def versions(run: Run) -> Mapping[str, Any]:
    v = run.environment.get("versions")
    return v if isinstance(v, Mapping) else {}


def machine(run: Run) -> str:
    env = run.environment
    cpu = env.get("cpu") or env.get("machine") or ""
    return f"{host(run)} — {cpu}" if cpu else host(run)


def workloads(run: Run) -> list[str]:
    return list(dict.fromkeys(c.workload for c in run.cases()))


def threads_text(run: Run) -> str | None:
    """'1 thread (core 0; openblas 1)', or None for runs that did not record it."""
    return recorded_summary(run.environment)


def machine_banner(run: Run) -> str | None:
    """One line when the machine was busy or noisy before or after the run (else None)."""
    return machine_state.banner(run.environment)


def environment_items(run: Run) -> list[tuple[str, str]]:
    """(key, value) pairs describing where and how the run was measured. Not escaped."""
    env = run.environment
    items: list[tuple[str, str]] = []

    def add(key: str, value: Any) -> None:
        items.append((key, "—" if value in (None, "", {}, []) else str(value)))

    for key in (
        "host",
        "os",
        "machine",
        "cpu",
        "cpu_count",
        "cpu_affinity_count",
        "python",
        "python_implementation",
        "backend",
        "x64",
    ):
        if key in env:
            add(key, env.get(key))
    for name, version in versions(run).items():
        add(name, version)
    for d in env.get("devices") or ():
        if isinstance(d, Mapping):
            add(f"device {d.get('label')}", d.get("kind"))
    git = env.get("git") if isinstance(env.get("git"), Mapping) else {}
    if git:
        add(
            "git",
            f"{git.get('commit')}{' (dirty)' if git.get('dirty') else ''}"
            if git.get("commit")
            else None,
        )
    for k, v in (env.get("env") or {}).items():
        add(f"${k}", v)
    if "threads" in env:
        add("threads", recorded_summary(env))
    for key in ("machine_before", "machine_after"):
        state = machine_state.from_environment(env, key)
        if state is not None:
            add(key.replace("_", " "), f"{state.summary} ({state.verdict().label})")
    for k, v in _flatten(run.config_record()):
        add(f"config.{k}", v)
    return items


def _flatten(d: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.extend(_flatten(v, f"{prefix}{k}."))
        else:
            out.append(
                (f"{prefix}{k}", ", ".join(map(str, v)) if isinstance(v, (list, tuple)) else v)
            )
    return out
