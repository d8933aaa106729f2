"""A per-case time limit for a case measured in this process.

`deadline(seconds)` arms `SIGALRM` (`signal.setitimer`) and raises `CaseTimeout` from the
handler on the main thread, which interrupts a hung Python loop. Limits: Python runs signal
handlers between bytecodes, so a single long C call (one huge XLA compile, one BLAS call, a
C extension that never returns) is interrupted only when it returns; it needs the main
thread and a POSIX `setitimer`. Measuring in a child process (`--isolate`, `runner.child`) is
the remedy when that is not enough.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType

from jitbench.errors import ConfigError
from jitbench.measure.limits import leaving_a_context

# After the deadline, SIGALRM fires again at this interval until the case stops, in case
# the first CaseTimeout was swallowed (e.g. converted by native code into another error).
RETRY_INTERVAL_S = 0.5


class CaseTimeout(BaseException):
    """A case ran past its deadline.

    A BaseException (like KeyboardInterrupt), so the protocol's per-mode `except Exception`
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

    def on_alarm(_signum: int, frame: FrameType | None) -> None:
        if state.active and not leaving_a_context(frame):
            state.expired = True
            raise CaseTimeout(seconds)

    # Read the outer timer first, then arm ours inside the `try`: an alarm due before the
    # block starts (a tiny limit) raises there, and the `finally` still disarms the
    # repeating timer (armed outside, it would fire every RETRY_INTERVAL_S for ever).
    old_delay, old_interval = signal.getitimer(signal.ITIMER_REAL)
    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, on_alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, seconds, RETRY_INTERVAL_S)
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
