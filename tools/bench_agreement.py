"""One function three ways: `jitbench.bench`, a suite file under `jitbench run`, and the
pytest fixture. Do their results agree, what does each cost, and how long does a first
result take?

Each way runs in a fresh process, as a user would start it, on the same function (the
jit tutorial's selu on `--n` float32 values from -5 to 5), with the same budget and
worker processes. Prints:

- first result: the wall time of a script calling `jitbench.bench(...)`, and of the
  example notebook's first cell on a real kernel (nbclient; the kernel's start apart);
  with `--install`, also a fresh venv (`python -m venv`), `pip install` of this checkout
  into it and that script under the venv's Python. The venv borrows this environment's
  dependencies (a .pth file, as tests/test_install.py does): what is timed is jitbench's
  own install, not downloading JAX;
- overhead: each way's wall time (start, imports, measuring, writing the run), bench's
  over `jitbench run`'s;
- agreement: NumPy, eager and jit times and jit's speedup with their 95 % intervals from
  each way, and whether every pair of intervals overlaps.

    python tools/bench_agreement.py
    python tools/bench_agreement.py --n 1000000 --budget 0.4 --processes 2 --repeats 3
    python tools/bench_agreement.py --install
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from importlib.metadata import entry_points
from pathlib import Path

from jitbench.results import Mode, Run, load_run
from jitbench.results.analysis import Estimate, analyse

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "examples" / "jit_worth_it.ipynb"
PLUGIN = "jitbench.interactive.pytest_plugin"

FUNCTION = """
import jax.numpy as jnp
import numpy as np


def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)


def selu_np(x, alpha=1.67, lmbda=1.05):
    return lmbda * np.where(x > 0, x, alpha * np.exp(x) - alpha)


def values(n):
    return np.linspace(-5, 5, n, dtype=np.float32)
"""

BENCH = (
    FUNCTION
    + """
import sys
import jitbench

r = jitbench.bench(
    selu, values({n}), numpy=selu_np, budget={budget}, processes={processes}, name="selu"
)
print(r, file=sys.stderr)
r.save(sys.argv[1])
"""
)

SUITE = (
    FUNCTION
    + """
from jitbench import workload


def inputs(rng, *, dtype, n):
    return (values(n),)


SELU = workload(selu, inputs=inputs, numpy=selu_np, sizes={{"given": {{"n": {n}}}}}, name="selu")
"""
)

TEST = (
    FUNCTION
    + """

def test_selu(jitbench):
    jitbench(selu, values({n}), numpy=selu_np, name="selu")
"""
)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.setdefault("JAX_PLATFORMS", "cpu")
    return env


def _timed(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])}… failed ({done.returncode}):\n{done.stderr}")
    return wall


def way_bench(work: Path, args: argparse.Namespace) -> tuple[float, Run]:
    script = work / "bench_selu.py"
    script.write_text(BENCH.format(n=args.n, budget=args.budget, processes=args.processes))
    out = work / "bench.json"
    out.unlink(missing_ok=True)
    wall = _timed([sys.executable, str(script), str(out)], work)
    return wall, load_run(out)


def way_run(work: Path, args: argparse.Namespace) -> tuple[float, Run]:
    suite = work / "selu_suite.py"
    suite.write_text(SUITE.format(n=args.n))
    out = work / "run-out"
    cmd = [sys.executable, "-m", "jitbench", "run", "--suite", str(suite), "--sizes", "given"]
    cmd += ["--budget", str(args.budget), "--processes", str(args.processes), "--out", str(out)]
    before = set((out / "runs").glob("*.json"))
    wall = _timed(cmd, work)
    [path] = set((out / "runs").glob("*.json")) - before
    return wall, load_run(path)


def way_pytest(work: Path, args: argparse.Namespace) -> tuple[float, Run]:
    tests = work / "tests"
    tests.mkdir(exist_ok=True)
    (tests / "test_selu.py").write_text(TEST.format(n=args.n))
    out = work / "pytest-out"
    installed = any(ep.value == PLUGIN for ep in entry_points(group="pytest11"))
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    cmd += [] if installed else ["-p", PLUGIN]
    cmd += ["--jitbench-save", str(out), "--jitbench-budget", str(args.budget)]
    cmd += ["--jitbench-processes", str(args.processes), str(tests)]
    before = set((out / "runs").glob("*.json"))
    wall = _timed(cmd, tests)
    [path] = set((out / "runs").glob("*.json")) - before
    return wall, load_run(path)


def fresh_install(work: Path, args: argparse.Namespace) -> tuple[float, float, float]:
    """(venv, pip install, first result) seconds: a fresh venv, this checkout installed
    into it, and the bench script run by the venv's Python from an empty folder."""
    src = work / "src"
    shutil.copytree(
        REPO,
        src,
        ignore=shutil.ignore_patterns(".git", ".venv", "reports", "*.egg-info", "__pycache__"),
    )
    venv = work / "venv"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    made = time.perf_counter() - start
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(purelib, "_borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.setdefault("JAX_PLATFORMS", "cpu")
    cmd = [str(python), "-m", "pip", "install", "-q", "--no-deps"]  # setuptools: fetched
    start = time.perf_counter()
    subprocess.run([*cmd, "--ignore-installed", str(src)], check=True, env=env)
    installed = time.perf_counter() - start
    empty = work / "empty"
    empty.mkdir()
    script = empty / "first.py"
    script.write_text(BENCH.format(n=args.n, budget=args.budget, processes=args.processes))
    start = time.perf_counter()
    subprocess.run(
        [str(python), str(script), str(empty / "run.json")],
        cwd=empty,
        env=env,
        check=True,
        capture_output=True,
    )
    first = time.perf_counter() - start
    return made, installed, first


def notebook_first_cell() -> tuple[float, float]:
    """(kernel start, the first code cell's execution) in seconds, on a real kernel."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    nb.cells = nb.cells[: first + 1]
    os.environ.update(_env())
    client = NotebookClient(nb, timeout=600, kernel_name="python3")
    start = time.perf_counter()
    with client.setup_kernel():
        started = time.perf_counter() - start
        cell_start = time.perf_counter()
        client.execute_cell(nb.cells[first], first)
        cell = time.perf_counter() - cell_start
    return started, cell


def _estimate(e: Estimate | None, unit: str) -> str:
    if e is None:
        return "—"
    scale = {"s": 1.0, "ms": 1e3, "µs": 1e6}[unit]
    if e.low is None or e.high is None:
        return f"{e.value * scale:.4g}"
    return f"{e.value * scale:.4g} [{e.low * scale:.4g}–{e.high * scale:.4g}]"


def _figures(run: Run) -> dict[str, Estimate | None]:
    a = analyse(run)
    [case] = run.cases()
    return {
        "numpy": a.time(case, Mode.NUMPY),
        "eager": a.time(case, Mode.EAGER),
        "jit": a.time(case, Mode.JIT),
        "speedup": a.speedup(case, Mode.JIT),
    }


def _overlap(a: Estimate | None, b: Estimate | None) -> bool:
    if a is None or b is None:
        return False
    if a.low is None or a.high is None or b.low is None or b.high is None:
        return False
    return max(a.low, b.low) <= min(a.high, b.high)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="elements (default 100000)")
    parser.add_argument("--budget", type=float, default=0.2, help="seconds per case (0.2)")
    parser.add_argument("--processes", type=int, default=2, help="worker processes (2)")
    parser.add_argument("--repeats", type=int, default=1, help="times each way runs (1)")
    parser.add_argument("--no-notebook", action="store_true", help="skip the notebook")
    parser.add_argument(
        "--install", action="store_true", help="also time a fresh venv's install to a result"
    )
    args = parser.parse_args()

    ways = {"bench()": way_bench, "jitbench run": way_run, "pytest fixture": way_pytest}
    walls: dict[str, list[float]] = {w: [] for w in ways}
    runs: dict[str, Run] = {}
    with tempfile.TemporaryDirectory(prefix="bench-agreement-") as tmp:
        work = Path(tmp)
        for _ in range(args.repeats):
            for way, fn in ways.items():
                wall, runs[way] = fn(work, args)
                walls[way].append(wall)

    print(
        f"selu on {args.n:,} float32 values, budget {args.budget:g} s, "
        f"{args.processes} process(es); wall times are medians of {args.repeats}"
    )
    print("\nfirst result")
    first = statistics.median(walls["bench()"])
    print(f"  a script: import jitbench, numpy, jax; bench(selu, x): {first:.2f} s")
    if args.install:
        with tempfile.TemporaryDirectory(prefix="bench-install-") as tmp:
            made, installed, after = fresh_install(Path(tmp), args)
        print(
            f"  fresh venv {made:.2f} s + pip install of jitbench {installed:.2f} s + that "
            f"script {after:.2f} s = {made + installed + after:.2f} s (dependencies borrowed)"
        )
    if not args.no_notebook:
        started, cell = notebook_first_cell()
        print(
            f"  notebook's first cell (nbclient, real kernel): {cell:.2f} s, after the "
            f"kernel's start {started:.2f} s (default budget and processes)"
        )

    print("\nwall time per way (fresh process: start, imports, measuring, the run's file)")
    base = statistics.median(walls["jitbench run"])
    for way in ways:
        wall = statistics.median(walls[way])
        print(f"  {way:<15} {wall:6.2f} s  ({wall - base:+.2f} s vs jitbench run)")

    print("\nagreement (last repeat; 95 % intervals: from run to run, over the processes)")
    figures = {way: _figures(run) for way, run in runs.items()}
    header = f"  {'':<15} {'numpy µs':>24} {'eager µs':>24} {'jit µs':>24} {'jit speedup':>22}"
    print(header)
    for way, f in figures.items():
        print(
            f"  {way:<15} {_estimate(f['numpy'], 'µs'):>24} {_estimate(f['eager'], 'µs'):>24} "
            f"{_estimate(f['jit'], 'µs'):>24} {_estimate(f['speedup'], 's'):>22}"
        )
    names = list(figures)
    disagreements = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            for key in ("numpy", "eager", "jit", "speedup"):
                if not _overlap(figures[a][key], figures[b][key]):
                    disagreements.append(f"{key}: {a} vs {b}")
    pairs = 4 * len(names) * (len(names) - 1) // 2
    print(
        f"  intervals that overlap: {pairs - len(disagreements)} of {pairs}"
        + (f" (apart: {'; '.join(disagreements)})" if disagreements else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
