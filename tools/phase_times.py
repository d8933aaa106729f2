"""Where each process of a `jitbench run` spends its wall time, step by step.

Runs `python -m jitbench run ARGS` with the protocol's steps wrapped by a timer in every
process of the run (the first, its `--processes` workers and extra processes), through a
`sitecustomize` module on PYTHONPATH that only this tool puts there. Each process writes
its totals when it exits; the tool then prints one line per process:

- inputs: making the case's inputs, or loading those the group's leader made
  (`shared_inputs`);
- NumPy reference: the NumPy side's first call, the reference the others are checked
  against;
- cold first calls: one clear of JAX's caches, then each JAX mode's first call (compiles
  in the process leading the group, loaded programs in the others), with validation
  against NumPy;
- warm-up and calibration; sampling (the samples and their re-warm calls);
- checkpoints (the run file written after each case);
- the rest: start-up (imports, JAX's backend), planning, pooling, the report; for the
  first process, less the time it waited for the others (their lifetimes).

A second table shows parts inside those steps, mostly inside the cold first calls: XLA's
compiles and JAX's lowering to MLIR (the durations JAX's monitoring events report, in any
step; the backend-compile event also times a program loaded from the first process's,
so a worker's "XLA compiles" are loads), validation against NumPy, and clearing JAX's
caches.

Processes that measured nothing (multiprocessing's resource tracker) are left out.

The wrapping adds a few microseconds per step, a few hundred steps a run.

    python tools/phase_times.py                   # the default run
    python tools/phase_times.py -- -s S selu gemm
"""

from __future__ import annotations

import argparse
import atexit
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
ENV = "JITBENCH_PHASE_TIMES"  # the folder each process writes its totals to
STEPS = (
    "inputs",
    "NumPy reference",
    "cold first calls",
    "warm-up",
    "sampling",
    "checkpoints",
)
INSIDE = ("XLA compiles", "lowering", "validation", "cache clears")


def install(folder: str) -> None:
    """Wrap the protocol's steps in this process; write the totals to `folder` at exit."""
    import multiprocessing

    import jax

    from jitbench import api
    from jitbench.measure import compilation, opening, session

    started = time.perf_counter()
    totals = dict.fromkeys(STEPS + INSIDE, 0.0)

    def timed(owner: Any, name: str, step: str) -> None:
        fn: Callable[..., Any] = getattr(owner, name)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                totals[step] += time.perf_counter() - t0

        setattr(owner, name, wrapper)

    timed(opening, "shared_inputs", "inputs")
    timed(opening, "_numpy_reference", "NumPy reference")
    timed(opening, "_cold_first_calls", "cold first calls")
    timed(opening, "warm_up_and_calibrate", "warm-up")
    timed(session, "sample_interleaved", "sampling")
    timed(api, "save_run", "checkpoints")
    timed(opening, "_validate", "validation")
    timed(compilation, "clear_caches", "cache clears")
    events = {
        compilation.BACKEND_COMPILE_EVENT: "XLA compiles",
        compilation.LOWER_EVENT: "lowering",
    }

    def on_duration(event: str, duration_secs: float, **_: Any) -> None:
        if event in events:
            totals[events[event]] += duration_secs

    jax.monitoring.register_event_duration_secs_listener(on_duration)

    def write() -> None:
        record = {
            "process": multiprocessing.current_process().name,
            "started": started,
            "seconds": time.perf_counter() - started,
            "steps": totals,
        }
        Path(folder, f"{os.getpid()}.json").write_text(json.dumps(record))

    atexit.register(write)


_SITECUSTOMIZE = f"""
import os
if os.environ.get({ENV!r}):
    import sys
    sys.path.insert(0, {str(REPO / "tools")!r})
    import phase_times
    phase_times.install(os.environ[{ENV!r}])
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_args", nargs="*", help="arguments for `jitbench run` (after --)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="jitbench-phases-") as tmp:
        site, times, out = Path(tmp, "site"), Path(tmp, "times"), Path(tmp, "out")
        site.mkdir()
        times.mkdir()
        (site / "sitecustomize.py").write_text(_SITECUSTOMIZE)
        path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
        env = {**os.environ, "PYTHONPATH": path, ENV: str(times)}
        t0 = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "jitbench", "run", "--out", str(out), *args.run_args],
            env=env,
            stdout=subprocess.DEVNULL,
            check=False,
        )
        wall = time.perf_counter() - t0
        records = sorted(
            (json.loads(p.read_text()) for p in times.glob("*.json")), key=lambda r: r["started"]
        )
    records = [r for r in records if any(r["steps"].values())]
    waited = sum(r["seconds"] for r in records[1:])
    print(f"jitbench run {' '.join(args.run_args)}: {wall:.1f} s wall, exit {done.returncode}")
    print(f"{'process':<18}{'alive':>7}" + "".join(f"{s:>18}" for s in STEPS) + f"{'the rest':>10}")
    for index, r in enumerate(records):
        steps = r["steps"]
        rest = r["seconds"] - sum(steps[s] for s in STEPS) - (waited if index == 0 else 0.0)
        print(
            f"{r['process']:<18}{r['seconds']:>6.1f}s"
            + "".join(f"{steps[s]:>17.2f}s" for s in STEPS)
            + f"{rest:>9.1f}s"
        )
    if records:
        print(f"(the first process waited {waited:.1f} s for the others: their lifetimes)")
        print(f"\n{'inside the steps':<25}" + "".join(f"{s:>15}" for s in INSIDE))
        for r in records:
            print(f"{r['process']:<25}" + "".join(f"{r['steps'][s]:>14.2f}s" for s in INSIDE))


if __name__ == "__main__":
    main()
