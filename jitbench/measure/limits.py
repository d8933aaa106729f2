"""Per-mode time limits inside a case: each mode of a case may spend `--timeout` seconds in
its own calls (its first call, warm-up and calibration, samples), and a mode past its limit
is stopped while the others keep their figures.

`ModeLimit.charged(step)` arms `SIGALRM` (`signal.setitimer`) for what is left of the mode's
allowance and raises `ModeTimeout` from the handler. `ModeTimeout` is an `Exception`, so the
protocol's per-mode handlers record it on that mode alone (`session.ModeState.fail`),
and sampling, which stops a failing series and goes on with the others, keeps the samples a
mode took before its limit (`session.CaseSession._sample`). An outer timer (the in-process
case deadline, `runner.deadline`) is honoured: where it is due first, its own handler runs.
Off the main thread, or without `setitimer`, the time is only counted. A single long native
call is interrupted only when it returns, as with the case deadline; `--isolate` then stops
the whole case at its limit (`runner.executors.group_timeout`). Where the limit is reached
inside a `doing` block, the ModeTimeout says what ran over (a jit first call's tracing,
XLA's compile, its first run, or jitbench's analysis of the compiled program).
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType

#: After the limit, SIGALRM fires again at this interval until the mode's call returns, in
#: case the first ModeTimeout was swallowed (a workload's own `except Exception`).
RETRY_INTERVAL_S = 0.5


class ModeTimeout(Exception):
    """A mode of a case ran past its time limit in `step` ("first call", "warm-up", …),
    in what `doing` says where it is known ("XLA's compile", …)."""

    def __init__(
        self, mode: str, limit_s: float, step: str, spent_s: float, doing: str | None = None
    ) -> None:
        super().__init__(
            f"{mode} exceeded --timeout {limit_s:g} s in its {step} "
            f"(after {spent_s:.1f} s of its own calls) and was stopped"
            + (f", in {doing}" if doing else "")
        )
        self.mode = mode
        self.limit_s = limit_s
        self.step = step
        self.spent_s = spent_s
        self.doing = doing


#: What the mode is doing now (innermost last): a text, or a function that says it.
_doing: list[str | Callable[[], str]] = []


@contextmanager
def doing(what: str | Callable[[], str]) -> Iterator[None]:
    """Within the block, a limit reached says what ran over: `what`, or what it returns
    at the moment the limit is reached (a first call's stage, read from its events)."""
    _doing.append(what)
    try:
        yield
    finally:
        del _doing[next(i for i in range(len(_doing) - 1, -1, -1) if _doing[i] is what)]


def doing_now() -> str | None:
    """What the innermost `doing` block says now; None outside one."""
    if not _doing:
        return None
    what = _doing[-1]
    try:
        return what() if callable(what) else what
    except Exception:
        return None


#: contextlib's functions that run a context manager's exit (ExitStack's callbacks too).
_EXITS = ("__exit__", "_exit_wrapper")


def leaving_a_context(frame: FrameType | None) -> bool:
    """Whether `frame` is within a context manager's exit (contextlib's `__exit__`, or an
    `ExitStack`'s callbacks). A ModeTimeout raised there would abort that exit before it
    reaches `charged`'s own (or `runner.deadline`'s), leaving its handler and repeating
    timer armed after the block (they fired in a later test's teardown); the retry a
    moment later raises it instead."""
    while frame is not None:
        code = frame.f_code
        if code.co_filename == contextlib.__file__ and code.co_name in _EXITS:
            return True
        frame = frame.f_back
    return False


def _can_alarm() -> bool:
    return (
        hasattr(signal, "setitimer")
        and hasattr(signal, "SIGALRM")
        and threading.current_thread() is threading.main_thread()
    )


@dataclass
class ModeLimit:
    """The time one mode of a case has spent in its own calls, against `limit_s` (None: no
    limit, the time is only counted)."""

    mode: str
    limit_s: float | None = None
    others: tuple[str, ...] = ()  # the case's other modes, for the hint (--modes without it)
    spent_s: float = 0.0
    steps: dict[str, float] = field(default_factory=dict)  # seconds by step
    clock: Callable[[], float] = time.monotonic

    @property
    def left_s(self) -> float | None:
        return None if self.limit_s is None else self.limit_s - self.spent_s

    def timeout(self, step: str, doing: str | None = None) -> ModeTimeout:
        assert self.limit_s is not None
        return ModeTimeout(self.mode, self.limit_s, step, self.spent_s, doing)

    @contextmanager
    def charged(self, step: str) -> Iterator[None]:
        """Count the block's time to this mode (under `step`); raise ModeTimeout in it once
        the mode's allowance is spent (at once, where it already is)."""
        left = self.left_s
        if left is not None and left <= 0:
            raise self.timeout(step)
        started = self.clock()
        real_start = time.monotonic()
        if left is None or not _can_alarm():
            try:
                yield
            finally:
                self._add(step, self.clock() - started)
            return
        old_delay, old_interval = signal.getitimer(signal.ITIMER_REAL)
        previous = signal.getsignal(signal.SIGALRM)
        outer_first = 0 < old_delay < left and callable(previous)
        active, fired, counted = [True], [False], [0.0]
        at_limit: list[str | None] = []  # what the mode was doing when the limit came

        def on_alarm(signum: int, frame: FrameType | None) -> None:
            if not active[0]:
                return
            if not outer_first and not at_limit:
                # Now, before a retry: a native call (XLA's compile) that ran over returns
                # into a context's exit, where no ModeTimeout is raised, and it is gone
                # by the retry.
                at_limit.append(doing_now())
            if leaving_a_context(frame):
                return
            if outer_first and callable(previous):
                previous(signum, frame)  # the outer deadline's own handler (it raises)
                return
            if not fired[0]:  # the limit reached: counted now, the rest on the way out
                fired[0] = True
                counted[0] = self.clock() - started
                self._add(step, counted[0])
            raise self.timeout(step, at_limit[0])  # again at each retry, until it stops

        signal.signal(signal.SIGALRM, on_alarm)
        try:
            signal.setitimer(
                signal.ITIMER_REAL, old_delay if outer_first else left, RETRY_INTERVAL_S
            )
            yield
        finally:
            try:
                active[0] = False
                self._add(step, self.clock() - started - counted[0])
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)
                if old_delay > 0:  # give back an outer timer what is left of it
                    took = time.monotonic() - real_start
                    signal.setitimer(signal.ITIMER_REAL, max(old_delay - took, 1e-3), old_interval)

    def _add(self, step: str, seconds: float) -> None:
        self.spent_s += seconds
        self.steps[step] = self.steps.get(step, 0.0) + seconds
