"""`jitbench run`: discover, measure, save as it goes, and render the summary."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from jitbench import console
from jitbench.api import select_workloads
from jitbench.cli import app
from jitbench.cli.common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    err,
    escape,
    handles_errors,
    out,
    parse_choices,
    split_list,
)
from jitbench.cli.compare import load_side
from jitbench.cli.compare import render as render_comparison
from jitbench.cli.options import KeywordOpt, OutOpt, SuiteOpt
from jitbench.compare import compare
from jitbench.errors import ConfigError
from jitbench.registry import discover
from jitbench.results import Mode, Run, Status, save_run
from jitbench.runner import CaseFinished, CaseStarted, RunConfig, RunEvent, RunStarted, new_run_id
from jitbench.runner import run_workloads


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
        plan = replace(plan, min_samples=min_samples, max_samples=max(plan.max_samples, min_samples))
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
        self.task = None

    def __enter__(self) -> _Reporter:
        if err.is_terminal:
            self.progress = Progress(
                TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), console=err, transient=True,
            )
            self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.__exit__(None, None, None)

    def __call__(self, event: RunEvent) -> None:
        if isinstance(event, RunStarted):
            if self.progress is not None:
                self.task = self.progress.add_task("measuring", total=event.total_cases)
            else:
                err.print(f"run {event.run_id}: {event.total_cases} case(s)")
        elif isinstance(event, CaseStarted):
            if self.progress is not None and self.task is not None:
                self.progress.update(self.task, description=escape(event.case.label))
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
    names: Annotated[list[str] | None, typer.Argument(help="Workload names (default: all).")] = None,
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
        typer.Option("--devices", "-d", help="Devices: cpu, gpu, or cpu:1 (default: every platform)."),
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
    quick: Annotated[
        bool, typer.Option("--quick", help="Smoke run: smallest preset, tiny budgets.")
    ] = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the input generator.")] = 0,
    out_dir: OutOpt = Path("reports"),
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit 1 if any case errors or mismatches.")
    ] = False,
    baseline: Annotated[
        Path | None,
        typer.Option("--baseline", help="Compare with this run JSON (or folder of runs): the gate.",
                     show_default=False),
    ] = None,
    fail_on_regression: Annotated[
        bool, typer.Option("--fail-on-regression", help="With --baseline: exit 1 on a regression.")
    ] = False,
) -> None:
    """Measure workloads in NumPy, JAX eager and JAX jit and write the run JSON."""
    # Bad baseline input fails fast (exit 2), before any measuring.
    if fail_on_regression and baseline is None:
        raise ConfigError("--fail-on-regression needs --baseline BASE.json to compare with.")
    base_run = load_side(baseline) if baseline is not None else None
    config = build_config(
        quick=quick, sizes=split_list(sizes), modes=split_list(modes), devices=split_list(devices),
        x64=x64, sweep=sweep, budget=budget, precision=precision, min_samples=min_samples,
        seed=seed,
    )
    registry = discover(suite or ())
    for e in registry.errors:
        err.print(f"[yellow]suite error:[/] {escape(str(e))}")
    workloads = select_workloads(registry, names or (), keyword)

    run_id = new_run_id()
    path = run_path(out_dir, run_id)
    saved: list[Run] = []

    def checkpoint(partial: Run) -> None:
        save_run(partial, path)
        saved.append(partial)

    try:
        with _Reporter() as reporter:
            run = run_workloads(
                workloads, config, on_event=reporter, checkpoint=checkpoint, run_id=run_id
            )
    except KeyboardInterrupt:
        if saved:
            err.print(f"[yellow]interrupted:[/] partial run saved to {path}")
        else:
            err.print("[yellow]interrupted[/] before any case finished; nothing saved")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    save_run(run, path)

    out.print(console.summary_table(run))
    if config.quick:
        out.print("[dim]quick run: few samples, rough figures.[/]")
    for line in console.problems(run):
        err.print(f"[red]•[/] {escape(line)}")
    out.print(f"run saved to {path}")
    failed = any(m.status in (Status.ERROR, Status.MISMATCH, Status.TIMEOUT) for m in run.measurements)
    regressed = False
    if base_run is not None:
        cmp = compare(base_run, run)
        render_comparison(cmp)
        regressed = fail_on_regression and cmp.has_regression
    raise typer.Exit(
        EXIT_FAILED if (strict and (failed or registry.errors)) or regressed else EXIT_OK
    )
