"""Output a command writes besides the terminal: files or stdout ('-'), and a comparison
printed and written the same way by `compare` and `ab` (`finish_gate`)."""

from __future__ import annotations

import errno
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jitbench.cli.common import err, escape, out, print_fitted, say, write_plain
from jitbench.cli.options import TableFormat
from jitbench.errors import OutputError

if TYPE_CHECKING:
    from jitbench.gate import Comparison, Thresholds


def check_output_file(path: Path | None) -> None:
    """Before anything is measured or read: an output file (`--markdown`, `--json`,
    `--html`) can be written where it is asked for. None and '-' (stdout) always can.

    Raises:
        OutputError: the path is a folder, a folder on its way is a file, or the nearest
            folder that exists is not writable.
    """
    if path is None or str(path) == "-":
        return
    if path.is_dir():
        raise OutputError(f"{str(path)!r} is a folder; give a file name.")
    folder = next((p for p in path.parents if p.exists()), Path("."))
    if not folder.is_dir():
        raise OutputError(
            f"cannot write {str(path)!r}: {str(folder)!r} is a file, not a folder; give a "
            "path whose folders are folders."
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(
            f"cannot write {str(path)!r}: folder {str(folder)!r} is not writable; give "
            "another path."
        )
    if _is_run_file(path):
        raise OutputError(
            f"{str(path)!r} is a jitbench run file, which an output never replaces (`compare "
            "base.json new.json --json base.json` lost the baseline); give another path."
        )


_RUN_SCHEMA = re.compile(rb'"schema"\s*:\s*"jitbench\.run"')


def _is_run_file(path: Path) -> bool:
    """Whether `path` (where a link leads) is a regular file that holds a jitbench run."""
    try:
        if not path.is_file():
            return False
        with open(path, "rb") as fh:
            return _RUN_SCHEMA.search(fh.read(4096)) is not None
    except OSError:
        return False


#: Paths that name a file descriptor this process already has open: written to it, not
#: reopened (reopening a redirected stdout would truncate it, `>>` and earlier output too).
_OPEN_STREAM = re.compile(r"/dev/(?:std(out|err)|fd/(\d+))|/proc/self/fd/(\d+)")


def write_output(path: Path, text: str) -> None:
    """Write `text` where the user named it (`--json`, `--markdown`): stdout for '-' or
    /dev/stdout, another open stream for /dev/stderr or /dev/fd/N; through a symbolic
    link, a named pipe or a device in place, as a shell's `> path` would (a rename would
    replace it); any other path atomically, by a rename."""
    stream = _OPEN_STREAM.fullmatch(str(path))
    if str(path) == "-" or (stream and (stream[1] == "out" or "1" in (stream[2], stream[3]))):
        write_plain(text if text.endswith("\n") else text + "\n")
        return
    if stream:
        named = stream[2] or stream[3]
        fd = int(named) if named else 2  # /dev/stderr
        _write_in_place(path, text.encode("utf-8"), fd=fd)
        return
    check_output_file(path)
    if path.is_symlink() or (path.exists() and not path.is_file()):
        _write_in_place(path, text.encode("utf-8"))
        return
    from jitbench.results import write_text_atomic

    write_text_atomic(path, text, fix="give another path.")


def _write_in_place(path: Path, data: bytes, *, fd: int | None = None) -> None:
    """Write `data` to the open descriptor `fd`, or to `path` opened for writing
    (truncated, created through a dangling link). A named pipe without a reader is refused
    at once rather than waited on.

    Raises:
        OutputError: it cannot be opened or written (ENOSPC on /dev/full, a closed fd).
    """
    owned = fd is None
    try:
        if fd is None:
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK | os.O_CLOEXEC
            fd = os.open(path, flags, 0o666)
            os.set_blocking(fd, True)
        else:
            sys.stderr.flush()
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:
        why = (
            "a named pipe with no reader; start its reader first"
            if exc.errno == errno.ENXIO
            else f"{exc.strerror or exc}; give another path"
        )
        raise OutputError(f"cannot write {str(path)!r}: {why}.") from None
    finally:
        if owned and fd is not None:
            os.close(fd)


def render_comparison(
    cmp: Comparison,
    *,
    markdown: Path | None = None,
    json_path: Path | None = None,
    all_rows: bool = True,
    wide: bool = False,
    table_format: TableFormat = TableFormat.TABLE,
    program_diffs: Mapping[str, str] | None = None,
    diff_paths: Mapping[str, Path] | None = None,
) -> None:
    """Print the comparison and write the requested files (`compare`'s and `ab`'s end).

    The table is the compact one fitted to the terminal, or `wide`; with `table_format`
    markdown or csv, stdout gets that instead and the verdict goes to stderr.
    `program_diffs` and `diff_paths`: the changed
    programs' diffs and the files they were written to (by program key), named after the
    table (their first lines too with `wide`) and in the markdown."""
    from jitbench.gate.program import DIFF_PREVIEW_LINES
    from jitbench.render import comparison as compare_render

    shown_diffs = {k: shown_path(p) for k, p in (diff_paths or {}).items()}

    to_stdout = (
        (str(markdown) == "-") or (str(json_path) == "-") or table_format is not TableFormat.TABLE
    )
    # Keep stdout clean for the machine-readable output.
    console = err if to_stdout else out
    if table_format is TableFormat.MARKDOWN:
        write_plain(compare_render.comparison_markdown(cmp, program_diffs=shown_diffs))
    elif table_format is TableFormat.CSV:
        write_plain(compare_render.comparison_csv(cmp))
    print_fitted(
        lambda width: compare_render.comparison_report(
            cmp, all_rows=all_rows, width=width, wide=wide
        ),
        console=console,
        natural=wide,
    )
    for line in compare_render.program_diff_lines(
        cmp,
        shown_diffs,
        diffs=program_diffs,
        preview=DIFF_PREVIEW_LINES if wide else 0,
    ):
        console.print(escape(line), highlight=False, soft_wrap=True)
    for line in cmp.inconclusive:  # a partial run, changes too few samples could test
        err.print(f"[yellow]warning:[/] {escape(line)}")
    for line in cmp.warnings:  # a run compared with itself, or runs on both sides
        err.print(f"[yellow]warning:[/] {escape(line)}")
    if (reason := cmp.nothing_compared) is not None:
        err.print(f"[yellow]warning:[/] {escape(reason)}")
    if markdown is not None:
        write_output(markdown, compare_render.comparison_markdown(cmp, program_diffs=shown_diffs))
    if json_path is not None:
        write_output(json_path, cmp.to_json())


def check_gate_outputs(markdown: Path | None, json_path: Path | None, html: Path | None) -> None:
    """A gate's output files can be written (`check_output_file`), and --html is a file.

    Raises:
        ConfigError: --html '-'.
        OutputError: a file that cannot be written.
    """
    from jitbench.errors import ConfigError

    if html is not None and str(html) == "-":
        raise ConfigError(
            "--html writes a page and plotly.js beside it, so it needs a file name, not '-'."
        )
    if str(markdown) == "-" and str(json_path) == "-":
        raise ConfigError(
            "--markdown - and --json - would both go to stdout, one after the other, which no "
            "reader can take apart; send one of them to a file."
        )
    for path in (markdown, json_path, html):
        check_output_file(path)


def finish_gate(
    cmp: Comparison,
    sides: Sequence[Any],
    *,
    markdown: Path | None,
    json_path: Path | None,
    html: Path | None,
    changes_only: bool,
    wide: bool,
    table_format: TableFormat,
    allow_inconclusive: bool,
    stored: tuple[Path, Path] | None = None,
    runs_out: Path | None = None,
) -> int:
    """Print and write a gate's comparison (and its page with `html`), with the diffs of
    its changed programs (`gate_program_diffs`: from the `stored` run files, or from the
    runs just measured into `runs_out`), and return its exit code (`gate_exit`): what
    `compare` and `ab` end with."""
    diffs, diff_paths = gate_program_diffs(cmp, sides, stored=stored, runs_out=runs_out)
    render_comparison(
        cmp,
        markdown=markdown,
        json_path=json_path,
        all_rows=not changes_only,
        wide=wide,
        table_format=table_format,
        program_diffs=diffs,
        diff_paths=diff_paths,
    )
    if html is not None:
        from jitbench.report import write_comparison_page  # plotly/jinja2 only when asked

        page = write_comparison_page(list(sides), [cmp], html, program_diffs=diffs)
        (err if str(markdown) == "-" or str(json_path) == "-" else out).print(
            f"comparison page written to {page}"
        )
    return gate_exit(cmp, allow_inconclusive=allow_inconclusive)


#: What `--fail-on` takes besides the timing and compile verdicts that always gate.
FAIL_ON_CHOICES = ("program",)


def gate_thresholds(
    *,
    threshold: float,
    alpha: float,
    p_adjust: str,
    compile_threshold: float,
    compile_floor: float,
    compile_gate: bool,
    fail_on: Sequence[str] | None,
    metrics_only: bool,
) -> Thresholds:
    """The gate's thresholds from `compare`'s and `ab`'s options, built before anything is
    read or measured so that bad options fail at once (exit 2). --metrics-only gates on the
    programs alone: its one cold compile a side is reported, never judged (a busy core
    slows a compile by 1.5x at random).

    Raises:
        ConfigError: an option out of range, or a --fail-on value it does not know.
    """
    from jitbench.gate import Thresholds

    return Thresholds(
        threshold=threshold,
        alpha=alpha,
        compile_threshold=compile_threshold,
        compile_floor_s=compile_floor,
        compile_gates=compile_gate and not metrics_only,
        p_adjust=p_adjust,
        program_gates=metrics_only or fails_on_program(fail_on or []),
    )


def fails_on_program(fail_on: Sequence[str]) -> bool:
    """Whether `--fail-on` asks the program verdict to gate.

    Raises:
        ConfigError: a value it does not know, with those it does.
    """
    from jitbench.errors import ConfigError, unknown_name_message

    for value in fail_on:
        if value not in FAIL_ON_CHOICES:
            raise ConfigError(unknown_name_message("--fail-on value", value, FAIL_ON_CHOICES))
    return "program" in fail_on


def program_diff_files(
    cmp: Comparison,
    base_programs: Mapping[str, str],
    new_programs: Mapping[str, str],
    *,
    beside: Path,
) -> tuple[dict[str, str], dict[str, Path]]:
    """The diffs of the comparison's changed programs (by program key) and the files they
    were written to, in `results.program_diff_folder` beside the new side (`beside`: its
    run file, or its folder); nothing when no program changed."""
    from jitbench.gate.diffs import program_diffs
    from jitbench.results import program_diff_folder, write_program_diffs

    if not any(e.program is not None and e.program.changed for e in cmp.entries):
        return {}, {}
    diffs = program_diffs(cmp, base_programs, new_programs)
    folder = program_diff_folder(beside, cmp.base_run_id, cmp.new_run_id)
    return diffs, write_program_diffs(folder, diffs)


def gate_program_diffs(
    cmp: Comparison,
    sides: Sequence[Any],
    *,
    stored: tuple[Path, Path] | None,
    runs_out: Path | None,
) -> tuple[dict[str, str], dict[str, Path]]:
    """The changed programs' diffs (by program key) and the files they were written to:
    from the programs stored beside the `stored` run files (`compare`), or from those the
    measured runs hold (`ab`, saved under `runs_out`), written beside the new side
    (`results.program_diff_folder`); nothing when no program changed or there is nowhere
    to write."""
    from jitbench.results import OutputLayout, run_programs, side_programs

    if not any(e.program is not None and e.program.changed for e in cmp.entries):
        return {}, {}
    if stored is not None:
        base_path, new_path = stored
        programs = side_programs(base_path), side_programs(new_path)
        beside: Path = new_path
    elif runs_out is not None:
        programs = run_programs(sides[0]), run_programs(sides[1])
        beside = OutputLayout(runs_out).runs_dir
    else:
        return {}, {}
    return program_diff_files(cmp, *programs, beside=beside)


def gate_exit(cmp: Comparison, *, allow_inconclusive: bool = False) -> int:
    """The exit code of a gate: 2 when nothing was compared (it checked nothing: a
    baseline of other workloads, sizes or dtypes), 1 on a regression, 4 when it is
    inconclusive (`Comparison.inconclusive`) unless `allow_inconclusive`, else 0."""
    from jitbench.cli.common import EXIT_FAILED, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_USAGE
    from jitbench.gate import GateOutcome

    outcome = cmp.outcome(allow_inconclusive=allow_inconclusive)
    if outcome is GateOutcome.NOTHING_COMPARED:
        err.print("[red]error:[/] the gate compared nothing, so it checked nothing (exit 2).")
        return EXIT_USAGE
    if outcome is GateOutcome.FAILED:
        return EXIT_FAILED
    if outcome is GateOutcome.INCONCLUSIVE:
        err.print(
            f"[red]error:[/] the gate is inconclusive, so it does not pass (exit "
            f"{EXIT_INCONCLUSIVE}): {escape(cmp.inconclusive[0])} --allow-inconclusive "
            "accepts it."
        )
        return EXIT_INCONCLUSIVE
    return EXIT_OK


def print_run_table(
    run: Any, *, wide: bool, table_format: TableFormat, sizes: Sequence[str] = ()
) -> None:
    """The run's table on stdout in the asked format: for the terminal (compact, fitted to
    its width, or `wide`; plain when piped), markdown or CSV, of the cases of `sizes`
    (every case when empty: the rows are chosen when drawn, so the intervals still borrow
    the whole run's spread). The machine banner (a busy or noisy machine, an unstable
    run) comes first, on stderr for markdown and CSV."""
    from jitbench.render import run_table

    for banner in (run_table.incomplete_banner(run), run_table.machine_banner(run)):
        if banner is not None:
            say(banner) if table_format is TableFormat.TABLE else err.print(banner)
    if table_format is TableFormat.MARKDOWN:
        from jitbench.render.run_markdown import run_markdown

        write_plain(run_markdown(run, sizes=sizes))
    elif table_format is TableFormat.CSV:
        from jitbench.render.run_csv import run_csv

        write_plain(run_csv(run, sizes=sizes))
    else:
        print_fitted(
            lambda width: (
                run_table.summary_table(run, sizes=sizes)
                if wide
                else run_table.compact_table(run, width, sizes=sizes)
            ),
            natural=wide,
        )
    out.file.flush()


def console_footers(run: Any) -> list[str]:
    """The lines under the table: why a mode was skipped, what its speedup marks mean,
    then a quick run's caveat, or how many measurements stayed noisy and what the speedup
    intervals claim."""
    from jitbench.render import run_table

    settings = run.config.settings
    lines = run_table.skipped_footers(run)
    if (legend := run_table.mark_legend(run)) is not None:
        lines.append(legend)
    if (clock := run_table.clock_footer(run)) is not None:
        lines.append(clock)
    if settings is not None and settings.quick:
        return [*lines, "quick run: few samples, rough figures."]
    for footer in (run_table.noisy_footer(run), run_table.outlier_footer(run)):
        if footer is not None:
            lines.append(footer)
    lines.append(run_table.interval_footer(run))
    return lines


def shown_path(path: Path | str) -> str:
    """`path` as the user would type it: relative to the working folder when it is inside
    it (the run made it absolute, since a suite may change the working folder); absolute
    where no relative path exists (a workload deleted the working folder)."""
    import os

    try:
        rel = os.path.relpath(path)
    except (ValueError, OSError):  # another drive (Windows); no working folder any more
        return str(Path(path).absolute()) if Path(path).is_absolute() else str(path)
    return str(path) if rel.startswith("..") else rel
