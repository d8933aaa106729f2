"""Turn numbers carried in SI units (seconds, bytes, ratios) into short human strings.

Only renderers (console, HTML, markdown) call this module; the data keeps raw floats.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable
from typing import Any

_TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))


def seconds(value: float | None, *, digits: int = 3, compact: bool = False) -> str:
    """Format a duration in seconds with an SI prefix, e.g. ``2.51e-5 -> '25.1 µs'``
    (``'25.1µs'`` with `compact`, for narrow tables)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if math.isinf(value):
        return "∞"
    space = "" if compact else " "
    if value == 0:
        return f"0{space}s"
    for scale, unit in _TIME_UNITS:
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g}{space}{unit}"
    return f"{value / 1e-9:.{digits}g}{space}ns"


def peak_bytes(value: int | None, exact: bool) -> str:
    """A memory peak: '12 MiB', or '≤ 12 MiB' where it is only an upper bound."""
    return "—" if value is None else ("" if exact else "≤ ") + bytes_(value)


def bytes_(value: float | None, *, compact: bool = False) -> str:
    """Format a byte count with binary prefixes, e.g. ``4_000_000 -> '3.81 MiB'``
    (``'3.81MiB'`` with `compact`)."""
    if value is None:
        return "—"
    space = "" if compact else " "
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{size:.3g}{space}{unit}" if unit != "B" else f"{int(size)}{space}B"
        size /= 1024
    raise AssertionError("unreachable")


def ratio(value: float | None, *, digits: int = 3) -> str:
    """Format a speedup or ratio, e.g. ``12.345 -> '12.3×'``."""
    if value is None or math.isnan(value):
        return "—"
    if math.isinf(value):
        return "∞"
    return f"{value:.{digits}g}×"


def ratio_ci(value: float | None, low: float | None, high: float | None) -> str:
    """Format a ratio with its confidence interval, e.g. ``'12.3× [12.1–12.5]'``."""
    if value is None:
        return "—"
    if low is None or high is None:
        return ratio(value)
    return f"{ratio(value)} [{low:.3g}–{high:.3g}]"


def ratio_pm(
    value: float | None,
    low: float | None,
    high: float | None,
    *,
    digits: int = 3,
    space: bool = True,
    times: bool = True,
) -> str:
    """A ratio with its CI as one ± figure, for narrow tables: ``'3.16× ±8%'``.

    The ± is the wider side of the interval relative to the value (so it covers the
    whole, possibly asymmetric, interval), rounded up to a whole percent. Without an
    interval, the ratio alone.
    """
    if value is None:
        return "—"
    text = ratio(value, digits=digits)
    if not times:
        text = text.removesuffix("×")
    if low is None or high is None or not value > 0 or not math.isfinite(value):
        return text
    wider = max(high / value - 1, 1 - low / value, 0.0)
    pct = wider * 100
    if not math.isfinite(pct):  # an interval of zeros or infinities: no ± to print
        return text
    figure = max(0, math.ceil(pct - 1e-9))  # up: the figure covers the interval
    return f"{text}{' ' if space else ''}±{figure}%"


def percent(value: float | None, *, digits: int = 2) -> str:
    """Format a fraction as a percentage, e.g. ``0.0312 -> '3.1 %'``, ``0.0004 -> '0.04 %'``."""
    if value is None or math.isnan(value):
        return "—"
    if math.isinf(value):
        return "∞"
    return f"{value * 100:.{digits}g} %"


def count(value: float | None) -> str:
    """Format a possibly infinite count (break-even calls), e.g. ``1234.5 -> '1,235'``."""
    if value is None:
        return "—"
    if math.isinf(value):
        return "never"
    return f"{math.ceil(value):,}"


#: What a terminal would act on instead of showing: C0 controls but tab and newline (ESC
#: starts screen clears, OSC 52 clipboard writes, cursor moves), DEL, C1 controls (8-bit
#: CSI and OSC), and the bidirectional overrides that reorder what is shown.
_TERMINAL_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str) -> str:
    """`text` with every character a terminal would act on shown as an escape instead:
    ``'a\x1b[2Jb' -> 'a\\x1b[2Jb'``. Names and labels come from run files, which may
    come from untrusted CI artifacts; the CLI applies this to everything it prints."""
    return _TERMINAL_CONTROL.sub(_visible_control, text)


def _visible_control(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


#: First characters that make a spreadsheet read a cell as a formula (or, for tab and
#: carriage return, that some spreadsheets strip before they look).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def csv_cell(value: object) -> object:
    """A CSV cell that a spreadsheet cannot run: text that would start a formula gets a
    leading apostrophe (results files may come from untrusted CI artifacts); a number,
    or text that is a plain number ('-0.5'), is left as it is. Every CSV jitbench writes
    goes through this."""
    if (
        isinstance(value, str)
        and value[:1] in _FORMULA_START
        and not _PLAIN_NUMBER.fullmatch(value)
    ):
        return "'" + value
    return value


class SafeCsvWriter:
    """`csv.writer` whose rows pass `csv_cell` cell by cell: the one rule for every CSV
    jitbench writes (`--format csv`, runs/*.csv, `compare --format csv`)."""

    def __init__(self, stream: Any) -> None:
        self._writer = csv.writer(stream, lineterminator="\n")

    def writerow(self, row: Iterable[object]) -> Any:
        return self._writer.writerow([csv_cell(cell) for cell in row])


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>|#~])")


def md_escape(text: object) -> str:
    """Escape text for a GitHub-flavoured markdown table cell.

    `|` would end the cell and a newline the row; the other characters could start
    emphasis, code, links or HTML.
    """
    s = " ".join(str(text).splitlines())
    return _MD_SPECIAL.sub(r"\\\1", s)
