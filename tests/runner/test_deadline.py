"""The per-case deadline of a case measured in this process (SIGALRM)."""

from __future__ import annotations

import signal
import threading

import pytest

from jitbench.errors import ConfigError
from jitbench.runner.deadline import CaseTimeout, deadline
from tests.conftest import alarm_raises_inside_an_exit


def test_in_process_timeout_restores_the_alarm_handler() -> None:
    def marker(_signum: int, _frame: object) -> None:
        pass

    before = signal.signal(signal.SIGALRM, marker)
    try:
        with pytest.raises(CaseTimeout), deadline(0.2):
            while True:  # a real hang in Python, interrupted by SIGALRM
                pass
        assert signal.getsignal(signal.SIGALRM) is marker
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
        with deadline(5.0) as limit:
            pass
        assert not limit.expired and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    finally:
        signal.signal(signal.SIGALRM, before)


def test_deadline_off_the_main_thread_is_refused() -> None:
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            with deadline(1.0):
                pass
        except ConfigError as exc:
            errors.append(exc)

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert errors and "main thread" in str(errors[0])


def test_a_limit_too_small_to_enter_the_block_still_disarms_the_timer() -> None:
    # The alarm is due before the block starts: it must still be disarmed and the handler
    # restored (armed outside its `try`, it went on firing every 0.5 s and later killed
    # the process with SIGALRM's default action, exit 142).
    before = signal.getsignal(signal.SIGALRM)
    timeouts = 0
    for _ in range(50):
        try:
            with deadline(1e-6):
                for _ in range(1000):  # a little Python work for the alarm to land in
                    pass
        except CaseTimeout:
            timeouts += 1
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
        assert signal.getsignal(signal.SIGALRM) is before
    assert timeouts > 0


def test_the_deadline_never_raises_inside_a_context_managers_exit() -> None:
    """An alarm that lands while a context manager exits waits for the retry: raised
    there, it would abort the exit before the deadline's own and leave its handler and
    repeating timer armed after the block."""
    import sys

    with deadline(30.0):
        assert not alarm_raises_inside_an_exit(CaseTimeout)
        with pytest.raises(CaseTimeout):  # in the block itself it raises
            signal.getsignal(signal.SIGALRM)(signal.SIGALRM, sys._getframe())  # type: ignore[operator]
    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0
