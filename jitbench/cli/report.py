"""`jitbench report`: render run JSON files as HTML pages plus an index, or print their
tables (the terminal's, markdown or CSV)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from jitbench.cli.common import app, err, escape, handles_errors, kept, out, say, split_list
from jitbench.cli.options import OutOpt, TableFormat
from jitbench.cli.output import console_footers, print_run_table, write_output
from jitbench.errors import ConfigError, ResultsFormatError


@app.command("report", short_help="HTML pages (or markdown) for runs, and the index.")
@handles_errors
def report_cmd(
    runs: Annotated[
        list[Path],
        typer.Argument(
            metavar="RUN.json|OUT",
            help="Run JSON files (from `jitbench run`), or one folder: an output folder "
            "(its runs/ re-rendered into it, each run's page and the index) or a folder of "
            "run files.",
            show_default=False,
        ),
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
        typer.Option(
            "--sizes",
            "-s",
            help="With --markdown or --format: only these sizes, e.g. S,M (the HTML pages "
            "show every size).",
        ),
    ] = None,
    table_format: Annotated[
        TableFormat | None,
        typer.Option(
            "--format",
            metavar="table|wide|markdown|csv",
            help="Print each run's table on stdout instead of writing HTML: table (as `jitbench "
            "run` shows it, fitted to the terminal or $COLUMNS), wide (every column at its "
            "natural width), markdown or csv.",
            case_sensitive=False,
            show_default=False,
        ),
    ] = None,
    merge_processes: Annotated[
        bool,
        typer.Option(
            "--merge-processes",
            help="The files are the processes of one `jitbench run --distributed`: join them "
            "into one run (each case's device labelled with its process, e.g. gpu:8@p1).",
        ),
    ] = False,
) -> None:
    """Render one or more runs as HTML: a page per run, side by side when several, an index.

    Pages open from disk with no network (plotly.js is written once beside them).
    With --markdown, print or write a markdown table per run instead (for a README or a
    CI step summary); with --format, print each run's table as `jitbench run` does.

    Examples:

    \b
    # the HTML page of a run, and the index of reports/
      jitbench report reports/runs/RUN.json
    # every run of an output folder rendered again (its pages and index), as asv publish
      jitbench report reports
    # two runs side by side (two machines, or before and after)
      jitbench report cpu.json gpu.json --out side-by-side/
    # a markdown table of the M cases for a README or $GITHUB_STEP_SUMMARY
      jitbench report reports/runs/RUN.json --markdown - -s M
    # one multi-host run: each process's file joined into one page
      jitbench report host0.json host1.json --merge-processes
    # the terminal table of a run again, 80 columns wide, every column, or as CSV
      COLUMNS=80 jitbench report reports/runs/RUN.json --format table
      jitbench report reports/runs/RUN.json --format wide | less -S
      jitbench report reports/runs/RUN.json --format csv > run.csv
    """
    if markdown is not None and table_format is not None:
        raise ConfigError(
            "--markdown and --format both choose what report prints; give one: --format "
            "markdown|csv|table prints on stdout, --markdown FILE writes markdown to FILE."
        )
    chosen = tuple(split_list([sizes], "--sizes")) if sizes is not None else ()
    if chosen and markdown is None and table_format is None:
        raise ConfigError(
            "-s filters the tables of --markdown and --format; the HTML pages show every "
            "size: drop -s, or add --format or --markdown."
        )
    from jitbench.results import OutputLayout, load_run

    folders = [p for p in runs if p.is_dir() and not p.is_symlink()]  # a link: refused
    if folders and len(runs) > 1:
        raise ConfigError(
            f"{str(folders[0])!r} is a folder: pass run files, or one folder alone (an "
            "output folder to render again, or a folder of run files)."
        )
    from jitbench.report.summary import run_files

    from_folder = bool(folders)
    if from_folder:
        folder = folders[0]
        if OutputLayout(folder).runs_dir.is_dir() and out_dir == Path("reports"):
            out_dir = folder  # `jitbench report OUT`: OUT's pages and index again
    paths = run_files(runs)  # each file once (by inode), a folder's *.json and runs/*.json
    loaded = []
    for path in list(paths):
        try:
            loaded.append(load_run(path))
        except ResultsFormatError as exc:
            if not from_folder:
                raise
            paths.remove(path)  # found in the folder: the index lists it as broken
            err.print(f"[yellow]warning:[/] left out {escape(str(path))}: {escape(str(exc))}")
    if not loaded:
        raise ResultsFormatError(f"no valid run in {str(runs[0])!r}; see the warnings above.")
    if merge_processes:
        from jitbench.results.merge import merge_processes as merge

        loaded = [merge(loaded)]
    if chosen:
        from jitbench.render.run_table import check_sizes

        check_sizes(loaded, chosen)
    if table_format is not None:
        for run in loaded:
            wide = table_format is TableFormat.WIDE
            print_run_table(run, wide=wide, table_format=table_format.printed, sizes=chosen)
            if table_format.terminal:
                for line in console_footers(run):
                    say(f"[dim]{escape(line)}[/]")
        return
    if markdown is not None:
        from jitbench.render.run_markdown import run_markdown

        text = "\n".join(run_markdown(run, sizes=chosen) for run in loaded)
        write_output(Path(markdown), text)
        if markdown != "-":
            out.print(f"markdown written to {escape(markdown)}", soft_wrap=True)
        return
    from jitbench.report import write_index, write_report, write_run_page  # plotly, jinja2
    from jitbench.results import check_run_copies

    # Never replace a different run stored under the same id (an older partial copy, or a
    # file that merely claims a stored run's id): refused before anything is written.
    OutputLayout(out_dir).ensure_writable()
    sources: list[Path | None] = [None] if merge_processes else list(paths)
    check_run_copies(list(zip(loaded, sources, strict=True)), out_dir)
    if from_folder and not merge_processes:  # each run's page, no page of them all
        for run in loaded:
            write_run_page(run, out_dir)
        page = write_index(out_dir, fresh=loaded)
    else:
        page = write_report(loaded, out_dir)
    kept(f"report written to {page}")
    out.print(f"report written to {escape(str(page))}", soft_wrap=True)
    out.print(f"index: {escape(str(OutputLayout(out_dir).index))}", soft_wrap=True)
