"""Measure a run in several worker processes and pool them.

A case's samples in one process agree with each other more than with another process's
(its memory layout, where its threads landed, the minute it ran in), so an interval from
one process describes that process, not the next run (docs: validation, "A/A
coverage"). With `processes=K` this process and K-1 fresh workers each measure every
case (the first worker beside this process where the run overlaps: `overlap`); the
pooled run keeps each process's share (`Measurement.run_sample_counts`), whose spread
is the interval (`stats.repeat_interval`). Then the cases whose intervals are widest
(`allocation.cases_for_another_process`) are measured again by further workers, up to
`EXTRA_PROCESSES` more, within `EXTRA_TIME_SHARE` of the time the K processes took.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from jitbench.config import RunConfig
from jitbench.errors import ConfigError
from jitbench.results import Measurement, Run
from jitbench.results.merge import pool_case, pool_runs, processes_in
from jitbench.results.model import Selection
from jitbench.runner.allocation import CaseKey, cases_for_another_process
from jitbench.runner.events import (
    CaseFinished,
    CasePooled,
    ProcessStarted,
    RunEvent,
    RunInterrupted,
    WorkerProgress,
)
from jitbench.runner.overlap import SideBySide
from jitbench.runner.worker import OnCase, Worker, WorkerTarget, start_worker

#: Further processes a case may get beyond the run's `--processes` (where its interval is
#: wide: `allocation.cases_for_another_process`).
EXTRA_PROCESSES = 2
#: The extra processes together take at most this share of the wall time the run's own
#: processes took (two side by side counted once; measured in this session; each extra
#: process's time estimated from the last worker's time per case): a run whose intervals
#: are wide everywhere, on a busy machine, takes a third longer, not twice as long. Two
#: extra processes side by side spend it once.
EXTRA_TIME_SHARE = 0.3

#: What the parent's own process measures (`first(on_event)`), and what a worker is
#: ordered to measure after it (`order(the first process's run, the cases or None for
#: all)`: a `WorkerTarget` and its arguments after the connection).
First = Callable[[Callable[[RunEvent], None]], Run]
Order = Callable[[Run, Sequence[CaseKey] | None], tuple[WorkerTarget, tuple[Any, ...]]]


def jax_processes_at_once(config: RunConfig) -> int:
    """How many of a run's processes hold a JAX backend at once (`share_gpu_memory`): the
    first, a worker and an `--isolate` child (a pair or a standby: CPU devices only)."""
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
    """What `scheduler.measure_selection` gets after its connection."""
    return (tuple(selection), config, shared_compiles, None if cases is None else tuple(cases))


def run_worker(target: WorkerTarget, args: Sequence[Any], on_case: OnCase) -> Run:
    """A fresh worker process ordered to run `target(its connection, *args)`; its run
    (each case as it finishes to `on_case`)."""
    return start_worker().order(target, *args).result(on_case)


class CaseShares:
    """Each case's measurements from every process, pooled case by case as they arrive
    (`merge.pool_case`, the run's own pooling): a `CasePooled` with each share after the
    first, so that a case's last progress line quotes its row's figures. The first
    process's come from its events (`first`), the workers' from their channels (`add`),
    the second's beside the first between the first's cases (`beside`). Nothing is
    pooled without `lines` (a run of rounds shares a case after its first round only)."""

    def __init__(
        self,
        emit: Callable[[RunEvent], None],
        beside: Callable[[], Worker | None] = lambda: None,
        *,
        lines: bool = True,
    ) -> None:
        self._emit, self._beside, self._lines = emit, beside, lines
        self._parts: dict[CaseKey, list[Sequence[Measurement]]] = {}
        self._index: dict[CaseKey, tuple[int, int]] = {}

    def first(self, event: RunEvent) -> None:
        """The first process's event, passed on; a finished case is its share."""
        self._emit(event)
        if isinstance(event, CaseFinished) and event.measurements:
            self._index[event.case.key] = (event.index, event.total)
            self.add(event.index, event.total, event.measurements)
            if (beside := self._beside()) is not None:
                beside.cases(self.add)

    def seed(self, run: Run) -> None:
        """The cases of `run` that no event brought (measured in an earlier session of a
        resumed run): their share."""
        earlier: dict[CaseKey, list[Measurement]] = {}
        for m in run.measurements:
            if m.case.key not in self._parts:
                earlier.setdefault(m.case.key, []).append(m)
        for key, measured in earlier.items():
            self._parts[key] = [measured]

    def worker(self, index: int, total: int, measured: Sequence[Measurement]) -> None:
        """A worker's case, heard as it waits for the worker's run: its pace too."""
        self._emit(WorkerProgress(index + 1, total))
        self.add(index, total, measured)

    def add(self, index: int, total: int, measured: Sequence[Measurement]) -> None:
        """A worker's share of a case (`index` of `total` in its order)."""
        if not measured or not self._lines:
            return
        key = measured[0].case.key
        parts = self._parts.setdefault(key, [])
        parts.append(measured)
        if sum(processes_in(part) for part in parts) >= 2:
            at, of = self._index.get(key, (index, total))
            self._emit(CasePooled(measured[0].case, at, of, tuple(pool_case(parts))))


def run_in_processes(
    first: First,
    order: Order,
    config: RunConfig,
    *,
    on_event: Callable[[RunEvent], None] | None = None,
    checkpoint: Callable[[Run], None] | None = None,
    side: SideBySide | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Run:
    """`first(on_event)` measures the run in this process; then `config.processes - 1`
    workers measure it again, one after another, each ordered as `order` says (the first
    of them beside this process where `side` started it: `overlap`), pooled under the
    first run's id with the last process's machine state after it; each case's shares
    are pooled as they arrive too (`CaseShares`), and a checkpoint follows each worker. A
    resumed `first` that pooled some workers already leaves only the workers after them.
    Then, but in a smoke run (`config.quick`), extra workers measure the cases
    `allocation` picks, within `EXTRA_TIME_SHARE` of the wall time before (`clock`;
    without a limit where a resumed run's first processes ran in another session), two
    at a time with `side`; the last checkpoint is the complete run.

    Raises:
        RunInterrupted: on Ctrl-C or a stop signal; it carries the pooled partial run.
        WorkerError: a worker failed (after the processes before it were checkpointed).
    """
    emit = on_event or (lambda _e: None)
    save = checkpoint or (lambda _r: None)
    shares = CaseShares(
        emit, (lambda: None) if side is None else side.second, lines=config.plan.rounds == 1
    )
    started = clock()
    try:
        parts = [first(shares.first)]
    except BaseException:  # the process beside it would measure on for nothing
        if side is not None and (started_beside := side.second()) is not None:
            started_beside.stop()
        raise
    second = None if side is None else side.second()
    shares.seed(parts[0])

    def interrupted(exc: KeyboardInterrupt) -> RunInterrupted:
        if second is not None:
            second.stop()
        partial = replace(_pooled(parts), complete=False)
        save(partial)
        return RunInterrupted(partial, exc)

    try:
        # The wall time of the run's own processes in this session (the second beside the
        # first counted once): the extra processes' allowance is a share of it.
        own_s = clock() - started
        per_case_s: float | None = None  # the last worker's seconds per case
        # A smoke run, or one process asked for: no extra processes.
        extra = 0 if config.quick or config.processes < 2 else EXTRA_PROCESSES
        most = config.processes + extra

        def measure(index: int, total: int, cases: Sequence[CaseKey] | None) -> Run:
            emit(
                ProcessStarted(
                    index=index, total=total, cases=None if cases is None else len(cases)
                )
            )
            try:
                if index == 2 and second is not None:
                    return second.result(shares.worker)
                return run_worker(*order(parts[0], cases), shares.worker)
            except KeyboardInterrupt as exc:
                raise interrupted(exc) from None

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
            took = clock() - second.started if index == 2 and second is not None else wall
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
            if side is not None and most - index >= 2:  # two at once, on a core each
                emit(ProcessStarted(index=index + 2, total=index + 2, cases=len(keys), together=2))
                try:
                    parts.extend(side.pair(*order(parts[0], keys), shares.worker))
                except KeyboardInterrupt as exc:
                    raise interrupted(exc) from None
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
    finally:  # on every way out: a process beside left behind would measure on
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
