"""Run an NPBench clone through jitbench as a user would and print what the run cost.

`jitbench run --suite npbench:PATH -s S` with the given modes, timeout, isolation and
processes (the defaults otherwise: the sampling plan, two processes, float64 as NPBench
runs unless --no-x64), through `jitbench.run`. The progress estimate the CLI shows
(`runner.progress.ProgressEstimate`) is fed the same events, and its prediction of the
run's end is checked at 10, 50 and 90 % of the wall time. Prints the date, machine,
commit and load average, the wall time, the kernels measured per mode (and why not), the
modes stopped at --timeout (which, after how long), and the estimate's errors.

    python tools/npbench_run.py PATH [--size S] [-m numpy,eager,jit] [--timeout 60]
        [--isolate] [--processes N] [-k EXPR] [--no-x64] [--budget S] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from collections import Counter
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's jitbench

from jitbench import api
from jitbench.config import RunConfig
from jitbench.results import Status
from jitbench.runner.events import (
    FloatWidthChosen,
    KernelsLeftOut,
    ProcessStarted,
    RunEvent,
    SuiteSkipped,
)
from jitbench.runner.progress import ProgressEstimate
from jitbench.suite import npbench

#: A mode stopped at --timeout while sampling (its samples kept), or left out by a worker.
STOPPED = ("mode-capped", "timed-out-before")
#: Shares of the wall time at which the estimate's prediction is checked.
CHECKPOINTS = (0.1, 0.5, 0.9)


def _commit() -> str:
    root = Path(__file__).resolve().parents[1]
    try:
        sha = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return sha + ("-dirty" if dirty else "")


def _clone_commit(path: str) -> str:
    try:
        return subprocess.run(
            ["git", "-C", path, "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.node()}, {os.cpu_count()} CPUs, {model}"


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def clone_counts(suite: npbench.NPBenchSuite) -> str:
    """How many kernels the clone describes, how many have a JAX version (and `_jax_lib`
    variants), and what it leaves out: the README's counts, from the clone itself."""
    names = [w.name for w in suite.workloads]
    lib = sum(name.endswith(".lib") for name in names)
    failed = [p.kernel for p in suite.problems if p.error]
    left = [p for p in suite.problems if not p.error]
    info = len(list((suite.root / "bench_info").glob("*.json")))
    return (
        f"NPBench clone {suite.root} at {_clone_commit(str(suite.root))}: {info} bench_info "
        f"kernels; {len(names) - lib} with a JAX version plus {lib} _jax_lib variant(s): "
        f"{len(names)} workloads"
        + (f"; failed to load: {', '.join(failed)}" if failed else "")
        + "".join(f"; left out: {p.kernel} ({p.reason})" for p in left)
    )


def estimate_errors(
    trace: list[tuple[float, float | None]], wall_s: float
) -> dict[float, tuple[float, float] | None]:
    """At each checkpoint share p of `wall_s`: (the estimate's predicted total at the last
    event before p·wall, its relative error against `wall_s`), from `trace`'s
    (elapsed, seconds left) pairs; None where no estimate was made by then."""
    out: dict[float, tuple[float, float] | None] = {}
    for p in CHECKPOINTS:
        made = [(t, left) for t, left in trace if t <= p * wall_s and left is not None]
        if not made:
            out[p] = None
            continue
        t, left = made[-1]
        predicted = t + left
        out[p] = (predicted, predicted / wall_s - 1.0)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", help="the NPBench clone's top folder")
    parser.add_argument("--size", default="S")
    parser.add_argument("-m", "--modes", default="numpy,eager,jit")
    parser.add_argument("--timeout", type=float, default=60.0, help="s per mode of a case")
    parser.add_argument("--isolate", action="store_true")
    parser.add_argument("--processes", type=int, default=None)
    parser.add_argument("-k", dest="keyword", default=None)
    parser.add_argument("--no-x64", action="store_true", help="float32 (NPBench: float64)")
    parser.add_argument("--budget", type=float, default=None, help="sampling s per case")
    parser.add_argument("--out", default=None, help="also write the run's JSON here")
    parser.add_argument("--count", action="store_true", help="only count the clone's kernels")
    args = parser.parse_args(argv)

    suite = npbench.load(args.path)
    spec = npbench.spec_of(suite.root)
    if args.count:
        print(clone_counts(suite))
        return 0
    base = RunConfig()
    config = replace(
        base,
        sizes=(args.size,),
        modes=tuple(args.modes.split(",")),
        timeout_s=args.timeout,
        isolate=args.isolate,
        processes=args.processes or base.processes,
        x64=False if args.no_x64 else None,
        plan=base.plan if args.budget is None else replace(base.plan, budget_s=args.budget),
    )
    started_at = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load_before = _load()
    estimate = ProgressEstimate()
    trace: list[tuple[float, float | None]] = []
    said: list[str] = []
    process_starts: list[float] = [0.0]
    t0 = time.monotonic()

    def on_event(event: RunEvent) -> None:
        estimate.update(event)
        trace.append((time.monotonic() - t0, estimate.eta_s()))
        if isinstance(event, FloatWidthChosen):
            said.append(f"float width: {event.dtype}, declared by {', '.join(event.suites)}")
        elif isinstance(event, KernelsLeftOut):
            said.extend(f"left out: {name} ({why})" for name, why in event.kernels)
        elif isinstance(event, ProcessStarted):
            process_starts.append(time.monotonic() - t0)
        elif isinstance(event, SuiteSkipped):
            said.append(f"not loaded: {event.error}")

    run = api.run(
        suites=[spec], keyword=args.keyword, config=config, out=args.out, on_event=on_event
    )
    wall = time.monotonic() - t0

    settings = run.config.settings or config
    print(f"date {started_at}; machine {_machine()}; jitbench {_commit()}")
    print(f"NPBench clone {suite.root} at {_clone_commit(str(suite.root))}")
    print(f"load average (1/5/15 min) before {load_before}, after {_load()}; run {run.run_id}")
    print(
        f"settings: size {args.size}, modes {args.modes}, "
        f"{'float64' if settings.x64 else 'float32'}, --timeout {args.timeout:g} s per mode, "
        f"{'--isolate, ' if args.isolate else ''}{settings.processes} process(es), "
        f"budget {settings.plan.budget_s:g} s per case"
    )
    for line in said:
        print(line)
    ends = [*process_starts[1:], wall]
    spans = [end - start for start, end in zip(process_starts, ends, strict=True)]
    print(
        f"wall time {wall:.0f} s ({wall / 60:.1f} min); by process: "
        + ", ".join(f"{s:.0f} s" for s in spans)
    )

    kernels = sorted({m.case.workload for m in run.measurements})
    print(f"{len(kernels)} workload(s)")
    for mode in settings.modes:
        ms = [m for m in run.measurements if m.mode is mode]
        counts = Counter(m.status.value for m in ms)
        figures = sum(1 for m in ms if m.samples_s)
        detail = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        print(f"  {mode.value:7s} measured (with figures) {figures:3d}  [{detail}]")
    stopped = [
        m
        for m in run.measurements
        if m.status is Status.TIMEOUT or any(d.code in STOPPED for d in m.diagnostics)
    ]
    if stopped:
        print("stopped at --timeout:")
        for m in sorted(stopped, key=lambda m: (m.case.workload, m.mode.value)):
            said_why = (d.message for d in m.diagnostics if d.code in STOPPED)
            text = m.failure_text if m.status is Status.TIMEOUT else next(said_why, "")
            print(f"  {m.case.workload} {m.mode.value}: {text}"[:240])
    mismatched = [m for m in run.measurements if m.status is Status.MISMATCH]
    if mismatched:
        print("mismatches:")
        for m in sorted(mismatched, key=lambda m: (m.case.workload, m.mode.value)):
            print(f"  {m.case.workload} {m.mode.value}: {m.failure_text}"[:240])
    first = next((left for _t, left in trace if left is not None), None)
    if first is not None:
        print(f"time estimate at the start: {first:.0f} s ({first / wall - 1:+.0%})")
    for p, got in estimate_errors(trace, wall).items():
        if got is None:
            print(f"time estimate at {p:.0%}: none made yet")
        else:
            predicted, error = got
            print(f"time estimate at {p:.0%} of the run: {predicted:.0f} s in all ({error:+.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
