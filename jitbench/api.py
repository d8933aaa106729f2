"""The Python entry points that mirror the CLI: `run`, `load_run`, `compare`, …

`run` is everything `jitbench run` does below the command line: discover and select, or
find a partial run's workloads again; check the settings and the output folder before
measuring; measure; write the run file as it goes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from jitbench.config import RunConfig
from jitbench.errors import ConfigError, SuiteError
from jitbench.gate import INTERLEAVED_THRESHOLD, Comparison, Thresholds, compare_interleaved
from jitbench.results import OutputLayout, Run, ensure_writable_dir, load_run, save_run
from jitbench.results.model import new_run_id
from jitbench.runner.duet import DuetEvent, DuetPlan, DuetResult, run_duet
from jitbench.runner.events import RunEvent, RunInterrupted, SuiteSkipped
from jitbench.runner.plan import changed_settings, settings_for_resume, workloads_for_resume
from jitbench.runner.scheduler import run_workloads
from jitbench.runner.sides import comparison_sides
from jitbench.runner.signals import signals_ignored
from jitbench.suite.discovery import Registry, discover
from jitbench.suite.workload import Workload


def select_workloads(
    registry: Registry, names: Sequence[str] = (), keyword: str | None = None
) -> list[Workload]:
    """Workloads to run; raises SuiteError when nothing is left to run."""
    chosen = registry.select(names, keyword)
    if not chosen:
        failed = len(registry.errors)
        broken = f" ({failed} suite file(s) failed to import)" if failed else ""
        what = f" matching -k {keyword!r}" if keyword else ""
        raise SuiteError(
            f"no workloads{what} to run{broken}; `jitbench list` shows what was found."
        )
    return chosen


def run_file(out: str | os.PathLike[str], run_id: str) -> Path:
    """Where a run is written in an output folder: OUT/runs/RUN_ID.json."""
    return OutputLayout(Path(out)).run_json(run_id)


def run(
    names: Sequence[str] = (),
    *,
    suites: Sequence[str | Path] = (),
    keyword: str | None = None,
    config: RunConfig | None = None,
    resume: str | os.PathLike[str] | None = None,
    out: str | os.PathLike[str] | None = None,
    on_event: Callable[[RunEvent], None] | None = None,
    checkpoint: Callable[[Run], None] | None = None,
) -> Run:
    """Discover suites, select workloads and measure them; the same path as `jitbench run`.

    Args:
        names: workloads to run (default: all discovered); `keyword` selects like `-k`.
        suites: suite files or folders (default ./suites). A file that fails to import is
            reported as a SuiteSkipped event and left out.
        config: what to measure and how (default `RunConfig()`).
        resume: a partial run file to finish with the settings recorded in it; the cases it
            holds are not measured again and the file is rewritten as cases finish. Only
            `config.isolate` and `config.timeout_s` may be given with it.
        out: an output folder: the run is written to `run_file(out, run_id)` after every
            case and at the end (with `resume`, the resumed file is).
        on_event: receives progress events (`jitbench.runner.events`).
        checkpoint: receives the partial run after every case.

    Raises:
        SuiteError: a missing suite path, an unknown workload, nothing to run, or a resumed
            run whose workloads cannot be found again.
        ConfigError: unknown sizes or devices; settings given with `resume`; a complete
            run to resume.
        ResultsFormatError: `resume` is not a readable jitbench run.
        OutputError: the run file's folder cannot be written (before anything is measured).
        RunInterrupted: on Ctrl-C or a stop signal; it carries the partial run and, when
            a file was being written, where the partial run was saved (`saved_to`).
    """
    emit = on_event or (lambda _e: None)
    previous: Run | None = None
    path: Path | None
    if resume is not None:
        given = [
            flag
            for flag, value in (("NAMES", names), ("--suite", suites), ("-k", keyword))
            if value
        ]
        previous, config, workloads = _resumable(Path(resume), config, given=given)
        run_id, path = previous.run_id, Path(resume)
    else:
        registry = discover(suites)
        for error in registry.errors:
            emit(SuiteSkipped(str(error)))
        workloads = select_workloads(registry, names, keyword)
        run_id = new_run_id()
        path = run_file(out, run_id) if out is not None else None
    if path is not None:
        ensure_writable_dir(path.parent)  # fail before measuring, not after an hour

    def save_partial(partial: Run) -> None:
        if path is not None:
            save_run(partial, path)
        if checkpoint is not None:
            checkpoint(partial)

    try:
        result = run_workloads(
            workloads,
            config,
            on_event=emit,
            checkpoint=save_partial,
            run_id=run_id,
            resume=previous,
        )
    except RunInterrupted as exc:
        if path is None:
            raise
        _save_shielded(exc.partial, path)
        exc.saved_to = path
        raise
    if path is not None:
        _save_shielded(result, path)
    return result


def _resumable(
    path: Path, requested: RunConfig | None, *, given: list[str]
) -> tuple[Run, RunConfig, list[Workload]]:
    """The partial run at `path`, the settings to finish it with and its workloads; checked
    in this order, before anything is measured or written. `given` names the selection
    options passed along (NAMES, --suite, -k), which a resume refuses like new settings."""
    given = given + (changed_settings(requested) if requested is not None else [])
    if given:
        raise ConfigError(
            f"--resume finishes a run with the settings recorded in it; drop {', '.join(given)}."
        )
    previous = load_run(path)
    if previous.complete:
        raise ConfigError(
            f"{str(path)!r} is a complete run; nothing to resume. Start a new run without --resume."
        )
    config = settings_for_resume(previous, requested)
    return previous, config, workloads_for_resume(previous)


def _save_shielded(run: Run, path: Path) -> None:
    with signals_ignored():  # a second Ctrl-C must not cut the save short
        save_run(run, path)


def compare_revisions(
    *,
    rev: str | None = None,
    rev_new: str | None = None,
    python_base: str | None = None,
    python_new: str | None = None,
    suites: Sequence[str] = (),
    keyword: str | None = None,
    config: RunConfig | None = None,
    plan: DuetPlan | None = None,
    thresholds: Thresholds | None = None,
    out: str | os.PathLike[str] = "reports/compare",
    on_event: Callable[[DuetEvent], None] | None = None,
    cwd: str | os.PathLike[str] = ".",
) -> tuple[Comparison, DuetResult]:
    """Everything `jitbench compare --rev` does below the command line: check the options
    and the output folder, prepare both sides (a worktree per revision, or two Pythons),
    measure them interleaved (`runner.duet`), save both runs under `out` after every case
    (an interrupted comparison keeps what it measured), and judge them on their paired
    rounds (`gate.compare_interleaved`).

    Raises:
        ConfigError: bad options, not a git repository, an unknown revision, …
        DuetError: a side's worker could not start or died.
    """
    from jitbench.suite.discovery import compile_keyword

    config = config or RunConfig(sizes=("S",))
    thresholds = thresholds or Thresholds(threshold=INTERLEAVED_THRESHOLD)
    matcher = compile_keyword(keyword) if keyword else None
    layout = OutputLayout(ensure_writable_dir(out))
    ensure_writable_dir(layout.runs_dir)

    def select(name: str, tags: Sequence[str]) -> bool:
        return matcher is None or bool(matcher(_Named(name, tuple(tags))))

    def checkpoint(base: Run, new: Run) -> None:
        for run in (base, new):
            _save_shielded(run, layout.run_json(run.run_id))

    with comparison_sides(
        rev=rev,
        rev_new=rev_new,
        python_base=python_base,
        python_new=python_new,
        suites=suites,
        cwd=Path(cwd).resolve(),
    ) as (base_side, new_side):
        result = run_duet(
            base_side,
            new_side,
            config,
            plan=plan,
            select_workload=select,
            on_event=on_event,
            checkpoint=checkpoint,
        )
    return compare_interleaved(result.base, result.new, thresholds=thresholds), result


class _Named:
    """What a -k expression reads of a workload: its name and tags."""

    def __init__(self, name: str, tags: tuple[str, ...]) -> None:
        self.name, self.tags = name, tags
