"""Statistics of raw timing samples: medians with distribution-free CIs, ratio CIs, and the
significance tests the gate uses (Mann–Whitney U, a moderated t-test on run medians,
Benjamini–Hochberg adjustment), free of any jitbench type.

Timing samples are skewed and heavy-tailed, so everything on samples is built on the median
and order statistics rather than the mean and a normal approximation. The one exception is
the run-level test on each pooled run's median: a (moderated) t-test on their logs, which
assumes those are normal; the gate pairs it with Mann–Whitney for that reason.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from jitbench import rank_tests

# NumPy and SciPy are imported where they are used, and never scipy.stats (its import is
# slow: docs: validation, "Start-up time"): reading, judging and rendering runs (the CLI's
# `report` and `compare`) should start at once. The rank tests are in `rank_tests`;
# Student's t and chi-square come from scipy.special.

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


@lru_cache(maxsize=4096)
def median_ci_indices(n: int, confidence: float = CONFIDENCE) -> tuple[int, int] | None:
    """0-based order-statistic indices (lo, hi) bounding the median at `confidence`.

    Cached: they depend on n alone, and scipy's binomial takes milliseconds a call (a
    report of 15,000 measurements spent minutes here, one call per measurement).

    Exact binomial method: the interval [x_(l), x_(u)] (1-based) covers the population
    median with probability P(l <= B < u), B ~ Binomial(n, 1/2). Returns None when even
    (min, max) cannot reach the requested confidence (n < 6 at 95 %). The binomial
    probabilities are exact (integer counts over 2**n), as `scipy.stats.binom` gives them
    in floating point.
    """
    if n < 1:
        return None
    if n > EXACT_CI_MAX_N:
        return _median_ci_indices_large(n, confidence)
    half_alpha = Fraction(1 - confidence) / 2
    total = 1 << n  # P(B <= k) = sum_{i <= k} C(n, i) / 2**n
    if 2 * Fraction(1, total) > 2 * half_alpha:
        return None
    # l = the smallest k with P(B <= k) >= alpha/2 (binom.ppf); then P(B <= l-1) < alpha/2.
    # In integers: cumulative / 2**n >= num / den  <=>  cumulative * den >= num * 2**n.
    num, den = half_alpha.numerator, half_alpha.denominator
    target = num * total
    term = cumulative = 1  # C(n, 0)
    l_1based = n
    for k in range(n + 1):
        if k:
            term = term * (n - k + 1) // k  # C(n, k)
            cumulative += term
        if cumulative * den >= target:
            l_1based = k
            break
    l_1based = max(l_1based, 1)
    u_1based = n - l_1based + 1
    return l_1based - 1, u_1based - 1


#: Above this many samples the binomial sums are taken in floating point
#: (`scipy.special.bdtr`): exact integers cost O(n²) bit operations, 17 s for 10⁶ samples,
#: and at such n the two differ by far less than one order statistic.
EXACT_CI_MAX_N = 10_000


def _median_ci_indices_large(n: int, confidence: float) -> tuple[int, int]:
    """`median_ci_indices` for a large n: the same rule, l the smallest k with
    P(B <= k) >= alpha/2, found from the normal approximation's k by stepping."""
    from scipy.special import bdtr

    half_alpha = (1 - confidence) / 2
    z = statistics.NormalDist().inv_cdf(half_alpha)
    k = max(0, min(n, int(n / 2 + z * math.sqrt(n) / 2)))
    while k > 0 and bdtr(k - 1, n, 0.5) >= half_alpha:
        k -= 1
    while k < n and bdtr(k, n, 0.5) < half_alpha:
        k += 1
    lo = max(k, 1) - 1
    return lo, n - 1 - lo


def median_ci(samples: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Distribution-free CI of the median; (min, max) when there are too few samples."""
    xs = sorted(samples)
    idx = median_ci_indices(len(xs), confidence)
    if idx is None:
        return xs[0], xs[-1]
    return xs[idx[0]], xs[idx[1]]


@lru_cache(maxsize=1024)
def _median_ci_indices_cached(n: int) -> tuple[int, int] | None:
    return median_ci_indices(n)


#: The fewest samples whose median has a CONFIDENCE interval (6 at 95 %; below it, even
#: (min, max) is less sure than that).
MIN_CI_SAMPLES = next(n for n in itertools.count(1) if median_ci_indices(n) is not None)


def relative_ci_halfwidth(samples: Sequence[float]) -> float:
    """Half-width of the 95 % CI of the median relative to the median (inf if undefined).

    The one definition of "precision" (0.01 = ±1 %); fast enough to call after every sample.
    """
    idx = _median_ci_indices_cached(len(samples))
    if idx is None:
        return math.inf
    xs = sorted(samples)
    n = len(xs)
    median = xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
    if median <= 0:
        return math.inf
    return (xs[idx[1]] - xs[idx[0]]) / 2 / median


def robust_sd(xs: Sequence[float]) -> float:
    """1.4826 × the median absolute deviation: the standard deviation's robust twin (equal
    to it for normal data, unmoved by a few wild values)."""
    centre = statistics.median(xs)
    return 1.4826 * statistics.median(abs(x - centre) for x in xs)


def summarize(samples: Sequence[float]) -> Summary:
    """Summarise samples (seconds per call). Raises ValueError on an empty sequence."""
    if not samples:
        raise ValueError("no samples to summarise")
    import numpy as np

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
class Estimate:
    """A figure (a time per call, a speedup) with its 95 % interval; low/high are None
    where no interval can be estimated. It formats and converts as its value:

    >>> e = Estimate(3.14159, 2.9, 3.4)
    >>> f"{e:.3g}", float(e), f"{e:.1f}x"
    ('3.14', 3.14159, '3.1x')
    >>> format(e) == str(e)
    True
    """

    value: float
    low: float | None
    high: float | None

    def __float__(self) -> float:
        return float(self.value)

    def __format__(self, spec: str) -> str:
        """The format spec applied to the value (`f"{e:.3g}"`); an empty one gives str."""
        return format(self.value, spec) if spec else str(self)

    @property
    def factor(self) -> float | None:
        """The interval's half-width as a factor, sqrt(high / low): 1.1 is ×/÷ 1.1
        (about ±10 %); None without an interval or with one that is not positive."""
        if self.low is None or self.high is None or not (self.low > 0 and self.high > 0):
            return None
        return math.sqrt(self.high / self.low)

    def scaled(self, factor: float) -> Estimate:
        """The same estimate with the value and both ends multiplied by `factor`."""
        return Estimate(
            self.value * factor,
            None if self.low is None else self.low * factor,
            None if self.high is None else self.high * factor,
        )


#: A ratio of two figures (a speedup) is an Estimate too; the older name stays.
Ratio = Estimate


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
    import numpy as np

    a = np.asarray(numerator, dtype=float)
    b = np.asarray(denominator, dtype=float)
    # A zero time (a crafted file) makes an infinite or NaN ratio, which callers show as
    # "no ratio"; NumPy's warning about it would reach the user's terminal.
    with np.errstate(divide="ignore", invalid="ignore"):
        value = float(np.median(a) / np.median(b))
        if len(a) < 2 or len(b) < 2:
            return Ratio(value, None, None)
        rng = np.random.default_rng(seed)
        ra = _bootstrap_medians(a, n_resamples, rng)
        rb = _bootstrap_medians(b, n_resamples, rng)
        ratios = ra / rb
        tail = (1 - confidence) / 2 * 100
        low, high = np.percentile(ratios, [tail, 100 - tail])
    return Ratio(value, float(low), float(high))


#: The most resampled values `_bootstrap_medians` holds at once by drawing them (32 MB of
#: float64); beyond it, the medians are drawn directly (memory of one sorted copy).
BOOTSTRAP_MAX_ELEMENTS = 1 << 22


def _bootstrap_medians(samples: Any, n_resamples: int, rng: Any) -> Any:
    """The medians of `n_resamples` bootstrap resamples of `samples` (a float array).

    Where `n_resamples` × len(samples) values fit `BOOTSTRAP_MAX_ELEMENTS`, the resamples
    are drawn as they are. Beyond that (a run of 10⁶ samples a measurement needed 16 GB),
    each resample's median is drawn from its exact distribution instead, without the
    resample: the k-th smallest of n values drawn from the sorted samples x₍₁₎ ≤ … ≤ x₍ₙ₎
    is x₍⌈n·U₍ₖ₎⌉₎, where U₍ₖ₎ ~ Beta(k, n−k+1) is the k-th smallest of n uniforms (and,
    for an even n, the next one is U₍ₖ₎ + (1−U₍ₖ₎)·Beta(1, n−k)). Memory: one sorted copy
    of the samples and n_resamples numbers; time: one sort."""
    import numpy as np

    n = len(samples)
    if n * n_resamples <= BOOTSTRAP_MAX_ELEMENTS:
        return np.median(rng.choice(samples, size=(n_resamples, n), replace=True), axis=1)
    ordered = np.sort(samples)
    k = (n + 1) // 2
    u = rng.beta(k, n - k + 1, size=n_resamples)
    low = ordered[np.minimum((u * n).astype(np.int64), n - 1)]
    if n % 2:
        return low
    u_next = u + (1 - u) * rng.beta(1, n - k, size=n_resamples)
    high = ordered[np.minimum((u_next * n).astype(np.int64), n - 1)]
    return (low + high) / 2


def paired_ratio(
    numerator: Sequence[float], denominator: Sequence[float], *, confidence: float = CONFIDENCE
) -> Ratio:
    """The median of the per-round ratios numerator[i] / denominator[i], with the
    distribution-free CI of that median (exact binomial order statistics, on the logs).

    For samples taken in lockstep rounds (sample i of both series in the same round), so
    whatever slowed a round slows both sides of its ratio and cancels. Low/high are None
    with fewer than 6 pairs (no 95 % interval exists then).

    Raises:
        ValueError: the series differ in length or are empty.
    """
    if len(numerator) != len(denominator) or not numerator:
        raise ValueError(
            f"paired samples need equal, non-zero lengths, got {len(numerator)} and "
            f"{len(denominator)}"
        )
    logs = sorted(math.log(a / b) for a, b in zip(numerator, denominator, strict=True))
    value = math.exp(statistics.median(logs))
    n = len(logs)
    idx = (
        _median_ci_indices_cached(n)
        if confidence == CONFIDENCE
        else median_ci_indices(n, confidence)
    )
    if idx is None:
        return Ratio(value, None, None)
    return Ratio(value, math.exp(logs[idx[0]]), math.exp(logs[idx[1]]))


def geometric_mean(values: Sequence[float]) -> float | None:
    """Geometric mean of positive finite values; None when there are none."""
    vals = [v for v in values if v > 0 and math.isfinite(v)]
    if not vals:
        return None
    return float(math.exp(sum(math.log(v) for v in vals) / len(vals)))


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided Mann–Whitney U p-value (`rank_tests`); 1.0 when the test is undefined
    (a side empty, or identical data)."""
    if len(a) == 0 or len(b) == 0:
        return 1.0
    if len(set(a) | set(b)) == 1:
        return 1.0
    return rank_tests.mann_whitney_p(a, b)


@lru_cache(maxsize=4096)
def mann_whitney_min_p(n_a: int, n_b: int) -> float:
    """The smallest two-sided Mann–Whitney p-value reachable with these sample counts.

    Computed on perfectly separated data, so it is what the test itself can give (for
    equal counts n, 2 / C(2n, n)); 1.0 when a side has no samples. When it is not below a
    significance level, no change can be significant at that level.
    """
    if n_a < 1 or n_b < 1:
        return 1.0
    return mann_whitney_p([float(i) for i in range(n_a)], [float(n_a + i) for i in range(n_b)])


def mann_whitney_samples_needed(alpha: float, *, cap: int = 1000) -> int:
    """Samples per side (equal counts) before Mann–Whitney can reach p < `alpha`; `cap` at
    most (a level so small that no count below it will do)."""
    n = 2
    while mann_whitney_min_p(n, n) >= alpha and n < cap:
        n += 1
    return n


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini–Hochberg adjusted p-values, in the order given.

    Compared with a level alpha, they bound the false discovery rate by alpha, and so the
    chance of any false finding when nothing changed. A single p-value is its own
    adjustment (returned as is).
    """
    m = len(p_values)
    if m < 2:
        return [float(p) for p in p_values]
    # q_(i) = min over j >= i of p_(j) m / j, in ascending order of p, capped at 1
    # (`scipy.stats.false_discovery_control(p, method="bh")`, which the tests check).
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, float(p_values[i]) * m / rank)
        adjusted[i] = running
    return adjusted


@dataclass(frozen=True)
class RunSpread:
    """The runs of one case on two sides: each run's median on a log scale.

    `diff` is mean(log new) − mean(log base); `sum_sq` the squared deviations of each
    side's runs from its own mean; `df` = runs − 2, the degrees of freedom of the
    between-run variance `sum_sq / df`.
    """

    n_base: int
    n_new: int
    diff: float
    sum_sq: float

    @property
    def df(self) -> int:
        return self.n_base + self.n_new - 2

    @property
    def variance(self) -> float:
        return self.sum_sq / self.df if self.df > 0 else math.nan


def run_spread(base_medians: Sequence[float], new_medians: Sequence[float]) -> RunSpread | None:
    """Between-run spread of one case from each run's median (seconds), or None when
    there are not three positive medians, at least one per side, to estimate it from."""
    b = [math.log(x) for x in base_medians if x > 0 and math.isfinite(x)]
    n = [math.log(x) for x in new_medians if x > 0 and math.isfinite(x)]
    if not b or not n or len(b) + len(n) < 3:
        return None
    mb, mn = statistics.fmean(b), statistics.fmean(n)
    sum_sq = sum((x - mb) ** 2 for x in b) + sum((x - mn) ** 2 for x in n)
    return RunSpread(n_base=len(b), n_new=len(n), diff=mn - mb, sum_sq=sum_sq)


def typical_variance(estimates: Sequence[tuple[float, int]]) -> float | None:
    """The typical variance of a suite's cases, from each case's (variance, df): the
    median of the variances, each scaled by the median of its chi-square distribution so
    the figure estimates the variance rather than the (smaller) median of its estimates.
    None without a case to estimate it from."""
    usable = [(v, df) for v, df in estimates if df > 0]
    if not usable:
        return None
    from scipy.special import chdtri

    # chdtri(df, 0.5): the median of the chi-square distribution with df degrees of freedom
    return statistics.median(v * df / float(chdtri(df, 0.5)) for v, df in usable)


def typical_run_variance(spreads: Sequence[RunSpread]) -> float | None:
    """The typical between-run variance (log scale) over the given cases' spreads (the gate
    passes those of one mode on one device, `jitbench.gate.judge.run_priors`; see
    `typical_variance`)."""
    return typical_variance([(s.variance, s.df) for s in spreads])


def repeat_interval(
    logs: Sequence[float],
    prior_variance: float | None,
    prior_df: float,
    confidence: float = CONFIDENCE,
) -> Ratio:
    """exp(mean of `logs`) with the interval a repeat measurement's estimate falls in.

    `logs` holds one log estimate per worker process (e.g. the paired log speedup each
    process measured), so their spread includes what changes from process to process, not
    only within a process. The variance is shrunk toward `prior_variance` (the typical one
    of the run's cases of the same modes on the same device) with `prior_df` degrees of
    freedom, as in `moderated_t_test`, because two
    or three processes say little alone. The interval is a prediction interval for the mean
    of another K processes' estimates (half-width t * s * sqrt(2/K)): "the next run lands
    here 95 % of the time", the claim a benchmark's reader checks by running it again.
    """
    k = len(logs)
    if k == 0:
        raise ValueError("no estimates")
    mean = statistics.fmean(logs)
    own_df = k - 1
    own_ss = sum((x - mean) ** 2 for x in logs)
    if prior_variance is None or not math.isfinite(prior_variance):
        prior_variance, prior_df = 0.0, 0.0
    total_df = own_df + prior_df
    if total_df <= 0:
        return Ratio(math.exp(mean), None, None)
    variance = (own_ss + prior_df * prior_variance) / total_df
    half = t_quantile(0.5 + confidence / 2, total_df) * math.sqrt(variance * 2 / k)
    return Ratio(math.exp(mean), math.exp(mean - half), math.exp(mean + half))


@dataclass(frozen=True)
class RunTest:
    """A moderated t-test on per-run medians: the ratio of geometric means of the runs'
    medians (new / base) with its CI, and the two-sided p-value."""

    ratio: float
    low: float
    high: float
    p_value: float


def moderated_t_test(
    spread: RunSpread,
    prior_variance: float | None,
    prior_df: float,
    confidence: float = CONFIDENCE,
) -> RunTest:
    """Pooled-variance two-sample t-test on log run medians, the variance shrunk toward
    `prior_variance` (the typical between-run variance of the case's peers: the gate's
    cases of the same mode on the same device) with `prior_df` degrees of freedom, as in
    empirical-Bayes "moderated" t statistics: with two to four runs per side a case's own
    variance rests on too few runs to trust alone, and the shrinkage both steadies it and
    adds `prior_df` to the test's degrees of freedom. A case whose runs differ more than
    its peers' keeps most of its own, larger, variance.
    """
    own_df = spread.df
    if prior_variance is None or not math.isfinite(prior_variance):
        prior_df = 0.0
        prior_variance = 0.0
    total_df = own_df + prior_df
    if total_df <= 0:
        return RunTest(math.exp(spread.diff), 0.0, math.inf, 1.0)
    variance = (spread.sum_sq + prior_df * prior_variance) / total_df
    se = math.sqrt(variance * (1 / spread.n_base + 1 / spread.n_new))
    ratio = math.exp(spread.diff)
    if se == 0:  # runs that agree exactly: any difference is certain, none is nothing
        p = 1.0 if spread.diff == 0 else 0.0
        return RunTest(ratio, ratio, ratio, p)
    p = t_two_sided_p(spread.diff / se, total_df)
    half = t_quantile(0.5 + confidence / 2, total_df) * se
    return RunTest(ratio, math.exp(spread.diff - half), math.exp(spread.diff + half), p)


def signed_rank_p(differences: Sequence[float]) -> float:
    """Two-sided p-value of the Wilcoxon signed-rank test that `differences` (e.g. paired
    log ratios) are centred on zero; 1.0 when every difference is zero."""
    if not any(differences):
        return 1.0
    return rank_tests.signed_rank_p(differences)


def one_sample_t_p(values: Sequence[float]) -> float:
    """Two-sided p-value of the one-sample t-test that `values` have mean zero; 1.0 for
    fewer than two values, or no spread and a zero mean (0.0 with no spread otherwise)."""
    k = len(values)
    if k < 2:
        return 1.0
    mean = statistics.fmean(values)
    # Equal values up to rounding: the t statistic is infinite (or undefined at zero).
    if statistics.pstdev(values) <= 1e-12 * max(1.0, abs(mean)):
        return 1.0 if mean == 0 else 0.0
    return t_two_sided_p(mean / (statistics.stdev(values) / math.sqrt(k)), k - 1)


def t_two_sided_p(t: float, df: float) -> float:
    """2 P(T >= |t|) for Student's t with `df` degrees of freedom."""
    from scipy.special import stdtr  # not scipy.stats: see `rank_tests`

    return float(2 * stdtr(df, -abs(t)))


def t_quantile(q: float, df: float) -> float:
    """The `q` quantile of Student's t with `df` degrees of freedom."""
    from scipy.special import stdtrit

    return float(stdtrit(df, q))
