"""`jitbench report`: render run JSON files as HTML pages plus an index, or as markdown."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from jitbench.cli.common import app, handles_errors, out
from jitbench.cli.options import OutOpt
from jitbench.cli.output import write_output
from jitbench.render.run_markdown import run_markdown
from jitbench.report import load_runs, write_report
from jitbench.results import OutputLayout, check_run_copies


@app.command("report")
@handles_errors
def report_cmd(
    runs: Annotated[
        list[Path], typer.Argument(help="Run JSON files (from `jitbench run`).", show_default=False)
    ],
    out_dir: OutOpt = Path("reports"),
    markdown: Annotated[
        str | None,
        typer.Option(
            "--markdown",
            metavar="FILE",
            help="Write each run as a markdown table to FILE ('-' for stdout) instead of HTML.",
        ),
    ] = None,
    sizes: Annotated[
        str | None,
        typer.Option("--sizes", "-s", help="With --markdown: only these sizes, e.g. S,M."),
    ] = None,
) -> None:
    """Render one or more runs as HTML: a page per run, side by side when several, an index.

    Pages open from disk with no network (plotly.js is written once beside them).
    With --markdown, print or write a markdown table per run instead (for a README or a
    CI step summary).
    """
    loaded = load_runs(runs)
    if markdown is not None:
        chosen = tuple(s.strip() for s in sizes.split(",") if s.strip()) if sizes else ()
        text = "\n".join(run_markdown(run, sizes=chosen) for run in loaded)
        write_output(Path(markdown), text)
        if markdown != "-":
            out.print(f"markdown written to {markdown}")
        return
    # Never replace a different run stored under the same id (an older partial copy, or a
    # file that merely claims a stored run's id): refused before anything is written.
    OutputLayout(out_dir).ensure_writable()
    check_run_copies(list(zip(loaded, runs, strict=True)), out_dir)
    page = write_report(loaded, out_dir)
    out.print(f"report written to {page}")
    out.print(f"index: {OutputLayout(out_dir).index}")
