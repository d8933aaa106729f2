"""`jitbench.rank_tests` against SciPy, which it stands in for (to keep `scipy.stats`'s
import out of `jitbench compare`): the same p-values on random inputs of every shape the
methods switch on: small and large sides, ties, zeros, all-equal magnitudes. SciPy's
functions are imported in the tests that use them: scipy.stats's import was a second of
every xdist worker's collection."""

from __future__ import annotations

import random

import pytest

from jitbench import rank_tests, stats


def _sample(rng: random.Random, n: int, *, ties: bool) -> list[float]:
    if ties:  # a few distinct values: many ties
        return [float(rng.randint(0, 5)) for _ in range(n)]
    return [rng.lognormvariate(0, 0.3) for _ in range(n)]


@pytest.mark.parametrize("ties", [False, True])
def test_mann_whitney_matches_scipy(ties: bool) -> None:
    from scipy.stats import mannwhitneyu

    rng = random.Random(1 + ties)
    checked = 0
    for _ in range(400):
        x = _sample(rng, rng.randint(1, 30), ties=ties)
        y = [v * rng.choice((1.0, 1.2)) for v in _sample(rng, rng.randint(1, 30), ties=ties)]
        if len(set(x) | set(y)) == 1:
            continue
        expected = float(mannwhitneyu(x, y, alternative="two-sided").pvalue)
        assert rank_tests.mann_whitney_p(x, y) == pytest.approx(expected, rel=1e-9, abs=1e-15)
        checked += 1
    assert checked > 300


def test_mann_whitney_exact_branch_matches_scipy() -> None:
    """Both sides small and untied: SciPy's exact null distribution, every shape."""
    from scipy.stats import mannwhitneyu

    rng = random.Random(3)
    for n1 in range(1, 9):
        for n2 in range(1, 12):
            x = _sample(rng, n1, ties=False)
            y = [v + 0.1 for v in _sample(rng, n2, ties=False)]
            expected = float(mannwhitneyu(x, y, method="exact").pvalue)
            assert rank_tests.mann_whitney_p(x, y) == pytest.approx(expected, rel=1e-12)


def test_mann_whitney_separated_sides_reach_the_exact_minimum() -> None:
    # Perfect separation, 5 vs 5: 2 / C(10, 5)
    assert rank_tests.mann_whitney_p([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) == pytest.approx(2 / 252)


def _differences(rng: random.Random, n: int, kind: str) -> list[float]:
    if kind == "distinct":
        return [rng.gauss(0.05, 0.1) for _ in range(n)]
    if kind == "ties":
        return [rng.choice((-2, -1, 1, 2, 3)) * 0.01 for _ in range(n)]
    return [rng.choice((-1, 0, 0, 1, 2)) * 0.01 for _ in range(n)]  # zeros and ties


@pytest.mark.parametrize("kind", ["distinct", "ties", "zeros"])
def test_signed_rank_matches_scipy(kind: str) -> None:
    from scipy.stats import wilcoxon

    rng = random.Random(len(kind))
    # Ties or zeros with n <= 13 take the permutation branch, where SciPy enumerates the
    # 2**n sign flips in up to seconds a call: fewer of those, and one of size 11.
    small = [*range(1, 10)] * (2 if kind != "distinct" else 8) + [11]
    for n in small + [14, 15, 20, 30, 49, 50, 51, 80, 200] * 6:
        d = _differences(rng, n, kind)
        if not any(d):
            continue
        expected = float(wilcoxon(d, zero_method="zsplit").pvalue)
        assert rank_tests.signed_rank_p(d) == pytest.approx(expected, rel=1e-9, abs=1e-15), d


def test_signed_rank_all_positive_is_the_smallest_exact_p() -> None:
    assert rank_tests.signed_rank_p([0.1, 0.2, 0.3, 0.4, 0.5, 0.6]) == pytest.approx(2 / 64)


def test_average_ranks_share_ties() -> None:
    assert rank_tests.average_ranks([3.0, 1.0, 3.0, 2.0]) == ([3.5, 1.0, 3.5, 2.0], [1, 1, 2])


def test_benjamini_hochberg_matches_scipy() -> None:
    from scipy.stats import false_discovery_control

    rng = random.Random(5)
    for m in (2, 3, 10, 57):
        p = [rng.random() ** 3 for _ in range(m)]
        expected = [float(q) for q in false_discovery_control(p, method="bh")]
        assert stats.benjamini_hochberg(p) == pytest.approx(expected, rel=1e-12)


def test_t_distribution_matches_scipy() -> None:
    from scipy.stats import t as student_t
    from scipy.stats import ttest_1samp

    for df in (1, 2.5, 7, 40):
        assert stats.t_two_sided_p(2.1, df) == pytest.approx(2 * student_t.sf(2.1, df))
        assert stats.t_quantile(0.975, df) == pytest.approx(student_t.ppf(0.975, df))
    values = [0.03, -0.01, 0.05, 0.02]
    assert stats.one_sample_t_p(values) == pytest.approx(ttest_1samp(values, 0.0).pvalue)


@pytest.mark.e2e  # a fresh interpreter: what it imports
def test_compare_path_does_not_import_scipy_stats() -> None:
    """The point of this module: judging two runs never imports scipy.stats."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from jitbench import stats\n"
        "stats.mann_whitney_p([1.0, 2.0, 3.0], [4.0, 5.0, 6.5])\n"
        "stats.signed_rank_p([0.1, -0.2, 0.3, 0.0])\n"
        "stats.benjamini_hochberg([0.1, 0.2])\n"
        "stats.one_sample_t_p([0.1, 0.2, 0.4])\n"
        "stats.typical_variance([(0.1, 3)])\n"
        "print('scipy.stats' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
