"""A small pytree training step two ways: `jitbench.bench` (its default two processes)
and a plain `timeit` in a fresh process pinned to one core, alternated, so the drift
between processes shows as scatter rather than a bias. The step is an optax adam update
of a two-layer MLP's dict params (issue: jit read 1.66x the timeit figure when `bench`
passed every argument by keyword).

Prints, per alternation, jit's time per call from `bench`, from a `timeit` process pinned
to one core from its start (`taskset -c 0`: XLA sizes its CPU thread pool to the one core
it may use) and from a `timeit` process pinned after JAX started (as jitbench pins its
processes: XLA's pool keeps a thread per core of the machine, now sharing one core), and
bench's ratio to each; then the medians, with the load average. Pinned late reads like
bench and pinned early faster: the difference is XLA's pool size, not argument handling
(docs: methodology, protocol, "Threads", which gives the figures and the machine).

    python tools/pytree_agreement.py --alternations 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

STEP = textwrap.dedent(
    """
    import jax, jax.numpy as jnp, numpy as np, optax

    rng = np.random.default_rng(0)
    params = {
        "w1": rng.standard_normal((16, 32)).astype(np.float32),
        "b1": np.zeros(32, np.float32),
        "w2": rng.standard_normal((32, 1)).astype(np.float32),
    }
    x = rng.standard_normal((64, 16)).astype(np.float32)
    y = rng.standard_normal((64, 1)).astype(np.float32)
    optimiser = optax.adam(1e-3)
    state = optimiser.init(params)

    def loss(params, x, y):
        h = jnp.tanh(x @ params["w1"] + params["b1"])
        return jnp.mean((h @ params["w2"] - y) ** 2)

    def step(params, state, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        updates, state = optimiser.update(grads, state, params)
        return optax.apply_updates(params, updates), state, value
    """
)

TIMEIT = STEP + textwrap.dedent(
    """
    import os, statistics, timeit
    jitted = jax.jit(step)
    args = jax.device_put((params, state, x, y))
    jax.block_until_ready(jitted(*args))
    if PIN_LATE:  # as jitbench pins: every thread, after XLA's pool was sized
        for tid in os.listdir("/proc/self/task"):
            try:
                os.sched_setaffinity(int(tid), {min(os.sched_getaffinity(0))})
            except OSError:
                pass
    timer = timeit.Timer(lambda: jax.block_until_ready(jitted(*args)))
    n, _ = timer.autorange()
    per_call = [t / n for t in timer.repeat(repeat=15, number=n)]
    print(statistics.median(per_call))
    """
)

BENCH = STEP + textwrap.dedent(
    """
    import jitbench
    config = None
    if OVERLAP is not None or PROCESSES is not None:
        from jitbench.config import RunConfig, SamplingPlan
        settings = {"modes": ("jit",), "sizes": ("given",), "plan": SamplingPlan(budget_s=BUDGET)}
        if PROCESSES is not None:
            settings["processes"] = PROCESSES
        if OVERLAP is not None:
            settings["overlap"] = OVERLAP
        config = RunConfig(**settings)
    r = jitbench.bench(step, params, state, x, y, modes=["jit"], budget=BUDGET, config=config)
    print(r.time("jit").value, r.run.config.to_dict()["processes"])
    """
)


def _python(code: str, *, pin: bool) -> str:
    prefix = ["taskset", "-c", "0"] if pin and os.path.exists("/usr/bin/taskset") else []
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [*prefix, sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    if proc.returncode:
        raise SystemExit(proc.stderr[-2000:])
    return proc.stdout.strip().splitlines()[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alternations", type=int, default=3)
    parser.add_argument("--budget", type=float, default=1.0)
    parser.add_argument("--processes", type=int, default=None, help="bench's (default 2)")
    parser.add_argument(
        "--overlap",
        choices=("on", "off"),
        default=None,
        help="the second process beside the first (default: where it can) or after it",
    )
    args = parser.parse_args()
    ratios, late_ratios = [], []
    print(
        f"{'#':>2} {'bench jit':>12} {'timeit':>12} {'ratio':>7} {'pinned late':>12} {'ratio':>7}"
    )
    for i in range(args.alternations):
        overlap = None if args.overlap is None else args.overlap == "on"
        head = f"BUDGET = {args.budget!r}\nPROCESSES = {args.processes!r}\nOVERLAP = {overlap!r}\n"
        bench_s, processes = _python(head + BENCH, pin=False).split()
        timeit_s = _python("PIN_LATE = False\n" + TIMEIT, pin=True)
        late_s = _python("PIN_LATE = True\n" + TIMEIT, pin=False)
        ratio = float(bench_s) / float(timeit_s)
        late = float(bench_s) / float(late_s)
        ratios.append(ratio)
        late_ratios.append(late)
        print(
            f"{i + 1:>2} {float(bench_s) * 1e6:>9.1f} µs {float(timeit_s) * 1e6:>9.1f} µs "
            f"{ratio:>7.3f} {float(late_s) * 1e6:>9.1f} µs {late:>7.3f}  ({processes} processes)"
        )
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else []
    print(
        f"median ratio bench/timeit {statistics.median(ratios):.3f}, bench/timeit pinned late "
        f"{statistics.median(late_ratios):.3f}; load {' '.join(load)}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
