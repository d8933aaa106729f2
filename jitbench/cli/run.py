"""`jitbench run`: parse the options, call `jitbench.run`, render progress and the summary.

Everything the command does below its options (selection, resume rules, checks before
measuring, the run file written as it goes) is `jitbench.api.run`; this module builds the
RunConfig from the options, installs the stop signals, renders and picks the exit code.
The library (and JAX) is imported when the command runs, not when the CLI is loaded.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from jitbench.cli.common import (
    EXIT_BROKEN_WORKLOAD,
    EXIT_FAILED,
    EXIT_OK,
    app,
    err,
    escape,
    handles_errors,
    kept,
    out,
    progress_console,
    say,
    split_list,
)
from jitbench.cli.options import (
    AllowInconclusiveOpt,
    FormatOpt,
    KeywordOpt,
    SuiteOpt,
    TableFormat,
    ThreadsOpt,
    WideOpt,
)
from jitbench.cli.output import (
    console_footers,
    gate_exit,
    print_run_table,
    program_diff_files,
    render_comparison,
    shown_path,
)
from jitbench.config import ALL_MODES, RunConfig, SamplingPlan, parse_mode, parse_threads
from jitbench.errors import ConfigError, JitbenchError

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from jitbench.runner.events import RunEvent
    from jitbench.runner.progress import ProgressEstimate

_PLAN = SamplingPlan()
_QUICK = RunConfig.quick_settings()
_DEFAULT = RunConfig()


def build_config(
    *,
    quick: bool,
    sizes: list[str],
    modes: list[str],
    devices: list[str],
    x64: bool | None,
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
    time_split: bool = False,
    retry_timeouts: bool = False,
    clock: str | None = None,
    overlap: bool | None = None,
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
    if clock is not None:
        plan["clock"] = clock
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
        time_split=time_split,
        retry_timeouts=retry_timeouts,
        overlap=overlap,
    )


#: Seconds between redraws of the progress bar (it is redrawn from the run's events, between
#: samples, never by a thread that could interrupt a timed sample).
REDRAW_S = 0.1


class _Reporter:
    """Renders runner events: on a terminal, a progress bar with the step of the current
    case and the time left (`runner.progress`); otherwise one plain line per finished case
    and nothing while a case runs.

    The bar writes to a duplicate of the terminal's stderr, so the workload's own output,
    captured at the file-descriptor level while it is measured (`measure.capture`), does
    not take the bar with it; the bar never redirects stdout or stderr itself.

    With `announce` (cases measured in this process), each case is named on stderr before
    it starts, so a crash that takes the process down (a segfault) says which case it was.
    """

    def __init__(self, *, announce: bool = False) -> None:
        from jitbench.runner.progress import ProgressEstimate

        self.announce = announce
        self.estimate: ProgressEstimate = ProgressEstimate()
        self.progress: Progress | None = None
        self.task: TaskID | None = None
        self.suite_errors = 0
        self._drawn_at = 0.0
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> _Reporter:
        console = self._stack.enter_context(progress_console())
        if console is not None:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(
                TextColumn("{task.fields[cases]}"),
                BarColumn(bar_width=20),
                TextColumn("{task.fields[eta]}"),
                TimeElapsedColumn(),
                TextColumn("{task.description}"),
                console=console,
                transient=True,
                auto_refresh=False,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.__exit__(None, None, None)
        self._stack.close()

    def _print(self, text: str) -> None:
        if self.progress is not None:
            self.progress.console.print(text, highlight=False)
            self.progress.refresh()
        else:
            err.print(text, highlight=False, soft_wrap=True)

    def _draw(self, *, force: bool = False) -> None:
        if self.progress is None or self.task is None:
            return
        now = time.monotonic()
        if not force and now - self._drawn_at < REDRAW_S:
            return
        self._drawn_at = now
        from jitbench.runner.progress import eta_text

        est = self.estimate
        self.progress.update(
            self.task,
            completed=est.fraction(),
            description=escape(est.description()),
            cases=f"{est.done_cases}/{est.total_cases}",
            eta=eta_text(est.eta_s()),
        )
        self.progress.refresh()

    def __call__(self, event: RunEvent) -> None:
        from jitbench.render import progress_line
        from jitbench.runner.events import (
            CaseFinished,
            CaseProgress,
            CaseStarted,
            FloatWidthChosen,
            KernelsLeftOut,
            ProcessStarted,
            RoundStarted,
            RunStarted,
            SuiteSkipped,
            WorkloadsLeftOut,
        )
        from jitbench.runner.progress import eta_text

        self.estimate.update(event)
        if isinstance(event, SuiteSkipped):
            self.suite_errors += 1
            self._print(
                f"[yellow]suite error:[/] {escape(event.error)} "
                "(skipped; the other suite files still run)"
            )
        elif isinstance(event, FloatWidthChosen):
            suites = ", ".join(event.suites)
            self._print(
                f"[cyan]float64:[/] {escape(suites)} declares float64 ({event.declared} of "
                f"{event.total} workload(s)), so the run is float64; --no-x64 runs float32"
            )
        elif isinstance(event, KernelsLeftOut):
            for name, why in event.kernels:
                self._print(f"[yellow]left out:[/] {escape(name)} ({escape(why)})")
        elif isinstance(event, WorkloadsLeftOut):
            defined = ", ".join(f"{name} ({'/'.join(sizes)})" for name, sizes in event.workloads)
            self._print(
                f"[yellow]left out:[/] {escape(defined)}, defining none of the sizes asked for "
                f"({escape(','.join(event.sizes))}); add theirs to --sizes to measure them"
            )
        elif isinstance(event, RunStarted):
            done = event.done_cases
            if self.progress is not None:
                self.task = self.progress.add_task("", total=1.0, cases="", eta="")
                self._draw(force=True)
            else:
                plan = eta_text(self.estimate.eta_s()).replace("ETA", "about")
                if done or event.redone_cases:
                    again = (
                        f", {event.redone_cases} measured again (the run stopped between "
                        "their sampling rounds)"
                        if event.redone_cases
                        else ""
                    )
                    err.print(
                        f"resuming run {event.run_id}: {done} of {event.total_cases} "
                        f"case(s) already measured{again} ({plan} left)"
                    )
                else:
                    err.print(f"run {event.run_id}: {event.total_cases} case(s), {plan}")
        elif isinstance(event, CaseStarted) and self.announce:
            if self.progress is not None:
                self._draw(force=True)  # drawn now, in case the case crashes the process
            else:  # rich flushes stderr after each print
                label = escape(event.case.label)
                err.print(f"[{event.index + 1}/{event.total}] {label} …", highlight=False)
        elif isinstance(event, CaseProgress):
            self._draw()
        elif isinstance(event, (ProcessStarted, RoundStarted)):
            if self.progress is None:
                err.print(escape(self.estimate.step))
            self._draw(force=True)
        elif isinstance(event, CaseFinished):
            line = progress_line.plain_case_line(
                event.measurements, processes=self.estimate.processes
            )
            if self.progress is not None:
                self._print(escape(line))
                self._draw(force=True)
            else:
                eta = eta_text(self.estimate.eta_s())
                err.print(
                    f"[{event.index + 1}/{event.total}] {escape(line)} ({eta})",
                    highlight=False,
                    soft_wrap=True,
                )


@app.command("run", short_help="Measure workloads in NumPy, eager and jit; write JSON and HTML.")
@handles_errors
def run_cmd(
    names: Annotated[
        list[str] | None,
        typer.Argument(metavar="NAMES", help="Workload names (default: all)."),
    ] = None,
    suite: SuiteOpt = None,
    keyword: KeywordOpt = None,
    sizes: Annotated[
        list[str] | None,
        typer.Option(
            "--sizes",
            "-s",
            metavar="S,M,L",
            help="Size presets (comma-separated or repeated), e.g. S,M,L.",
            show_default=f"{','.join(_DEFAULT.sizes)}; --quick: {','.join(_QUICK.sizes)}",
        ),
    ] = None,
    modes: Annotated[
        list[str] | None,
        typer.Option(
            "--modes",
            "-m",
            metavar="MODES",
            help="Modes to measure, e.g. numpy,jit; add sharded for jit over every device "
            "of the platform (opt-in).",
            show_default=",".join(m.value for m in ALL_MODES),
        ),
    ] = None,
    devices: Annotated[
        list[str] | None,
        typer.Option(
            "--devices",
            "-d",
            metavar="DEVICES",
            help="Devices: cpu, gpu, or cpu:1.",
            show_default="every platform JAX sees",
        ),
    ] = None,
    x64: Annotated[
        bool | None,
        typer.Option(
            "--x64/--no-x64",
            help="float64 on both sides (--no-x64: float32).",
            show_default="float32, or the suite's own width (npbench: float64)",
        ),
    ] = None,
    sweep: Annotated[bool, typer.Option("--sweep", help="Run each workload's size sweep.")] = False,
    budget: Annotated[
        float | None,
        typer.Option(
            "--budget",
            metavar="SECONDS",
            help="Sampling seconds per case (all modes together, shared by the --processes).",
            show_default=f"{_PLAN.budget_s:g}; --quick: {_QUICK.plan.budget_s:g}",
        ),
    ] = None,
    precision: Annotated[
        float | None,
        typer.Option(
            "--precision",
            metavar="FRACTION",
            help="Target half-width of each median's 95 % CI: sampling stops early there.",
            show_default=f"{_PLAN.precision:g} (±{_PLAN.precision:.0%})",
        ),
    ] = None,
    min_samples: Annotated[
        int | None,
        typer.Option(
            "--min-samples",
            metavar="N",
            help="Samples before a mode may stop at the precision target.",
            show_default=f"{_PLAN.min_samples}; --quick: {_QUICK.plan.min_samples}",
        ),
    ] = None,
    rounds: Annotated[
        int | None,
        typer.Option(
            "--rounds",
            metavar="N",
            help="Spend each case's budget in this many rounds spread over the run, so its "
            "samples span the machine's drift instead of one short window (for gates on "
            "noisy machines).",
            show_default=str(_PLAN.rounds),
        ),
    ] = None,
    clock: Annotated[
        str | None,
        typer.Option(
            "--clock",
            metavar="wall|cpu",
            help="What a sample counts: elapsed time (wall), or the measuring process's CPU "
            "time (cpu, CPU devices only): other processes on the core then barely move the "
            "figures, for gates on shared machines; waits are not counted.",
            show_default=_PLAN.clock,
        ),
    ] = None,
    processes: Annotated[
        int | None,
        typer.Option(
            "--processes",
            metavar="K",
            help="Measure every case in this many processes, so the speedup intervals "
            "include what changes from run to run.",
            show_default=str(_DEFAULT.processes),
        ),
    ] = None,
    overlap: Annotated[
        bool | None,
        typer.Option(
            "--overlap/--no-overlap",
            help="The second process measures beside the first, on other cores, the two "
            "taking turns to compile and check each group (default: where the run can: CPU "
            "devices, --threads leaving cores for both); --no-overlap measures the "
            "processes one after another.",
            show_default=False,
        ),
    ] = None,
    quick: Annotated[
        bool, typer.Option("--quick", help="Smoke run: smallest preset, tiny budgets.")
    ] = False,
    seed: Annotated[
        int, typer.Option("--seed", metavar="N", help="Seed of the input generator.")
    ] = 0,
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out",
            metavar="DIR",
            help="Output folder for run JSON and HTML (default reports/; with --resume, the "
            "folder the run file is in).",
            show_default=False,
        ),
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit 1 if any case errors or mismatches.")
    ] = False,
    time_split: Annotated[
        bool,
        typer.Option(
            "--time-split",
            help="After sampling, trace 5 calls of each JAX mode per case with jax.profiler "
            "and split their time into host dispatch and device execution (in the run JSON "
            "and the HTML report; adds about a second per case).",
        ),
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
            metavar="SECONDS",
            help="Seconds each mode of a case may take (first call, warm-up, samples) "
            "before that mode is stopped (status timeout); the other modes keep their "
            "figures. Without --isolate a single long native call is only stopped when it "
            "returns.",
        ),
    ] = None,
    retry_timeouts: Annotated[
        bool,
        typer.Option(
            "--retry-timeouts",
            help="Measure a mode that ran past --timeout again in every --processes worker "
            "(by default the workers leave it out).",
        ),
    ] = False,
    threads: ThreadsOpt = "1",
    distributed: Annotated[
        bool,
        typer.Option(
            "--distributed",
            help="Join a multi-process JAX run (jax.distributed.initialize) first: sharded "
            "mode then spans every process's devices. Start one jitbench per process; each "
            "writes its own run file (`jitbench report --merge-processes` joins them).",
        ),
    ] = False,
    coordinator: Annotated[
        str | None,
        typer.Option(
            "--coordinator",
            metavar="HOST:PORT",
            help="With --distributed: process 0's address (default: $JAX_COORDINATOR_ADDRESS "
            "or the cluster manager's).",
            show_default=False,
        ),
    ] = None,
    num_processes: Annotated[
        int | None,
        typer.Option(
            "--num-processes",
            metavar="N",
            help="With --distributed: how many processes take part (default: the cluster's).",
            show_default=False,
        ),
    ] = None,
    process_id: Annotated[
        int | None,
        typer.Option(
            "--process-id",
            metavar="I",
            help="With --distributed: this process's index, 0 to N-1 (default: the cluster's).",
            show_default=False,
        ),
    ] = None,
    resume: Annotated[
        Path | None,
        typer.Option(
            "--resume",
            metavar="RUN.json",
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
    label: Annotated[
        str | None,
        typer.Option(
            "--label",
            metavar="TEXT",
            help="A short name for the run, shown on its pages, in comparisons and history "
            "instead of the run id (e.g. before-fusion).",
            show_default=False,
        ),
    ] = None,
    baseline: Annotated[
        Path | None,
        typer.Option(
            "--baseline",
            metavar="RUN.json|DIR",
            help="Compare with this run JSON (or folder of runs): the gate.",
            show_default=False,
        ),
    ] = None,
    fail_on_regression: Annotated[
        bool,
        typer.Option(
            "--fail-on-regression",
            help="With --baseline: exit 1 on a regression, 4 when the gate is inconclusive.",
        ),
    ] = False,
    allow_inconclusive: AllowInconclusiveOpt = False,
    wide: WideOpt = False,
    table_format: FormatOpt = TableFormat.TABLE,
) -> None:
    """Measure workloads in NumPy, JAX eager and JAX jit and write the run JSON and HTML.

    The run file is rewritten atomically after every case, so Ctrl-C (exit 130) or SIGTERM
    (exit 143) leaves a valid partial run that `--resume` finishes. The summary table goes
    to stdout, progress and problems to stderr. A case that raises an error in every
    mode, NumPy included, is a broken workload: the run is saved and exits 3.

    Examples:

    \b
    # a smoke run of the default suite, in seconds
      jitbench run --quick
    # two workloads at S, M and L, with the full table
      jitbench run selu gemm -s S,M,L --wide
    # the linear-algebra workloads in one process: faster, but the intervals
    # describe that process, not a repeat run
      jitbench run -k "linalg and not gemm" --processes 1
    # your own suite file, the table as CSV for pandas
      jitbench run --suite my_suite.py --format csv > run.csv
    """
    if fail_on_regression and baseline is None:
        raise ConfigError("--fail-on-regression needs --baseline BASE.json to compare with.")
    if retry_timeouts and timeout is None:
        raise ConfigError(
            "--retry-timeouts measures again a mode that ran past --timeout; give --timeout "
            "SECONDS too."
        )
    if allow_changed_suites and resume is None:
        raise ConfigError("--allow-changed-suites goes with --resume RUN.json.")
    config = build_config(
        quick=quick,
        sizes=split_list(sizes, "--sizes"),
        modes=split_list(modes, "--modes"),
        devices=split_list(devices, "--devices"),
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
        time_split=time_split,
        retry_timeouts=retry_timeouts,
        clock=clock,
        overlap=overlap,
    )
    if distributed:
        if processes is None:  # the default's second process would not join the JAX run
            config = replace(config, processes=1)
        if isolate or config.processes > 1:
            raise ConfigError(
                "--distributed measures in this process, the one that joined the JAX run; "
                "leave out --isolate and --processes."
            )
    elif coordinator is not None or num_processes is not None or process_id is not None:
        raise ConfigError(
            "--coordinator, --num-processes and --process-id go with --distributed; add it."
        )
    from jitbench import api
    from jitbench.gate import compare, load_side
    from jitbench.runner.events import RunInterrupted
    from jitbench.runner.signals import Terminated, exit_status, stop_signals

    # A bad baseline fails fast (exit 2), before anything is measured.
    base_run = load_side(baseline) if baseline is not None else None
    if distributed:  # before anything starts a JAX backend
        from jitbench.measure.devices import start_distributed

        start_distributed(
            coordinator=coordinator, process_count=num_processes, process_id=process_id
        )
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

        try:
            page = write_run_page(run, out_dir)
            write_index(out_dir, fresh=[run])  # summarised from memory, not read back
        except JitbenchError:
            # The folder was checked before measuring; whatever broke since, the run is on
            # disk and the user must learn where before the error ends the command.
            err.print(f"run saved to {escape(shown_path(path))}; its pages were not written:")
            raise

    kept(f"run saved to {shown_path(path)}")
    if page is not None:
        kept(f"report written to {shown_path(page)}")
    # With --format markdown or csv, stdout holds the table alone; the rest goes to stderr.
    notes = out if table_format is TableFormat.TABLE else err
    print_run_table(run, wide=wide, table_format=table_format)
    for line in console_footers(run):
        say(f"[dim]{escape(line)}[/]", console=notes)
    from jitbench.render import run_table

    for line in run_table.problems(run, detailed=wide):
        say(f"[red]•[/] {escape(line)}", console=err)
    notes.print(f"run saved to {escape(shown_path(path))}", soft_wrap=True)
    if page is not None:
        notes.print(f"report written to {escape(shown_path(page))}", soft_wrap=True)
    else:
        notes.print(
            f"[dim]no page written: {escape(str(path))} is not in an output folder's runs/; "
            f"`jitbench report {escape(str(path))} --out DIR` writes one.[/]",
            soft_wrap=True,
        )
    failed = sum(m.failed for m in run.measurements)  # measurements failed or mismatched
    if broken := api.broken_cases(run):
        labels = ", ".join(escape(case.label) for case in broken)
        err.print(
            f"[bold red]broken workload:[/] {labels} raised in every mode, NumPy included: a "
            f"bug in the workload, not a finding (exit {EXIT_BROKEN_WORKLOAD}; the errors are "
            "above, everything measured is saved).",
            soft_wrap=True,
        )
    gate = EXIT_OK
    if base_run is not None:
        comparison = compare(base_run, run)
        from jitbench.results import run_programs, side_programs

        assert baseline is not None
        diffs, diff_paths = program_diff_files(
            comparison, side_programs(baseline), run_programs(run), beside=path
        )
        # With --format markdown|csv stdout holds the run's table alone (a second table after
        # it would break `--format csv > run.csv`): the comparison goes to stderr as text.
        render_comparison(
            comparison,
            wide=wide,
            stdout_taken=table_format is not TableFormat.TABLE,
            program_diffs=diffs,
            diff_paths=diff_paths,
        )
        gate = (
            gate_exit(comparison, allow_inconclusive=allow_inconclusive)
            if fail_on_regression
            else EXIT_OK
        )
    strict_failure = strict and (failed or reporter.suite_errors > 0)
    if strict_failure and not broken:
        why = [f"{failed} measurement(s) failed or mismatched"] if failed else []
        if reporter.suite_errors:
            why.append(f"{reporter.suite_errors} suite file(s) did not import")
        say(f"exit 1 (--strict): {' and '.join(why)}.", console=err)
    outcome = EXIT_BROKEN_WORKLOAD if broken else EXIT_FAILED if strict_failure else EXIT_OK
    raise typer.Exit(gate or outcome)
