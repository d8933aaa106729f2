"""Time the NumPy side of every workload at each size preset on this machine's core.

The default suite aims for NumPy taking about 1 / 10 / 100 ms at S / M / L on one core.
This prints, per workload and preset, the NumPy time per call (timeit autorange, best of 3
repeats), its ratio to the target and the parameters, so presets can be retuned by hand.

By default the clock is this process's CPU time and BLAS/OpenMP are pinned to one thread,
so the figure is the time on one dedicated core even when other jobs share the machine
(wall-clock timings on a loaded machine inflate by the load factor). `--clock wall` and
`--threads 0` (library default threading) give what `jitbench run` sees instead.

    python tools/calibrate_suite.py [--suite suites] [-k EXPR] [--sizes S,M,L]
                                    [--clock cpu|wall] [--threads N] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import timeit
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")


def _pin_threads(argv: list[str]) -> None:
    # Thread counts must be set before numpy (and its BLAS) is first imported.
    threads = "1"
    for i, arg in enumerate(argv):
        if arg == "--threads" and i + 1 < len(argv):
            threads = argv[i + 1]
        elif arg.startswith("--threads="):
            threads = arg.split("=", 1)[1]
    if threads != "0":
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = threads


_pin_threads(sys.argv[1:])
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's jitbench

from jitbench.suite.discovery import discover  # noqa: E402  (after the thread pinning above)

TARGET_S = {"S": 1e-3, "M": 1e-2, "L": 1e-1}


def numpy_seconds_per_call(wl, params, *, clock, dtype: str = "float32") -> float:
    """Best-of-3 seconds per call of the NumPy side, each repeat autoranged to >= 0.2 s."""
    inputs = wl.make_inputs(params, dtype=dtype)
    kwargs = {**inputs.kwargs, **inputs.static}
    fn, args = wl.numpy_fn, inputs.args
    timer = timeit.Timer(lambda: fn(*args, **kwargs), timer=clock)
    number, _ = timer.autorange()
    return min(timer.repeat(repeat=3, number=number)) / number


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", action="append", default=[])
    parser.add_argument("-k", dest="keyword", default=None)
    parser.add_argument("--sizes", default="S,M,L")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    parser.add_argument("--threads", default="1", help="BLAS threads; 0 = library default")
    parser.add_argument("--json", dest="json_path", default=None)
    ns = parser.parse_args(argv)
    registry = discover(ns.suite or ["suites"])
    for err in registry.errors:
        print(f"suite error: {err}", file=sys.stderr)
    clock = time.process_time if ns.clock == "cpu" else time.perf_counter
    print(f"# clock={ns.clock} threads={ns.threads} load average={os.getloadavg()}")
    sizes = [s.strip() for s in ns.sizes.split(",") if s.strip()]
    rows = []
    print(f"{'workload':<20} {'size':<4} {'numpy ms':>10} {'x target':>9}  params")
    for wl in registry.select(keyword=ns.keyword):
        for size in sizes:
            if size not in wl.sizes:
                continue
            params = dict(wl.sizes[size])
            secs = numpy_seconds_per_call(wl, params, clock=clock)
            ratio = secs / TARGET_S[size] if size in TARGET_S else float("nan")
            rows.append(
                {
                    "workload": wl.name,
                    "size": size,
                    "numpy_s": secs,
                    "target_ratio": ratio,
                    "params": params,
                }
            )
            print(
                f"{wl.name:<20} {size:<4} {secs * 1e3:>10.3f} {ratio:>9.2f}  {params}", flush=True
            )
    if ns.json_path:
        Path(ns.json_path).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
