"""How much does this machine's speed drift, and over what time scale?

Times one small jitted call (logsumexp of 256×256 float32) in back-to-back samples of
about 10 ms for SECONDS, then prints the autocorrelation of the log sample times at a few
lags and how much the median of 25 samples varies when they are taken back to back versus
spread out (every 16th sample). On a quiet dedicated machine both are small; on a shared one
the spread samples vary far less, which is why `jitbench run --rounds` exists.

Usage: python tools/drift_probe.py [SECONDS]   (default 30)
"""

from __future__ import annotations

import sys
import time

import jax
import numpy as np


def main() -> int:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 30.0
    x = jax.device_put(np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32))
    f = jax.jit(lambda a: jax.nn.logsumexp(a, axis=1))
    for _ in range(100):
        f(x).block_until_ready()
    calls, times = 100, []
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end:
        t0 = time.perf_counter()
        for _ in range(calls):
            out = f(x)
        out.block_until_ready()
        times.append((time.perf_counter() - t0) / calls)
    logs = np.log(np.array(times))
    n, sample_ms = len(logs), seconds / len(logs) * 1e3
    print(f"{n} samples of {sample_ms:.1f} ms; sd of log sample time {logs.std():.3f}")
    centred = logs - logs.mean()
    for lag in (1, 2, 5, 10, 20, 50, 100, 200):
        if lag < n:
            r = np.dot(centred[:-lag], centred[lag:]) / np.dot(centred, centred)
            print(f"autocorrelation at lag {lag} ({lag * sample_ms:.0f} ms): {r:.2f}")
    block = [np.median(logs[i : i + 25]) for i in range(0, n - 24, 25)]
    spread = [np.median(logs[j::16][:25]) for j in range(16)]
    print(f"sd of the median of 25 samples back to back: {np.std(block):.3f}")
    print(f"sd of the median of 25 samples taken every 16th: {np.std(spread):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
