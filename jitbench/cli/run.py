"""`jitbench run`: discover, measure, save as it goes, and render the summary."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from jitbench.api import select_workloads
from jitbench.cli.common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    app,
    err,
    escape,
    handles_errors,
    out,
    parse_choices,
    split_list,
)
from jitbench.cli.compare import render as render_comparison
from jitbench.cli.options import KeywordOpt, OutOpt, SuiteOpt
from jitbench.config import RunConfig
from jitbench.errors import ConfigError
from jitbench.gate.compare import compare, load_side
from jitbench.render import run_table as console
from jitbench.results import Mode, Run, ensure_writable_dir, load_run, save_run
from jitbench.run.scheduler import (
    CaseFinished,
    CaseStarted,
    RoundStarted,
    RunEvent,
    RunInterrupted,
    RunStarted,
    new_run_id,
    run_workloads,
    workloads_for_resume,
)
from jitbench.suite.discovery import discover

EXIT_TERMINATED = 143  # 128 + SIGTERM, as a shell reports a process ended by SIGTERM


def run_path(out_dir: Path, run_id: str) -> Path:
    return out_dir / "runs" / f"{run_id}.json"


def build_config(
    *,
    quick: bool,
    sizes: list[str],
    modes: list[str],
    devices: list[str],
    x64: bool,
    sweep: bool,
    budget: float | None,
    precision: float | None,
    min_samples: int | None,
    seed: int,
    rounds: int | None = None,
) -> RunConfig:
    base = RunConfig.quick_settings() if quick else RunConfig()
    plan = base.plan
    if budget is not None:
        if budget <= 0:
            raise ConfigError(f"--budget must be positive, got {budget}.")
        plan = replace(plan, budget_s=budget)
    if precision is not None:
        if not 0 < precision < 1:
            raise ConfigError(f"--precision is a fraction such as 0.01 (±1 %), got {precision}.")
        plan = replace(plan, precision=precision)
    if min_samples is not None:
        if min_samples < 1:
            raise ConfigError(f"--min-samples must be at least 1, got {min_samples}.")
        plan = replace(
            plan, min_samples=min_samples, max_samples=max(plan.max_samples, min_samples)
        )
    if rounds is not None:
        if rounds < 1:
            raise ConfigError(f"--rounds must be at least 1, got {rounds}.")
        plan = replace(plan, rounds=rounds)
    chosen_modes = parse_choices(modes, [m.value for m in Mode], kind="mode") if modes else None
    return replace(
        base,
        sizes=tuple(sizes) if sizes else base.sizes,
        modes=tuple(Mode(m) for m in chosen_modes) if chosen_modes else base.modes,
        devices=tuple(devices),
        x64=x64,
        sweep=sweep,
        seed=seed,
        plan=plan,
    )


class _Reporter:
    """Renders runner events: a progress bar on a terminal, plain lines otherwise."""

    def __init__(self) -> None:
        self.progress: Progress | None = None
        self.task: TaskID | None = None

    def __enter__(self) -> _Reporter:
        if err.is_terminal:
            self.progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=err,
                transient=True,
            )
            self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.__exit__(None, None, None)

    def __call__(self, event: RunEvent) -> None:
        if isinstance(event, RunStarted):
            done = event.done_cases
            if self.progress is not None:
                self.task = self.progress.add_task(
                    "measuring", total=event.total_cases, completed=done
                )
            elif done:
                err.print(
                    f"resuming run {event.run_id}: {done} of {event.total_cases} "
                    "case(s) already measured"
                )
            else:
                err.print(f"run {event.run_id}: {event.total_cases} case(s)")
        elif isinstance(event, CaseStarted):
            if self.progress is not None and self.task is not None:
                self.progress.update(self.task, description=escape(event.case.label))
        elif isinstance(event, RoundStarted):
            what = f"sampling round {event.index}/{event.total} of {event.cases} case(s)"
            if self.progress is not None and self.task is not None:
                self.progress.update(self.task, description=what)
            else:
                err.print(what)
        elif isinstance(event, CaseFinished):
            line = console.plain_case_line(event.measurements)
            if self.progress is not None and self.task is not None:
                self.progress.console.print(escape(line), highlight=False)
                self.progress.advance(self.task)
            else:
                err.print(f"[{event.index + 1}/{event.total}] {escape(line)}", highlight=False)


@app.command("run")
@handles_errors
def run_cmd(
    names: Annotated[
        list[str] | None, typer.Argument(help="Workload names (default: all).")
    ] = None,
    suite: SuiteOpt = None,
    keyword: KeywordOpt = None,
    sizes: Annotated[
        list[str] | None, typer.Option("--sizes", "-s", help="Size presets, e.g. S,M,L.")
    ] = None,
    modes: Annotated[
        list[str] | None, typer.Option("--modes", "-m", help="Modes: numpy,eager,jit.")
    ] = None,
    devices: Annotated[
        list[str] | None,
        typer.Option(
            "--devices", "-d", help="Devices: cpu, gpu, or cpu:1 (default: every platform)."
        ),
    ] = None,
    x64: Annotated[bool, typer.Option("--x64", help="float64 on both sides.")] = False,
    sweep: Annotated[bool, typer.Option("--sweep", help="Run each workload's size sweep.")] = False,
    budget: Annotated[
        float | None, typer.Option("--budget", help="Sampling seconds per case (all modes).")
    ] = None,
    precision: Annotated[
        float | None, typer.Option("--precision", help="Target CI half-width, e.g. 0.01 = ±1 %.")
    ] = None,
    min_samples: Annotated[
        int | None, typer.Option("--min-samples", help="Samples before convergence counts.")
    ] = None,
    rounds: Annotated[
        int | None,
        typer.Option(
            "--rounds",
            help="Spend each case's budget in this many rounds spread over the run, so its "
            "samples span the machine's drift instead of one short window (for gates on "
            "noisy machines; default 1).",
        ),
    ] = None,
    quick: Annotated[
        bool, typer.Option("--quick", help="Smoke run: smallest preset, tiny budgets.")
    ] = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the input generator.")] = 0,
    out_dir: OutOpt = Path("reports"),
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit 1 if any case errors or mismatches.")
    ] = False,
    isolate: Annotated[
        bool,
        typer.Option(
            "--isolate",
            help="Measure each case in a child process: a crash, hang or out-of-memory kill "
            "costs only that case (slower start per case).",
        ),
    ] = False,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            help="Seconds a case may take before it is stopped (status timeout). Without "
            "--isolate a single long native call is only stopped when it returns.",
        ),
    ] = None,
    resume: Annotated[
        Path | None,
        typer.Option(
            "--resume",
            help="Finish an interrupted run file; cases it holds are not measured again.",
            dir_okay=False,
        ),
    ] = None,
    baseline: Annotated[
        Path | None,
        typer.Option(
            "--baseline",
            help="Compare with this run JSON (or folder of runs): the gate.",
            show_default=False,
        ),
    ] = None,
    fail_on_regression: Annotated[
        bool, typer.Option("--fail-on-regression", help="With --baseline: exit 1 on a regression.")
    ] = False,
) -> None:
    """Measure workloads in NumPy, JAX eager and JAX jit and write the run JSON.

    The run file is rewritten atomically after every case, so Ctrl-C (exit 130) or SIGTERM
    (exit 143) leaves a valid partial run that `--resume` finishes.
    """
    if timeout is not None and not timeout > 0:
        raise ConfigError(f"--timeout is a positive number of seconds, got {timeout}.")
    # A bad baseline fails fast (exit 2), before anything is measured.
    if fail_on_regression and baseline is None:
        raise ConfigError("--fail-on-regression needs --baseline BASE.json to compare with.")
    base_run = load_side(baseline) if baseline is not None else None
    previous: Run | None = None
    registry_errors: list[object] = []
    if resume is not None:
        given = [
            flag
            for flag, value in (
                ("NAMES", names),
                ("--suite", suite),
                ("-k", keyword),
                ("--sizes", sizes),
                ("--modes", modes),
                ("--devices", devices),
                ("--x64", x64),
                ("--sweep", sweep),
                ("--budget", budget),
                ("--precision", precision),
                ("--min-samples", min_samples),
                ("--rounds", rounds),
                ("--quick", quick),
                ("--seed", seed),
            )
            if value
        ]
        if given:
            raise ConfigError(
                "--resume finishes a run with the settings recorded in it; "
                f"drop {', '.join(given)}."
            )
        previous = load_run(resume)
        if previous.complete:
            raise ConfigError(
                f"{str(resume)!r} is a complete run; nothing to resume. Start a new run "
                "without --resume."
            )
        recorded = RunConfig.from_dict(previous.config)
        config = replace(
            recorded,
            isolate=isolate or recorded.isolate,
            timeout_s=timeout if timeout is not None else recorded.timeout_s,
        )
        workloads = workloads_for_resume(previous)
        run_id, path = previous.run_id, resume
    else:
        config = build_config(
            quick=quick,
            sizes=split_list(sizes),
            modes=split_list(modes),
            devices=split_list(devices),
            x64=x64,
            sweep=sweep,
            budget=budget,
            precision=precision,
            min_samples=min_samples,
            seed=seed,
            rounds=rounds,
        )
        config = replace(config, isolate=isolate, timeout_s=timeout)
        registry = discover(suite or ())
        registry_errors = list(registry.errors)
        for e in registry.errors:
            err.print(
                f"[yellow]suite error:[/] {escape(str(e))} "
                "(skipped; the other suite files still run)"
            )
        workloads = select_workloads(registry, names or (), keyword)
        run_id = new_run_id()
        path = run_path(out_dir, run_id)
    ensure_writable_dir(path.parent)  # fail before measuring, not after an hour

    def checkpoint(partial: Run) -> None:
        save_run(partial, path)
        raise_if_stop_requested()

    try:
        with _Reporter() as reporter, _stop_signals():
            run = run_workloads(
                workloads,
                config,
                on_event=reporter,
                checkpoint=checkpoint,
                run_id=run_id,
                resume=previous,
            )
    except RunInterrupted as exc:
        _save_shielded(exc.partial, path)
        cases = len(exc.partial.cases())
        what = "terminated" if isinstance(exc.cause, _Terminated) else "interrupted"
        err.print(
            f"[yellow]{what}:[/] partial run ({cases} case(s) measured) saved to "
            f"{escape(str(path))}; finish it with `jitbench run --resume {escape(str(path))}`"
        )
        code = EXIT_TERMINATED if isinstance(exc.cause, _Terminated) else EXIT_INTERRUPTED
        raise typer.Exit(code) from None
    _save_shielded(run, path)

    out.print(console.summary_table(run))
    if config.quick:
        out.print("[dim]quick run: few samples, rough figures.[/]")
    elif (footer := console.noisy_footer(run)) is not None:
        out.print(f"[dim]{footer}[/]")
    for line in console.problems(run):
        err.print(f"[red]•[/] {escape(line)}")
    out.print(f"run saved to {path}")
    from jitbench.report import write_index, write_run_page  # plotly/jinja2 only when needed

    page = write_run_page(run, out_dir)
    write_index(out_dir)
    out.print(f"report written to {page}")
    failed = any(m.failed for m in run.measurements)
    regressed = False
    if base_run is not None:
        comparison = compare(base_run, run)
        render_comparison(comparison)
        regressed = fail_on_regression and comparison.has_regression
    raise typer.Exit(
        EXIT_FAILED if (strict and (failed or registry_errors)) or regressed else EXIT_OK
    )


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised as an interrupt so the partial run is saved the same way."""


# The stop a signal asked for. A handler's exception can be swallowed when the signal lands
# while Python runs a callback that ignores exceptions (JAX's gc callback, a __del__), so
# the request is also recorded here and raised again at the next case boundary.
_stop_requested: list[type[KeyboardInterrupt]] = []


def _on_sigterm(_signum: int, _frame: object) -> None:
    _stop_requested.append(_Terminated)
    raise _Terminated


def _on_sigint(_signum: int, _frame: object) -> None:
    _stop_requested.append(KeyboardInterrupt)
    raise KeyboardInterrupt


def raise_if_stop_requested() -> None:
    """Raise the interrupt a signal asked for, if its own raise was swallowed."""
    if _stop_requested:
        raise _stop_requested[0]()


@contextmanager
def _stop_signals() -> Iterator[None]:
    """Turn SIGTERM and SIGINT into interrupts while measuring, remembered until honoured.

    An inherited SIG_IGN for SIGINT (a background job) is left alone.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _stop_requested.clear()
    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, _on_sigterm)}
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, _on_sigint)
    previous_hook = sys.unraisablehook

    def quiet_recorded_interrupts(unraisable: Any) -> None:
        # A recorded stop is raised again at the next case boundary: no traceback for it.
        if isinstance(unraisable.exc_value, KeyboardInterrupt) and _stop_requested:
            return
        previous_hook(unraisable)

    sys.unraisablehook = quiet_recorded_interrupts
    try:
        yield
    finally:
        sys.unraisablehook = previous_hook
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def _signals_ignored() -> Iterator[None]:
    """Ignore SIGINT and SIGTERM for the block, so a second Ctrl-C cannot cut a save short."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _save_shielded(run: Run, path: Path) -> None:
    with _signals_ignored():
        save_run(run, path)
