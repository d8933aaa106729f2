"""Measure one case (or one workload × size × dtype on several devices) in a child process,
so its faults cost only that case (`--isolate`).

`run_in_child(spec, timeout_s=...)` measures one case in a fresh worker process
(`runner.worker`, ordered to run `measure_group`): a crash (`os.abort()`, a segfault), a
hang or an out-of-memory kill costs only that case. The child re-discovers the workload by
suite file path and name, readies itself (imports JAX and the statistics, warms the
backend up), says it is ready, then measures and sends its measurements back; the parent
ends it (and what its workload started) when the case's time limit passes, or at once
when the run is stopped (SIGTERM, Ctrl-C). The limit counts from "ready", so the child's
start-up is not charged to the case. A child dies with its parent, even when the parent
is killed with SIGKILL (`worker.die_with_parent`).
"""

from __future__ import annotations

import math
import signal
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from jitbench.results import ErrorInfo, Measurement, Status
from jitbench.runner.forks import FORK_HINT, fork_error, forks_made, refuse_forks
from jitbench.runner.worker import start_worker

#: What a child says to the parent: ready to measure, its measurements, or its error.
_ANSWERS = frozenset({"ready", "result", "error"})

# Seconds a child may take to import JAX, the suite and warm the backend up before its
# case's own --timeout starts counting (only enforced when a timeout is set).
STARTUP_LIMIT_S = 120.0


@dataclass(frozen=True)
class ChildFailure:
    """Why a child produced no measurements: a status (error or timeout) and the cause."""

    status: Status
    error: ErrorInfo


def _exception_dict(exc: BaseException) -> dict[str, str]:
    from jitbench.measure.faults import error_info

    info = error_info(exc)  # its hint: the exception's kind's, or one attached
    return {"type": info.type, "message": info.message[:2000], "hint": info.hint}


def measure_group(conn: Connection, spec: Mapping[str, Any]) -> None:
    """A worker's order under `--isolate`: find the workload, measure the case, send its
    measurements back."""
    try:
        from jitbench.measure import devices, faults, opening, timeline
        from jitbench.measure.threads import limited_threads
        from jitbench.runner.warmup import warm_up
        from jitbench.suite import discovery as registry

        found = [
            w for w in registry.workloads_from_suite(spec["suite"]) if w.name == spec["workload"]
        ]
        if not found:
            raise LookupError(f"workload {spec['workload']!r} not found in {spec['suite']}")
        config = spec["config"]
        # The child inherits the parent's pinned cores; the BLAS pool sizes it sets itself.
        with devices.x64_enabled(config.x64), limited_threads(config.threads):
            chosen = [devices.resolve_devices([label])[0] for label in spec["devices"]]
            warm_up(chosen)
            conn.send(("ready", None))
            planned = [
                opening.PlannedCase(
                    found[0], spec["size"], dict(spec["params"]), device, spec["dtype"]
                )
                for device in chosen
            ]
            split_calls = timeline.SPLIT_CALLS if config.time_split else 0
            refuse_forks()
            measured = opening.measure_cases(
                planned,
                config,
                split_calls=split_calls,
                skip=spec.get("skip"),
            )
        if forks_made():
            exc = fork_error()
            faults.add_hint(exc, FORK_HINT)
            raise exc
        conn.send(("result", measured))
    except BaseException as exc:  # report anything, even SystemExit, to the parent
        with suppress(Exception):  # the pipe may be gone; the parent sees EOF then
            conn.send(("error", _exception_dict(exc)))
    finally:
        conn.close()


def _death_message(exitcode: int | None) -> ErrorInfo:
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        hint = {
            "SIGKILL": "killed from outside, most often by the out-of-memory killer; "
            "choose a smaller --sizes preset.",
            "SIGSEGV": "a crash in native code (a C extension, XLA, or a NumPy/BLAS build); "
            "the other cases were not affected.",
            "SIGABRT": "native code aborted (an assertion or a fatal error in a library); "
            "the other cases were not affected.",
        }.get(name, "the other cases were not affected.")
        return ErrorInfo(
            type="ChildProcessDied", message=f"child process died with {name}", hint=hint
        )
    return ErrorInfo(
        type="ChildProcessDied",
        message=f"child process exited with code {exitcode} before sending results",
        hint="the workload or a library called sys.exit or os._exit; run without --isolate "
        "and with --debug to see more.",
    )


def run_in_child(
    spec: Mapping[str, Any], *, timeout_s: float | None
) -> list[Measurement] | ChildFailure:
    """Measure one case in a fresh worker process (`measure_group`).

    Args:
        spec: the case: suite (file path), workload (name), size, params, devices
            (labels such as "cpu:0"), dtype, config (a RunConfig) and skip (Skips, or
            none).
        timeout_s: seconds the case may take once the child is ready (its imports and
            backend start-up are not counted); None for no limit.

    Returns:
        The measurements, or a ChildFailure when the child crashed, was killed, timed
        out or could not start.
    """
    worker = start_worker().order(measure_group, dict(spec))
    limit = timeout_s if timeout_s is not None and 0 < timeout_s < math.inf else None
    startup_limit = None if limit is None else STARTUP_LIMIT_S + limit
    try:
        try:
            msg = worker.channel.receive(_ANSWERS, limit_s=startup_limit)
            if msg is None:
                return ChildFailure(
                    Status.TIMEOUT,
                    ErrorInfo(
                        type="Timeout",
                        message=f"child process did not start within {startup_limit:g} s",
                        hint="importing the suite file hangs or is very slow; check it alone.",
                    ),
                )
            if msg[0] == "ready":
                msg = worker.channel.receive(_ANSWERS, limit_s=limit)
            if msg is None:
                return ChildFailure(
                    Status.TIMEOUT,
                    ErrorInfo(
                        type="Timeout",
                        message=f"case exceeded --timeout {timeout_s:g} s; child process killed",
                        hint="raise --timeout, or choose a smaller --sizes preset.",
                    ),
                )
        except EOFError:
            worker.stop()
            return ChildFailure(Status.ERROR, _death_message(worker.exitcode))
        kind, payload = msg
        if kind == "result":
            return list(payload)
        info = payload if isinstance(payload, dict) else {"type": "Error", "message": str(payload)}
        return ChildFailure(
            Status.ERROR,
            ErrorInfo(
                type=str(info.get("type", "Error")),
                message=f"in the child process: {info.get('message', '')}",
                hint=str(info.get("hint", "")),
            ),
        )
    finally:
        worker.stop()
