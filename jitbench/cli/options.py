"""Options shared by several commands, defined once as Annotated aliases."""

from __future__ import annotations

import copy
import enum
from pathlib import Path
from typing import Annotated, Any, get_args

import typer

from jitbench.gate import INTERLEAVED_THRESHOLD, Thresholds

_DEFAULTS = Thresholds()

SuiteOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--suite",
        metavar="PATH",
        help="Suite file or folder, or npbench:PATH for an NPBench clone (repeatable). "
        "Default: ./suites, or the default suite installed with jitbench when there is none.",
        show_default=False,
    ),
]
KeywordOpt = Annotated[
    str | None,
    typer.Option(
        "-k", metavar="EXPR", help="Select by name substring or tag: 'elementwise and not selu'."
    ),
]
OutOpt = Annotated[
    Path,
    typer.Option(
        "--out", metavar="DIR", help="Output folder: run JSON under runs/, HTML pages, index."
    ),
]
ThreadsOpt = Annotated[
    str,
    typer.Option(
        "--threads",
        metavar="N|all",
        help="Cores the measured code gets: the process is pinned to N cores and NumPy's "
        "BLAS/OpenMP pools get N threads, so NumPy and XLA run on the same cores. 'all' "
        "leaves the libraries' own thread pools as they are. Default 1: on a shared machine "
        "a multithreaded BLAS call competes with every other process, and its spinning "
        "worker threads slow the next call, so one thread is the reproducible, comparable "
        "choice.",
        show_default=True,
    ),
]


class TableFormat(str, enum.Enum):
    """How a command prints its table on stdout: `wide` is the terminal table with every
    column and full intervals at its natural width (`run`, `report`, `compare`, `ab`)."""

    TABLE = "table"
    WIDE = "wide"
    MARKDOWN = "markdown"
    CSV = "csv"

    @property
    def terminal(self) -> bool:
        """The terminal's table, compact or wide (not markdown or CSV)."""
        return self in (TableFormat.TABLE, TableFormat.WIDE)

    @property
    def printed(self) -> TableFormat:
        """The format a printer takes with `wide` apart: the wide table is a table."""
        return TableFormat.TABLE if self is TableFormat.WIDE else self


FormatOpt = Annotated[
    TableFormat,
    typer.Option(
        "--format",
        metavar="table|wide|markdown|csv",
        help="table: for a terminal (compact, plain text when piped, fitted to $COLUMNS); "
        "wide: every column and full intervals at the natural width (pipe it to `less -S`); "
        "markdown: a GitHub table; csv: one row per line, raw numbers in seconds, for a "
        "spreadsheet or pandas.",
        case_sensitive=False,
    ),
]

AllowInconclusiveOpt = Annotated[
    bool,
    typer.Option(
        "--allow-inconclusive",
        help="Pass the gate (exit 0) even when it is inconclusive: a large change too few "
        "samples could test, or a partial (interrupted) run on either side. Without it an "
        "inconclusive gate exits 4, never 0.",
    ),
]


# --- the regression gate's options (`compare`, `ab`), in the "Gate" and "Output" panels ---

ThresholdOpt = Annotated[
    float | None,
    typer.Option(
        "--threshold",
        metavar="FACTOR",
        rich_help_panel="Gate",
        help="Run-time factor: new/base median beyond it is a large change "
        f"[default: {_DEFAULTS.threshold}; {INTERLEAVED_THRESHOLD} interleaved]",
        show_default=False,
    ),
]
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


CompileGateOpt = Annotated[
    bool,
    typer.Option(
        "--compile-gate/--no-compile-gate",
        rich_help_panel="Gate",
        help="Whether a compile-time regression fails the gate (it is reported either way).",
    ),
]
FailOnOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--fail-on",
        rich_help_panel="Gate",
        metavar="WHAT",
        help="Also fail on 'program': a compiled program that moved past the tolerances "
        "(bytes accessed or flops +5 %, temp or peak memory +10 %, a new recompile, "
        "more fusions); program changes are reported either way.",
    ),
]
ChangesOnlyOpt = Annotated[
    bool,
    typer.Option(
        "--changes-only",
        rich_help_panel="Output",
        help="Leave unchanged rows out of the table.",
    ),
]


def in_panel(option: Any, panel: str) -> Any:
    """The Annotated option alias `option` shown under `panel` in `--help` (a command
    whose options are grouped; the alias itself stays as it is for the others)."""
    kind, info = get_args(option)
    moved = copy.copy(info)
    moved.rich_help_panel = panel
    return Annotated[kind, moved]


SELECTION = "Selection"
MEASURING = "Measuring"
SelectSuiteOpt = in_panel(SuiteOpt, SELECTION)
SelectKeywordOpt = in_panel(KeywordOpt, SELECTION)
MeasureThreadsOpt = in_panel(ThreadsOpt, MEASURING)
GateAllowInconclusiveOpt = in_panel(AllowInconclusiveOpt, "Gate")
OutputFormatOpt = in_panel(FormatOpt, "Output")
ClockOpt = Annotated[
    str,
    typer.Option(
        "--clock",
        metavar="wall|cpu",
        rich_help_panel=MEASURING,
        help="What a sample counts: elapsed time (wall), or each side's CPU time (cpu, CPU "
        "devices only): other processes on the core then barely move the ratios, for "
        "gates on shared runners.",
    ),
]
