"""Pooling: one side of a comparison as one run file or a folder of runs of the same code
(rounds), merged into one run; a run the machine slowed as a whole is left out of its side.

This is the gate's only file I/O (`load_side`); the merged run records how it was pooled
under `config["pooled"]`, which `pooling_notes` turns into lines for the report.
"""

from __future__ import annotations

import math
import numbers
import os
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from jitbench.errors import ConfigError, ResultsFormatError
from jitbench.gate.envdiff import commit_label, environment_differences
from jitbench.gate.model import PoolingNote
from jitbench.results import Run, load_run
from jitbench.results.files import OutputLayout
from jitbench.results.merge import pool_runs

#: A run of one side whose level across the suite is this many times that of its fastest
#: sibling run was disturbed by the machine (see `run_levels`); 0 keeps every run.
DISTURBED_FACTOR = 1.15

#: Fewest cases two runs must share before their levels are compared at all.
_MIN_CASES_FOR_LEVELS = 5


def run_levels(runs: Sequence[Run]) -> list[float] | None:
    """Each run's speed level: the geometric mean, over the case × modes every run measured,
    of its median ÷ the median of all runs' medians. Runs of the same code differ in level
    only by the machine's state; None when they share fewer than five cases."""
    medians = [
        {(m.case.key, m.mode): m.median_s for m in r.measurements if m.ok and m.median_s}
        for r in runs
    ]
    shared = set.intersection(*(set(d) for d in medians)) if medians else set()
    if len(shared) < _MIN_CASES_FOR_LEVELS:
        return None
    reference = {k: statistics.median(d[k] for d in medians) for k in shared}
    return [
        math.exp(statistics.fmean(math.log(d[k] / reference[k]) for k in shared)) for d in medians
    ]


def _check_disturbed_factor(factor: float) -> None:
    """The one check of `disturbed_factor` (`merge_runs` and `load_side` call it first).

    Raises:
        ConfigError: not a number, NaN, infinite, or neither 0 nor above 1.
    """
    is_real = isinstance(factor, numbers.Real) and not isinstance(factor, bool)
    if not (is_real and (factor == 0 or (factor > 1 and math.isfinite(factor)))):
        raise ConfigError(
            "--disturbed-factor is 0 (keep every run) or a finite factor above 1 such as "
            f"{DISTURBED_FACTOR}, got {factor!r}."
        )


def merge_runs(runs: Sequence[Run], *, disturbed_factor: float = DISTURBED_FACTOR) -> Run:
    """Pool several runs of the same code into one, for rounds that alternate base and new.

    Samples of the same case × mode are concatenated (they are seconds per call, so
    different calls-per-sample counts pool fine). A run whose level across the suite
    (`run_levels`) is more than `disturbed_factor` times its fastest sibling's was slowed
    by the machine as a whole (a busy neighbour for a minute; docs: validation, "Figures
    behind the code"); its samples are left
    out and the merged run's `config["pooled"]` says so. Fewer than half a side's runs are
    ever left out, the slowest first: on a noisier day every run of a side strayed
    1.15–1.5× from its fastest, and leaving three of four out judged the side on one
    lucky run. Every run's cold compiles pool into
    `compile_repeats_s`, whose median is what `compare` judges; a case that failed in any
    run counts as failed. Environment and configuration come from the first run. One run
    is returned unchanged.

    Raises:
        ValueError: `runs` is empty.
        ConfigError: `disturbed_factor` is neither 0 nor a finite factor above 1.
    """
    if not runs:
        raise ValueError("no runs to merge")
    _check_disturbed_factor(disturbed_factor)
    if len(runs) == 1:
        return runs[0]
    levels = run_levels(runs) if disturbed_factor > 0 else None
    fastest = min(levels) if levels else 1.0
    beyond = [i for i, level in enumerate(levels or ()) if level > fastest * disturbed_factor]
    # A minority at most, the slowest first: where half a side's runs or more are beyond
    # the factor, the machine drifted as a whole and the fastest run is the odd one out.
    most = (len(runs) - 1) // 2
    disturbed = set(sorted(beyond, key=lambda i: -(levels or [])[i])[:most])
    pooled = pool_runs(runs, sample_from=[i not in disturbed for i in range(len(runs))])
    first = runs[0]
    record = {
        "runs": [r.run_id for r in runs],
        "excluded": [
            {"run_id": runs[i].run_id, "level": (levels or [])[i] / fastest}
            for i in sorted(disturbed)
        ],
        "differing": [
            {"run_id": r.run_id, "fields": fields}
            for r in runs[1:]
            if (fields := _differences(first, r))
        ],
    }
    return replace(
        pooled,
        run_id=f"{first.run_id}+{len(runs) - 1}",
        config=replace(first.config, pooled=record),
    )


def _differences(first: Run, other: Run) -> list[str]:
    """How `other`'s environment and measurement settings differ from `first`'s
    ("x64: False → True"), as a comparison reports them between its sides, and its commit
    (the one thing two sides should differ in, and runs of one side should not)."""
    found = [f"{d.name}: {d.base} → {d.new}" for d in environment_differences(first, other)]
    if (commit := commit_label(first)) != (other_commit := commit_label(other)):
        found.insert(0, f"commit: {commit or '—'} → {other_commit or '—'}")
    return found


def pooling_notes(run: Run, side: str) -> tuple[PoolingNote, ...]:
    """Lines saying how a side was pooled and which runs were left out, and why."""
    pooled = run.config.pooled
    if not isinstance(pooled, Mapping):
        return ()
    runs = len(pooled.get("runs", ()))
    notes = [PoolingNote(f"{side}: {runs} runs pooled")] if runs > 1 else []
    for x in pooled.get("copies", ()):
        notes.append(
            PoolingNote(
                f"{side}: run {x['run_id']} is in {len(x['files'])} files "
                f"({', '.join(x['files'])}): counted once",
                warns=True,
            )
        )
    for x in pooled.get("excluded", ()):
        notes.append(
            PoolingNote(
                f"{side}: run {x['run_id']} left out: {x['level']:.2f}× slower across the suite "
                "than its fastest sibling run of the same code (the machine was disturbed)",
                left_out=True,
            )
        )
    first = pooled.get("runs", ["?"])[0]
    for x in pooled.get("differing", ()):
        notes.append(
            PoolingNote(
                f"{side}: run {x['run_id']} was not measured like run {first}, the first "
                f"({'; '.join(x['fields'])}), yet pooled with it: a side should hold runs "
                "of the same code, settings and machine",
                warns=True,
            )
        )
    return tuple(notes)


def load_side(path: str | os.PathLike[str], *, disturbed_factor: float = DISTURBED_FACTOR) -> Run:
    """One run file, or a folder of run files (rounds of one side) pooled into one run
    (`merge_runs`, which leaves out runs the machine disturbed as a whole).

    A folder may hold the run files or be a `--out` folder with them under `runs/`.

    Raises:
        ConfigError: a bad `disturbed_factor` (before any file is read).
        ResultsFormatError: a missing, invalid or foreign file, or an empty folder.
    """
    _check_disturbed_factor(disturbed_factor)
    path = Path(path)
    if not path.is_dir():
        return load_run(path)
    # Both places: a folder of loose runs that is also a --out folder has runs in each.
    files = sorted(path.glob("*.json")) + sorted(OutputLayout(path).runs_dir.glob("*.json"))
    if not files:
        raise ResultsFormatError(
            f"folder {str(path)!r} holds no run JSON files (*.json or runs/*.json); "
            "pass a run file or the --out folder of `jitbench run`."
        )
    runs = [load_run(f) for f in files]  # a comparison left among them is named as one
    runs, copies = _distinct(runs, files)
    merged = merge_runs(runs, disturbed_factor=disturbed_factor)
    if not copies:
        return merged
    pooled = dict(merged.config.pooled or {"runs": [merged.run_id], "excluded": []})
    pooled["copies"] = copies
    return replace(merged, config=replace(merged.config, pooled=pooled))


def _distinct(runs: Sequence[Run], files: Sequence[Path]) -> tuple[list[Run], list[dict[str, Any]]]:
    """`runs` with each run once, and the runs given in several files (a copy, an
    artifact uploaded twice, `jitbench report --out` of a folder's loose run into its
    `runs/`) with their files: pooled as often as given, one run's samples would count
    as several runs' evidence (five copies turned 3 regressions into 9).

    Raises:
        ResultsFormatError: two files hold runs of one id that differ (a run and its
            resumed, longer self?): which one the side means is not for the gate to guess.
    """
    first: dict[str, tuple[Run, Path]] = {}
    files_of: dict[str, list[str]] = {}
    for run, f in zip(runs, files, strict=True):
        if run.run_id in first:
            kept, kept_file = first[run.run_id]
            if run != kept:
                raise ResultsFormatError(
                    f"{str(kept_file)!r} and {str(f)!r} hold different runs of one id "
                    f"({run.run_id}); keep the one the side means and move the other out."
                )
        else:
            first[run.run_id] = (run, f)
        files_of.setdefault(run.run_id, []).append(str(f))
    copies = [
        {"run_id": run_id, "files": names} for run_id, names in files_of.items() if len(names) > 1
    ]
    return [run for run, _ in first.values()], copies
