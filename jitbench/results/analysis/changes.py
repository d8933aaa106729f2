"""Where a series of runs stepped: change points in a case's figures across a history.

A history holds one figure per run (a speedup, a time) with the interval each run gave
it. `find_steps` looks for the split of the series into a before and an after whose
geometric means differ most (the largest t of the logs against the scatter of the runs
around their own segment's mean: the run-to-run variation the history itself shows, which
each run's own interval does not contain), corrects its p-value for having tried every
split (Bonferroni; a permutation test cannot reach the level needed with twelve runs: its
smallest p-value for a 6 + 6 split is 2/924), and keeps it when it is significant and at
least `min_change` large; then it looks again within each side (binary segmentation), up
to `max_steps`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from jitbench import stats
from jitbench.stats import Estimate

#: Significance of one series' step, after the correction over its splits. A history page
#: judges every case and mode of a suite (80 series for the default suite at S and M), so
#: each is held to a strict level: an A/A history should show none.
ALPHA = 0.002
#: A step smaller than this (as a factor less 1) is not reported, however significant.
MIN_CHANGE = 0.05
#: The fewest runs on each side of a step.
MIN_SEGMENT = 3


@dataclass(frozen=True)
class Step:
    """A step in a series: `at` is the index of the first run after it; `ratio` the
    after / before geometric means with its 95 % interval; `p_value` the t-test's, after
    the correction over the splits tried."""

    at: int
    ratio: Estimate
    p_value: float


def _split_test(logs: Sequence[float], k: int) -> tuple[float, float, int]:
    """(difference of means, its standard error, df) of logs[:k] against logs[k:]."""
    a, b = logs[:k], logs[k:]
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    ss = sum((x - ma) ** 2 for x in a) + sum((x - mb) ** 2 for x in b)
    df = len(logs) - 2
    sd = math.sqrt(ss / df) if df > 0 else math.inf
    return mb - ma, sd * math.sqrt(1 / len(a) + 1 / len(b)), df


def _best_step(
    logs: Sequence[float], offset: int, alpha: float, min_change: float, min_segment: int
) -> Step | None:
    splits = range(min_segment, len(logs) - min_segment + 1)
    if not splits:
        return None
    tests = []
    for k in splits:
        diff, se, df = _split_test(logs, k)
        t = abs(diff) / se if se > 0 else (math.inf if diff else 0.0)
        tests.append((t, k, diff, se, df))
    t, k, diff, se, df = max(tests, key=lambda x: x[0])
    p = 0.0 if math.isinf(t) else stats.t_two_sided_p(t, df)
    p = min(1.0, p * len(splits))  # Bonferroni over the splits tried
    if p >= alpha or abs(math.expm1(diff)) < min_change:
        return None
    half = stats.t_quantile(0.975, df) * se
    ratio = Estimate(math.exp(diff), math.exp(diff - half), math.exp(diff + half))
    return Step(at=offset + k, ratio=ratio, p_value=p)


def find_steps(
    values: Sequence[float],
    *,
    alpha: float = ALPHA,
    min_change: float = MIN_CHANGE,
    min_segment: int = MIN_SEGMENT,
    max_steps: int = 2,
) -> list[Step]:
    """The steps of a series of positive figures, in run order; [] where it has none (or
    a value that is not a positive finite number, or too few runs to judge)."""
    if not values or not all(v > 0 and math.isfinite(v) for v in values):
        return []
    logs = [math.log(v) for v in values]
    found: list[Step] = []
    pending = [(0, len(logs))]
    while pending and len(found) < max_steps:
        start, end = pending.pop(0)
        step = _best_step(logs[start:end], start, alpha, min_change, min_segment)
        if step is None:
            continue
        found.append(step)
        pending += [(start, step.at), (step.at, end)]
    return sorted(found, key=lambda s: s.at)
