"""`jitbench compare BASE NEW`: the regression gate (exit 1 on regression, 2 on bad input)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from jitbench.cli.common import EXIT_FAILED, EXIT_OK, app, handles_errors
from jitbench.cli.options import FormatOpt, TableFormat, WideOpt
from jitbench.cli.output import render_comparison
from jitbench.gate import (
    DISTURBED_FACTOR,
    Thresholds,
    compare,
    load_side,
)

_DEFAULTS = Thresholds()

ThresholdOpt = Annotated[
    float,
    typer.Option(
        "--threshold", help="Run-time factor: new/base median beyond it is a large change."
    ),
]
AlphaOpt = Annotated[
    float,
    typer.Option(
        "--alpha",
        help="Significance level of the Mann–Whitney U test on the samples and, when a "
        "side is a folder of runs, of the t-test on the runs' medians (both must pass).",
    ),
]
PAdjustOpt = Annotated[
    str,
    typer.Option(
        "--p-adjust",
        help="bh: adjust p-values for the number of timing tests (Benjamini–Hochberg), so a "
        "large suite does not cry wolf; none: test each case on its own.",
    ),
]
DisturbedOpt = Annotated[
    float,
    typer.Option(
        "--disturbed-factor",
        help="In a folder of runs, leave out a run this many times slower across the suite "
        "than its fastest sibling (the machine was disturbed); 0 keeps every run.",
    ),
]
CompileThresholdOpt = Annotated[
    float, typer.Option("--compile-threshold", help="Jit compile-time factor.")
]
CompileFloorOpt = Annotated[
    float,
    typer.Option("--compile-floor", help="Seconds a compile-time change must also exceed."),
]
MarkdownOpt = Annotated[
    Path | None,
    typer.Option(
        "--markdown",
        help="Write a markdown report (PR comment, $GITHUB_STEP_SUMMARY); '-' for stdout.",
        show_default=False,
    ),
]
JsonOpt = Annotated[
    Path | None,
    typer.Option(
        "--json", help="Write the comparison as JSON; '-' for stdout.", show_default=False
    ),
]


@app.command("compare", short_help="The regression gate between two runs: exit 1 on a regression.")
@handles_errors
def compare_cmd(
    base: Annotated[
        Path,
        typer.Argument(
            help="Baseline run JSON, or a folder of runs (rounds) pooled into one.",
            show_default=False,
        ),
    ],
    new: Annotated[
        Path,
        typer.Argument(
            help="New run JSON, or a folder of runs (rounds) pooled into one.", show_default=False
        ),
    ],
    threshold: ThresholdOpt = _DEFAULTS.threshold,
    alpha: AlphaOpt = _DEFAULTS.alpha,
    p_adjust: PAdjustOpt = _DEFAULTS.p_adjust,
    disturbed_factor: DisturbedOpt = DISTURBED_FACTOR,
    compile_threshold: CompileThresholdOpt = _DEFAULTS.compile_threshold,
    compile_floor: CompileFloorOpt = _DEFAULTS.compile_floor_s,
    markdown: MarkdownOpt = None,
    json_path: JsonOpt = None,
    compile_gate: Annotated[
        bool,
        typer.Option(
            "--compile-gate/--no-compile-gate",
            help="Whether a compile-time regression fails the gate (it is reported either way).",
        ),
    ] = _DEFAULTS.compile_gates,
    changes_only: Annotated[
        bool, typer.Option("--changes-only", help="Leave unchanged rows out of the table.")
    ] = False,
    wide: WideOpt = False,
    table_format: FormatOpt = TableFormat.TABLE,
) -> None:
    """Compare two runs: exit 1 on a regression, 0 otherwise, 2 on bad input.

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
    # Built once, here, so bad options fail (exit 2) before any file is read.
    thresholds = Thresholds(
        threshold=threshold,
        alpha=alpha,
        compile_threshold=compile_threshold,
        compile_floor_s=compile_floor,
        compile_gates=compile_gate,
        p_adjust=p_adjust,
    )
    base_run = load_side(base, disturbed_factor=disturbed_factor)
    new_run = load_side(new, disturbed_factor=disturbed_factor)
    cmp = compare(base_run, new_run, thresholds=thresholds)
    render_comparison(
        cmp,
        markdown=markdown,
        json_path=json_path,
        all_rows=not changes_only,
        wide=wide,
        table_format=table_format,
    )
    raise typer.Exit(EXIT_FAILED if cmp.has_regression else EXIT_OK)
