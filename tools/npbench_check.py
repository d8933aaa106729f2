"""Run every kernel of an NPBench clone that has a JAX version and say which run and validate.

The kernels are measured by `jitbench.run` exactly as `jitbench run --suite npbench:PATH`
measures them (no per-kernel code), at one preset under a short budget, in two passes:
NumPy and jit first, then eager (op by op under `jax.disable_jit()`, which for loop
kernels can take minutes: its first call compiles one small program per operation and
loop step), each kernel under its own time limit, so a slow eager side costs only the
eager figure. Per kernel it prints whether NumPy and jit ran, whether jit validated
against NumPy, the same for eager, and why not; then the totals, and the kernels that
have no JAX version.

    python tools/npbench_check.py PATH [--size S] [--budget 0.05] [-k EXPR] [--x64]
        [--timeout 300] [--eager-timeout 60] [--no-eager] [--isolate] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's jitbench

from jitbench import api
from jitbench.config import RunConfig
from jitbench.results import Measurement, Mode, Run, Status
from jitbench.runner.events import CaseFinished, RunEvent, SuiteSkipped
from jitbench.suite import npbench

#: Diagnostics that make an ok output "not validated".
UNCHECKED = frozenset({"unvalidated"})
#: Diagnostics worth a word in the verdict (the rest are in the run file).
NOTED = ("input-narrowed", "scalar-promotion", "numpy-float64", "recompiled-during-timing")


def verdict(ms: Sequence[Measurement], modes: Sequence[Mode]) -> tuple[bool, bool, str]:
    """(ran, validated, why not) for one kernel's measurements of `modes` (one case):
    ran when every mode ran, validated when every JAX mode among them matched NumPy."""
    chosen = [m for m in ms if m.mode in modes]
    failed = [m for m in chosen if m.status in (Status.ERROR, Status.TIMEOUT)]
    ran = bool(chosen) and not failed
    jax_ms = [m for m in chosen if m.mode is not Mode.NUMPY]
    mismatched = [m for m in jax_ms if m.status is Status.MISMATCH]
    unchecked = [m for m in jax_ms if any(d.code in UNCHECKED for d in m.diagnostics)]
    validated = ran and bool(jax_ms) and not mismatched and not unchecked
    reasons: list[str] = []
    for m in failed:
        text = m.failure_text.splitlines()[0] if m.failure_text else m.status.value
        reasons.append(f"{m.mode.value}: {text}"[:220])
    for m in mismatched:
        text = next((d.message for d in m.diagnostics if d.severity.value == "error"), "")
        reasons.append(text if len(text) <= 160 else text[:157] + "...")
    if unchecked and not failed:
        d = next(d for d in unchecked[0].diagnostics if d.code in UNCHECKED)
        reasons.append(d.message[:160])
    notes = sorted({d.code for m in chosen for d in m.diagnostics if d.code in NOTED})
    if notes:
        reasons.append("notes: " + ", ".join(notes))
    return ran, validated, "; ".join(reasons)


def by_workload(run: Run) -> dict[str, list[Measurement]]:
    grouped: dict[str, list[Measurement]] = {}
    for m in run.measurements:
        grouped.setdefault(m.case.workload, []).append(m)
    return grouped


def measure(spec: str, args: argparse.Namespace, modes: tuple[Mode, ...], timeout_s: float) -> Run:
    """One pass of `jitbench.run` over the clone's kernels in `modes`."""
    quick = RunConfig.quick_settings()
    config = replace(
        quick,
        sizes=(args.size,),
        modes=modes,
        plan=replace(quick.plan, budget_s=args.budget),
        x64=args.x64,
        timeout_s=timeout_s,
        isolate=args.isolate,
    )

    def progress(event: RunEvent) -> None:
        if isinstance(event, CaseFinished):
            done = ", ".join(f"{m.mode.value} {m.status.value}" for m in event.measurements)
            print(f"  {event.case.label}: {done}", file=sys.stderr, flush=True)
        elif isinstance(event, SuiteSkipped):
            print(f"  not loaded: {event.error}", file=sys.stderr, flush=True)

    return api.run(
        suites=[spec], keyword=args.keyword, config=config, out=args.out, on_event=progress
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", help="the NPBench clone's top folder")
    parser.add_argument("--size", default="S", help="preset: S, M, L or paper (default S)")
    parser.add_argument("--budget", type=float, default=0.05, help="sampling s per kernel")
    parser.add_argument("-k", dest="keyword", default=None, help="select kernels (as -k)")
    parser.add_argument("--x64", action="store_true", help="float64 on both sides")
    parser.add_argument("--timeout", type=float, default=300.0, help="s per kernel, pass 1")
    parser.add_argument("--eager-timeout", type=float, default=60.0, help="s per kernel, eager")
    parser.add_argument("--no-eager", action="store_true", help="skip the eager pass")
    parser.add_argument("--isolate", action="store_true", help="each kernel in a child")
    parser.add_argument("--out", default=None, help="also write the runs' JSON here")
    args = parser.parse_args(argv)

    suite = npbench.load(args.path)
    spec = npbench.spec_of(suite.root)
    started = time.perf_counter()
    first = by_workload(measure(spec, args, (Mode.NUMPY, Mode.JIT), args.timeout))
    eager = (
        {} if args.no_eager else by_workload(measure(spec, args, (Mode.EAGER,), args.eager_timeout))
    )
    wall = time.perf_counter() - started

    width = max([len(n) for n in first] + [len(p.kernel) for p in suite.problems] + [8])
    yes = {True: "yes", False: "no"}
    print(
        f"{'kernel':{width}s}  {'numpy+jit ran':>13s}  {'jit valid':>9s}  "
        f"{'eager ran':>9s}  {'eager valid':>11s}  why not"
    )
    counts = {"ran": 0, "valid": 0, "eager_ran": 0, "eager_valid": 0}
    for name, ms in first.items():
        ran, valid, why = verdict(ms, (Mode.NUMPY, Mode.JIT))
        e_ran, e_valid, e_why = verdict(eager.get(name, []), (Mode.EAGER,))
        counts["ran"] += ran
        counts["valid"] += valid
        counts["eager_ran"] += e_ran
        counts["eager_valid"] += e_valid
        whys = [w for w in (why, e_why if e_why != why else "") if w]
        e_cols = ("-", "-") if args.no_eager else (yes[e_ran], yes[e_valid])
        print(
            f"{name:{width}s}  {yes[ran]:>13s}  {yes[valid]:>9s}  {e_cols[0]:>9s}  "
            f"{e_cols[1]:>11s}  {' | '.join(whys)}"
        )
    failed_to_load = [p for p in suite.problems if p.error]
    for p in failed_to_load:
        print(
            f"{p.kernel:{width}s}  {'no':>13s}  {'no':>9s}  {'no':>9s}  {'no':>11s}  "
            f"not loaded: {p.reason}"[:300]
        )
    with_jax = len(first) + len(failed_to_load)
    no_jax = [p.kernel for p in suite.problems if not p.error]
    dtype = "float64" if args.x64 else "float32"
    print(
        f"\n{with_jax} JAX implementation(s) at {args.size}, {dtype}: NumPy and jit ran for "
        f"{counts['ran']}, jit validated for {counts['valid']}"
        + (
            ""
            if args.no_eager
            else f"; eager ran for {counts['eager_ran']}, validated for {counts['eager_valid']}"
        )
        + f"; wall {wall:.0f} s"
    )
    if no_jax:
        print(f"no JAX version ({len(no_jax)}): {', '.join(no_jax)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
