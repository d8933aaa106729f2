"""Rich renderables for the terminal: the run tables, their footers and the run's problems.

Two run tables: `compact_table` (the default: one row per case, fitted to the terminal's
width, from a roomy layout down to one that fits 80 columns) and `summary_table` (`--format wide`:
every figure in full). Builders return rich objects; printing is the CLI's job.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from jitbench import formatting as fmt
from jitbench import stats
from jitbench.errors import ConfigError, unknown_name_message
from jitbench.measure.threads import recorded_summary
from jitbench.render.layout import Fitted, fit_first, fitted
from jitbench.results import Case, Measurement, Mode, Run, Severity, Status
from jitbench.results.analysis import (
    PROCESS_SPLIT_FACTOR,
    WIDE_FACTOR,
    CaseAnalysis,
    ModeFigure,
    analyse,
    judgement,
    machine,
)

_STATUS_STYLE = {
    Status.OK: "green",
    Status.ERROR: "bold red",
    Status.MISMATCH: "bold magenta",
    Status.SKIPPED: "dim",
    Status.TIMEOUT: "bold yellow",
}


def _time_cell(f: ModeFigure | None) -> Text:
    if f is None:
        return Text("")
    if f.status is Status.OK and f.time is not None:
        return Text(fmt.seconds(f.time.value))
    text = f.status.value
    if f.status is Status.MISMATCH and f.time is not None:
        text = f"{fmt.seconds(f.time.value)} mismatch"
    return Text(text, style=_STATUS_STYLE[f.status])


SUSPECT_MARK, DISAGREE_MARK = fmt.SUSPECT_MARK, fmt.DISAGREE_MARK


def speedup_marks(f: ModeFigure | None) -> str:
    """The marks of a speedup (`ModeFigure.marks`); '' for none."""
    return "" if f is None else f.marks


def _speedup_style(f: ModeFigure) -> str:
    """Suspect figures in yellow; figures too uncertain to headline dimmed."""
    return "yellow" if f.suspect else ("dim" if f.uncertain else "")


def _speedup_cell(f: ModeFigure | None) -> Text:
    """'11× [10.9–11.1]', marked (`speedup_marks`) and styled when it is no headline."""
    if f is None or f.speedup is None:
        return Text("—")
    r = f.speedup
    marks = speedup_marks(f)
    text = fmt.ratio_ci(r.value, r.low, r.high) + (f" {marks}" if marks else "")
    return Text(text, style=_speedup_style(f))


def mark_legend(run: Run, cases: Iterable[Case] | None = None) -> str | None:
    """The line under a table of `cases` (all the run's by default) that says what its
    speedup marks mean and which speedups the geometric means leave out; None where
    nothing is marked or left out."""
    keys = None if cases is None else {c.key for c in cases}
    figures = [c for c in analyse(run) if keys is None or c.key in keys]
    shown = {mark for c in figures for f in c.figures.values() for mark in speedup_marks(f)}
    parts = []
    if fmt.OVER_EAGER_MARK in shown:
        parts.append(f"{fmt.OVER_EAGER_MARK} jit over eager: the workload has no NumPy side")
    if SUSPECT_MARK in shown:
        parts.append(f"{SUSPECT_MARK} slower than a larger size (a stall)")
    if DISAGREE_MARK in shown:
        parts.append(
            f"{DISAGREE_MARK} its processes measured it ≥ {PROCESS_SPLIT_FACTOR:g}× apart "
            "(each process's figure: the wide table, the HTML report, the JSON)"
        )
    wide = f"speedups with an interval wider than ×/÷ {WIDE_FACTOR:g}"  # dimmed where shown
    if parts and not (SUSPECT_MARK in shown or DISAGREE_MARK in shown):
        ending = f"; left out of geometric means: {wide}." if _any_wide(figures) else "."
        return "; ".join(parts) + ending
    if parts:
        return "; ".join(parts) + f": left out of geometric means, as are {wide}."
    if _any_wide(figures):
        return f"Left out of geometric means: {wide}."
    return None


def _any_wide(figures: Iterable[CaseAnalysis]) -> bool:
    return any(f.wide for c in figures for f in c.figures.values())


def transfer_of(run: Run, key: tuple[str, str, str, str]) -> tuple[float | None, int | None]:
    """(seconds, bytes) of the case's `jax.device_put` of its inputs (timed on its own,
    before any call; the same for every JAX mode), or Nones when no JAX mode staged them."""
    for mode in (Mode.JIT, Mode.EAGER):
        m = run.get(key, mode)
        if m is not None and m.transfer_s is not None:
            return m.transfer_s, m.transfer_bytes
    return None, None


def transfer_back_of(run: Run, key: tuple[str, str, str, str]) -> tuple[float | None, int | None]:
    """(seconds, bytes) of the copy of the case's output back to the host (jit's cold first
    output, eager's where jit failed; the same for every JAX mode), or Nones when none was
    timed (no JAX output, or a file before schema 1.6)."""
    for mode in (Mode.JIT, Mode.EAGER):
        m = run.get(key, mode)
        if m is not None and m.transfer_back_s is not None:
            return m.transfer_back_s, m.transfer_back_bytes
    return None, None


def has_transfer_back(run: Run) -> bool:
    """Whether any measurement of `run` timed a copy back to the host (schema 1.6 on)."""
    return any(m.transfer_back_s is not None for m in run.measurements)


def transfer_text(seconds: float | None, nbytes: int | None, *, compact: bool = False) -> str:
    """'41.2 µs · 3.81 MiB' (compact: '41.2µs 3.81MiB'); '—' when nothing was staged."""
    if seconds is None:
        return "—"
    t = fmt.seconds(seconds, compact=compact)
    if nbytes is None:
        return t
    b = fmt.bytes_(nbytes, compact=compact)
    return f"{t} {b}" if compact else f"{t} · {b}"


def _rate(value: float | None, scale: float) -> str:
    return "—" if value is None else f"{value / scale:.3g}"


def measured_modes(run: Run) -> frozenset[Mode]:
    """The modes `run` has any measurement of."""
    return frozenset(m.mode for m in run.measurements)


def sharded_devices(run: Run) -> int | None:
    """The device count of the run's sharded measurements when they all share one (the
    table says it once, in the header), else None."""
    counts = {m.sharding.device_count for m in run.measurements if m.sharding is not None}
    return counts.pop() if len(counts) == 1 else None


def efficiency_text(value: float | None) -> str:
    """A scaling efficiency as a whole percent ('48%'; '0.7%' below 1 %); '—' unknown."""
    if value is None:
        return "—"
    return f"{value * 100:.2g}%" if value < 0.01 else f"{value * 100:.0f}%"


# Shown once under the table (see `noisy_footer`), not on every row: on a shared machine
# nearly every measurement carries it, and it would bury the codes that matter.
FOOTER_CODES = frozenset({"noisy"})


def case_notes(
    measurements: Iterable[Measurement | None],
    *,
    sep: str = "; ",
    skip: frozenset[str] = frozenset(),
) -> str:
    """'eager: eager-dispatch-bound; jit: large-jaxpr' — diagnostic codes grouped by mode.

    An error with a diagnostic code shows the code with the exception type after it.
    Codes in `skip` are left out.
    """
    parts = []
    for m in measurements:
        if m is None:
            continue
        codes = [d.code for d in m.diagnostics if d.code not in skip]
        if m.error is not None:
            if codes:
                codes[0] = f"{codes[0]} ({m.error.type})"
            else:
                codes.insert(0, m.error.type)
        if codes:
            parts.append(f"{m.mode.value}: {', '.join(dict.fromkeys(codes))}")
    return sep.join(parts)


def noisy_footer(run: Run) -> str | None:
    """'12 of 30 measurements did not reach ±1 % …', or None when all did."""
    tally = judgement.noisy_tally(run)
    if tally is None:
        return None
    return (
        f"{tally.noisy} of {tally.measurements} measurements did not reach {tally.goal} "
        "within the sampling budget (noisy; their CIs are shown): raise --budget or quiet the "
        "machine."
    )


def clock_footer(run: Run) -> str | None:
    """What the times count, where it is not elapsed time (`--clock cpu`)."""
    clock = machine.clock_text(run)
    return None if clock is None else f"{clock}."


def interval_footer(run: Run) -> str:
    """What the speedup intervals of `run` claim: a repeat run (several processes), or
    this process only (paired rounds), or older unpaired files."""
    if run.processes > 1:
        spread = analyse(run).process_spread
        return (
            f"speedup intervals: 95 % prediction intervals for a repeat run, from "
            f"{machine.processes_text(run)}"
            + (f", which {machine.spread_text(spread)}." if spread is not None else ".")
        )
    if run.paired:
        settings = run.config.settings
        how = (
            "a full run (not --quick) measures in two processes"
            if settings is not None and settings.quick
            else "leave out --processes 1 (two processes are the default)"
        )
        return (
            "speedup intervals describe this process only (paired rounds); a repeat run "
            f"varies more: {how} for intervals that hold from run to run."
        )
    return "speedup intervals: bootstrap of the two medians (written before schema 1.3)."


def table_title(run: Run) -> Text:
    """'jitbench run ID · 1 thread (core 0; openblas 1)' (runs before threads were recorded:
    the id alone)."""
    title = Text(f"jitbench run {run.run_id}")
    threads = recorded_summary(run.environment)
    if threads:
        title.append(f" · {threads}", style="dim")
    return title


#: What an interrupted run's tables say before anything else (its HTML page says the same).
INCOMPLETE = (
    "incomplete run (interrupted or still running): only the cases measured so far are "
    "shown; `jitbench run --resume RUN.json` finishes it"
)


def incomplete_banner(run: Run) -> Text | None:
    """The line printed above an incomplete run's table, else None."""
    if run.complete:
        return None
    counted = f" ({len(run.cases())} case(s) so far)" if run.measurements else " (none yet)"
    return Text(f"⚠ {INCOMPLETE}{counted}", style="bold yellow")


def machine_banner(run: Run) -> Text | None:
    """The one line printed above the summary table when the machine was busy or noisy
    before or after the run, with its noise floor, or when its processes measured the same
    code far apart (`machine.run_banner`); else None."""
    warning = analyse(run).machine_banner
    return Text(f"⚠ {warning}", style="bold yellow") if warning else None


def cases_of_sizes(run: Run, sizes: Collection[str] = ()) -> list[Case]:
    """The run's cases, first seen first: only those of `sizes` where any are given."""
    return [case for case in run.cases() if not sizes or case.size in sizes]


def check_sizes(runs: Sequence[Run], sizes: Iterable[str]) -> None:
    """Refuse a size that none of `runs` measured: as a filter it would leave an empty table.

    Raises:
        ConfigError: names the size, the close matches and the sizes the runs have.
    """
    measured = list(dict.fromkeys(case.size for run in runs for case in run.cases()))
    for size in sizes:
        if size not in measured:
            whose = "the run has" if len(runs) == 1 else "the runs have"
            raise ConfigError(unknown_name_message("size", size, measured, known_as=whose))


def summary_table(run: Run, *, sizes: Collection[str] = ()) -> Table:
    """One row per case (only those of `sizes` where given): median per mode, speedups
    over NumPy with CI, compile, jit's achieved GFLOP/s, break-even calls, the copies to
    the device and back (time · bytes) and diagnostic codes (`jitbench profile` shows the
    achieved GB/s and the rest of the analysis). The title names the thread setting;
    print `machine_banner` above it."""
    table = Table(title=table_title(run), title_justify="left", expand=False)
    sharded = Mode.SHARDED in measured_modes(run)
    back = has_transfer_back(run)
    for col, justify in (
        ("workload", "left"),
        ("size", "left"),
        ("device", "left"),
        ("numpy", "right"),
        ("eager", "right"),
        ("jit", "right"),
        ("eager ×", "right"),
        ("jit ×", "right"),
        ("jit compile", "right"),
        ("GFLOP/s", "right"),
        ("break-even", "right"),
        ("transfer\nH→D", "right"),
        *((("D→H", "right"),) if back else ()),
        *(_SHARDED_WIDE_COLUMNS if sharded else ()),
        *((("D→H", "right"),) if sharded and back else ()),
        ("notes", "left"),
    ):
        # Notes fold (never "…"): a diagnostic code must stay readable in a narrow column.
        table.add_column(
            col,
            justify=justify,  # type: ignore[arg-type]
            no_wrap=col != "notes",
            overflow="fold" if col == "notes" else "ellipsis",
        )
    figures = analyse(run)
    for case in cases_of_sizes(run, sizes):
        c = figures.case(case)
        assert c is not None
        by_mode = {m: run.get(case.key, m) for m in Mode}
        jit = c.get(Mode.JIT)
        compile_s = jit.compile_s if jit else None
        notes = case_notes(by_mode.values(), sep="\n", skip=FOOTER_CODES)
        apart = process_figures_text(c)
        table.add_row(
            case.workload,
            case.size,
            case.device,
            _time_cell(c.get(Mode.NUMPY)),
            _time_cell(c.get(Mode.EAGER)),
            _time_cell(jit),
            *(_speedup_cell(c.get(m)) for m in (Mode.EAGER, Mode.JIT)),
            fmt.seconds(compile_s),
            _rate(jit.achieved_flops_per_s if jit else None, 1e9),
            fmt.count(c.break_even_calls),
            transfer_text(*transfer_of(run, case.key)),
            *((transfer_text(*transfer_back_of(run, case.key)),) if back else ()),
            *(_sharded_wide_cells(c, by_mode[Mode.SHARDED], back=back) if sharded else ()),
            Text("\n".join(x for x in (notes, apart) if x), style="yellow"),
        )
    return table


def process_figures_text(c: CaseAnalysis, sep: str = "\n") -> str:
    """Each process's speedups where they disagree ('jit processes: 13×, 9.1×'): the
    figures the wide table's notes and the HTML show beside a `≠` mark."""
    return sep.join(
        f"{f.mode.value} processes: " + ", ".join(fmt.ratio(x) for x in f.process_speedups)
        for f in c.figures.values()
        if f.disagree
    )


_SHARDED_WIDE_COLUMNS = (
    ("sharded", "right"),
    ("devices", "right"),
    ("sharded ×\n1 device", "right"),
    ("efficiency", "right"),
    ("sharded\nH→D", "right"),
)


def _sharded_wide_cells(
    c: CaseAnalysis, m: Measurement | None, *, back: bool
) -> tuple[Text | str, ...]:
    """Sharded mode's time, device count, speedup over jit on one device with its CI,
    scaling efficiency, the transfer to the mesh and (`back`) the gather of its output."""
    scaling = c.scaling
    speedup = scaling.speedup if scaling else None
    cells: tuple[Text | str, ...] = (
        _time_cell(c.get(Mode.SHARDED)),
        str(m.sharding.device_count) if m and m.sharding else "—",
        fmt.ratio_ci(*(speedup.value, speedup.low, speedup.high) if speedup else (None,) * 3),
        efficiency_text(scaling.efficiency.value if scaling else None),
        transfer_text(m.transfer_s, m.transfer_bytes) if m else "—",
    )
    if back:
        cells += (transfer_text(m.transfer_back_s, m.transfer_back_bytes) if m else "—",)
    return cells


# ---------------------------------------------------------------------------------------
# The compact table

# Summed up under the compact table rather than noted on each row: on a shared machine
# most measurements carry them (`noisy_footer`, `outlier_footer`); with one device, every
# sharded one is skipped (`skipped_footers`).
COMPACT_FOOTER_CODES = FOOTER_CODES | {"outlier-samples", "sharded-one-device"}

# Codes that only one mode can carry: the compact note leaves that mode out.
_CODE_MODE = {
    "jit-slower-than-numpy": "jit",
    "eager-dispatch-bound": "eager",
    "large-jaxpr": "jit",
    "slow-compile": "jit",
    "numpy-float64": "numpy",
    "sharded-one-device": "sharded",
    "sharded-replicated": "sharded",
}

_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


@dataclass(frozen=True)
class _Layout:
    """One way to draw the compact table; `compact_table` tries them roomiest first."""

    gap: int = 2  # spaces between columns
    spaced_units: bool = True  # "10.1 ms" rather than "10.1ms"
    inline_notes: bool = True  # else a superscript mark on the case, the notes underneath
    ratio_digits: int = 3
    ratio_times: bool = True  # "3.16× ±8%" rather than "3.2±8%" (the header says ×)
    transfer_bytes: bool = True
    percent_sign: bool = True  # "±8%" rather than "±8" (the header says ±%)
    transfer_back: bool = True  # the D→H column beside H→D
    fold_case: bool = False  # let a long case name break inside a word
    # Dropped last, when a run with sharded mode's three columns still does not fit:
    transfer_column: bool = True  # H→D (and D→H)
    compile_columns: bool = True  # compile and break even


def _layouts() -> tuple[_Layout, ...]:
    """Roomiest first; each drops one more thing. The fourth to last (H→D time, no D→H)
    fits 80 columns for the default suite (workload names up to 18 characters) on a quiet
    machine; the two after it drop the transfer, then the compile columns, for sharded
    mode's columns."""
    spaced = (_Layout(), _Layout(gap=1), _Layout(gap=1, spaced_units=False))
    marked = tuple(replace(layout, inline_notes=False) for layout in spaced)
    tight = marked[-1]
    tighter = (
        replace(tight, ratio_digits=2, ratio_times=False),
        replace(tight, ratio_digits=2, ratio_times=False, transfer_bytes=False),
        replace(tight, ratio_digits=2, ratio_times=False, transfer_bytes=False, percent_sign=False),
        replace(
            tight,
            ratio_digits=2,
            ratio_times=False,
            transfer_bytes=False,
            percent_sign=False,
            transfer_back=False,
        ),
    )
    narrow = (
        replace(tighter[-1], transfer_column=False),
        replace(tighter[-1], transfer_column=False, compile_columns=False),
    )
    return (*spaced, *marked, *tighter, *narrow, replace(narrow[-1], fold_case=True))


_LAYOUTS = _layouts()


def _case_label(case: Case, *, devices: bool, dtypes: bool) -> str:
    """'selu M', with the device and dtype only when the run has several."""
    parts = [case.workload, case.size]
    if devices:
        parts.append(case.device)
    if dtypes:
        parts.append(case.dtype)
    return " ".join(parts)


def _compact_time(f: ModeFigure | None, layout: _Layout) -> Text:
    if f is None:
        return Text("")
    if f.status is Status.OK and f.time is not None:
        return Text(fmt.seconds(f.time.value, compact=not layout.spaced_units))
    return Text(f.status.value, style=_STATUS_STYLE[f.status])


def _compact_speedup(f: ModeFigure | None, layout: _Layout) -> Text:
    text = _compact_ratio(f.speedup if f is not None else None, layout)
    if f is None or f.speedup is None:
        return text
    return Text(f"{text}{speedup_marks(f)}", style=_speedup_style(f))


def _compact_ratio(r: stats.Ratio | None, layout: _Layout) -> Text:
    """A ratio with its interval as one ± figure, as the layout writes it; '—' unknown."""
    if r is None:
        return Text("—")
    text = fmt.ratio_pm(
        r.value,
        r.low,
        r.high,
        digits=layout.ratio_digits,
        space=layout.spaced_units,
        times=layout.ratio_times,
    )
    if not layout.percent_sign:
        text = text.removesuffix("%")
    return Text(text)


def compact_notes(
    measurements: Iterable[Measurement | None], *, skip: Collection[str] = COMPACT_FOOTER_CODES
) -> str:
    """The short note of a compact row: each diagnostic code once, with the modes that
    carry it ('recompiled-during-timing (eager, jit)'; none for a code only one mode can
    carry, such as 'jit-slower-than-numpy'), an error's type after its mode; the codes
    in `skip` (by default those summed up under the table) left out."""
    by_code: dict[str, list[str]] = {}
    for m in measurements:
        if m is None:
            continue
        codes = [d.code for d in m.diagnostics if d.code not in skip]
        if m.error is not None and not codes:
            codes = [m.error.type]
        for code in dict.fromkeys(codes):
            by_code.setdefault(code, []).append(m.mode.value)
    parts = []
    for code, modes in by_code.items():
        implied = _CODE_MODE.get(code)
        parts.append(code if modes == [implied] else f"{code} ({', '.join(modes)})")
    return "; ".join(parts)


def skipped_footers(run: Run) -> list[str]:
    """One line per distinct reason a mode was skipped: 'sharded skipped in 12 of 12
    cases: sharded mode needs 2 or more cpu devices …'."""
    reasons: dict[tuple[Mode, str], int] = {}
    for m in run.measurements:
        if m.status is Status.SKIPPED:
            why = m.diagnostics[0].message if m.diagnostics else "no reason recorded"
            reasons[(m.mode, why)] = reasons.get((m.mode, why), 0) + 1
    cases = len(run.cases())
    return [
        f"{mode.value} skipped in {n} of {cases} case(s): {why}"
        for (mode, why), n in reasons.items()
    ]


def outlier_footer(run: Run) -> str | None:
    """'7 of 60 measurements have outlier samples …', or None when none has."""
    hit = [m for m in run.measurements if any(d.code == "outlier-samples" for d in m.diagnostics)]
    if not hit:
        return None
    return (
        f"{len(hit)} of {len(run.measurements)} measurements have outlier samples (something "
        "stalled them; the medians and intervals stand): the wide table or the HTML report "
        "names them."
    )


def _compact_layout(
    run: Run, layout: _Layout, sizes: Collection[str] = ()
) -> Fitted[RenderableType]:
    cases = cases_of_sizes(run, sizes)
    devices = len({c.device for c in cases}) > 1
    dtypes = len({c.dtype for c in cases}) > 1
    table = Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        # The box puts one space between columns; padding on the right adds the rest.
        padding=(0, layout.gap - 1),
        collapse_padding=True,
        expand=False,
    )
    unit = not layout.spaced_units
    ratio_head = "×" if layout.ratio_times else ("×±%" if layout.percent_sign else "× ±%")
    measured = measured_modes(run)
    numpy_, eager, jit_, sharded = (
        m in measured for m in (Mode.NUMPY, Mode.EAGER, Mode.JIT, Mode.SHARDED)
    )
    # A JAX-only case's jit speedup is over eager: the column stays without NumPy.
    baseline = numpy_ or any(c.baseline is Mode.EAGER for c in analyse(run))
    # A mode's columns only when the run measured it (sharded mode is opt-in, and `-m`
    # can leave any mode out): the table keeps fitting 80 columns with sharded in it.
    shown = {
        "NumPy": numpy_,
        "eager": eager,
        "jit": jit_,
        "eager ×": eager and numpy_,
        "jit ×": jit_ and baseline,
        "compile": jit_ and layout.compile_columns,
        "break even": jit_ and baseline and layout.compile_columns,
        "transfer": (eager or jit_) and layout.transfer_column,
        "transfer back": (eager or jit_)
        and layout.transfer_column
        and layout.transfer_back
        and has_transfer_back(run),
        "sharded": sharded,
    }
    devices_head = f"\n{n} dev" if (n := sharded_devices(run)) else ""
    headers: list[tuple[str, str]] = [
        (header, "right")
        for key, header in (
            ("NumPy", "NumPy"),
            ("eager", "eager"),
            ("jit", "jit"),
            ("eager ×", f"eager\n{ratio_head}"),
            ("jit ×", f"jit\n{ratio_head}"),
            ("compile", "compile"),
            ("break even", "break\neven"),
            ("transfer", "transfer\nH→D" if layout.transfer_bytes else "H→D"),
            ("transfer back", "D→H"),
            ("sharded", f"sharded{devices_head}"),
            ("sharded", f"vs 1\ndev {ratio_head}"),
            ("sharded", "eff."),
        )
        if shown[key]
    ]
    headers.insert(0, ("case", "left"))
    if layout.inline_notes:
        headers.append(("note", "left"))
    for i, (header, justify) in enumerate(headers):
        is_case = i == 0
        table.add_column(
            header,
            justify=justify,  # type: ignore[arg-type]
            no_wrap=not (is_case and layout.fold_case),
            overflow="fold",
        )
    notes: dict[str, int] = {}  # note text -> its mark, first seen first
    case_texts = [headers[0][0]]
    figures = analyse(run)
    for case in cases:
        c = figures.case(case)
        assert c is not None
        by_mode = {m: run.get(case.key, m) for m in Mode}
        jit_f = c.get(Mode.JIT)
        compile_s = jit_f.compile_s if jit_f else None
        seconds, nbytes = transfer_of(run, case.key)
        back_s, back_bytes = transfer_back_of(run, case.key)
        note = compact_notes(by_mode.values())
        label = Text(_case_label(case, devices=devices, dtypes=dtypes))
        if note and not layout.inline_notes:
            mark = str(notes.setdefault(note, len(notes) + 1)).translate(_SUPERSCRIPT)
            label.append(mark, style="yellow")
        case_texts.append(label.plain)
        scaling = c.scaling if sharded else None
        cells: list[tuple[str, Text | str]] = [
            ("NumPy", _compact_time(c.get(Mode.NUMPY), layout)),
            ("eager", _compact_time(c.get(Mode.EAGER), layout)),
            ("jit", _compact_time(c.get(Mode.JIT), layout)),
            ("eager ×", _compact_speedup(c.get(Mode.EAGER), layout)),
            ("jit ×", _compact_speedup(c.get(Mode.JIT), layout)),
            ("compile", fmt.seconds(compile_s, compact=unit)),
            ("break even", fmt.count(c.break_even_calls)),
            (
                "transfer",
                transfer_text(seconds, nbytes if layout.transfer_bytes else None, compact=unit),
            ),
            (
                "transfer back",
                transfer_text(back_s, back_bytes if layout.transfer_bytes else None, compact=unit),
            ),
        ]
        if sharded:
            cells += [
                ("sharded", _compact_time(c.get(Mode.SHARDED), layout)),
                ("sharded", _compact_ratio(scaling.speedup if scaling else None, layout)),
                ("sharded", efficiency_text(scaling.efficiency.value if scaling else None)),
            ]
        row: list[Text | str] = [label, *(cell for key, cell in cells if shown[key])]
        if layout.inline_notes:
            row.append(Text(note, style="yellow"))
        table.add_row(*row)
    # Inline notes must fit on one line; only a folded case name may wrap.
    need = fitted(table, *([case_texts] if layout.fold_case else [])).needs
    footnotes = [
        Text(f"{str(n).translate(_SUPERSCRIPT)} {text}", style="yellow")
        for text, n in notes.items()
    ]
    # Columns the run has but this width had no room for are named, not just gone.
    roomy = {
        "D→H": (eager or jit_) and has_transfer_back(run),
        "H→D": eager or jit_,
        "compile": jit_,
        "break even": jit_ and baseline,
    }
    kept = {
        "D→H": shown["transfer back"],
        "H→D": shown["transfer"],
        "compile": shown["compile"],
        "break even": shown["break even"],
    }
    dropped = [name for name, has in roomy.items() if has and not kept[name]]
    if dropped:
        footnotes.append(
            Text(
                f"left out to fit the width: {', '.join(dropped)} (--format wide shows every "
                "column)",
                style="dim",
            )
        )
    if not footnotes:
        return Fitted(table, need)
    return Fitted(Group(table, *footnotes), need)


def compact_table(
    run: Run, width: int | None = None, *, sizes: Collection[str] = ()
) -> RenderableType:
    """One row per case (only those of `sizes` where given): NumPy, eager and jit medians,
    both speedups over NumPy with their 95 % interval as one ± figure (`fmt.ratio_pm`: the
    wider side of the interval, relative to the speedup), jit's cold compile, break-even
    calls, the inputs' copy to the device (H→D) and the output's copy back (D→H), time and
    bytes, and a short note (`compact_notes`). Drawn in the roomiest layout that fits
    `width` columns without breaking a word (None: no limit): tighter layouts drop spaces,
    move the notes under the table behind a superscript mark on the case, shorten the
    speedups, drop the transfer bytes and then D→H. `summary_table` is the full table
    (`--format wide`)."""
    layouts = [lambda layout=layout: _compact_layout(run, layout, sizes) for layout in _LAYOUTS]
    # The title above the table, not in it: a table's title wraps at the table's width,
    # which cut "1 thread (core 0; openblas 1)" into four lines over a NumPy-only table.
    return Group(table_title(run), fit_first(layouts, width))


#: More `processes-disagree` warnings than this are said in one line: on a noisy machine
#: a default run had eleven, each a paragraph telling the same story (the machine was
#: busier during one process), which buried the rest.
MAX_PROCESS_WARNINGS = 3
#: A brief note is cut to this many characters: one line under an 80-column table.
BRIEF_CHARS = 100


def first_clause(text: str) -> str:
    """A message's first line up to its first ': ' or '; ' (when that leaves a clause of
    some length): what a brief note quotes."""
    first = text.splitlines()[0] if text else ""
    for sep in (": ", "; "):
        head, found, _ = first.partition(sep)
        if found and len(head) >= 12:
            first = head
    return first


def cut(text: str, limit: int = BRIEF_CHARS) -> str:
    """`text` cut to `limit` characters, with '…' where it was cut."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def problems(run: Run, *, detailed: bool = False) -> list[str]:
    """One line per failed or mismatched measurement (what went
    wrong and the hint), then one per warning diagnostic of the others (e.g. a large
    jaxpr); more than `MAX_PROCESS_WARNINGS` `processes-disagree` warnings are one line
    naming their measurements. Brief by default (a note's first clause, cut to fit one
    line under the table); `detailed` gives each whole message and its hint (`--format wide`;
    the HTML and JSON keep them too)."""
    lines = []

    def line(head: str, code: str, text: str, hint: str) -> str:
        if not detailed and code:  # a note: its first clause, cut to one line
            return cut(f"{head}: {code}: {first_clause(text)}")
        # A failure keeps its fix, briefly: the first line of what went wrong.
        shown = text if detailed else first_clause(text)
        return f"{head}: {code + ': ' if code else ''}{shown}" + (
            f" — hint: {hint}" if hint else ""
        )

    for m in run.measurements:
        if m.failed:
            lines.append(line(f"{m.case.label} {m.mode.value}", "", m.failure_text, m.hint))
    warned = [
        (m, d)
        for m in run.measurements
        if not m.failed
        for d in m.diagnostics
        if d.severity in (Severity.WARNING, Severity.ERROR)
    ]
    split = [m for m, d in warned if d.code == judgement.PROCESSES_DISAGREE]
    grouped = len(split) > MAX_PROCESS_WARNINGS
    for m, d in warned:
        if not (grouped and d.code == judgement.PROCESSES_DISAGREE):
            lines.append(line(f"{m.case.label} {m.mode.value}", d.code, d.message, d.hint))
    if grouped:
        names = ", ".join(f"{m.case.label} {m.mode.value}" for m in split)
        text = (
            f"{judgement.PROCESSES_DISAGREE}: {len(split)} measurements' processes measured "
            f"them {PROCESS_SPLIT_FACTOR:g}× or more apart: {names}"
        )
        hint = (
            "the HTML report says for each how the case's other modes moved; measure on a "
            f"quieter machine, or in more processes (--processes {2 * run.processes})."
        )
        lines.append(text + f" — hint: {hint}" if detailed else cut(text))
    return lines
