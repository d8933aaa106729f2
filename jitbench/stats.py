"""Summary statistics of raw samples: median with a distribution-free CI, speedup CIs.

Timing samples are skewed and heavy-tailed, so everything here is built on the median and
order statistics rather than the mean and a normal approximation.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Summary:
    """Summary of samples in seconds per call; `ci_low`/`ci_high` bound the median."""

    n: int
    median: float
    ci_low: float
    ci_high: float
    iqr: float
    min: float
    max: float
    mean: float
    stdev: float

    @property
    def ci_halfwidth_rel(self) -> float:
        """Half-width of the median CI relative to the median (0.01 means ±1 %)."""
        if self.median == 0:
            return math.inf
        return (self.ci_high - self.ci_low) / 2 / self.median

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def median_ci_indices(n: int, confidence: float = CONFIDENCE) -> tuple[int, int] | None:
    """0-based order-statistic indices (lo, hi) bounding the median at `confidence`.

    Exact binomial method: the interval [x_(l), x_(u)] (1-based) covers the population
    median with probability P(l <= B < u), B ~ Binomial(n, 1/2). Returns None when even
    (min, max) cannot reach the requested confidence (n < 6 at 95 %).
    """
    from scipy.stats import binom

    alpha = 1 - confidence
    if n < 1 or 2 * binom.cdf(0, n, 0.5) > alpha:
        return None
    # Largest l with P(B <= l-1) <= alpha/2.
    l_1based = int(binom.ppf(alpha / 2, n, 0.5))
    if binom.cdf(l_1based - 1, n, 0.5) > alpha / 2:  # pragma: no cover - float edge
        l_1based -= 1
    l_1based = max(l_1based, 1)
    u_1based = n - l_1based + 1
    return l_1based - 1, u_1based - 1


def median_ci(samples: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Distribution-free CI of the median; (min, max) when there are too few samples."""
    xs = sorted(samples)
    idx = median_ci_indices(len(xs), confidence)
    if idx is None:
        return xs[0], xs[-1]
    return xs[idx[0]], xs[idx[1]]


def summarize(samples: Sequence[float]) -> Summary:
    """Summarise samples (seconds per call). Raises ValueError on an empty sequence."""
    if not samples:
        raise ValueError("no samples to summarise")
    xs = np.asarray(samples, dtype=float)
    q1, q3 = np.percentile(xs, [25, 75])
    lo, hi = median_ci(list(xs))
    return Summary(
        n=len(xs),
        median=float(np.median(xs)),
        ci_low=float(lo),
        ci_high=float(hi),
        iqr=float(q3 - q1),
        min=float(xs.min()),
        max=float(xs.max()),
        mean=float(xs.mean()),
        stdev=float(statistics.stdev(xs)) if len(xs) > 1 else 0.0,
    )


@dataclass(frozen=True)
class Ratio:
    """A ratio of medians (e.g. a speedup) with a CI; low/high are None if not estimable."""

    value: float
    low: float | None
    high: float | None


def ratio_of_medians(
    numerator: Sequence[float],
    denominator: Sequence[float],
    *,
    confidence: float = CONFIDENCE,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Ratio:
    """median(numerator) / median(denominator) with a percentile-bootstrap CI.

    The two sample sets are resampled independently (they come from interleaved rounds,
    but sample counts may differ between modes). Deterministic for a given `seed`.
    """
    a = np.asarray(numerator, dtype=float)
    b = np.asarray(denominator, dtype=float)
    value = float(np.median(a) / np.median(b))
    if len(a) < 2 or len(b) < 2:
        return Ratio(value, None, None)
    rng = np.random.default_rng(seed)
    ra = np.median(rng.choice(a, size=(n_resamples, len(a)), replace=True), axis=1)
    rb = np.median(rng.choice(b, size=(n_resamples, len(b)), replace=True), axis=1)
    ratios = ra / rb
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return Ratio(value, float(low), float(high))


def geometric_mean(values: Sequence[float]) -> float | None:
    """Geometric mean of positive finite values; None when there are none."""
    vals = [v for v in values if v > 0 and math.isfinite(v)]
    if not vals:
        return None
    return float(math.exp(sum(math.log(v) for v in vals) / len(vals)))


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided Mann–Whitney U p-value; 1.0 when the test is undefined (identical data)."""
    from scipy.stats import mannwhitneyu

    if len(a) == 0 or len(b) == 0:
        return 1.0
    if len(set(a) | set(b)) == 1:
        return 1.0
    return float(mannwhitneyu(a, b, alternative="two-sided").pvalue)
