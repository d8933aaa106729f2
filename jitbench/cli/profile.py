"""`jitbench profile NAME`: one workload in depth, rendered with rich.

The library (and JAX) is imported when the command runs; while it measures, a line on the
terminal says which step it is at.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from jitbench import formatting as fmt
from jitbench.cli.common import (
    EXIT_FAILED,
    app,
    err,
    escape,
    handles_errors,
    out,
    print_fitted,
    progress_console,
)
from jitbench.cli.options import SuiteOpt, ThreadsOpt
from jitbench.config import parse_threads
from jitbench.results import Mode, Severity, Status

if TYPE_CHECKING:
    from rich.console import Console
    from rich.live import Live

    from jitbench.adapters.profiling import Profile

#: Seconds between redraws of the step line while sampling.
REDRAW_S = 0.1

# The budget `jitbench profile` samples for by default (`adapters.profiling.PROFILE_PLAN`,
# kept in step by a test); the rest of the plan is `jitbench run`'s.
PROFILE_BUDGET_S = 0.5

_SEVERITY_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def _kv_table(title: str) -> Table:
    table = Table(
        title=title, title_justify="left", show_header=False, box=None, padding=(0, 2), min_width=60
    )
    table.add_column("what", style="bold", no_wrap=True)
    table.add_column("value")
    return table


def _number(value: float | None, unit: str = "") -> str:
    if value is None:
        return "—"
    return f"{value:,.0f}{unit}" if abs(value) >= 1e4 else f"{value:.4g}{unit}"


def _rate(value: float | None, unit: str) -> str:
    return "—" if value is None else f"{value / 1e9:.3g} G{unit}/s"


def _compile_section(p: Profile) -> RenderableType:
    table = _kv_table("jit compile (cold, caches cleared)")
    jit = p.get(Mode.JIT)
    c = p.jit_compile
    if jit is not None and jit.error is not None:
        table.add_row(
            "error",
            Text(f"{jit.error.type}: {jit.error.message.splitlines()[0]}", style="bold red"),
        )
        if jit.error.hint:
            table.add_row("hint", jit.error.hint)
    if c is None:
        return table
    total = c.total_compile_s
    for name, value in (("trace", c.trace_s), ("lower", c.lower_s), ("compile", c.compile_s)):
        share = f"  ({value / total:.0%})" if value is not None and total else ""
        table.add_row(name, fmt.seconds(value) + share)
    table.add_row("trace + lower + compile", fmt.seconds(total))
    table.add_row("first call (trace + compile + run)", fmt.seconds(c.first_call_s))
    table.add_row("compiles in first call", str(c.compile_count))
    table.add_row("compiles during timing", str(c.timed_compile_count))
    table.add_row("jaxpr equations", _number(c.jaxpr_eqn_count))
    table.add_row("HLO fingerprint", c.hlo_fingerprint or "—")
    table.add_row("program fingerprint (names aside)", c.program_fingerprint or "—")
    if c.hlo_opcodes is not None:
        table.add_row(
            "fusions · custom calls · collectives",
            f"{c.fusion_count} · {c.custom_call_count} · {c.collective_count}",
        )
        table.add_row("HLO instructions", f"{sum(c.hlo_opcodes.values()):,}")
    table.add_row("generated code", fmt.bytes_(c.code_bytes))
    return table


def _analysis_section(p: Profile) -> RenderableType:
    table = _kv_table("XLA analysis of the compiled program (jit)")
    c = p.jit_compile
    if c is None:
        table.add_row("—", "no compiled program")
        return table
    per_iteration = ""
    if c.has_loops:
        per_iteration = f"  (XLA counts a loop body once; {c.while_loop_count} while loop(s))"
    table.add_row("flops", _number(c.flops) + per_iteration)
    table.add_row("transcendentals", _number(c.transcendentals))
    table.add_row("bytes accessed", fmt.bytes_(c.bytes_accessed) + per_iteration)
    if c.flops is not None and c.bytes_accessed:
        table.add_row("arithmetic intensity", f"{c.flops / c.bytes_accessed:.3g} flop/byte")
    for key, value in (c.memory or {}).items():
        table.add_row(key.replace("_bytes", "").replace("_", " ") + " memory", fmt.bytes_(value))
    shown = p.figure(Mode.JIT)
    if c.has_loops:
        achieved = "— (the program loops; XLA's counts are per iteration)"
    else:
        achieved = (
            f"{_rate(shown.achieved_flops_per_s if shown else None, 'FLOP')}, "
            f"{_rate(shown.achieved_bytes_per_s if shown else None, 'B')}"
        )
    table.add_row("achieved (steady state)", achieved)
    table.add_row("break-even vs NumPy", f"{fmt.count(p.break_even_calls)} calls")
    return table


def _transfer_section(p: Profile) -> RenderableType:
    table = _kv_table("transfer of the inputs (jax.device_put, timed alone)")
    _add_copy(table, p.transfer_s, p.transfer_bytes)
    return table


def _transfer_back_section(p: Profile) -> RenderableType:
    table = _kv_table("copy of jit's first output to the host (timed alone)")
    _add_copy(table, p.transfer_back_s, p.transfer_back_bytes)
    return table


def _device_memory_section(p: Profile) -> RenderableType | None:
    if (peak := p.device_peak) is None:  # the CPU backend keeps no allocator figures
        return None
    table = _kv_table("device memory (allocator high-water mark over the case)")
    table.add_row("peak above what was in use", fmt.peak_bytes(*peak))
    return table


def _add_copy(table: Table, seconds: float | None, nbytes: int | None) -> None:
    table.add_row("time", fmt.seconds(seconds))
    table.add_row("bytes", fmt.bytes_(nbytes))
    if seconds and nbytes:
        table.add_row("rate", f"{nbytes / seconds / 1e9:.3g} GB/s")


def _eager_section(p: Profile) -> RenderableType:
    table = _kv_table("eager first call (caches cleared)")
    c = p.eager_compile
    table.add_row("first call", fmt.seconds(c.first_call_s if c else None))
    table.add_row("compiles (one per primitive)", str(c.compile_count) if c else "—")
    return table


def _modes_section(p: Profile) -> RenderableType:
    table = Table(title="steady state", title_justify="left")
    for col in ("mode", "status", "time", "95 % CI", "samples × calls", "vs NumPy"):
        table.add_column(col, justify="left" if col in ("mode", "status") else "right")
    for m in p.run.measurements:
        t = p.time(m.mode)
        r = p.speedup(m.mode) if m.mode is not Mode.NUMPY else None
        style = "green" if m.status is Status.OK else "bold red"
        table.add_row(
            m.mode.value,
            Text(m.status.value, style=style),
            fmt.seconds(t.value if t else None),
            f"{fmt.seconds(t.low)} – {fmt.seconds(t.high)}"
            if t and t.low is not None and t.high is not None
            else "—",
            f"{len(m.samples_s)} × {m.calls_per_sample}" if m.samples_s else "—",
            fmt.ratio_ci(r.value, r.low, r.high) if r else "—",
        )
    return table


def _split_section(p: Profile) -> RenderableType:
    """Host dispatch vs device execution per call, from JAX's profiler trace."""
    rows = [m for m in p.run.measurements if m.time_split is not None]
    if not rows:
        return Text("where the time goes: no profiler trace", style="dim")
    table = Table(
        title="where the time goes (jax.profiler trace, median per call)", title_justify="left"
    )
    for col in ("mode", "wall", "host dispatch", "device execution", "bound by"):
        table.add_column(col, justify="left" if col in ("mode", "bound by") else "right")
    for m in rows:
        t = m.time_split
        assert t is not None
        bound = "host (dispatch)" if t.host_s > t.device_s else "device"
        table.add_row(
            m.mode.value,
            fmt.seconds(t.wall_s),
            fmt.seconds(t.host_s),
            fmt.seconds(t.device_s),
            bound,
        )
    return table


def _failures_section(p: Profile) -> RenderableType | None:
    """Each mode that failed, with why (its error or mismatch) and the hint, if any."""
    if not p.failures:
        return None
    lines: list[RenderableType] = [Text("failed", style="bold red")]
    for (reason, hint), modes in _failures_by_reason(p).items():
        line = Text("  • ")
        line.append(_joined(modes), style="bold red")
        line.append(f" {reason}")
        lines.append(line)
        if hint:
            lines.append(Text(f"    fix: {hint}", style="dim"))
    return Group(*lines)


def _failures_by_reason(p: Profile) -> dict[tuple[str, str], list[str]]:
    """The failed modes by (reason, hint): a workload that raises fails every mode alike."""
    by_reason: dict[tuple[str, str], list[str]] = {}
    for m in p.failures:
        hint = m.hint or ""  # an error's hint, or a mismatch's (on its diagnostic)
        by_reason.setdefault((m.failure_text, hint), []).append(m.mode.value)
    return by_reason


def failure_summary(p: Profile) -> str | None:
    """One line saying which modes failed and why ("profile of w failed in eager and jit:
    error: ValueError: …"), the same reasons together; None when every mode measured."""
    if not p.failures:
        return None
    by_reason: dict[str, list[str]] = {}  # the hints are the failed section's, not this line's
    for m in p.failures:
        by_reason.setdefault(m.failure_text, []).append(m.mode.value)
    every = len(p.failures) == len(p.run.measurements)
    what = "every mode" if every else _joined([m.mode.value for m in p.failures])
    if len(by_reason) == 1:
        why = f": {next(iter(by_reason))}"
    else:
        why = f" ({'; '.join(f'{_joined(ms)}: {r}' for r, ms in by_reason.items())})"
    verb = "failed in every mode" if every else f"failed in {what}"
    return f"profile of {p.case.workload} {verb}{why}"


def _joined(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _diagnostics_section(p: Profile) -> RenderableType:
    if not p.diagnostics:
        return Text("diagnostics: none", style="dim" if p.failures else "green")
    lines: list[RenderableType] = [Text("diagnostics", style="bold")]
    for mode, d in p.diagnostics:
        line = Text("  • ")
        line.append(f"{mode.value} {d.code}", style=_SEVERITY_STYLE[d.severity])
        line.append(f": {d.message}")
        lines.append(line)
        if d.hint:
            lines.append(Text(f"    fix: {d.hint}", style="dim"))
    return Group(*lines)


def profile_renderable(p: Profile) -> RenderableType:
    """The whole breakdown as one rich renderable."""
    case = p.case
    head = Text()
    head.append(f"profile {case.workload}", style="bold")
    head.append(
        f"  size {case.size} ({', '.join(f'{k}={v}' for k, v in case.params.items())})"
        f"  {case.device} ({case.device_kind})  {case.dtype}"
    )
    from jitbench.measure.threads import recorded_summary

    threads = recorded_summary(p.run.environment)
    if threads:
        head.append(f"  {threads}", style="dim")
    parts: list[RenderableType] = [head]
    if p.workload.description:
        parts.append(Text(p.workload.description, style="dim"))
    parts += [
        _compile_section(p),
        _analysis_section(p),
        _transfer_section(p),
        _transfer_back_section(p),
        *([memory] if (memory := _device_memory_section(p)) is not None else []),
        _eager_section(p),
        _modes_section(p),
        _split_section(p),
        *([failed] if (failed := _failures_section(p)) is not None else []),
        _diagnostics_section(p),
    ]
    return Group(*parts)


class _StepLine:
    """One transient line on the terminal saying what the profile is doing ('profiling
    selu · jit compile', the share of the budget while sampling), redrawn only when a step
    is reported: between samples, never by a thread that could interrupt a timed one."""

    def __init__(self, console: Console | None, name: str) -> None:
        self.console = console
        self.name = name
        self.live: Live | None = None
        self._drawn_at = 0.0

    def __enter__(self) -> _StepLine:
        if self.console is not None:
            from rich.live import Live

            self.live = Live(
                Text(f"profiling {self.name} …", style="dim"),
                console=self.console,
                auto_refresh=False,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self.live.start(refresh=True)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.stop()

    def print(self, text: str) -> None:
        """A line above the step line (on stderr)."""
        if self.live is not None:
            self.live.console.print(text)
        else:
            err.print(text)

    def __call__(self, step: str, fraction: float | None) -> None:
        if self.live is None:
            return
        now = time.monotonic()
        if fraction is not None and now - self._drawn_at < REDRAW_S:
            return  # sampling reports every round; redraw ten times a second at most
        self._drawn_at = now
        share = f" {fraction:.0%}" if fraction is not None else ""
        self.live.update(Text(f"profiling {self.name} · {step}{share}", style="dim"), refresh=True)


@app.command("profile", short_help="One workload in depth: compile, XLA analyses, transfer.")
@handles_errors
def profile_cmd(
    name: Annotated[str, typer.Argument(metavar="NAME", help="Workload name.", show_default=False)],
    suite: SuiteOpt = None,
    size: Annotated[
        str | None,
        typer.Option(
            "--size", "-s", metavar="SIZE", help="Size preset or sweep label (default S)."
        ),
    ] = None,
    device: Annotated[
        str | None,
        typer.Option(
            "--device", "-d", metavar="DEVICE", help="cpu, gpu or gpu:1 (default: first)."
        ),
    ] = None,
    x64: Annotated[bool, typer.Option("--x64", help="float64 on both sides.")] = False,
    budget: Annotated[
        float | None,
        typer.Option(
            "--budget",
            metavar="SECONDS",
            help="Sampling seconds for the case (all modes together); the precision target "
            "is `jitbench run`'s.",
            show_default=f"{PROFILE_BUDGET_S:g}",
        ),
    ] = None,
    threads: ThreadsOpt = "1",
    show_jaxpr: Annotated[bool, typer.Option("--jaxpr", help="Print the jaxpr.")] = False,
    show_hlo: Annotated[bool, typer.Option("--hlo", help="Print the optimised HLO.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Profile one workload: compile breakdown, XLA analyses, the transfer to the device,
    timings and diagnostics. It samples with `jitbench run`'s precision target (±1 %).
    Exits 1 when a mode fails (an error, a timeout or a mismatch), after showing the rest.

    Examples:

    \b
    # the JAX FAQ's function at its M preset
      jitbench profile centred_product -s M
    # a size from the workload's sweep, with the optimised HLO
      jitbench profile selu -s n=1000000 --hlo
    # a pitfall, as JSON
      jitbench profile unrolled_loop --suite suites/pitfalls.py --json
    """
    threads_value = parse_threads(threads)
    with progress_console() as console, _StepLine(console, name) as report:
        report("loading the suite", None)
        from jitbench.adapters.profiling import PROFILE_PLAN, profile_workload
        from jitbench.suite.discovery import discover

        # SamplingPlan and RunConfig check the value (one place, as for `run`).
        plan = replace(PROFILE_PLAN, budget_s=budget) if budget is not None else None
        registry = discover(suite or ())
        for e in registry.errors:
            report.print(f"[yellow]suite error:[/] {escape(str(e))}")
        wl = registry.get(name)
        p = profile_workload(
            wl,
            size=size,
            device=device,
            x64=x64,
            plan=plan,
            keep_text=show_jaxpr or show_hlo,
            threads=threads_value,
            report=report,
        )
    if as_json:
        from jitbench.adapters.profiling import profile_to_dict

        out.print_json(json.dumps(profile_to_dict(p), allow_nan=False))
        _exit_if_failed(p)
        return
    print_fitted(lambda _width: profile_renderable(p))  # piped: plain, no trailing spaces
    if p.text_error is not None and (show_jaxpr or show_hlo):
        err.print(
            f"[red]no IR:[/] {escape(p.text_error.type)}: "
            f"{escape(p.text_error.message.splitlines()[0])}"
        )
    if show_jaxpr and p.jaxpr_text:
        out.rule("jaxpr")
        out.print(p.jaxpr_text, markup=False, highlight=False)
    if show_hlo and p.hlo_text:
        out.rule("optimised HLO")
        out.print(p.hlo_text, markup=False, highlight=False)
    _exit_if_failed(p)


def _exit_if_failed(p: Profile) -> None:
    """A failed profile (`Profile.failures`) says what failed on stderr and exits 1, as
    `jitbench run --strict` does for a failed case."""
    summary = failure_summary(p)
    if summary is not None:
        err.print(f"[bold red]error:[/] {escape(summary)}", soft_wrap=True)
        raise typer.Exit(EXIT_FAILED)
