"""Several runs of the same cases as one: each case's samples concatenated, every run's
share kept (`Measurement.run_sample_counts`), so per-run figures stay derivable.

Used for a run measured in several worker processes (`jitbench run --processes K`) and by
the gate to pool the runs of one side.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import replace

from jitbench.config import Mode
from jitbench.results.model import Measurement, Run

CaseKey = tuple[str, str, str, str]


def judged_compile_s(m: Measurement) -> float | None:
    """The jit compile figure to judge: the median of every cold compile measured
    (several with rounds or pooled runs), else the one there is."""
    if m.compile is None:
        return None
    if m.compile.compile_repeats_s:
        return statistics.median(m.compile.compile_repeats_s)
    return m.compile.total_compile_s


def pool_measurements(ms: Sequence[Measurement], *, sample_from: Sequence[bool]) -> Measurement:
    """One case × mode measured in several runs, as one measurement.

    A failure in any run is the result (a case that failed once is not ok). Otherwise the
    samples of the runs flagged in `sample_from` are concatenated (seconds per call, so
    different calls-per-sample counts pool fine; all ok runs if none is flagged), with
    each run's count in `run_sample_counts`; every run's cold compiles pool into
    `compile_repeats_s`, and the other fields come from the run whose compile figure is
    the median.
    """
    failed = next((m for m in ms if m.failed), None)
    if failed is not None:
        return failed
    ok = [(m, use) for m, use in zip(ms, sample_from, strict=True) if m.ok]
    if not ok:
        return ms[0]
    timed = sorted((c, i) for i, (m, _) in enumerate(ok) if (c := judged_compile_s(m)) is not None)
    keeper = ok[timed[(len(timed) - 1) // 2][1]][0] if timed else ok[0][0]
    kept = [m for m, use in ok if use] or [m for m, _ in ok]
    samples = tuple(x for m in kept for x in m.samples_s)
    counts = tuple(c for m in kept for c in (m.run_sample_counts or (len(m.samples_s),)))
    if keeper.compile is not None and timed:
        repeats = tuple(
            x
            for m, _ in ok
            if m.compile is not None
            for x in (m.compile.compile_repeats_s or (judged_compile_s(m),))
            if x is not None
        )
        keeper = replace(keeper, compile=replace(keeper.compile, compile_repeats_s=repeats))
    return replace(keeper, samples_s=samples, run_sample_counts=counts)


def pool_runs(runs: Sequence[Run], *, sample_from: Sequence[bool] | None = None) -> Run:
    """`runs` of the same cases as one Run (see `pool_measurements`); the first run's id,
    start, environment and configuration, the last one's finish. One run is returned as is.

    Raises:
        ValueError: `runs` is empty.
    """
    if not runs:
        raise ValueError("no runs to pool")
    if len(runs) == 1:
        return runs[0]
    use = list(sample_from) if sample_from is not None else [True] * len(runs)
    groups: dict[tuple[CaseKey, Mode], list[tuple[int, Measurement]]] = {}
    for i, run in enumerate(runs):
        for m in run.measurements:
            groups.setdefault((m.case.key, m.mode), []).append((i, m))
    merged = tuple(
        pool_measurements([m for _, m in pairs], sample_from=[use[i] for i, _ in pairs])
        for pairs in groups.values()
    )
    return replace(
        runs[0],
        finished_at=runs[-1].finished_at,
        complete=all(r.complete for r in runs),
        measurements=merged,
    )
