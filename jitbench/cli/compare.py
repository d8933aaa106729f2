"""`jitbench compare BASE NEW`: the regression gate (exit 1 on regression, 2 on bad input)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from jitbench.cli.common import PanelledCommand, app, err, escape, handles_errors, split_list
from jitbench.cli.common import out as stdout
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
    check_output_file,
    gate_exit,
    program_diff_files,
    render_comparison,
)
from jitbench.config import Mode, RunConfig, parse_threads
from jitbench.errors import ConfigError
from jitbench.gate import (
    DISTURBED_FACTOR,
    INTERLEAVED_THRESHOLD,
    Comparison,
    Thresholds,
    are_partners,
    compare,
    compare_interleaved,
    load_side,
)
from jitbench.results import Run
from jitbench.runner.duet import DuetPlan

_DEFAULTS = Thresholds()
_DUET = DuetPlan()

AlphaOpt = Annotated[
    float,
    typer.Option(
        "--alpha",
        metavar="P",
        rich_help_panel="Gate",
        help="Significance level of the Mann–Whitney U test on the samples and, when a "
        "side is a folder of runs, of the t-test on the runs' medians (both must pass).",
    ),
]
PAdjustOpt = Annotated[
    str,
    typer.Option(
        "--p-adjust",
        metavar="METHOD",
        rich_help_panel="Gate",
        help="bh: adjust p-values for the number of timing tests (Benjamini–Hochberg), so a "
        "large suite does not cry wolf; none: test each case on its own.",
    ),
]
DisturbedOpt = Annotated[
    float,
    typer.Option(
        "--disturbed-factor",
        metavar="FACTOR",
        rich_help_panel="Gate",
        help="In a folder of runs, leave out a run this many times slower across the suite "
        "than its fastest sibling (the machine was disturbed), fewer than half the runs at "
        "most; 0 keeps every run.",
    ),
]
CompileThresholdOpt = Annotated[
    float,
    typer.Option(
        "--compile-threshold",
        metavar="FACTOR",
        rich_help_panel="Gate",
        help="Jit compile-time factor.",
    ),
]
CompileFloorOpt = Annotated[
    float,
    typer.Option(
        "--compile-floor",
        metavar="SECONDS",
        rich_help_panel="Gate",
        help="Seconds a compile-time change must also exceed.",
    ),
]
MarkdownOpt = Annotated[
    Path | None,
    typer.Option(
        "--markdown",
        metavar="FILE",
        rich_help_panel="Output",
        help="Write a markdown report (PR comment, $GITHUB_STEP_SUMMARY); '-' for stdout.",
        show_default=False,
    ),
]
HtmlOpt = Annotated[
    Path | None,
    typer.Option(
        "--html",
        rich_help_panel="Output",
        metavar="FILE",
        help="Write a comparison page (cases aligned, ratios with intervals, the verdicts) "
        "to FILE, plotly.min.js beside it.",
        show_default=False,
    ),
]
JsonOpt = Annotated[
    Path | None,
    typer.Option(
        "--json",
        metavar="FILE",
        rich_help_panel="Output",
        help="Write the comparison as JSON; '-' for stdout.",
        show_default=False,
    ),
]


@app.command(
    "compare",
    cls=PanelledCommand,
    short_help="The regression gate between two runs: exit 1 on a regression.",
)
@handles_errors
def compare_cmd(
    base: Annotated[
        Path | None,
        typer.Argument(
            help="Baseline run JSON, or a folder of runs (rounds) pooled into one.",
            show_default=False,
        ),
    ] = None,
    new: Annotated[
        Path | None,
        typer.Argument(
            help="New run JSON, or a folder of runs (rounds) pooled into one.", show_default=False
        ),
    ] = None,
    rev: Annotated[
        str | None,
        typer.Option(
            "--rev",
            metavar="REV",
            rich_help_panel="Revisions (measured now, interleaved)",
            help="Measure this git revision (branch, tag, commit) against the working tree, "
            "interleaved, instead of comparing stored runs.",
            show_default=False,
        ),
    ] = None,
    rev_new: Annotated[
        str | None,
        typer.Option(
            "--rev-new",
            metavar="REV",
            rich_help_panel="Revisions (measured now, interleaved)",
            help="With --rev: the new revision (default: the working tree).",
            show_default=False,
        ),
    ] = None,
    python_base: Annotated[
        str | None,
        typer.Option(
            "--python-base",
            metavar="PYTHON",
            rich_help_panel="Revisions (measured now, interleaved)",
            help="Measure two environments interleaved: the base side's Python executable.",
            show_default=False,
        ),
    ] = None,
    python_new: Annotated[
        str | None,
        typer.Option(
            "--python-new",
            metavar="PYTHON",
            rich_help_panel="Revisions (measured now, interleaved)",
            help="The new side's Python executable (default: this one).",
            show_default=False,
        ),
    ] = None,
    suite: SuiteOpt = None,
    keyword: KeywordOpt = None,
    sizes: Annotated[
        list[str] | None,
        typer.Option(
            "--sizes",
            "-s",
            metavar="SIZES",
            rich_help_panel="Revisions (measured now, interleaved)",
            help="Interleaved: size presets, e.g. S,M (default S).",
        ),
    ] = None,
    budget: Annotated[
        float,
        typer.Option(
            "--budget",
            metavar="SECONDS",
            rich_help_panel="Revisions (measured now, interleaved)",
            help="Interleaved: sampling seconds per case and worker pair, both sides.",
        ),
    ] = _DUET.budget_s,
    pairs: Annotated[
        int,
        typer.Option(
            "--pairs",
            metavar="N",
            rich_help_panel="Revisions (measured now, interleaved)",
            help="Interleaved: worker-process pairs, each measuring every case, so a "
            "difference that lives in one process is not taken for the code's.",
        ),
    ] = _DUET.pairs,
    compiles: Annotated[
        int,
        typer.Option(
            "--compiles",
            metavar="N",
            rich_help_panel="Revisions (measured now, interleaved)",
            help="Interleaved: cold jit compiles per side and pair.",
        ),
    ] = _DUET.compiles,
    metrics_only: Annotated[
        bool,
        typer.Option(
            "--metrics-only",
            rich_help_panel="Revisions (measured now, interleaved)",
            help="Interleaved: compile each case's jit program on both sides and compare the "
            "programs only, without sampling (a fast gate that noise cannot fool; implies "
            "--fail-on program).",
        ),
    ] = False,
    threads: ThreadsOpt = "1",
    x64: Annotated[
        bool,
        typer.Option(
            "--x64",
            rich_help_panel="Revisions (measured now, interleaved)",
            help="Interleaved: float64 on both sides.",
        ),
    ] = False,
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            metavar="FOLDER",
            rich_help_panel="Revisions (measured now, interleaved)",
            help="Interleaved: folder the two sides' runs are saved in.",
        ),
    ] = Path("reports/compare"),
    threshold: Annotated[
        float | None,
        typer.Option(
            "--threshold",
            metavar="FACTOR",
            rich_help_panel="Gate",
            help="Run-time factor: new/base median beyond it is a large change "
            f"[default: {_DEFAULTS.threshold}; {INTERLEAVED_THRESHOLD} interleaved]",
            show_default=False,
        ),
    ] = None,
    alpha: AlphaOpt = _DEFAULTS.alpha,
    p_adjust: PAdjustOpt = _DEFAULTS.p_adjust,
    disturbed_factor: DisturbedOpt = DISTURBED_FACTOR,
    compile_threshold: CompileThresholdOpt = _DEFAULTS.compile_threshold,
    compile_floor: CompileFloorOpt = _DEFAULTS.compile_floor_s,
    markdown: MarkdownOpt = None,
    json_path: JsonOpt = None,
    html: HtmlOpt = None,
    compile_gate: Annotated[
        bool,
        typer.Option(
            "--compile-gate/--no-compile-gate",
            rich_help_panel="Gate",
            help="Whether a compile-time regression fails the gate (it is reported either way).",
        ),
    ] = _DEFAULTS.compile_gates,
    fail_on: Annotated[
        list[str] | None,
        typer.Option(
            "--fail-on",
            rich_help_panel="Gate",
            metavar="WHAT",
            help="Also fail on 'program': a compiled program that moved past the tolerances "
            "(bytes accessed or flops +5 %, temp or peak memory +10 %, a new recompile, "
            "more fusions); program changes are reported either way.",
        ),
    ] = None,
    changes_only: Annotated[
        bool,
        typer.Option(
            "--changes-only",
            rich_help_panel="Output",
            help="Leave unchanged rows out of the table.",
        ),
    ] = False,
    allow_inconclusive: AllowInconclusiveOpt = False,
    wide: WideOpt = False,
    table_format: FormatOpt = TableFormat.TABLE,
) -> None:
    """Compare two runs, or measure two revisions interleaved: exit 1 on a regression, 4
    when the gate is inconclusive, 2 on bad input, 0 otherwise.

    Inconclusive means the gate cannot vouch for the new run: a large change that too few
    samples could test (verdict "inconclusive"), or a partial (interrupted) run on either
    side, whose missing cases were never checked. That never reads as a pass: it exits 4
    unless --allow-inconclusive accepts it (exit 0 then, the warning still printed).

    With --rev BASE (or --python-base/--python-new) both sides are measured now, in the
    same time window: a worker process per side, both on one core, sampled round by round
    in random order, so the machine's drift cancels in each round's ratio; the verdict
    comes from the per-round ratios and from paired cold compiles. The two runs are saved
    under --out. Without them, BASE and NEW are stored runs:

    Cases are matched by workload, size, device, dtype and mode.
    Run time regresses when new/base > --threshold and the change is significant at
    --alpha, the p-values adjusted for the number of tests (--p-adjust). A side may be a
    folder of runs of the same code: the runs are pooled, and a t-test on each run's median
    must then agree with Mann–Whitney on the samples (the robust choice on a shared
    machine); with one run per side Mann–Whitney decides alone.
    Jit compile time regresses when it grows by --compile-threshold and --compile-floor.
    A case that was ok and now errors or mismatches is a regression too.

    Examples:

    \b
    # two runs, or two folders of runs (each side pooled)
      jitbench compare base.json new.json
      jitbench compare base/ head/ --changes-only
    # a pull-request comment and a JSON record for the CI job
      jitbench compare base/ head/ --markdown gate.md --json gate.json
    # every comparison as CSV
      jitbench compare base.json new.json --format csv > gate.csv
    """
    interleaved = any(v is not None for v in (rev, rev_new, python_base, python_new))
    if interleaved and (base is not None or new is not None):
        raise ConfigError(
            "pass either two stored runs (BASE NEW) or --rev/--python-base to measure both "
            "sides now, not both."
        )
    if not interleaved and (base is None or new is None):
        raise ConfigError(
            "compare needs two stored runs (BASE NEW), or --rev BASE to measure a revision "
            "against the working tree now; see jitbench compare --help."
        )
    # Output files fail now, not after minutes of measuring (--rev) or loading.
    if html is not None and str(html) == "-":
        raise ConfigError(
            "--html writes a page and plotly.js beside it, so it needs a file name, not '-'."
        )
    for path in (markdown, json_path, html):
        check_output_file(path)
    if threshold is None:
        threshold = INTERLEAVED_THRESHOLD if interleaved else _DEFAULTS.threshold
    # Built once, here, so bad options fail (exit 2) before any file is read.
    thresholds = Thresholds(
        threshold=threshold,
        alpha=alpha,
        compile_threshold=compile_threshold,
        compile_floor_s=compile_floor,
        # --metrics-only gates on the programs alone: its one cold compile a side is
        # reported, never judged (a busy core slows a compile by 1.5x at random).
        compile_gates=compile_gate and not metrics_only,
        p_adjust=p_adjust,
        program_gates=metrics_only or _fails_on_program(fail_on or []),
    )
    if metrics_only and not interleaved:
        raise ConfigError(
            "--metrics-only compiles two revisions' programs: give --rev BASE (or "
            "--python-base/--python-new); stored runs already hold theirs (plain compare "
            "reports program changes)."
        )
    if interleaved:
        plan = (
            # One worker a side, each case opened (its cold compile) and given one round,
            # which counts compiles during calls; its samples are not judged, so the two
            # sides open each case at once, on a core each.
            DuetPlan(budget_s=0.0, min_rounds=1, max_rounds=1, compiles=1, pairs=1, concurrent=True)
            if metrics_only
            else DuetPlan(budget_s=budget, pairs=pairs, compiles=compiles)
        )
        config = RunConfig(
            sizes=tuple(split_list(sizes)) or ("S",),
            x64=x64,
            threads=parse_threads(threads),
            processes=1,  # the duet's worker pairs are its processes (`DuetPlan.pairs`)
            modes=(Mode.EAGER, Mode.JIT) if metrics_only else RunConfig().modes,
        )
        cmp, sides = _measure_interleaved(
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
    else:
        assert base is not None and new is not None
        base_run = load_side(base, disturbed_factor=disturbed_factor)
        new_run = load_side(new, disturbed_factor=disturbed_factor)
        # Two runs of one interleaved comparison (`--rev`) are judged on their pairs again.
        judge = compare_interleaved if are_partners(base_run, new_run) else compare
        cmp = judge(base_run, new_run, thresholds=thresholds)
        sides = (base_run, new_run)
    diffs, diff_paths = _program_diffs(
        cmp, sides, stored=None if interleaved else (base, new), out=out
    )
    render_comparison(
        cmp,
        markdown=markdown,
        json_path=json_path,
        all_rows=not changes_only,
        wide=wide,
        table_format=table_format,
        program_diffs=diffs,
        diff_paths=diff_paths,
    )
    if html is not None:
        from jitbench.report import write_comparison_page  # plotly/jinja2 only when asked

        page = write_comparison_page(list(sides), [cmp], html, program_diffs=diffs)
        (err if str(markdown) == "-" or str(json_path) == "-" else stdout).print(
            f"comparison page written to {page}"
        )
    raise typer.Exit(gate_exit(cmp, allow_inconclusive=allow_inconclusive))


def _measure_interleaved(**kwargs: Any) -> tuple[Comparison, tuple[Run, Run]]:
    """`api.compare_revisions` with a progress line on stderr and a summary of where the
    runs went; the comparison and the two sides' runs."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from jitbench.api import compare_revisions
    from jitbench.runner.duet import DuetCaseStarted, DuetStarted

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
                progress.update(task, total=event.cases, description="interleaved")
            elif isinstance(event, DuetCaseStarted):
                progress.update(task, completed=event.index - 1, description=event.label)

        cmp, result = compare_revisions(on_event=on_event, **kwargs)
    for line in result.suite_errors:
        err.print(f"[yellow]warning:[/] suite error on the {escape(line)}")
    err.print(
        f"measured {result.cases} cases interleaved; runs saved: "
        f"{escape(result.base.run_id)} (base), {escape(result.new.run_id)} (new) "
        f"under {escape(str(kwargs['out']))}"
    )
    return cmp, (result.base, result.new)


def _program_diffs(
    cmp: Comparison,
    sides: tuple[Run, Run],
    *,
    stored: tuple[Path | None, Path | None] | None,
    out: Path,
) -> tuple[dict[str, str], dict[str, Path]]:
    """The changed programs' diffs (by program key) and the files they were written to:
    from the programs the runs hold (`--rev`) or those stored beside the runs' files,
    written beside the new side (`results.program_diff_folder`)."""
    from jitbench.results import OutputLayout, run_programs, side_programs

    if not any(e.program is not None and e.program.changed for e in cmp.entries):
        return {}, {}
    if stored is None:
        programs = run_programs(sides[0]), run_programs(sides[1])
        beside: Path = OutputLayout(out).runs_dir
    else:
        base_path, new_path = stored
        assert base_path is not None and new_path is not None
        programs = side_programs(base_path), side_programs(new_path)
        beside = new_path
    return program_diff_files(cmp, *programs, beside=beside)


#: What `--fail-on` takes besides the timing and compile verdicts that always gate.
FAIL_ON_CHOICES = ("program",)


def _fails_on_program(fail_on: list[str]) -> bool:
    """Whether `--fail-on` asks the program verdict to gate.

    Raises:
        ConfigError: a value it does not know, with those it does.
    """
    from jitbench.errors import unknown_name_message

    for value in fail_on:
        if value not in FAIL_ON_CHOICES:
            raise ConfigError(unknown_name_message("--fail-on value", value, FAIL_ON_CHOICES))
    return "program" in fail_on
