"""Several runs of the same cases as one: each case's samples concatenated, every run's
share kept (`Measurement.run_sample_counts`), so per-run figures stay derivable.

Used for a run measured in several worker processes (`jitbench run --processes K`) and by
the gate to pool the runs of one side. `merge_processes` joins instead the files of one
multi-process JAX run (`--distributed`), whose processes measured different devices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from jitbench.config import Mode
from jitbench.errors import ResultsFormatError
from jitbench.results.analysis.estimates import compile_figure
from jitbench.results.model import Measurement, Run

CaseKey = tuple[str, str, str, str]


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
    timed = sorted(
        (c, i) for i, (m, _) in enumerate(ok) if (c := compile_figure(m.compile)) is not None
    )
    keeper = ok[timed[(len(timed) - 1) // 2][1]][0] if timed else ok[0][0]
    kept = [m for m, use in ok if use] or [m for m, _ in ok]
    samples = tuple(x for m in kept for x in m.samples_s)
    counts = tuple(c for m in kept for c in m.part_counts)
    if keeper.compile is not None and timed:
        repeats = tuple(
            x
            for m, _ in ok
            if m.compile is not None
            for x in (m.compile.compile_repeats_s or (compile_figure(m.compile),))
            if x is not None
        )
        keeper = replace(keeper, compile=replace(keeper.compile, compile_repeats_s=repeats))
    if keeper.compile is not None and keeper.compile.program_text is None:
        # Some processes keep no text (one that loaded another's program, an --isolate
        # child's JSON): the same code, so any process's text is the program's.
        text = next(
            (m.compile.program_text for m, _ in ok if m.compile and m.compile.program_text),
            None,
        )
        if text is not None:
            keeper = replace(keeper, compile=replace(keeper.compile, program_text=text))
    return replace(keeper, samples_s=samples, run_sample_counts=counts)


def processes_in(measured: Sequence[Measurement]) -> int:
    """How many processes' samples a case's measurements hold (the most of any mode)."""
    return max((len(m.part_counts) for m in measured if m.samples_s), default=1)


def pool_case(parts: Sequence[Sequence[Measurement]]) -> list[Measurement]:
    """One case's measurements from several processes (each part one process's, or a
    pooled run's, modes), pooled mode by mode as `pool_runs` pools a run's cases."""
    by_mode: dict[Mode, list[Measurement]] = {}
    for part in parts:
        for m in part:
            by_mode.setdefault(m.mode, []).append(m)
    return [pool_measurements(ms, sample_from=[True] * len(ms)) for ms in by_mode.values()]


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


def process_of(run: Run) -> tuple[int, int] | None:
    """(index, count) of the process that wrote `run` in a multi-process JAX run
    (`jitbench run --distributed`), or None when the run records none."""
    record = run.environment.get("process")
    if not isinstance(record, dict):
        return None
    index, count = record.get("index"), record.get("count")
    if isinstance(index, int) and isinstance(count, int) and 0 <= index < count:
        return index, count
    return None


def merge_processes(runs: Sequence[Run]) -> Run:
    """The run files of one multi-process run (one per process, `jitbench run
    --distributed`) as one Run: every process's measurements, each case's device labelled
    with its process ("gpu:8@p1"), since each process measured on its own devices. The
    first process's id (with "-merged"), configuration and environment, the latter with
    every process's host and run id under "processes"; the earliest start, the latest
    finish. With a process's file missing, the run is incomplete and says which
    ("missing_processes").

    Raises:
        ResultsFormatError: a run records no process, or the runs are not the distinct
            processes of one run (counts differ, an index twice).
    """
    if not runs:
        raise ResultsFormatError("no run files to merge; pass one per process.")
    found = []
    for run in runs:
        where = process_of(run)
        if where is None:
            raise ResultsFormatError(
                f"run {run.run_id} records no process index (written without --distributed, "
                "or by an older jitbench); merge only the files of one `jitbench run "
                "--distributed`."
            )
        found.append((where, run))
    counts = {count for (_, count), _ in found}
    indices = [index for (index, _), _ in found]
    if len(counts) > 1 or len(set(indices)) < len(indices):
        raise ResultsFormatError(
            "these runs are not the processes of one multi-process run: process "
            f"(index, count) {sorted(w for w, _ in found)}; pass each process's file once."
        )
    found.sort(key=lambda pair: pair[0][0])
    first = found[0][1]
    measurements = tuple(
        replace(m, case=replace(m.case, device=f"{m.case.device}@p{index}"))
        for (index, _), run in found
        for m in run.measurements
    )
    finished = [r.finished_at for _, r in found]
    # A process whose file is missing (its host failed) leaves the merged run incomplete,
    # with the gap on record, rather than refused: what the others measured is kept.
    missing = sorted(set(range(counts.pop())) - set(indices))
    environment = {
        **first.environment,
        "processes": [
            {"index": index, "host": r.environment.get("host"), "run_id": r.run_id}
            for (index, _), r in found
        ],
        **({"missing_processes": missing} if missing else {}),
    }
    return replace(
        first,
        run_id=f"{first.run_id}-merged",
        started_at=min(r.started_at for _, r in found),
        finished_at=None if None in finished else max(f for f in finished if f is not None),
        complete=not missing and all(r.complete for _, r in found),
        environment=environment,
        measurements=measurements,
    )
