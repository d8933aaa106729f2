"""Benchmark the harness itself and print its figures (not a unit test).

1. Overhead: the per-call time jitbench reports for a trivial jitted function divided by a
   bare `timeit` loop of `f(x).block_until_ready()` in the same process (target <= 1.05).
2. Agreement: jit medians that `jitbench run` reports for selu at 1,000,000 float32
   elements and the FAQ function at 1000x1000 against a careful `timeit` of
   `f_jit(x).block_until_ready()` in a separate process (target within 5 %).
3. Wall time of `jitbench run` over the default suite at S and M (its target, with the
   machine it was set on: docs/validation/run-time.md).

Usage: python tools/harness_bench.py [--skip-wall]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}

TIMEIT_SNIPPET = r"""
import json, os, statistics, sys, timeit
# The thread setting jitbench runs with by default (--threads 1): one core for everything,
# set before JAX starts its thread pool. Unpinned, XLA spreads a jitted selu over both
# cores and the comparison measures the threads, not the harness.
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
import numpy as np, jax, jax.numpy as jnp
which = sys.argv[1]
rng = np.random.default_rng(0)
if which == "selu":
    def f(x, alpha=1.67, lmbda=1.05):
        return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)
    x = jax.device_put(rng.standard_normal(1_000_000).astype(np.float32))
else:
    def f(x):
        return x.T @ (x - x.mean(axis=0))
    x = jax.device_put(rng.standard_normal((1000, 1000)).astype(np.float32))
f_jit = jax.jit(f)
f_jit(x).block_until_ready()
t = timeit.Timer("f_jit(x).block_until_ready()", globals=globals())
n, _ = t.autorange()
n = max(n, 1)
per_call = [s / n for s in t.repeat(repeat=25, number=n)]
print(json.dumps({"median_s": statistics.median(per_call), "number": n}))
"""


def jitbench_median(names: list[str], size: str, extra: list[str]) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "jitbench",
                "run",
                *names,
                "-s",
                size,
                "-m",
                "jit",
                "--out",
                out,
                *extra,
            ],
            cwd=REPO,
            env=ENV,
            check=True,
            capture_output=True,
            text=True,
        )
        [path] = Path(out, "runs").glob("*.json")
        data = json.loads(path.read_text())
    return {m["case"]["workload"]: m["summary"]["median"] for m in data["measurements"]}


def timeit_median(which: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", TIMEIT_SNIPPET, which],
        env=ENV,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.splitlines()[-1])["median_s"]


def overhead_ratio(rounds: int = 5) -> list[tuple[float, float, float]]:
    import jax
    import jax.numpy as jnp
    import numpy as np

    import jitbench
    from jitbench import Mode, RunConfig

    @jitbench.workload(
        inputs=lambda rng, *, dtype, n: (rng.standard_normal(n).astype(dtype),),
        sizes={"S": {"n": 8}},
        name="trivial",
    )
    def trivial(xp, x):
        return x + 1

    f = jax.jit(lambda x: x + 1)
    x = jax.device_put(np.ones(8, np.float32))
    f(x).block_until_ready()
    jnp.zeros(1).block_until_ready()
    rows = []
    for _ in range(rounds):
        run = jitbench.run_workloads(
            [trivial], RunConfig(sizes=("S",), modes=(Mode.JIT,), processes=1)
        )
        ours = run.measurements[0].median_s
        if ours is None:
            raise SystemExit(f"the trivial case failed: {run.measurements[0].failure_text}")
        t = timeit.Timer("f(x).block_until_ready()", globals={"f": f, "x": x})
        n, _ = t.autorange()
        bare = statistics.median(s / n for s in t.repeat(repeat=15, number=n))
        rows.append((ours, bare, ours / bare))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-wall", action="store_true", help="skip the wall-time run")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds")
    args = parser.parse_args()

    print("1. harness overhead, trivial jitted x + 1 on 8 float32 (same process)")
    rows = overhead_ratio(args.rounds)
    for ours, bare, ratio in rows:
        print(
            f"   jitbench {ours * 1e6:8.3f} µs   bare timeit {bare * 1e6:8.3f} µs   "
            f"ratio {ratio:.3f}"
        )
    print(f"   median ratio: {statistics.median(r for *_, r in rows):.3f}  (target <= 1.05)")

    print(
        f"2. jitbench jit median vs timeit in a separate process ({args.rounds} alternating "
        "rounds; a machine's medians drift between processes, so one pair says little)"
    )
    for name, which in (("selu", "selu"), ("centred_product", "faq")):
        ratios = []
        for _ in range(args.rounds):
            ours = jitbench_median([name], "M", [])[name]
            theirs = timeit_median(which)
            ratios.append(ours / theirs)
            print(
                f"   {name:16s} jitbench {ours * 1e3:8.3f} ms   timeit {theirs * 1e3:8.3f} ms   "
                f"diff {100 * (ours / theirs - 1):+5.1f} %"
            )
        print(
            f"   {name:16s} median diff {100 * (statistics.median(ratios) - 1):+5.1f} %  "
            "(target within ±5 %)"
        )

    if not args.skip_wall:
        print("3. wall time of `jitbench run -s S,M` over the default suite")
        with tempfile.TemporaryDirectory() as out:
            t0 = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "jitbench", "run", "-s", "S,M", "--out", out],
                cwd=REPO,
                env=ENV,
                check=True,
                capture_output=True,
            )
            wall = time.perf_counter() - t0
        print(f"   {wall:.1f} s  (the target and its machine: docs/validation/run-time.md)")


if __name__ == "__main__":
    main()
