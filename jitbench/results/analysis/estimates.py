"""The estimators: one time per call per measurement, and ratios taken round by round.

A measurement of a `--processes K` run holds K processes' samples, and each process
weighs the same. A ratio (a speedup) is the geometric mean of the processes' own ratios,
each the median of its per-round ratios: the modes of a case are sampled in lockstep
rounds, so whatever slowed a round slows both sides of its ratio and cancels. Its interval
is the one a repeat run's figure lands in 95 % of the time (`stats.repeat_interval`: the
spread between processes, shrunk toward the run's typical spread for the same modes on the
same device). A time is the geometric mean of the processes' medians, with the same kind
of interval. One process: the median with its order-statistic interval, and the per-round
ratios' median with its own.

A ratio of medians would agree with the times by construction, but it lets a disturbed
round move one side and not the other: in A/A runs of the default suite its speedups
reproduced less often than the round-by-round ratio's (docs: validation, "Figures behind
the code"). So the analysis layer keeps the paired ratio and shows, for a
JAX mode beside NumPy, the time that agrees with it (`figures`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence

from jitbench import stats
from jitbench.results.model import CompileInfo, Measurement

Estimate = stats.Estimate

#: Prior degrees of freedom for the between-process variance. The cases of a suite differ
#: widely in how much they move from process to process, so the suite's typical variance
#: (for the mode and device) is a weak prior: `tools/aa_coverage.py --judge` estimates its
#: worth from A/A runs at 1.5-2.1 df. With 10 df the wayward cases were overruled and 85 %
#: of intervals held; with 2, 92-94 % (docs: validation).
PROCESS_PRIOR_DF = 2.0


def compile_figure(info: CompileInfo | None) -> float | None:
    """The jit compile figure to judge: the median of every cold compile measured
    (several with rounds, pooled processes or asv's repeats), else the one there is. One
    cold compile is not a sample: two of identical code differed by 40 % on a shared VM."""
    if info is None:
        return None
    if info.compile_repeats_s:
        return statistics.median(info.compile_repeats_s)
    return info.total_compile_s


def time_ratio(base_s: float | None, new_s: float | None) -> float | None:
    """new ÷ base of two times per call as their runs show them (above 1 is slower):
    the change the gate judges (`gate.Entry.ratio`, unless paired rounds decide) and the
    one a comparison page quotes where the gate judged nothing (another device). None
    unless both are positive and the quotient is finite."""
    if base_s is None or new_s is None or not (base_s > 0 and new_s > 0):
        return None
    r = new_s / base_s
    return r if math.isfinite(r) and r > 0 else None


def process_medians(m: Measurement) -> tuple[float, ...]:
    """Each process's median of `m`'s samples (one median for a one-process run); empty
    when nothing was sampled."""
    return m.run_medians_s


def _positive(xs: Sequence[float]) -> bool:
    return bool(xs) and min(xs) > 0 and all(math.isfinite(x) for x in xs)


def process_log_times(m: Measurement) -> list[float] | None:
    """Each process's log median of `m`, or None unless it holds two or more processes
    of positive times."""
    medians = process_medians(m)
    if len(m.run_sample_counts) < 2 or not _positive(medians):
        return None
    return [math.log(x) for x in medians]


def _part_log_ratio(a: Sequence[float], b: Sequence[float], paired: bool) -> float:
    """One process's log(a / b): the median of its per-round log ratios where the rounds
    pair, else the log ratio of its medians."""
    if paired and len(a) == len(b):
        return statistics.median(math.log(x / y) for x, y in zip(a, b, strict=True))
    return math.log(statistics.median(a) / statistics.median(b))


def process_log_ratios(
    base: Measurement, other: Measurement, *, paired: bool = True
) -> list[float] | None:
    """Each process's log(base / other) (`_part_log_ratio`), or None unless both hold the
    same two or more process parts of positive samples."""
    counts = base.run_sample_counts
    if len(counts) < 2 or other.run_sample_counts != counts:
        return None
    if not (_positive(base.samples_s) and _positive(other.samples_s)):
        return None
    return [
        _part_log_ratio(a, b, paired) for a, b in zip(base.run_parts, other.run_parts, strict=True)
    ]


def typical_variance(logs_by_case: Sequence[Sequence[float]]) -> float | None:
    """The typical between-process variance over cases, each given by its per-process
    log figures (`stats.typical_variance`); None without a case of two or more."""
    return stats.typical_variance(
        [(statistics.variance(logs), len(logs) - 1) for logs in logs_by_case if len(logs) > 1]
    )


def time_estimate(m: Measurement, prior_variance: float | None) -> Estimate | None:
    """`m`'s own time per call with its interval; None when nothing was sampled.

    Several processes: the geometric mean of their medians, with the interval a repeat
    run's figure lands in (`prior_variance`: the run's typical variance of log times for
    the mode and device). One process: the median with the order-statistic interval of
    the median (which says nothing of the next process).
    """
    logs = process_log_times(m)
    if logs is not None:
        return stats.repeat_interval(logs, prior_variance, PROCESS_PRIOR_DF)
    s = m.summary
    if s is None:
        return None
    return Estimate(s.median, s.ci_low, s.ci_high)


def ratio_estimate(
    base: Measurement,
    other: Measurement,
    *,
    paired: bool,
    prior_variance: Callable[[], float | None],
) -> Estimate | None:
    """base time / other time with its interval, round by round where the samples pair;
    None when there is no positive finite ratio.

    Several processes: the geometric mean of the processes' ratios, with the repeat
    interval (`prior_variance`: the run's typical variance of such log ratios). One
    process of paired rounds: the median of the per-round ratios with its order-statistic
    interval. Otherwise (files before schema 1.3, too few rounds for an interval) the
    ratio of medians with its bootstrap interval.
    """
    logs = process_log_ratios(base, other, paired=paired)
    if logs is not None:
        return stats.repeat_interval(logs, prior_variance(), PROCESS_PRIOR_DF)
    a, b = base.samples_s, other.samples_s
    if not (_positive(a) and _positive(b)):
        return None
    found = stats.paired_ratio(a, b) if paired and len(a) == len(b) else None
    r = found if found is not None and found.low is not None else stats.ratio_of_medians(a, b)
    return r if math.isfinite(r.value) and r.value > 0 else None
