"""How long each `jitbench` command takes to start, in fresh processes.

Runs every command several times as `python -m jitbench ...` (this checkout's code), and
prints per command the median wall time and CPU time (user + system of the child, which a
loaded machine inflates less than wall time), and which heavy libraries it imported
(from one extra run under `python -X importtime`). A command's `--help` is its start: the
command line imports and parses, and each command imports what it needs when it runs.
`report` and `compare` are also timed doing their work on a small run file
(`tests/results/fixtures/run-schema-1.3.json` unless `--run` is given).

    python tools/startup_time.py
    python tools/startup_time.py --repeats 9 --run reports/runs/RUN.json
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "results" / "fixtures" / "run-schema-1.3.json"
#: Libraries whose import the start of a command should not pay for unless it needs them.
HEAVY = ("jax", "scipy", "numpy", "plotly", "jinja2", "jsonschema")
#: The startup target of issue 20 for `--help`, `report` and `compare`.
TARGET_S = 0.5


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("JAX_PLATFORMS", "cpu")
    env.pop("COLUMNS", None)
    return env


def _time_once(argv: Sequence[str], cwd: Path) -> tuple[float, float, int]:
    """(wall seconds, child CPU seconds, exit code) of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        argv, cwd=cwd, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.returncode


def heavy_imports(argv: Sequence[str], cwd: Path) -> dict[str, float]:
    """Seconds (cumulative, as `-X importtime` reports them) of each `HEAVY` library the
    command imported."""
    traced = [argv[0], "-X", "importtime", *argv[1:]]
    proc = subprocess.run(
        traced, cwd=cwd, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    found: dict[str, float] = {}
    for line in proc.stderr.splitlines():
        # "import time:       self [us] |  cumulative | imported package"
        parts = line.removeprefix("import time:").split("|")
        if len(parts) != 3 or not line.startswith("import time:"):
            continue
        module = parts[2].strip()
        if module in HEAVY and parts[1].strip().isdigit():
            found[module] = max(found.get(module, 0.0), int(parts[1]) / 1e6)
    return found


def commands(run_file: Path, out_dir: Path) -> list[tuple[str, list[str], Path]]:
    """(label, argv, cwd) of every command timed."""
    py = sys.executable
    jb = [py, "-m", "jitbench"]
    run = str(run_file)
    rows: list[tuple[str, list[str], Path]] = [
        ("python -c pass (interpreter floor)", [py, "-c", "pass"], REPO),
        ("python -c 'import jax' (reference)", [py, "-c", "import jax"], REPO),
        ("jitbench --help", [*jb, "--help"], REPO),
    ]
    for command in ("run", "list", "profile", "report", "compare", "env"):
        rows.append((f"jitbench {command} --help", [*jb, command, "--help"], REPO))
    rows += [
        ("jitbench report RUN --markdown -", [*jb, "report", run, "--markdown", "-"], REPO),
        ("jitbench compare RUN RUN", [*jb, "compare", run, run], REPO),
        ("jitbench report RUN (HTML)", [*jb, "report", run, "--out", str(out_dir)], REPO),
        ("jitbench list (default suite)", [*jb, "list"], REPO),
    ]
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5, help="fresh processes per command")
    ap.add_argument("--run", type=Path, default=FIXTURE, help="run file for report/compare")
    ns = ap.parse_args(argv)
    if ns.repeats < 1:
        ap.error("--repeats must be at least 1")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        rows = commands(ns.run.resolve(), Path(tmp))
        print(f"{'command':<40} {'wall median (min-max)':>24} {'CPU median':>11}  heavy imports")
        for label, cmd, cwd in rows:
            results = [_time_once(cmd, cwd) for _ in range(ns.repeats)]
            walls = [w for w, _, _ in results]
            cpus = [c for _, c, _ in results]
            codes = {code for _, _, code in results}
            imported = heavy_imports(cmd, cwd)
            heavy = ", ".join(f"{k} {v:.2f}s" for k, v in sorted(imported.items())) or "none"
            failed = "" if codes == {0} else f"  (exit {sorted(codes)})"
            wall = f"{statistics.median(walls):.3f} ({min(walls):.3f}-{max(walls):.3f})"
            print(f"{label:<40} {wall:>24} {statistics.median(cpus):>10.3f}s  {heavy}{failed}")
    load_after = os.getloadavg()
    print(
        f"\n{ns.repeats} fresh processes per command; seconds; load average "
        f"{load_before[0]:.2f} before, {load_after[0]:.2f} after, on {os.cpu_count()} CPUs. "
        f"Target for --help, report and compare: start under {TARGET_S} s."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
