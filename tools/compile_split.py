"""Check that the compile split `jitbench run` records agrees with the AOT stages.

`jitbench run` compiles each jit program once: a cold first call, split into trace, lower
and XLA compile seconds by JAX's monitoring events (`compilation.cold_call`). This times
the same program both ways, alternating, with caches cleared before each: the AOT stages
(`jax.jit(f).trace(...)`, `.lower()`, `.compile()`, each timed on its own) and the event
split of an ordinary cold first call. It prints the median of each stage per workload, and
the cost of reading the program analysis from the cache after the first call.

    python tools/compile_split.py [--suite suites] [-k EXPR] [--size S] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's jitbench

import jax

from jitbench.config import Mode
from jitbench.measure import compilation, modes
from jitbench.measure.devices import warm_up_process
from jitbench.suite.discovery import discover


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:7.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", action="append", default=[])
    parser.add_argument("-k", dest="keyword", default="")
    parser.add_argument("--size", default="S")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)

    workloads = discover(args.suite).select(keyword=args.keyword)
    device = jax.devices()[0]
    warm_up_process([device])
    print(
        f"{'workload':20s} {'method':6s} {'trace ms':>8s} {'lower ms':>8s} {'compile ms':>10s} "
        f"{'total ms':>8s} {'first call ms':>13s}"
    )
    totals: dict[str, list[float]] = {"aot": [], "events": []}
    for wl in workloads:
        if args.size not in wl.sizes:
            continue
        host = wl.make_inputs(wl.sizes[args.size], dtype="float32")
        staged = modes.stage(host, device)
        kwargs = {**staged.kwargs, **staged.static}
        aot: list[tuple[float, float, float]] = []
        events: list[tuple[float, float, float]] = []
        first: list[float] = []
        analysis_s: list[float] = []
        analysis_compiles = 0
        for _ in range(args.repeats):
            a = compilation.cold_aot_breakdown(
                wl.jax_fn, static_argnames=wl.static_argnames, args=staged.args, kwargs=kwargs
            )
            aot.append((a.trace_s, a.lower_s, a.compile_s))
            jitted = modes.jit_function(wl)
            call = modes.build_call(Mode.JIT, wl, host=host, staged=staged, jitted=jitted)
            cold = compilation.cold_call(call)
            split = cold.stages_s
            if split is None:
                print(f"{wl.name}: JAX emitted no event for a stage", file=sys.stderr)
                return 1
            events.append(split)
            first.append(cold.seconds)
            t0 = time.perf_counter()
            _, compiles = compilation.cached_analysis(jitted, args=staged.args, kwargs=kwargs)
            analysis_s.append(time.perf_counter() - t0)
            analysis_compiles += compiles
        for method, rows in (("aot", aot), ("events", events)):
            medians = [statistics.median(r[i] for r in rows) for i in range(3)]
            total = statistics.median(sum(r) for r in rows)
            totals[method].append(total)
            tail = _ms(statistics.median(first)).rjust(13) if method == "events" else ""
            print(
                f"{wl.name:20s} {method:6s} {_ms(medians[0]):>8s} {_ms(medians[1]):>8s} "
                f"{_ms(medians[2]):>10s} {_ms(total):>8s} {tail}"
            )
        print(
            f"{'':20s} analysis from the cache: {_ms(statistics.median(analysis_s))} ms, "
            f"{analysis_compiles} compiles"
        )
    aot_sum, event_sum = sum(totals["aot"]), sum(totals["events"])
    print(
        f"sum of median totals: aot {aot_sum * 1e3:.1f} ms, events {event_sum * 1e3:.1f} ms "
        f"(events/aot {event_sum / aot_sum:.3f})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
