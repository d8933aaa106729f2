"""Judging: each case × mode of two runs gets a verdict from its run-time ratio, its
significance tests and its compile-time change; `compare` judges all cases of two runs,
adjusts the p-values for their number and summarises them into a `Comparison`.

A timing change is a regression only when it is both large (new/base median ratio beyond
`threshold`) and significant (two-sided Mann–Whitney U on the raw samples, p < `alpha`
after the Benjamini–Hochberg adjustment over every timing test of the comparison: a
60-case suite tested at 0.01 each would otherwise flag something in ~45 % of A/A pairs).
Compile time is judged by a looser factor plus an absolute floor and, where each side has
enough cold compiles (pooled runs, repeats; five a side at 0.01), by Mann–Whitney on them,
adjusted over the comparison's compile tests; with fewer, a change beyond the factor is
reported as not tested (inconclusive), never a regression. Everything here is pure: it returns
frozen results and never prints.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from jitbench import stats
from jitbench.gate.envdiff import commit_label, environment_differences
from jitbench.gate.model import (
    CaseKey,
    Comparison,
    CompileChange,
    Entry,
    GeoMeanRatio,
    PoolingNote,
    SignificanceTest,
    Thresholds,
    Verdict,
)
from jitbench.gate.pooling import pooling_notes
from jitbench.gate.program import explain, program_change_of
from jitbench.results import Measurement, Mode, Run, is_host_copy
from jitbench.results.analysis import RunAnalysis, analyse
from jitbench.results.analysis.estimates import compile_figure, time_estimate, time_ratio

#: Prior degrees of freedom of a case's between-run variance in the run-level test: the
#: typical spread of the case's mode counts as ten runs' worth of evidence (`compare_runs`).
RUN_PRIOR_DF = 10.0

#: Fewest cases of one mode on one device from which the run-level test takes that group's
#: own typical spread; a smaller group (a suite of a few workloads) uses the whole
#: comparison's, as every group did before. Five is enough for the figure to be worth the
#: RUN_PRIOR_DF it is given: with three runs a side (MIN_RUNS_PER_SIDE) each case's
#: variance has 4 df, so the median of five is known to about ±40 % (1.25 · sqrt(2/4) /
#: sqrt(5)), within the ±45 % (sqrt(2/10)) that ten prior df claim (±32 % with four runs).
#: In six comparisons of a noisy day's gate checks the typical run-to-run spread was jit
#: 7-13 %, eager 10-20 % and NumPy 9-17 % (the note `compare` writes), so one figure for
#: all lent the noisier modes' tests confidence they did not have and took it from jit's.
MIN_CASES_FOR_GROUP_PRIOR = 5

#: Fewest runs per side with which the run-level test found a 30 % slowdown every time on a
#: shared machine (docs: validation, "Gate power, stored runs"); fewer earn a warning.
MIN_RUNS_PER_SIDE = 3


@dataclass(frozen=True)
class ShownTime:
    """A side's time per call for one case × mode as its run shows it
    (`results.analysis`), and each process's part of it (their geometric mean is
    `seconds`): what the gate's ratios and run-by-run test are taken of, so that a
    comparison's times and changes are those of the runs' own tables."""

    seconds: float
    process_seconds: tuple[float, ...]


def shown_time(figures: RunAnalysis | None, m: Measurement | None) -> ShownTime | None:
    """`m`'s `ShownTime` in its run's `figures`; without them (a measurement judged on
    its own), its own time (`time_estimate`) and process medians. None for a side that is
    missing or not ok."""
    if m is None or not m.ok:
        return None
    f = figures.figure(m.case.key, m.mode) if figures is not None else None
    if f is not None:
        if f.time is None:
            return None
        return ShownTime(f.time.value, f.shown_process_times)
    own = time_estimate(m, None)
    return ShownTime(own.value, m.run_medians_s) if own is not None else None


@dataclass(frozen=True)
class TimingResult:
    """A run-time verdict with the figures it was reached on (see `Entry`)."""

    verdict: Verdict
    ratio: float
    low: float | None = None
    high: float | None = None
    p_value: float | None = None
    note: str = ""
    test: SignificanceTest | None = None


def judge_change(
    ratio: float,
    low: float | None,
    high: float | None,
    p: float,
    thresholds: Thresholds,
    test: SignificanceTest,
    *,
    sample_counts: tuple[int, int],
) -> TimingResult:
    """Regression / improvement when the ratio is beyond the factor and p < alpha;
    inconclusive when the sample counts can never give Mann–Whitney p < alpha."""
    t = thresholds.threshold
    if not (ratio > t or ratio < 1 / t):
        return TimingResult(Verdict.UNCHANGED, ratio, low, high, p, "", test)
    direction = "slower" if ratio > 1 else "faster"
    n_base, n_new = sample_counts
    if stats.mann_whitney_min_p(n_base, n_new) >= thresholds.alpha:
        note = (
            f"{direction}, but {n_base} vs {n_new} samples cannot reach "
            f"p < {thresholds.alpha:g}; measure at least "
            f"{stats.mann_whitney_samples_needed(thresholds.alpha)} "
            "per side (--min-samples)"
        )
        return TimingResult(Verdict.INCONCLUSIVE, ratio, low, high, p, note, test)
    if p >= thresholds.alpha:
        note = f"{direction} but not significant"
        return TimingResult(Verdict.UNCHANGED, ratio, low, high, p, note, test)
    verdict = Verdict.REGRESSION if ratio > 1 else Verdict.IMPROVEMENT
    return TimingResult(verdict, ratio, low, high, p, "", test)


def compare_timing(
    base_samples: tuple[float, ...] | list[float],
    new_samples: tuple[float, ...] | list[float],
    thresholds: Thresholds,
    *,
    shown_ratio: float | None = None,
) -> TimingResult:
    """Classify a run-time change from raw samples (seconds per call) on both sides.

    The verdict is REGRESSION / IMPROVEMENT only when the median ratio is beyond the factor
    *and* the two-sided Mann–Whitney test is significant; a large change that the sample
    counts cannot make significant is INCONCLUSIVE (never a regression); everything else
    is UNCHANGED. `shown_ratio` (new / base of the times the runs show, where a JAX mode's
    is NumPy's ÷ its paired speedup) replaces the ratio of the medians, its bootstrap
    interval moved with it: the two differ by a percent or two.
    """
    if not (statistics.median(base_samples) > 0 and statistics.median(new_samples) > 0):
        return TimingResult(Verdict.NOT_COMPARED, math.nan, note="a median is zero")
    r = stats.ratio_of_medians(list(new_samples), list(base_samples))
    if shown_ratio is not None and math.isfinite(shown_ratio) and shown_ratio > 0:
        r = r.scaled(shown_ratio / r.value)
    p = stats.mann_whitney_p(list(base_samples), list(new_samples))
    return judge_change(
        r.value,
        r.low,
        r.high,
        p,
        thresholds,
        SignificanceTest.SAMPLES,
        sample_counts=(len(base_samples), len(new_samples)),
    )


def compare_runs(
    base: Measurement,
    new: Measurement,
    spread: stats.RunSpread,
    prior_variance: float | None,
    thresholds: Thresholds,
) -> TimingResult:
    """Classify a run-time change of pooled runs from each run's part of the time it
    shows (`run_spread_of`).

    Samples within one run agree far better than runs of the same code do (on a shared
    machine a case's median moves from run to run beyond the whole run's level), so with
    several runs per side the run, not the sample, is the unit of evidence: a moderated
    t-test on the log run medians, the case's between-run variance shrunk toward the
    typical one of its mode on its device (`prior_variance`, from `run_priors`) with
    `RUN_PRIOR_DF` degrees of freedom. The
    Mann–Whitney test on the pooled samples must agree too: the p-value is the larger of
    the two (an intersection–union test, valid at `alpha` for "both are significant").
    The ratio is that of the geometric means of the runs' parts, which are the times the
    runs show, with the t-test's CI.
    """
    test = stats.moderated_t_test(spread, prior_variance, RUN_PRIOR_DF)
    p = max(test.p_value, stats.mann_whitney_p(list(base.samples_s), list(new.samples_s)))
    return judge_change(
        test.ratio,
        test.low,
        test.high,
        p,
        thresholds,
        SignificanceTest.RUNS,
        sample_counts=(len(base.samples_s), len(new.samples_s)),
    )


def run_spread_of(
    base: Measurement,
    new: Measurement,
    shown: tuple[ShownTime | None, ShownTime | None] | None = None,
) -> stats.RunSpread | None:
    """The between-run spread of a case when either side pools several runs, else None
    (one run per side: the samples are all there is): of each run's part of the time
    its run shows (`shown`, the sides' `ShownTime`s), or of each run's median without it."""
    if not (base.run_sample_counts or new.run_sample_counts):
        return None
    if shown is not None and shown[0] is not None and shown[1] is not None:
        return stats.run_spread(shown[0].process_seconds, shown[1].process_seconds)
    return stats.run_spread(base.run_medians_s, new.run_medians_s)


def compare_compile(
    base_s: float | None,
    new_s: float | None,
    thresholds: Thresholds,
    *,
    base_figures: Sequence[float] = (),
    new_figures: Sequence[float] = (),
) -> CompileChange | None:
    """Classify a cold compile-time change: a factor and an absolute floor, and, where each
    side has enough cold compiles (`base_figures`, `new_figures`: pooled runs, repeats
    with --rounds) for a two-sided Mann–Whitney test to reach `alpha`, that test too (its
    p-value is adjusted over the comparison's compile tests later, `adjust_compiles`).
    Without the test, the factor alone flagged identical code's compiles in A/A rounds on
    a noisy day (docs: validation, "Gate power, stored runs"). With one compile a side the
    factor and floor alone never decide: one cold compile a side on a busy machine moved
    ×2.9 in A/A pairs, so a change beyond them that too few compiles could test is
    INCONCLUSIVE (reported, never failing: `Comparison.compile_untested`). None when
    either side lacks the figure."""
    if base_s is None or new_s is None or base_s < 0 or new_s < 0:
        return None
    f, floor = thresholds.compile_threshold, thresholds.compile_floor_s
    p = None
    if stats.mann_whitney_min_p(len(base_figures), len(new_figures)) < thresholds.alpha:
        p = stats.mann_whitney_p(list(base_figures), list(new_figures))
    slower = new_s > base_s * f and new_s - base_s > floor
    faster = base_s > new_s * f and base_s - new_s > floor
    if p is None:
        verdict = Verdict.INCONCLUSIVE if slower or faster else Verdict.UNCHANGED
    elif p < thresholds.alpha and slower:
        verdict = Verdict.REGRESSION
    elif p < thresholds.alpha and faster:
        verdict = Verdict.IMPROVEMENT
    else:
        verdict = Verdict.UNCHANGED
    if p is None:
        return CompileChange(base_s=base_s, new_s=new_s, verdict=verdict)
    return CompileChange(
        base_s=base_s,
        new_s=new_s,
        verdict=verdict,
        count=min(len(base_figures), len(new_figures)),
        p_value=p,
    )


def adjust_compiles(entries: Sequence[Entry], thresholds: Thresholds) -> list[Entry]:
    """Benjamini–Hochberg over the comparison's compile tests (those with a p-value); a
    change whose adjusted p is not below alpha is unchanged."""
    tested = [i for i, e in enumerate(entries) if e.compile and e.compile.p_value is not None]
    out = list(entries)
    if not tested or thresholds.p_adjust != "bh":
        return out
    raw = [float(entries[i].compile.p_value or 0.0) for i in tested]  # type: ignore[union-attr]
    for i, q in zip(tested, stats.benjamini_hochberg(raw), strict=True):
        c = entries[i].compile
        assert c is not None
        verdict = c.verdict if q < thresholds.alpha else Verdict.UNCHANGED
        out[i] = replace(entries[i], compile=replace(c, p_value=q, verdict=verdict))
    return out


def compile_change_of(
    base: Measurement, new: Measurement, thresholds: Thresholds
) -> CompileChange | None:
    """`compare_compile` on two measurements: their judged figures and every cold compile
    each measured (pooled runs', repeats); its p-value is not adjusted yet."""
    return compare_compile(
        compile_figure(base.compile),
        compile_figure(new.compile),
        thresholds,
        base_figures=base.compile.compile_repeats_s if base.compile is not None else (),
        new_figures=new.compile.compile_repeats_s if new.compile is not None else (),
    )


def _params_note(base: Measurement, new: Measurement) -> str:
    bp, np_ = dict(base.case.params), dict(new.case.params)
    if bp == np_:
        return ""
    changed = [
        f"{k} {bp.get(k, '—')}→{np_.get(k, '—')}"
        for k in sorted(set(bp) | set(np_), key=str)
        if bp.get(k) != np_.get(k)
    ]
    return "size parameters changed: " + ", ".join(changed)


def compare_measurements(
    base: Measurement | None,
    new: Measurement | None,
    thresholds: Thresholds,
    *,
    run_prior_variance: float | None = None,
    shown: tuple[ShownTime | None, ShownTime | None] | None = None,
) -> Entry:
    """Classify one case × mode (either side may be missing). With pooled runs the
    run-time test is `compare_runs`, given the typical `run_prior_variance` of the case's
    mode on its device (`run_priors`). `shown` holds the times each side's run shows
    (`shown_time`); without it, each measurement's own."""
    ref = new if new is not None else base
    assert ref is not None, "at least one side must exist"
    if shown is None:
        shown = (shown_time(None, base), shown_time(None, new))
    base_shown, new_shown = shown
    common: dict[str, Any] = {
        "workload": ref.case.workload,
        "size": ref.case.size,
        "device": ref.case.device,
        "dtype": ref.case.dtype,
        "mode": ref.mode,
        "base": base,
        "new": new,
        "compile_gates": thresholds.compile_gates,
        "program_gates": thresholds.program_gates,
        "base_s": base_shown.seconds if base_shown is not None else None,
        "new_s": new_shown.seconds if new_shown is not None else None,
    }
    if base is None:
        return Entry(verdict=Verdict.NEW, **common)
    if new is None:
        return Entry(verdict=Verdict.REMOVED, **common)
    compile_change = compile_change_of(base, new, thresholds)
    base_failed, new_failed = base.failed, new.failed
    if base_failed and new_failed:
        return Entry(verdict=Verdict.STILL_FAILING, note=f"{new.status.value}", **common)
    if new_failed:
        why = new.error.type if new.error is not None else new.status.value
        return Entry(verdict=Verdict.NOW_FAILING, note=why, **common)
    if base_failed:
        return Entry(
            verdict=Verdict.FIXED, compile=compile_change, note=f"was {base.status.value}", **common
        )
    program = program_change_of(
        base,
        new,
        tolerance=thresholds.program_tolerance,
        memory_tolerance=thresholds.memory_tolerance,
    )
    if not (base.ok and new.ok):
        side = "base" if not base.ok else "new"
        m = base if not base.ok else new
        unsampled = not (base.samples_s or new.samples_s) and base.status is new.status
        note = (
            "timing not measured (programs only)"
            if unsampled
            else f"{side} is {m.status.value} with {len(m.samples_s)} samples"
        )
        said = explain(False, False, program, timed=not unsampled)
        return Entry(
            verdict=Verdict.NOT_COMPARED,
            compile=compile_change,
            program=program,
            note="; ".join(n for n in (note, said) if n),
            **common,
        )
    spread = run_spread_of(base, new, shown)
    if spread is not None:
        timing = compare_runs(base, new, spread, run_prior_variance, thresholds)
    else:
        ratio = time_ratio(
            base_shown.seconds if base_shown else None, new_shown.seconds if new_shown else None
        )
        timing = compare_timing(base.samples_s, new.samples_s, thresholds, shown_ratio=ratio)
    said = explain(
        timing.verdict is Verdict.REGRESSION, timing.verdict is Verdict.IMPROVEMENT, program
    )
    notes = [n for n in (timing.note, _params_note(base, new), said) if n]
    return Entry(
        program=program,
        verdict=timing.verdict,
        ratio=timing.ratio,
        ratio_low=timing.low,
        ratio_high=timing.high,
        p_value=timing.p_value,
        test=timing.test,
        compile=compile_change,
        note="; ".join(notes),
        **common,
    )


#: Verdicts reached by the timing test, so their p-values join the adjustment.
_TESTED_VERDICTS = frozenset({Verdict.REGRESSION, Verdict.IMPROVEMENT, Verdict.UNCHANGED})


def adjust_for_multiplicity(
    entries: tuple[Entry, ...], thresholds: Thresholds
) -> tuple[Entry, ...]:
    """Adjust the timing p-values of all entries together and re-judge significance.

    Each entry's verdict was reached with its own p-value. With `p_adjust="bh"` the
    p-values of every entry that was tested (regression, improvement, unchanged) are
    replaced by Benjamini–Hochberg adjusted ones (`stats.benjamini_hochberg`),
    and a large change whose adjusted p is not below `alpha` becomes unchanged. When no
    change is real this bounds the chance of any false regression by `alpha`, however many
    cases the suite has.
    """
    tested = [
        i for i, e in enumerate(entries) if e.p_value is not None and e.verdict in _TESTED_VERDICTS
    ]
    if not tested:
        return entries
    raw = [float(entries[i].p_value or 0.0) for i in tested]  # tested: never None
    adjusted = stats.benjamini_hochberg(raw) if thresholds.p_adjust == "bh" else raw
    out = list(entries)
    for i, q in zip(tested, adjusted, strict=True):
        e = replace(entries[i], p_adjusted=q)
        if e.verdict in (Verdict.REGRESSION, Verdict.IMPROVEMENT) and q >= thresholds.alpha:
            direction = "slower" if e.verdict is Verdict.REGRESSION else "faster"
            note = f"{direction}, but not significant across {len(tested)} tests"
            e = replace(e, verdict=Verdict.UNCHANGED, note="; ".join(filter(None, (note, e.note))))
        out[i] = e
    return tuple(out)


_MODE_ORDER = {m: i for i, m in enumerate(Mode)}


def _device_then_mode(group: tuple[str, Mode]) -> tuple[str, int]:
    """Sort key of a (device, mode) group: by device, then NumPy, eager, jit, ..."""
    return group[0], _MODE_ORDER[group[1]]


def geomean_ratios(entries: tuple[Entry, ...]) -> tuple[GeoMeanRatio, ...]:
    """Per device and mode, the geometric mean of the new/base ratios of compared cases."""
    groups: dict[tuple[str, Mode], list[float]] = {}
    for e in entries:
        if e.ratio is not None and e.verdict is not Verdict.NOT_COMPARED:
            groups.setdefault((e.device, e.mode), []).append(e.ratio)
    out = []
    ordered = sorted(groups.items(), key=lambda kv: _device_then_mode(kv[0]))
    for (device, mode), ratios in ordered:
        g = stats.geometric_mean(ratios)
        if g is not None:
            out.append(GeoMeanRatio(device=device, mode=mode, ratio=g, count=len(ratios)))
    return tuple(out)


@dataclass(frozen=True)
class RunPriors:
    """The typical between-run variances the run-level test shrinks each case's toward:
    `groups` holds each (device, mode) group's own, for the groups of at least
    `MIN_CASES_FOR_GROUP_PRIOR` cases run-tested on both sides; every other case takes
    `whole`, the whole comparison's."""

    whole: float | None
    groups: dict[tuple[str, Mode], float | None]

    def of(self, device: str, mode: Mode) -> float | None:
        """The typical variance a case of `mode` on `device` is shrunk toward."""
        return self.groups.get((device, mode), self.whole)


def run_priors(
    base_by_key: dict[tuple[CaseKey, Mode], Measurement],
    new_by_key: dict[tuple[CaseKey, Mode], Measurement],
    shown: dict[tuple[CaseKey, Mode], tuple[ShownTime | None, ShownTime | None]] | None = None,
) -> RunPriors:
    """The comparison's `RunPriors`, from the cases ok on both sides whose runs are pooled
    (their spreads of the shown times' parts, `shown`, where given)."""
    groups: dict[tuple[str, Mode], list[stats.RunSpread]] = {}
    for (key, mode), m in new_by_key.items():
        b = base_by_key.get((key, mode))
        if b is None or not (b.ok and m.ok):
            continue
        spread = run_spread_of(b, m, (shown or {}).get((key, mode)))
        if spread is not None:
            groups.setdefault((m.case.device, mode), []).append(spread)
    return RunPriors(
        whole=stats.typical_run_variance([s for g in groups.values() for s in g]),
        groups={
            group: stats.typical_run_variance(spreads)
            for group, spreads in groups.items()
            if len(spreads) >= MIN_CASES_FOR_GROUP_PRIOR
        },
    )


def _run_test_notes(entries: tuple[Entry, ...], priors: RunPriors) -> tuple[PoolingNote, ...]:
    """A line saying that run time was tested run by run, on how many runs, and against
    what typical spread; it warns when a side has too few runs for the test to have power."""
    run_tested = [e for e in entries if e.test is SignificanceTest.RUNS]
    if not run_tested:
        return ()
    base_counts = [len(e.base.run_medians_s) for e in run_tested if e.base]
    new_counts = [len(e.new.run_medians_s) for e in run_tested if e.new]
    n_base, n_new = _count_range(base_counts), _count_range(new_counts)

    def spread(variance: float | None) -> str:
        return f"{math.expm1(math.sqrt(variance)):.1%}" if variance is not None else "unknown"

    tested = sorted({(e.device, e.mode) for e in run_tested}, key=_device_then_mode)
    devices = {device for device, _ in tested}

    def name(group: tuple[str, Mode]) -> str:
        return f"{group[1].value} on {group[0]}" if len(devices) > 1 else group[1].value

    own = [g for g in tested if g in priors.groups]
    others = [g for g in tested if g not in priors.groups]
    if own:
        whose = "of its mode on its device" if len(devices) > 1 else "of its mode"
        each = ", ".join(f"{name(g)} {spread(priors.groups[g])}" for g in own)
        typical = f"the typical run-to-run spread {whose} ({each}"
        if others:
            typical += (
                f"; {', '.join(name(g) for g in others)}, with fewer than "
                f"{MIN_CASES_FOR_GROUP_PRIOR} cases: the whole comparison's, {spread(priors.whole)}"
            )
        typical += ")"
    else:
        typical = f"the whole comparison's typical run-to-run spread of {spread(priors.whole)}"
    # The unit is a measuring process: a run of --processes K brings K medians.
    text = (
        f"run time tested run by run: a t-test on each measuring process's part of the time "
        f"shown ({n_base} base vs {n_new} new; a run of --processes K gives K), each case's "
        f"spread shrunk toward {typical}, and Mann–Whitney on the samples"
    )
    if min(*base_counts, *new_counts) < MIN_RUNS_PER_SIDE:
        text += (
            f"; with fewer than {MIN_RUNS_PER_SIDE} on a side it finds only large changes: "
            "measure 4 per side (more runs, or --processes 4)"
        )
    return (PoolingNote(text),)


def numpy_copies(
    base_by_key: dict[tuple[CaseKey, Mode], Measurement],
    new_by_key: dict[tuple[CaseKey, Mode], Measurement],
) -> dict[tuple[CaseKey, Mode], str]:
    """NumPy measurements left out of the comparison, each with the device its case's
    NumPy is judged on: a run measures NumPy, host code, once per workload × size × dtype
    and files the one series under each device it measured (`results.is_host_copy`).
    Judged once per device, one change was counted (and its p-value adjusted for) as many
    times as there were devices. The device judged is the first, by name, that both sides
    have, so that the order of `--devices` or a pooled run without one device changes
    nothing; a copy is left out on both sides, or on the side that has it alone."""
    hosts: dict[tuple[str, str, str], dict[str, list[Measurement]]] = {}
    for by_key in (base_by_key, new_by_key):
        for (key, mode), m in by_key.items():
            if mode is Mode.NUMPY:
                host = (m.case.workload, m.case.size, m.case.dtype)
                hosts.setdefault(host, {}).setdefault(key[2], []).append(m)
    copies: dict[tuple[CaseKey, Mode], str] = {}
    for (workload, size, dtype), by_device in hosts.items():
        both = sorted(d for d, ms in by_device.items() if len(ms) == 2)
        if not both:
            continue
        judged = both[0]
        base_judged, new_judged = by_device[judged]
        for device in by_device:
            if device == judged:
                continue
            filed = ((workload, size, device, dtype), Mode.NUMPY)
            sides = [
                (side.get(filed), of)
                for side, of in ((base_by_key, base_judged), (new_by_key, new_judged))
            ]
            if all(m is None or is_host_copy(m, of) for m, of in sides):
                copies[filed] = judged
    return copies


def _numpy_copies_note(copies: dict[tuple[CaseKey, Mode], str]) -> tuple[PoolingNote, ...]:
    """A line saying that NumPy was judged once per case, not once per device."""
    if not copies:
        return ()
    judged = sorted(set(copies.values()))
    devices = sorted({key[2] for key, _ in copies})
    return (
        PoolingNote(
            f"NumPy judged once per case, on {', '.join(judged)}: it is host code, measured "
            f"once and filed under each device (not again on {', '.join(devices)})"
        ),
    )


def _run_ids(run: Run) -> list[str]:
    """The ids of the runs a side holds: those it pooled, else its own."""
    pooled = run.config.pooled
    if isinstance(pooled, dict) and pooled.get("runs"):
        return [str(x) for x in pooled["runs"]]
    return [run.run_id]


def _count_range(counts: Sequence[int]) -> str:
    """'2', or '2-3' where the cases were measured in different numbers of processes (a
    run's extra processes measure only the cases whose intervals are widest)."""
    low, high = min(counts), max(counts)
    return f"{low}" if low == high else f"{low}–{high}"


def compare(base: Run, new: Run, *, thresholds: Thresholds | None = None) -> Comparison:
    """Compare a new run against a base run, case by case and mode by mode.

    Measurements are matched by workload, size, device, dtype and mode. Run time regresses
    when the new/base ratio exceeds `thresholds.threshold` and the change is significant
    at `thresholds.alpha` (after `thresholds.p_adjust` over all timing tests, see
    `adjust_for_multiplicity`): by the two-sided Mann–Whitney U test on the raw samples
    and, when either side pools several runs (`merge_runs`), also a t-test on each run's
    median (`compare_runs`). Too few samples to ever reach alpha give "inconclusive",
    never a regression. Jit compile time (trace + lower + compile) regresses when it grows
    by more than `compile_threshold` and by more than `compile_floor_s` seconds and, where
    the sides have enough cold compiles, Mann–Whitney on them agrees (`compare_compile`,
    adjusted over the compile tests by `adjust_compiles`); with `compile_gates=False` it is
    reported but does not fail the gate. A case that was ok
    and now errors or mismatches is "now failing".

    Args:
        base: the baseline run (or a side pooled by `merge_runs` / `load_side`).
        new: the run judged against it.
        thresholds: what counts as a change; None for the defaults (`Thresholds()`). Bad
            values are refused when the `Thresholds` is built, before anything is judged.

    Returns:
        A frozen Comparison; `has_regression` is what a CI gate exits on.
    """
    if thresholds is None:
        thresholds = Thresholds()
    base_by_key = {(m.case.key, m.mode): m for m in base.measurements}
    new_keys = [(m.case.key, m.mode) for m in new.measurements]
    new_by_key = dict(zip(new_keys, new.measurements, strict=True))
    copies = numpy_copies(base_by_key, new_by_key)
    base_by_key = {k: m for k, m in base_by_key.items() if k not in copies}
    new_keys = [k for k in new_keys if k not in copies]
    new_by_key = {k: new_by_key[k] for k in new_keys}
    base_figures, new_figures = analyse(base), analyse(new)
    shown = {
        k: (
            shown_time(base_figures, base_by_key.get(k)),
            shown_time(new_figures, new_by_key.get(k)),
        )
        for k in dict.fromkeys([*new_keys, *base_by_key])
    }
    priors = run_priors(base_by_key, new_by_key, shown)
    entries = [
        compare_measurements(
            base_by_key.get(k),
            new_by_key[k],
            thresholds,
            run_prior_variance=priors.of(new_by_key[k].case.device, k[1]),
            shown=shown[k],
        )
        for k in dict.fromkeys(new_keys)
    ]
    entries += [
        compare_measurements(m, None, thresholds, shown=shown[k])
        for k, m in base_by_key.items()
        if k not in new_by_key
    ]
    # A side that is a partial run lacks cases it never reached: not removed or new.
    for side, run, verdict in (("new", new, Verdict.REMOVED), ("base", base, Verdict.NEW)):
        if not run.complete:
            note = f"the {side} run is partial and stopped before this case"
            entries = [replace(e, note=note) if e.verdict is verdict else e for e in entries]
    result = adjust_for_multiplicity(tuple(adjust_compiles(entries, thresholds)), thresholds)
    return Comparison(
        base_run_id=base.run_id,
        new_run_id=new.run_id,
        shared_runs=tuple(sorted(set(_run_ids(base)) & set(_run_ids(new)))),
        thresholds=thresholds,
        entries=result,
        geomeans=geomean_ratios(result),
        environment_differences=environment_differences(base, new),
        base_commit=commit_label(base),
        new_commit=commit_label(new),
        pooling=pooling_notes(base, "base")
        + pooling_notes(new, "new")
        + _numpy_copies_note(copies)
        + _run_test_notes(result, priors),
        incomplete=incomplete_sides(base, new),
    )


def incomplete_sides(base: Run, new: Run) -> tuple[str, ...]:
    """One line per side that is a partial run (interrupted, `complete` false): its missing
    cases read as removed or new, so the gate cannot vouch for them."""
    found = []
    for side, run in (("new", new), ("base", base)):
        if not run.complete:
            found.append(
                f"the {side} run {run.run_id} is partial (interrupted, {len(run.cases())} "
                "case(s) measured), so the cases it lacks were not checked; finish it with "
                "`jitbench run --resume RUN.json`."
            )
    return tuple(found)
