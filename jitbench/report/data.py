"""Derived views of a Run that the pages need: names, devices, speedups, geometric means,
size sweeps in the workload's own parameter (their crossovers are the analysis layer's:
`results.analysis.crossovers`), run-wide notes, and the environment as text.

Everything here is a pure function of Run objects: no I/O, no timing, no plotting.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar

from jitbench import formatting as fmt
from jitbench.config import ALL_MODES, JAX_MODES
from jitbench.measure.threads import recorded_summary
from jitbench.results import Case, Measurement, Mode, Run
from jitbench.results.analysis import (
    PROCESS_SPLIT_FACTOR,
    WIDE_FACTOR,
    GeoMeanSpeedup,
    ModeFigure,
    analyse,
    judgement,
)
from jitbench.results.analysis import machine as machine_state
from jitbench.results.analysis.crossovers import SpeedupPoint
from jitbench.suite.workload import sweep_label

MAX_LABEL_CHARS = 60

#: Size presets in the order a reader expects them (others sort after, then sweep points).
PRESET_ORDER = ("XS", "S", "M", "L", "XL")


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


# ---------------------------------------------------------------------------------------
# Names


def run_label(run: Run) -> str | None:
    """The label given with `jitbench run --label`, or None."""
    settings = run.config.settings
    label = settings.label if settings is not None else run.config.extra.get("label")
    return label if isinstance(label, str) and label.strip() else None


def run_name(run: Run) -> str:
    """What a person calls the run: its label, else its id. Not escaped."""
    return run_label(run) or run.run_id


def commit(run: Run) -> str | None:
    """The git commit the run was measured at, 10 characters (+ " dirty"), or None."""
    git = run.environment.get("git")
    if not isinstance(git, Mapping) or not git.get("commit"):
        return None
    return f"{str(git['commit'])[:10]}{' dirty' if git.get('dirty') else ''}"


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


def params_text(case: Case) -> str:
    """'n=1,000,000' or 'rows=3,000, cols=1,000' (numbers with thousands separators)."""
    parts = []
    for k, v in case.params.items():
        shown = f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)
        parts.append(f"{k}={shown}")
    return ", ".join(parts)


def is_sweep_case(case: Case) -> bool:
    """Whether `case` is a point of a size sweep (`--setting sweep=true`), not a size preset: its
    size is the sweep label of its parameters, e.g. 'n=1000'."""
    return bool(case.params) and case.size == sweep_label(case.params)


def size_sort_key(case: Case) -> str:
    """A text key that sorts sizes as a reader expects: presets in order (S < M < L),
    then other presets, then sweep points by input size."""
    if is_sweep_case(case):
        rank = len(PRESET_ORDER) + 1
    elif case.size in PRESET_ORDER:
        rank = PRESET_ORDER.index(case.size)
    else:
        rank = len(PRESET_ORDER)
    return f"{rank:02d}:{case.input_elements or 0:020d}:{case.size}"


# ---------------------------------------------------------------------------------------
# Speedups and their geometric means


def speedup_value(run: Run, case: Case, mode: Mode) -> float | None:
    """The speedup of `mode` over NumPy that the case's row shows, without its interval;
    None without one."""
    r = analyse(run).speedup(case, mode)
    if r is None or not (r.value > 0 and math.isfinite(r.value)):
        return None
    return r.value


def speedup_title(f: ModeFigure) -> str:
    """Why a speedup is marked or faded, and each process's own figure where they differ."""
    why = []
    over = "jit over eager: the workload has no NumPy side" if f.over is Mode.EAGER else ""
    if f.suspect:
        why.append("size-order-inverted (a stall)")
    if f.disagree:
        why.append(
            "its processes measured "
            + ", ".join(fmt.ratio(x) for x in f.process_speedups)
            + f" (≥ {PROCESS_SPLIT_FACTOR:g}× apart)"
        )
    if f.wide:
        why.append(f"its interval is wider than ×/÷ {WIDE_FACTOR:g}")
    if not why:
        return over
    return "; ".join([*filter(None, [over]), *why]) + ": left out of the geometric mean"


def headline_cases(run: Run, device: str) -> tuple[list[Case], str]:
    """The cases a headline (geometric mean) averages on `device`, and what they are.

    Preset sizes when there are any: a sweep's many tiny sizes would otherwise dominate
    the mean. A run of sweeps only is summarised at each workload's largest sweep size.
    """
    cases = cases_on(run, device)
    presets = [c for c in cases if not is_sweep_case(c)]
    if presets or not cases:
        return presets, "preset sizes"
    largest: dict[str, Case] = {}
    for c in cases:
        best = largest.get(c.workload)
        if best is None or (c.input_elements or 0) > (best.input_elements or 0):
            largest[c.workload] = c
    return list(largest.values()), "each sweep's largest size"


def geomean_speedups(
    run: Run, device: str, *, keys: frozenset[tuple[str, str, str, str]] | None = None
) -> list[GeoMeanSpeedup]:
    """Geometric mean of the speedup over NumPy per JAX mode over `headline_cases`
    (`RunAnalysis.geomeans`: failed, suspect and uncertain cases counted apart, never
    averaged in). `keys` restricts the cases (e.g. to those two runs have in common)."""
    cases, scope = headline_cases(run, device)
    if keys is not None:
        cases = [c for c in cases if c.key in keys]
    return analyse(run).geomeans(cases, scope)


# ---------------------------------------------------------------------------------------
# Size sweeps


def sweep_workloads(run: Run, device: str) -> list[str]:
    """Workloads on `device` measured at two or more sweep sizes (`--setting sweep=true`)."""
    counts: dict[str, int] = {}
    for c in cases_on(run, device):
        if is_sweep_case(c):
            counts[c.workload] = counts.get(c.workload, 0) + 1
    return [w for w, n in counts.items() if n >= 2]


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


@dataclass(frozen=True)
class SweepAxis:
    """The x axis of a sweep: the workload's own parameter (e.g. `n`) when one positive
    number varies across the sweep, else the input's element count."""

    param: str | None
    others: tuple[str, ...] = ()  # further parameters that vary with it

    @property
    def title(self) -> str:
        if self.param is None:
            return "input size (elements, log)"
        also = f"; {', '.join(self.others)} vary with it" if self.others else ""
        return f"{self.param} (log{also})"

    @property
    def name(self) -> str:
        return self.param or "elements"

    def value(self, case: Case) -> float | None:
        if self.param is None:
            return _number(case.input_elements)
        return _number(case.params.get(self.param))


def sweep_axis(cases: Sequence[Case]) -> SweepAxis:
    """The axis a sweep over `cases` is drawn and described on (see `SweepAxis`)."""
    if not cases:
        return SweepAxis(None)
    varying = []
    for name in cases[0].params:
        values = [_number(c.params.get(name)) for c in cases]
        if all(v is not None for v in values) and len(set(values)) > 1:
            varying.append(name)
    return SweepAxis(varying[0], tuple(varying[1:])) if varying else SweepAxis(None)


def sweep_cases(run: Run, device: str, workload: str) -> list[Case]:
    return [c for c in cases_on(run, device) if c.workload == workload and is_sweep_case(c)]


@dataclass(frozen=True)
class SweepPoint:
    """One mode's time per call at one sweep size (`x` on the sweep's axis), as the
    tables show it, with its interval."""

    size: str
    x: float
    time_s: float
    low_s: float
    high_s: float


def sweep_series(run: Run, device: str, workload: str) -> dict[Mode, list[SweepPoint]]:
    """Per mode, the `ok` times of one workload's sweep on one device, smallest first."""
    cases = sweep_cases(run, device, workload)
    axis = sweep_axis(cases)
    series: dict[Mode, list[SweepPoint]] = {}
    figures = analyse(run)
    for c in cases:
        x = axis.value(c)
        if x is None:
            continue
        for mode in ALL_MODES:
            f = figures.figure(c, mode)
            t = f.time if f is not None and f.ok else None
            if t is None:
                continue
            low = t.low if t.low is not None else t.value
            high = t.high if t.high is not None else t.value
            series.setdefault(mode, []).append(SweepPoint(c.size, x, t.value, low, high))
    for points in series.values():
        points.sort(key=lambda p: p.x)
    return {m: series[m] for m in ALL_MODES if m in series}


def speedup_series(run: Run, device: str, workload: str) -> dict[Mode, list[SpeedupPoint]]:
    """Per JAX mode, the speedup over NumPy at each size of one workload's sweep, smallest
    first; sizes without a finite positive speedup are left out."""
    cases = sweep_cases(run, device, workload)
    axis = sweep_axis(cases)
    out: dict[Mode, list[SpeedupPoint]] = {}
    figures = analyse(run)
    for mode in JAX_MODES:
        points = []
        for c in cases:
            x = axis.value(c)
            f = figures.figure(c, mode)
            r = f.speedup if f is not None else None
            if x is None or f is None or r is None or not (math.isfinite(r.value) and r.value > 0):
                continue
            low = r.low if r.low is not None and 0 < r.low <= r.value else r.value
            high = r.high if r.high is not None and math.isfinite(r.high) else r.value
            points.append(
                SpeedupPoint(
                    c.size, x, r.value, low, high, f.suspect, f.uncertain and not f.suspect
                )
            )
        if points:
            out[mode] = sorted(points, key=lambda p: p.x)
    return out


def sweep_failures(run: Run, device: str, workload: str) -> list[tuple[Case, Measurement]]:
    """Failed or mismatched measurements of one workload's sweep (left off the lines)."""
    return [
        (c, m)
        for c in sweep_cases(run, device, workload)
        for m in (run.get(c.key, mode) for mode in ALL_MODES)
        if m is not None and m.failed
    ]


# ---------------------------------------------------------------------------------------
# Run-level summaries (headers, banners, index)


class Dated(Protocol):
    """A run or its summary: what ordering by start time reads."""

    @property
    def run_id(self) -> str: ...

    @property
    def started_at(self) -> str: ...


DatedT = TypeVar("DatedT", bound=Dated)


def started(run: Dated) -> datetime | None:
    try:
        return datetime.fromisoformat(run.started_at.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return None


def started_text(run: Run) -> str:
    when = started(run)
    return when.strftime("%Y-%m-%d %H:%M:%S %Z").strip() if when else str(run.started_at)


def _timestamp(run: Dated) -> float | None:
    when = started(run)
    if when is None:
        return None
    return when.timestamp() if when.tzinfo else when.replace(tzinfo=None).timestamp()


def newest_first(runs: Iterable[DatedT]) -> list[DatedT]:
    """Runs (or their summaries) sorted by start time, newest first (unparseable dates
    last)."""

    def key(r: DatedT) -> tuple[int, float, str]:
        ts = _timestamp(r)
        return (1, 0.0, r.run_id) if ts is None else (0, -ts, r.run_id)

    return sorted(runs, key=key)


def oldest_first(runs: Iterable[DatedT]) -> list[DatedT]:
    """Runs (or their summaries) sorted by start time, oldest first (unparseable dates
    last)."""

    def key(r: DatedT) -> tuple[int, float, str]:
        ts = _timestamp(r)
        return (1, 0.0, r.run_id) if ts is None else (0, ts, r.run_id)

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
    """One line when the machine was busy or noisy before or after the run, or the run's
    processes measured the same code far apart (else None)."""
    return analyse(run).machine_banner


def dtypes(run: Run) -> list[str]:
    return list(dict.fromkeys(c.dtype for c in run.cases()))


@dataclass(frozen=True)
class Note:
    """One run-wide note for the page's banner: `level` is 'warn' or 'bad'; `link` an
    anchor on the page with the details ('' for none). Not escaped."""

    text: str
    level: str = "warn"
    link: str = ""


def run_notes(run: Run) -> list[Note]:
    """Everything that holds for the whole run, said once above the figures instead of on
    every row: an incomplete or quick run, a busy or noisy machine, how many measurements
    missed the precision target, failures, and suspect figures."""
    notes = []
    if not run.complete:
        notes.append(
            Note(
                "This run is incomplete (interrupted or still running): only the cases "
                "measured so far are shown.",
                "bad",
            )
        )
    settings = run.config.settings
    if settings is not None and settings.quick:
        notes.append(Note("Quick run: few samples and tiny budgets, so the figures are rough."))
    banner = machine_banner(run)
    if banner:
        notes.append(
            Note(
                f"{banner}. Differences smaller than these are the machine's, not the code's.",
                link="environment",
            )
        )
    if (tally := judgement.noisy_tally(run)) is not None:
        notes.append(
            Note(
                f"{tally.noisy} of {tally.measurements} measurements did not reach {tally.goal} "
                "within the sampling budget (noisy): their intervals are wider, and shown. "
                "Raise --budget or quiet the machine."
            )
        )
    failed = [m for m in run.measurements if m.failed]
    if failed:
        notes.append(
            Note(
                f"{len(failed)} measurement{'s' if len(failed) != 1 else ''} failed or did not "
                "match NumPy; marked in red and left out of speedups.",
                "bad",
                link="problems",
            )
        )
    figures = [f for c in analyse(run) for f in c.figures.values() if f.speedup is not None]
    uncertain = [f for f in figures if f.uncertain and not f.suspect]
    if uncertain:
        notes.append(
            Note(
                f"{len(uncertain)} speedup{'s' if len(uncertain) != 1 else ''} rest on processes "
                f"that measured them {PROCESS_SPLIT_FACTOR:g}× or more apart (marked "
                f"{fmt.DISAGREE_MARK}) or have an interval wider than ×/÷ {WIDE_FACTOR:g}: "
                "drawn faded, with each process's figure, and left out of the geometric means."
            )
        )
    suspect = [
        m for m in run.measurements if any(d.code == judgement.SIZE_ORDER for d in m.diagnostics)
    ]
    if suspect:
        notes.append(
            Note(
                f"{len(suspect)} measurement{'s' if len(suspect) != 1 else ''} ran slower than "
                "a larger size of the same workload (size-order-inverted, marked ⚠): left out "
                "of the geometric means."
            )
        )
    return notes


def interval_note(run: Run) -> str:
    """What the speedup intervals of `run` claim, and what the times count where it is CPU
    time. Not escaped."""
    clock = machine_state.clock_text(run)
    text = _interval_claim(run)
    return text if clock is None else f"{text} {clock[0].upper()}{clock[1:]}."


def _interval_claim(run: Run) -> str:
    if run.processes > 1:
        spread = analyse(run).process_spread
        return (
            f"Speedup intervals are 95 % prediction intervals for a repeat run, from "
            f"{machine_state.processes_text(run)}"
            + (f", which {machine_state.spread_text(spread)}." if spread is not None else ".")
        )
    if run.paired:
        return (
            "Speedup intervals are 95 % intervals of the median per-round ratio: they describe "
            "this process; a repeat run varies more (--processes 2 gives intervals that hold "
            "from run to run)."
        )
    return "Speedup intervals: bootstrap of the two medians (written before schema 1.3)."


# ---------------------------------------------------------------------------------------
# Environment


def environment_items(run: Run) -> list[tuple[str, str]]:
    """(key, value) pairs describing where and how the run was measured. Not escaped."""
    env = run.environment
    items: list[tuple[str, str]] = []

    def add(key: str, value: Any) -> None:
        items.append((key, "—" if value in (None, "", {}, []) else str(value)))

    label = run_label(run)
    if label:
        add("label", label)
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
        "matmul_precision",
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
    record = run.config_record()
    selection = run.config.selection
    for k, v in _flatten({k: v for k, v in record.items() if k not in ("selection", "label")}):
        add(f"config.{k}", v)
    if selection is not None:
        add("workloads", selection_text(run))
    elif "selection" in record:
        add("config.selection", record["selection"])
    return items


def selection_text(run: Run) -> str:
    """'3 workloads: selu, gemm (suites/linalg.py), …' grouped by suite file. Not escaped."""
    selection = run.config.selection or ()
    by_suite: dict[str, list[str]] = {}
    for s in selection:
        by_suite.setdefault(s.suite or "not from a file", []).append(s.workload)
    groups = [f"{', '.join(names)} ({suite})" for suite, names in by_suite.items()]
    n = len(selection)
    return f"{n} workload{'s' if n != 1 else ''}: " + "; ".join(groups)


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
