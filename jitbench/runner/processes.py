"""Measure a run in several worker processes and pool them.

Within one process, a case's samples agree with each other more than with another
process's: the memory layout, where the threads landed and the minute the process ran in
stay fixed for its life. An interval from one process's samples then describes that
process, not the next run (docs: validation, "Protocol checks" and "A/A coverage"). With
`processes=K`, this process measures every case, and K-1 fresh worker processes measure
every case again (the first of them beside this one where the run overlaps, the others
after it: `overlap`); the pooled run keeps each process's share of the samples
(`run_sample_counts`), and `RunAnalysis.speedup` turns the spread between processes into
the interval (`stats.repeat_interval`).

Then the run spends more where its intervals are widest: the cases that
`allocation.cases_for_another_process` picks from the pooled run (a wide speedup interval,
processes that disagree) are measured again in a further worker process, with the same
share of the budget as every other process, and again, up to `EXTRA_PROCESSES` more than
K, while the time the extra processes take stays within `EXTRA_TIME_SHARE` of what the
K processes took. A case's measurements record how many processes measured it
(`Measurement.run_sample_counts`, one count each).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from jitbench.config import RunConfig
from jitbench.errors import ConfigError
from jitbench.results import Run
from jitbench.results.merge import pool_runs
from jitbench.results.model import Selection
from jitbench.runner.allocation import CaseKey, cases_for_another_process
from jitbench.runner.events import ProcessStarted, RunEvent, RunInterrupted, WorkerProgress
from jitbench.runner.worker import Worker, start_worker

#: What a worker process runs (`Worker.order`): (connection, selection as dicts, config
#: as a dict, the folder of the programs the first process compiled or None, the keys of
#: the cases to measure or None for all; keywords: `scheduler.measure_selection`'s). It
#: measures the selection and sends ("ok", the run's JSON text), ("refused", a
#: JitbenchError's message) or ("error", text) back.
WorkerTarget = Callable[..., None]

#: Further processes a case may get beyond the run's `--processes` (where its interval is
#: wide: `allocation.cases_for_another_process`).
EXTRA_PROCESSES = 2
#: The extra processes together take at most this share of the wall time the run's own
#: processes took (two side by side counted once; measured in this session; each extra
#: process's time estimated from the last worker's time per case): a run whose intervals
#: are wide everywhere, on a busy machine, takes a third longer, not twice as long. Two
#: extra processes side by side spend it once.
EXTRA_TIME_SHARE = 0.3


def jax_processes_at_once(config: RunConfig) -> int:
    """How many of a run's processes hold a JAX backend at once: the first (idle while the
    others measure), a `--processes` worker, and with `--isolate` the child measuring a
    case (`devices.share_gpu_memory`). The extra processes and a standby worker run on CPU
    devices only beside another."""
    return 1 + (config.processes > 1) + config.isolate


def require_suite_files(selection: Sequence[Selection], processes: int) -> None:
    """Refuse, before anything is measured, a run in several processes of workloads a
    worker process could not find again (defined in a notebook, not in a suite file).

    Raises:
        ConfigError: naming the first such workload and the fix.
    """
    if processes > 1 and (lost := [s.workload for s in selection if not s.suite]):
        raise ConfigError(
            f"workload {lost[0]!r} was not loaded from a suite file, so the run's other "
            f"{processes - 1} process(es) cannot find it; put it in a suite file, or pass "
            "processes=1 (`--processes 1`: the intervals then describe this process only)."
        )


def worker_args(
    selection: Sequence[Selection],
    config: RunConfig,
    shared_compiles: str | None = None,
    cases: Sequence[CaseKey] | None = None,
) -> tuple[Any, ...]:
    """What a `WorkerTarget` gets after its connection."""
    return (
        [s.to_dict() for s in selection],
        config.to_dict(),
        shared_compiles,
        None if cases is None else [list(key) for key in cases],
    )


def run_worker(
    selection: Sequence[Selection],
    config: RunConfig,
    *,
    target: WorkerTarget,
    shared_compiles: str | None = None,
    cases: Sequence[CaseKey] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> Run:
    """Measure the selected workloads (only the `cases` of them, if given) in a fresh
    worker process running `target`; its run (`Worker.result`).

    Raises:
        WorkerError: the worker failed or died.
    """
    worker = start_worker().order(target, *worker_args(selection, config, shared_compiles, cases))
    return worker.result(on_progress)


def run_in_processes(
    first: Callable[[], Run],
    selection: Sequence[Selection],
    config: RunConfig,
    *,
    on_event: Callable[[RunEvent], None] | None = None,
    checkpoint: Callable[[Run], None] | None = None,
    worker: Callable[..., Run],
    beside: Callable[[], Worker | None] | None = None,
    second_part: Callable[[Run], Run] = lambda run: run,
    pair: Callable[[Sequence[CaseKey]], list[Run]] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Run:
    """`first()` measures the run in this process; then `config.processes - 1` workers
    (`worker(selection, config)`, e.g. `run_worker` with the scheduler's target) measure
    it again, one after another (the first of them `beside()`, where `first()` started it to
    measure at the same time: `overlap`; its run is the run's second part as
    `second_part(run)` has it), and the runs are pooled under the first run's
    id (`results.merge.pool_runs`), with the last process's machine state after it. A
    checkpoint follows each worker. Where `first()` returns a resumed run that already
    pooled some workers, only the workers after them run.

    Then, unless the run is a smoke run (`config.quick`), extra workers (`worker(selection,
    config, cases=keys)`) measure the cases `allocation.cases_for_another_process` picks
    from the pooled run, up to `EXTRA_PROCESSES` more per case, within `EXTRA_TIME_SHARE`
    of the wall time the processes before took (`clock`); the checkpoint of the last process is
    the complete run. A resumed run goes on with the extra processes it lacks (without a
    time limit where its first processes ran in another session). With `pair` (a run
    whose first two overlapped), two extra processes at a time measure the cases side by
    side (`pair(keys)` returns both runs), where two more are allowed.

    Raises:
        RunInterrupted: on Ctrl-C or a stop signal; it carries the pooled partial run.
        WorkerError: a worker failed (after the processes before it were checkpointed).
    """
    emit = on_event or (lambda _e: None)
    save = checkpoint or (lambda _r: None)
    started = clock()
    try:
        parts = [first()]
    except BaseException:  # the process beside it would wait for it for ever
        if beside is not None and (started_beside := beside()) is not None:
            started_beside.stop()
        raise
    second = beside() if beside is not None else None
    try:
        # The wall time of the run's own processes in this session (the second beside the
        # first counted once): the extra processes' allowance is a share of it.
        own_s = clock() - started
        per_case_s: float | None = None  # the last worker's seconds per case
        # A smoke run, or one process asked for: no extra processes.
        extra = 0 if config.quick or config.processes < 2 else EXTRA_PROCESSES
        most = config.processes + extra

        def measure(index: int, total: int, cases: Sequence[CaseKey] | None) -> Run:
            count = None if cases is None else len(cases)
            emit(ProcessStarted(index=index, total=total, cases=count))
            try:
                if index == 2 and second is not None:
                    return second_part(
                        second.result(lambda done, total: emit(WorkerProgress(done, total)))
                    )
                if cases is None:
                    return worker(selection, config)
                return worker(selection, config, cases=cases)
            except KeyboardInterrupt as exc:
                if second is not None:
                    second.stop()
                partial = replace(_pooled(parts), complete=False)
                save(partial)
                raise RunInterrupted(partial, exc) from None

        def wanted(pooled: Run, spent_s: float) -> list[CaseKey]:
            keys = cases_for_another_process(pooled, most=most)
            if not keys or per_case_s is None or not started_here:
                return keys
            left = EXTRA_TIME_SHARE * own_s - spent_s
            return keys[: max(0, math.floor(left / per_case_s))] if per_case_s > 0 else keys

        started_here = parts[0].processes < config.processes
        pooled = parts[0]
        index = parts[0].processes
        for index in range(parts[0].processes + 1, config.processes + 1):
            began = clock()
            parts.append(measure(index, config.processes, None))
            wall = clock() - began  # beside the first: the time it ran on after it
            own_s += wall
            took = wall
            if index == 2 and second is not None:  # its time from its start, less its waits
                took = clock() - second.started - second.waited_s
            per_case_s = took / max(1, len(parts[-1].cases()))
            pooled = _pooled(parts)
            if index < config.processes:
                save(replace(pooled, complete=False))
        extra_s = 0.0
        keys = wanted(pooled, extra_s)
        if started_here:
            save(replace(pooled, complete=not keys))
        while keys:
            began = clock()
            if pair is not None and most - index >= 2:  # two at once, on a core each
                emit(ProcessStarted(index=index + 2, total=index + 2, cases=len(keys), together=2))
                try:
                    parts.extend(pair(keys))
                except KeyboardInterrupt as exc:
                    partial = replace(_pooled(parts), complete=False)
                    save(partial)
                    raise RunInterrupted(partial, exc) from None
                index += 2
            else:
                index += 1
                parts.append(measure(index, index, keys))
            took = clock() - began
            extra_s += took
            per_case_s = took / len(keys)
            pooled = _pooled(parts)
            keys = wanted(pooled, extra_s)
            save(replace(pooled, complete=not keys))
        return replace(pooled, complete=all(p.complete for p in parts))
    finally:  # on every way out: a follower left behind would wait for ever
        if second is not None:
            second.stop()


def _pooled(parts: Sequence[Run]) -> Run:
    """The processes' runs pooled, with the machine's state after the last of them: the
    first process's "after" snapshot was taken before the workers ran, so a machine that
    got busy while they measured would not be said to be."""
    pooled = pool_runs(parts)
    after = parts[-1].environment.get("machine_after")
    if len(parts) < 2 or after is None:
        return pooled
    return replace(pooled, environment={**pooled.environment, "machine_after": after})
