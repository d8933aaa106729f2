"""The one family of errors jitbench raises for problems a user can act on.

Each message names the thing, shows the bad value and says what to do; the CLI maps every
`JitbenchError` to a one-line message and the exit code in `exit_code`.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable


class JitbenchError(Exception):
    """Base of all errors meant for the user. `exit_code` is what the CLI exits with."""

    exit_code: int = 2


class SuiteError(JitbenchError):
    """A suite path, suite file or workload name is wrong."""


class WorkloadError(JitbenchError):
    """A workload definition is invalid (bad preset, bad static name, bad inputs)."""


class NoNumpySide(WorkloadError):
    """Raised by the NumPy side of a workload that has none (`bench` without `numpy=`):
    its JAX modes are measured and compared with each other, not with NumPy."""


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
    close = close_names(name[:200], known)  # a 100 kB name must not cost a long match
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ";"
    listing = (
        "`jitbench list` shows all." if kind == "workload" else f"{known_as}: {', '.join(known)}."
    )
    return f"unknown {kind} {short_repr(name)}{hint} {listing}"


#: A quoted value in a message longer than this many characters is cut (`shorten_quoted`):
#: more than a real path takes, far less than a value pasted in the wrong place.
QUOTED_LIMIT = 200
# A value in single or double quotes (as repr writes it) of more than QUOTED_LIMIT
# characters; the opening quote follows no letter and the closing one precedes none, so
# the apostrophes of prose ("don't", "the runs' folder") do not open a value.
_LONG_QUOTED = re.compile(
    r"(?<!\w)(['\"])((?:(?!\1)[^\\\n]|\\.){" + str(QUOTED_LIMIT + 1) + r",}?)\1(?!\w)"
)


def shorten_quoted(message: str, limit: int = QUOTED_LIMIT) -> str:
    """`message` with every quoted value over `limit` characters cut in the middle (a
    path's file name, at its end, stays): the error boundary's net, so no user value (a
    100,000-character name, `-k` or path) makes a one-line error of 100 kB."""

    def cut(match: re.Match[str]) -> str:
        quote, inner = match.group(1), match.group(2)
        if len(inner) <= limit:
            return match.group(0)
        half = (limit - 3) // 2
        return f"{quote}{inner[:half]}...{inner[-half:]}{quote}"

    return _LONG_QUOTED.sub(cut, message)


def short_repr(value: object, limit: int = 60) -> str:
    """`repr(value)`, cut to `limit` characters so that a one-line message can quote it."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def close_names(name: str, known: Iterable[str]) -> list[str]:
    """Up to three of `known` closest to `name`, closest first. A sweep label ('n=12345')
    finds the label of the same parameters nearest in value ('n=10000', not the 'n=100'
    its spelling is closest to); any other name the closest spellings, ignoring case, as
    devices and modes are matched (`-s s` finds 'S')."""
    known = list(known)
    numbers = _label_numbers(name)
    if numbers is not None:
        alike = [(k, n) for k in known if (n := _label_numbers(k)) and n.keys() == numbers.keys()]
        if alike:
            nearest = min(alike, key=lambda kn: _log_distance(numbers, kn[1]))
            return [nearest[0]]
    by_folded: dict[str, list[str]] = {}
    for k in known:
        by_folded.setdefault(k.casefold(), []).append(k)
    close = difflib.get_close_matches(name.casefold(), list(by_folded), n=3, cutoff=0.5)
    return [k for folded in close for k in by_folded[folded]][:3]


def _label_numbers(label: str) -> dict[str, float] | None:
    """{'n': 1000.0} for the sweep label 'n=1000' ('k=v,k=v' with positive numbers);
    None for any other name."""
    numbers: dict[str, float] = {}
    for part in label.split(","):
        key, sep, value = part.partition("=")
        try:
            number = float(value)
        except ValueError:
            return None
        if not sep or not key.strip() or not (math.isfinite(number) and number > 0):
            return None
        numbers[key.strip()] = number
    return numbers


def _log_distance(a: dict[str, float], b: dict[str, float]) -> float:
    # Sweeps grow geometrically (100, 1000, 10000): 12345 is nearer 10000 than 100000.
    return sum(abs(math.log(a[k] / b[k])) for k in a)
