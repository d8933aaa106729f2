"""Change points in a history's series: a real step is found where it is, noise is not."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from jitbench.results.analysis.changes import Point, find_steps, history_steps


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


def test_runs_whose_intervals_are_wider_than_the_move_show_no_step() -> None:
    """Twelve runs that agree closely (by chance) but were each measured to ± 20 %: a 10 %
    move between them stands out of their scatter, not of their own intervals."""
    values = [1.0, 1.001, 0.999, 1.0, 1.001, 0.999, 1.1, 1.101, 1.099, 1.1, 1.101, 1.099]
    assert [s.at for s in find_steps(values)] == [6]
    wide = [(v / 1.2, v * 1.2) for v in values]
    assert find_steps(values, wide) == []
    tight = [(v / 1.01, v * 1.01) for v in values]
    assert [s.at for s in find_steps(values, tight)] == [6]


def test_tight_intervals_do_not_hide_the_scatter_between_runs() -> None:
    """Runs measured to ± 0.1 % that scatter by 3 % from run to run: no step in noise."""
    for seed in range(20):
        values = noisy(12, 0.03, seed)
        assert find_steps(values, [(v / 1.001, v * 1.001) for v in values]) == []


def test_a_run_without_an_interval_counts_with_the_scatter_alone() -> None:
    values = [v if i < 6 else v / 1.15 for i, v in enumerate(noisy(12, 0.03, 3))]
    assert find_steps(values, [(None, None)] * 12) == find_steps(values)
    with pytest.raises(ValueError, match="intervals"):
        find_steps(values, [(None, None)] * 11)


def test_a_history_step_names_its_two_runs_and_the_bisect_line() -> None:
    points = [
        Point(f"r{i}", f"c{i}" + (" dirty" if i == 6 else ""), 2.0 if i < 6 else 1.6, None, None)
        for i in range(12)
    ]
    (step,) = history_steps(points)
    assert (step.before.run_id, step.after.run_id) == ("r5", "r6")
    assert step.commits == ("c5", "c6")
    assert step.bisect_command("selu", "S") == "jitbench bisect c5 c6 -k selu -s S"
    nameless = [replace(p, commit=None) for p in points]
    (step,) = history_steps(nameless)
    assert step.commits is None
    assert step.bisect_command("selu", "S") is None


def test_a_step_is_written_as_how_much_slower_or_faster() -> None:
    from jitbench import formatting as fmt

    assert fmt.speedup_step(0.8, 0.75, 0.85) == "×1.25 slower [1.18–1.33]"
    assert fmt.speedup_step(1.2, 1.1, 1.3) == "×1.2 faster [1.1–1.3]"
    assert fmt.speedup_step(0.8, None, None) == "×1.25 slower"
