"""Measure one case (or one workload × size × dtype on several devices) in a child process,
so its faults cost only that case.

`run_in_child(spec, timeout_s=...)` measures one case in a fresh process (multiprocessing
*spawn*): a crash (`os.abort()`, a segfault), a hang or an out-of-memory kill costs only
that case. The child re-discovers the workload by suite file path and name, readies itself
(imports JAX and the statistics, warms the backend up), says it is ready, then measures and
sends its measurements back as JSON dicts; the parent kills it when the case's time limit
passes, or at once when the run is stopped (SIGTERM, Ctrl-C). The limit counts from
"ready", so the child's start-up is not charged to the case. A child dies with its parent,
even when the parent is killed with SIGKILL (`die_with_parent`).
"""

from __future__ import annotations

import ast
import ctypes
import math
import multiprocessing
import os
import signal
import sys
import threading
import time
import types
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from jitbench.results import ErrorInfo, Status
from jitbench.runner.forks import FORK_HINT, fork_error, forks_made, refuse_forks
from jitbench.runner.signals import raise_if_stop_requested, signals_ignored

# Seconds a child may take to import JAX, the suite and warm the backend up before its
# case's own --timeout starts counting (only enforced when a timeout is set).
STARTUP_LIMIT_S = 120.0


@dataclass(frozen=True)
class ChildFailure:
    """Why a child produced no measurements: a status (error or timeout) and the cause."""

    status: Status
    error: ErrorInfo


def _exception_dict(exc: BaseException) -> dict[str, str]:
    from jitbench.measure import protocol

    info = protocol.error_info(exc)  # its hint: the exception's kind's, or one attached
    return {"type": info.type, "message": info.message[:2000], "hint": info.hint}


def _child_main(conn: Connection, spec: Mapping[str, Any]) -> None:
    """Child process entry point: find the workload, measure the case, send dicts back."""
    # The parent decides what a Ctrl-C means (it kills this process); a terminal SIGINT
    # reaches the whole process group, so ignore it here.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A process group of its own: whatever the workload starts (a `subprocess`, a pool)
    # is in it, and the parent ends the whole group with the case (`_end_group`).
    with suppress(OSError):
        os.setsid()
    die_with_parent()
    try:
        from jitbench import results
        from jitbench.config import RunConfig
        from jitbench.measure import devices, protocol, timeline
        from jitbench.measure.threads import limited_threads
        from jitbench.runner.warmup import warm_up
        from jitbench.suite import discovery as registry

        found = [
            w for w in registry.workloads_from_suite(spec["suite"]) if w.name == spec["workload"]
        ]
        if not found:
            raise LookupError(f"workload {spec['workload']!r} not found in {spec['suite']}")
        config = RunConfig.from_dict(spec["config"])
        # The child inherits the parent's pinned cores; the BLAS pool sizes it sets itself.
        with devices.x64_enabled(config.x64), limited_threads(config.threads):
            labels = spec["devices"] if "devices" in spec else [spec["device"]]
            chosen = [devices.resolve_devices([label])[0] for label in labels]
            warm_up(chosen)
            conn.send(("ready", None))
            planned = [
                protocol.PlannedCase(
                    found[0], spec["size"], dict(spec["params"]), device, spec["dtype"]
                )
                for device in chosen
            ]
            split_calls = timeline.SPLIT_CALLS if config.time_split else 0
            refuse_forks()
            measured = protocol.measure_cases(
                planned,
                config,
                split_calls=split_calls,
                skip=protocol.skips_from_json(spec.get("skip")),
            )
        if forks_made():
            exc = fork_error()
            protocol.add_hint(exc, FORK_HINT)
            raise exc
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


def receive(conn: Connection, proc: Any, limit: float | None) -> Any | None:
    """Next message from the child process `proc`; None when `limit` seconds pass first.

    Waits in slices of POLL_S and raises a stop a signal asked for at each
    (`signals.raise_if_stop_requested`), so SIGTERM or Ctrl-C is obeyed within a fraction
    of a second even when the handler's own raise was swallowed; the caller kills the
    child on the way out.

    Raises:
        EOFError: the child died without sending one.
        KeyboardInterrupt: a stop signal arrived (`signals.Terminated` for SIGTERM).
    """
    end = None if limit is None else time.monotonic() + limit
    while True:
        left = POLL_S if end is None else min(max(end - time.monotonic(), 0.0), POLL_S)
        ready = wait([conn, proc.sentinel], timeout=left)
        if conn in ready or conn.poll(0):
            return conn.recv()  # EOFError when the child closed the pipe without a message
        if ready:  # only the sentinel: the child ended without writing
            raise EOFError
        raise_if_stop_requested()
        if end is not None and time.monotonic() >= end:
            return None


#: How often a parent waiting on a child checks for a stop request (seconds).
POLL_S = 0.1

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent() -> None:
    """Make this process (a spawned child) end when its parent does, even by SIGKILL.

    On Linux the kernel sends SIGKILL when the parent dies (prctl PR_SET_PDEATHSIG);
    elsewhere, or if that call fails, a daemon thread waits on the parent's sentinel (a
    pipe the parent holds open) and ends the process when it closes. A parent already
    gone by the time this runs ends the process at once.
    """
    parent = multiprocessing.parent_process()
    if parent is None:
        return
    if sys.platform.startswith("linux"):
        with suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if not parent.is_alive():
        os._exit(1)
    sentinel = parent.sentinel
    if sentinel is None:
        return

    def exit_when_parent_dies() -> None:
        wait([sentinel])
        os._exit(1)

    threading.Thread(
        target=exit_when_parent_dies, name="jitbench-parent-watch", daemon=True
    ).start()


@contextmanager
def spawning_quietly() -> Iterator[None]:
    """Start a child with SIGINT ignored (an ignored signal survives exec, so a Ctrl-C
    during the child's start-up does not print a traceback from it) and SIGTERM and
    SIGHUP held back in this process until the start is over (`signals_ignored`).

    `Process.start` writes the child's start-up data down a pipe after the exec; a SIGTERM
    that raised in the middle of that write left the child reading a cut-off pickle, and
    it printed `EOFError: Ran out of input` with a traceback beside jitbench's own
    "partial run" message. Held back, the signal lands right after `start` returns, and
    the child is killed cleanly. The child also starts without the caller's main module
    (`main_module_hidden`).
    """
    if threading.current_thread() is not threading.main_thread():
        with main_module_hidden():
            yield
        return
    with signals_ignored(), main_module_hidden():
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)


_MAIN_SWAP = threading.Lock()  # one spawn at a time sees the placeholder `__main__`


@contextmanager
def main_module_hidden() -> Iterator[None]:
    """While a spawned child starts, show multiprocessing an empty `__main__`, where the
    caller's main script has no `if __name__ == "__main__":` guard.

    *spawn* runs the parent's main script again in the child, so an unguarded script that
    calls `jitbench.run()` would start the run again inside the worker, which
    multiprocessing refuses (the worker died with exit code 1). jitbench's children import
    their targets from jitbench and find workloads by suite file, so they need nothing of
    such a script. A guarded script is left as it is: its top level (a `jax.config`
    update, say) runs in the child too, as it always has.
    """
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    path = getattr(spec, "origin", None) or getattr(main, "__file__", None)
    if main is None or not path or _guarded(str(path)):
        yield
        return
    with _MAIN_SWAP:
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            yield
        finally:
            sys.modules["__main__"] = main


def _guarded(path: str) -> bool:
    """Whether the script at `path` has a top-level `if __name__ == "__main__":` (or
    cannot be read, when it is left alone as before). A script that is no file (`python -`
    reading stdin names it '<stdin>') has none, nor one that is not Python (`ipython
    script.ipy`, whose `%` magics IPython translates): spawn would fail to run either again."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return False
    except (OSError, UnicodeDecodeError, ValueError):
        return True
    try:
        tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError):  # the child's Python could not run it either
        return False
    for node in tree.body:
        test = node.test if isinstance(node, ast.If) else None
        if isinstance(test, ast.Compare) and len(test.comparators) == 1:
            sides = {ast.unparse(test.left), ast.unparse(test.comparators[0])}
            if sides in ({"__name__", "'__main__'"}, {"__name__", '"__main__"'}):
                return True
    return False


def run_in_child(
    spec: Mapping[str, Any], *, timeout_s: float | None
) -> list[dict[str, Any]] | ChildFailure:
    """Measure one case in a spawned child process.

    Args:
        spec: JSON-able description of the case: suite (file path), workload (name), size,
            params, devices (labels such as "cpu:0"; or one label under device), dtype and
            config (`RunConfig.to_dict`).
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
    with spawning_quietly():
        proc.start()
    sender.close()
    limit = timeout_s if timeout_s is not None and 0 < timeout_s < math.inf else None
    startup_limit = None if limit is None else STARTUP_LIMIT_S + limit
    try:
        try:
            msg = receive(receiver, proc, startup_limit)
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
                msg = receive(receiver, proc, limit)
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
        _end_group(proc.pid)  # first: nothing has reaped the child yet
        if proc.is_alive():
            proc.kill()
        proc.join(10)
        receiver.close()


def _end_group(pid: int | None) -> None:
    """Kill what is left of the process group the child `pid` leads (`_child_main` made
    it): processes the workload started, which would outlive the case's timeout, a stop,
    or the child's own end (the child too, when it is still there). Called before
    anything reaps the child, so its id is still its own; a child that never made its
    group leaves none to kill."""
    if pid is None:
        return
    with suppress(ProcessLookupError, PermissionError):
        if os.getpgid(pid) == pid:
            os.killpg(pid, signal.SIGKILL)
