"""Order-statistic CIs, summaries, speedup CIs and the Mann–Whitney wrapper."""

from __future__ import annotations

import numpy as np
import pytest

from jitbench import stats


@pytest.mark.parametrize(
    ("n", "expected"),
    # Exact binomial 95 % CI ranks (1-based l, u) from standard tables.
    [(6, (1, 6)), (10, (2, 9)), (20, (6, 15)), (50, (18, 33)), (100, (40, 61))],
)
def test_median_ci_ranks_match_tables(n, expected):
    lo, hi = stats.median_ci_indices(n)
    assert (lo + 1, hi + 1) == expected


def test_median_ci_undefined_for_tiny_samples():
    assert stats.median_ci_indices(5) is None
    assert stats.median_ci([3.0, 1.0, 2.0]) == (1.0, 3.0)


def test_summarize():
    s = stats.summarize([1.0, 2.0, 3.0, 4.0, 100.0, 2.5, 2.0, 3.0, 1.5, 2.0])
    assert s.n == 10
    assert s.median == 2.25  # sorted: 1, 1.5, 2, 2, 2, 2.5, 3, 3, 4, 100 -> (2 + 2.5) / 2
    assert s.min == 1.0 and s.max == 100.0
    assert s.ci_low <= s.median <= s.ci_high


def test_summarize_median_of_even_count():
    assert stats.summarize([1.0, 2.0, 3.0, 4.0]).median == 2.5


def test_summarize_rejects_empty():
    with pytest.raises(ValueError):
        stats.summarize([])


def test_ratio_of_medians_ci_contains_true_ratio():
    rng = np.random.default_rng(1)
    slow = 10e-3 * (1 + 0.02 * rng.standard_normal(40))
    fast = 1e-3 * (1 + 0.02 * rng.standard_normal(40))
    r = stats.ratio_of_medians(slow, fast)
    assert r.value == pytest.approx(10, rel=0.02)
    assert r.low < 10 < r.high
    assert r.high / r.low < 1.1


def test_ratio_of_medians_identical_samples_has_zero_width_ci():
    r = stats.ratio_of_medians([2.0] * 5, [1.0] * 5)
    assert (r.value, r.low, r.high) == (2.0, 2.0, 2.0)


def test_ratio_of_medians_single_sample_has_no_ci():
    r = stats.ratio_of_medians([2.0], [1.0])
    assert r.value == 2.0 and r.low is None and r.high is None


def test_geometric_mean_ignores_non_positive():
    assert stats.geometric_mean([2.0, 8.0]) == pytest.approx(4.0)
    assert stats.geometric_mean([0.0, -1.0]) is None


def test_mann_whitney_identical_and_shifted():
    assert stats.mann_whitney_p([1.0] * 10, [1.0] * 10) == 1.0
    assert stats.mann_whitney_p(list(range(10)), [x + 100 for x in range(10)]) < 0.001
