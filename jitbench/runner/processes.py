"""Measure a run in several worker processes, one after another, and pool them.

Within one process, a case's samples agree with each other more than with another
process's: the memory layout, where the threads landed and the minute the process ran in
stay fixed for its life. An interval from one process's samples then describes that
process, not the next run (on this repository's 2-vCPU VM, 95 % paired intervals from
single processes contained another process's speedup 47 % of the time). With
`processes=K`, this process measures every case, then K-1 fresh worker processes measure
every case again; the pooled run keeps each process's share of the samples
(`run_sample_counts`), and `Run.speedup` turns the spread between processes into the
interval (`stats.repeat_interval`).
"""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Callable, Sequence
from dataclasses import replace
from multiprocessing.connection import Connection
from typing import Any

from jitbench.config import RunConfig
from jitbench.errors import ConfigError, JitbenchError
from jitbench.results import Run, run_from_dict
from jitbench.results.merge import pool_runs
from jitbench.results.model import Selection
from jitbench.runner.child import receive, spawning_quietly
from jitbench.runner.events import ProcessStarted, RunEvent, RunInterrupted


class WorkerError(JitbenchError):
    """A worker process of `--processes` failed; the cases measured so far are kept."""


#: What a worker process runs: (connection, selection as dicts, config as a dict, the
#: folder of the programs the first process compiled or None). It measures the selection
#: and sends ("ok", the run's JSON text), ("refused", a JitbenchError's message) or
#: ("error", text) back.
WorkerTarget = Callable[[Connection, list[dict[str, Any]], dict[str, Any], str | None], None]


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


def run_worker(
    selection: Sequence[Selection],
    config: RunConfig,
    *,
    target: WorkerTarget,
    shared_compiles: str | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> Run:
    """Measure the selected workloads in a fresh (spawned) process running `target` (a
    module-level function, so the child can import it) and return its run.

    Raises:
        WorkerError: the worker failed or died.
    """
    ctx = multiprocessing.get_context("spawn")
    receiver, sender = ctx.Pipe(duplex=False)
    payload = [s.to_dict() for s in selection]
    proc = ctx.Process(
        target=target,
        args=(sender, payload, config.to_dict(), shared_compiles),
        name="jitbench-worker",
    )
    with spawning_quietly():
        proc.start()
    sender.close()
    try:
        try:
            # In slices, so a stop signal is obeyed at once (the worker is killed below).
            # (no limit: it never answers None)
            while True:  # ("progress", (cases done, cases)) as it goes, for the estimate
                kind, body = receive(receiver, proc, None) or ("error", "no answer")
                if kind != "progress":
                    break
                if on_progress is not None:
                    on_progress(*body)
        except EOFError:
            proc.join()
            raise WorkerError(
                f"a worker process died (exit code {proc.exitcode}); run without --processes "
                "to see the failing case, or with --isolate."
            ) from None
        proc.join()
    finally:
        if proc.is_alive():
            proc.kill()
            proc.join()
    if kind == "refused":  # jitbench's own error, its cause and fix already in the text
        raise WorkerError(f"a worker process stopped: {body}")
    if kind != "ok":
        raise WorkerError(f"a worker process failed: {body}; run without --processes to see where.")
    return run_from_dict(json.loads(body), source="a worker process's run")


def run_in_processes(
    first: Callable[[], Run],
    selection: Sequence[Selection],
    config: RunConfig,
    *,
    on_event: Callable[[RunEvent], None] | None = None,
    checkpoint: Callable[[Run], None] | None = None,
    worker: Callable[[Sequence[Selection], RunConfig], Run],
) -> Run:
    """`first()` measures the run in this process; then `config.processes - 1` workers
    (`worker(selection, config)`, e.g. `run_worker` with the scheduler's target) measure
    it again, one after another, and the runs are pooled under the first run's
    id (`results.merge.pool_runs`), with the last process's machine state after it. A
    checkpoint follows each worker. Where `first()` returns a resumed run that already
    pooled some workers, only the workers after them run.

    Raises:
        RunInterrupted: on Ctrl-C or a stop signal; it carries the pooled partial run.
        WorkerError: a worker failed (after the processes before it were checkpointed).
    """
    emit = on_event or (lambda _e: None)
    save = checkpoint or (lambda _r: None)
    parts = [first()]
    for index in range(parts[0].processes + 1, config.processes + 1):
        emit(ProcessStarted(index=index, total=config.processes))
        try:
            parts.append(worker(selection, config))
        except KeyboardInterrupt as exc:
            partial = replace(_pooled(parts), complete=False)
            save(partial)
            raise RunInterrupted(partial, exc) from None
        save(replace(_pooled(parts), complete=index == config.processes))
    return _pooled(parts)


def _pooled(parts: Sequence[Run]) -> Run:
    """The processes' runs pooled, with the machine's state after the last of them: the
    first process's "after" snapshot was taken before the workers ran, so a machine that
    got busy while they measured would not be said to be."""
    pooled = pool_runs(parts)
    after = parts[-1].environment.get("machine_after")
    if len(parts) < 2 or after is None:
        return pooled
    return replace(pooled, environment={**pooled.environment, "machine_after": after})
