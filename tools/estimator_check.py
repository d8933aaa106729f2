"""Which estimator reproduces from run to run? The median, a low quantile or the minimum,
for times and for speedups, compared on A/A runs already on disk.

Reads the runs `tools/aa_coverage.py --out DIR` left (the same `jitbench run`, repeated in
fresh processes) and computes, for every case and mode, each estimator in each run:

- times (seconds per call): the median, the 10th percentile and the minimum of the samples;
- speedups over NumPy: the median of the per-round ratios (what `jitbench run` reports),
  the ratio of the medians, of the 10th percentiles and of the minimums.

It prints, per estimator, the median over cases of the run-to-run standard deviation of its
log (how far one run's figure moves in the next) and the share of run pairs that agree
within 10 %. An estimator is only worth having if it reproduces; BenchmarkTools.jl argues
that on noisy machines the minimum does best for times, because noise only ever adds time.

Last, per mode, how much slower each process's first and second samples are than the
median of its samples from the fourth on (median over measurements): what the warm-up
leaves behind.

    python tools/estimator_check.py /tmp/aa [/tmp/aa-hog ...]
"""

from __future__ import annotations

import argparse
import itertools
import math
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools"))

from aa_coverage import _load as load_runs  # noqa: E402  (aa_coverage's folder layout)

from jitbench import Mode  # noqa: E402


def _quantile(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))]


TIME_ESTIMATORS: dict[str, Callable[[Sequence[float]], float]] = {
    "median": statistics.median,
    "10th percentile": lambda xs: _quantile(xs, 0.10),
    "minimum": min,
}

SPEEDUP_ESTIMATORS: dict[str, Callable[[Sequence[float], Sequence[float]], float]] = {
    "median of per-round ratios": lambda b, m: statistics.median(
        x / y for x, y in zip(b, m, strict=False)
    ),
    "ratio of medians": lambda b, m: statistics.median(b) / statistics.median(m),
    "ratio of 10th percentiles": lambda b, m: _quantile(b, 0.1) / _quantile(m, 0.1),
    "ratio of minimums": lambda b, m: min(b) / min(m),
}


def _samples(run, key, mode: Mode) -> tuple[float, ...] | None:  # type: ignore[no-untyped-def]
    m = run.measurement(key, mode) if hasattr(run, "measurement") else None
    if m is None:
        m = next((x for x in run.measurements if x.case.key == key and x.mode is mode), None)
    return m.samples_s if m is not None and m.ok else None


def reproducibility(values_per_case: list[list[float]]) -> tuple[float, float]:
    """(median over cases of the run-to-run sd of log, share of run pairs within 10 %)."""
    sds, agree, pairs = [], 0, 0
    for values in values_per_case:
        if len(values) < 2:
            continue
        logs = [math.log(v) for v in values]
        sds.append(statistics.stdev(logs))
        for a, b in itertools.combinations(logs, 2):
            pairs += 1
            agree += abs(a - b) <= math.log(1.1)
    return (statistics.median(sds) if sds else math.nan, agree / pairs if pairs else math.nan)


def first_sample_excess(runs: Sequence, mode: Mode, index: int) -> tuple[float, int]:  # type: ignore[type-arg]
    """(median over process parts of sample `index` ÷ the median of samples 3 on, minus 1;
    how many parts) for `mode`, over parts of at least 8 samples."""
    excess = []
    for run in runs:
        for m in run.measurements:
            if m.mode is not mode or not m.ok:
                continue
            start = 0
            for n in m.run_sample_counts or (len(m.samples_s),):
                part = m.samples_s[start : start + n]
                start += n
                if n >= 8:
                    excess.append(part[index] / statistics.median(part[3:]) - 1)
    return (statistics.median(excess) if excess else math.nan, len(excess))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", type=Path, nargs="+", help="aa_coverage.py --out folders")
    args = parser.parse_args()
    for folder in args.folders:
        runs = load_runs(folder)
        if len(runs) < 2:
            sys.exit(f"{folder}: fewer than two runs to compare")
        keys = [c.key for c in runs[0].cases()]
        print(f"{folder}: {len(runs)} runs, {len(keys)} cases")
        print("  times (NumPy, eager, jit)     run-to-run sd of log   pairs within 10 %")
        for name, estimate in TIME_ESTIMATORS.items():
            per_case = [
                [estimate(s) for run in runs if (s := _samples(run, key, mode))]
                for key in keys
                for mode in (Mode.NUMPY, Mode.EAGER, Mode.JIT)
            ]
            sd, share = reproducibility(per_case)
            print(f"  {name:28s}  {sd:8.3f}               {share:6.1%}")
        print("  speedups (eager, jit)")
        for name, ratio in SPEEDUP_ESTIMATORS.items():
            per_case = []
            for key in keys:
                for mode in (Mode.EAGER, Mode.JIT):
                    values = []
                    for run in runs:
                        b, m = _samples(run, key, Mode.NUMPY), _samples(run, key, mode)
                        if b and m:
                            n = min(len(b), len(m))
                            values.append(ratio(b[:n], m[:n]))
                    per_case.append(values)
            sd, share = reproducibility(per_case)
            print(f"  {name:28s}  {sd:8.3f}               {share:6.1%}")
        print("  each process's first samples vs the median of its 4th on (parts of >= 8)")
        for mode in (Mode.NUMPY, Mode.EAGER, Mode.JIT):
            (first, n), (second, _) = (first_sample_excess(runs, mode, i) for i in (0, 1))
            print(f"  {mode.value:8s} first {first:+6.1%}   second {second:+6.1%}   ({n} parts)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
