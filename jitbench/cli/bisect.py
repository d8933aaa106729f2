"""`jitbench bisect GOOD BAD`: the first commit that changed the cases GOOD and BAD differ in
(exit 0 when found, 4 when a step stays inconclusive, 2 on bad input)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from jitbench.cli.common import PanelledCommand, app, err, escape, handles_errors, say, split_list
from jitbench.cli.options import (
    MEASURING,
    SELECTION,
    ClockOpt,
    MeasureThreadsOpt,
    SelectKeywordOpt,
    SelectSuiteOpt,
)

_MEASURE = MEASURING
_ENVIRONMENTS = "Environments"
_OUTPUT = "Output"


@app.command(
    "bisect",
    cls=PanelledCommand,
    short_help="The first commit between GOOD and BAD that changed a case, measured A/B.",
)
@handles_errors
def bisect_cmd(
    good: Annotated[
        str,
        typer.Argument(
            metavar="GOOD",
            help="A revision before the change (branch, tag, commit).",
            show_default=False,
        ),
    ],
    bad: Annotated[
        str,
        typer.Argument(
            metavar="BAD",
            help="A later revision with the change (a first-parent descendant of GOOD).",
            show_default=False,
        ),
    ],
    suite: SelectSuiteOpt = None,
    keyword: SelectKeywordOpt = None,
    sizes: Annotated[
        list[str] | None,
        typer.Option(
            "--sizes",
            "-s",
            metavar="SIZES",
            rich_help_panel=SELECTION,
            help="Size presets, e.g. S,M (default S).",
        ),
    ] = None,
    budget: Annotated[
        float,
        typer.Option(
            "--budget",
            metavar="SECONDS",
            rich_help_panel=_MEASURE,
            help="Sampling seconds per case and worker pair in a timing step; doubled each "
            "time an inconclusive step is measured again.",
        ),
    ] = 0.7,
    pairs: Annotated[
        int,
        typer.Option(
            "--pairs",
            metavar="N",
            rich_help_panel=_MEASURE,
            help="Worker-process pairs in a timing step.",
        ),
    ] = 3,
    attempts: Annotated[
        int,
        typer.Option(
            "--attempts",
            metavar="N",
            rich_help_panel=_MEASURE,
            help="Measurements of one inconclusive step (each with twice the budget) before "
            "the bisection stops inconclusive (exit 4) rather than guess.",
        ),
    ] = 3,
    timing_only: Annotated[
        bool,
        typer.Option(
            "--timing-only",
            rich_help_panel=_MEASURE,
            help="Decide every step by timing, even where the compiled programs would settle "
            "it (a change the program does not carry: NumPy's side, the environment).",
        ),
    ] = False,
    threads: MeasureThreadsOpt = "1",
    x64: Annotated[
        bool | None,
        typer.Option(
            "--x64/--no-x64",
            rich_help_panel=_MEASURE,
            help="float64 on every side (--no-x64: float32); default: the suites' own float "
            "width (float64 for npbench:, else float32).",
            show_default=False,
        ),
    ] = None,
    clock: ClockOpt = "wall",
    python_good: Annotated[
        str | None,
        typer.Option(
            "--python-good",
            metavar="PYTHON",
            rich_help_panel=_ENVIRONMENTS,
            help="The Python executable GOOD runs with (default: this one).",
            show_default=False,
        ),
    ] = None,
    python_bad: Annotated[
        str | None,
        typer.Option(
            "--python-bad",
            metavar="PYTHON",
            rich_help_panel=_ENVIRONMENTS,
            help="The Python executable BAD and every midpoint run with (default: this one): "
            "bisect the commits that followed a JAX upgrade against GOOD on the old JAX.",
            show_default=False,
        ),
    ] = None,
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            metavar="FOLDER",
            rich_help_panel=_OUTPUT,
            help="Folder of the state file (.jitbench-bisect.json): a bisection run again "
            "with the same GOOD, BAD and options resumes from it.",
        ),
    ] = Path("reports/bisect"),
    restart: Annotated[
        bool,
        typer.Option(
            "--restart",
            rich_help_panel=_OUTPUT,
            help="Discard the state file in --out and start over.",
        ),
    ] = False,
    json_path: Annotated[
        Path | None,
        typer.Option(
            "--json",
            metavar="FILE",
            rich_help_panel=_OUTPUT,
            help="Write the outcome and every step's evidence as JSON; '-' for stdout.",
            show_default=False,
        ),
    ] = None,
    markdown: Annotated[
        Path | None,
        typer.Option(
            "--markdown",
            metavar="FILE",
            rich_help_panel=_OUTPUT,
            help="Write the outcome as markdown (a PR comment); '-' for stdout.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Find the first commit between GOOD and BAD that changed the cases GOOD and BAD
    differ in: exit 0 when found, 4 when a step stays inconclusive, 2 on bad input.

    GOOD and BAD are measured first, interleaved in the same window (as `jitbench ab`), to
    find the cases that changed and by how much. Then the first-parent commits after GOOD
    up to BAD are bisected: each step checks the midpoint out in a worktree and decides it
    by its compiled jit programs where every changed case's program differs between GOOD
    and BAD (the midpoint's equal to GOOD's: good; to BAD's: bad), else by timing against
    GOOD in the same window (its change's interval past halfway to BAD's: bad; short of
    it: good). An inconclusive step is measured again with twice the budget, up to
    --attempts, then the bisection stops and names the commits left: it never guesses.
    A commit that programs found is timed against its parent at the end (its own change;
    one that does not carry the change is not named: exit 4).

    Each step prints a line with its evidence; the state is saved after every step in
    --out, so an interrupted bisection resumes when run again.

    Examples:

    \b
      jitbench bisect v1.2 main -k selu
      jitbench bisect HEAD~20 HEAD -k 'elementwise' -s M --json bisect.json
    # a JAX upgrade: GOOD on the old environment, the later commits on the new one
      jitbench bisect v1.2 main --python-good old-venv/bin/python
    """
    from jitbench.api import bisect_revisions
    from jitbench.cli.common import EXIT_INCONCLUSIVE
    from jitbench.cli.output import check_output_file, write_output
    from jitbench.config import parse_threads
    from jitbench.gate.bisect import (
        STATE_FILE,
        BisectEvent,
        BisectStarted,
        Confirmed,
        EndpointsMeasured,
        Measuring,
        StepDone,
    )
    from jitbench.render import bisect as render
    from jitbench.runner.signals import Terminated, exit_status, stop_signals

    for path in (json_path, markdown):
        check_output_file(path)
    to_stdout = "-" in (str(json_path), str(markdown))
    shown = err if to_stdout else None
    count = [0]

    def line(text: str) -> None:
        if shown is not None:
            shown.print(escape(text))
        else:
            say(escape(text))

    def on_event(event: BisectEvent) -> None:
        if isinstance(event, BisectStarted):
            line(render.start_line(event.state))
            for step in event.state.steps:
                count[0] += 1
                line(render.step_line(count[0], step) + "  (recorded)")
            for step in event.state.confirmations:
                line(render.confirm_line(step) + "  (recorded)")
        elif isinstance(event, EndpointsMeasured):
            for text in render.endpoints_lines(event.endpoints):
                line(text)
        elif isinstance(event, Measuring):
            what = {
                "endpoints": "GOOD against BAD",
                "confirm": f"{event.commit.short} against its parent",
            }.get(event.by, f"{event.commit.short} by {event.by}")
            again = f" (attempt {event.attempt})" if event.attempt > 1 else ""
            err.print(f"[dim]measuring {escape(what)}{again}…[/]")
        elif isinstance(event, StepDone):
            count[0] += 1
            line(render.step_line(count[0], event.step) + f"  ({event.left} left)")
        elif isinstance(event, Confirmed):
            line(render.confirm_line(event.step))

    try:
        with stop_signals():  # SIGTERM and SIGHUP stop it as Ctrl-C does
            result = bisect_revisions(
                good,
                bad,
                suites=[str(p) for p in suite or ()],
                keyword=keyword,
                sizes=split_list(sizes, "--sizes") or ["S"],
                threads=parse_threads(threads),
                x64=x64,
                clock=clock,
                budget_s=budget,
                pairs=pairs,
                max_attempts=attempts,
                python_good=python_good,
                python_bad=python_bad,
                timing_only=timing_only,
                out=out,
                restart=restart,
                on_event=on_event,
            )
    except KeyboardInterrupt as exc:  # the worktrees are removed by now
        word = "terminated" if isinstance(exc, Terminated) else "interrupted"
        state = escape(str(Path(out) / STATE_FILE))
        err.print(
            f"[yellow]{word}:[/] the steps decided so far are kept in {state}; the same "
            "command resumes the bisection"
        )
        raise typer.Exit(exit_status(exc)) from None
    outcome = result.outcome
    for text in render.outcome_lines(
        outcome, result.state.endpoints, seconds=result.seconds, resumed=result.resumed
    ):
        line(text)
    seconds, resumed = result.seconds, result.resumed
    if json_path is not None:
        text = render.outcome_json(outcome, result.state, seconds=seconds, resumed=resumed)
        write_output(json_path, text)
    if markdown is not None:
        text = render.outcome_markdown(outcome, result.state, seconds=seconds, resumed=resumed)
        write_output(markdown, text)
    if outcome.first_bad is None:
        err.print(
            f"[red]error:[/] the bisection is inconclusive (exit {EXIT_INCONCLUSIVE}): "
            f"{escape(outcome.inconclusive or '')}; run it again to measure more (it resumes), "
            "or raise --attempts or --budget."
        )
        raise typer.Exit(EXIT_INCONCLUSIVE)
