"""Options shared by several commands, defined once as Annotated aliases."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated

import typer

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
WideOpt = Annotated[
    bool,
    typer.Option(
        "--wide",
        help="The full table (every column, full intervals) at its natural width, instead "
        "of the compact one that fits the terminal (pipe it to `less -S`).",
    ),
]


class TableFormat(str, enum.Enum):
    """How a command prints its table on stdout."""

    TABLE = "table"
    MARKDOWN = "markdown"
    CSV = "csv"


FormatOpt = Annotated[
    TableFormat,
    typer.Option(
        "--format",
        metavar="table|markdown|csv",
        help="table: for a terminal (plain text when piped, fitted to $COLUMNS); markdown: "
        "a GitHub table; csv: one row per line, raw numbers in seconds, for a spreadsheet "
        "or pandas.",
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
