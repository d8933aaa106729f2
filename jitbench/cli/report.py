"""`jitbench report`: render run JSON files as HTML pages plus an index."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from jitbench.cli.common import app, handles_errors, out
from jitbench.cli.options import OutOpt
from jitbench.report import load_runs, write_report


@app.command("report")
@handles_errors
def report_cmd(
    runs: Annotated[
        list[Path], typer.Argument(help="Run JSON files (from `jitbench run`).", show_default=False)
    ],
    out_dir: OutOpt = Path("reports"),
) -> None:
    """Render one or more runs as HTML: a page per run, side by side when several, an index.

    Pages open from disk with no network (plotly.js is written once beside them).
    """
    loaded = load_runs(runs)
    page = write_report(loaded, out_dir)
    out.print(f"report written to {page}")
    out.print(f"index: {out_dir / 'index.html'}")
