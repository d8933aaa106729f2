"""Options shared by several commands, defined once as Annotated aliases."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

SuiteOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--suite",
        help="Suite file or folder (repeatable). Default: ./suites.",
        show_default=False,
    ),
]
KeywordOpt = Annotated[
    str | None,
    typer.Option("-k", help="Select by name substring or tag: 'elementwise and not selu'."),
]
OutOpt = Annotated[Path, typer.Option("--out", help="Output folder for run JSON and HTML.")]
