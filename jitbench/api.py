"""The Python entry points that mirror the CLI: `run`, `load_run`, `compare`, …

`run` is everything `jitbench run` does below the command line: discover and select, or
find a partial run's workloads again; check the settings and the output folder before
measuring; measure; write the run file as it goes.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from jitbench.ab.duet import DuetEvent, DuetPlan, DuetResult, Side, run_duet
from jitbench.ab.sides import comparison_sides
from jitbench.config import Mode, RunConfig, SamplingPlan, check_budget, check_count
from jitbench.errors import ConfigError, OutputError
from jitbench.gate import (
    INTERLEAVED_THRESHOLD,
    Comparison,
    Thresholds,
    compare,
    compare_interleaved,
)
from jitbench.gate.bisect import (
    BisectEvent,
    BisectState,
    Endpoints,
    Measured,
    Outcome,
    Step,
    StepResult,
    Target,
    bounds,
    timing_side,
)
from jitbench.measure.devices import share_gpu_memory
from jitbench.results import (
    Case,
    OutputLayout,
    Run,
    check_run_copy,
    ensure_writable_dir,
    load_run,
    run_file_lock,
    save_run,
)
from jitbench.results.model import new_run_id
from jitbench.runner import overlap
from jitbench.runner.events import KernelsLeftOut, RunEvent, RunInterrupted, SuiteSkipped
from jitbench.runner.plan import changed_settings, settings_for_resume
from jitbench.runner.processes import jax_processes_at_once
from jitbench.runner.scheduler import run_workloads
from jitbench.runner.signals import signals_ignored
from jitbench.runner.worker import Worker, start_worker
from jitbench.suite.discovery import discover
from jitbench.suite.selection import workloads_for_resume
from jitbench.suite.workload import Workload


def run_file(out: str | os.PathLike[str], run_id: str) -> Path:
    """Where a run is written in an output folder: OUT/runs/RUN_ID.json."""
    return OutputLayout(Path(out)).run_json(run_id)


def output_folder(
    out: str | os.PathLike[str] | None, resume: str | os.PathLike[str] | None
) -> Path | None:
    """The folder a run's page and index go to: `out` when given; for a resumed run kept
    in an output folder (ROOT/runs/ID.json), that folder, so the run stays in one place
    and its index stays fresh; else None (the caller's default)."""
    if out is not None:
        return Path(out)
    if resume is not None and (layout := OutputLayout.of_run_file(resume)) is not None:
        return layout.root
    return None


def _names(value: object, what: str) -> tuple[str, ...]:
    """`names` or `suites` as a tuple: one str or path is one item, not its letters."""
    if isinstance(value, (str, os.PathLike)):
        return (os.fspath(value),)
    if isinstance(value, Sequence) and all(isinstance(v, (str, os.PathLike)) for v in value):
        return tuple(os.fspath(v) for v in value)
    raise ConfigError(f"{what} takes names or paths (str), got {value!r}.")


def run(
    names: Sequence[str] | str = (),
    *,
    suites: Sequence[str | Path] | str | Path = (),
    keyword: str | None = None,
    config: RunConfig | None = None,
    resume: str | os.PathLike[str] | None = None,
    out: str | os.PathLike[str] | None = None,
    on_event: Callable[[RunEvent], None] | None = None,
    checkpoint: Callable[[Run], None] | None = None,
    allow_changed_suites: bool = False,
) -> Run:
    """Discover suites, select workloads and measure them; the same path as `jitbench run`.

    Every argument is checked before anything is measured or written.

    Args:
        names: workloads to run (default: all discovered); `keyword` selects like `-k`.
        suites: suite files or folders (default ./suites). A file that fails to import is
            reported as a SuiteSkipped event and left out; what a scheme suite leaves out
            without an error (an NPBench kernel with no JAX version), as KernelsLeftOut.
        config: what to measure and how (default `RunConfig()`).
        resume: a partial run file to finish with the settings recorded in it; the cases it
            holds are not measured again and the file is rewritten as cases finish. Only
            `config.isolate` and `config.timeout_s` may be given with it. Resuming imports
            the suite files the run file names, which runs their code: resume only files
            you trust. A suite file changed since the run started is refused unless
            `allow_changed_suites`.
        out: an output folder: the run is written to `run_file(out, run_id)` after every
            case and at the end (with `resume`, the resumed file is; `out` is then where
            its page goes, checked to be writable and not to hold another version of the
            run).
        on_event: receives progress events (`jitbench.runner.events`).
        checkpoint: receives the partial run after every case.

    Raises:
        SuiteError: a missing suite path, an unknown workload, nothing to run, or a resumed
            run whose workloads cannot be found again or whose suite files changed.
        ConfigError: bad arguments, unknown sizes or devices; settings given with
            `resume`; a complete run to resume.
        ResultsFormatError: `resume` is not a readable jitbench run.
        OutputError: the output folder cannot be written (before anything is measured).
        RunInterrupted: on Ctrl-C or a stop signal; it carries the partial run and, when
            a file was being written, where the partial run was saved (`saved_to`).
    """
    emit = on_event or (lambda _e: None)
    names = _names(names, "names")
    suites = _names(suites, "suites")
    if keyword is not None and not isinstance(keyword, str):
        raise ConfigError(f"keyword takes a -k expression (str), got {keyword!r}.")
    if config is not None and not isinstance(config, RunConfig):
        raise ConfigError(f"config must be a RunConfig, got {type(config).__name__}.")
    if not isinstance(allow_changed_suites, bool):
        raise ConfigError(f"allow_changed_suites is True or False, got {allow_changed_suites!r}.")
    # Absolute now: a suite file may change the working folder when it is imported.
    root = Path(out).absolute() if out is not None else None
    # Before anything starts JAX here (a suite's import may): each of the run's processes
    # alive at once gets its part of a GPU (a resumed run's, by its recorded settings, in
    # `run_workloads`).
    asked = config or RunConfig()
    if resume is None:
        share_gpu_memory(jax_processes_at_once(asked), asked.devices)
    with contextlib.ExitStack() as held:  # the run file's lock, until it is saved
        previous: Run | None = None
        standby: Worker | None = None
        path: Path | None
        if resume is not None:
            given = [
                flag
                for flag, value in (("NAMES", names), ("--suite", suites), ("-k", keyword))
                if value
            ]
            path = Path(resume).absolute()
            # Before reading it: a run still writing this file (or another resume of it)
            # is refused at once, not raced.
            held.enter_context(run_file_lock(path))
            previous, config, workloads = _resumable(
                path, config, given=given, allow_changed_suites=allow_changed_suites
            )
            run_id = previous.run_id
            if root is not None:  # its page's copy of the run must not replace another file
                check_run_copy(previous, root, source=path)
        else:
            # The run's second process, where it may measure beside the first: started
            # now, it loads JAX while the suites are found (ended below if not taken).
            if overlap.may_overlap(asked):
                standby = held.enter_context(_standby())
            registry = discover(suites)
            for error in registry.errors:
                emit(SuiteSkipped(str(error)))
            for spec, left_out in registry.left_out.items():
                emit(KernelsLeftOut(spec, tuple(left_out)))
            workloads = registry.select_some(names, keyword)
            run_id = new_run_id()
            path = run_file(root, run_id) if root is not None else None
        # Fail before measuring, not after an hour: the run file's folder and, where pages go,
        # the output folder (index.html, history.html, plotly.min.js, runs/, the run's page).
        if root is not None:  # first: runs/ must not be a link before a file goes there
            OutputLayout(root).ensure_writable(run_id)
        if path is not None:
            ensure_writable_dir(path.parent)
            if previous is None:
                held.enter_context(run_file_lock(path))

        saved: list[int] = []  # the cases of the last partial run saved

        def save(run: Run, *, figures: bool = True) -> None:
            assert path is not None
            try:
                save_run(run, path, figures=figures)
            except OutputError as exc:
                raise OutputError(_unsaved_message(exc, path, saved)) from None
            saved[:] = [len(run.cases())]

        def save_partial(partial: Run) -> None:
            # After each case, without the figures that the last save (the run's end, or
            # its interruption) writes: analysing the whole run at every case made the
            # checkpoints of a default run about three times as slow (tools/phase_times.py;
            # docs: validation, "Where a run's time goes").
            if path is not None:
                save(partial, figures=False)
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
                standby=standby,
            )
        except RunInterrupted as exc:
            if path is None:
                raise
            with signals_ignored():  # a second Ctrl-C must not cut the save short
                save(exc.partial)
            exc.saved_to = path
            raise
        if path is not None:
            with signals_ignored():
                save(result)
        return result


@contextlib.contextmanager
def _standby() -> Iterator[Worker]:
    """A worker process started now (`worker.start_worker`), ended on the way out
    unless the run took it."""
    standby = start_worker()
    try:
        yield standby
    finally:
        standby.dismiss()


def _unsaved_message(exc: OutputError, path: Path, saved: list[int]) -> str:
    """The one line for a run file that could no longer be written (a full disk): the
    write's own cause, then what is kept and how to go on."""
    cause = str(exc).split(";")[0]
    if not saved:
        return f"{cause}; nothing of the run was saved: free space, then run it again."
    return (
        f"{cause}; the partial run as last saved ({saved[0]} case(s)) is kept in "
        f"{str(path)!r}: free space, then finish it with `jitbench run --resume {path}`."
    )


def broken_cases(run: Run) -> list[Case]:
    """The cases of `run` that raised an error in every mode measured, NumPy included
    (`CaseAnalysis.broken`), in the run's order."""
    from jitbench.results.analysis import analyse

    return [c.case for c in analyse(run).broken]


def _resumable(
    path: Path, requested: RunConfig | None, *, given: list[str], allow_changed_suites: bool
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
    workloads = workloads_for_resume(previous, allow_changed_suites=allow_changed_suites)
    return previous, config, workloads


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
    programs_only: bool = False,
) -> tuple[Comparison, DuetResult]:
    """Everything `jitbench ab` does below the command line: check the options
    and the output folder, prepare both sides (a worktree per revision, or two Pythons),
    measure them interleaved (`ab.duet`), save both runs under `out` after every case
    (an interrupted comparison keeps what it measured), and judge them on their paired
    rounds (`gate.compare_interleaved`). With `programs_only` (`--metrics-only`) the
    samples a plan of one round took (enough to count compiles during calls) are not
    judged: the comparison is of the compiled programs alone.

    Raises:
        ConfigError: bad options, not a git repository, an unknown revision, …
        DuetError: a side's worker could not start or died.
    """
    from jitbench.suite.discovery import compile_keyword

    # The duet's worker pairs are its processes (`DuetPlan.pairs`), not `--processes`.
    config = config or RunConfig(sizes=("S",), processes=1)
    thresholds = thresholds or Thresholds(threshold=INTERLEAVED_THRESHOLD)
    matcher = compile_keyword(keyword) if keyword else None
    layout = OutputLayout(ensure_writable_dir(out))
    layout.check_runs_folder()
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
    if programs_only:
        base_run, new_run = (
            replace(r, measurements=tuple(replace(m, samples_s=()) for m in r.measurements))
            for r in (result.base, result.new)
        )
        return compare(base_run, new_run, thresholds=thresholds), result
    return compare_interleaved(result.base, result.new, thresholds=thresholds), result


class _Named:
    """What a -k expression reads of a workload: its name and tags."""

    def __init__(self, name: str, tags: tuple[str, ...]) -> None:
        self.name, self.tags = name, tags


@dataclass(frozen=True, kw_only=True)
class BisectResult:
    """What `bisect_revisions` found: the `outcome` (the first bad commit, or the commits
    left when a step stayed inconclusive), the whole `state` (every step's evidence), the
    steps taken now (`resumed` were recorded before) and this call's wall seconds."""

    outcome: Outcome
    state: BisectState
    state_file: Path
    resumed: int
    seconds: float


def bisect_revisions(
    good: str,
    bad: str,
    *,
    suites: Sequence[str] = (),
    keyword: str | None = None,
    sizes: Sequence[str] = ("S",),
    threads: int | None = 1,
    x64: bool | None = None,
    clock: str = "wall",
    budget_s: float = 0.7,
    pairs: int = 3,
    max_attempts: int = 3,
    python_good: str | None = None,
    python_bad: str | None = None,
    timing_only: bool = False,
    out: str | os.PathLike[str] = "reports/bisect",
    restart: bool = False,
    cwd: str | os.PathLike[str] = ".",
    on_event: Callable[[BisectEvent], None] | None = None,
) -> BisectResult:
    """Everything `jitbench bisect GOOD BAD` does below the command line.

    The first-parent commits after GOOD up to BAD are bisected for the cases that changed
    between GOOD and BAD (`gate.bisect`): GOOD and BAD are measured first, interleaved;
    then each midpoint is decided by its jit programs (compiled only, against BAD's) where
    those settle it, else by timing against GOOD in the same window (`pairs` worker pairs,
    `budget_s` a case, doubled on each new attempt at an inconclusive step). Each side is
    a worktree of its commit, made once and kept for the whole bisection; GOOD runs with
    `python_good`, BAD and the midpoints with `python_bad` (default: this Python). A
    first bad commit that programs found is then timed against its parent
    (`gate.bisect.confirm`), which also measures the commit's own change. The state is
    saved to OUT/.jitbench-bisect.json after every step, and a later call with the same
    GOOD, BAD and selection resumes from it (`restart` discards it).

    Raises:
        ConfigError: bad options, not a git repository, unknown revisions, BAD not after
            GOOD, or a state of another bisection in `out`.
        ResultsFormatError: the state file cannot be read.
        BisectInconclusive: GOOD and BAD measure alike for the selection (exit 4).
        DuetError: a side's worker could not start or died.
    """
    import time

    from jitbench.ab.sides import Checkouts, first_parent_range, python_executable
    from jitbench.gate.bisect import (
        BY_PROGRAM,
        BY_TIMING,
        STATE_FILE,
        BisectStarted,
        Commit,
        Confirmed,
        EndpointsMeasured,
        Measuring,
        StepDone,
        bisect,
        confirm,
    )
    from jitbench.suite.discovery import compile_keyword

    started = time.perf_counter()
    emit = on_event or (lambda _e: None)
    budget_s = check_budget(budget_s)
    check_count("--pairs", pairs, least=1, fix="pass e.g. --pairs 3.")
    check_count("--attempts", max_attempts, least=1, fix="pass e.g. --attempts 3.")
    py_good = python_executable(python_good, "--python-good") if python_good else None
    py_bad = python_executable(python_bad, "--python-bad") if python_bad else None
    config = RunConfig(
        sizes=tuple(sizes) or ("S",),
        x64=x64,
        threads=threads,
        processes=1,
        plan=SamplingPlan(clock=clock),
    )
    matcher = compile_keyword(keyword) if keyword else None
    folder = ensure_writable_dir(out)
    state_path = folder / STATE_FILE
    with Checkouts(Path(cwd).resolve(), suites) as trees:
        good_sha, bad_sha = trees.resolve(good, "GOOD"), trees.resolve(bad, "BAD")
        selection = {
            "suites": list(suites),
            "keyword": keyword,
            "sizes": list(config.sizes),
            "x64": x64,
            "threads": threads,
            "python_good": python_good,
            "python_bad": python_bad,
            "timing_only": timing_only,
        }
        state = None
        if state_path.exists() and not restart:
            state = BisectState.load(state_path)
            if not state.matches(good_sha, bad_sha, selection):
                differs = [
                    f"{k} {state.selection.get(k)!r}, now {v!r}"
                    for k, v in selection.items()
                    if state.selection.get(k) != v
                ]
                if (state.good.sha, state.bad.sha) != (good_sha, bad_sha):
                    differs.insert(0, f"{state.good.short}..{state.bad.short}")
                raise ConfigError(
                    f"{str(state_path)!r} holds another bisection ({'; '.join(differs)}); pass "
                    "--restart to replace it, or another --out."
                )
        if state is None:
            commits = tuple(
                Commit(sha=sha, subject=subject)
                for sha, subject in first_parent_range(trees.top, good_sha, bad_sha)
            )
            state = BisectState(
                good=Commit(sha=good_sha, subject=trees.subject(good_sha)),
                bad=commits[-1] if commits else Commit(sha=bad_sha),
                commits=commits,
                selection=selection,
            )
            state.save(state_path)
        resumed = len(state.steps)
        emit(BisectStarted(state=state, resumed=resumed))

        def side(name: str, commit: Commit, python: str | None) -> Side:
            return trees.side(name, commit.sha, f"{commit.short} {commit.subject}", python)

        def duet(base: Side, new: Side, plan: DuetPlan, cfg: RunConfig, names: set[str] | None):
            def select(name: str, tags: Sequence[str]) -> bool:
                if names is not None:
                    return name in names
                return matcher is None or bool(matcher(_Named(name, tuple(tags))))

            return run_duet(base, new, cfg, plan=plan, select_workload=select)

        good_commit = state.good
        if state.endpoints is None:
            state.endpoints = _measure_endpoints(
                state,
                measure=lambda attempt: duet(
                    side("base", good_commit, py_good),
                    side("new", state.bad, py_bad),
                    DuetPlan(budget_s=budget_s * 2 ** (attempt - 1), pairs=pairs, compiles=1),
                    config,
                    None,
                ),
                max_attempts=max_attempts,
                timing_only=timing_only,
                emit=emit,
            )
            state.save(state_path)
        endpoints = state.endpoints
        emit(EndpointsMeasured(endpoints=endpoints))
        names = {t.workload for t in endpoints.targets}
        target_sizes = tuple(dict.fromkeys(t.size for t in endpoints.targets))
        modes = tuple(m for m in config.modes if m.value in {t.mode for t in endpoints.targets})

        def evaluate(commit: Commit, attempt: int) -> StepResult:
            t0 = time.perf_counter()
            note = ""
            if endpoints.by == BY_PROGRAM:
                emit(Measuring(commit=commit, attempt=attempt, by=BY_PROGRAM))
                result = duet(
                    side("base", state.bad, py_bad),
                    side("new", commit, py_bad),
                    DuetPlan(budget_s=0.0, min_rounds=1, max_rounds=1, compiles=1, pairs=1),
                    replace(config, sizes=target_sizes, modes=(Mode.JIT,)),
                    names,
                )
                decided, note = _program_step(endpoints.targets, result)
                if decided is not None:
                    return replace(decided, seconds=time.perf_counter() - t0)
            emit(Measuring(commit=commit, attempt=attempt, by=BY_TIMING))
            result = duet(
                side("base", good_commit, py_good),
                side("new", commit, py_bad),
                DuetPlan(budget_s=budget_s * 2 ** (attempt - 1), pairs=pairs, compiles=1),
                replace(config, sizes=target_sizes, modes=modes),
                names,
            )
            decided = timing_side(endpoints.targets, _measured(result))
            evidence = f"{note}; {decided.evidence}" if note else decided.evidence
            return replace(decided, evidence=evidence, seconds=time.perf_counter() - t0)

        def on_step(step: Step, st: BisectState) -> None:
            st.save(state_path)
            lo, hi = bounds(st)
            emit(StepDone(step=step, left=hi - lo))

        outcome = bisect(state, evaluate, max_attempts=max_attempts, on_step=on_step)

        def against_parent(commit: Commit, attempt: int) -> StepResult:
            t0 = time.perf_counter()
            emit(Measuring(commit=commit, attempt=attempt, by="confirm"))
            index = [c.sha for c in state.commits].index(commit.sha)
            parent = state.commits[index - 1] if index > 0 else good_commit
            result = duet(
                side("base", parent, py_good if parent is good_commit else py_bad),
                side("new", commit, py_bad),
                DuetPlan(budget_s=budget_s * 2 ** (attempt - 1), pairs=pairs, compiles=1),
                replace(config, sizes=target_sizes, modes=modes),
                names,
            )
            decided = timing_side(endpoints.targets, _measured(result))
            return replace(
                decided,
                evidence=f"against its parent {parent.short}: {decided.evidence}",
                seconds=time.perf_counter() - t0,
            )

        def on_confirmed(step: Step, st: BisectState) -> None:
            st.save(state_path)
            emit(Confirmed(step=step))

        outcome = confirm(
            outcome, state, against_parent, max_attempts=max_attempts, on_step=on_confirmed
        )
    return BisectResult(
        outcome=outcome,
        state=state,
        state_file=state_path,
        resumed=resumed,
        seconds=time.perf_counter() - started,
    )


def _measure_endpoints(
    state: BisectState,
    *,
    measure: Callable[[int], DuetResult],
    max_attempts: int,
    timing_only: bool,
    emit: Callable[[BisectEvent], None],
) -> Endpoints:
    """GOOD against BAD, measured until some case changes (more each attempt, up to
    `max_attempts`): the changed cases with their programs, and how the midpoints will be
    decided.

    Raises:
        BisectInconclusive: no case changed in any attempt.
    """
    import time

    from jitbench.gate import Verdict
    from jitbench.gate.bisect import BY_PROGRAM, BY_TIMING, BisectInconclusive, Measuring

    t0 = time.perf_counter()
    for attempt in range(1, max_attempts + 1):
        emit(Measuring(commit=state.bad, attempt=attempt, by="endpoints"))
        result = measure(attempt)
        cmp = compare_interleaved(
            result.base, result.new, thresholds=Thresholds(threshold=INTERLEAVED_THRESHOLD)
        )
        programs = _programs(result.base), _programs(result.new)
        targets = tuple(
            Target(
                workload=e.workload,
                size=e.size,
                device=e.device,
                dtype=e.dtype,
                mode=e.mode.value,
                ratio=e.ratio,
                low=e.ratio_low,
                high=e.ratio_high,
                good_program=programs[0].get(e.key),
                bad_program=programs[1].get(e.key),
            )
            for e in cmp.entries
            if e.verdict in (Verdict.REGRESSION, Verdict.IMPROVEMENT) and e.ratio is not None
        )
        if targets:
            by_program = not timing_only and all(t.program_changed for t in targets)
            return Endpoints(
                targets=targets,
                by=BY_PROGRAM if by_program else BY_TIMING,
                seconds=time.perf_counter() - t0,
            )
    raise BisectInconclusive(
        f"GOOD ({state.good.short}) and BAD ({state.bad.short}) measure alike for the "
        f"selection after {max_attempts} attempts: no case changed, so there is nothing to "
        "bisect; check -k and --sizes, or give a larger --budget."
    )


def _programs(run: Run) -> dict[tuple[str, str, str, str], str]:
    """Each case's jit program fingerprint in `run`."""
    return {
        (m.case.workload, m.case.size, m.case.device, m.case.dtype): m.compile.program_fingerprint
        for m in run.measurements
        if m.mode is Mode.JIT and m.compile is not None and m.compile.program_fingerprint
    }


def _program_step(targets: Sequence[Target], result: DuetResult) -> tuple[StepResult | None, str]:
    """A program step's decision (BAD as base, the midpoint as new), or None with why
    timing must decide: BAD's programs compiled again must match what the endpoints
    recorded, and the midpoint's must be one endpoint's."""
    from jitbench.gate.bisect import program_side

    bad_now = _programs(result.base)
    if any(bad_now.get(t.case) != t.bad_program for t in targets):
        return None, "BAD's program compiled differently than before (not reproducible)"
    decided = program_side(targets, _programs(result.new))
    return decided, "" if decided is not None else "program = neither endpoint's"


def _measured(result: DuetResult) -> dict[str, Measured]:
    """Each timed entry's ratio against GOOD, by target label."""
    cmp = compare_interleaved(
        result.base, result.new, thresholds=Thresholds(threshold=INTERLEAVED_THRESHOLD)
    )
    return {
        f"{e.workload}[{e.size}] {e.mode.value}": Measured(e.ratio, e.ratio_low, e.ratio_high)
        for e in cmp.entries
        if e.ratio is not None
    }
