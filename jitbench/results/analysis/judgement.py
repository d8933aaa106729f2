"""Judging a run's stored figures: the diagnostics that read what the table shows.

`measure.diagnose` records what is seen while a case is measured (a recompile, a print,
a mismatch); this module judges the figures afterwards, from the analysis layer's own
estimates, so every note quotes the figures its row shows: speed observations
(`speed_notes`: jit slower than NumPy, eager dispatch-bound), `outlier-samples`,
`size-order-inverted` and `processes-disagree` (`run_diagnostics`), and a `--processes`
run's notes judged again on every process's samples (`pooled_judgement`). The codes and
constructors the measuring side needs too live here, the lower rank.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from jitbench import formatting as fmt
from jitbench.config import ALL_MODES, Mode
from jitbench.results.analysis.estimates import Estimate
from jitbench.results.analysis.figures import (
    SIZE_ORDER,
    CaseAnalysis,
    ModeFigure,
    analyse,
)
from jitbench.results.model import Diagnostic, Measurement, Run, Severity, Status

# Observations: true statements about speed at this size, not mistakes in the code.
JIT_SLOWER = "jit-slower-than-numpy"
EAGER_DISPATCH = "eager-dispatch-bound"
NOISY = "noisy"
# Measurement trouble: the figure itself is suspect.
OUTLIERS = "outlier-samples"
PROCESSES_DISAGREE = "processes-disagree"
#: Recorded while measuring (`measure.diagnose`); read here: a recompiling eager is slow
#: for compiling, not for dispatch.
RECOMPILED = "recompiled-during-timing"

EAGER_FAR_SLOWER = 10.0  # eager / jit ratio that counts as "far slower"
# ... and the ratio's lower 95 % bound must exceed this: with the few samples of a quick
# run one preempted jit sample drags the bound far below the ratio.
EAGER_SURELY_SLOWER = 2.0
DISPATCH_BOUND_S = 50e-6  # a jit call this short is dominated by per-call dispatch
# Tukey's "far out": beyond Q3 + 3·IQR. Timing noise only ever adds time, so only the high
# side is checked; below 8 samples the quartiles are too rough to call anything far.
OUTLIER_IQRS = 3.0
OUTLIER_MIN_SAMPLES = 8
# ... and at least 5 % above the median, so a very tight distribution (IQR of 0.1 %) does
# not call a sample 0.4 % out "far".
OUTLIER_MIN_EXCESS = 0.05
# A smaller input slower than a larger one by more than this (shown times), with their
# 95 % intervals apart: S, M and L differ ~10× in work, so this is a stall, not the
# algorithm.
SIZE_ORDER_MARGIN = 0.05
# ... unless the larger input's call is this short: per-call overhead (NumPy's few µs, jit
# dispatch, eager's dispatch per operation) does not grow with the input, so where it
# dominates, times are flat in the size and their order is the machine's drift.
SIZE_ORDER_MIN_S = 100e-6
# ... and every other mode of the case moved with it between the same processes, within
# this factor: then the machine, not the mode's code, was slower during one process (a
# neighbour's burst), and the speedups, paired round by round, are untouched by it. When
# every other mode was slower in the same process by this factor or more, but not alike,
# the machine was still busier then; only the modes felt it unequally, and the speedups
# moved with that (docs: guide, "Profiling", `processes-disagree`).
SHARED_SHIFT_FACTOR = 1.2


# ---------------------------------------------------------------------------------------
# The notes


def noisy(rel_halfwidth: float, target: float) -> Diagnostic:
    """`noisy`: one process's median CI (±`rel_halfwidth`) is wider than the precision
    target (`--setting precision=`) when the budget ran out: the interval a one-process
    run's table shows."""
    if math.isinf(rel_halfwidth):
        message = (
            "the median's 95 % CI could not be estimated from so few samples when the "
            "budget ran out"
        )
    else:
        message = (
            f"the median's 95 % CI is ±{rel_halfwidth:.1%}, wider than the ±{target:.1%} "
            "target, when the budget ran out"
        )
    return Diagnostic(
        code=NOISY,
        severity=Severity.INFO,
        message=message,
        hint="raise --budget, close other programs, or pin the process to idle cores.",
    )


def jit_slower(slowdown: float, jit_s: float, numpy_s: float) -> Diagnostic:
    why = (
        f"a {fmt.seconds(jit_s)} call is dominated by per-call dispatch overhead"
        if jit_s < DISPATCH_BOUND_S
        else "XLA's program is slower than NumPy's kernels here"
    )
    return Diagnostic(
        code=JIT_SLOWER,
        severity=Severity.INFO,
        message=f"jit is {fmt.ratio(slowdown)} slower than NumPy at this size "
        f"({fmt.seconds(jit_s)} vs {fmt.seconds(numpy_s)}): {why}",
        hint="batch more work into each call (larger arrays, jax.vmap over many problems), "
        "or keep problems this small in NumPy.",
    )


def eager_dispatch(ratio: Estimate, eager_s: float, jit_s: float) -> Diagnostic:
    return Diagnostic(
        code=EAGER_DISPATCH,
        severity=Severity.INFO,
        message=f"eager is {fmt.ratio(ratio.value)} slower than jit ({fmt.seconds(eager_s)} vs "
        f"{fmt.seconds(jit_s)}): op-by-op dispatch, one small program per primitive",
        hint="wrap the function in jax.jit so XLA fuses the operations into one program.",
    )


def speed_notes(
    c: CaseAnalysis, *, eager_far_slower: float = EAGER_FAR_SLOWER
) -> list[tuple[Mode, Diagnostic]]:
    """The speed observations of one case from the figures its table shows (jit over
    NumPy, eager over jit, each with its interval): jit slower when jit's speedup lies
    below 1 with its whole interval; eager dispatch-bound when it is `eager_far_slower`
    times slower than jit and surely over `EAGER_SURELY_SLOWER` (not while it
    recompiles: then compiling, not dispatch, is what makes eager slow)."""
    found: list[tuple[Mode, Diagnostic]] = []
    numpy_f, eager_f, jit_f = (c.get(mode) for mode in ALL_MODES)
    speedup = jit_f.speedup if jit_f is not None else None
    if speedup is not None and speedup.high is not None and speedup.high < 1:
        assert jit_f is not None and numpy_f is not None
        assert jit_f.time is not None and numpy_f.time is not None
        found.append(
            (Mode.JIT, jit_slower(1 / speedup.value, jit_f.time.value, numpy_f.time.value))
        )
    eager_over_jit = c.eager_over_jit
    recompiling = eager_f is not None and any(
        d.code == RECOMPILED for d in eager_f.measurement.diagnostics
    )
    if (
        not recompiling
        and eager_over_jit is not None
        and eager_over_jit.value >= eager_far_slower
        and eager_over_jit.low is not None
        and eager_over_jit.low > EAGER_SURELY_SLOWER
    ):
        assert eager_f is not None and jit_f is not None
        assert eager_f.time is not None and jit_f.time is not None
        found.append(
            (Mode.EAGER, eager_dispatch(eager_over_jit, eager_f.time.value, jit_f.time.value))
        )
    return found


def outlier_samples(m: Measurement) -> Diagnostic | None:
    """`outlier-samples` when some of `m`'s samples lie far above the rest (beyond
    Q3 + `OUTLIER_IQRS`·IQR and `OUTLIER_MIN_EXCESS` above the median), else None."""
    xs = m.samples_s
    if len(xs) < OUTLIER_MIN_SAMPLES or m.summary is None:
        return None
    q1, q3 = (float(q) for q in np.percentile(xs, [25, 75]))
    median = m.summary.median
    fence = max(q3 + OUTLIER_IQRS * (q3 - q1), median * (1 + OUTLIER_MIN_EXCESS))
    far = [x for x in xs if x > fence]
    if not far or median <= 0:
        return None
    return Diagnostic(
        code=OUTLIERS,
        severity=Severity.INFO,
        message=f"{len(far)} of {len(xs)} samples lie beyond Q3 + {OUTLIER_IQRS:g}·IQR "
        f"({fmt.seconds(fence)}), the worst {fmt.ratio(max(far) / median)} the median "
        f"{fmt.seconds(median)}: something stalled them (the median and its CI stand)",
        hint="quiet the machine and keep --threads 1 (idle BLAS/XLA threads of another call "
        "and other processes stall samples); the raw samples are in the run JSON.",
    )


def _process_times(f: ModeFigure) -> tuple[float, ...] | None:
    """Each process's median of `f` (a `--processes` run), None with fewer than two or a
    median that is not positive."""
    times = f.process_times if len(f.measurement.run_sample_counts) > 1 else ()
    return times if len(times) > 1 and min(times) > 0 else None


def processes_disagree(f: ModeFigure, case: CaseAnalysis) -> Diagnostic | None:
    """`processes-disagree` when the analysis marks `f`'s process times apart
    (`ModeFigure.time_disagree`: `PROCESS_SPLIT_FACTOR` or more), else None.

    The message says how far each of the case's other modes moved between the slowest
    and the fastest of `f`'s processes. When every mode moved alike (every pair within
    `SHARED_SHIFT_FACTOR`) it names the machine, not the code, as the cause, at `INFO`
    (the speedups hold), not `WARNING`. When every other mode was slower in the same
    process by that factor or more, but not alike, it names the machine too, and says
    how far this mode's time moved relative to each other mode's (a `WARNING`: speedups
    moved)."""
    medians = _process_times(f)
    if medians is None or not f.time_disagree:
        return None
    slow, fast = medians.index(max(medians)), medians.index(min(medians))
    moved = [
        (o.mode.value, om[slow] / om[fast])
        for o in case.figures.values()
        if o.mode is not f.mode
        and o.status is Status.OK
        and (om := _process_times(o)) is not None
        and len(om) == len(medians)
    ]
    factor = medians[slow] / medians[fast]
    shown = ", ".join(fmt.seconds(x) for x in medians)
    message = f"its {len(medians)} processes measured {shown} ({fmt.ratio(factor)} apart)"
    if moved:
        message += "; between the same processes " + ", ".join(
            f"{mode} moved {fmt.ratio(x)}" for mode, x in moved
        )
    factors = [factor, *(x for _, x in moved)]
    # Alike: every pair of modes, not only this one against each, or a speedup between
    # two others (jit over NumPy, when this is eager) could have moved.
    shared = bool(moved) and max(factors) <= SHARED_SHIFT_FACTOR * min(factors)
    busier = bool(moved) and all(x >= SHARED_SHIFT_FACTOR for _, x in moved)
    if shared:
        message += (
            ": every mode moved alike, so the machine was slower during one process, not "
            "this code; the speedups, taken round by round, hold, and the time is a mix "
            "of the two speeds"
        )
    elif busier:
        relative = ", to ".join(
            f"{mode}'s {fmt.ratio(max(factor / x, x / factor))}" for mode, x in moved
        )
        message += (
            ": every mode was slower in the same process, so the machine was busier then, "
            "but not by the same amount (a busy host does not slow every kind of code "
            f"alike), so the speedups moved too (its time relative to {relative}); the "
            "interval is wide for it"
        )
    else:
        message += (
            ": the same code ran at different speeds in different processes (an "
            "executable's memory layout, or what the cache held), so a repeat run may see "
            "either; the interval is wide for it"
        )
    return Diagnostic(
        code=PROCESSES_DISAGREE,
        # The machine's slowdown leaves the speedups standing: a note, not a problem.
        severity=Severity.INFO if shared else Severity.WARNING,
        message=message,
        hint=f"measure it in more processes (--processes {2 * len(medians)}), so one "
        "process's speed weighs less; each process's samples are in the run JSON "
        "(run_sample_counts).",
    )


def _input_size(m: Measurement) -> tuple[int, int] | None:
    """(input bytes, input elements) of `m`'s case, for ordering its sizes; None if unknown."""
    c = m.case
    if c.input_bytes is None and c.input_elements is None:
        return None
    return (c.input_bytes or 0, c.input_elements or 0)


def _smaller(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether input `a` is smaller than `b`: by bytes where both know them, else by
    elements, and never larger by the other measure."""
    (ab, ae), (bb, be) = a, b
    if ab and bb and ab != bb:
        return ab < bb and not (ae and be and ae > be)
    return bool(ae and be and ae < be)


def size_order_inverted(smaller: ModeFigure, larger: ModeFigure) -> Diagnostic:
    """`size-order-inverted` on `smaller`, quoting the two shown times."""
    a, b = smaller.time, larger.time
    assert a is not None and b is not None
    s, g = smaller.measurement.case, larger.measurement.case
    what = "input bytes" if s.input_bytes and g.input_bytes else "elements"
    grow = (
        (g.input_bytes or 0) / (s.input_bytes or 1)
        if what == "input bytes"
        else (g.input_elements or 0) / (s.input_elements or 1)
    )
    return Diagnostic(
        code=SIZE_ORDER,
        severity=Severity.WARNING,
        message=f"{smaller.mode.value} at {s.size} ({fmt.seconds(a.value)}) is slower than at "
        f"{g.size} ({fmt.seconds(b.value)}, {fmt.ratio(grow)} the {what}): a smaller "
        "input cannot honestly take longer, so this figure is probably a stall (BLAS threads, "
        "another process); it is left out of the geometric-mean speedup",
        hint=f"measure it again on a quiet machine with --threads 1 (`jitbench run "
        f"{s.workload} -s {s.size},{g.size}`).",
    )


def _inverted(smaller: ModeFigure, larger: ModeFigure) -> bool:
    a, b = smaller.time, larger.time
    if a is None or b is None or not (smaller.ok and larger.ok) or b.value < SIZE_ORDER_MIN_S:
        return False
    split = larger.measurement.time_split
    if split is not None and split.host_s >= split.device_s:
        # Traced as dispatch-bound (time_split): the device's work is not what the call
        # waits for, so its time is flat in the size and the order is drift (docs:
        # validation, "H200 runs").
        return False
    if a.low is None or b.high is None:
        return False
    return a.value > b.value * (1 + SIZE_ORDER_MARGIN) and a.low > b.high


def run_diagnostics(run: Run) -> Run:
    """Add the diagnostics that need a whole run, judged on the figures `analyse(run)`
    shows: `outlier-samples` per measurement; `processes-disagree` where a `--processes`
    run's processes measured a mode `PROCESS_SPLIT_FACTOR` or more apart, saying how the
    case's other modes moved between the same processes; and `size-order-inverted` on a
    figure slower than the same workload × device × dtype × mode at a larger input (shown
    times more than `SIZE_ORDER_MARGIN` apart, intervals apart, the larger input's call
    at least `SIZE_ORDER_MIN_S`), naming the larger size.

    Pure and idempotent (a code is added once per measurement); measurements keep their
    order.
    """
    figures = analyse(run)
    index = {id(m): i for i, m in enumerate(run.measurements)}
    extra: dict[int, list[Diagnostic]] = {}
    groups: dict[tuple[str, str, str, Mode], list[ModeFigure]] = {}  # the sizes of a mode
    for case in figures:
        for f in case.figures.values():
            c = f.measurement.case
            groups.setdefault((c.workload, c.device, c.dtype, f.mode), []).append(f)
            for found in (outlier_samples(f.measurement), processes_disagree(f, case)):
                if found is not None:
                    extra.setdefault(index[id(f.measurement)], []).append(found)
    for fs in groups.values():
        sized = [(size, f) for f in fs if (size := _input_size(f.measurement)) is not None]
        for size, f in sized:
            larger = [
                (other_size, other)
                for other_size, other in sized
                if _smaller(size, other_size) and _inverted(f, other)
            ]
            if larger:
                # Name the largest input it is slower than: the plainest contradiction.
                _, worst = max(larger, key=lambda x: x[0])
                extra.setdefault(index[id(f.measurement)], []).append(size_order_inverted(f, worst))
    if not extra:
        return run
    return replace(
        run,
        measurements=tuple(
            m.with_diagnostics(extra.get(i, ())) for i, m in enumerate(run.measurements)
        ),
    )


#: What the first process judged on its own share of a `--processes` run's samples, and
#: `pooled_judgement` judges again on all of them: a note must quote the figures the table
#: shows (a jit-slower note said 31.5 ms vs 12.5 ms beside a row of 16.8 ms vs 9.21 ms).
_JUDGED_ON_SAMPLES = frozenset({NOISY, OUTLIERS, SIZE_ORDER, JIT_SLOWER, EAGER_DISPATCH})


def pooled_judgement(run: Run) -> Run:
    """The sample-borne diagnostics of a `--processes` run judged again on the pooled
    run's figures (`analyse`): `jit-slower-than-numpy` (the jit speedup's interval below
    1) and `eager-dispatch-bound`, then `run_diagnostics` (outliers, size order,
    processes that disagree). Each process judged its own share (at the default two,
    five samples of a slow case, too few for any 95 % interval), but the run reports the
    pooled figures.

    Each process's `noisy` (its share's median CI wider than the precision target) is
    dropped and none is judged again: the table's interval is then where a repeat run
    lands, which the processes' spread sets more than any one process's sampling, so a
    note quoting a sampling CI would contradict the row beside it, and one judging the
    row's interval against a sampling target would flag nearly every row. The row shows
    its interval; `processes-disagree` and the wide-interval marks say when it is wide.
    """
    if not any(len(m.run_sample_counts) > 1 and m.samples_s for m in run.measurements):
        return run_diagnostics(run)
    run = replace(
        run,
        measurements=tuple(
            replace(
                m, diagnostics=tuple(d for d in m.diagnostics if d.code not in _JUDGED_ON_SAMPLES)
            )
            if len(m.run_sample_counts) > 1 and m.samples_s
            else m
            for m in run.measurements
        ),
    )
    extra: dict[tuple[tuple[str, str, str, str], Mode], list[Diagnostic]] = {}
    for case in analyse(run):
        jit_f = case.get(Mode.JIT)
        if jit_f is None or len(jit_f.measurement.run_sample_counts) < 2:
            continue
        for mode, found in speed_notes(case):
            extra.setdefault((case.key, mode), []).append(found)
    if extra:
        run = replace(
            run,
            measurements=tuple(
                m.with_diagnostics(extra.get((m.case.key, m.mode), [])) for m in run.measurements
            ),
        )
    return run_diagnostics(run)


@dataclass(frozen=True)
class NoisyTally:
    """How many of a run's measurements are `noisy`, of how many, against which precision
    target (None where the run records no settings): the one count every reader shows."""

    noisy: int
    measurements: int
    precision: float | None

    @property
    def goal(self) -> str:
        """ "the ±1 % target" (or "the target" without the run's settings)."""
        return f"the ±{fmt.percent(self.precision)} target" if self.precision else "the target"


def noisy_tally(run: Run) -> NoisyTally | None:
    """The run's `noisy` measurements counted; None when there are none."""
    noisy = sum(any(d.code == NOISY for d in m.diagnostics) for m in run.measurements)
    if not noisy:
        return None
    settings = run.config.settings
    return NoisyTally(noisy, len(run.measurements), settings.plan.precision if settings else None)
