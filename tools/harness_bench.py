"""Benchmark the harness itself and print its figures (not a unit test).

1. Overhead: the per-call time jitbench reports for a trivial jitted function divided by a
   bare `timeit` loop of `f(x).block_until_ready()` in the same process (target <= 1.05).
2. Agreement: the NumPy and jit times and the jit compile that `jitbench run` shows
   (`results.analysis`: the figures its table prints) for selu at 1,000,000 float32
   elements and the FAQ function at 1000x1000, against a careful `timeit` of the NumPy
   call and of `f_jit(x).block_until_ready()`, and the median of five cold
   `jax.jit(f).lower(x).compile()` of fresh functions, in a separate pinned process
   (target within 3 %).
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
import json, os, statistics, sys, time, timeit
# The thread setting jitbench runs with by default (--threads 1): one core for everything,
# set before JAX and NumPy start their thread pools. Unpinned, XLA spreads a jitted selu
# over both cores and the comparison measures the threads, not the harness.
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[name] = "1"
import numpy as np, jax, jax.numpy as jnp
which = sys.argv[1]
rng = np.random.default_rng(0)
def make(xp):
    if which == "selu":
        def f(x, alpha=1.67, lmbda=1.05):
            return lmbda * xp.where(x > 0, x, alpha * xp.exp(x) - alpha)
    else:
        def f(x):
            return x.T @ (x - x.mean(axis=0))
    return f
host = rng.standard_normal(1_000_000 if which == "selu" else (1000, 1000)).astype(np.float32)
x = jax.device_put(host)
def median_call(stmt, names):
    t = timeit.Timer(stmt, globals=names)
    n, _ = t.autorange()
    return statistics.median(s / max(n, 1) for s in t.repeat(repeat=25, number=max(n, 1)))
f_np, f_jit = make(np), jax.jit(make(jnp))
f_jit(x).block_until_ready()
compiles = []
for _ in range(5):  # a fresh function each time: nothing cached to load
    began = time.perf_counter()
    jax.jit(make(jnp)).lower(x).compile()
    compiles.append(time.perf_counter() - began)
print(json.dumps({
    "numpy": median_call("f(x)", {"f": f_np, "x": host}),
    "jit": median_call("f(x).block_until_ready()", {"f": f_jit, "x": x}),
    "compile": statistics.median(compiles),
}))
"""


def jitbench_figures(name: str, size: str) -> dict[str, float]:
    """The NumPy and jit times and the jit compile a `jitbench run` of `name` shows."""
    from jitbench import Mode, load_run
    from jitbench.results.analysis import analyse

    with tempfile.TemporaryDirectory() as out:
        subprocess.run(
            [sys.executable, "-m", "jitbench", "run", name, "-s", size, "-m", "numpy,jit",
             "--out", out],
            cwd=REPO, env=ENV, check=True, capture_output=True, text=True,
        )  # fmt: skip
        [path] = Path(out, "runs").glob("*.json")
        [case] = analyse(load_run(path))
    numpy, jit = case.get(Mode.NUMPY), case.get(Mode.JIT)
    assert numpy is not None and numpy.time is not None and jit is not None
    assert jit.time is not None and jit.compile_s is not None
    return {"numpy": numpy.time.value, "jit": jit.time.value, "compile": jit.compile_s}


def timeit_figures(which: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", TIMEIT_SNIPPET, which],
        env=ENV,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    figures: dict[str, float] = json.loads(out.splitlines()[-1])
    return figures


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
        f"2. the shown figures vs timeit in a separate process ({args.rounds} alternating "
        "rounds; a machine's medians drift between processes, so one pair says little)"
    )
    for name, which in (("selu", "selu"), ("centred_product", "faq")):
        ratios: dict[str, list[float]] = {"numpy": [], "jit": [], "compile": []}
        for _ in range(args.rounds):
            shown, timed = jitbench_figures(name, "M"), timeit_figures(which)
            for figure, values in ratios.items():
                values.append(shown[figure] / timed[figure])
            print(
                f"   {name:16s} "
                + "   ".join(
                    f"{figure} {shown[figure] * 1e3:.3f} / {timed[figure] * 1e3:.3f} ms "
                    f"{100 * (shown[figure] / timed[figure] - 1):+5.1f} %"
                    for figure in ratios
                )
            )
        print(
            f"   {name:16s} median diff "
            + ", ".join(
                f"{figure} {100 * (statistics.median(values) - 1):+5.1f} %"
                for figure, values in ratios.items()
            )
            + "  (target within ±3 %)"
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
