"""Fitting rich renderables to a width, and rendering them as plain text for a pipe.

Tables here come in layouts from roomy to tight (`fit_first` picks the first whose
narrowest rendering fits); `plain_text` renders without colour or trailing padding, at a
given width or at the renderable's natural width (piped output with no `COLUMNS`).
Nothing here prints.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from rich.cells import cell_len
from rich.console import Console, RenderableType

R = TypeVar("R", bound=RenderableType)

#: Widest rendering considered for "natural width" (a pipe with no COLUMNS).
MAX_NATURAL_WIDTH = 1000


def _measuring_console(width: int) -> Console:
    return Console(
        width=width,
        file=io.StringIO(),
        color_system=None,
        force_terminal=False,
        force_jupyter=False,
        legacy_windows=False,
        highlight=False,
    )


def natural_width(renderable: RenderableType) -> int:
    """The columns `renderable` takes when nothing wraps (rich's maximum), capped at
    `MAX_NATURAL_WIDTH`."""
    console = _measuring_console(MAX_NATURAL_WIDTH)
    return min(console.measure(renderable).maximum, MAX_NATURAL_WIDTH)


def wrap_slack(texts: Iterable[str]) -> int:
    """Columns a wrapping column can give up without breaking a word: its natural width
    (the longest line of `texts`, header included) minus its longest word."""
    lines = [line for text in texts for line in text.splitlines()]
    words = [word for line in lines for word in line.split()]
    natural = max((cell_len(line) for line in lines), default=0)
    longest = max((cell_len(word) for word in words), default=0)
    return max(0, natural - longest)


@dataclass(frozen=True)
class Fitted(Generic[R]):
    """A layout's renderable and the fewest columns it needs without breaking a word."""

    renderable: R
    needs: int


def fitted(renderable: R, *wrapping: Iterable[str]) -> Fitted[R]:
    """`renderable` with its need: its natural width less the slack of each wrapping
    column (given as that column's header and cell texts; the others never wrap)."""
    return Fitted(renderable, natural_width(renderable) - sum(wrap_slack(t) for t in wrapping))


def fit_first(layouts: Sequence[Callable[[], Fitted[R]]], width: int | None) -> R:
    """The renderable of the first layout that fits in `width` columns without breaking a
    word (the last one when none does: it is then drawn wrapped); the first one when
    `width` is None (no limit)."""
    if not layouts:
        raise ValueError("no layouts to choose from")
    if width is None:
        return layouts[0]().renderable
    for build in layouts[:-1]:
        candidate = build()
        if candidate.needs <= width:
            return candidate.renderable
    return layouts[-1]().renderable


def plain_text(renderable: RenderableType, width: int | None = None) -> str:
    """`renderable` as plain text (no colour, no escape codes), every line stripped of
    trailing spaces, ending in a newline. `width` None: its natural width."""
    if width is None:
        width = max(1, natural_width(renderable))
    console = _measuring_console(width)
    console.print(renderable)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n" if lines else ""
