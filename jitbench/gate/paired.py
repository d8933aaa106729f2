"""Judging an interleaved comparison (`jitbench ab`): both sides were sampled in
the same rounds (`ab.duet`), so sample i of base and sample i of new come from the same
minute of the machine, and their ratio is free of the drift that separates two runs.

Run time: the per-round log ratios are tested with the Wilcoxon signed-rank test (robust
to the heavy tails of a shared machine: one disturbed round moves one rank), and the ratio
is the median of the per-round ratios with its distribution-free 95 % CI. With several
worker pairs, each pair's median log ratio is a unit of evidence too: a one-sample t-test
on them must agree (intersection–union, as `judge.compare_runs`), so a difference that
lives in one process cannot pass as the code's. Three pairs give that test two degrees of
freedom, so its variance is shrunk toward a prior, and the prior is the case's own: the
sampling variance of its pair medians (from its rounds) times the suite's typical excess
of the between-pair variance over it (`pair_prior`).

Compile time: the sides' cold compiles were measured in pairs too; a t-test on the
pairs' log ratios, Benjamini–Hochberg over the comparison's compile tests, and the
factor and floor of `Thresholds`. Failing cases go through `judge` unchanged.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from jitbench import formatting as fmt
from jitbench import stats
from jitbench.gate.judge import (
    TimingResult,
    adjust_compiles,
    adjust_for_multiplicity,
    compare,
    compile_change_of,
    geomean_ratios,
    judge_change,
)
from jitbench.gate.model import (
    Comparison,
    CompileChange,
    Entry,
    PoolingNote,
    SignificanceTest,
    Thresholds,
    Verdict,
)
from jitbench.results import Measurement, Run

#: The run-time factor an interleaved comparison flags beyond by default. Pairing removes
#: the drift between runs that the 1.10 of stored runs must allow for, so a 10 % slowdown
#: (estimated at ~1.08–1.12 in paired rounds) is caught, while A/A ratios stay within a
#: few per cent (docs: validation, "Gate power, jitbench ab").
INTERLEAVED_THRESHOLD = 1.05

#: Degrees of freedom of a case's prior for its between-pair variance. Cases differ in how
#: much their pairs disagree beyond what their rounds predict: over 30 kept comparisons
#: of the default suite at S, 0.7–3.9× in standard deviation for most cases and 7.4× for
#: `logreg_step` eager; the sd of the log of that variance ratio over the 60 cases is
#: 0.84, as for a scaled chi-square with 4 degrees of freedom (0.80). With one prior for
#: the whole suite at 10 degrees of freedom, that workload's own spread was overruled: its
#: unchanged code was flagged in 5 of 36 comparisons.
PAIR_PRIOR_DF = 4.0


def interleaved_record(run: Run) -> Mapping[str, Any] | None:
    """What an interleaved run records of its partner (`ab.duet`), or None."""
    record = run.config.extra.get("interleaved")
    return record if isinstance(record, Mapping) else None


def are_partners(base: Run, new: Run) -> bool:
    """Whether two runs were measured interleaved with each other, as base and new."""
    a, b = interleaved_record(base), interleaved_record(new)
    return (
        a is not None
        and b is not None
        and a.get("side") == "base"
        and b.get("side") == "new"
        and a.get("partner_run_id") == new.run_id
        and b.get("partner_run_id") == base.run_id
    )


def paired_logs(base: Measurement, new: Measurement) -> list[list[float]] | None:
    """Per worker pair, the per-round log ratios new/base; None when the samples do not
    pair (a side stopped early: different counts)."""
    if base.part_counts != new.part_counts or not base.samples_s:
        return None
    return [
        [math.log(n / b) for b, n in zip(b_part, n_part, strict=True)]
        for b_part, n_part in zip(base.run_parts, new.run_parts, strict=True)
    ]


def median_sampling_variance(parts: Sequence[Sequence[float]]) -> float:
    """What a pair's median log ratio varies by from its rounds alone: the mean over the
    pairs of (1.4826 × MAD)² / rounds (a scale, not the exact variance of a median: the
    constant cancels in `pair_prior`)."""
    scales = [stats.robust_sd(p) ** 2 / len(p) for p in parts if p]
    return statistics.fmean(scales) if scales else 0.0


def typical_pair_excess(parts: Sequence[Sequence[Sequence[float]]]) -> float | None:
    """The suite's typical ratio of a case's between-pair variance (of the pairs' median log
    ratios) to its `median_sampling_variance`, from every case with two pairs or more and
    rounds that vary. A ratio, not a variance: a workload whose rounds scatter widely
    scatters between processes too, while the cases' own spreads differ many-fold
    (docs: validation, "Figures behind the code")."""
    estimates = []
    for case_parts in parts:
        medians = [statistics.median(p) for p in case_parts if p]
        scale = median_sampling_variance(case_parts)
        if len(medians) >= 2 and scale > 0:
            estimates.append((statistics.variance(medians) / scale, len(medians) - 1))
    return stats.typical_variance(estimates)


def pair_prior(parts: Sequence[Sequence[float]], excess: float | None) -> float | None:
    """A case's prior for the variance between its pairs' medians: its own sampling
    variance times the suite's typical excess; None when either is unknown."""
    scale = median_sampling_variance(parts)
    return excess * scale if excess is not None and scale > 0 else None


def moderated_one_sample_p(values: Sequence[float], prior: float | None, prior_df: float) -> float:
    """Two-sided p of a one-sample t-test on `values` (mean zero?), the variance shrunk
    toward `prior` with `prior_df` degrees of freedom (see `stats.moderated_t_test`)."""
    k = len(values)
    mean = statistics.fmean(values)
    own_ss = sum((x - mean) ** 2 for x in values)
    if prior is None or not math.isfinite(prior):
        prior, prior_df = 0.0, 0.0
    df = (k - 1) + prior_df
    if df <= 0:
        return 1.0
    variance = (own_ss + prior_df * prior) / df
    if variance <= 0:
        return 1.0 if mean == 0 else 0.0
    t = mean / math.sqrt(variance / k)
    return stats.t_two_sided_p(t, df)


def paired_timing(
    parts: Sequence[Sequence[float]], thresholds: Thresholds, excess: float | None
) -> TimingResult:
    """A run-time verdict from per-round log ratios, grouped by worker pair; `excess` is
    the comparison's `typical_pair_excess`."""
    logs = [x for p in parts for x in p]
    ratio = stats.paired_ratio([math.exp(x) for x in logs], [1.0] * len(logs))
    p = stats.signed_rank_p(logs)
    if len(parts) >= 2:
        medians = [statistics.median(part) for part in parts if part]
        prior = pair_prior(parts, excess)
        p = max(p, moderated_one_sample_p(medians, prior, PAIR_PRIOR_DF))
    return judge_change(
        ratio.value,
        ratio.low,
        ratio.high,
        p,
        thresholds,
        SignificanceTest.PAIRED,
        sample_counts=(len(logs), len(logs)),
    )


def paired_compile(
    base: Measurement, new: Measurement, thresholds: Thresholds
) -> CompileChange | None:
    """A compile-time verdict from paired cold compiles (before the multiplicity
    adjustment); None when the compiles do not pair."""
    if base.compile is None or new.compile is None:
        return None
    b, n = base.compile.compile_repeats_s, new.compile.compile_repeats_s
    if len(b) != len(n) or len(b) < 2 or min(*b, *n) <= 0:
        return None
    logs = [math.log(y / x) for x, y in zip(b, n, strict=True)]
    ratio = math.exp(statistics.median(logs))
    base_s, new_s = statistics.median(b), statistics.median(n)
    p = stats.one_sample_t_p(logs)
    f, floor = thresholds.compile_threshold, thresholds.compile_floor_s
    if p < thresholds.alpha and ratio > f and new_s - base_s > floor:
        verdict = Verdict.REGRESSION
    elif p < thresholds.alpha and ratio < 1 / f and base_s - new_s > floor:
        verdict = Verdict.IMPROVEMENT
    else:
        verdict = Verdict.UNCHANGED
    return CompileChange(
        base_s=base_s, new_s=new_s, verdict=verdict, count=len(b), paired_ratio=ratio, p_value=p
    )


def _times_disagree(e: Entry, ratio: float) -> str:
    """A note when the sides' shown times (the table's columns) moved against the paired
    ratio, which decides: the rounds' drift falls unevenly on the two sides' medians and
    cancels only in each round's ratio."""
    shown = e.shown_ratio
    if shown is None or (shown - 1) * (ratio - 1) >= 0:
        return ""
    return (
        f"the times moved the other way ({fmt.seconds(e.base_s)} → {fmt.seconds(e.new_s)}); the "
        "per-round ratios decide"
    )


def compare_interleaved(base: Run, new: Run, *, thresholds: Thresholds | None = None) -> Comparison:
    """Compare two runs measured interleaved (`ab.duet`): `judge.compare` for the
    cases' statuses, new/removed cases and the environment, with every case whose samples
    pair judged again on its per-round ratios, and compile times on their paired
    compiles; then the p-values are adjusted over the comparison as `compare` does."""
    thresholds = thresholds or Thresholds()
    plain = compare(base, new, thresholds=thresholds)
    paired: dict[int, list[list[float]]] = {}
    for i, e in enumerate(plain.entries):
        if e.base is not None and e.new is not None and e.base.ok and e.new.ok:
            parts = paired_logs(e.base, e.new)
            if parts is not None:
                paired[i] = parts
    excess = typical_pair_excess(list(paired.values()))
    # Compile changes afresh, unadjusted: `compare` adjusted its own over its tests.
    entries = [
        replace(e, compile=compile_change_of(e.base, e.new, thresholds))
        if e.base is not None and e.new is not None
        else e
        for e in plain.entries
    ]
    for i, parts in paired.items():
        e = entries[i]
        assert e.base is not None and e.new is not None
        timing = paired_timing(parts, thresholds, excess)
        entries[i] = replace(
            e,
            verdict=timing.verdict,
            ratio=timing.ratio,
            ratio_low=timing.low,
            ratio_high=timing.high,
            p_value=timing.p_value,
            p_adjusted=None,
            test=timing.test,
            note="; ".join(filter(None, (timing.note, _times_disagree(e, timing.ratio)))),
            compile=paired_compile(e.base, e.new, thresholds) or e.compile,
        )
    judged = adjust_for_multiplicity(tuple(adjust_compiles(entries, thresholds)), thresholds)
    record = interleaved_record(new) or {}
    pairs = int(record.get("pairs", 1) or 1)
    note = PoolingNote(
        f"measured interleaved: both sides in the same rounds, in {pairs} worker "
        f"pair{'s' if pairs != 1 else ''}; run time judged on the per-round ratios "
        "(Wilcoxon signed-rank"
        + (", and a t-test on each pair's median" if pairs > 1 else "")
        + "), compile time on paired cold compiles"
    )
    return replace(
        plain,
        entries=judged,
        geomeans=geomean_ratios(judged),
        pooling=(note,),
    )
