"""Print jit vs sharded medians, speedup over one device and scaling efficiency for a few
default-suite workloads at M, on 2 and 4 forced CPU devices (not a test).

Each device count is a fresh `jitbench run ... -m jit,sharded --threads all` process with
XLA_FLAGS=--xla_force_host_platform_device_count=N (the flag only counts before JAX
starts). Forced host devices share the machine's cores, so this proves the machinery, not
how a workload scales over real devices: on a machine of few cores efficiency stays at or
below 1, often far below (docs: validation, "Sharded mode on forced devices").

Usage: python tools/sharded_check.py [--devices 2,4] [--budget 0.5] [NAMES...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NAMES = ("selu", "gelu", "softmax", "gemm")


def measure(devices: int, names: list[str], budget: float) -> list[dict[str, object]]:
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={devices}"
    env = {**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu", "XLA_FLAGS": flags}
    with tempfile.TemporaryDirectory() as out:
        command = [
            *(sys.executable, "-m", "jitbench", "run", *names, "-s", "M"),
            *("-m", "jit,sharded", "--threads", "all", "--budget", str(budget), "--out", out),
        ]
        subprocess.run(command, env=env, cwd=REPO, check=True, capture_output=True, text=True)
        (path,) = Path(out, "runs").glob("*.json")
        data = json.loads(path.read_text())
    rows = []
    for m in data["measurements"]:
        if m["mode"] != "sharded":
            continue
        jit = next(j for j in data["measurements"] if j["mode"] == "jit" and j["case"] == m["case"])
        scaling = m.get("scaling") or {}
        rows.append(
            {
                "workload": m["case"]["workload"],
                "devices": devices,
                "jit_s": (jit.get("summary") or {}).get("median"),
                "sharded_s": (m.get("summary") or {}).get("median"),
                "speedup": (scaling.get("speedup") or {}).get("value"),
                "efficiency": (scaling.get("efficiency") or {}).get("value"),
                "split": (m.get("sharding") or {}).get("split_axes"),
                "status": m["status"],
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=list(NAMES))
    parser.add_argument("--devices", default="2,4", help="forced CPU device counts")
    parser.add_argument("--budget", type=float, default=0.5, help="seconds per case")
    args = parser.parse_args()
    print(f"{'workload':<10} {'dev':>3} {'jit':>10} {'sharded':>10} {'×1 dev':>7} {'eff.':>6}")
    for devices in (int(n) for n in args.devices.split(",")):
        for row in measure(devices, args.names, args.budget):
            if row["status"] != "ok":
                print(f"{row['workload']:<10} {devices:>3} {row['status']}")
                continue
            print(
                f"{row['workload']:<10} {devices:>3} {row['jit_s'] * 1e6:>8.1f}µs "  # type: ignore[operator]
                f"{row['sharded_s'] * 1e6:>8.1f}µs {row['speedup']:>6.2f}× "  # type: ignore[operator]
                f"{row['efficiency'] * 100:>5.0f}%  split {row['split']}"  # type: ignore[operator]
            )


if __name__ == "__main__":
    main()
