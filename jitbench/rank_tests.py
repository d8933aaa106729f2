"""The two rank tests the gate uses, two-sided, in pure Python: Mann–Whitney U (two
independent sample sets) and the Wilcoxon signed-rank test with zero-split (paired log
ratios).

They give the p-values of `scipy.stats.mannwhitneyu(x, y)` and
`scipy.stats.wilcoxon(d, zero_method="zsplit")` at their defaults (method "auto"), which
`tests/test_rank_tests.py` checks against SciPy on inputs with ties, zeros and every
method. They live here rather than being called from SciPy because `import scipy.stats`
costs more than the whole of `jitbench compare` may take to start (issue 20; docs:
validation, "Start-up time"); the rest of `jitbench.stats` uses scipy.special, a fraction of that.

SciPy's method choice, kept exactly:

- Mann–Whitney: exact null distribution when a side has at most 8 samples and nothing is
  tied; otherwise the normal approximation with tie and continuity corrections.
- Signed rank: more than 50 differences, the normal approximation; no ties and no zeros,
  the exact null distribution; ties or zeros with at most 13 differences, the exact
  permutation distribution (all 2**n sign flips); otherwise the normal approximation
  with the tie correction (and, as SciPy's `wilcoxon` by default, no continuity
  correction).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from functools import lru_cache


def average_ranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """1-based ranks of `values` (ties share their average rank), and the size of every
    group of equal values."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    groups: list[int] = []
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        rank = (start + end + 2) / 2
        for i in order[start : end + 1]:
            ranks[i] = rank
        groups.append(end - start + 1)
        start = end + 1
    return ranks, groups


def _normal_two_sided(z: float) -> float:
    """2 P(Z >= |z|) for a standard normal Z."""
    return min(1.0, math.erfc(abs(z) / math.sqrt(2)))


@lru_cache(maxsize=256)
def _u_counts(n1: int, n2: int) -> tuple[int, ...]:
    """How many of the C(n1 + n2, n1) orderings give U = 0, 1, …, n1 n2: the coefficients of
    the Gaussian binomial [n1 + n2 choose n1](q), built as prod (1 - q^(n2+i)) / (1 - q^i)."""
    small, large = sorted((n1, n2))
    counts = [1] + [0] * (small * large)
    for i in range(1, small + 1):
        for k in range(len(counts) - 1, large + i - 1, -1):  # times (1 - q^(large+i))
            counts[k] -= counts[k - large - i]
        for k in range(i, len(counts)):  # divided by (1 - q^i)
            counts[k] += counts[k - i]
    return tuple(counts)


def mann_whitney_p(x: Sequence[float], y: Sequence[float]) -> float:
    """Two-sided Mann–Whitney U p-value of `x` against `y` (both non-empty, not all equal),
    as `scipy.stats.mannwhitneyu(x, y)` gives it."""
    n1, n2 = len(x), len(y)
    ranks, groups = average_ranks([*x, *y])
    u1 = sum(ranks[:n1]) - n1 * (n1 + 1) / 2
    u = max(u1, n1 * n2 - u1)
    tied = any(g > 1 for g in groups)
    if (n1 > 8 and n2 > 8) or tied:
        n = n1 + n2
        tie_term = sum(g**3 - g for g in groups)
        s = math.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))))
        z = (u - n1 * n2 / 2 - 0.5) / s
        return min(1.0, math.erfc(z / math.sqrt(2)))  # 2 P(Z >= z), z may be below 0
    counts = _u_counts(n1, n2)
    at_least = sum(counts[round(u) :])
    return min(1.0, 2 * at_least / math.comb(n1 + n2, n1))


@lru_cache(maxsize=64)
def _signed_rank_counts(n: int) -> tuple[int, ...]:
    """How many of the 2**n sign patterns of the ranks 1..n give each sum of positive ranks
    0, 1, …, n(n+1)/2."""
    counts = [1] + [0] * (n * (n + 1) // 2)
    for r in range(1, n + 1):
        for k in range(len(counts) - 1, r - 1, -1):
            counts[k] += counts[k - r]
    return tuple(counts)


def signed_rank_p(d: Sequence[float]) -> float:
    """Two-sided p-value of the Wilcoxon signed-rank test that the differences `d` are
    centred on zero, zeros split between the signs (`scipy.stats.wilcoxon(d,
    zero_method="zsplit")`); `d` must hold a non-zero value."""
    n = len(d)
    ranks, groups = average_ranks([abs(v) for v in d])
    zero_half = sum(r for r, v in zip(ranks, d, strict=True) if v == 0) / 2
    r_plus = sum(r for r, v in zip(ranks, d, strict=True) if v > 0) + zero_half
    has_ties = any(g > 1 for g in groups)
    has_zeros = any(v == 0 for v in d)
    if n <= 50 and not (has_ties or has_zeros):
        counts = _signed_rank_counts(n)
        k = round(r_plus)
        at_least, at_most = sum(counts[k:]), sum(counts[: k + 1])
        return min(1.0, 2 * min(at_least, at_most) / 2**n)
    if n <= 13:
        return _signed_rank_permutation_p(d, ranks, r_plus)
    mean = n * (n + 1) / 4
    variance = (n * (n + 1) * (2 * n + 1) - sum(g**3 - g for g in groups) / 2) / 24
    se = math.sqrt(variance)
    return _normal_two_sided((r_plus - mean) / se)  # no continuity correction, as SciPy


def _signed_rank_permutation_p(
    d: Sequence[float], ranks: Sequence[float], observed: float
) -> float:
    """The exact permutation p-value over all 2**n sign flips of `d` (zeros stay zero and
    keep their half rank on each side), with SciPy's relative tolerance for sums that are
    equal in theory but not in floating point."""
    gamma = abs(observed) * 100 * 2.220446049250313e-16
    fixed = sum(r for r, v in zip(ranks, d, strict=True) if v == 0) / 2
    movable = [r for r, v in zip(ranks, d, strict=True) if v != 0]
    zeros = len(d) - len(movable)
    less = greater = 0
    for signs in itertools.product((False, True), repeat=len(movable)):
        total = fixed + sum(r for r, positive in zip(movable, signs, strict=True) if positive)
        less += total <= observed + gamma
        greater += total >= observed - gamma
    # Flipping a zero leaves it zero: each of the 2**zeros copies counts alike.
    scale = 2**zeros
    total_patterns = 2 ** len(d)
    return min(1.0, 2 * min(less * scale, greater * scale) / total_patterns)
