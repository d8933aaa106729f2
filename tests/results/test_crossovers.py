"""Crossovers of a sweep's speedups (`results.analysis.crossovers`): interpolated in the
sweep's parameter, and only where the intervals say the modes really swap."""

from __future__ import annotations

import pytest

from jitbench.results import Mode
from jitbench.results.analysis.crossovers import SpeedupPoint, crossovers, sweep_verdict


def _pts(xs, ys, width=0.0):
    return [
        SpeedupPoint(f"n={x}", x, y, y * (1 - width), y * (1 + width))
        for x, y in zip(xs, ys, strict=True)
    ]


def test_crossovers_interpolate_in_the_parameter() -> None:
    # jit speedup x/50: below 1 at 10, above at 100 and 1000; 1× at 50.
    points = _pts([10, 100, 1000], [0.2, 2.0, 20.0])
    (c,) = crossovers(points, Mode.JIT, "n")
    assert c.overtakes and c.x == pytest.approx(50.0)
    assert c.text == "jit overtakes NumPy at n ≈ 50"
    assert c.short == "jit overtakes at n ≈ 50"
    (c,) = crossovers(_pts([10, 100, 1000], [5.0, 0.5, 0.05]), Mode.JIT, "n")
    assert not c.overtakes and 10 < c.x < 100
    faster = _pts([10, 100, 1000], [2.0, 3.0, 4.0])
    assert crossovers(faster, Mode.JIT) == []
    assert "faster than NumPy at every size" in sweep_verdict(faster, Mode.JIT)


def test_crossovers_ignore_noise_around_parity() -> None:
    noisy = _pts([10, 100, 1000, 10_000], [1.2, 0.9, 1.1, 0.95], width=0.5)
    assert crossovers(noisy, Mode.JIT) == []
    assert "no clear crossover" in sweep_verdict(noisy, Mode.JIT)
    # a real change with a noisy wobble on the way is one crossover, not three
    wobble = [
        SpeedupPoint("a", 10, 0.3, 0.2, 0.4),
        SpeedupPoint("b", 100, 1.1, 0.5, 2.0),
        SpeedupPoint("c", 1000, 0.9, 0.5, 2.0),
        SpeedupPoint("d", 10_000, 10.0, 8.0, 12.0),
    ]
    (c,) = crossovers(wobble, Mode.JIT)
    assert c.overtakes and 10 < c.x < 100
