"""`jitbench run`: parse the options, call `jitbench.run`, render progress and the summary.

Everything the command does below its options (selection, resume rules, checks before
measuring, the run file written as it goes) is `jitbench.api.run`; this module builds the
RunConfig from the options, installs the stop signals, renders and picks the exit code.
"""

from __future__ import annotations

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

from jitbench import api
from jitbench.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    app,
    err,
    escape,
    handles_errors,
    out,
    split_list,
)
from jitbench.cli.options import KeywordOpt, SuiteOpt, ThreadsOpt
from jitbench.cli.output import render_comparison
from jitbench.config import RunConfig, parse_mode, parse_threads
from jitbench.errors import ConfigError
from jitbench.gate import compare, load_side
from jitbench.render import run_table as console
from jitbench.runner.events import (
    CaseFinished,
    CaseStarted,
    ProcessStarted,
    RoundStarted,
    RunEvent,
    RunInterrupted,
    RunStarted,
    SuiteSkipped,
)
from jitbench.runner.signals import Terminated, exit_status, stop_signals


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
    isolate: bool = False,
    timeout: float | None = None,
    processes: int | None = None,
    threads: str | int | None = 1,
    label: str | None = None,
) -> RunConfig:
    """The RunConfig the options ask for; it checks itself (ConfigError names the option).
    `--min-samples` above the default cap raises the cap with it; `threads` is a number or
    'all'."""
    base = RunConfig.quick_settings() if quick else RunConfig()
    plan: dict[str, Any] = {}
    if budget is not None:
        plan["budget_s"] = budget
    if precision is not None:
        plan["precision"] = precision
    if min_samples is not None:
        plan["min_samples"] = min_samples
        plan["max_samples"] = max(base.plan.max_samples, min_samples)
    if rounds is not None:
        plan["rounds"] = rounds
    return replace(
        base,
        sizes=tuple(sizes) or base.sizes,
        modes=tuple(parse_mode(m) for m in modes) or base.modes,
        devices=tuple(devices),
        x64=x64,
        sweep=sweep,
        seed=seed,
        plan=replace(base.plan, **plan),
        isolate=isolate,
        timeout_s=timeout,
        processes=base.processes if processes is None else processes,
        threads=parse_threads(threads),
        label=label,
    )


class _Reporter:
    """Renders runner events: a progress bar on a terminal, plain lines otherwise.

    With `announce` (cases measured in this process), each case is named on stderr before
    it starts, so a crash that takes the process down (a segfault) says which case it was.
    """

    def __init__(self, *, announce: bool = False) -> None:
        self.announce = announce
        self.progress: Progress | None = None
        self.task: TaskID | None = None
        self.suite_errors = 0

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
        if isinstance(event, SuiteSkipped):
            self.suite_errors += 1
            printer = self.progress.console if self.progress is not None else err
            printer.print(
                f"[yellow]suite error:[/] {escape(event.error)} "
                "(skipped; the other suite files still run)"
            )
        elif isinstance(event, RunStarted):
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
                # refresh: drawn now, not at the next tick, in case the case crashes.
                self.progress.update(
                    self.task, description=escape(event.case.label), refresh=self.announce
                )
            elif self.announce:  # rich flushes stderr after each print
                label = escape(event.case.label)
                err.print(f"[{event.index + 1}/{event.total}] {label} …", highlight=False)
        elif isinstance(event, ProcessStarted):
            what = f"worker process {event.index}/{event.total}: every case again"
            if self.progress is not None and self.task is not None:
                self.progress.update(self.task, description=what)
            else:
                err.print(what)
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
    processes: Annotated[
        int | None,
        typer.Option(
            "--processes",
            help="Measure every case in this many processes, one after another, so the "
            "speedup intervals include what changes from run to run (default 1).",
        ),
    ] = None,
    quick: Annotated[
        bool, typer.Option("--quick", help="Smoke run: smallest preset, tiny budgets.")
    ] = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the input generator.")] = 0,
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Output folder for run JSON and HTML (default reports/; with --resume, the "
            "folder the run file is in).",
            show_default=False,
        ),
    ] = None,
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
    threads: ThreadsOpt = "1",
    label: Annotated[
        str | None,
        typer.Option(
            "--label",
            help="A short name for the run, shown on its pages, in comparisons and history "
            "instead of the run id (e.g. before-fusion).",
            show_default=False,
        ),
    ] = None,
    resume: Annotated[
        Path | None,
        typer.Option(
            "--resume",
            help="Finish an interrupted run file; cases it holds are not measured again. It "
            "imports the suite files the run file names (their code runs): resume only files "
            "you trust. A suite file changed since the run started is refused.",
            dir_okay=False,
        ),
    ] = None,
    allow_changed_suites: Annotated[
        bool,
        typer.Option(
            "--allow-changed-suites",
            help="With --resume: resume even though a suite file changed since the run started.",
        ),
    ] = False,
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
    if fail_on_regression and baseline is None:
        raise ConfigError("--fail-on-regression needs --baseline BASE.json to compare with.")
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
        isolate=isolate,
        timeout=timeout,
        processes=processes,
        threads=threads,
        label=label,
    )
    # A bad baseline fails fast (exit 2), before anything is measured.
    base_run = load_side(baseline) if baseline is not None else None
    # A resumed run's page goes to its own output folder; a run file kept anywhere else
    # gets no page (and no second copy of itself) unless --out says where.
    out_dir = api.output_folder(out_dir, resume)
    if out_dir is None and resume is None:
        out_dir = Path("reports")
    if out_dir is not None:  # now: a suite file may change the working folder on import
        out_dir = out_dir.absolute()
    try:
        with _Reporter(announce=not isolate) as reporter, stop_signals():
            run = api.run(
                names or (),
                suites=suite or (),
                keyword=keyword,
                config=config,
                resume=resume,
                out=out_dir,
                on_event=reporter,
                allow_changed_suites=allow_changed_suites,
            )
    except RunInterrupted as exc:
        cases = len(exc.partial.cases())
        terminated = isinstance(exc.cause, Terminated)
        saved = escape(str(exc.saved_to))
        err.print(
            f"[yellow]{'terminated' if terminated else 'interrupted'}:[/] partial run "
            f"({cases} case(s) measured) saved to {saved}; finish it with "
            f"`jitbench run --resume {saved}`"
        )
        raise typer.Exit(exit_status(exc.cause)) from None
    path = resume if resume is not None else api.run_file(out_dir or ".", run.run_id)
    # The page and index first: output piped to `head` may close stdout below.
    page = None
    if out_dir is not None:
        from jitbench.report import write_index, write_run_page  # plotly/jinja2 when needed

        page = write_run_page(run, out_dir)
        write_index(out_dir)

    banner = console.machine_banner(run)
    if banner is not None:
        out.print(banner)
    out.print(console.summary_table(run))
    settings = run.config.settings
    if settings is not None and settings.quick:
        out.print("[dim]quick run: few samples, rough figures.[/]")
    else:
        if (footer := console.noisy_footer(run)) is not None:
            out.print(f"[dim]{footer}[/]")
        out.print(f"[dim]{console.interval_footer(run)}[/]")
    for line in console.problems(run):
        err.print(f"[red]•[/] {escape(line)}")
    out.print(f"run saved to {path}")
    if page is not None:
        out.print(f"report written to {page}")
    else:
        out.print(
            f"[dim]no page written: {escape(str(path))} is not in an output folder's runs/; "
            f"`jitbench report {escape(str(path))} --out DIR` writes one.[/]"
        )
    failed = any(m.failed for m in run.measurements)
    regressed = False
    if base_run is not None:
        comparison = compare(base_run, run)
        render_comparison(comparison)
        regressed = fail_on_regression and comparison.has_regression
    strict_failure = strict and (failed or reporter.suite_errors > 0)
    raise typer.Exit(EXIT_FAILED if strict_failure or regressed else EXIT_OK)
