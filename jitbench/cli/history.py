"""`jitbench history`: each case × mode's speedup across runs in the terminal, with the
steps it took (change points) and the `jitbench bisect` line that finds each one's commit.
The series and steps are the history page's (`report.history.history_series`)."""

from __future__ import annotations

import enum
import json
from pathlib import Path
from typing import Annotated

import typer

from jitbench.cli.common import app, err, escape, handles_errors, say, split_list, write_plain
from jitbench.cli.options import KeywordOpt
from jitbench.errors import ConfigError, unknown_name_message


class HistoryFormat(str, enum.Enum):
    TEXT = "text"
    MARKDOWN = "markdown"
    JSON = "json"


@app.command("history", short_help="Each case's speedup across runs, with where it stepped.")
@handles_errors
def history_cmd(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="[OUT|RUN.json]...",
            help="Run JSON files, or folders of them (a `jitbench run --out` folder). "
            "Default: reports.",
            show_default=False,
        ),
    ] = None,
    keyword: KeywordOpt = None,
    modes: Annotated[
        list[str] | None,
        typer.Option(
            "--modes", "-m", metavar="MODES", help="JAX modes to show, e.g. jit (default: all)."
        ),
    ] = None,
    devices: Annotated[
        list[str] | None,
        typer.Option(
            "--device",
            metavar="DEVICE",
            help="Only cases on these devices, as the runs label them (e.g. cpu:0).",
        ),
    ] = None,
    output_format: Annotated[
        HistoryFormat,
        typer.Option(
            "--format",
            metavar="text|markdown|json",
            help="text: a line per series and per step; markdown: a table; json: the "
            "series with their runs' figures and steps.",
            case_sensitive=False,
        ),
    ] = HistoryFormat.TEXT,
) -> None:
    """Each case × JAX mode's speedup over NumPy across runs, oldest first (by start
    time): first → last value and how many runs, and for each step the series took (a
    change point, as the history page marks it) its size with its 95 % interval, the run
    after it and the `jitbench bisect` line that finds its commit between the two runs'
    recorded commits.

    Examples:

    \b
    # every series of the runs in reports/, and where they stepped
      jitbench history reports
    # jit only, the selu cases, as JSON
      jitbench history reports -k selu -m jit --format json
    """
    from types import SimpleNamespace

    from jitbench import formatting as fmt
    from jitbench.config import JAX_MODES
    from jitbench.report import history
    from jitbench.report.summary import summaries_of
    from jitbench.suite.discovery import compile_keyword

    known = [m.value for m in JAX_MODES]
    wanted = split_list(modes, "--modes") or known
    unknown = [m for m in wanted if m not in known]
    if unknown:
        raise ConfigError(
            f"unknown mode {unknown[0]!r} for --modes; the history shows {', '.join(known)}."
        )
    matcher = compile_keyword(keyword) if keyword else None
    read = summaries_of(paths or [Path("reports")])
    for note in read.notes:  # a broken file in a folder, a copy of a run counted once
        err.print(f"[yellow]warning:[/] {escape(note)}")
    hruns = history.history_runs(read.runs)
    chosen = split_list(devices, "--device")
    every = history.history_series(hruns)
    known_devices = sorted({s.key[2] for s in every})
    for device in chosen:
        if known_devices and device not in known_devices:
            raise ConfigError(
                unknown_name_message("device", device, known_devices, known_as="the runs have")
            )
    series = [
        s
        for s in every
        if s.mode.value in wanted
        and (not chosen or s.key[2] in chosen)
        and (matcher is None or matcher(SimpleNamespace(name=s.workload, tags=())))
    ]
    if output_format is HistoryFormat.JSON:
        runs = [
            {"number": h.number, "run_id": h.run_id, "commit": h.commit, "date": h.date}
            for h in hruns
        ]
        write_plain(json.dumps({"runs": runs, "series": [s.to_json() for s in series]}) + "\n")
        return
    several = len({s.key[2:] for s in series}) > 1

    def name(s: history.Series) -> str:
        where = f" {s.key[2]} {s.key[3]}" if several else ""
        return f"{s.workload} {s.size}{where} {s.mode.value}"

    def span(s: history.Series) -> str:
        first, last = s.points[0].value, s.points[-1].value
        return f"{fmt.ratio(first)} → {fmt.ratio(last)}, {len(s.points)} runs"

    def step_line(s: history.Series, found: history.HistoryStep) -> str:
        r = found.step.ratio
        after = s.run_of(found.after)
        commit = f"commit {after.commit.split(' ')[0][:12]}" if after.commit else "no commit"
        command = found.bisect_command(s.workload, s.size) or history.NO_COMMIT
        return (
            f"{name(s)}: {fmt.speedup_step(r.value, r.low, r.high)} at run {after.number} "
            f"(id {after.run_id}, {commit}) · {command}"
        )

    n_steps = sum(len(s.steps) for s in series)
    if output_format is HistoryFormat.MARKDOWN:
        lines = ["| series | speedup (first → last, runs) | steps |", "| --- | --- | --- |"]
        for s in series:
            steps = "<br>".join(fmt.md_escape(step_line(s, f)) for f in s.steps) or "—"
            lines.append(f"| {fmt.md_escape(name(s))} | {span(s)} | {steps} |")
        write_plain("\n".join(lines) + "\n")
        return
    if not series:
        say(f"{len(hruns)} runs, no series{' matching the selection' if hruns else ''}.")
        return
    say(
        f"{len(hruns)} runs, oldest first; {len(series)} speedup series, "
        f"{n_steps} step{'' if n_steps == 1 else 's'} found"
    )
    lines = [f"  {name(s)}: {span(s)}" for s in series]
    if n_steps:
        lines += ["steps:"] + [step_line(s, found) for s in series for found in s.steps]
    write_plain("\n".join(lines) + "\n")
