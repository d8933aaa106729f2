"""The one worker process: every process of a run that measures, but the first.

The parent plans, schedules and collects; each other measuring process (a `--processes`
worker one after another, the second beside the first, an extra process alone or one of
a pair, the `--isolate` child of one group, a side of `ab`) is this same worker, started
by `start_worker` as a command (`Command`: a fresh interpreter running `worker_main` on
the socket it inherits, with this Python and import path, or an `ab` side's) and told
what to measure afterwards on the one channel it shares with the parent
(`runner.channel`). Started before its work is known, it loads JAX and the measuring
code meanwhile (`api.run` starts the second process so, while the suites are found);
ordered, it takes the parent's JAX options and runs the order's module-level function
with its end of the channel and the order's arguments (`scheduler.measure_selection`,
`child.measure_group`, `ab.serve.serve`), or ends when dismissed. It ignores SIGINT (the
parent decides what a Ctrl-C means), leads a session of its own (whatever its workload
starts is ended with it: `Worker.stop`) and dies with its parent, even one killed with
SIGKILL (`die_with_parent`).
"""

from __future__ import annotations

import ctypes
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from jitbench.errors import JitbenchError
from jitbench.results import Measurement, Run
from jitbench.runner.channel import Channel
from jitbench.runner.signals import signals_ignored

#: What a worker ordered to measure a selection says to the parent of itself
#: (`Worker.result`): each case as it finishes it, then its run, or why it has none
#: (objects, pickled: the worker is this jitbench, started `Command.here`).
_ANSWERS = frozenset({"case", "ok", "refused", "error"})

#: What a worker process runs (`Worker.order`): a module-level function of its connection
#: and picklable arguments (`scheduler.measure_selection`, `child.measure_group`,
#: `ab.serve.serve`).
WorkerTarget = Callable[..., None]

#: What the parent hears of each case a worker finishes (`Worker.result`, `Worker.cases`):
#: its index and the worker's case count, and the worker's measurements of it.
OnCase = Callable[[int, int, Sequence[Measurement]], None]


class WorkerError(JitbenchError):
    """A worker process of `--processes` failed; the cases measured so far are kept."""


class Worker:
    """A worker process (`start_worker`) and the parent's end of its `channel`: `order`
    gives it its work, `result` waits for the run it measures, `stop` ends it (and what
    its workload started), `dismiss` ends one never ordered."""

    def __init__(
        self, proc: subprocess.Popen[bytes], channel: Channel, jax_options: bool = False
    ) -> None:
        self._proc = proc
        self.channel = channel
        self._jax_options = jax_options
        self._ordered = False
        self._stopped = False
        #: time.monotonic() when it was given its work.
        self.started = time.monotonic()

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def exitcode(self) -> int | None:
        return self._proc.poll()

    def alive(self) -> bool:
        return self._proc.poll() is None

    def order(self, target: WorkerTarget, *args: Any) -> Worker:
        """Have it run `target(its connection, *args)` (`target` module-level, so that the
        worker can import it; `args` picklable), with this process's JAX options where
        it was started `here`; returns self."""
        options = {}
        if self._jax_options:
            from jitbench.measure import jax_config

            options = jax_config.portable()
        self.channel.send("order", (target, args, options))
        self._ordered = True
        self.started = time.monotonic()
        return self

    def cases(self, on_case: OnCase) -> None:
        """Hand `on_case` the cases it has finished since the last call, without waiting."""
        with suppress(EOFError):
            while (message := self.channel.receive({"case"}, limit_s=0)) is not None:
                on_case(*message[1])

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
                        on_case(*body)
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
        assert isinstance(body, Run)
        return body

    def stop(self) -> None:
        """End it, and what is left of its process group (`_end_group`), if it still
        runs; it is reaped either way (once)."""
        if self._stopped:
            return
        self._stopped = True
        _end_group(self._proc.pid)
        with suppress(ProcessLookupError):
            self._proc.kill()
        self._join(10)
        self.channel.close()

    def end(self, limit_s: float) -> None:
        """Wait at most `limit_s` for it to end by itself (told to), then `stop` it."""
        self._join(limit_s)
        self.stop()

    def _join(self, limit_s: float) -> None:
        with suppress(subprocess.TimeoutExpired):
            self._proc.wait(limit_s)

    def dismiss(self) -> None:
        """End it, unless it was given work (whoever ordered it ends it then)."""
        if self._ordered:
            return
        self.channel.send("dismiss")  # False where it has gone already
        self.end(5)


def start_worker(command: Command | None = None) -> Worker:
    """Start a worker process that loads what measuring needs and waits for its order
    (`Worker.order`): this Python with this process's path (`Command.here`), or as
    `command` says (another Python, another path: an `ab` side)."""
    return (command or Command.here()).start()


#: What a worker's interpreter runs (`python -c`): the import path it is given, if any
#: (else its own: `python -c` puts its folder first), then `worker_main` on its socket.
_BOOT = (
    "import json, os, sys\n"
    "path = os.environ.pop('JITBENCH_WORKER_PATH', None)\n"
    "if path is not None: sys.path[:] = json.loads(path)\n"
    "from multiprocessing.connection import Connection\n"
    "from jitbench.runner.worker import worker_main\n"
    "worker_main(Connection(int(sys.argv[1])))\n"
)


@dataclass(frozen=True)
class Command:
    """A worker started as a fresh interpreter (`python`, in `cwd`, with `env`, its output
    to `log`, None: this process's; its import path `path`, else what `python -c` in
    `cwd` makes of `env`), its end of the channel the inherited socket, in a session of
    its own (a terminal's Ctrl-C is the parent's to act on, and whatever its workload
    starts is ended with it: `Worker.stop`).

    Started so, a worker runs nothing of the caller's main script (spawn ran it again, so
    an unguarded script that called `jitbench.run()` ran again inside it), and it takes
    the parent's JAX options with its order (`here`: `jax_config.portable`), guarded
    script, notebook or not."""

    python: str
    env: dict[str, str]
    cwd: str
    log: Any = None
    jax_options: bool = False
    path: tuple[str, ...] | None = None

    @classmethod
    def here(cls) -> Command:
        """This interpreter, this process's import path and folder, its JAX options (the
        environment as it is: a workload's own subprocesses see the caller's PYTHONPATH)."""
        try:
            cwd = os.getcwd()
        except OSError:  # a workload deleted the folder the run started in
            cwd = tempfile.gettempdir()
        path = tuple(entry or cwd for entry in sys.path)
        return cls(sys.executable, env=dict(os.environ), cwd=cwd, jax_options=True, path=path)

    def start(self) -> Worker:
        here, there = multiprocessing.Pipe()
        env = dict(self.env)
        if self.path is not None:
            env["JITBENCH_WORKER_PATH"] = json.dumps(list(self.path))
        with signals_ignored():  # a stop arriving mid-start is obeyed once it is over
            proc = subprocess.Popen(
                [self.python, "-c", _BOOT, str(there.fileno())],
                pass_fds=(there.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=self.log,
                stderr=self.log,
                cwd=self.cwd,
                env=env,
                start_new_session=True,
            )
        there.close()
        return Worker(proc, Channel(here, lambda: proc.poll() is None), self.jax_options)


def worker_main(conn: Connection) -> None:
    """The worker: ready itself (see the module), then run the `(target, args)` it is
    ordered, with the parent's JAX options where it sends them, or end when dismissed."""
    # The parent decides what a Ctrl-C means (it ends this process).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent()
    # JAX, NumPy and the measuring code, loaded now: what makes a worker's start slow.
    from jitbench.measure import jax_config, opening  # noqa: F401

    try:
        kind, order = conn.recv()
    except EOFError:  # the parent went
        return
    if kind != "order":
        return
    target, args, options = order
    jax_config.apply(options)
    target(conn, *args)


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent() -> None:
    """Make this process (a worker) end when its parent does, even by SIGKILL: on Linux
    the kernel sends SIGKILL (prctl PR_SET_PDEATHSIG); elsewhere, or if that call fails,
    a daemon thread sees the parent gone (a new parent pid) within a second (not on
    Linux: a thread waking each second in a measuring process is noise it need not
    make). A parent already gone by the time this runs ends the process at once."""
    parent = os.getppid()
    if parent == 1:
        os._exit(1)
    if sys.platform.startswith("linux"):
        with suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0:
                return

    def exit_when_parent_dies() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(
        target=exit_when_parent_dies, name="jitbench-parent-watch", daemon=True
    ).start()


def _end_group(pid: int) -> None:
    """Kill what is left of the process group the worker `pid` leads (`Command.start`
    made it a session's, so the group's id is the worker's pid): processes the workload
    started, which would outlive the case's timeout, a stop, or the worker's own end (the
    worker too, when it is still there). The group's id stays the group's while any of
    it lives, even once the worker is reaped; an empty group leaves none to kill."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
