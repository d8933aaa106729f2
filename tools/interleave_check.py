"""Does sampling jit between NumPy and eager samples change what jit measures? (Or any mode.)

`jitbench run` samples the modes of a case in lockstep rounds (numpy, eager, jit, numpy,
…; or blocks of samples of each mode, `SamplingPlan.block_samples`), so that drift hits
them alike. That must not add a bias of its own: with few cores a NumPy call's BLAS
threads or cache footprint can slow the jit calls that follow. For each case this opens
the case once (jitbench's own protocol: `open_case`, one thread pinned as `jitbench run`
does), then takes groups of jit samples **alone** (jit, jit, jit, …) and groups
**interleaved** as a run takes them (`timer.sample_interleaved` itself: by default
`SamplingPlan.block_samples` samples a mode, each block after a switch re-warmed for
`SamplingPlan.rewarm_s`), alternating
ABBA so drift cancels, in the same process (so process effects cancel too). It prints
the ratio of jit's interleaved median to its alone median, group pair by group pair, and
their median; the target is within 3 %.

One process's ratio moves by several percent on a noisy machine (one process can be
slower interleaved in every group pair), so `--runs N` repeats the
check in N fresh processes and prints each case's mean ratio with its standard error;
with a comma list of `--rewarm-s` values it alternates those schedules run by run, so
that they share the machine's minutes.

    python tools/interleave_check.py                      # softmax, gemm, selu at S and M
    python tools/interleave_check.py -k "softmax" --pairs 16 --samples 20
    python tools/interleave_check.py -k softmax --between eager   # which mode slows jit
    python tools/interleave_check.py --block-samples 5    # blocks of five samples a mode
    python tools/interleave_check.py --no-rewarm          # the first schedule
    python tools/interleave_check.py --runs 5 --rewarm-s 0,0.004   # one call vs 4 ms, 5 each
    python tools/interleave_check.py -k "selu or softmax" --calls-after-switch 5

`--mode numpy` (or `eager`) measures that mode instead, between the other two.

`--calls-after-switch K` times instead each of the first K jit calls after a sample of
every mode in `--between`, one by one (`--repeats` times), against jit calls that follow
jit calls: how many calls the switch costs, i.e. what one re-warm call leaves.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _group(
    calls: dict[Any, Any],
    per_sample: dict[Any, int],
    order: list[Any],
    plan: Any,
    region: Any,
    rewarm: bool,
) -> float:
    """The median of `plan.max_samples` samples of the last mode of `order`, taken by
    `timer.sample_interleaved` as a run takes them: the modes of `order` in turn (blocks
    of `plan.block_samples`), each after a switch re-warmed for `plan.rewarm_s`; `order`
    of one mode is that mode alone."""
    from jitbench.measure.timer import sample_interleaved

    series = sample_interleaved(
        {m: calls[m] for m in order},
        {m: per_sample[m] for m in order},
        plan=plan,
        region=region,
        rewarm=rewarm,
    )
    target = order[-1]
    assert series[target].error is None, f"{target.value} failed while sampled"
    return statistics.median(series[target].samples_s)


def _calls_after_switch(
    session: Any,
    calls: dict[Any, int],
    between: list[Any],
    count: int,
    repeats: int,
    target: Any,
) -> tuple[list[float], float]:
    """Each of the first `count` calls of `target` after a sample of every mode in
    `between`, timed alone, as a ratio to the median call that follows `count` calls of
    its own; and that median in seconds."""
    after: list[list[float]] = [[] for _ in range(count)]
    steady: list[float] = []
    for _ in range(repeats):
        for mode in between:
            session.time_sample(mode, calls[mode])
        for k in range(count):
            after[k].append(session.time_sample(target, 1))
        steady += [session.time_sample(target, 1) for _ in range(count)]
    base = statistics.median(steady)
    return [statistics.median(a) / base for a in after], base


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="softmax or gemm or selu", help="workload expression")
    parser.add_argument("--sizes", default="S,M")
    parser.add_argument("--pairs", type=int, default=12, help="ABBA group pairs per case")
    parser.add_argument("--samples", type=int, default=15, help="samples per group")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--mode",
        default="jit",
        choices=("numpy", "eager", "jit"),
        help="the mode measured alone and interleaved (default: jit)",
    )
    parser.add_argument(
        "--between",
        default=None,
        help="modes sampled before each block of --mode (default: the other two)",
    )
    parser.add_argument(
        "--no-rewarm", action="store_true", help="no untimed call after a switch of mode"
    )
    parser.add_argument(
        "--rewarm-s",
        default=None,
        help="re-warm calls after a switch last at least this long, in seconds (default: "
        "SamplingPlan's); with --runs, a comma list of schedules to alternate, e.g. 0,0.004",
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=1,
        help="fresh processes per schedule, alternating; prints each case's mean ratio",
    )
    parser.add_argument("--ratios-json", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--block-samples",
        type=int,
        default=None,
        help="samples of a mode in a row (default: jitbench run's, SamplingPlan's)",
    )
    parser.add_argument(
        "--calls-after-switch",
        type=int,
        default=0,
        metavar="K",
        help="time each of the first K jit calls after a switch instead",
    )
    parser.add_argument("--repeats", type=int, default=120, help="with --calls-after-switch")
    args = parser.parse_args()
    for name in ("pairs", "samples", "repeats"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if args.block_samples is not None and args.block_samples < 1:
        parser.error("--block-samples must be at least 1")
    if args.calls_after_switch < 0:
        parser.error("--calls-after-switch must be 0 (off) or more")
    from jitbench import SamplingPlan

    try:
        given = [float(x) for x in (args.rewarm_s or "").split(",") if x]
    except ValueError:
        parser.error(f"--rewarm-s takes seconds, e.g. 0.004 or 0,0.004; got {args.rewarm_s!r}")
    schedules = given or [SamplingPlan().rewarm_s]
    if any(not 0 <= x < math.inf for x in schedules):
        parser.error(f"--rewarm-s must be 0 or more seconds; got {args.rewarm_s!r}")
    if args.no_rewarm and given:
        parser.error("--no-rewarm makes no re-warm calls: give it or --rewarm-s, not both")
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if args.runs > 1 or len(schedules) > 1:
        if args.calls_after_switch:
            parser.error("--runs and several --rewarm-s values do not go with --calls-after-switch")
        return _alternate(args, schedules)

    from dataclasses import replace

    from jitbench import Mode
    from jitbench.config import ALL_MODES
    from jitbench.measure import modes
    from jitbench.measure.devices import pick_device
    from jitbench.measure.opening import PlannedCase, open_case
    from jitbench.measure.threads import limited_threads
    from jitbench.runner.warmup import warm_up
    from jitbench.suite.discovery import compile_keyword, discover

    target = Mode(args.mode)
    if args.between is None:
        args.between = ",".join(m.value for m in ALL_MODES if m is not target)
    between = [Mode(m) for m in args.between.split(",") if m]
    if target in between:
        parser.error(f"--between must not name --mode {target.value}")
    name = target.value
    rewarm = not args.no_rewarm
    plan = SamplingPlan(rewarm_s=schedules[0])
    if args.block_samples is not None:
        plan = replace(plan, block_samples=args.block_samples)
    block, rewarm_s = plan.block_samples, plan.rewarm_s
    n = args.samples  # a group: exactly this many samples of each mode, then stop
    group_plan = replace(plan, min_samples=n, max_samples=n, floor_samples=n, precision=0.0)
    registry = discover([REPO / "suites"])
    matcher = compile_keyword(args.k)
    workloads = [w for w in registry.workloads.values() if matcher(w)]
    if not workloads:
        sys.exit(f"no workload matches {args.k!r}")
    if args.calls_after_switch:
        print(
            f"each of the first {args.calls_after_switch} {name} calls after a sample of "
            f"{args.between or 'nothing'} ÷ a {name} call after {name} calls, median of "
            f"{args.repeats}, same process, --threads {args.threads}"
        )
        print(f"{'case':<16}{'alone':>10}   call 1, 2, … after the switch")
    else:
        print(
            f"{name} in blocks of {block} after {args.between or 'nothing'}'s"
            f" and {_schedule(rewarm_s, rewarm)} ÷ {name} alone, same process, "
            f"--threads {args.threads}, {args.pairs} ABBA pairs of {args.samples} {name} samples"
        )
        print(f"{'case':<16}{'alone':>10}{'interleaved':>13}{'ratio':>9}   per group pair")
    worst = 0.0
    results: dict[str, float] = {}
    with limited_threads(args.threads):
        device = pick_device()
        warm_up([device])
        for wl in workloads:
            for size in args.sizes.split(","):
                if size not in wl.sizes:
                    continue
                pc = PlannedCase(wl, size, dict(wl.size_params(size)), device, "float32")
                session = open_case(pc, timed=ALL_MODES, plan=SamplingPlan(), seed=0, quick=False)
                calls = {m: session.calls_per_sample(m) for m in ALL_MODES}
                if not all(calls.values()):
                    print(f"{wl.name}[{size}]: a mode failed; skipped")
                    continue
                label = f"{wl.name}[{size}]"
                if args.calls_after_switch:
                    ratios_k, base = _calls_after_switch(
                        session, calls, between, args.calls_after_switch, args.repeats, target
                    )
                    shown = " ".join(f"{r:.3f}" for r in ratios_k)
                    print(f"{label:<16}{base * 1e3:>8.3f}ms   {shown}")
                    continue

                # The calls and the timed region a run samples (as the asv adapter gets them).
                fns = {m: session.ready(m).call for m in ALL_MODES}
                nojit = wl.eager == "nojit"

                def region(m: Any, nojit: bool = nojit) -> Any:
                    return modes.timed_region(m, nojit=m is Mode.EAGER and nojit, device=device)

                ratios, alone_all, mixed_all = [], [], []
                for i in range(args.pairs):
                    order = (False, True) if i % 2 == 0 else (True, False)  # ABBA
                    got = {
                        flag: _group(
                            fns,
                            calls,
                            [*between, target] if flag else [target],
                            group_plan,
                            region,
                            rewarm,
                        )
                        for flag in order
                    }
                    alone_all.append(got[False])
                    mixed_all.append(got[True])
                    ratios.append(got[True] / got[False])
                ratio = statistics.median(ratios)
                results[label] = ratio
                worst = max(worst, abs(math.log(ratio)))
                shown = " ".join(f"{r:.3f}" for r in ratios)
                print(
                    f"{label:<16}"
                    f"{statistics.median(alone_all) * 1e3:>8.3f}ms"
                    f"{statistics.median(mixed_all) * 1e3:>11.3f}ms"
                    f"{ratio:>9.3f}   {shown}"
                )
    if not args.calls_after_switch:
        print(f"largest |ratio - 1|: {math.expm1(worst):.1%} (target: within 3 %)")
    if args.ratios_json is not None:
        args.ratios_json.write_text(json.dumps(results))
    return 0


def _alternate(args: argparse.Namespace, schedules: list[float]) -> int:
    """Run the check `args.runs` times per re-warm schedule, each in a fresh process, the
    schedules alternating run by run (so they share the machine's minutes), and print
    each case's ratio per run and the mean of their logs ± its standard error: one
    process's ratio moves by several percent on a noisy machine, more than the 3 % target."""
    got: dict[float, list[dict[str, float]]] = {x: [] for x in schedules}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "ratios.json"
        for run in range(args.runs):
            for x in schedules:
                # argparse keeps the last of a repeated option: these override the user's.
                again = ["--runs", "1", "--ratios-json", str(out)]
                if not args.no_rewarm:
                    again += ["--rewarm-s", repr(x)]
                cmd = [sys.executable, __file__, *sys.argv[1:], *again]
                done = subprocess.run(cmd, capture_output=True, text=True)
                if done.returncode != 0:
                    sys.exit(f"run {run + 1} failed ({done.returncode}):\n{done.stderr[-2000:]}")
                got[x].append(json.loads(out.read_text()))
                print(
                    f"run {run + 1}/{args.runs}, {_schedule(x, not args.no_rewarm)}: done",
                    flush=True,
                )
    print(
        f"\n{args.mode} interleaved ÷ {args.mode} alone per fresh process "
        f"({args.runs} a schedule, alternating); "
        "mean: exp(mean log) ± se"
    )
    for x in schedules:
        print(_schedule(x, not args.no_rewarm))
        worst = 0.0
        for label in got[x][0]:
            logs = [math.log(r[label]) for r in got[x] if label in r]
            mean = statistics.fmean(logs)
            se = statistics.stdev(logs) / math.sqrt(len(logs)) if len(logs) > 1 else math.nan
            worst = max(worst, abs(mean))
            shown = " ".join(f"{math.exp(v):.3f}" for v in logs)
            print(f"  {label:<14}{math.exp(mean):>7.3f} ± {se:.3f}   {shown}")
        print(f"  largest |mean - 1|: {math.expm1(worst):.1%} (target: within 3 %)")
    return 0


def _schedule(rewarm_s: float, rewarm: bool = True) -> str:
    """A re-warm schedule as the output names it."""
    from jitbench import SamplingPlan

    if not rewarm:
        return "no re-warm call"
    words = f"{rewarm_s * 1e3:g} ms of re-warm calls" if rewarm_s > 0 else "one re-warm call"
    return words + (" (the default)" if rewarm_s == SamplingPlan().rewarm_s else "")


if __name__ == "__main__":
    raise SystemExit(main())
