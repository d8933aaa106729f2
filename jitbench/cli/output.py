"""Output a command writes besides the terminal: files or stdout ('-'), and a comparison
printed and written the same way by `compare` and `run --baseline`."""

from __future__ import annotations

import sys
from pathlib import Path

from jitbench.cli.common import err, escape, out
from jitbench.errors import OutputError
from jitbench.gate import Comparison
from jitbench.render import comparison as compare_render
from jitbench.results import write_text_atomic


def write_output(path: Path, text: str) -> None:
    """Write `text` to `path`, or to stdout when path is '-'."""
    if str(path) == "-":
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()
        return
    if path.is_dir():
        raise OutputError(f"{str(path)!r} is a folder; give a file name.")
    write_text_atomic(path, text)


def render_comparison(
    cmp: Comparison,
    *,
    markdown: Path | None = None,
    json_path: Path | None = None,
    all_rows: bool = True,
) -> None:
    """Print the comparison and write the requested files (shared with `run --baseline`)."""
    to_stdout = (str(markdown) == "-") or (str(json_path) == "-")
    console = err if to_stdout else out  # keep stdout clean for the machine-readable output
    console.print(compare_render.comparison_report(cmp, all_rows=all_rows))
    if (warning := compare_render.inconclusive_warning(cmp)) is not None:
        err.print(f"[yellow]warning:[/] {escape(warning)}")
    for line in cmp.warnings:  # a run compared with itself, or nothing in common
        err.print(f"[yellow]warning:[/] {escape(line)}")
    if markdown is not None:
        write_output(markdown, compare_render.comparison_markdown(cmp))
    if json_path is not None:
        write_output(json_path, cmp.to_json())
