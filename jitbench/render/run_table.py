"""Rich renderables for the terminal: the run summary table, workload and environment tables.

Builders return rich objects; printing is the CLI's job.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rich.table import Table
from rich.text import Text

from jitbench import formatting as fmt
from jitbench import stats
from jitbench.measure import diagnose, machine
from jitbench.measure.threads import core_ranges, recorded_summary
from jitbench.results import Measurement, Mode, Run, Severity, Status
from jitbench.suite.workload import Workload

_STATUS_STYLE = {
    Status.OK: "green",
    Status.ERROR: "bold red",
    Status.MISMATCH: "bold magenta",
    Status.SKIPPED: "dim",
    Status.TIMEOUT: "bold yellow",
}


def _time_cell(m: Measurement | None) -> Text:
    if m is None:
        return Text("")
    if m.status is Status.OK and m.median_s is not None:
        return Text(fmt.seconds(m.median_s))
    text = m.status.value
    if m.status is Status.MISMATCH and m.median_s is not None:
        text = f"{fmt.seconds(m.median_s)} mismatch"
    return Text(text, style=_STATUS_STYLE[m.status])


def _speedup_cell(
    run: Run, key: tuple[str, str, str, str], mode: Mode, r: stats.Ratio | None
) -> Text:
    """'11× [10.9–11.1]', marked ' ⚠' in yellow when it rests on a suspect figure
    (size-order-inverted: see the notes and the lines under the table)."""
    if r is None:
        return Text("—")
    text = fmt.ratio_ci(r.value, r.low, r.high)
    if diagnose.suspect_speedup(run, key, mode):
        return Text(f"{text} ⚠", style="yellow")
    return Text(text)


def _rate(value: float | None, scale: float) -> str:
    return "—" if value is None else f"{value / scale:.3g}"


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
    noisy = [m for m in run.measurements if any(d.code == "noisy" for d in m.diagnostics)]
    if not noisy:
        return None
    settings = run.config.settings
    goal = f"the ±{settings.plan.precision * 100:g} % target" if settings else "the target"
    return (
        f"{len(noisy)} of {len(run.measurements)} measurements did not reach {goal} within "
        "the sampling budget (noisy; their CIs are shown): raise --budget or quiet the machine."
    )


def interval_footer(run: Run) -> str:
    """What the speedup intervals of `run` claim: a repeat run (several processes), or
    this process only (paired rounds), or older unpaired files."""
    if run.processes > 1:
        return (
            f"speedup intervals: 95 % prediction intervals for a repeat run, from "
            f"{run.processes} processes."
        )
    if run.paired:
        return (
            "speedup intervals describe this process only (paired rounds); a repeat run "
            "varies more: --processes 2 gives intervals that hold from run to run."
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


def machine_banner(run: Run) -> Text | None:
    """The one line printed above the summary table when the machine was busy or noisy
    before or after the run, with its noise floor (`machine.banner`); else None."""
    warning = machine.banner(run.environment)
    return Text(f"⚠ {warning}", style="bold yellow") if warning else None


def summary_table(run: Run) -> Table:
    """One row per case: median per mode, speedups over NumPy with CI, compile, jit's
    achieved GFLOP/s, break-even calls and diagnostic codes (`jitbench profile` shows the
    achieved GB/s and the rest of the analysis). The title names the thread setting; print
    `machine_banner` above it."""
    table = Table(title=table_title(run), title_justify="left", expand=False)
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
        ("notes", "left"),
    ):
        # Notes fold (never "…"): a diagnostic code must stay readable in a narrow column.
        table.add_column(
            col,
            justify=justify,  # type: ignore[arg-type]
            no_wrap=col != "notes",
            overflow="fold" if col == "notes" else "ellipsis",
        )
    for case in run.cases():
        by_mode = {m: run.get(case.key, m) for m in Mode}
        speed = {m: run.speedup(case.key, m) for m in (Mode.EAGER, Mode.JIT)}
        jit = by_mode[Mode.JIT]
        compile_s = jit.compile.total_compile_s if jit and jit.compile else None
        jit_ok = jit is not None and jit.ok
        table.add_row(
            case.workload,
            case.size,
            case.device,
            _time_cell(by_mode[Mode.NUMPY]),
            _time_cell(by_mode[Mode.EAGER]),
            _time_cell(by_mode[Mode.JIT]),
            *(_speedup_cell(run, case.key, m, r) for m, r in speed.items()),
            fmt.seconds(compile_s),
            _rate(jit.achieved_flops_per_s if jit and jit_ok else None, 1e9),
            fmt.count(run.break_even_calls(case.key)),
            Text(case_notes(by_mode.values(), sep="\n", skip=FOOTER_CODES), style="yellow"),
        )
    return table


def problems(run: Run) -> list[str]:
    """One line per failed or mismatched measurement (what happened and the hint), then one
    per warning diagnostic of the others (e.g. a large jaxpr), with its figures and hint."""
    lines = []
    for m in run.measurements:
        if m.failed:
            lines.append(
                f"{m.case.label} {m.mode.value}: {m.failure_text}"
                + (f" — hint: {m.hint}" if m.hint else "")
            )
    for m in run.measurements:
        if m.failed:
            continue
        for d in m.diagnostics:
            if d.severity in (Severity.WARNING, Severity.ERROR):
                lines.append(
                    f"{m.case.label} {m.mode.value}: {d.code}: {d.message}"
                    + (f" — hint: {d.hint}" if d.hint else "")
                )
    return lines


def workloads_table(workloads: Iterable[Workload]) -> Table:
    table = Table(title="workloads", title_justify="left")
    for col in ("name", "sizes", "sweep", "tags", "description"):
        table.add_column(col, no_wrap=col in ("name",))
    for wl in workloads:
        sizes = ", ".join(
            f"{k}({', '.join(f'{pk}={pv}' for pk, pv in v.items())})" for k, v in wl.sizes.items()
        )
        table.add_row(
            wl.name,
            sizes,
            str(len(wl.sweep)) if wl.sweep else "—",
            ", ".join(wl.tags),
            wl.description,
        )
    return table


def workload_dict(wl: Workload) -> dict[str, Any]:
    return {
        "name": wl.name,
        "description": wl.description,
        "tags": list(wl.tags),
        "sizes": {k: dict(v) for k, v in wl.sizes.items()},
        "sweep": [dict(p) for p in wl.sweep],
        "static_argnames": list(wl.static_argnames),
        "static_argnums": list(wl.static_argnums),
        "outputs": list(wl.outputs),
        "dtype": wl.dtype,
        "eager": wl.eager,
        "rtol": wl.rtol,
        "atol": wl.atol,
        "norm_tol": wl.norm_tol,
        "source": wl.source,
    }


def environment_table(env: Mapping[str, Any]) -> Table:
    table = Table(title="environment", title_justify="left", show_header=False)
    table.add_column("key", style="bold")
    table.add_column("value")

    def add(key: str, value: Any) -> None:
        table.add_row(key, "—" if value in (None, "", {}, []) else str(value))

    for key in ("host", "os", "cpu", "cpu_count", "cpu_affinity_count", "python", "backend", "x64"):
        add(key, env.get(key))
    for name, version in (env.get("versions") or {}).items():
        add(name, version)
    for d in env.get("devices") or []:
        add(f"device {d.get('label')}", d.get("kind"))
    git = env.get("git") or {}
    dirty = " (dirty)" if git.get("dirty") else ""
    add("git", f"{git['commit']}{dirty}" if git.get("commit") else None)
    for k, v in (env.get("env") or {}).items():
        add(f"${k}", v)
    add("threads", recorded_summary(env))
    settings = env.get("thread_settings")
    if isinstance(settings, Mapping):
        cores = tuple(c for c in settings.get("allowed_cores") or () if isinstance(c, int))
        add("allowed cores", f"{len(cores)} ({core_ranges(cores)})" if cores else None)
        for pool in settings.get("blas") or ():
            add(
                f"{pool.get('user_api')} pool",
                f"{pool.get('internal_api')} {pool.get('version')} "
                f"({pool.get('threading_layer')}): {pool.get('num_threads')} threads",
            )
        add("XLA thread flags", " ".join(settings.get("xla_thread_flags") or ()) or "none set")
        for k, v in (settings.get("env") or {}).items():
            if k not in (env.get("env") or {}):
                add(f"${k}", v)
    for key in ("machine", "machine_before", "machine_after"):
        state = machine.from_environment(env, key)
        if state is not None:
            add(key.replace("_", " "), f"{state.summary} ({state.verdict().label})")
    return table


def plain_case_line(measurements: Sequence[Measurement]) -> str:
    """A one-line progress record for a finished case (non-TTY output)."""
    if not measurements:
        return ""
    case = measurements[0].case
    parts = []
    for m in measurements:
        if m.status is Status.OK and m.median_s is not None:
            parts.append(f"{m.mode.value} {fmt.seconds(m.median_s)}")
        else:
            parts.append(f"{m.mode.value} {m.status.value}")
    return f"{case.label}: " + ", ".join(parts)
