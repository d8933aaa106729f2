"""Keep one case's faults from costing the whole run: a per-case deadline, and child processes.

- `deadline(seconds)` limits a case measured in this process. It arms `SIGALRM`
  (`signal.setitimer`) and raises `CaseTimeout` from the handler on the main thread, which
  interrupts a hung Python loop. Limits: Python runs signal handlers between bytecodes, so a
  single long C call (one huge XLA compile, one BLAS call, a C extension that never returns)
  is interrupted only when it returns; it needs the main thread and a POSIX `setitimer`.
  Use `run_in_child` (`--isolate`) when that is not enough.
- `run_in_child(spec, ...)` measures one case in a fresh process (multiprocessing *spawn*),
  so a crash (`os.abort()`, a segfault), a hang or an out-of-memory kill costs only that
  case. The child re-discovers the workload by suite file path and name and sends its
  measurements back as JSON dicts; the parent kills it when the deadline passes.
"""

from __future__ import annotations

import math
import multiprocessing
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from jitbench.errors import ConfigError
from jitbench.results import ErrorInfo, Status

# After the deadline, SIGALRM fires again at this interval until the case stops, in case
# the first CaseTimeout was swallowed (e.g. converted by native code into another error).
RETRY_INTERVAL_S = 0.5
# Seconds a child may take to import JAX, the suite and warm the backend up before its
# case's own --timeout starts counting (only enforced when a timeout is set).
STARTUP_LIMIT_S = 120.0
SUITE_MODULE_PREFIX = "jitbench_suite_"


class CaseTimeout(BaseException):
    """A case ran past its deadline.

    A BaseException (like KeyboardInterrupt), so the runner's per-mode `except Exception`
    handlers do not record it as a mode failure and go on with the case.
    """

    def __init__(self, seconds: float) -> None:
        super().__init__(f"case exceeded the time limit of {seconds:g} s")
        self.seconds = seconds


@dataclass
class Deadline:
    """State of one `deadline()` block; `expired` is True once the alarm has fired."""

    seconds: float | None
    active: bool = True
    expired: bool = False


@contextmanager
def deadline(seconds: float | None) -> Iterator[Deadline]:
    """Raise `CaseTimeout` in the block's (main) thread once `seconds` have passed.

    None or a non-positive value means no limit. The previous SIGALRM handler and interval
    timer are restored on exit.

    Raises:
        ConfigError: a limit was asked for off the main thread or on a platform without
            `signal.setitimer` (use child processes there).
    """
    state = Deadline(seconds)
    if seconds is None or seconds <= 0:
        state.active = False
        yield state
        return
    if not hasattr(signal, "setitimer") or not hasattr(signal, "SIGALRM"):
        raise ConfigError(
            "a per-case timeout without --isolate needs signal.setitimer, which this platform "
            "lacks; add --isolate."
        )
    if threading.current_thread() is not threading.main_thread():
        raise ConfigError(
            "a per-case timeout without isolation works only on the main thread; "
            "call from the main thread or use isolate=True."
        )

    def on_alarm(_signum: int, _frame: object) -> None:
        if state.active:
            state.expired = True
            raise CaseTimeout(seconds)

    previous = signal.signal(signal.SIGALRM, on_alarm)
    started = time.monotonic()
    old_delay, old_interval = signal.setitimer(signal.ITIMER_REAL, seconds, RETRY_INTERVAL_S)
    try:
        yield state
    finally:
        try:
            state.active = False  # from here on a late alarm is ignored
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)
            if old_delay > 0:  # give back an outer timer what is left of it
                left = max(old_delay - (time.monotonic() - started), 1e-3)
                signal.setitimer(signal.ITIMER_REAL, left, old_interval)


# ---------------------------------------------------------------------------------------
# Child processes


@dataclass(frozen=True)
class ChildFailure:
    """Why a child produced no measurements: a status (error or timeout) and the cause."""

    status: Status
    error: ErrorInfo


def suite_file_of(workload: object) -> str | None:
    """The suite file that defines `workload` (a module imported by the registry), or None."""
    for name, module in list(sys.modules.items()):
        if not name.startswith(SUITE_MODULE_PREFIX) or module is None:
            continue
        if any(value is workload for value in vars(module).values()):
            path = getattr(module, "__file__", None)
            return str(Path(path).resolve()) if path else None
    return None


def _exception_dict(exc: BaseException) -> dict[str, str]:
    from jitbench.measure import diagnose

    return {
        "type": type(exc).__name__,
        "message": str(exc)[:2000],
        "hint": diagnose.hint_for_exception(exc),
    }


def _child_main(conn: Connection, spec: Mapping[str, Any]) -> None:
    """Child process entry point: find the workload, measure the case, send dicts back."""
    # The parent decides what a Ctrl-C means (it kills this process); a terminal SIGINT
    # reaches the whole process group, so ignore it here.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        from jitbench import results
        from jitbench.config import RunConfig
        from jitbench.measure import devices, protocol
        from jitbench.suite import discovery as registry
        from jitbench.suite.workload import Workload

        module = registry.import_suite_file(Path(spec["suite"]))
        found = [
            v
            for v in vars(module).values()
            if isinstance(v, Workload) and v.name == spec["workload"]
        ]
        if not found:
            raise LookupError(f"workload {spec['workload']!r} not found in {spec['suite']}")
        config = RunConfig.from_dict(spec["config"])
        with devices.x64_enabled(config.x64):
            device = devices.resolve_devices([spec["device"]])[0]
            devices.warm_up_process([device])
            conn.send(("ready", None))
            planned = protocol.PlannedCase(
                found[0], spec["size"], dict(spec["params"]), device, spec["dtype"]
            )
            measured = protocol.measure_case(planned, config)
        conn.send(("result", [results.measurement_to_dict(m) for m in measured]))
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


def _receive(conn: Connection, proc: Any, limit: float | None) -> tuple[str, Any] | None:
    """Next message from the child; None when `limit` seconds pass first.

    Raises EOFError when the child died without sending one.
    """
    end = None if limit is None else time.monotonic() + limit
    while True:
        left = None if end is None else max(end - time.monotonic(), 0.0)
        ready = wait([conn, proc.sentinel], timeout=left)
        if conn in ready or conn.poll(0):
            return conn.recv()  # EOFError when the child closed the pipe without a message
        if ready:  # only the sentinel: the child ended without writing
            raise EOFError
        if end is not None and time.monotonic() >= end:
            return None


@contextmanager
def _sigint_ignored_while_spawning() -> Iterator[None]:
    """Start children with SIGINT ignored (an ignored signal survives exec, so a Ctrl-C
    during the child's start-up does not print a traceback from it)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def run_in_child(
    spec: Mapping[str, Any], *, timeout_s: float | None
) -> list[dict[str, Any]] | ChildFailure:
    """Measure one case in a spawned child process.

    Args:
        spec: JSON-able description of the case: suite (file path), workload (name), size,
            params, device (label such as "cpu:0"), dtype and config (`RunConfig.to_dict`).
        timeout_s: seconds the case may take once the child is ready (its imports and
            backend start-up are not counted); None for no limit.

    Returns:
        The measurements as dicts (`results.measurement_from_dict` reads them), or a
        ChildFailure when the child crashed, was killed, timed out or could not start.
    """
    ctx = multiprocessing.get_context("spawn")
    receiver, sender = ctx.Pipe(duplex=False)
    proc = ctx.Process(
        target=_child_main,
        args=(sender, dict(spec)),
        daemon=True,
        name=f"jitbench-{spec.get('workload')}",
    )
    with _sigint_ignored_while_spawning():
        proc.start()
    sender.close()
    limit = timeout_s if timeout_s is not None and 0 < timeout_s < math.inf else None
    startup_limit = None if limit is None else STARTUP_LIMIT_S + limit
    try:
        try:
            msg = _receive(receiver, proc, startup_limit)
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
                msg = _receive(receiver, proc, limit)
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
            proc.join(10)
            return ChildFailure(Status.ERROR, _death_message(proc.exitcode))
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
        if proc.is_alive():
            proc.kill()
        proc.join(10)
        receiver.close()
