"""Options shared by several commands, defined once as Annotated aliases."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

SuiteOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--suite",
        help="Suite file or folder, or npbench:PATH for an NPBench clone (repeatable). "
        "Default: ./suites.",
        show_default=False,
    ),
]
KeywordOpt = Annotated[
    str | None,
    typer.Option("-k", help="Select by name substring or tag: 'elementwise and not selu'."),
]
OutOpt = Annotated[Path, typer.Option("--out", help="Output folder for run JSON and HTML.")]
ThreadsOpt = Annotated[
    str,
    typer.Option(
        "--threads",
        help="Cores the measured code gets: the process is pinned to N cores and NumPy's "
        "BLAS/OpenMP pools get N threads, so NumPy and XLA run on the same cores. 'all' "
        "leaves the libraries' own thread pools as they are. Default 1: on a shared machine "
        "a multithreaded BLAS call competes with every other process, and its spinning "
        "worker threads slow the next call, so one thread is the reproducible, comparable "
        "choice.",
        show_default=True,
    ),
]
