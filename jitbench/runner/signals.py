"""Turn SIGTERM and SIGINT into a clean stop of a run, with its partial results saved.

`stop_signals()` is what a command line installs around a run: while it is active, SIGINT
raises KeyboardInterrupt and SIGTERM raises `Terminated` (a KeyboardInterrupt too), so the
scheduler stops with `RunInterrupted` carrying the partial run. A handler's raise can be
lost when the signal lands while Python runs a callback that swallows exceptions (JAX's gc
callback, a `__del__`), so each request is also recorded, and the scheduler raises it again
at the next case boundary (`raise_if_stop_requested`). `signals_ignored()` shields the
saving of the partial run from a second Ctrl-C.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised as an interrupt so the partial run is saved the same way."""


# The stops the signals asked for, oldest first; cleared when `stop_signals` is entered.
_stop_requested: list[type[KeyboardInterrupt]] = []


def _on_sigterm(_signum: int, _frame: object) -> None:
    _stop_requested.append(Terminated)
    raise Terminated


def _on_sigint(_signum: int, _frame: object) -> None:
    _stop_requested.append(KeyboardInterrupt)
    raise KeyboardInterrupt


def raise_if_stop_requested() -> None:
    """Raise the interrupt a signal asked for, if its own raise was swallowed; a no-op
    when none was (and always outside `stop_signals`)."""
    if _stop_requested:
        raise _stop_requested[0]()


def _on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def stop_signals() -> Iterator[None]:
    """Turn SIGTERM and SIGINT into interrupts for the block, remembered until honoured.

    An inherited SIG_IGN for SIGINT (a background job) is left alone. Off the main thread
    (where Python cannot install handlers) this does nothing. The previous handlers and
    `sys.unraisablehook` are restored on exit.
    """
    if not _on_main_thread():
        yield
        return
    _stop_requested.clear()
    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, _on_sigterm)}
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, _on_sigint)
    previous_hook = sys.unraisablehook

    def quiet_recorded_interrupts(unraisable: Any) -> None:
        # A recorded stop is raised again at the next case boundary: no traceback for it.
        if isinstance(unraisable.exc_value, KeyboardInterrupt) and _stop_requested:
            return
        previous_hook(unraisable)

    sys.unraisablehook = quiet_recorded_interrupts
    try:
        yield
    finally:
        sys.unraisablehook = previous_hook
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _stop_requested.clear()


@contextmanager
def signals_ignored() -> Iterator[None]:
    """Ignore SIGINT and SIGTERM for the block, so a second Ctrl-C cannot cut a save short."""
    if not _on_main_thread():
        yield
        return
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
