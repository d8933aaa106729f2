"""A workload's bare `os.fork()`: its child is ended at once, the parent is told.

The child of a bare fork returns from the workload into jitbench and goes on as a second
jitbench (measuring, printing, holding the run's stdout pipe open, so `jitbench run | cat`
never ends). `refuse_forks()` installs, once per measuring process, a fork hook that
ends such a child with `os._exit` before it returns, and counts the fork in the parent
(`forks_made`), so the case that forked is recorded as an error. Two kinds of fork never
return into jitbench and are left alone: subprocess's (an exec follows, with
`preexec_fn`) and multiprocessing's fork start method (its child ends itself).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from types import FrameType

#: Exit status of a forked child ended at once (sysexits' EX_SOFTWARE).
FORKED_CHILD_STATUS = 70

_real_exit = os._exit
_installed: list[int] = []  # the pid that installed the hooks
_forks = [0]
_active = [0]  # the hooks act while this is above 0 (`refuse_forks`, `forks_refused`)


class ForkRefused(RuntimeError):
    """The workload called os.fork(); its child was ended at once."""


def _returns_to_caller(frame: FrameType | None) -> bool:
    """Whether the fork called from `frame` has a child that returns into its caller
    (not subprocess's, which execs, nor multiprocessing's, which exits by itself)."""
    if frame is None:
        return True
    filename = frame.f_code.co_filename.replace(os.sep, "/")
    return not filename.endswith(("/subprocess.py", "/multiprocessing/popen_fork.py"))


def _before() -> None:
    if _active[0] and _returns_to_caller(sys._getframe(1)):
        _forks[0] += 1


def _after_in_child() -> None:
    if _active[0] and _returns_to_caller(sys._getframe(1)):
        _real_exit(FORKED_CHILD_STATUS)


def _install() -> None:
    if not _installed and hasattr(os, "register_at_fork"):
        _installed.append(os.getpid())
        os.register_at_fork(before=_before, after_in_child=_after_in_child)


def refuse_forks() -> None:
    """Refuse bare forks in this process from now on (a process that only measures: an
    `--isolate` child, an `ab` worker)."""
    _install()
    _active[0] += 1


@contextlib.contextmanager
def forks_refused() -> Iterator[None]:
    """Refuse bare forks while the block runs (the hooks, once installed, stay in the
    process but do nothing outside such a block)."""
    _install()
    _active[0] += 1
    try:
        yield
    finally:
        _active[0] -= 1


def forks_made() -> int:
    """How many bare forks this process made since `refuse_forks`."""
    return _forks[0]


def fork_error() -> ForkRefused:
    """The error a case that forked is recorded with (its hint attached by the caller)."""
    return ForkRefused(
        "the workload called os.fork(); its child was ended at once (it would have gone "
        "on as a second jitbench)"
    )


FORK_HINT = (
    "start processes with subprocess or multiprocessing instead of a bare os.fork(); "
    "a forked copy of jitbench would go on measuring and keep its output pipes open."
)
