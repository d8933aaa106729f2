"""The `jitbench` command line: typer commands that parse, call the library and render.

The app lives in `cli.common`; each command module registers its command there when it is
imported below, and none of them imports this package, so there is no import cycle.
"""

from __future__ import annotations

from jitbench.cli import (  # noqa: F401  (register commands)
    ab,
    bisect,
    compare,
    history,
    info,
    profile,
    report,
    run,
)
from jitbench.cli.common import app, guard_std_streams

__all__ = ["app", "main"]


def main() -> None:
    """The `jitbench` console script."""
    guard_std_streams()
    try:
        app()
    except SystemExit as exc:
        exit_despite_leftovers(exc.code)
        raise
    exit_despite_leftovers(0)


def exit_despite_leftovers(code: object) -> None:
    """End the process now, with `code`, when something a workload left behind would keep
    Python from exiting: a thread that is not a daemon (Python waits for each at exit) or a
    multiprocessing child that is not one (joined at exit). The command is over and its
    files are written; only the standard streams are flushed first. Otherwise return, and
    Python exits as usual."""
    import contextlib
    import os
    import sys
    import threading

    others = [t for t in threading.enumerate() if t is not threading.main_thread()]
    blocking = any(not t.daemon for t in others)
    if not blocking and "multiprocessing" in sys.modules:
        import multiprocessing

        blocking = any(not p.daemon for p in multiprocessing.active_children())
    if not blocking:
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    status = code if isinstance(code, int) else (0 if code is None else 1)
    os._exit(status)
