"""jitbench's NumPy medians and jit/NumPy speedups beside NPBench's own harness.

For each kernel named, NPBench's `run_benchmark.py -f numpy` and `-f jax` run from the
clone (as its README says, in a scratch folder that gets its `npbench.db`), `--repeat`
timings each; their medians and their own spread (the lowest and highest of the
repeats) are read back from that database. jitbench's figures come from a run file of the
same clone and preset (`jitbench run --suite npbench:PATH -s S -m numpy,jit`, or
tools/npbench_run.py): the time shown and the speedup shown (`jitbench.analyse`).

NPBench's jax timings include the copy of the inputs (`jnp.array` in its setup, which it
does not wait for, so the kernel's first access waits for it): where jitbench's recorded
staging time of the inputs is at least `--copy-share` of the jit time, NPBench's jit time
is not the kernel's and the kernel is left out of the speedup's agreement (marked "copy").

    python tools/npbench_harness.py PATH RUN.json -k atax,gemm,... [--repeat 10]
        [--harness-path DIR]   (its run_benchmark.py imports pygount)
"""

from __future__ import annotations

import argparse
import math
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's jitbench

from jitbench import analyse, load_run
from jitbench.results import Mode


def harness_times(
    clone: Path, kernel: str, framework: str, repeat: int, extra_path: str = ""
) -> list[float]:
    """NPBench's own timings (seconds) of `kernel` in `framework`, preset S (`extra_path`:
    where its own dependencies are, such as pygount, if not in this Python)."""
    with tempfile.TemporaryDirectory(prefix="npbench-harness-") as scratch:
        path = os.pathsep.join(p for p in (str(clone), extra_path) if p)
        env = {**os.environ, "PYTHONPATH": path, "JAX_PLATFORMS": "cpu"}
        done = subprocess.run(
            [
                sys.executable,
                str(clone / "run_benchmark.py"),
                "-b",
                kernel,
                "-f",
                framework,
                "-p",
                "S",
                "-r",
                str(repeat),
            ],
            cwd=scratch,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        db = Path(scratch) / "npbench.db"
        if done.returncode != 0 or not db.exists():
            tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["no output"]
            raise RuntimeError(f"NPBench's harness failed on {kernel} {framework}: {tail[0]}")
        with sqlite3.connect(db) as conn:
            rows = conn.execute(
                "SELECT time FROM results WHERE mode = 'main' AND details = 'default'"
            ).fetchall()
    return [float(t) for (t,) in rows]


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", help="the NPBench clone's top folder")
    parser.add_argument("run", help="a jitbench run file of the clone at S (numpy and jit)")
    parser.add_argument("-k", dest="kernels", required=True, help="kernels, comma separated")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--copy-share", type=float, default=0.1)
    parser.add_argument(
        "--harness-path", default="", help="where NPBench's harness finds its dependencies"
    )
    args = parser.parse_args(argv)

    clone = Path(args.path).resolve()
    run = load_run(args.run)
    figures = analyse(run)
    by_name = {c.case.workload: c for c in figures}
    one, five, fifteen = os.getloadavg()
    settings = run.config.settings
    assert settings is not None, "a run file records its settings"
    print(
        f"date {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; load {one:.2f} {five:.2f} "
        f"{fifteen:.2f}; jitbench run {run.run_id} ({settings.processes} "
        f"process(es), {'float64' if settings.x64 else 'float32'})"
    )
    print(
        f"{'kernel':18s} {'NumPy ms: NPBench [min-max]':>30s} {'jitbench':>9s} {'ratio':>6s}"
        f" {'speedup: NPBench [range]':>26s} {'jitbench':>9s} {'ratio':>6s}  note"
    )
    numpy_ratios: list[float] = []
    speedup_ratios: list[float] = []
    for kernel in args.kernels.split(","):
        case = by_name.get(kernel)
        if case is None or Mode.NUMPY not in case.figures or Mode.JIT not in case.figures:
            print(f"{kernel:18s} not in the run with NumPy and jit figures")
            continue
        np_fig, jit_fig = case.figures[Mode.NUMPY], case.figures[Mode.JIT]
        if np_fig.time is None or jit_fig.time is None or jit_fig.speedup is None:
            print(f"{kernel:18s} jitbench has no NumPy or jit time ({jit_fig.measurement.status})")
            continue
        try:
            np_times = harness_times(clone, kernel, "numpy", args.repeat, args.harness_path)
            jax_times = harness_times(clone, kernel, "jax", args.repeat, args.harness_path)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            print(f"{kernel:18s} {exc}")
            continue
        np_med, jax_med = statistics.median(np_times), statistics.median(jax_times)
        their_speedup = np_med / jax_med
        # Their spread: the speedup from the fastest and slowest repeats of each side.
        low, high = min(np_times) / max(jax_times), max(np_times) / min(jax_times)
        np_ratio = np_fig.time.value / np_med
        sp_ratio = jit_fig.speedup.value / their_speedup
        staging = jit_fig.measurement.transfer_s or 0.0
        copy = staging >= args.copy_share * jit_fig.time.value
        numpy_ratios.append(np_ratio)
        if not copy:
            speedup_ratios.append(sp_ratio)
        note = (
            f"copy: inputs take {_ms(staging)} ms to stage, jit {_ms(jit_fig.time.value)} ms"
            if copy
            else ""
        )
        print(
            f"{kernel:18s} {_ms(np_med):>10s} [{_ms(min(np_times))}-{_ms(max(np_times))}]"
            f"{'':>6s} {_ms(np_fig.time.value):>9s} {np_ratio:6.3f}"
            f" {their_speedup:>9.3g} [{low:.3g}-{high:.3g}]{'':>4s}"
            f" {jit_fig.speedup.value:>9.3g} {sp_ratio:6.3f}  {note}"
        )

    def geomean(xs: list[float]) -> str:
        return f"{math.exp(statistics.fmean(math.log(x) for x in xs)):.3f}" if xs else "-"

    within = sum(abs(r - 1) <= 0.05 for r in numpy_ratios)
    print(
        f"NumPy medians, jitbench ÷ NPBench: geomean {geomean(numpy_ratios)}, {within} of "
        f"{len(numpy_ratios)} within 5 %"
    )
    print(
        f"jit speedups, jitbench ÷ NPBench, where NPBench's jit time is the kernel's: geomean "
        f"{geomean(speedup_ratios)} over {len(speedup_ratios)} kernel(s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
