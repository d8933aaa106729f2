"""Order-statistic CIs, summaries, speedup CIs, the Mann–Whitney wrapper and the
run-level (moderated t) test."""

from __future__ import annotations

import ast
import math
import statistics
from pathlib import Path

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


def test_mann_whitney_min_p_and_samples_needed():
    # Exact two-sided Mann–Whitney on perfectly separated samples: 2 / C(2n, n).
    assert stats.mann_whitney_min_p(3, 3) == pytest.approx(2 / 20)
    assert stats.mann_whitney_min_p(4, 4) == pytest.approx(2 / 70)
    assert stats.mann_whitney_min_p(5, 5) == pytest.approx(2 / 252)
    assert stats.mann_whitney_samples_needed(0.01) == 5
    assert stats.mann_whitney_samples_needed(0.05) == 4
    assert stats.mann_whitney_min_p(0, 5) == 1.0


def test_benjamini_hochberg():
    # Sorted p_i * m / i, made monotone from the largest down, capped at 1, in input order.
    assert stats.benjamini_hochberg([0.04, 0.01, 0.03, 0.5]) == pytest.approx(
        [0.04 * 4 / 3, 0.04, 0.04 * 4 / 3, 0.5]
    )
    assert stats.benjamini_hochberg([0.002]) == [0.002]
    assert stats.benjamini_hochberg([]) == []


# --- the run-level test (pooled runs) -------------------------------------------------


def _normal_runs(rng, n_base, n_new, sigma, shift=0.0):
    base = np.exp(rng.normal(0.0, sigma, n_base)) * 1e-3
    new = np.exp(rng.normal(shift, sigma, n_new)) * 1e-3
    return stats.run_spread(base, new)


def test_run_spread_needs_three_runs_one_per_side():
    assert stats.run_spread([1e-3], [1e-3]) is None
    assert stats.run_spread([], [1e-3, 2e-3, 3e-3]) is None
    s = stats.run_spread([1e-3, 1e-3], [2e-3])
    assert s.df == 1 and s.diff == pytest.approx(math.log(2)) and s.sum_sq == 0


def test_typical_run_variance_estimates_the_variance_not_its_median():
    rng = np.random.default_rng(0)
    spreads = [_normal_runs(rng, 2, 2, 0.05) for _ in range(2000)]
    # The median of 2-df variance estimates is ~0.69 × the variance; the scaled one is not.
    assert statistics.median(s.variance for s in spreads) < 0.8 * 0.05**2
    assert stats.typical_run_variance(spreads) == pytest.approx(0.05**2, rel=0.1)
    assert stats.typical_run_variance([]) is None


def test_moderated_t_test_holds_its_level_and_covers_the_ratio():
    rng = np.random.default_rng(1)
    sigma, trials = 0.05, 2000
    null = [
        stats.moderated_t_test(_normal_runs(rng, 4, 4, sigma), sigma**2, 10.0)
        for _ in range(trials)
    ]
    false_alarms = sum(t.p_value < 0.05 for t in null) / trials
    # At most the level (a little under it: an exact prior steadies the variance more than
    # the t distribution assumes), never above it.
    assert 0.025 < false_alarms < 0.065
    assert 0.93 < sum(t.low <= 1.0 <= t.high for t in null) / trials < 0.97
    # A 30 % slowdown at 5 % run-to-run noise, four runs per side: always significant, and
    # nearly always below 0.01 / 60 (what Benjamini–Hochberg asks of a lone change in 60).
    slow = [
        stats.moderated_t_test(_normal_runs(rng, 4, 4, sigma, math.log(1.3)), sigma**2, 10.0)
        for _ in range(500)
    ]
    assert all(t.p_value < 1e-3 for t in slow)
    assert sum(t.p_value < 0.01 / 60 for t in slow) / len(slow) > 0.97


def test_a_case_noisier_than_the_suite_keeps_its_own_variance():
    s = stats.run_spread([1.0, 1.3, 1.0, 1.3], [1.3, 1.6, 1.3, 1.6])  # runs that jump ±13 %
    steady_prior = 0.01**2
    shrunk = stats.moderated_t_test(s, steady_prior, 10.0)
    prior_alone = stats.moderated_t_test(s, steady_prior, 1e6)
    # Its own spread keeps its weight (6 of 16 df), so the change is far less certain than
    # the suite's steadiness alone would make it: not significant among 60 tests at 0.01.
    assert shrunk.p_value > 0.01 / 60
    assert prior_alone.p_value < 1e-12


def test_moderated_t_test_with_zero_variance():
    same = stats.run_spread([1e-3, 1e-3], [1e-3, 1e-3])
    assert stats.moderated_t_test(same, 0.0, 10.0).p_value == 1.0
    apart = stats.moderated_t_test(stats.run_spread([1e-3, 1e-3], [2e-3, 2e-3]), 0.0, 10.0)
    assert apart.p_value == 0.0 and apart.ratio == pytest.approx(2.0)
    # Without a prior, the case's own variance alone (df = 2) decides.
    t = stats.moderated_t_test(stats.run_spread([1.0, 1.1], [2.0, 2.1]), None, 10.0)
    assert 0 < t.p_value < 0.05


def test_stats_imports_no_jitbench_module_but_errors():
    # Statistics stay below every stage: only the error family and the rank tests (which
    # import nothing of jitbench) may be imported.
    from jitbench import rank_tests

    rank_imports = ast.parse(Path(rank_tests.__file__).read_text())
    assert not [
        n
        for n in ast.walk(rank_imports)
        if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("jitbench")
    ]
    tree = ast.parse(Path(stats.__file__).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.module:
            imported.add(n.module)
            if n.module == "jitbench":
                imported.update(f"jitbench.{a.name}" for a in n.names)
    allowed = {"jitbench", "jitbench.errors", "jitbench.rank_tests"}
    assert {m for m in imported if m.split(".")[0] == "jitbench"} <= allowed


def test_paired_ratio_cancels_drift_common_to_a_round() -> None:
    import math

    from jitbench.stats import paired_ratio, ratio_of_medians

    # Each round is slowed by its own factor (drift), alike for both sides: the per-round
    # ratio is exactly 4, while the unpaired ratio of medians carries the drift's spread.
    drift = [1.0, 1.6, 0.9, 2.2, 1.1, 1.4, 0.95, 1.8, 1.2, 1.05, 2.0, 1.3]
    numpy_s = [4e-3 * d for d in drift]
    jit_s = [1e-3 * d for d in drift]
    paired = paired_ratio(numpy_s, jit_s)
    assert paired.value == pytest.approx(4.0)
    assert paired.low == pytest.approx(4.0) and paired.high == pytest.approx(4.0)
    unpaired = ratio_of_medians(numpy_s, jit_s)
    assert unpaired.low is not None and unpaired.high is not None
    assert math.log(unpaired.high / unpaired.low) > 0.3


def test_paired_ratio_interval_is_the_order_statistic_interval_of_the_log_ratios() -> None:
    from jitbench.stats import median_ci_indices, paired_ratio

    ratios = [2.0, 2.5, 1.5, 3.0, 2.2, 1.8, 2.1, 2.9, 1.7]
    r = paired_ratio(ratios, [1.0] * len(ratios))
    lo, hi = median_ci_indices(len(ratios))
    assert (r.low, r.high) == (sorted(ratios)[lo], sorted(ratios)[hi])
    assert r.value == pytest.approx(2.1)
    assert paired_ratio([2.0] * 5, [1.0] * 5).low is None  # too few pairs for 95 %
    with pytest.raises(ValueError, match="equal"):
        paired_ratio([1.0, 2.0], [1.0])


def test_repeat_interval_is_a_prediction_interval_from_the_process_spread() -> None:
    import math

    from scipy.stats import t as student_t

    from jitbench.stats import repeat_interval

    logs = [math.log(2.0), math.log(2.2)]
    own_var = (math.log(2.2) - math.log(2.0)) ** 2 / 2
    r = repeat_interval(logs, None, 10)
    half = student_t.ppf(0.975, 1) * math.sqrt(own_var * 2 / 2)
    assert r.value == pytest.approx(math.sqrt(2.0 * 2.2))
    assert math.log(r.high / r.value) == pytest.approx(half)
    # Shrunk toward the suite's typical variance, with the prior's degrees of freedom.
    prior = 0.01**2
    r2 = repeat_interval(logs, prior, 10)
    variance = (own_var * 1 + prior * 10) / 11
    half2 = student_t.ppf(0.975, 11) * math.sqrt(variance)
    assert math.log(r2.high / r2.value) == pytest.approx(half2)
    assert repeat_interval([0.5], None, 0).low is None  # one process: no spread to use


def test_median_ci_indices_are_exact_and_agree_with_scipy() -> None:
    """The order-statistic ranks come from exact binomial counts (no SciPy import at
    start-up); they are what scipy.stats.binom gives."""
    from scipy.stats import binom

    def with_scipy(n: int, confidence: float) -> tuple[int, int] | None:
        alpha = 1 - confidence
        if n < 1 or 2 * binom.cdf(0, n, 0.5) > alpha:
            return None
        low = max(int(binom.ppf(alpha / 2, n, 0.5)), 1)
        return low - 1, n - low

    for confidence in (0.9, 0.95, 0.99):
        for n in range(0, 700):
            assert stats.median_ci_indices(n, confidence) == with_scipy(n, confidence), n


def test_robust_sd_is_unmoved_by_a_wild_value() -> None:
    from jitbench.stats import robust_sd

    assert robust_sd([1.0, 2.0, 3.0, 4.0, 100.0]) == pytest.approx(1.4826)


def test_an_estimate_formats_and_converts_as_its_value() -> None:
    import doctest

    from jitbench.results.analysis.estimates import Estimate

    finder = doctest.DocTestFinder()
    [test] = [t for t in finder.find(Estimate, "Estimate") if t.examples]
    result = doctest.DocTestRunner().run(test)
    assert result.attempted == 3 and result.failed == 0
    e = Estimate(0.5, None, None)
    assert f"{e:.0%}" == "50%" and float(e) == 0.5 and f"{e}" == str(e)
