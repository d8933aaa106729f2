"""Where a JAX mode and NumPy swap places on a size sweep: `crossovers` of the speedups
the run shows at each size (`ModeFigure.speedup`, with its interval), and the sentence
every reader of a sweep states (`sweep_verdict`), computed once here."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from jitbench import formatting as fmt
from jitbench.config import Mode


@dataclass(frozen=True)
class SpeedupPoint:
    """The speedup over NumPy of one mode at one sweep size, with its 95 % interval."""

    size: str
    x: float
    value: float
    low: float
    high: float
    suspect: bool = False
    #: processes that disagree or an interval too wide (`ModeFigure.uncertain`)
    uncertain: bool = False

    @property
    def order(self) -> int:
        """+1 when the mode is clearly faster than NumPy (interval above 1), -1 when
        clearly slower, 0 when the interval contains 1."""
        if self.low > 1:
            return 1
        if self.high < 1:
            return -1
        return 0


@dataclass(frozen=True)
class Crossover:
    """Where `mode` and NumPy swap places on a sweep, in the sweep's own parameter `axis`
    (interpolated on log–log axes). `overtakes` is True where `mode` becomes faster than
    NumPy as the size grows, False where it falls behind."""

    mode: Mode
    x: float
    overtakes: bool
    axis: str = "elements"

    @property
    def short(self) -> str:
        verb = "overtakes" if self.overtakes else "falls behind"
        return f"{self.mode.value} {verb} at {self.axis} ≈ {fmt.approx(self.x)}"

    @property
    def text(self) -> str:
        verb = "overtakes" if self.overtakes else "falls behind"
        return f"{self.mode.value} {verb} NumPy at {self.axis} ≈ {fmt.approx(self.x)}"


def crossovers(
    points: Sequence[SpeedupPoint], mode: Mode, axis: str = "elements"
) -> list[Crossover]:
    """Sizes where `mode` and NumPy swap places, from the speedups of one sweep.

    The size is interpolated on log–log axes between the two points where the speedup
    crosses 1. A crossing counts only when it is real: the nearest points on either side
    whose intervals exclude 1 must be on opposite sides of it, so noise around parity is
    not drawn as a crossover, and a real change crossed again by noise on the way counts
    once.
    """
    pts = [p for p in points if p.value > 0 and p.x > 0]
    order = [p.order for p in pts]
    out: list[Crossover] = []
    for i, (p0, p1) in enumerate(itertools.pairwise(pts)):
        l0, l1 = math.log(p0.value), math.log(p1.value)
        if (l0 > 0) == (l1 > 0) or l0 == l1 or p0.x == p1.x:
            continue
        before = next((o for o in reversed(order[: i + 1]) if o), 0)
        after = next((o for o in order[i + 1 :] if o), 0)
        if before != (1 if l0 > 0 else -1) or after != -before:
            continue
        overtakes = l0 < 0
        if out and out[-1].overtakes == overtakes:
            continue  # the same real change, crossed twice more by noise on the way
        t = l0 / (l0 - l1)
        lx = math.log(p0.x) + t * (math.log(p1.x) - math.log(p0.x))
        out.append(Crossover(mode, math.exp(lx), overtakes=overtakes, axis=axis))
    return out


def sweep_verdict(points: Sequence[SpeedupPoint], mode: Mode, axis: str = "elements") -> str:
    """A sentence on how `mode` compares with NumPy across the sweep. Not escaped."""
    cross = crossovers(points, mode, axis)
    if cross:
        return "; ".join(c.text for c in cross)
    order = [p.order for p in points]
    if not order:
        return f"{mode.value}: no sizes to compare with NumPy"
    if all(o > 0 for o in order):
        return f"{mode.value} is faster than NumPy at every size measured"
    if all(o < 0 for o in order):
        return f"{mode.value} is slower than NumPy at every size measured"
    return f"{mode.value}: no clear crossover (within noise of NumPy at some sizes)"
