"""Does the history's change-point test find real steps and no false ones? Built from real
A/A runs.

From a pool of A/A runs of one suite (folders of `tools/aa_coverage.py`, or run files),
draws TRIALS histories of LENGTH runs (without replacement) and judges every eager and
jit speedup series with `results.analysis.changes.find_steps`:

- A/A: the histories as drawn; any step found is a false one.
- stepped: the same histories with one case's jit speedup divided by STEP from run
  AFTER+1 on (as a commit that slows its jit by that much would); found when the test
  puts a step there (one run either side counts as off by one, and is reported apart).

    python tools/history_steps_check.py /tmp/aa-quiet --length 12 --after 6 --step 1.15
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

from jitbench.results import Run, load_run
from jitbench.results.analysis import analyse
from jitbench.results.analysis.changes import find_steps


def run_files(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for path in paths:
        out += sorted(path.rglob("runs/*.json")) if path.is_dir() else [path]
    return out


def speedup_series(runs: list[Run]) -> dict[tuple[object, str], list[float]]:
    """Each (case key, mode)'s speedup in every run of the history that has it in all."""
    series: dict[tuple[object, str], list[float]] = {}
    for run in runs:
        figures = analyse(run)
        for case in figures:
            for mode in ("eager", "jit"):
                r = case.get(mode).speedup if case.get(mode) else None  # type: ignore[union-attr]
                if r is not None:
                    series.setdefault((case.key, mode), []).append(r.value)
    return {k: v for k, v in series.items() if len(v) == len(runs)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--length", type=int, default=12)
    parser.add_argument("--after", type=int, default=6)
    parser.add_argument("--step", type=float, default=1.15)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    pool = [load_run(p) for p in run_files(args.paths)]
    if len(pool) < args.length:
        sys.exit(f"{len(pool)} runs in the pool; a history of {args.length} needs as many")
    rng = random.Random(args.seed)
    false_histories = found = off_by_one = 0
    spread = []
    for _ in range(args.trials):
        history = rng.sample(pool, args.length)
        series = speedup_series(history)
        if any(find_steps(values) for values in series.values()):
            false_histories += 1
        key = rng.choice(sorted(k for k in series if k[1] == "jit"))
        values = series[key]
        spread.append(statistics.stdev(__import__("math").log(v) for v in values))
        stepped = [v if i < args.after else v / args.step for i, v in enumerate(values)]
        at = [s.at for s in find_steps(stepped)]
        found += args.after in at
        off_by_one += args.after not in at and any(abs(a - args.after) == 1 for a in at)
    print(
        f"{len(pool)} A/A runs in the pool; {args.trials} histories of {args.length} runs, "
        f"{len(series)} speedup series each"
    )
    print(f"A/A: {false_histories} of {args.trials} histories show a step (any series)")
    print(
        f"a {args.step:g}x step after run {args.after} in one jit series: found at run "
        f"{args.after + 1} in {found} of {args.trials} ({off_by_one} a run off)"
    )
    print(
        f"run-to-run sd of the chosen series' log speedup: median {statistics.median(spread):.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
