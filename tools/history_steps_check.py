"""Does the history's change-point test find real steps and no false ones? Built from real
A/A runs.

From a pool of A/A runs of one suite (folders holding `runs/*.json`, or run files; each
run measured in two or more worker processes, `jitbench run --processes 2`, the default),
builds TRIALS histories of LENGTH runs and judges every eager and jit speedup series as
the history page and `jitbench history` do (`report.history.history_series`, whose steps
come from `results.analysis.changes`):

- A/A: the histories as built; any step found is a false one.
- stepped: the same histories with every case's jit samples multiplied by STEP in the runs
  after run AFTER (as a commit that slows every jit call by that much would); a series'
  step is found when the test puts one at run AFTER + 1 (one run either side counts as a
  run off, reported apart). Reported for one jit series per history (--case, else one
  drawn at random) and for all of them.

How a history of 12 is built from a pool of 10 runs, honestly: a history run is made of
the samples of two processes of two *different* pool runs (process 1 of run a, process 2
of run b, a ≠ b; each case × mode's samples exactly as measured, `run_sample_counts`
marking the two processes), and a history's runs are distinct (a, b) pairs drawn at
random. So no two history runs are the same samples, and every figure comes from real
samples; but a pool run's process can appear in two history runs (with different
partners), and a history run's two processes come from two different times, which widens
its own interval a little (the machine changed between them) and evens out the run-to-run
scatter a little. `--no-mix` checks the same on histories of whole pool runs instead
(without replacement: LENGTH at most the pool's size).

    python tools/history_steps_check.py /tmp/aa-quiet --length 12 --after 6 --step 1.15
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from jitbench.config import Mode
from jitbench.report.history import Series, history_runs, history_series
from jitbench.results import OutputLayout, Run, load_run, save_run
from jitbench.results.analysis.changes import MIN_CHANGE, find_steps


def run_files(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for path in paths:
        out += sorted(path.rglob("runs/*.json")) if path.is_dir() else [path]
    return out


def mixed(a: Run, b: Run, name: str) -> Run:
    """A run of `a`'s first process and `b`'s second, case × mode by case × mode."""
    theirs = {(m.case.key, m.mode): m for m in b.measurements}
    out = []
    for m in a.measurements:
        other = theirs.get((m.case.key, m.mode))
        if not (m.ok and other is not None and other.ok):
            continue
        if len(m.part_counts) < 2 or len(other.part_counts) < 2:
            continue
        first, second = m.run_parts[0], other.run_parts[1]
        out.append(
            replace(m, samples_s=first + second, run_sample_counts=(len(first), len(second)))
        )
    return replace(a, run_id=name, measurements=tuple(out))


def slowed(run: Run, factor: float) -> Run:
    """`run` with every jit sample `factor` times longer."""
    ms = tuple(
        replace(m, samples_s=tuple(x * factor for x in m.samples_s)) if m.mode is Mode.JIT else m
        for m in run.measurements
    )
    return replace(run, measurements=ms)


def histories(pool: Sequence[Run], length: int, mix: bool, rng: random.Random) -> list[Run]:
    if not mix:
        return [replace(r, run_id=f"h{i:02d}") for i, r in enumerate(rng.sample(pool, length))]
    pairs = [(a, b) for a in range(len(pool)) for b in range(len(pool)) if a != b]
    chosen = rng.sample(pairs, length)
    return [mixed(pool[a], pool[b], f"h{i:02d}") for i, (a, b) in enumerate(chosen)]


def series_of(runs: Sequence[Run]) -> list[Series]:
    """The history's series that every run has (the oldest-first order is the list's:
    the runs are given start times in that order)."""
    dated = [replace(r, started_at=f"2026-01-01T00:{i:02d}:00+00:00") for i, r in enumerate(runs)]
    return [s for s in history_series(history_runs(dated)) if len(s.points) == len(runs)]


def pelt_steps(values: Sequence[float], c: float) -> list[int]:
    """ruptures' PELT on the log figures (see --ruptures)."""
    import numpy as np
    import ruptures  # type: ignore[import-not-found]

    logs = np.log(np.asarray(values, dtype=float))
    sigma = float(np.median(np.abs(np.diff(logs)))) / (0.6745 * math.sqrt(2)) or 1e-12
    bkps = (
        ruptures.Pelt(model="l2", min_size=3, jump=1)
        .fit(logs)
        .predict(pen=c * sigma**2 * math.log(len(logs)))
    )
    out: list[int] = []
    if len(bkps) < 2:
        return out
    for prev, at, nxt in zip([0, *bkps[:-2]], bkps[:-1], bkps[1:], strict=True):
        before, after = logs[prev:at].mean(), logs[at:nxt].mean()
        if abs(math.expm1(after - before)) >= MIN_CHANGE:
            out.append(at)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--length", type=int, default=12)
    parser.add_argument("--after", type=int, default=6)
    parser.add_argument("--step", type=float, default=1.15)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-mix", dest="mix", action="store_false")
    parser.add_argument(
        "--ruptures",
        metavar="C",
        type=float,
        help="judge with ruptures' PELT instead (l2 cost on the log figures, min_size 3, "
        "jump 1, penalty C × sigma² × ln n, sigma from the median absolute first difference, steps "
        "under 5 %% dropped), to compare; needs `pip install ruptures` (not a dependency)",
    )
    parser.add_argument(
        "--scatter-only",
        action="store_true",
        help="judge with the runs' scatter alone (the t-test without the runs' intervals), "
        "to compare",
    )
    parser.add_argument(
        "--case",
        metavar="'WORKLOAD SIZE'",
        help="the jit series whose step each history must find, e.g. 'selu S' "
        "(default: one drawn at random per history)",
    )
    parser.add_argument(
        "--write",
        metavar="DIR",
        type=Path,
        help="write the last stepped history's runs to DIR/runs/ (commits c01 … c12), for "
        "`jitbench history DIR` and the history page",
    )
    parser.add_argument("--verbose", "-v", action="store_true", help="name each miss")
    args = parser.parse_args()
    pool = [load_run(p) for p in run_files(args.paths)]
    if len(pool) < 2 or (not args.mix and len(pool) < args.length):
        sys.exit(f"{len(pool)} runs in the pool: too few for histories of {args.length}")
    rng = random.Random(args.seed)

    def steps_at(s: Series) -> list[int]:
        if args.ruptures is not None:
            return pelt_steps([p.value for p in s.points], args.ruptures)
        if args.scatter_only:
            return [st.at for st in find_steps([p.value for p in s.points])]
        return [st.step.at for st in s.steps]

    false_histories = false_series = n_series = 0
    chosen_found = found = off_by_one = jit_series = 0
    for _ in range(args.trials):
        history = histories(pool, args.length, args.mix, rng)
        series = series_of(history)
        n_series += len(series)
        false = sum(bool(steps_at(s)) for s in series)
        if args.verbose:
            for s in series:
                if steps_at(s):
                    print("  false:", *s.key[:2], s.mode.value, steps_at(s))
        false_series += false
        false_histories += false > 0
        stepped_runs = [
            r if i < args.after else slowed(r, args.step) for i, r in enumerate(history)
        ]
        jit = [s for s in series_of(stepped_runs) if s.mode is Mode.JIT]
        hits = [args.after in steps_at(s) for s in jit]
        if args.verbose:
            for hit, s in zip(hits, jit, strict=True):
                if not hit:
                    print("  missed:", *s.key[:2], steps_at(s))
        jit_series += len(jit)
        found += sum(hits)
        off_by_one += sum(
            not hit and any(abs(a - args.after) == 1 for a in steps_at(s))
            for hit, s in zip(hits, jit, strict=True)
        )
        names = [f"{s.workload} {s.size}" for s in jit]
        wanted = args.case or rng.choice(sorted(names))
        chosen_found += wanted in names and hits[names.index(wanted)]
    if args.write is not None:
        layout = OutputLayout(args.write)
        for i, run in enumerate(stepped_runs):
            env = {**run.environment, "git": {"commit": f"c{i + 1:02d}", "dirty": False}}
            when = f"2026-01-01T00:{i:02d}:00+00:00"
            run = replace(run, run_id=f"h{i + 1:02d}", environment=env, started_at=when)
            save_run(run, layout.run_json(run.run_id))
    how = "two processes of two pool runs each" if args.mix else "whole pool runs"
    method = (
        f"ruptures PELT, penalty {args.ruptures:g} sigma² ln n"
        if args.ruptures is not None
        else "scatter only (t-test)"
        if args.scatter_only
        else "runs' intervals + scatter"
    )
    print(
        f"{len(pool)} A/A runs in the pool; {args.trials} histories of {args.length} runs "
        f"({how}); {n_series // args.trials} speedup series each; method: {method}"
    )
    print(
        f"A/A: {false_histories} of {args.trials} histories show a step "
        f"({false_series} of {n_series} series)"
    )
    print(
        f"a ×{args.step:g} slower jit after run {args.after}: found at run {args.after + 1} "
        f"in {chosen_found} of {args.trials} histories "
        f"({args.case + ' jit' if args.case else 'a jit series drawn at random'} in each); "
        f"in {found} of all {jit_series} jit series ({off_by_one} more a run off)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
