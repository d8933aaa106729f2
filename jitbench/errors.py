"""The one family of errors jitbench raises for problems a user can act on.

Each message names the thing, shows the bad value and says what to do; the CLI maps every
`JitbenchError` to a one-line message and the exit code in `exit_code`.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class JitbenchError(Exception):
    """Base of all errors meant for the user. `exit_code` is what the CLI exits with."""

    exit_code: int = 2


class SuiteError(JitbenchError):
    """A suite path, suite file or workload name is wrong."""


class WorkloadError(JitbenchError):
    """A workload definition is invalid (bad preset, bad static name, bad inputs)."""


class ConfigError(JitbenchError):
    """A run option is invalid (unknown mode, size or device, bad budget)."""


class ResultsFormatError(JitbenchError):
    """A results file is missing, unreadable, not a jitbench run, or of a newer schema."""


class OutputError(JitbenchError):
    """An output location cannot be written."""


def unknown_name_message(
    kind: str, name: str, known: Iterable[str], *, known_as: str = "known"
) -> str:
    """'unknown workload 'x'; did you mean 'y'? …' with the closest known names, then the
    known ones (`known_as` says whose they are, e.g. "the run has")."""
    known = list(known)
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ";"
    listing = (
        "`jitbench list` shows all." if kind == "workload" else f"{known_as}: {', '.join(known)}."
    )
    return f"unknown {kind} {name!r}{hint} {listing}"
