"""`jitbench compare BASE NEW`: the regression gate between stored runs (exit 1 on a
regression, 2 on bad input). Measuring two revisions now is `jitbench ab`; the old
`compare --rev` spelling still works, with a note pointing there."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from jitbench.cli.common import PanelledCommand, app, err, handles_errors
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
    OutputWideOpt,
    PAdjustOpt,
    TableFormat,
    ThresholdOpt,
)
from jitbench.cli.output import check_gate_outputs, finish_gate, gate_thresholds
from jitbench.errors import ConfigError
from jitbench.gate import (
    DISTURBED_FACTOR,
    INTERLEAVED_THRESHOLD,
    Thresholds,
    are_partners,
    compare,
    compare_interleaved,
    load_side,
)

_DEFAULTS = Thresholds()
_MOVED = "moved to `jitbench ab`"


def _hidden(name: str, metavar: str | None = None) -> typer.models.OptionInfo:
    """An option of the revision A/B that `compare` still accepts (hidden from its help)."""
    return typer.Option(name, metavar=metavar, hidden=True, help=_MOVED, show_default=False)


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
    wide: OutputWideOpt = False,
    table_format: OutputFormatOpt = TableFormat.TABLE,
    # `compare --rev …` before `jitbench ab` existed: accepted, hidden, and pointed there.
    rev: Annotated[str | None, _hidden("--rev", "REV")] = None,
    rev_new: Annotated[str | None, _hidden("--rev-new", "REV")] = None,
    python_base: Annotated[str | None, _hidden("--python-base", "PYTHON")] = None,
    python_new: Annotated[str | None, _hidden("--python-new", "PYTHON")] = None,
    suite: Annotated[list[Path] | None, _hidden("--suite", "PATH")] = None,
    keyword: Annotated[str | None, _hidden("-k", "EXPR")] = None,
    sizes: Annotated[list[str] | None, typer.Option("--sizes", "-s", hidden=True)] = None,
    budget: Annotated[float | None, _hidden("--budget", "SECONDS")] = None,
    pairs: Annotated[int | None, _hidden("--pairs", "N")] = None,
    compiles: Annotated[int | None, _hidden("--compiles", "N")] = None,
    metrics_only: Annotated[bool, typer.Option("--metrics-only", hidden=True)] = False,
    threads: Annotated[str, _hidden("--threads", "N|all")] = "1",
    x64: Annotated[bool | None, typer.Option("--x64/--no-x64", hidden=True)] = None,
    out: Annotated[Path | None, _hidden("--out", "FOLDER")] = None,
) -> None:
    """Compare two stored runs: exit 1 on a regression, 4 when the gate is inconclusive,
    2 on bad input, 0 otherwise. (To measure two revisions now, interleaved, use
    `jitbench ab`; `compare --rev` still works and says so.)

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
    interleaved = any(v is not None for v in (rev, rev_new, python_base, python_new))
    if interleaved and (base is not None or new is not None):
        raise ConfigError(
            "pass either two stored runs (BASE NEW) or --rev/--python-base to measure both "
            "sides now, not both."
        )
    if not interleaved:
        revision_only = {
            "--suite": suite,
            "-k": keyword,
            "--sizes": sizes,
            "--budget": budget,
            "--pairs": pairs,
            "--compiles": compiles,
            "--metrics-only": metrics_only or None,
            "--x64/--no-x64": x64,
            "--out": out,
            "--threads": None if threads == "1" else threads,
        }
        given = [name for name, value in revision_only.items() if value is not None]
        if given:
            raise ConfigError(
                f"{', '.join(given)} measure revisions now: that is `jitbench ab` (e.g. "
                "jitbench ab --rev main); compare judges two stored runs."
            )
        if base is None or new is None:
            raise ConfigError(
                "compare needs two stored runs (BASE NEW); to measure a revision against "
                "the working tree now, use `jitbench ab --rev BASE`."
            )
    check_gate_outputs(markdown, json_path, html)  # before minutes of measuring or loading
    if threshold is None:
        threshold = INTERLEAVED_THRESHOLD if interleaved else _DEFAULTS.threshold
    # Built once, here, so bad options fail (exit 2) before any file is read.
    thresholds = gate_thresholds(
        threshold=threshold,
        alpha=alpha,
        p_adjust=p_adjust,
        compile_threshold=compile_threshold,
        compile_floor=compile_floor,
        compile_gate=compile_gate,
        fail_on=fail_on,
        metrics_only=metrics_only,
    )
    if interleaved:
        from jitbench.cli.revisions import BUDGET_S, COMPILES, OUT, PAIRS, measure_sides

        err.print(
            "note: measuring revisions moved to `jitbench ab` (the same options: jitbench ab "
            "--rev BASE …); `compare --rev` still works."
        )
        measured_into = out or OUT
        runs_out: Path | None = measured_into
        stored: tuple[Path, Path] | None = None
        cmp, sides = measure_sides(
            rev=rev,
            rev_new=rev_new,
            python_base=python_base,
            python_new=python_new,
            suite=suite,
            keyword=keyword,
            sizes=sizes,
            budget=BUDGET_S if budget is None else budget,
            pairs=PAIRS if pairs is None else pairs,
            compiles=COMPILES if compiles is None else compiles,
            metrics_only=metrics_only,
            threads=threads,
            x64=x64,
            out=measured_into,
            thresholds=thresholds,
        )
    else:
        assert base is not None and new is not None
        runs_out, stored = None, (base, new)
        base_run = load_side(base, disturbed_factor=disturbed_factor)
        new_run = load_side(new, disturbed_factor=disturbed_factor)
        # Two runs of one interleaved comparison (`ab`) are judged on their pairs again.
        judge = compare_interleaved if are_partners(base_run, new_run) else compare
        cmp = judge(base_run, new_run, thresholds=thresholds)
        sides = (base_run, new_run)
    raise typer.Exit(
        finish_gate(
            cmp,
            sides,
            markdown=markdown,
            json_path=json_path,
            html=html,
            changes_only=changes_only,
            wide=wide,
            table_format=table_format,
            allow_inconclusive=allow_inconclusive,
            stored=stored,
            runs_out=runs_out,
        )
    )
