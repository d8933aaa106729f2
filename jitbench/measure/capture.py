"""Capture what a workload prints while it is measured, and say who printed what.

While an `OutputCapture` is entered, the process's stdout and stderr go to temporary files
at the file-descriptor level (fds 1 and 2: C-level `printf`, XLA's logging and subprocesses
too) and at the Python level (`sys.stdout`, `sys.stderr`, which a caller may have replaced):
a workload's `print` neither floods the terminal nor costs the time a terminal takes.
`OutputCapture.attribute(tally)` brackets a region (one mode's first call, or its timed
samples) and adds what was printed inside it to `tally`; `diagnose.prints_during_call`
turns a tally into the diagnostic. Lines in the format of absl/XLA's C++ logging
(`W0000 00:00:…`) are the runtime's, not the workload's: they are passed through to the
real stderr after the capture ends instead of being counted.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

#: The first printed line kept for the message is cut to this many characters.
FIRST_LINE_CHARS = 120

# absl / XLA C++ log lines: "W0000 00:00:1700000000.123456  1234 file.cc:12] message".
_RUNTIME_LOG = re.compile(rb"^[IWEF]\d{4} \d\d:\d\d:\d\d")
# What such a record may carry on its next lines: a source-location trace ("=== Source
# Location Trace: ===", then "external/xla+/xla/…/cuda_status.cc:45" lines), the
# slow-compile alarm's banner, and the blank line that ends it.
_RUNTIME_MORE = re.compile(
    rb"^(=== Source Location Trace: ===|\S+\.(cc|cpp|h):\d+"
    # XLA's slow-compile alarm: a rule of stars around "[Compiling module …] Very slow
    # compile? …" under its record
    rb"|\*{8,}|\[Compiling module [^\]]*\].*)?\s*$"
)
# A Python warning as `warnings` prints it: its file and line ("<stdin>:2", or the
# workload's file: JAX points its own warnings at the caller's line), "UserWarning: …",
# then the source line indented. The warnings machinery's output, not the workload printing.
_PY_WARNING = re.compile(rb"^\S.*:\d+: \w*Warning: ")
_WARNING_SOURCE = re.compile(rb"^  \S")


def split_runtime_log(text: bytes) -> tuple[list[bytes], list[bytes]]:
    """`text`'s lines (ends kept) as (the workload's, the runtime's log records): a
    record is a line in absl/XLA's format and the trace lines after it, or a Python
    warning (JAX's `UserWarning`s, pointed at the caller's line) and its source line."""
    own: list[bytes] = []
    runtime: list[bytes] = []
    in_record = in_warning = False
    for line in text.splitlines(keepends=True):
        source = in_warning and bool(_WARNING_SOURCE.match(line))
        in_warning = bool(_PY_WARNING.match(line))
        in_record = (
            bool(_RUNTIME_LOG.match(line))
            or in_warning
            or source
            or (in_record and bool(_RUNTIME_MORE.match(line)))
        )
        (runtime if in_record else own).append(line)
    return own, runtime


@dataclass
class PrintTally:
    """What one mode printed: lines and bytes in its first call(s) and in its timed calls
    (warm-up, calibration, sampling), and the first line it printed."""

    first_call_lines: int = 0
    first_call_bytes: int = 0
    timed_lines: int = 0
    timed_bytes: int = 0
    first_line: str = ""

    @property
    def lines(self) -> int:
        return self.first_call_lines + self.timed_lines

    @property
    def nbytes(self) -> int:
        return self.first_call_bytes + self.timed_bytes

    def add(self, text: bytes, *, timed: bool) -> None:
        """Count `text` (runtime log lines left out)."""
        kept = [line.rstrip(b"\r\n") for line in split_runtime_log(text)[0]]
        if not kept:
            return
        nbytes = sum(len(line) + 1 for line in kept)
        if timed:
            self.timed_lines += len(kept)
            self.timed_bytes += nbytes
        else:
            self.first_call_lines += len(kept)
            self.first_call_bytes += nbytes
        if not self.first_line:
            first = next((line for line in kept if line.strip()), b"")
            self.first_line = first.decode("utf-8", "replace").strip()[:FIRST_LINE_CHARS]


@functools.cache
def _libc() -> Any:
    """The C library of this process (None where it cannot be loaded)."""
    try:
        return ctypes.CDLL(None)
    except OSError:
        return None


def _flush_c_stdio() -> None:
    """Flush C stdio buffers (a `printf` without a newline waits there)."""
    libc = _libc()
    if libc is not None:
        with contextlib.suppress(Exception):
            libc.fflush(None)


@dataclass
class _Stream:
    """One captured stream: its fd, the saved original and the file it goes to now."""

    fd: int
    name: str  # "stdout" or "stderr" (the sys attribute)
    saved_fd: int = -1
    saved_obj: Any = None
    file: IO[bytes] | None = None
    wrapper: IO[str] | None = None
    # Bytes of `file` already attributed or passed through.
    read_to: int = 0


@dataclass
class OutputCapture:
    """Redirect stdout and stderr to temporary files while entered (see the module doc).

    Not reentrant; entering it inside another capture captures into the inner one. If
    the file descriptors cannot be redirected (no fd 1/2), only the Python level is.
    """

    streams: list[_Stream] = field(default_factory=list)
    unattributed: PrintTally = field(default_factory=PrintTally)
    runtime_log: bytearray = field(default_factory=bytearray)
    _active: bool = False

    def __enter__(self) -> OutputCapture:
        self._flush_all()
        self.streams = [_Stream(1, "stdout"), _Stream(2, "stderr")]
        for s in self.streams:
            s.file = tempfile.TemporaryFile()
            try:
                s.saved_fd = os.dup(s.fd)
                os.dup2(s.file.fileno(), s.fd)
            except OSError:
                s.saved_fd = -1
            s.saved_obj = getattr(sys, s.name)
            # A dup shares the file offset with fd 1/2, so both levels append in order.
            s.wrapper = open(  # closed in __exit__
                os.dup(s.file.fileno()), "w", buffering=1, encoding="utf-8", errors="replace"
            )
            setattr(sys, s.name, s.wrapper)
        self._active = True
        return self

    def __exit__(self, *exc: object) -> None:
        self._flush_all()
        self._take_unattributed()
        for s in self.streams:
            setattr(sys, s.name, s.saved_obj)
            if s.saved_fd >= 0:
                os.dup2(s.saved_fd, s.fd)
                os.close(s.saved_fd)
            if s.wrapper is not None:
                with contextlib.suppress(Exception):
                    s.wrapper.close()
            if s.file is not None:
                s.file.close()
        self.streams = []
        self._active = False
        if self.runtime_log:
            # The runtime's own log lines go where they would have gone.
            with contextlib.suppress(Exception):
                sys.stderr.write(self.runtime_log.decode("utf-8", "replace"))
                sys.stderr.flush()
            self.runtime_log.clear()

    def _flush_all(self) -> None:
        for obj in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                obj.flush()
        _flush_c_stdio()

    def _read_new(self) -> bytes:
        """Everything printed since the last read, both streams (stdout first)."""
        if not self._active:
            return b""
        self._flush_all()
        chunks = []
        for s in self.streams:
            assert s.file is not None
            end = os.fstat(s.file.fileno()).st_size
            if end > s.read_to:
                chunks.append(os.pread(s.file.fileno(), end - s.read_to, s.read_to))
                s.read_to = end
        kept, runtime = split_runtime_log(b"".join(chunks))
        self.runtime_log += b"".join(runtime)
        return b"".join(kept)

    def _take_unattributed(self) -> None:
        text = self._read_new()
        if text:
            self.unattributed.add(text, timed=False)

    @contextlib.contextmanager
    def attribute(self, tally: PrintTally, *, timed: bool) -> Iterator[None]:
        """Add what is printed inside the block to `tally` (first call or timed)."""
        self._take_unattributed()
        try:
            yield
        finally:
            text = self._read_new()
            if text:
                tally.add(text, timed=timed)


@contextlib.contextmanager
def maybe_attribute(
    capture: OutputCapture | None, tally: PrintTally, *, timed: bool
) -> Iterator[None]:
    """`capture.attribute(tally)`, or nothing when there is no capture."""
    if capture is None:
        yield
        return
    with capture.attribute(tally, timed=timed):
        yield
