"""What went wrong with a case, as its measurements record it and processes pass it on.

`error_info` turns an exception into the `ErrorInfo` a measurement keeps (its hint: the
exception kind's, or the one `add_hint` attached where the fault came from). `Skips` are
modes of cases left out, and why: a `--processes` worker leaves out a mode that ran past
--timeout in the first process (`timed_out_skips`); their JSON form travels in a worker's
order and in the messages of two processes side by side.
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Iterable, Mapping

from jitbench.measure import diagnose
from jitbench.results import ErrorInfo, Measurement, Mode, Status

MAX_ERROR_CHARS = 2000


def error_info(exc: BaseException) -> ErrorInfo:
    """An exception as recorded on a measurement: type, message (capped) and a fix hint.
    An exception with no message (a bare `assert`) is named by where it was raised, the
    innermost frame of its traceback, so the record says which check failed."""
    text = str(exc)
    if not text and exc.__traceback__ is not None:
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        text = f"raised at {frame.filename}:{frame.lineno} ({frame.line or frame.name})"
    if len(text) > MAX_ERROR_CHARS:
        text = text[:MAX_ERROR_CHARS] + " …"
    hint = diagnose.hint_for_exception(exc) or getattr(exc, _HINT_ATTR, "")
    return ErrorInfo(type=type(exc).__name__, message=text, hint=hint)


_HINT_ATTR = "_jitbench_hint"


def add_hint(exc: BaseException, hint: str) -> None:
    """Attach where a fault came from, for `error_info` (Python 3.10 lacks add_note)."""
    with contextlib.suppress(AttributeError, TypeError):  # a type with __slots__
        setattr(exc, _HINT_ATTR, hint)


Skips = Mapping[tuple[tuple[str, ...], Mode], str]
"""Modes of cases left out, and why: (case key, mode) → the reason (`open_cases`'s skip;
a `--processes` worker's modes that timed out in the first process)."""


def timed_out_skips(measurements: Iterable[Measurement]) -> dict[tuple[tuple[str, ...], Mode], str]:
    """The JAX modes of `measurements` that ran past --timeout (or reached it while
    sampling), with what happened: a later `--processes` worker leaves them out."""
    skips: dict[tuple[tuple[str, ...], Mode], str] = {}
    for m in measurements:
        if m.mode is Mode.NUMPY:
            continue
        capped = next((d for d in m.diagnostics if d.code == diagnose.MODE_CAPPED), None)
        if m.status is Status.TIMEOUT:
            skips[(m.case.key, m.mode)] = m.failure_text.removeprefix("timeout: ")
        elif capped is not None:
            skips[(m.case.key, m.mode)] = capped.message
    return skips
