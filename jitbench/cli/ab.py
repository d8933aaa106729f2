"""`jitbench ab --rev BASE [--rev-new NEW]`: two revisions (or two Python environments)
measured now, interleaved in the same window, and gated (exit 1 on a regression, 4
inconclusive, 2 on bad input)."""

from __future__ import annotations

import typer

from jitbench.cli.common import PanelledCommand, app, handles_errors
from jitbench.cli.options import (
    AlphaOpt,
    ChangesOnlyOpt,
    ClockOpt,
    CompileFloorOpt,
    CompileGateOpt,
    CompileThresholdOpt,
    FailOnOpt,
    GateAllowInconclusiveOpt,
    HtmlOpt,
    JsonOpt,
    MarkdownOpt,
    MeasureThreadsOpt,
    OutputFormatOpt,
    PAdjustOpt,
    SelectKeywordOpt,
    SelectSuiteOpt,
    TableFormat,
    ThresholdOpt,
)
from jitbench.cli.output import check_gate_outputs, finish_gate, gate_thresholds
from jitbench.cli.revisions import (
    BUDGET_S,
    COMPILES,
    OUT,
    PAIRS,
    BudgetOpt,
    CompilesOpt,
    MetricsOnlyOpt,
    PairsOpt,
    PythonBaseOpt,
    PythonNewOpt,
    RevNewOpt,
    RevOpt,
    RunsOutOpt,
    SizesOpt,
    X64Opt,
    measure_sides,
)
from jitbench.gate import INTERLEAVED_THRESHOLD, Thresholds

_DEFAULTS = Thresholds()


@app.command(
    "ab",
    cls=PanelledCommand,
    short_help="Two revisions or environments measured now, interleaved: the gate between them.",
)
@handles_errors
def ab_cmd(
    rev: RevOpt = None,
    rev_new: RevNewOpt = None,
    python_base: PythonBaseOpt = None,
    python_new: PythonNewOpt = None,
    suite: SelectSuiteOpt = None,
    keyword: SelectKeywordOpt = None,
    sizes: SizesOpt = None,
    budget: BudgetOpt = BUDGET_S,
    pairs: PairsOpt = PAIRS,
    compiles: CompilesOpt = COMPILES,
    metrics_only: MetricsOnlyOpt = False,
    threads: MeasureThreadsOpt = "1",
    x64: X64Opt = None,
    clock: ClockOpt = "wall",
    threshold: ThresholdOpt = None,
    alpha: AlphaOpt = _DEFAULTS.alpha,
    p_adjust: PAdjustOpt = _DEFAULTS.p_adjust,
    compile_threshold: CompileThresholdOpt = _DEFAULTS.compile_threshold,
    compile_floor: CompileFloorOpt = _DEFAULTS.compile_floor_s,
    compile_gate: CompileGateOpt = _DEFAULTS.compile_gates,
    fail_on: FailOnOpt = None,
    allow_inconclusive: GateAllowInconclusiveOpt = False,
    out: RunsOutOpt = OUT,
    markdown: MarkdownOpt = None,
    json_path: JsonOpt = None,
    html: HtmlOpt = None,
    changes_only: ChangesOnlyOpt = False,
    table_format: OutputFormatOpt = TableFormat.TABLE,
) -> None:
    """Measure two revisions, or two Python environments, now and interleaved, and gate
    the new side: exit 1 on a regression, 4 when the gate is inconclusive, 2 on bad input,
    0 otherwise.

    With --rev BASE (and --rev-new NEW, default the working tree as it is) each revision
    is checked out in a worktree of its own; with --python-base/--python-new the working
    tree is measured under two interpreters. Both sides are measured in the same time
    window: a worker process per side, both on one core, sampled round by round in random
    order, so the machine's drift cancels in each round's ratio; the verdict comes from
    the per-round ratios and from paired cold compiles, with --pairs worker pairs so that
    a difference living in one process is not taken for the code's. The two runs are
    saved under --out (`jitbench compare` judges them again later).

    With --metrics-only the jit programs are compiled on both sides and compared, not
    timed: a fast gate that noise cannot fool (it fails on a program regression).

    Examples:

    \b
    # this pull request's working tree against its base branch
      jitbench ab --rev origin/main -s S --markdown gate.md
    # two commits, the programs only
      jitbench ab --rev v1.2 --rev-new main --metrics-only
    # a JAX upgrade: the same code under two environments
      jitbench ab --python-base old-venv/bin/python --python-new new-venv/bin/python
    """
    check_gate_outputs(markdown, json_path, html)  # before minutes of measuring
    thresholds = gate_thresholds(
        threshold=INTERLEAVED_THRESHOLD if threshold is None else threshold,
        alpha=alpha,
        p_adjust=p_adjust,
        compile_threshold=compile_threshold,
        compile_floor=compile_floor,
        compile_gate=compile_gate,
        fail_on=fail_on,
        metrics_only=metrics_only,
    )
    cmp, sides = measure_sides(
        rev=rev,
        rev_new=rev_new,
        python_base=python_base,
        python_new=python_new,
        suite=suite,
        keyword=keyword,
        sizes=sizes,
        budget=budget,
        pairs=pairs,
        compiles=compiles,
        metrics_only=metrics_only,
        threads=threads,
        x64=x64,
        out=out,
        thresholds=thresholds,
        clock=clock,
    )
    raise typer.Exit(
        finish_gate(
            cmp,
            sides,
            markdown=markdown,
            json_path=json_path,
            html=html,
            changes_only=changes_only,
            wide=table_format is TableFormat.WIDE,
            table_format=table_format.printed,
            allow_inconclusive=allow_inconclusive,
            runs_out=out,
        )
    )
