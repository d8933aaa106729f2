"""Run planned cases: the loop over cases and sampling rounds, checkpoints, events, resume.

The scheduler never prints and never writes files itself: progress goes to an `on_event`
callback and partial runs to a `checkpoint` callback, both supplied by the caller. Where a
case is measured (this process or a child) is the executor's business (`runner.executors`).
"""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from jitbench.config import RunConfig, SamplingPlan
from jitbench.errors import JitbenchError
from jitbench.measure import diagnose, environment, machine
from jitbench.measure.devices import resolve_devices, share_gpu_memory, x64_enabled
from jitbench.measure.faults import Skips, timed_out_skips
from jitbench.measure.opening import PlannedCase, planned_case_record
from jitbench.measure.session import StepReport
from jitbench.measure.threads import limited_threads
from jitbench.results import Case, Measurement, Run
from jitbench.results.analysis import judgement
from jitbench.results.analysis.machine import MachineState
from jitbench.results.model import RecordedConfig, Selection, new_run_id, utc_now
from jitbench.runner import overlap
from jitbench.runner.allocation import CaseKey
from jitbench.runner.channel import Channel
from jitbench.runner.events import (
    CaseFinished,
    CaseProgress,
    CaseStarted,
    RoundStarted,
    RunEvent,
    RunInterrupted,
    RunStarted,
    WorkloadsLeftOut,
)
from jitbench.runner.executors import Executor, LiveCase, executor_for
from jitbench.runner.overlap import Placement, SideBySide, plan_overlap
from jitbench.runner.plan import (
    case_key,
    group_cases,
    plan_cases,
    suite_float_width,
    workloads_left_out,
)
from jitbench.runner.processes import (
    jax_processes_at_once,
    require_suite_files,
    run_in_processes,
    worker_args,
)
from jitbench.runner.signals import raise_if_stop_requested
from jitbench.runner.worker import Worker, WorkerTarget
from jitbench.suite.selection import selection_of, workload_list, workloads_for_selection
from jitbench.suite.workload import Workload

Clock = Callable[[], str]  # the current UTC time, ISO 8601


def unfinished(m: Measurement) -> bool:
    """Whether a partial run's measurement is of a case whose sampling rounds (or repeated
    cold compiles) were cut short (`diagnose.UNFINISHED_ROUNDS`, put on by a checkpoint):
    a resume measures such a case again, every round, and replaces it (`schedule`); a
    finished run never holds one."""
    return any(d.code == diagnose.UNFINISHED_ROUNDS for d in m.diagnostics)


def _marked_unfinished(m: Measurement, taken: int, rounds: int) -> Measurement:
    return m.with_diagnostics([diagnose.unfinished_rounds(taken, rounds)])


def run_workloads(
    workloads: Sequence[Workload],
    config: RunConfig | None = None,
    *,
    on_event: Callable[[RunEvent], None] | None = None,
    checkpoint: Callable[[Run], None] | None = None,
    run_id: str | None = None,
    resume: Run | None = None,
    clock: Clock = utc_now,
    standby: Worker | None = None,
) -> Run:
    """Measure `workloads` under `config` and return the Run.

    An error, a timeout (`config.timeout_s`) or, with `config.isolate`, a crash of the
    child process is recorded on that case and the run goes on. The whole run is measured
    under `limited_threads(config.threads)`; the environment records the thread state and
    the machine's state before and after (`measure.machine`), and the finished run gets
    the run-level diagnostics (`judgement.run_diagnostics`).

    Args:
        config: default `RunConfig()`, in one process where a workload was not loaded from
            a suite file (a worker process could not find it again).
        on_event: receives RunStarted, CaseStarted, CaseFinished and RoundStarted events.
        checkpoint: receives the partial Run (complete=False) after every case and every
            later sampling round, so the caller can save it; a run interrupted later
            keeps what was measured.
        resume: a partial run to finish: its id, start time, environment and recorded
            configuration are kept, and what it lacks is measured as the run would have:
            the cases it does not hold (or holds only some rounds of: measured again) in
            this process with the first process's share of the budget, then the worker
            processes it has not pooled yet (`Run.processes`: the first and those pooled).
            `config` is what the rest is measured with (see `plan.settings_for_resume`).
        clock: the UTC time of day as text, for the run's timestamps.
        standby: a worker process started early (`worker.start_worker`), which the
            second process takes where it measures beside the first; the caller ends it
            where it is not taken (`Worker.dismiss`).

    Raises:
        ConfigError: unknown device or size names.
        RunInterrupted: on KeyboardInterrupt; it carries the partial run.
    """
    if config is None:
        config = RunConfig()
        if any(not s.suite for s in selection_of(workloads)):
            # Defined in a notebook or a script, not a suite file: no worker process could
            # find them again, so the default's second process is left out (the run says
            # its intervals describe one process). Asked for explicitly, it is refused.
            config = replace(config, processes=1)
    # Before JAX starts here: each process alive at once gets its part of a GPU.
    share_gpu_memory(jax_processes_at_once(config), config.devices)
    # --x64 left unset: the suites' own float width (NPBench's float64), said once (after
    # the workloads are known to be workloads: `workload_list` refuses anything else).
    config, chosen = suite_float_width(workload_list(workloads), config)
    if chosen is not None and on_event is not None:
        on_event(chosen)
    # Whether the second process measures beside the first (where the run can), recorded.
    cores = plan_overlap(config, resuming=resume is not None)
    config = replace(config, overlap=cores is not None)
    if cores is None and standby is not None:  # not needed: gone before anything is timed
        standby.dismiss()
        standby = None
    measure = functools.partial(
        _measure_once,
        workloads,
        config,
        on_event=on_event,
        checkpoint=checkpoint,
        run_id=run_id,
        resume=resume,
        clock=clock,
    )
    if config.processes > 1:
        require_suite_files(selection_of(workloads), config.processes)
        # The workers load the programs the first process compiled (and timed) instead of
        # compiling them again: a folder per group of cases, gone with the run.
        with tempfile.TemporaryDirectory(prefix="jitbench-compiles-") as shared:
            side = None if cores is None else SideBySide(cores, standby)
            selection = selection_of(workloads)

            def first(on_first: Callable[[RunEvent], None]) -> Run:
                # A resumed run that pooled some worker processes already holds every case
                # of the first process: only the workers it lacks are left.
                if resume is not None and resume.processes >= 2:
                    return replace(_resumed(resume, clock), complete=True)
                return measure(
                    on_event=on_first,
                    shared_compiles=Path(shared),
                    plan=config.plan.for_process(config.processes),
                    processes=config.processes,
                    placement=None
                    if side is None
                    else side.first(measure_selection, worker_args(selection, config)),
                )

            def order(
                first_run: Run, cases: Sequence[CaseKey] | None
            ) -> tuple[WorkerTarget, tuple[Any, ...]]:
                # A mode that ran past --timeout in the first process is not paid for again.
                skip = {} if config.retry_timeouts else timed_out_skips(first_run.measurements)
                target = functools.partial(measure_selection, skip=skip)
                return target, worker_args(selection, config, shared, cases)

            pooled = run_in_processes(
                first, order, config, on_event=on_event, checkpoint=checkpoint, side=side
            )
        # What the first process judged on its share (the CI target but in a smoke run,
        # jit slower, eager dispatch-bound, outliers, size order) judged again on every
        # process's samples together and the run's own ratios.
        return judgement.pooled_judgement(pooled)
    if config.plan.rounds > 1:
        # Each later round's re-warm loads the programs the first round compiled, instead
        # of compiling them again after the other cases cleared JAX's caches.
        with tempfile.TemporaryDirectory(prefix="jitbench-compiles-") as shared:
            return measure(shared_compiles=Path(shared))
    return measure()


def _resumed(resume: Run, clock: Clock) -> Run:
    """A partial run resumed now: its record says when."""
    record = resume.config
    return replace(resume, config=replace(record, resumed_at=(*record.resumed_at, clock())))


def _measure_once(
    workloads: Sequence[Workload],
    config: RunConfig,
    *,
    on_event: Callable[[RunEvent], None] | None,
    checkpoint: Callable[[Run], None] | None,
    run_id: str | None,
    resume: Run | None,
    clock: Clock,
    shared_compiles: Path | None = None,
    repeat_compiles: bool = True,
    plan: SamplingPlan | None = None,
    check_outputs: bool = True,
    processes: int = 1,
    only: Sequence[CaseKey] | None = None,
    skip: Skips | None = None,
    placement: Placement | None = None,
) -> Run:
    """Every case of the run (or the `only` ones) measured once, in this process (see
    `run_workloads`), the
    cold calls' programs shared under `shared_compiles` (`executors.executor_for`);
    without `repeat_compiles`, no cold compile is measured again (`schedule`), and without
    `check_outputs`, no output is compared with NumPy's (`opening.open_cases`). `plan` is
    what this process samples with, where it is a share of `config.plan` (one process of
    several); the run records `config`. `processes` is how many processes the run is
    announced to measure in (`RunStarted`), this one included. The modes of cases `skip`
    names are left out (`faults.timed_out_skips`). `placement` is where this process measures
    and beside whom, where other processes of the run measure at the same time
    (`overlap.Placement`); else it pins the least busy cores and measures alone."""
    probe = machine.QUICK_PROBE_SAMPLES if config.quick else machine.PROBE_SAMPLES
    sampling = config if plan is None else replace(config, plan=plan)

    def snapshot() -> MachineState:
        options = {} if placement is None else placement.snapshot_options()
        return machine.capture(probe_samples=probe, **options)

    cores = None if placement is None else set(placement.cores)
    with x64_enabled(config.x64), limited_threads(config.threads, cores=cores) as threads:
        devices = resolve_devices(config.devices)
        cases = plan_cases(workloads, config, devices)
        if only is not None:  # an extra process of a --processes run: the cases it picked
            picked = set(only)
            cases = [pc for pc in cases if case_key(pc) in picked]
        if (left_out := workloads_left_out(workloads, cases)) and on_event is not None:
            on_event(WorkloadsLeftOut(left_out, config.sizes))
        if placement is not None:
            placement.begin()
        if resume is not None:
            start = _resumed(resume, clock)
        else:
            start = Run(
                run_id=run_id or new_run_id(),
                started_at=clock(),
                finished_at=None,
                complete=False,
                environment=environment.capture(threads=threads, machine_before=snapshot()),
                config=RecordedConfig(settings=config, selection=selection_of(workloads)),
                measurements=(),
            )
        executor = executor_for(
            sampling,
            devices,
            shared_compiles=shared_compiles,
            check_outputs=check_outputs,
            skip=skip,
            peer=None if placement is None else placement.peer,
        )
        run = schedule(
            cases,
            executor,
            start,
            plan=sampling.plan,
            on_event=on_event,
            checkpoint=checkpoint,
            clock=clock,
            processes=processes,
            repeat_compiles=repeat_compiles,
            timeout_s=config.timeout_s,
            beside=placement is not None and placement.announces_second,
        )
        if placement is not None:
            placement.met(getattr(executor, "siblings", ()))
            placement.finish()
        after = snapshot()
        return judgement.run_diagnostics(environment.with_machine_after(run, after))


def schedule(
    cases: Sequence[PlannedCase],
    executor: Executor,
    start: Run,
    *,
    plan: SamplingPlan,
    on_event: Callable[[RunEvent], None] | None = None,
    checkpoint: Callable[[Run], None] | None = None,
    clock: Clock = utc_now,
    processes: int = 1,
    repeat_compiles: bool = True,
    timeout_s: float | None = None,
    beside: bool = False,
) -> Run:
    """Measure the `cases` that `start` does not hold yet and return the completed run.
    `beside`: the run's second process measures at the same time (`RunStarted.beside`).

    A case `start` holds only some rounds of (a run stopped between its rounds marks it
    `diagnose.UNFINISHED_ROUNDS`) is measured again, every round; its old measurements stay in the
    checkpoints until the new ones replace them.

    The cases of one workload × size × dtype on several devices are measured together
    (`plan.group_cases`: one NumPy baseline for all devices). Each group's first round (or,
    when the executor does not spread rounds, all of it) is taken in case order; then, when
    it does, rounds 2…`plan.rounds` go over the groups still sampling, in the same order,
    and last the repeated cold compiles (with `repeat_compiles`: a `--processes` worker
    leaves them to the first process). A checkpoint follows every group and every later
    round (and the compiles); after each, and at every step a case reports, a stop a
    signal asked for is honoured (`signals.raise_if_stop_requested`), so a stop whose raise
    was swallowed still ends the run within a round of samples.

    Raises:
        RunInterrupted: on KeyboardInterrupt, with the partial run.
    """
    emit = on_event or (lambda _e: None)
    # A case the run holds every round of is done; one whose rounds were cut short is
    # measured again (its calibration and warm-up were that process's), and its old
    # measurements are kept until the new ones replace them.
    held = {m.case.key for m in start.measurements}
    done = held - {m.case.key for m in start.measurements if unfinished(m)}
    todo = [pc for pc in cases if case_key(pc) not in done]
    results: dict[int, list[Measurement]] = {}  # measured here, by group, in case order
    live: dict[int, LiveCase] = {}
    taken: dict[int, int] = {}  # the rounds each live group has taken
    repeating = False  # taking the repeated cold compiles of the live groups

    def cut_short(key: int) -> bool:
        # A live group that stopped sampling is done (it leaves at its next round).
        session = live.get(key)
        return session is not None and (repeating or session.sampling)

    def snapshot(complete: bool) -> Run:
        measured = [
            _marked_unfinished(m, taken[key], plan.rounds) if not complete and cut_short(key) else m
            for key, case in results.items()
            for m in case
        ]
        replaced = {m.case.key for m in measured}
        return replace(
            start,
            finished_at=clock() if complete else None,
            complete=complete,
            measurements=(
                *(m for m in start.measurements if m.case.key not in replaced),
                *measured,
            ),
        )

    def boundary() -> None:
        if checkpoint is not None:
            checkpoint(snapshot(False))
        raise_if_stop_requested()

    def reporter(case: Case, index: int, count: int, round_: int = 1) -> StepReport:
        def report(step: str, fraction: float | None) -> None:
            # The protocol reports every step and every round of samples: a stop whose own
            # raise a workload (or a callback) swallowed is obeyed here, within the case.
            raise_if_stop_requested()
            emit(CaseProgress(case, index, count, len(cases), step, fraction, round_))

        return report

    try:
        executor.prepare()
        offset = len(cases) - len(todo)
        emit(
            RunStarted(
                start.run_id,
                len(cases),
                offset,
                budget_s=plan.budget_s,
                # Rounds the run spreads (else each case takes all of them at once).
                rounds=plan.rounds if executor.spreads_rounds else 1,
                processes=processes,
                redone_cases=sum(case_key(pc) in held for pc in todo),
                sizes=tuple(pc.size for pc in todo),
                timeout_s=timeout_s,
                beside=beside,
            )
        )
        first_index: dict[int, tuple[Case, int, int]] = {}
        i = offset
        for key, group in enumerate(group_cases(todo)):
            records = [planned_case_record(pc) for pc in group]
            for n, case in enumerate(records):
                emit(CaseStarted(case, i + n, len(cases)))
            first_index[key] = (records[0], i, len(records))
            result, session = executor.measure(group, reporter(records[0], i, len(records)))
            results[key] = result
            if session is not None:
                live[key], taken[key] = session, 1
            for case in records:
                mine = tuple(m for m in result if m.case.key == case.key)
                emit(CaseFinished(mine[0].case if mine else case, i, len(cases), mine))
                i += 1
            boundary()
        if executor.spreads_rounds:
            for index in range(2, plan.rounds + 1):
                emit(RoundStarted(index, plan.rounds, len(live)))
                for key, session in list(live.items()):
                    results[key] = session.next_round(reporter(*first_index[key], index))
                    taken[key] = index
                    if not session.sampling or all(m.failed for m in results[key]):
                        del live[key]  # nothing left to sample, or it failed as a whole
                boundary()
            repeating = True
            for repeat in range(1, plan.compile_measurements if repeat_compiles else 1):
                for key, session in live.items():
                    results[key] = session.repeat_compile(
                        reporter(*first_index[key], plan.rounds + repeat)
                    )
            live.clear()  # every round and compile taken: no case is left unfinished
            boundary()
    except RunInterrupted:
        raise
    except KeyboardInterrupt as exc:
        raise RunInterrupted(snapshot(False), exc) from exc
    return snapshot(True)


def measure_selection(
    conn: Connection,
    selection: Sequence[Selection],
    settings: RunConfig,
    shared_compiles: str | None = None,
    cases: Sequence[CaseKey] | None = None,
    skip: Skips | None = None,
    placement: dict[str, Any] | None = None,
) -> None:
    """A `--processes` worker's order (`runner.worker`): find the selected workloads again,
    measure them all once (or only the `cases`, by key: an extra process) in this fresh
    process (loading the programs the first process left in `shared_compiles`; leaving
    out the modes `skip` names), send each case as it finishes it (the parent pools it
    with the other processes' shares: `processes.CaseShares`), then the run. With
    `placement` (what `overlap.SideBySide` ordered), it measures side by side with
    another process (`overlap.for_worker`)."""

    def kept(measured: Sequence[Measurement]) -> tuple[Measurement, ...]:
        # Its cold calls loaded the first process's programs: those are no compiles.
        if not shared_compiles:
            return tuple(measured)
        return tuple(replace(m, compile=None) for m in measured)

    try:
        workloads = workloads_for_selection(selection)

        def progress(event: RunEvent) -> None:
            if isinstance(event, CaseFinished):
                conn.send(("case", (event.index, event.total, kept(event.measurements))))

        # Where it measures and beside whom, over its channel to the parent.
        placed = overlap.for_worker(placement, Channel(conn))

        run = _measure_once(
            workloads,
            replace(settings, processes=1),
            plan=settings.plan.for_process(settings.processes),
            on_event=progress,
            checkpoint=None,
            run_id=None,
            resume=None,
            clock=utc_now,
            shared_compiles=Path(shared_compiles) if shared_compiles else None,
            # The first process times the compiles again (with --rounds) and checks the
            # outputs of the programs it compiled, which a later worker loads; the worker
            # beside it compiles and checks its own.
            repeat_compiles=False,
            check_outputs=not shared_compiles,
            only=cases,
            skip=skip,
            placement=placed,
        )
        conn.send(("ok", replace(run, measurements=kept(run.measurements))))
    except JitbenchError as exc:  # a refusal whose message names the cause and the fix
        conn.send(("refused", str(exc)))
    except BaseException as exc:  # report anything, then exit
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()
