"""Judge the runs a `tools/gate_check.py --pool K` left on disk again, side by side:
each side pooled (what gate_check reported), its first 2…K-1 runs pooled, and each run on
its own (one run per side), so one measurement session answers all these questions. It
also prints, per side of two or more runs, each run's level across the suite and the
per-case run-to-run spread left after those levels (robust sd of log medians): the noise
the run-level test models. For runs of two processes it prints how far the two processes
of one run sit apart against how far the runs' means do (median |log difference|), and for
the pooled comparisons every compile row past the factor and floor with the Mann–Whitney
p-value of its cold compiles (before adjustment). Then each side's run wall times
(started to finished). Last, the calibration of the run-level test on the A/A pairs: how
many of its raw p-values (before the multiple-test adjustment) fall below 0.05 and 0.01,
with each process counted as a run (what the gate does) and with each run's processes
pooled into one; a calibrated test puts 5 % and 1 % there.

Usage (from the repository root):

    python tools/gate_rejudge.py /tmp/jitbench_gate_check [--inject jacobi2d]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dataclasses import replace  # noqa: E402
from datetime import datetime  # noqa: E402
from itertools import combinations  # noqa: E402

from jitbench import stats  # noqa: E402
from jitbench.gate import (  # noqa: E402
    Comparison,
    SignificanceTest,
    Verdict,
    compare,
    merge_runs,
    run_levels,
)
from jitbench.results import Run, load_run  # noqa: E402


def injected(cmp: Comparison, workload: str) -> str:
    return "; ".join(
        f"{e.mode.value} {e.ratio:.2f}x q={e.p_judged:.1g} {e.verdict.value}"
        for e in cmp.entries
        if e.workload == workload and e.ratio is not None and e.p_judged is not None
    )


def run_to_run(runs: list[Run]) -> str:
    """Levels of the runs of one side, and the per-case spread between its first two runs
    once those levels are removed (1.4826 × MAD of the log differences, / sqrt 2)."""
    levels = run_levels(runs) if len(runs) > 1 else None
    if not levels:
        return "-"
    first, second = (
        {(m.case.key, m.mode): m.median_s for m in r.measurements if m.ok and m.median_s}
        for r in runs[:2]
    )
    shift = math.log(levels[0] / levels[1])
    diffs = [math.log(first[k] / second[k]) - shift for k in first.keys() & second.keys()]
    centre = statistics.median(diffs)
    mad = statistics.median(abs(d - centre) for d in diffs)
    return f"levels {', '.join(f'{x:.3f}' for x in levels)}, spread {1.4826 * mad / 2**0.5:.3f}"


def process_spread(runs: list[Run]) -> str:
    """For runs of two processes: the median |log difference| between a run's two
    processes' medians, and between two runs' means of them, over every case × mode. With
    independent processes the second is 1/sqrt 2 of the first; more means the processes
    of one run share a level."""
    within: list[float] = []
    between: list[float] = []
    keys = {(m.case.key, m.mode) for m in runs[0].measurements if m.ok}
    for key in keys:
        pairs = []
        for r in runs:
            m = next((m for m in r.measurements if (m.case.key, m.mode) == key and m.ok), None)
            if m is None or len(m.run_medians_s) != 2:
                break
            pairs.append([math.log(x) for x in m.run_medians_s])
        else:
            within += [abs(a - b) for a, b in pairs]
            means = [(a + b) / 2 for a, b in pairs]
            between += [abs(a - b) for a, b in combinations(means, 2)]
    if not within or not between:
        return "-"
    return (
        f"processes of a run {statistics.median(within):.3f}, "
        f"run means {statistics.median(between):.3f}"
    )


def compile_rows(cmp: Comparison, name: str) -> list[str]:
    """Compile rows past the factor and floor, with Mann–Whitney's raw p on the cold
    compiles of the two sides and the verdict."""
    t = cmp.thresholds
    rows = []
    for e in cmp.entries:
        c = e.compile
        if c is None or e.base is None or e.new is None:
            continue
        if not (c.new_s > c.base_s * t.compile_threshold and c.delta_s > t.compile_floor_s):
            continue
        b = e.base.compile.compile_repeats_s if e.base.compile else ()
        n = e.new.compile.compile_repeats_s if e.new.compile else ()
        p = stats.mann_whitney_p(list(b), list(n)) if b and n else float("nan")
        rows.append(
            f"{name} {e.workload} {e.mode.value} compile {c.base_s * 1e3:.0f} -> "
            f"{c.new_s * 1e3:.0f} ms ({len(b)} vs {len(n)} compiles), Mann-Whitney p "
            f"{p:.3g}, {c.verdict.value}"
        )
    return rows


def wall_times(runs: list[Run]) -> list[float]:
    """Each run's seconds from its start to its finish."""
    iso = datetime.fromisoformat
    return [(iso(r.finished_at) - iso(r.started_at)).total_seconds() for r in runs if r.finished_at]


def processes_pooled(run: Run) -> Run:
    """`run` with each measurement's processes pooled into one: one median per run."""
    return replace(
        run, measurements=tuple(replace(m, run_sample_counts=()) for m in run.measurements)
    )


def run_test_p_values(cmp: Comparison) -> list[float]:
    """The raw p-values of `cmp`'s run-level tests (before the multiple-test adjustment)."""
    return [
        e.p_value for e in cmp.entries if e.test is SignificanceTest.RUNS and e.p_value is not None
    ]


def calibration(label: str, ps: list[float]) -> str:
    if not ps:
        return f"{label}: no run-level tests"
    n = len(ps)
    return (
        f"{label}: {n} tests, p < 0.05 in {sum(p < 0.05 for p in ps) / n:.1%}, p < 0.01 in "
        f"{sum(p < 0.01 for p in ps) / n:.1%}, median p {statistics.median(ps):.2f}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path, help="gate_check's --out folder")
    ap.add_argument("--inject", default="jacobi2d", help="the slowed workload")
    args = ap.parse_args()
    totals: dict[str, list[int]] = {}
    walls: dict[str, list[float]] = {}
    aa_p: dict[str, list[float]] = {"processes": [], "runs": []}
    for rdir in sorted(args.out.glob("round*/"), key=lambda p: int(p.name[5:])):
        sides = {
            name: [load_run(f) for f in sorted((rdir / name / "runs").glob("*.json"))]
            for name in ("a", "b", "slow")
        }
        print(
            f"{rdir.name} run-to-run: "
            + "; ".join(f"{name} {run_to_run(runs)}" for name, runs in sides.items())
        )
        print(
            f"{rdir.name} process spread: "
            + "; ".join(f"{name} {process_spread(runs)}" for name, runs in sides.items())
        )
        for name, runs in sides.items():
            walls.setdefault(name, []).extend(wall_times(runs))
        aa_p["runs"] += run_test_p_values(
            compare(*(merge_runs([processes_pooled(r) for r in sides[n]]) for n in ("a", "b")))
        )
        variants: dict[str, dict[str, Run]] = {
            "pooled": {name: merge_runs(runs) for name, runs in sides.items()}
        }
        fewest = min(len(r) for r in sides.values())
        for k in range(2, fewest):  # what fewer runs per side would have concluded
            variants[f"first {k} runs pooled"] = {
                name: merge_runs(runs[:k]) for name, runs in sides.items()
            }
        for k in range(fewest):
            variants[f"run {k + 1} alone"] = {name: runs[k] for name, runs in sides.items()}
        for label, side in variants.items():
            aa, slow = compare(side["a"], side["b"]), compare(side["a"], side["slow"])
            caught = any(  # a run-time regression row of the slowed workload
                e.workload == args.inject and e.verdict is Verdict.REGRESSION for e in slow.entries
            )
            others = [w for w in slow.regressed_workloads if w != args.inject]
            if label == "pooled":
                aa_p["processes"] += run_test_p_values(aa)
                for row in compile_rows(aa, "A/A") + compile_rows(slow, "slow"):
                    print(f"{rdir.name} {row}")
            t = totals.setdefault(label, [0, 0, 0, 0])
            t[0] += 1
            t[1] += int(not aa.has_regression)
            t[2] += int(caught)
            t[3] += int(not others)
            print(
                f"{rdir.name} {label}: A/A regressed {list(aa.regressed_workloads) or 'none'}; "
                f"slow regressed {list(slow.regressed_workloads) or 'none'} "
                f"({args.inject}: {injected(slow, args.inject)})"
            )
    for label, (n, clean, caught_count, only) in totals.items():
        print(
            f"{label}: A/A clean {clean}/{n}, slowdown caught {caught_count}/{n}, "
            f"no other workload flagged {only}/{n}"
        )
    for name, seconds in walls.items():
        if seconds:
            print(
                f"side {name}: run wall time {statistics.median(seconds):.0f} s "
                f"({min(seconds):.0f}-{max(seconds):.0f}) over {len(seconds)} runs"
            )
    print("A/A calibration of the run-level test, pooled sides, raw p:")
    print("  " + calibration("each process a run (the gate)", aa_p["processes"]))
    print("  " + calibration("each run's processes pooled", aa_p["runs"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
