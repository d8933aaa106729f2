"""Where a series of runs stepped: change points in a case's figures across a history.

A history holds one figure per run (a speedup, a time) with the interval each run gave
it. `find_steps` looks for the split of the series into a before and an after whose
geometric means differ most (the largest t), corrects its p-value for having tried every split
(Bonferroni; a permutation test cannot reach the level needed with twelve runs: its
smallest p-value for a 6 + 6 split is 2/924), and keeps it when it is significant and at
least `min_change` large; then it looks again within each side (binary segmentation), up
to `max_steps`.

The step's standard error is the larger of two: the one the runs' scatter around their
own segment's mean gives (the run-to-run variation the history itself shows, which a
run's own interval does not contain: the machine changes from run to run) and the one the
runs' own 95 % intervals give (so a history whose few runs agree by chance more closely
than each was measured does not make a small move significant). A step must stand out of
both. Without intervals it is the plain two-sample t-test of the logs; the t distribution
with n − 2 degrees of freedom judges it either way. On quiet A/A histories of the default
suite this found no step in 800 series where the t-test alone found 3, and a 15 % step in
86 % of the jit series against the t-test's 91 % (those it misses scatter from run to run
by about as much as the step: docs/validation/history-steps.md).

`history_steps` puts that on a history's series: each step with the two runs around it.
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


#: z of a two-sided 95 % interval: a run's interval [low, high] of a log figure is taken as
#: ± Z95 standard errors.
Z95 = 1.959963984540054


def log_se(value: float, low: float | None, high: float | None) -> float:
    """The standard error of log(value) that a 95 % interval [low, high] implies (its
    wider half); 0 where the run gave no usable interval."""
    if value <= 0 or not math.isfinite(value):
        return 0.0
    halves = [
        abs(math.log(bound) - math.log(value))
        for bound in (low, high)
        if bound is not None and bound > 0 and math.isfinite(bound)
    ]
    return max(halves) / Z95 if halves else 0.0


def _split_test(
    logs: Sequence[float], variances: Sequence[float], k: int
) -> tuple[float, float, int]:
    """(difference of means, its standard error, df) of logs[:k] against logs[k:]: the
    larger of the error the runs' scatter around their segment's mean gives and the one
    their own intervals (`variances`) give."""
    a, b = logs[:k], logs[k:]
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    ss = sum((x - ma) ** 2 for x in a) + sum((x - mb) ** 2 for x in b)
    df = len(logs) - 2
    if df <= 0:
        return mb - ma, math.inf, df
    scatter = math.sqrt(ss / df) * math.sqrt(1 / len(a) + 1 / len(b))
    own = math.sqrt(sum(variances[:k]) / len(a) ** 2 + sum(variances[k:]) / len(b) ** 2)
    return mb - ma, max(scatter, own), df


def _best_step(
    logs: Sequence[float],
    variances: Sequence[float],
    offset: int,
    alpha: float,
    min_change: float,
    min_segment: int,
) -> Step | None:
    splits = range(min_segment, len(logs) - min_segment + 1)
    if not splits:
        return None
    tests = []
    for k in splits:
        diff, se, df = _split_test(logs, variances, k)
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
    intervals: Sequence[tuple[float | None, float | None]] | None = None,
    *,
    alpha: float = ALPHA,
    min_change: float = MIN_CHANGE,
    min_segment: int = MIN_SEGMENT,
    max_steps: int = 2,
) -> list[Step]:
    """The steps of a series of positive figures, in run order; [] where it has none (or
    a value that is not a positive finite number, or too few runs to judge).

    `intervals`: each run's 95 % interval (low, high) of its figure, if it has one: a
    step must then stand out of them too, not only of the runs' scatter (the module's
    text).
    """
    if not values or not all(v > 0 and math.isfinite(v) for v in values):
        return []
    if intervals is not None and len(intervals) != len(values):
        raise ValueError(f"{len(intervals)} intervals for {len(values)} values")
    logs = [math.log(v) for v in values]
    variances = (
        [log_se(v, *bounds) ** 2 for v, bounds in zip(values, intervals, strict=True)]
        if intervals is not None
        else [0.0] * len(values)
    )
    found: list[Step] = []
    pending = [(0, len(logs))]
    while pending and len(found) < max_steps:
        start, end = pending.pop(0)
        step = _best_step(
            logs[start:end], variances[start:end], start, alpha, min_change, min_segment
        )
        if step is None:
            continue
        found.append(step)
        pending += [(start, step.at), (step.at, end)]
    return sorted(found, key=lambda s: s.at)


@dataclass(frozen=True)
class Point:
    """One run's figure in a history's series: the run, its recorded commit (None where it
    has none), the figure and its 95 % interval."""

    run_id: str
    commit: str | None
    value: float
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class HistoryStep:
    """A step of one series with the last run before it and the first run after it
    (`step.at` is the index of `after` in the series)."""

    step: Step
    before: Point
    after: Point

    @property
    def commits(self) -> tuple[str, str] | None:
        """(good, bad): the two runs' commits (the hash, without a " dirty" mark), None
        when either run recorded none."""
        good, bad = ((p.commit or "").split(" ")[0] for p in (self.before, self.after))
        return (good, bad) if good and bad else None

    def bisect_command(self, workload: str, size: str) -> str | None:
        """The `jitbench bisect` line that finds the step's commit between the two runs'
        commits; None when either run recorded no commit."""
        if self.commits is None:
            return None
        good, bad = self.commits
        return f"jitbench bisect {good} {bad} -k {workload} -s {size}"


def history_steps(points: Sequence[Point]) -> list[HistoryStep]:
    """The steps of one series of a history (its points oldest first), each with its two
    runs: `find_steps` on the figures weighted by the runs' intervals."""
    steps = find_steps([p.value for p in points], [(p.low, p.high) for p in points])
    return [HistoryStep(s, points[s.at - 1], points[s.at]) for s in steps]
