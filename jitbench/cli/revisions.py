"""`jitbench ab`'s options that name and measure two sides now (revisions or Python
environments), and the measuring itself.

Not a command: `cli.ab` imports it, as it imports `options` and `output`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from jitbench.ab.duet import DuetPlan
from jitbench.cli.common import err, escape, split_list
from jitbench.config import (
    Mode,
    RunConfig,
    SamplingPlan,
    check_budget,
    check_count,
    parse_threads,
)
from jitbench.errors import ConfigError
from jitbench.gate import Comparison, Thresholds
from jitbench.results import Run

SIDES = "Sides (measured now, interleaved)"
MEASURING = "Measuring"
_DUET = DuetPlan()

RevOpt = Annotated[
    str | None,
    typer.Option(
        "--rev",
        metavar="REV",
        rich_help_panel=SIDES,
        help="The base revision (branch, tag, commit), measured against --rev-new.",
        show_default=False,
    ),
]
RevNewOpt = Annotated[
    str | None,
    typer.Option(
        "--rev-new",
        metavar="REV",
        rich_help_panel=SIDES,
        help="With --rev: the new revision (default: the working tree).",
        show_default=False,
    ),
]
PythonBaseOpt = Annotated[
    str | None,
    typer.Option(
        "--python-base",
        metavar="PYTHON",
        rich_help_panel=SIDES,
        help="Measure two environments on the working tree: the base side's Python "
        "executable (default: this one).",
        show_default=False,
    ),
]
PythonNewOpt = Annotated[
    str | None,
    typer.Option(
        "--python-new",
        metavar="PYTHON",
        rich_help_panel=SIDES,
        help="The new side's Python executable (default: this one).",
        show_default=False,
    ),
]
SizesOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--sizes",
        "-s",
        metavar="SIZES",
        rich_help_panel="Selection",
        help="Size presets, e.g. S,M (default S).",
    ),
]
BudgetOpt = Annotated[
    float,
    typer.Option(
        "--budget",
        metavar="SECONDS",
        rich_help_panel=MEASURING,
        help="Sampling seconds per case and worker pair, both sides.",
    ),
]
PairsOpt = Annotated[
    int,
    typer.Option(
        "--pairs",
        metavar="N",
        rich_help_panel=MEASURING,
        help="Worker-process pairs, each measuring every case, so a difference that lives "
        "in one process is not taken for the code's.",
    ),
]
CompilesOpt = Annotated[
    int,
    typer.Option(
        "--compiles",
        metavar="N",
        rich_help_panel=MEASURING,
        help="Cold jit compiles per side and pair.",
    ),
]
MetricsOnlyOpt = Annotated[
    bool,
    typer.Option(
        "--metrics-only",
        rich_help_panel=MEASURING,
        help="Compile each case's jit program on both sides and compare the programs only, "
        "without sampling (a fast gate that noise cannot fool; implies --fail-on program).",
    ),
]
X64Opt = Annotated[
    bool | None,
    typer.Option(
        "--x64/--no-x64",
        rich_help_panel=MEASURING,
        help="float64 on both sides (--no-x64: float32); default: the suites' own float width "
        "(float64 for npbench:, else float32).",
        show_default=False,
    ),
]
RunsOutOpt = Annotated[
    Path,
    typer.Option(
        "--out",
        metavar="FOLDER",
        rich_help_panel="Output",
        help="Folder the two sides' runs are saved in.",
    ),
]

#: The defaults of `ab`'s --budget, --pairs, --compiles and --out.
BUDGET_S, PAIRS, COMPILES = _DUET.budget_s, _DUET.pairs, _DUET.compiles
OUT = Path("reports/compare")


def measure_sides(
    *,
    rev: str | None,
    rev_new: str | None,
    python_base: str | None,
    python_new: str | None,
    suite: list[Path] | None,
    keyword: str | None,
    sizes: list[str] | None,
    budget: float,
    pairs: int,
    compiles: int,
    metrics_only: bool,
    threads: str,
    x64: bool | None,
    out: Path,
    thresholds: Thresholds,
    clock: str = "wall",
) -> tuple[Comparison, tuple[Run, Run]]:
    """Measure the two sides the options name, interleaved, and judge them: the comparison
    and both runs (saved under `out`).

    Raises:
        ConfigError: no side named (neither --rev nor --python-*), or bad options.
    """
    if all(v is None for v in (rev, rev_new, python_base, python_new)):
        raise ConfigError(
            "name the sides to measure: --rev BASE (against the working tree, or --rev-new "
            "NEW), or --python-base/--python-new for two environments."
        )
    if not metrics_only:  # which measures no time: one round, one compile, one pair
        budget = check_budget(budget)
        check_count("--pairs", pairs, least=1, fix="pass e.g. --pairs 3.")
        check_count(
            "--compiles", compiles, least=1, fix="the first is each case's own; pass e.g. 5."
        )
    plan = (
        # One worker a side, each case opened (its cold compile) and given one round,
        # which counts compiles during calls; its samples are not judged, so the two
        # sides open each case at once, on a core each.
        DuetPlan(budget_s=0.0, min_rounds=1, max_rounds=1, compiles=1, pairs=1, concurrent=True)
        if metrics_only
        else DuetPlan(budget_s=budget, pairs=pairs, compiles=compiles)
    )
    config = RunConfig(
        sizes=tuple(split_list(sizes, "--sizes")) or ("S",),
        plan=SamplingPlan(clock=clock),
        x64=x64,
        threads=parse_threads(threads),
        processes=1,  # the duet's worker pairs are its processes (`DuetPlan.pairs`)
        modes=(Mode.EAGER, Mode.JIT) if metrics_only else RunConfig().modes,
    )
    return _measure_interleaved(
        rev=rev,
        rev_new=rev_new,
        python_base=python_base,
        python_new=python_new,
        suites=[str(p) for p in suite or ()],
        keyword=keyword,
        config=config,
        plan=plan,
        thresholds=thresholds,
        out=out,
        programs_only=metrics_only,
    )


def _measure_interleaved(**kwargs: Any) -> tuple[Comparison, tuple[Run, Run]]:
    """`api.compare_revisions` with a progress line on stderr and a summary of where the
    runs went; the comparison and the two sides' runs. A stop signal (Ctrl-C, SIGTERM,
    SIGHUP) ends it like Ctrl-C: the worktrees removed, the partial runs kept, 128 + the
    signal's number."""
    from jitbench.ab.duet import DuetStarted
    from jitbench.api import compare_revisions
    from jitbench.runner.signals import Terminated, exit_status, stop_signals

    started: list[DuetStarted] = []
    try:
        with stop_signals():
            cmp, result = _with_progress(compare_revisions, started, kwargs)
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP: worktrees already removed
        word = "terminated" if isinstance(exc, Terminated) else "interrupted"
        runs = Path(kwargs["out"]) / "runs"
        saved = (
            f"partial runs saved: {started[0].run_ids[0]} (base), {started[0].run_ids[1]} "
            f"(new) under {runs}; `jitbench compare` reads them"
            if started
            else "nothing was measured yet"
        )
        err.print(f"[yellow]{word}:[/] {escape(saved)}")
        raise typer.Exit(exit_status(exc)) from None
    for line in result.suite_errors:
        err.print(f"[yellow]warning:[/] suite error on the {escape(line)}")
    err.print(
        f"measured {result.cases} cases interleaved; runs saved: "
        f"{escape(result.base.run_id)} (base), {escape(result.new.run_id)} (new) "
        f"under {escape(str(kwargs['out']))}"
    )
    return cmp, (result.base, result.new)


def _with_progress(
    compare_revisions: Any, started: list[Any], kwargs: dict[str, Any]
) -> tuple[Comparison, Any]:
    """`compare_revisions(**kwargs)` under a progress line; `started` gets the
    `DuetStarted` event (the run ids the checkpoints save)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from jitbench.ab.duet import DuetCaseStarted, DuetStarted

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    ) as progress:
        task = progress.add_task("starting both sides", total=None)

        def on_event(event: object) -> None:
            if isinstance(event, DuetStarted):
                started.append(event)
                progress.update(task, total=event.cases, description="interleaved")
            elif isinstance(event, DuetCaseStarted):
                progress.update(task, completed=event.index - 1, description=event.label)

        return compare_revisions(on_event=on_event, **kwargs)  # type: ignore[no-any-return]
