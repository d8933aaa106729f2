"""`jitbench compare BASE NEW`: the regression gate between stored runs (exit 1 on a
regression, 4 inconclusive, 2 on bad input). Measuring two revisions now, interleaved, is
`jitbench ab`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from jitbench.cli.common import PanelledCommand, app, handles_errors
from jitbench.cli.options import (
    AlphaOpt,
    ChangesOnlyOpt,
    CompileFloorOpt,
    CompileGateOpt,
    CompileThresholdOpt,
    DisturbedOpt,
    FailOnOpt,
    GateAllowInconclusiveOpt,
    HtmlOpt,
    JsonOpt,
    MarkdownOpt,
    OutputFormatOpt,
    PAdjustOpt,
    TableFormat,
    ThresholdOpt,
)
from jitbench.cli.output import check_gate_outputs, finish_gate, gate_thresholds
from jitbench.errors import ConfigError
from jitbench.gate import (
    DISTURBED_FACTOR,
    Thresholds,
    are_partners,
    compare,
    compare_interleaved,
    load_side,
)

_DEFAULTS = Thresholds()


@app.command(
    "compare",
    cls=PanelledCommand,
    short_help="The regression gate between two stored runs: exit 1 on a regression.",
)
@handles_errors
def compare_cmd(
    base: Annotated[
        Path | None,
        typer.Argument(
            metavar="BASE",
            help="Baseline run JSON, or a folder of runs (rounds) pooled into one.",
            show_default=False,
        ),
    ] = None,
    new: Annotated[
        Path | None,
        typer.Argument(
            metavar="NEW",
            help="New run JSON, or a folder of runs (rounds) pooled into one.",
            show_default=False,
        ),
    ] = None,
    threshold: ThresholdOpt = None,
    alpha: AlphaOpt = _DEFAULTS.alpha,
    p_adjust: PAdjustOpt = _DEFAULTS.p_adjust,
    disturbed_factor: DisturbedOpt = DISTURBED_FACTOR,
    compile_threshold: CompileThresholdOpt = _DEFAULTS.compile_threshold,
    compile_floor: CompileFloorOpt = _DEFAULTS.compile_floor_s,
    compile_gate: CompileGateOpt = _DEFAULTS.compile_gates,
    fail_on: FailOnOpt = None,
    allow_inconclusive: GateAllowInconclusiveOpt = False,
    markdown: MarkdownOpt = None,
    json_path: JsonOpt = None,
    html: HtmlOpt = None,
    changes_only: ChangesOnlyOpt = False,
    table_format: OutputFormatOpt = TableFormat.TABLE,
) -> None:
    """Compare two stored runs: exit 1 on a regression, 4 when the gate is inconclusive,
    2 on bad input, 0 otherwise. (To measure two revisions now, interleaved, use
    `jitbench ab`.)

    Inconclusive means the gate cannot vouch for the new run: a large change that too few
    samples could test (verdict "inconclusive"), or a partial (interrupted) run on either
    side, whose missing cases were never checked. That never reads as a pass: it exits 4
    unless --allow-inconclusive accepts it (exit 0 then, the warning still printed).

    Cases are matched by workload, size, device, dtype and mode.
    Run time regresses when new/base > --threshold and the change is significant at
    --alpha, the p-values adjusted for the number of tests (--p-adjust). A side may be a
    folder of runs of the same code: the runs are pooled, and a t-test on each run's median
    must then agree with Mann–Whitney on the samples (the robust choice on a shared
    machine); with one run per side Mann–Whitney decides alone. Two runs that one
    `jitbench ab` measured together are judged on their paired rounds again.
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
    if base is None or new is None:
        raise ConfigError(
            "compare needs two stored runs (BASE NEW), each a run JSON or a folder of runs; "
            "to measure a revision against the working tree now, use `jitbench ab --rev BASE`."
        )
    check_gate_outputs(markdown, json_path, html)  # before loading
    # Built once, here, so bad options fail (exit 2) before any file is read.
    thresholds = gate_thresholds(
        threshold=_DEFAULTS.threshold if threshold is None else threshold,
        alpha=alpha,
        p_adjust=p_adjust,
        compile_threshold=compile_threshold,
        compile_floor=compile_floor,
        compile_gate=compile_gate,
        fail_on=fail_on,
        metrics_only=False,
    )
    base_run = load_side(base, disturbed_factor=disturbed_factor)
    new_run = load_side(new, disturbed_factor=disturbed_factor)
    # Two runs of one interleaved comparison (`ab`) are judged on their pairs again.
    judge = compare_interleaved if are_partners(base_run, new_run) else compare
    cmp = judge(base_run, new_run, thresholds=thresholds)
    raise typer.Exit(
        finish_gate(
            cmp,
            (base_run, new_run),
            markdown=markdown,
            json_path=json_path,
            html=html,
            changes_only=changes_only,
            wide=table_format is TableFormat.WIDE,
            table_format=table_format.printed,
            allow_inconclusive=allow_inconclusive,
            stored=(base, new),
        )
    )
