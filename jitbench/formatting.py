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


def eta(seconds: float | None) -> str:
    """'ETA 1:05', 'ETA 0:07', 'ETA 1:02:03'; '' when unknown."""
    if seconds is None:
        return ""
    total = max(0, round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"ETA {hours}:{minutes:02d}:{secs:02d}"
    return f"ETA {minutes}:{secs:02d}"


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


def number(value: float, *, digits: int = 3) -> str:
    """A figure to `digits` significant digits in plain notation, never an exponent and
    without trailing zeros (as the 'g' format): ``645.2 -> '645'``, ``1234.5 -> '1,234'``,
    ``0.000123 -> '0.000123'``, ``13.0 -> '13'``."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = digits - 1 - magnitude
    if decimals <= 0:
        return f"{value:,.0f}"
    # Trailing zeros go, as with the 'g' format: '13×', not '13.0×'.
    return f"{value:.{decimals}f}".rstrip("0").rstrip(".")


def ratio(value: float | None, *, digits: int = 3) -> str:
    """Format a speedup or ratio, e.g. ``12.345 -> '12.3×'``, ``1234 -> '1,234×'``."""
    if value is None or math.isnan(value):
        return "—"
    if math.isinf(value):
        return "∞"
    return f"{number(value, digits=digits)}×"


def approx(value: float) -> str:
    """An interpolated parameter value to three significant figures: '21,600', '73.4',
    '0.25'."""
    rounded = float(f"{value:.3g}")
    return f"{rounded:,.0f}" if rounded >= 100 else f"{rounded:.3g}"


def interval(low: float, high: float, *, digits: int = 3) -> str:
    """An interval's ends, ``'[10.9–11.1]'``."""
    return f"[{number(low, digits=digits)}–{number(high, digits=digits)}]"


def ratio_ci(value: float | None, low: float | None, high: float | None) -> str:
    """Format a ratio with its confidence interval, e.g. ``'12.3× [12.1–12.5]'``."""
    if value is None:
        return "—"
    if low is None or high is None:
        return ratio(value)
    return f"{ratio(value)} {interval(low, high)}"


def speedup_step(value: float, low: float | None, high: float | None) -> str:
    """A step of a speedup series (the speedup after ÷ before, with its interval) as how
    much slower or faster it made the mode, e.g. ``0.87 -> '×1.15 slower [1.09–1.21]'``."""
    slower = value < 1
    factor = 1 / value if slower else value
    ends = [1 / high, 1 / low] if slower and low and high else [low, high] if low and high else []
    text = f"×{number(factor)} {'slower' if slower else 'faster'}"
    return f"{text} {interval(*ends)}" if ends else text


#: Beyond ×/÷ this an interval is lopsided enough (its upper side +25 %, its lower −20 %)
#: that one ± figure would mislead: it is written as its two ends instead.
PM_MAX_FACTOR = 1.25


def pm_misleads(value: float, low: float, high: float) -> bool:
    """Whether `ratio_pm` writes the interval as [low–high] rather than ± a percent."""
    return max(high / value, value / low) > PM_MAX_FACTOR


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
    whole, possibly asymmetric, interval), rounded up to a whole percent. An interval
    wider than ×/÷ `PM_MAX_FACTOR` is written as its ends (``'13× [1.03–645]'``): never
    a ± above 25 %. Without an interval, the ratio alone.
    """
    if value is None:
        return "—"
    text = ratio(value, digits=digits)
    if not times:
        text = text.removesuffix("×")
    if low is None or high is None or not value > 0 or not math.isfinite(value):
        return text
    if not (low > 0 and high > 0) or pm_misleads(value, low, high):
        if not (low > 0 and math.isfinite(high)):
            return text
        return f"{text}{' ' if space else ''}{interval(low, high, digits=digits)}"
    wider = max(high / value - 1, 1 - low / value, 0.0)
    pct = wider * 100
    if not math.isfinite(pct):  # an interval of zeros or infinities: no ± to print
        return text
    figure = max(0, math.ceil(pct - 1e-9))  # up: the figure covers the interval
    return f"{text}{' ' if space else ''}±{figure}%"


#: The marks a speedup may carry, each explained once beside the table that shows it.
SUSPECT_MARK = "⚠"  # it rests on a figure slower than a larger size (a stall)
DISAGREE_MARK = "≠"  # its processes measured it clearly apart


#: The mark of a speedup over eager (jit in a case with no NumPy side), in every table.
OVER_EAGER_MARK = "ᵉ"


def marks(*, suspect: bool, disagree: bool) -> str:
    """'⚠', '≠', both or '' for a speedup, as every table writes them."""
    return (SUSPECT_MARK if suspect else "") + (DISAGREE_MARK if disagree else "")


def seconds_pm(value: float, low: float | None, high: float | None) -> str:
    """A time's interval beside it: '±3%', or its ends where a ± would mislead
    ('[14.5 µs–71.7 µs]', as `ratio_pm`); '' without one."""
    if low is None or high is None or not (value > 0 and low > 0 and high > 0):
        return ""
    if pm_misleads(value, low, high):
        return f"[{seconds(low)}–{seconds(high)}]"
    return ratio_pm(value, low, high, times=False).partition(" ")[2]


def change(ratio: float) -> str:
    """A ratio as the change it is, to a tenth of a percent below +100 %: ``1.148 ->
    '+14.8 %'``, ``0.9 -> '−10.0 %'``, ``1.0003 -> '+0.0 %'``, ``4.07 -> '+307 %'``."""
    pct = round((ratio - 1) * 100, 1)
    sign = "−" if pct < 0 else "+"
    return f"{sign}{abs(pct):.1f} %" if abs(pct) < 100 else f"{sign}{abs(pct):,.0f} %"


def change_ci(ratio: float, low: float | None, high: float | None) -> str:
    """A ratio as a change with its interval, ``'+14.8 % [+9.1 %, +21.0 %]'``."""
    if low is None or high is None:
        return change(ratio)
    return f"{change(ratio)} [{change(low)}, {change(high)}]"


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


#: Characters that start emphasis, code, links, images (`[`), HTML, entities, math or
#: end a cell.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>|#~&@$])")
#: What GitHub turns into a link by itself (its autolink extension): a scheme and its
#: colon, 'www.' (the escaped character then ends the would-be link), an e-mail's '@'.
_MD_AUTOLINK = re.compile(r"(?i)(https?|ftp|mailto|xmpp|file|javascript|data)(:)|(www)(\.)")


def _break_autolink(m: re.Match[str]) -> str:
    word, mark = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    return f"{word}\\{mark}"


def md_escape(text: object) -> str:
    """Escape text for GitHub-flavoured markdown, a table cell included: the one place
    every string a markdown output takes from a run passes (names, run ids, labels,
    commits, environment, notes).

    A line break becomes a space and `|` is escaped (they would end the row or cell);
    every character that could start emphasis, code, a link, an image, raw HTML or an
    entity is escaped, and a URL's scheme or 'www.' is broken up so that nothing
    becomes a live link; controls and bidirectional overrides are shown as escapes
    (`terminal_safe`)."""
    s = terminal_safe(" ".join(str(text).splitlines()).replace("\t", " "))
    s = _MD_SPECIAL.sub(r"\\\1", s)
    return _MD_AUTOLINK.sub(_break_autolink, s)


def md_code(text: object) -> str:
    """`text` as an inline code span (literal, so no link or HTML can form in it); text
    a code span cannot hold literally (a backtick or `|`, which ends a table cell even
    there) is `md_escape`d instead."""
    s = terminal_safe(" ".join(str(text).splitlines()).replace("\t", " "))
    if not s.strip() or "`" in s or "|" in s:
        return md_escape(s)
    return f"`{s}`"
