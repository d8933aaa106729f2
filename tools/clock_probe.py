"""Wall clock or CPU time: which one do other processes on the core move?

Runs PROCESSES fresh processes one after another, each pinned to one core, and in each
times three calls in interleaved NumPy/jit rounds (`selu` at 10^4 and 10^6 elements, a
128x128 `gemm`) by both clocks at once: `time.perf_counter` (wall) and
`time.process_time` (the process's CPU time, as `jitbench run --clock cpu` counts it).
Prints, per case and process, both medians and the median per-round speedup by each
clock. With `--hog N`, N busy loops run for the whole measurement (one a core takes
them all). Where the two clocks' speedups differ from process to process, the
other processes moved the figure.

    python tools/clock_probe.py --processes 4 --samples 300 --hog 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HOG = "while True: pass"


def probe(samples: int) -> dict[str, dict[str, float]]:
    """One process's figures: {case: {wall_np, wall_jit, cpu_np, cpu_jit, wall_x, cpu_x}}."""
    import jax
    import numpy as np

    def selu(xp, x):  # type: ignore[no-untyped-def]
        return 1.0507 * xp.where(x > 0, x, 1.6733 * (xp.exp(x) - 1))

    def gemm(xp, a, b, c):  # type: ignore[no-untyped-def]
        return 1.5 * a @ b + 1.2 * c

    rng = np.random.default_rng(0)
    cases = {
        "selu 1e4": (selu, [rng.standard_normal(10_000).astype(np.float32)]),
        "selu 1e6": (selu, [rng.standard_normal(1_000_000).astype(np.float32)]),
        "gemm 128": (gemm, [rng.standard_normal((128, 128)).astype(np.float32)] * 3),
    }
    out = {}
    for name, (f, args) in cases.items():
        jitted = jax.jit(lambda *a, f=f: f(jax.numpy, *a))
        staged = [jax.device_put(a) for a in args]
        jitted(*staged).block_until_ready()
        calls = {
            "np": lambda f=f, args=args: f(np, *args),
            "jit": lambda jitted=jitted, staged=staged: jitted(*staged).block_until_ready(),
        }
        wall: dict[str, list[float]] = {"np": [], "jit": []}
        cpu: dict[str, list[float]] = {"np": [], "jit": []}
        for _ in range(samples):
            for mode, call in calls.items():
                w0, c0 = time.perf_counter(), time.process_time()
                call()
                c1, w1 = time.process_time(), time.perf_counter()
                wall[mode].append(w1 - w0)
                cpu[mode].append(c1 - c0)

        def speedup(d: dict[str, list[float]]) -> float:
            return statistics.median(a / b for a, b in zip(d["np"], d["jit"], strict=True) if b > 0)

        out[name] = {
            "wall_np": statistics.median(wall["np"]),
            "wall_jit": statistics.median(wall["jit"]),
            "cpu_np": statistics.median(cpu["np"]),
            "cpu_jit": statistics.median(cpu["jit"]),
            "wall_x": speedup(wall),
            "cpu_x": speedup(cpu),
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--hog", type=int, default=0, help="busy loops during the probe")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        print(json.dumps(probe(args.samples)))
        return 0
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(args.hog)]
    try:
        rows = []
        for _ in range(args.processes):
            child = [sys.executable, __file__, "--child", "--samples", str(args.samples)]
            done = subprocess.run(child, capture_output=True, text=True, check=True)
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        load = os.getloadavg()[0]  # before the busy loops stop
    finally:
        for hog in hogs:
            hog.kill()
    print(f"{args.processes} processes, {args.hog} busy loop(s), load {load:.2f}")
    for case in rows[0]:
        print(case)
        for r in rows:
            d = r[case]
            print(
                f"  wall: NumPy {d['wall_np'] * 1e6:9.1f} µs  jit {d['wall_jit'] * 1e6:8.1f} µs"
                f"  {d['wall_x']:6.3f}x  |  cpu: NumPy {d['cpu_np'] * 1e6:9.1f} µs"
                f"  jit {d['cpu_jit'] * 1e6:8.1f} µs  {d['cpu_x']:6.3f}x"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
