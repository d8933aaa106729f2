"""Do jitbench's 95 % speedup intervals hold from one run to the next? (A/A runs)

Runs `jitbench run` RUNS times in fresh processes (same code, same options, one after the
other) and judges every ordered pair of runs (A, B), case by case, for eager and jit:

- coverage: A's 95 % speedup interval contains B's speedup estimate. An honest interval
  does so about 95 % of the time; the target is >= 90 %.
- width: the interval's half-width as a factor, sqrt(high / low) (x/÷ 1.10 means ±10 %).
- reproducibility: the two runs' speedups agree within 10 % (|log ratio| <= log 1.1).

Also prints each run's wall time. With `--hog`, two busy loops keep two cores busy for
the whole measurement (noisy neighbours; `--hog N` starts N): jitbench
pins the measured code to one core, so a single loop mostly lands on the other core and
barely moves the figures. `--judge DIR` re-judges runs already on disk.

`--alternate CHECKOUT` runs another version of jitbench (a `git worktree` of an earlier
commit, say) after each run of this one, into OUT/alternate: the two versions' figures
then come from the same minutes of a machine whose speed drifts 15-50 % between
processes, and their difference is the versions', not the hour's. It then prints the
two side by side, run pair by run pair: in how many pairs this version's median interval
was the wider, and in how many cases its speedups moved more from run to run (`--judge
DIR` prints the same where DIR/alternate holds the other version's runs).

    python tools/aa_coverage.py --runs 10 --out /tmp/aa            # quiet machine
    python tools/aa_coverage.py --runs 10 --out /tmp/aa-hog --hog  # two busy loops
    python tools/aa_coverage.py --judge /tmp/aa
    git worktree add /tmp/before HEAD~1
    python tools/aa_coverage.py --runs 6 --out /tmp/aa-ab --alternate /tmp/before
    python tools/aa_coverage.py --device-priors reports/examples/runs/*.json

`--device-priors RUN.json ...` prints, for runs already on disk, what each device's
intervals are shrunk toward: per JAX mode and device, the run's typical between-process
sd (of the log speedup over NumPy) and the median width of its speedup intervals.

Extra arguments after `--` go to `jitbench run` (e.g. `-- -s S --budget 0.3`).
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from jitbench.results.analysis import analyse
from jitbench.results.analysis.estimates import process_log_ratios

REPO = Path(__file__).resolve().parents[1]
JAX_MODES = ("eager", "jit")


def _run(out: Path, extra: list[str], checkout: Path = REPO) -> float:
    """One `jitbench run` of the jitbench in `checkout` into `out`; returns its wall time
    in seconds."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "jitbench", "run", "--out", str(out), *extra],
        env=env,
        cwd=checkout,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        sys.exit(f"jitbench run failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return wall


def _load(folder: Path):  # type: ignore[no-untyped-def]
    from jitbench import load_run

    runs = []
    for sub in sorted(p for p in folder.iterdir() if p.is_dir() and p.name.startswith("run")):
        files = sorted((sub / "runs").glob("*.json"))
        if files:
            runs.append(load_run(files[-1]))
    return runs


def judge(
    runs: list,  # type: ignore[type-arg]
    modes: tuple[str, ...] = JAX_MODES,
    device: str | None = None,
) -> dict[str, float]:
    """Coverage, median width and reproducibility of the speedups of `modes` over NumPy,
    over every ordered pair of runs; the width of the cases on `device` alone if given."""

    covered = total = agree = pairs = 0
    widths: list[float] = []
    for run in runs:
        for case in run.cases():
            if device is not None and case.device != device:
                continue
            for mode in modes:
                r = analyse(run).speedup(case, mode)
                if r is not None and r.low and r.high:
                    widths.append(math.sqrt(r.high / r.low))
    for a, b in itertools.permutations(runs, 2):
        for case in a.cases():
            for mode in modes:
                ra, rb = analyse(a).speedup(case, mode), analyse(b).speedup(case, mode)
                if ra is None or rb is None or ra.low is None or ra.high is None:
                    continue
                total += 1
                covered += ra.low <= rb.value <= ra.high
    for a, b in itertools.combinations(runs, 2):
        for case in a.cases():
            for mode in modes:
                ra, rb = analyse(a).speedup(case, mode), analyse(b).speedup(case, mode)
                if ra is None or rb is None:
                    continue
                pairs += 1
                agree += abs(math.log(ra.value / rb.value)) <= math.log(1.1)
    return {
        "coverage": covered / total if total else math.nan,
        "covered": covered,
        "intervals": total,
        "median_width": statistics.median(widths) if widths else math.nan,
        "reproduced": agree / pairs if pairs else math.nan,
        "agree": agree,
        "pairs": pairs,
    }


def _speedups(runs: list, mode: str) -> dict[object, tuple[object, list[float]]]:  # type: ignore[type-arg]
    """Per case of the first run (by key): the case and its `mode` speedup in each run
    that has one."""

    return {
        case.key: (
            case,
            [r.value for run in runs if (r := analyse(run).speedup(case, mode)) is not None],
        )
        for case in runs[0].cases()
    }


def _case_sds(runs: list, mode: str) -> dict[object, float]:  # type: ignore[type-arg]
    """Each case's run-to-run sd of the log of its `mode` speedup (two runs or more)."""
    return {
        key: statistics.stdev(math.log(v) for v in values)
        for key, (_case, values) in _speedups(runs, mode).items()
        if len(values) >= 2
    }


def spread(runs: list, top: int = 5) -> tuple[float, list[tuple[float, str]]]:  # type: ignore[type-arg]
    """The median, over cases and JAX modes, of the speedup's run-to-run sd (of its log),
    and the `top` cases that move most: where an interval from one process goes wrong."""
    rows: list[tuple[float, str]] = []
    for mode in JAX_MODES:
        speedups, sds = _speedups(runs, mode), _case_sds(runs, mode)
        for key, sd in sds.items():
            case, values = speedups[key]
            label = f"{case.label} {mode} (median {statistics.median(values):.2f}x)"  # type: ignore[attr-defined]
            rows.append((sd, label))
    rows.sort(reverse=True)
    return (statistics.median(sd for sd, _ in rows) if rows else math.nan), rows[:top]


def _process_parts(runs: list) -> Iterator[tuple[tuple[str, str, str, str], str, list[float]]]:  # type: ignore[type-arg]
    """(case key, JAX mode, each process's paired log speedup) for every case of every run
    measured in two or more processes (`--processes`)."""
    from jitbench import Mode

    for run in runs:
        for case in run.cases():
            base = run.get(case.key, Mode.NUMPY)
            for mode in JAX_MODES:
                other = run.get(case.key, Mode(mode))
                if base is None or other is None or not (base.ok and other.ok):
                    continue
                logs = process_log_ratios(base, other)
                if logs is not None:
                    yield case.key, mode, logs


def prior_df(runs: list) -> tuple[float, float] | None:  # type: ignore[type-arg]
    """How far one case's between-process variance tells another's, as the degrees of
    freedom of a scaled inverse chi-square prior (what `PROCESS_PRIOR_DF` claims), from
    runs of `--processes K >= 2`: each case's variance pooled over the runs; the spread of
    their logs around their mode and device's centre (jitbench shrinks each mode on each
    device toward its own typical variance) beyond what sampling alone gives
    (trigamma(df/2)) is the spread of the true variances, trigamma(d0/2). Returns (d0,
    the pooled df per case); None without process parts, or when the variances spread no
    more than sampling explains (d0 is then unbounded: one variance fits every case).
    Fitted on the runs it is given: judge the prior it suggests on other runs."""
    from scipy.optimize import brentq
    from scipy.special import polygamma

    logs_by_case: dict[tuple[tuple[str, str, str, str], str], list[list[float]]] = {}
    for key, mode, logs in _process_parts(runs):
        logs_by_case.setdefault((key, mode), []).append(logs)
    # by mode and device: each has its own prior (`RunAnalysis.ratio_prior`)
    log_variances: dict[tuple[str, str], list[float]] = {}
    dfs = []
    for (key, mode), parts in logs_by_case.items():
        df = sum(len(p) - 1 for p in parts)
        ss = sum(sum((x - statistics.fmean(p)) ** 2 for x in p) for p in parts)
        if df > 0 and ss > 0:
            log_variances.setdefault((mode, key[2]), []).append(math.log(ss / df))
            dfs.append(df)
    groups = [v for v in log_variances.values() if len(v) >= 2]
    if sum(len(v) for v in groups) - len(groups) < 2:
        return None
    # Var(log s^2) = trigamma(d0 / 2) + trigamma(df / 2), the second averaged over cases;
    # the first is the spread around each group's own centre (pooled within groups).
    sampling = statistics.fmean(float(polygamma(1, df / 2)) for df in dfs)
    within = sum(sum((x - statistics.fmean(v)) ** 2 for x in v) for v in groups)
    excess = within / (sum(len(v) for v in groups) - len(groups)) - sampling
    case_df = statistics.median(dfs)
    try:
        return 2 * brentq(lambda h: float(polygamma(1, h)) - excess, 1e-3, 1e4), case_df
    except ValueError:  # no excess, or too little to tell from none: no spread between cases
        return None


def _print(runs: list, walls: list[float]) -> None:  # type: ignore[type-arg]
    """The figures for jit, eager and both (the width target is the jit speedup's)."""
    print(f"{'speedup over NumPy':<20}{'coverage':<22}{'median width':<15}within 10 %")
    for label, modes in (("jit", ("jit",)), ("eager", ("eager",)), ("jit and eager", JAX_MODES)):
        f = judge(runs, modes)
        coverage = f"{f['covered']}/{f['intervals']} = {f['coverage']:.1%}"
        width = f"x/÷ {f['median_width']:.3f}"
        print(
            f"{label:<20}{coverage:<22}{width:<15}{f['agree']}/{f['pairs']} = {f['reproduced']:.1%}"
        )
    print(f"{'target':<20}{'>= 90 %':<22}{'<= 1.10 (jit)':<15}>= 90 %")
    if walls:
        print(
            "wall time per run: "
            + ", ".join(f"{w:.1f}" for w in walls)
            + f" s (median {statistics.median(walls):.1f} s)"
        )


def main() -> int:
    argv = sys.argv[1:]
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs in a row (>= 2)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/jitbench_aa"))
    parser.add_argument(
        "--hog",
        type=int,
        nargs="?",
        const=2,
        default=0,
        metavar="N",
        help="keep N busy loops running meanwhile (2 without N)",
    )
    parser.add_argument("--judge", type=Path, help="only judge the runs under this folder")
    parser.add_argument(
        "--alternate",
        type=Path,
        help="another jitbench checkout, run after each run of this one (into OUT/alternate)",
    )
    parser.add_argument(
        "--device-priors",
        type=Path,
        nargs="+",
        metavar="RUN",
        help="only print each device's between-process prior and interval width of these runs",
    )
    args = parser.parse_args(argv)
    if args.device_priors:
        _print_device_priors(args.device_priors)
        return 0
    if args.alternate and not (args.alternate / "jitbench" / "__init__.py").is_file():
        parser.error(f"--alternate {args.alternate}: no jitbench/ package there")
    if args.judge:
        runs = _load(args.judge)
        print(f"{len(runs)} runs under {args.judge}")
        _print(runs, [])
        _print_spread(runs)
        if (args.judge / "alternate").is_dir():
            _print_alternate(runs, args.judge / "alternate", [])
        return 0
    if args.runs < 2:
        parser.error("--runs must be at least 2")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.hog < 0:
        parser.error("--hog takes a count of busy loops, 0 or more")
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.hog)]
    walls: list[float] = []
    other_walls: list[float] = []
    try:
        for i in range(args.runs):
            walls.append(_run(args.out / f"run{i:02d}", extra))
            line = f"run {i + 1}/{args.runs}: {walls[-1]:.1f} s"
            if args.alternate:
                folder = args.out / "alternate" / f"run{i:02d}"
                other_walls.append(_run(folder, extra, args.alternate))
                line += f", alternate {other_walls[-1]:.1f} s"
            load = (
                Path("/proc/loadavg").read_text().split()[0]
                if Path("/proc/loadavg").exists()
                else "?"
            )
            print(f"{line}, load {load}", flush=True)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    runs = _load(args.out)
    _print(runs, walls)
    _print_spread(runs)
    if args.alternate:
        _print_alternate(runs, args.out / "alternate", other_walls)
    return 0


def _print_alternate(runs: list, folder: Path, walls: list[float]) -> None:  # type: ignore[type-arg]
    """The alternate version's figures (its runs under `folder`), then both versions run
    pair by run pair."""
    others = _load(folder)
    print(f"\nalternate: {len(others)} runs under {folder}")
    _print(others, walls)
    _print_spread(others)
    _print_paired(runs, others)


def _print_device_priors(paths: list[Path]) -> None:
    """Per run file, JAX mode and device: the run's typical between-process sd of the log
    speedup (`RunAnalysis.ratio_prior`, what each case's interval is shrunk toward)
    and the median width of the speedup intervals, x/÷."""
    from jitbench import Mode, load_run

    for path in paths:
        run = load_run(path)
        print(f"{path.name}: {run.processes} processes")
        devices = list(dict.fromkeys(case.device for case in run.cases()))
        for mode, device in itertools.product(JAX_MODES, devices):
            variance = analyse(run).ratio_prior(Mode.NUMPY, Mode(mode), device)
            median_width = judge([run], (mode,), device)["median_width"]
            sd = "-" if variance is None else f"{math.sqrt(variance):.3f}"
            width = "-" if math.isnan(median_width) else f"x/÷ {median_width:.3f}"
            print(f"  {mode:<6}{device:<8}between-process sd {sd:<7}median width {width}")


def across(runs: list, others: list, mode: str) -> tuple[float, int, float, float, int]:  # type: ignore[type-arg]
    """Whether two versions measure the same speedups: the share of this version's `mode`
    intervals that contain the alternate's estimate of the same case (every run of one
    against every run of the other), its count, and the mean log ratio of this version's
    speedup to the alternate's over each case's runs (± its standard error over cases,
    the case count): a version that shifts the figures shows a mean off 0 by more than a
    few standard errors, and a coverage under the A/A coverage of either."""
    covered = total = 0
    shifts: list[float] = []
    for case in runs[0].cases():
        mine = [r for run in runs if (r := analyse(run).speedup(case, mode)) is not None]
        theirs = [r for run in others if (r := analyse(run).speedup(case, mode)) is not None]
        if not mine or not theirs:
            continue
        for a, b in itertools.product(mine, theirs):
            if a.low is not None and a.high is not None:
                total += 1
                covered += a.low <= b.value <= a.high
        shifts.append(
            statistics.fmean(math.log(r.value) for r in mine)
            - statistics.fmean(math.log(r.value) for r in theirs)
        )
    se = statistics.stdev(shifts) / math.sqrt(len(shifts)) if len(shifts) >= 2 else math.nan
    mean = statistics.fmean(shifts) if shifts else math.nan
    return (covered / total if total else math.nan), total, mean, se, len(shifts)


def time_shift(runs: list, others: list) -> dict[str, tuple[float, float, int]]:  # type: ignore[type-arg]
    """Run i of this version against run i of the alternate (the same minutes), per case:
    the mean log ratio of the shown times of each mode, and of the cold first calls of
    eager and jit (`compile.first_call_s`), ± its standard error, and the count. A version
    that slows what it measures shows it here, where the speedups (paired) would not."""
    from jitbench import Mode

    logs: dict[str, list[float]] = {}
    for a, b in zip(runs, others, strict=False):
        fa, fb = analyse(a), analyse(b)
        for case in a.cases():
            ca, cb = fa.case(case.key), fb.case(case.key)
            if ca is None or cb is None:
                continue
            for mode, x in ca.figures.items():
                y = cb.figures.get(mode)
                if x.ok and y is not None and y.ok and x.time and y.time:
                    logs.setdefault(f"{mode.value} time", []).append(
                        math.log(x.time.value / y.time.value)
                    )
            for mode in (Mode.EAGER, Mode.JIT):
                ma, mb = a.get(case.key, mode), b.get(case.key, mode)
                if ma is None or mb is None or ma.compile is None or mb.compile is None:
                    continue
                if ma.compile.first_call_s and mb.compile.first_call_s:
                    logs.setdefault(f"{mode.value} cold first call", []).append(
                        math.log(ma.compile.first_call_s / mb.compile.first_call_s)
                    )
    return {
        name: (statistics.fmean(v), statistics.stdev(v) / math.sqrt(len(v)), len(v))
        for name, v in logs.items()
        if len(v) >= 2
    }


def _print_paired(runs: list, others: list) -> None:  # type: ignore[type-arg]
    """This version against the alternate, run pair by run pair (run i of each ran in the
    same minutes): how often its median interval was the wider, and, per case, whether
    its speedups moved more from run to run; then whether the two measure the same
    speedups (`across`)."""
    print("\nthis version vs the alternate, paired:")
    for mode in JAX_MODES:
        coverage, total, mean, se, cases = across(runs, others, mode)
        print(
            f"{mode}: this version's intervals hold the alternate's speedups "
            f"{coverage:.1%} of {total}; its speedups vs the alternate's "
            f"{math.expm1(mean):+.1%} ± {se:.1%} (mean log ratio ± se, {cases} cases)"
        )
        pairs = [
            (judge([a], (mode,))["median_width"], judge([b], (mode,))["median_width"])
            for a, b in zip(runs, others, strict=True)
        ]
        wider = sum(a > b for a, b in pairs)
        shown = ", ".join(f"{a:.3f}/{b:.3f}" for a, b in pairs)
        print(f"{mode}: median width wider in {wider} of {len(pairs)} run pairs ({shown})")
        mine, theirs = _case_sds(runs, mode), _case_sds(others, mode)
        common = [k for k in mine if k in theirs and theirs[k] > 0]
        if common:
            larger = sum(mine[k] > theirs[k] for k in common)
            ratio = statistics.median(mine[k] / theirs[k] for k in common)
            print(
                f"{mode}: run-to-run sd of log speedup larger in {larger} of {len(common)} "
                f"cases (median ratio {ratio:.2f})"
            )
    for name, (mean, se, count) in sorted(time_shift(runs, others).items()):
        print(
            f"{name}s vs the alternate's, run by run: {math.expm1(mean):+.1%} ± {se:.1%} "
            f"(mean log ratio ± se, {count} cases × runs)"
        )


def process_bias(runs: list) -> dict[str, tuple[float, float, int]]:  # type: ignore[type-arg]
    """Per JAX mode, how far each later part's paired speedup sits from the first part's of
    the same run (mean log difference, its standard error, the count). The first part is
    the process that led each group (the first process, or the second where the two took
    turns beside each other); the others load the programs it compiled, and must not run
    them faster or slower for it."""
    diffs: dict[str, list[float]] = {mode: [] for mode in JAX_MODES}
    for _key, mode, logs in _process_parts(runs):
        diffs[mode] += [later - logs[0] for later in logs[1:]]
    return {
        mode: (statistics.fmean(d), statistics.stdev(d) / math.sqrt(len(d)), len(d))
        for mode, d in diffs.items()
        if len(d) >= 2
    }


def process_disagreement(runs: list) -> dict[str, tuple[float, float, float]]:  # type: ignore[type-arg]
    """Per JAX mode, where two processes' disagreement comes from, over runs of two
    processes: d is a case's second-process paired log speedup minus its first's. Returns
    the sd over runs of a run's mean d (a shift of a whole process), the sd of the cases'
    d around their run's mean, and the median of d² over the sum of the two processes'
    squared standard errors (1.2533 sd / √n of each one's per-round log ratios): about
    0.45, chi-square's median on 1 df, where the processes differ by their sampling alone."""
    from jitbench import Mode

    shifts: dict[str, list[float]] = {mode: [] for mode in JAX_MODES}
    around: dict[str, list[float]] = {mode: [] for mode in JAX_MODES}
    scaled: dict[str, list[float]] = {mode: [] for mode in JAX_MODES}
    for run in runs:
        per_run: dict[str, list[float]] = {mode: [] for mode in JAX_MODES}
        for key, mode, logs in _process_parts([run]):
            base, other = run.get(key, Mode.NUMPY), run.get(key, Mode(mode))
            parts = list(zip(base.run_parts, other.run_parts, strict=True))
            if len(logs) != 2 or min(len(a) for a, _ in parts) < 3:
                continue
            d = logs[1] - logs[0]
            per_run[mode].append(d)
            variance = sum(_median_se(a, b) ** 2 for a, b in parts)
            if variance > 0:
                scaled[mode].append(d * d / variance)
        for mode, ds in per_run.items():
            if len(ds) >= 2:
                shifts[mode].append(statistics.fmean(ds))
                around[mode] += [d - shifts[mode][-1] for d in ds]
    return {
        mode: (
            statistics.stdev(shifts[mode]),
            statistics.stdev(around[mode]),
            statistics.median(scaled[mode]),
        )
        for mode in JAX_MODES
        if len(shifts[mode]) >= 2 and scaled[mode]
    }


def _median_se(base: list[float], other: list[float]) -> float:
    """The standard error of the median of the per-round log ratios of one process."""
    logs = [math.log(a / b) for a, b in zip(base, other, strict=True)]
    return 1.2533 * statistics.stdev(logs) / math.sqrt(len(logs))


def _print_spread(runs: list) -> None:  # type: ignore[type-arg]
    from jitbench.results.analysis import PROCESS_PRIOR_DF

    if (estimate := prior_df(runs)) is not None:
        d0, df = estimate
        print(
            f"the cases' between-process variances are worth a prior of {d0:.1f} df "
            f"(from {df:g} df per case; jitbench assumes {PROCESS_PRIOR_DF:g})"
        )
    for mode, (mean, se, n) in process_bias(runs).items():
        print(
            f"{mode}: later processes' speedups vs the leaders' (part 0): {math.expm1(mean):+.1%} "
            f"± {se:.1%} (mean log difference ± se, {n} pairs)"
        )
    for mode, (shift, cases, ratio) in process_disagreement(runs).items():
        print(
            f"{mode}: two processes' disagreement: sd of a whole process's shift {shift:.3f}, "
            f"of the cases around it {cases:.3f}; squared difference over sampling's, "
            f"median {ratio:.2f} (0.45 from sampling alone)"
        )
    median_sd, worst = spread(runs)
    print(f"run-to-run sd of log speedup: median {median_sd:.3f}; largest:")
    for sd, label in worst:
        print(f"  {sd:.3f}  {label}")
    _print_machine(runs)


def _print_machine(runs: list) -> None:  # type: ignore[type-arg]
    """Per run: how far its processes measured the same code apart (what the banner calls
    unstable) beside its noise probes, which see only a few milliseconds."""
    from jitbench import formatting as fmt
    from jitbench.results.analysis import machine

    print("per run: processes apart, times · speedups (median); noise probe before · after")
    for run in runs:
        spread = analyse(run).process_spread
        floors = [
            fmt.percent(s.noise_floor) if s is not None and s.noise_floor is not None else "—"
            for s in (
                machine.from_environment(run.environment, key)
                for key in ("machine_before", "machine_after")
            )
        ]
        apart = (
            "—"
            if spread is None
            else f"{machine.apart_percent(spread.times)} · "
            + ("—" if spread.speedups is None else machine.apart_percent(spread.speedups))
        )
        unstable = "  unstable" if machine.unstable(spread) else ""
        print(f"  {run.run_id}  {apart:<16} ±{' · ±'.join(floors)}{unstable}")


if __name__ == "__main__":
    raise SystemExit(main())
