"""`jitbench run`: parse the options, call `jitbench.run`, render progress and the summary.

Everything the command does below its options (selection, resume rules, checks before
measuring, the run file written as it goes) is `jitbench.api.run`; this module builds the
RunConfig from the options (`cli.run_options`), installs the stop signals, renders
(`cli.progress` while measuring) and picks the exit code. Judging a run against a
baseline is `jitbench compare`'s. The library (and JAX) is imported when the command
runs, not when the CLI is loaded.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

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
    say,
)
from jitbench.cli.options import KeywordOpt, SuiteOpt, TableFormat, ThreadsOpt
from jitbench.cli.output import console_footers, print_run_table, shown_path
from jitbench.cli.progress import RunProgress
from jitbench.cli.run_options import (
    AllowChangedSuitesOpt,
    BudgetOpt,
    ClockOpt,
    DevicesOpt,
    DistributedOpt,
    IsolateOpt,
    LabelOpt,
    MinSamplesOpt,
    ModesOpt,
    NamesArg,
    OutDirOpt,
    OverlapOpt,
    ProcessesOpt,
    ProcessIdOpt,
    QuickOpt,
    ResumeOpt,
    RoundsOpt,
    RunFormat,
    RunFormatOpt,
    SettingOpt,
    SizesOpt,
    StrictOpt,
    TimeoutOpt,
    X64Opt,
    build_config,
    parse_process_id,
)
from jitbench.config import RunConfig
from jitbench.errors import ConfigError, JitbenchError

if TYPE_CHECKING:
    from jitbench.results import Run


@app.command("run", short_help="Measure workloads in NumPy, eager and jit; write JSON and HTML.")
@handles_errors
def run_cmd(
    names: NamesArg = None,
    suite: SuiteOpt = None,
    keyword: KeywordOpt = None,
    sizes: SizesOpt = None,
    modes: ModesOpt = None,
    devices: DevicesOpt = None,
    x64: X64Opt = None,
    budget: BudgetOpt = None,
    min_samples: MinSamplesOpt = None,
    rounds: RoundsOpt = None,
    clock: ClockOpt = None,
    processes: ProcessesOpt = None,
    overlap: OverlapOpt = None,
    quick: QuickOpt = False,
    out_dir: OutDirOpt = None,
    strict: StrictOpt = False,
    isolate: IsolateOpt = False,
    timeout: TimeoutOpt = None,
    threads: ThreadsOpt = "1",
    distributed: DistributedOpt = False,
    process_id: ProcessIdOpt = None,
    resume: ResumeOpt = None,
    allow_changed_suites: AllowChangedSuitesOpt = False,
    label: LabelOpt = None,
    table_format: RunFormatOpt = RunFormat.TABLE,
    setting: SettingOpt = None,
) -> None:
    """Measure workloads in NumPy, JAX eager and JAX jit and write the run JSON and HTML.

    The run file is rewritten atomically after every case, so Ctrl-C (exit 130) or SIGTERM
    (exit 143) leaves a valid partial run that `--resume` finishes. The summary table goes
    to stdout, progress and problems to stderr. A case that raises an error in every
    mode, NumPy included, is a broken workload: the run is saved and exits 3. To gate
    the run against a baseline, `jitbench compare BASE` it afterwards.

    Examples:

    \b
    # a smoke run of the default suite, in seconds
      jitbench run --quick
    # two workloads at S, M and L, with the full table
      jitbench run selu gemm -s S,M,L --format wide
    # the linear-algebra workloads in one process: faster, but the intervals
    # describe that process, not a repeat run
      jitbench run -k "linalg and not gemm" --processes 1
    # your own suite file, the table as CSV for pandas
      jitbench run --suite my_suite.py --format csv > run.csv
    # a gate in CI: this run against the stored baseline runs
      jitbench run -s S --out head/ && jitbench compare base/ head/
    """
    if allow_changed_suites and resume is None:
        raise ConfigError("--allow-changed-suites goes with --resume RUN.json.")
    config = build_config(
        quick=quick,
        sizes=sizes,
        modes=modes,
        devices=devices,
        x64=x64,
        budget=budget,
        min_samples=min_samples,
        rounds=rounds,
        clock=clock,
        isolate=isolate,
        timeout=timeout,
        processes=processes,
        threads=threads,
        label=label,
        overlap=overlap,
        settings=setting,
    )
    config = _distributed(config, distributed, process_id, processes_given=processes is not None)
    from jitbench import api
    from jitbench.runner.events import RunInterrupted
    from jitbench.runner.signals import Terminated, exit_status, stop_signals

    # A resumed run's page goes to its own output folder; a run file kept anywhere else
    # gets no page (and no second copy of itself) unless --out says where.
    out_dir = api.output_folder(out_dir, resume)
    if out_dir is None and resume is None:
        out_dir = Path("reports")
    if out_dir is not None:  # now: a suite file may change the working folder on import
        out_dir = out_dir.absolute()
    try:
        with RunProgress(announce=not isolate) as progress, stop_signals():
            run = api.run(
                names or (),
                suites=suite or (),
                keyword=keyword,
                config=config,
                resume=resume,
                out=out_dir,
                on_event=progress,
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
    _render(run, path, out_dir, table_format)
    raise typer.Exit(_outcome(run, strict=strict, suite_errors=progress.suite_errors))


def _distributed(
    config: RunConfig, distributed: bool, process_id: str | None, *, processes_given: bool
) -> RunConfig:
    """With `--distributed`, join the multi-process JAX run now, before anything starts a
    JAX backend, and measure in this process alone; `--process-id` goes with it."""
    if not distributed:
        if process_id is not None:
            raise ConfigError("--process-id goes with --distributed; add it.")
        return config
    if not processes_given:  # the default's second process would not join the JAX run
        config = replace(config, processes=1)
    if config.isolate or config.processes > 1:
        raise ConfigError(
            "--distributed measures in this process, the one that joined the JAX run; "
            "leave out --isolate and --processes."
        )
    index, count = parse_process_id(process_id) or (None, None)
    from jitbench.measure.devices import start_distributed

    start_distributed(process_count=count, process_id=index)
    return config


def _render(run: Run, path: Path, out_dir: Path | None, table_format: RunFormat) -> None:
    """The run's pages and index (under `out_dir`), then its table, footers, problems and
    where everything went. With --format markdown or csv, stdout holds the table alone."""
    page = None
    if out_dir is not None:  # the page and index first: `| head` may close stdout below
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
    wide = table_format is RunFormat.WIDE
    terminal = table_format in (RunFormat.TABLE, RunFormat.WIDE)
    notes = out if terminal else err
    shown = TableFormat.TABLE if terminal else TableFormat(table_format.value)
    print_run_table(run, wide=wide, table_format=shown)
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


def _outcome(run: Run, *, strict: bool, suite_errors: int) -> int:
    """The exit code: 3 for a broken workload (its line printed), 1 under --strict for a
    failed or mismatched measurement or a suite file that did not import, else 0."""
    from jitbench import api

    failed = sum(m.failed for m in run.measurements)  # measurements failed or mismatched
    if broken := api.broken_cases(run):
        labels = ", ".join(escape(case.label) for case in broken)
        err.print(
            f"[bold red]broken workload:[/] {labels} raised in every mode, NumPy included: a "
            f"bug in the workload, not a finding (exit {EXIT_BROKEN_WORKLOAD}; the errors are "
            "above, everything measured is saved).",
            soft_wrap=True,
        )
        return EXIT_BROKEN_WORKLOAD
    if strict and (failed or suite_errors > 0):
        why = [f"{failed} measurement(s) failed or mismatched"] if failed else []
        if suite_errors:
            why.append(f"{suite_errors} suite file(s) did not import")
        say(f"exit 1 (--strict): {' and '.join(why)}.", console=err)
        return EXIT_FAILED
    return EXIT_OK
