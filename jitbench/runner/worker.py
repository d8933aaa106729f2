"""The one worker process: every process of a run that measures, but the first.

The run's parent plans, schedules and collects; each other measuring process (a
`--processes` worker one after another, the second beside the first, an extra process
alone or one of a pair, the `--isolate` child of one group of cases) is this same worker,
started by `start_worker` (spawned: a fresh interpreter, without the caller's
`__main__` where it has no guard) and told what to measure afterwards, on the one
channel it shares with the parent (`runner.channel`). Started before its work is known,
it loads JAX and the measuring code meanwhile (`api.run` starts the second process so,
while the suites are found); ordered, it runs the order's module-level function with
its end of the channel and the order's JSON-able arguments
(`scheduler.measure_selection`, `child.measure_group`), or ends when dismissed.

A worker ignores SIGINT (the parent decides what a Ctrl-C means and ends it), leads a
process group of its own (whatever its workload starts is ended with it: `Worker.stop`)
and dies with its parent, even when the parent is killed with SIGKILL
(`die_with_parent`). An `ab` side's worker is the same worker in another Python or with
another revision's code on its path (`start_worker(command=...)`: `python -m
jitbench.runner.worker`, the channel on an inherited socket), ordered to serve that side
(`ab.serve`).
"""

from __future__ import annotations

import ast
import ctypes
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from jitbench.errors import JitbenchError
from jitbench.results import Measurement, Run, measurement_from_dict, run_from_dict
from jitbench.runner.channel import Channel
from jitbench.runner.signals import signals_ignored

#: What a worker ordered to measure a selection says to the parent of itself
#: (`Worker.result`): each case as it finishes it, then its run, or why it has none.
_ANSWERS = frozenset({"case", "ok", "refused", "error"})

#: What a worker process runs (`Worker.order`): a module-level function of its connection
#: and JSON-able arguments (`scheduler.measure_selection`, `child.measure_group`,
#: `ab.serve.serve`).
WorkerTarget = Callable[..., None]

#: What the parent hears of each case a worker finishes (`Worker.result`, `Worker.cases`):
#: its index and the worker's case count, and the worker's measurements of it.
OnCase = Callable[[int, int, list[Measurement]], None]


class WorkerError(JitbenchError):
    """A worker process of `--processes` failed; the cases measured so far are kept."""


class Worker:
    """A worker process (`start_worker`) and the parent's end of its `channel`: `order`
    gives it its work, `result` waits for the run it measures, `stop` ends it (and what
    its workload started), `dismiss` ends one never ordered."""

    def __init__(self, proc: Any, channel: Channel) -> None:
        self._proc = proc
        self.channel = channel
        self._ordered = False
        self._stopped = False
        #: time.monotonic() when it was given its work.
        self.started = time.monotonic()

    @property
    def pid(self) -> int:
        return int(self._proc.pid)

    @property
    def exitcode(self) -> int | None:
        return self._proc.exitcode  # type: ignore[no-any-return]

    def alive(self) -> bool:
        return bool(self._proc.is_alive())

    def order(self, target: Callable[..., None], *args: Any) -> Worker:
        """Have it run `target(its connection, *args)` (`target` module-level, so that the
        worker can import it; `args` picklable); returns self."""
        self.channel.send("order", (target, args))
        self._ordered = True
        self.started = time.monotonic()
        return self

    def cases(self, on_case: OnCase) -> None:
        """Hand `on_case` the cases it has finished since the last call, without waiting."""
        with suppress(EOFError):
            while (message := self.channel.receive({"case"}, limit_s=0)) is not None:
                _hand(on_case, message[1])

    def result(self, on_case: OnCase | None = None) -> Run:
        """The run it was ordered to measure, once it sends it (each case as it finishes
        to `on_case`); it is ended then.

        Raises:
            WorkerError: the worker failed or died.
        """
        try:
            try:
                # A stop signal is obeyed at once (the worker is ended below).
                while True:
                    kind, body = self.channel.receive(_ANSWERS) or ("error", "no answer")
                    if kind != "case":
                        break
                    if on_case is not None:
                        _hand(on_case, body)
            except EOFError:
                self.stop()
                raise WorkerError(
                    f"a worker process died (exit code {self.exitcode}); run without "
                    "--processes to see the failing case, or with --isolate."
                ) from None
        finally:
            self.stop()
        if kind == "refused":  # jitbench's own error, its cause and fix already in the text
            raise WorkerError(f"a worker process stopped: {body}")
        if kind != "ok":
            raise WorkerError(
                f"a worker process failed: {body}; run without --processes to see where."
            )
        return run_from_dict(json.loads(body), source="a worker process's run")

    def stop(self) -> None:
        """End it, and what is left of its process group (`_end_group`), if it still
        runs; it is reaped either way (once: its pid is not its own after)."""
        if self._stopped:
            return
        self._stopped = True
        _end_group(self._proc.pid)  # first: nothing has reaped it yet
        if self._proc.is_alive():
            self._proc.kill()
        self._proc.join(10)
        self.channel.close()

    def end(self, limit_s: float) -> None:
        """Wait at most `limit_s` for it to end by itself (told to), then `stop` it."""
        self._proc.join(limit_s)
        self.stop()

    def dismiss(self) -> None:
        """End it, unless it was given work (whoever ordered it ends it then)."""
        if self._ordered:
            return
        self.channel.send("dismiss")  # False where it has gone already
        self.end(5)


def start_worker(command: Command | None = None) -> Worker:
    """Start a worker process that loads what measuring needs and waits for its order
    (`Worker.order`): spawned from this interpreter, or as `command` says (another Python,
    another path: an `ab` side)."""
    if command is not None:
        return command.start()
    ctx = multiprocessing.get_context("spawn")
    here, there = ctx.Pipe()
    proc = ctx.Process(target=worker_main, args=(there,), name="jitbench-worker")
    with spawning_quietly():
        proc.start()
    there.close()
    return Worker(proc, Channel(here, proc.is_alive))


class Command:
    """A worker started as `python -m jitbench.runner.worker FD` (`python`, in `cwd`, with
    `env`, its output to `log`), its end of the channel the inherited socket FD: a Python
    other than this one, or a path that puts another jitbench first."""

    def __init__(self, python: str, *, env: dict[str, str], cwd: str, log: Any) -> None:
        self.python, self.env, self.cwd, self.log = python, env, cwd, log

    def start(self) -> Worker:
        here, there = multiprocessing.Pipe()
        with signals_ignored():  # a signal landing mid-start leaves no half-started child
            proc = subprocess.Popen(
                [self.python, "-m", "jitbench.runner.worker", str(there.fileno())],
                pass_fds=(there.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=self.log,
                stderr=self.log,
                cwd=self.cwd,
                env=self.env,
            )
        there.close()
        process = _Started(proc)
        return Worker(process, Channel(here, process.is_alive))


class _Started:
    """A `Command`'s process, seen as the `multiprocessing.Process` a `Worker` holds."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self._proc = proc
        self.pid = proc.pid

    @property
    def exitcode(self) -> int | None:
        return self._proc.poll()

    def is_alive(self) -> bool:
        return self._proc.poll() is None

    def kill(self) -> None:
        with suppress(ProcessLookupError):
            self._proc.kill()

    def join(self, timeout: float | None = None) -> None:
        with suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout)


def worker_main(conn: Connection) -> None:
    """The worker (a spawned child): ready itself (see the module), then run the `(target,
    args)` it is ordered, or end when dismissed."""
    # The parent decides what a Ctrl-C means (it ends this process); a terminal SIGINT
    # reaches the whole process group, so ignore it here.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A process group of its own: whatever the workload starts (a `subprocess`, a pool)
    # is in it, and the parent ends the whole group with the worker (`_end_group`).
    with suppress(OSError):
        os.setsid()
    die_with_parent()
    # JAX, NumPy and the measuring code, loaded now: what makes a worker's start slow.
    import jitbench.measure.opening  # noqa: F401

    try:
        kind, order = conn.recv()
    except EOFError:  # the parent went
        return
    if kind != "order":
        return
    target, args = order
    target(conn, *args)


def _hand(on_case: OnCase, body: Any) -> None:
    """`on_case` told of a case as a worker sends it: (index, total, measurement dicts)."""
    index, total, measured = body
    on_case(index, total, [measurement_from_dict(d) for d in measured])


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent() -> None:
    """Make this process (a worker) end when its parent does, even by SIGKILL.

    On Linux the kernel sends SIGKILL when the parent dies (prctl PR_SET_PDEATHSIG);
    elsewhere, or if that call fails, a spawned worker's daemon thread waits on the
    parent's sentinel (a pipe the parent holds open) and ends the process when it closes.
    A parent already gone by the time this runs ends the process at once.
    """
    if sys.platform.startswith("linux"):
        with suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    parent = multiprocessing.parent_process()
    if parent is None:  # a `Command`'s: its parent's death is the kernel's to tell
        if os.getppid() == 1:
            os._exit(1)
        return
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


def _end_group(pid: int | None) -> None:
    """Kill what is left of the process group the worker `pid` leads (`worker_main` made
    it): processes the workload started, which would outlive the case's timeout, a stop,
    or the worker's own end (the worker too, when it is still there). Called before
    anything reaps the worker, so its id is still its own; a worker that never made its
    group leaves none to kill."""
    if pid is None:
        return
    with suppress(ProcessLookupError, PermissionError):
        if os.getpgid(pid) == pid:
            os.killpg(pid, signal.SIGKILL)


if __name__ == "__main__":  # a `Command`'s worker: its channel is the socket it inherited
    worker_main(Connection(int(sys.argv[1])))
