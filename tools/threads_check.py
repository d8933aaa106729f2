"""Check that `jitbench run --threads` measures what a plain `timeit` measures (not a test).

For gemm at M (`a @ b`, 700×700 float32, suites/linalg.py), NumPy only, in alternating
rounds:

1. `jitbench run gemm -s M -m numpy --threads 1` against `timeit` of `a @ b` in a fresh
   process with OPENBLAS_NUM_THREADS=1 (target: within 10 %);
2. `--threads all` against the same `timeit` with OpenBLAS's default threads.

It prints every pair, the median difference per setting, the load average before and after,
and the machine banner jitbench recorded (busy or noisy machines make both sides drift).

Usage: python tools/threads_check.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}
N = 700  # gemm's M preset

TIMEIT_SNIPPET = r"""
import json, statistics, sys, timeit
import numpy as np
n = int(sys.argv[1])
rng = np.random.default_rng(0)
a = rng.standard_normal((n, n)).astype(np.float32)
b = rng.standard_normal((n, n)).astype(np.float32)
a @ b
t = timeit.Timer("a @ b", globals=globals())
number, _ = t.autorange()
per_call = [s / number for s in t.repeat(repeat=25, number=number)]
print(json.dumps({"median_s": statistics.median(per_call), "number": number}))
"""


def jitbench_median(threads: str) -> tuple[float, str | None, str]:
    """NumPy's median for gemm[M] from `jitbench run`, its machine banner, its thread line."""
    from jitbench.measure.threads import recorded_summary
    from jitbench.results.analysis import machine

    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "jitbench", "run", "gemm", "-s", "M", "-m", "numpy"]
        subprocess.run(
            [*cmd, "--threads", threads, "--out", out],
            cwd=REPO,
            env=ENV,
            check=True,
            capture_output=True,
            text=True,
        )
        [path] = Path(out, "runs").glob("*.json")
        data = json.loads(path.read_text())
    [m] = data["measurements"]
    env = data["environment"]
    return m["summary"]["median"], machine.banner(env), recorded_summary(env) or "?"


def timeit_median(openblas_threads: str | None) -> float:
    env = {k: v for k, v in ENV.items() if k != "OPENBLAS_NUM_THREADS"}
    if openblas_threads is not None:
        env["OPENBLAS_NUM_THREADS"] = openblas_threads
    out = subprocess.run(
        [sys.executable, "-c", TIMEIT_SNIPPET, str(N)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return float(json.loads(out.splitlines()[-1])["median_s"])


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds")
    args = parser.parse_args()
    print(f"load average before: {load()} on {os.cpu_count()} cores")
    settings = (
        ("--threads 1", "1", "1"),
        ("--threads all", "all", None),
    )
    for label, threads, openblas in settings:
        what = f"OPENBLAS_NUM_THREADS={openblas}" if openblas else "default OpenBLAS threads"
        print(f"gemm[M] NumPy: jitbench run {label} vs timeit of a @ b ({what}, fresh process)")
        diffs = []
        for _ in range(args.rounds):
            ours, banner, thread_line = jitbench_median(threads)
            theirs = timeit_median(openblas)
            diffs.append(ours / theirs - 1)
            print(
                f"   jitbench {ours * 1e3:7.2f} ms   timeit {theirs * 1e3:7.2f} ms   "
                f"diff {100 * diffs[-1]:+6.1f} %   [{thread_line}]"
            )
            if banner:
                print(f"      jitbench says: {banner}")
        target = "  (target within ±10 %)" if threads == "1" else ""
        print(f"   median diff {100 * statistics.median(diffs):+6.1f} %{target}")
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
