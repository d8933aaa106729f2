"""Judge the runs a `tools/gate_check.py --pool K` left on disk again, side by side:
each side pooled (what gate_check reported), its first 2…K-1 runs pooled, and each run on
its own (one run per side), so one measurement session answers all these questions. It
also prints, per side of two or more runs, each run's level across the suite and the
per-case run-to-run spread left after those levels (robust sd of log medians): the noise
the run-level test models.

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

from jitbench.gate import Comparison, Verdict, compare, merge_runs, run_levels  # noqa: E402
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path, help="gate_check's --out folder")
    ap.add_argument("--inject", default="jacobi2d", help="the slowed workload")
    args = ap.parse_args()
    totals: dict[str, list[int]] = {}
    for rdir in sorted(args.out.glob("round*/"), key=lambda p: int(p.name[5:])):
        sides = {
            name: [load_run(f) for f in sorted((rdir / name / "runs").glob("*.json"))]
            for name in ("a", "b", "slow")
        }
        print(
            f"{rdir.name} run-to-run: "
            + "; ".join(f"{name} {run_to_run(runs)}" for name, runs in sides.items())
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
