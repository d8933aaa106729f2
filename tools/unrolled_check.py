"""How jitbench's own analysis of a compiled program scales: unrolled Python loops.

A cumulative sum written as an N-step Python loop under jit (`acc = acc + x[i]`, then
`jnp.stack`) is the unrolled-loop pitfall: XLA's program, and its text, grow faster than N.
For each N this compiles the loop cold, as `jitbench run` does (`compilation.cold_call`,
XLA's compile seconds from JAX's events, what `CompileInfo.compile_s` records), then
times what jitbench does with the compiled program, as `prepare_jit` and the run's
program archive do: `cached_analysis` (the cached executable found again, cost and memory
analysis, the HLO text, its normalisation and fingerprints), of which the HLO text
(`as_text`) and the normalisation (`program_texts`) apart, and the program as the archive
keeps it (`files.trimmed_program`, gzip). It prints XLA's seconds, jitbench's, their
ratio, the HLO text's size and the normalised text's. `--bench N` then measures the
N-step loop with `jitbench.bench` (one process) and prints its wall time and what its
run recorded.

    python tools/unrolled_check.py [--steps 100 250 500 1000] [--bench 1000]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's jitbench

import jax
import jax.numpy as jnp
import numpy as np

from jitbench.measure import compilation
from jitbench.results import files


def unrolled_cumsum(steps: int) -> Callable[[Any], Any]:
    """A cumulative sum of `x[:steps]` as a Python loop (unrolled by tracing)."""

    def cumsum_loop(x: Any) -> Any:
        out = []
        acc = jnp.zeros((), x.dtype)
        for i in range(steps):
            acc = acc + x[i]
            out.append(acc)
        return jnp.stack(out)

    return cumsum_loop


def _mb(chars: int) -> str:
    return f"{chars / 1e6:8.2f}"


def check(steps: int) -> dict[str, float]:
    """One N: XLA's compile and jitbench's analysis of its program, in seconds."""
    x = jnp.ones(steps, jnp.float32)
    jitted = jax.jit(unrolled_cumsum(steps))
    compilation.clear_caches()
    cold = compilation.cold_call(lambda: jitted(x).block_until_ready(), clear=False)
    xla_s = cold.stage_s(compilation.BACKEND_COMPILE_EVENT) or float("nan")
    t0 = time.perf_counter()
    analysis, compiles = compilation.cached_analysis(jitted, args=(x,), kwargs={})
    t1 = time.perf_counter()
    text = analysis.program_text or ""
    body = json.dumps({"programs": {"k": files.trimmed_program(text)}}).encode()
    gzip.compress(body, mtime=0)
    t2 = time.perf_counter()
    # The parts, again: the executable's text, and its normalisation.
    compiled = jitted.trace(x).lower().compile()
    t3 = time.perf_counter()
    hlo = compiled.as_text()
    t4 = time.perf_counter()
    compilation.program_texts(hlo)
    t5 = time.perf_counter()
    assert compiles == 0, "the analysis compiled again"
    return {
        "steps": steps,
        "xla_s": xla_s,
        "first_call_s": cold.seconds,
        "analysis_s": (t1 - t0) + (t2 - t1),
        "as_text_s": t4 - t3,
        "normalise_s": t5 - t4,
        "archive_s": t2 - t1,
        "hlo_chars": len(hlo),
        "program_chars": len(text),
    }


def bench(steps: int) -> None:
    """The N-step loop measured by `jitbench.bench` in one process: wall time, and what
    its run recorded of the jit compile."""
    import jitbench

    fn = unrolled_cumsum(steps)
    x = np.ones(steps, np.float32)
    t0 = time.perf_counter()
    numpy_side = np.cumsum  # the same sum, in the same order
    result = jitbench.bench(
        fn, x, numpy=lambda x: numpy_side(x), processes=1, name=f"cumsum_loop{steps}"
    )
    wall = time.perf_counter() - t0
    jit = next(m for m in result.run.measurements if m.mode.value == "jit")
    c = jit.compile
    print(f"\njitbench.bench of the {steps}-step loop (1 process): {wall:.1f} s wall")
    for m in result.run.measurements:
        print(f"  {m.mode.value:6s} {m.status.value:8s} {len(m.samples_s):4d} samples")
    if c is not None:
        print(
            f"  jit: first call {c.first_call_s:.1f} s, XLA compile {c.compile_s or 0:.1f} s, "
            f"program fingerprint {c.program_fingerprint}"
        )
    for m in result.run.measurements:
        for d in m.diagnostics:
            print(f"  {m.mode.value}: {d.code}: {d.message}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[100, 250, 500, 1000])
    parser.add_argument("--bench", type=int, default=None, metavar="N")
    args = parser.parse_args(argv)
    print(
        f"{'steps':>5s} {'XLA s':>7s} {'jitbench s':>10s} {'ratio':>6s} {'as_text s':>9s} "
        f"{'normalise s':>11s} {'archive s':>9s} {'HLO MB':>8s} {'program MB':>10s}",
        flush=True,
    )
    for steps in args.steps:
        r = check(steps)
        print(
            f"{steps:5d} {r['xla_s']:7.2f} {r['analysis_s']:10.2f} "
            f"{r['analysis_s'] / r['xla_s']:6.1%} {r['as_text_s']:9.2f} {r['normalise_s']:11.2f} "
            f"{r['archive_s']:9.2f} {_mb(int(r['hlo_chars']))} {_mb(int(r['program_chars'])):>10s}",
            flush=True,
        )
    if args.bench:
        bench(args.bench)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
