"""Do `jitbench.bench`'s 95 % intervals hold for the next call?

Calls `bench` `--calls` times in a row on each kernel (the jit tutorial's selu at 10⁴ and
10⁶ float32 values, a 300 × 300 float32 matrix product), as a notebook user repeats a
cell, with bench's defaults. For every figure bench shows (each mode's time, each JAX
mode's speedup) and every ordered pair of calls (i, j), it checks whether call j's figure
lies inside call i's interval, and prints per kernel and figure: the checks inside, and
the median and range of the intervals' half-widths (×/÷); per call, each process's jit
median (how far a call's processes landed apart). The intervals claim 95 % (docs: guide,
python: "What bench's interval means").

    python tools/bench_coverage.py
    python tools/bench_coverage.py --calls 4 --kernels selu-1e4
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax.numpy as jnp
import numpy as np

import jitbench
from jitbench.config import Mode
from jitbench.results.analysis import Estimate


def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)


def selu_np(x, alpha=1.67, lmbda=1.05):
    return lmbda * np.where(x > 0, x, alpha * np.exp(x) - alpha)


def product(a, b):
    return jnp.tanh(a @ b)


def product_np(a, b):
    return np.tanh(a @ b)


def _kernels() -> dict[str, tuple]:
    rng = np.random.default_rng(0)
    square = rng.standard_normal((300, 300), dtype=np.float32)
    return {
        "selu-1e4": (selu, selu_np, (np.linspace(-5, 5, 10_000, dtype=np.float32),)),
        "selu-1e6": (selu, selu_np, (np.linspace(-5, 5, 1_000_000, dtype=np.float32),)),
        "product-300": (product, product_np, (square, square.T.copy())),
    }


def _figures(r: jitbench.BenchResult) -> dict[str, Estimate | None]:
    out: dict[str, Estimate | None] = {f"{m.value} time": r.time(m) for m in Mode}
    for m in (Mode.EAGER, Mode.JIT):
        out[f"{m.value} speedup"] = r.speedup(m)
    return out


def _half_width(e: Estimate) -> float:
    assert e.low is not None and e.high is not None
    return math.sqrt(e.high / e.low)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=6)
    parser.add_argument("--kernels", default="selu-1e4,selu-1e6,product-300")
    args = parser.parse_args()
    kernels = _kernels()
    chosen = args.kernels.split(",")
    if unknown := [k for k in chosen if k not in kernels]:
        parser.error(f"unknown kernels {unknown}; known: {', '.join(kernels)}")
    load = os.getloadavg()[0]
    print(f"{args.calls} calls a kernel, load {load:.1f} at the start", flush=True)
    inside_all = total_all = 0
    for name in chosen:
        fn, numpy_fn, call_args = kernels[name]
        calls = []
        for i in range(args.calls):
            start = time.perf_counter()
            r = jitbench.bench(fn, *call_args, numpy=numpy_fn, name=name)
            calls.append(_figures(r))
            jit = next((m for m in r.run.measurements if m.mode is Mode.JIT), None)
            each = ", ".join(f"{x * 1e6:.1f}" for x in jit.run_medians_s) if jit else "-"
            print(
                f"  {name} call {i + 1}: {time.perf_counter() - start:.1f} s, "
                f"jit per process {each} µs",
                flush=True,
            )
        for figure in [f for f in calls[0] if not f.startswith("sharded")]:
            series = [c[figure] for c in calls]
            if any(e is None or e.low is None or e.high is None for e in series):
                print(f"{name:12} {figure:14} no interval in some call")
                continue
            inside = sum(
                e.low <= other.value <= e.high  # type: ignore[operator, union-attr]
                for i, e in enumerate(series)
                for j, other in enumerate(series)
                if i != j
            )
            total = len(series) * (len(series) - 1)
            widths = [_half_width(e) for e in series]  # type: ignore[arg-type]
            inside_all, total_all = inside_all + inside, total_all + total
            print(
                f"{name:12} {figure:14} {inside:3} of {total} inside "
                f"({100 * inside / total:.0f} %), ×/÷ {statistics.median(widths):.3f} "
                f"(median; {min(widths):.3f} to {max(widths):.3f})"
            )
    print(
        f"all: {inside_all} of {total_all} inside ({100 * inside_all / max(total_all, 1):.1f} %),"
        f" load {os.getloadavg()[0]:.1f} at the end"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
