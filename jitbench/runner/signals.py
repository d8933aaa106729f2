"""Turn SIGTERM, SIGINT and SIGHUP into a clean stop of a run, with its partial results saved.

`stop_signals()` is what a command line installs around a run: while it is active, SIGINT
raises KeyboardInterrupt and SIGTERM (SIGHUP) raises `Terminated` (`HungUp`), both
KeyboardInterrupts, so the scheduler stops with `RunInterrupted` carrying the partial run.
Waits on a child process poll `stop_requested()`, so a stop is obeyed within a fraction of
a second even when its raise was swallowed. A handler's raise can be
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
    """SIGTERM, raised as an interrupt so the partial run is saved the same way.

    `signum` is the signal that asked for the stop; a shell reports 128 + signum.
    """

    signum: int = signal.SIGTERM


class HungUp(Terminated):
    """SIGHUP (the terminal or the SSH session went away): a stop like SIGTERM."""

    signum: int = getattr(signal, "SIGHUP", 1)


# The stops the signals asked for, oldest first; cleared when `stop_signals` is entered.
_stop_requested: list[type[KeyboardInterrupt]] = []


def _on_sigterm(_signum: int, _frame: object) -> None:
    _stop_requested.append(Terminated)
    raise Terminated


def _on_sighup(_signum: int, _frame: object) -> None:
    _stop_requested.append(HungUp)
    raise HungUp


def stop_requested() -> bool:
    """Whether a stop signal arrived in the current `stop_signals` block (its raise may
    have been swallowed); waits that can last long poll this."""
    return bool(_stop_requested)


def exit_status(interrupt: BaseException) -> int:
    """The exit status a shell gives a process ended by the signal behind `interrupt`:
    130 for Ctrl-C (SIGINT), 143 for SIGTERM, 129 for SIGHUP."""
    if isinstance(interrupt, Terminated):
        return 128 + int(interrupt.signum)
    return 128 + int(signal.SIGINT)


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
    """Turn SIGTERM, SIGINT and SIGHUP into interrupts for the block, remembered until
    honoured.

    An inherited SIG_IGN for SIGINT (a background job) or SIGHUP (nohup) is left alone.
    Off the main thread (where Python cannot install handlers) this does nothing. The
    previous handlers and `sys.unraisablehook` are restored on exit.
    """
    if not _on_main_thread():
        yield
        return
    _stop_requested.clear()
    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, _on_sigterm)}
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, _on_sigint)
    hup = getattr(signal, "SIGHUP", None)
    if hup is not None and signal.getsignal(hup) is not signal.SIG_IGN:  # not under nohup
        previous[hup] = signal.signal(hup, _on_sighup)
    previous_hook = sys.unraisablehook

    def quiet_recorded_interrupts(unraisable: Any) -> None:
        # A recorded stop is raised again at the next case boundary: no traceback for it.
        if isinstance(unraisable.exc_value, KeyboardInterrupt) and _stop_requested:
            return
        previous_hook(unraisable)

    sys.unraisablehook = quiet_recorded_interrupts
    _installed.clear()
    _installed.update({sig: signal.getsignal(sig) for sig in previous})
    try:
        yield
    finally:
        _installed.clear()
        sys.unraisablehook = previous_hook
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _stop_requested.clear()


#: The handlers `stop_signals` installed, by signal, while it is active.
_installed: dict[int, Any] = {}


def keep_stop_handlers() -> None:
    """Put back the stop handlers `stop_signals` installed where something replaced them
    (a workload that sets SIGINT to ignored, or to its own handler, would take Ctrl-C away
    from the user for the rest of the run). Called between a workload's calls; a no-op
    outside `stop_signals` and off the main thread."""
    if not _installed or not _on_main_thread():
        return
    for sig, handler in _installed.items():
        if signal.getsignal(sig) is not handler:
            signal.signal(sig, handler)


@contextmanager
def stop_handlers_kept() -> Iterator[None]:
    """While the block runs (a workload's calls), `signal.signal` for SIGINT, SIGTERM or
    SIGHUP leaves the stop handler in place (and returns it): a workload that set SIGTERM
    to ignored for its call would lose a stop that arrived meanwhile, which no later
    `keep_stop_handlers` can bring back. Other signals are set as asked. A no-op outside
    `stop_signals` and off the main thread."""
    if not _installed or not _on_main_thread():
        yield
        return
    real = signal.signal
    kept = dict(_installed)

    def keeping(signum: Any, handler: Any) -> Any:
        if signum in kept and threading.current_thread() is threading.main_thread():
            return real(signum, kept[signum])  # ours again, whatever was asked
        return real(signum, handler)

    signal.signal = keeping  # type: ignore[assignment]
    try:
        yield
    finally:
        signal.signal = real


@contextmanager
def signals_ignored() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP back for the block, so a second Ctrl-C cannot cut a
    save short; one that arrives meanwhile is delivered when the block ends (ignoring it
    would lose a container runtime's SIGTERM that happens to land during a checkpoint, and
    the run would go on until it is killed)."""
    if not _on_main_thread():
        yield
        return
    stops = [signal.SIGINT, signal.SIGTERM]
    if hasattr(signal, "SIGHUP"):
        stops.append(signal.SIGHUP)
    held: list[int] = []

    def hold(signum: int, _frame: object) -> None:
        held.append(signum)

    previous = {s: signal.signal(s, hold) for s in stops}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if held and previous.get(signal.Signals(held[0])) is not signal.SIG_IGN:
            signal.raise_signal(held[0])
