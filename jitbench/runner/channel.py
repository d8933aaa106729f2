"""The one message channel between the run's parent process and a worker process.

A duplex pipe (`multiprocessing.Pipe`) carrying `(kind, body)` messages both ways: the
worker's order, each case it finishes and its run, and what processes measuring side by
side say (`runner.overlap`: started, done), so that no process watches a folder for
another's files. Once `listening`, each end takes in what arrives in a thread of its own:
a sender never waits on a receiver that is busy measuring (a worker's cases would block
it once the pipe's buffer filled while the parent measures), and `receive` waits for
some kinds of message while the others are held for a later call.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Collection
from multiprocessing.connection import Connection
from typing import Any

from jitbench.runner.signals import raise_if_stop_requested

#: How often a receiver checks for a stop request and whether the other end still runs.
POLL_S = 0.05
#: How long a receiver waits for messages still in transit once the other end has ended.
GRACE_S = 1.0

Message = tuple[str, Any]


class Channel:
    """One end of the channel: `send` a message, `receive` the next of some kinds.

    `alive` says whether the process at the other end still runs (its end of the pipe
    closes when it ends, but a process it started may hold a copy a while longer)."""

    def __init__(self, conn: Connection, alive: Callable[[], bool] = lambda: True) -> None:
        self._conn = conn
        self._alive = alive
        self._arrived: queue.Queue[Message | None] = queue.Queue()
        self._held: list[Message] = []
        self._closed = False  # the other end has closed
        self._listener: threading.Thread | None = None

    def listen(self) -> Channel:
        """Take in what arrives from now on in a thread (see the module); returns self."""
        if self._listener is None:
            self._listener = threading.Thread(
                target=self._take_in, name="jitbench-channel", daemon=True
            )
            self._listener.start()
        return self

    def _take_in(self) -> None:
        while True:
            try:
                message = self._conn.recv()
            except (EOFError, OSError):
                self._arrived.put(None)
                return
            except Exception as exc:  # a message this process cannot read: the end of it
                self._arrived.put(("error", f"a message that could not be read: {exc!r}"))
                self._arrived.put(None)
                return
            self._arrived.put(message)

    def send(self, kind: str, body: Any = None) -> bool:
        """Send a message; False where the other end has gone (it hears nothing more)."""
        try:
            self._conn.send((kind, body))
        except (OSError, ValueError):
            return False
        return True

    def receive(self, kinds: Collection[str], *, limit_s: float | None = None) -> Message | None:
        """The next message of one of `kinds` (others are held for a later call); None
        when `limit_s` passes first (0: look only at what has arrived). A stop a signal
        asked for is raised while it waits (`signals.raise_if_stop_requested`).

        Raises:
            EOFError: the other end ended without sending one.
            KeyboardInterrupt: a stop signal arrived.
        """
        self.listen()
        if limit_s == 0:  # only what has arrived already
            with contextlib.suppress(queue.Empty):
                while (arrived := self._arrived.get_nowait()) is not None:
                    self._held.append(arrived)
                self._closed = True
        for index, message in enumerate(self._held):
            if message[0] in kinds:
                return self._held.pop(index)
        end = None if limit_s is None else time.monotonic() + limit_s
        gone_since: float | None = None
        while limit_s != 0:
            if self._closed:
                raise EOFError
            try:
                arrived = self._arrived.get(timeout=POLL_S)
            except queue.Empty:
                now = time.monotonic()
                if not self._alive():
                    gone_since = now if gone_since is None else gone_since
                    if now - gone_since >= GRACE_S:
                        raise EOFError from None
                raise_if_stop_requested()
                if end is not None and now >= end:
                    return None
                continue
            if arrived is None:
                self._closed = True
                raise EOFError
            if arrived[0] in kinds:
                return arrived
            self._held.append(arrived)
        return None

    def close(self) -> None:
        """Close this end (the listener then ends too)."""
        with contextlib.suppress(OSError):
            self._conn.close()
