"""Change points in a history's series: a real step is found where it is, noise is not."""

from __future__ import annotations

import random

import pytest

from jitbench.results.analysis.changes import find_steps


def noisy(n: int, sd: float, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [2.0 * (1 + rng.gauss(0, sd)) for _ in range(n)]


def test_a_fifteen_percent_step_is_found_at_its_run() -> None:
    for seed in range(10):
        values = [v if i < 6 else v / 1.15 for i, v in enumerate(noisy(12, 0.03, seed))]
        steps = find_steps(values)
        assert [s.at for s in steps] == [6], (seed, values)
        r = steps[0].ratio
        assert r.low < 1 / 1.15 < r.high or r.value == pytest.approx(1 / 1.15, rel=0.05)


def test_noise_alone_has_no_step() -> None:
    assert not any(find_steps(noisy(12, 0.03, seed)) for seed in range(50))


def test_a_step_below_the_smallest_change_is_not_reported() -> None:
    flat = [1.0] * 6 + [1.03] * 6  # perfectly clean, but 3 %
    assert find_steps(flat) == []
    assert [s.at for s in find_steps([1.0] * 6 + [1.2] * 6)] == [6]


def test_short_or_broken_series_have_no_steps() -> None:
    assert find_steps([1.0, 2.0, 2.0, 2.0, 2.0]) == []  # fewer than 3 runs a side
    assert find_steps([1.0] * 6 + [0.0] * 6) == []
    assert find_steps([]) == []


def test_two_steps_are_both_found() -> None:
    values = [
        v * (1.0 if i < 5 else 1.3 if i < 10 else 1.7) for i, v in enumerate(noisy(15, 0.02, 1))
    ]
    assert [s.at for s in find_steps(values)] == [5, 10]
