"""Does the same jitted program run at the same speed every time it is compiled?

The process that leads a case's group compiles its jit program once, and the speedup it reports
rests on that one executable. This compiles one workload's JAX side again and again in
one process (after `jax.clear_caches()`, as a run's cold call does), on the same staged
inputs, one pinned core as `jitbench run` has, and prints each executable's median and
fastest call and, for looking into the cause, the page offset (address mod 4096) of one
call's output and of the input. The compiled program is the same every time (its HLO
fingerprint is printed), so a spread here is not the code: a few `softmax` M executables
ran several times slower than the others, which is why its speedup moves so much from
run to run (docs: validation, "A/A coverage of the
intervals"). The offsets printed do not decide it alone.

    python tools/recompile_check.py                      # softmax M, 10 compiles
    python tools/recompile_check.py -w selu -s M --compiles 20
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-w", "--workload", default="softmax")
    parser.add_argument("-s", "--size", default="M")
    parser.add_argument("--compiles", type=int, default=10)
    parser.add_argument("--calls", type=int, default=30, help="timed calls per executable")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    import jax

    from jitbench.measure.threads import limited_threads
    from jitbench.suite.discovery import discover

    registry = discover([REPO / "suites"])
    wl = registry.workloads.get(args.workload)
    if wl is None or args.size not in wl.sizes:
        sys.exit(f"no workload {args.workload!r} with size {args.size!r} in ./suites")
    with limited_threads(args.threads):
        host = wl.make_inputs(wl.size_params(args.size), dtype="float32", seed=0)
        statics = set(host.static_argnums)
        staged_args = [a if i in statics else jax.device_put(a) for i, a in enumerate(host.args)]
        staged_kwargs = {k: jax.device_put(v) for k, v in host.kwargs.items()}
        # A compiled program takes the dynamic arguments only; the static ones are in it.
        dynamic_args = [a for i, a in enumerate(staged_args) if i not in statics]
        print(
            f"{wl.name}[{args.size}]: {args.compiles} compiles of one jit program, "
            f"{args.calls} calls each, --threads {args.threads}"
        )
        print(f"{'compile':>8}{'median':>11}{'min':>10}   hlo       out%4096  in%4096")
        medians = []
        for i in range(args.compiles):
            jax.clear_caches()
            fn = jax.jit(
                wl.jax_fn,
                static_argnames=tuple(host.static) or None,
                static_argnums=host.static_argnums or None,
            )
            compiled = fn.lower(*staged_args, **staged_kwargs, **host.static).compile()
            fingerprint = hashlib.sha1((compiled.as_text() or "").encode()).hexdigest()[:8]
            jax.block_until_ready(compiled(*dynamic_args, **staged_kwargs))
            times = []
            for _ in range(args.calls):
                t0 = time.perf_counter()
                jax.block_until_ready(compiled(*dynamic_args, **staged_kwargs))
                times.append(time.perf_counter() - t0)
            out = jax.tree_util.tree_leaves(compiled(*dynamic_args, **staged_kwargs))[0]
            first_in = jax.tree_util.tree_leaves((dynamic_args, staged_kwargs))[0]
            medians.append(statistics.median(times))
            print(
                f"{i + 1:>8}{medians[-1] * 1e3:>9.3f}ms{min(times) * 1e3:>8.3f}ms   "
                f"{fingerprint}  {out.unsafe_buffer_pointer() % 4096:>8}  "
                f"{first_in.unsafe_buffer_pointer() % 4096:>7}"
            )
    print(
        f"slowest ÷ fastest executable: {max(medians) / min(medians):.2f}x "
        f"(median of medians {statistics.median(medians) * 1e3:.3f} ms)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
