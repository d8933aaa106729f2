"""Does `ab --rev --metrics-only` flag changed programs, and only those, on a busy box?

Builds a scratch git repository from this checkout's default suite with four revisions
off one base commit, then runs `jitbench ab --rev base --rev-new REV --metrics-only`
TRIALS times for each, with HOG busy processes taking the cores (one a core takes them all):

- defeat: `selu` computes its exponential through float16 (two more converts: another
  program), expected to fail the gate naming selu;
- recompile: `selu`'s JAX side jits a fresh lambda on every call (eager recompiles per
  call), expected to fail naming selu's eager mode;
- names: `selu` with its parameters renamed and a comment added (the same program),
  expected to pass;
- empty: an empty commit (A/A), expected to pass.

Prints, per revision, how many trials gave the expected verdict, what moved (from the
comparison JSON), the median wall time of one comparison, and the load average.

    python tools/program_gate_check.py --trials 20 --hog 2
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SELU = "    return lmbda * xp.where(x > 0, x, alpha * xp.exp(x) - alpha)\n"
EDITS = {
    "defeat": SELU.replace("xp.exp(x)", "xp.exp(x.astype(xp.float16)).astype(x.dtype)"),
    "recompile": (
        "    if xp is not np:  # a fresh jitted lambda every call: eager recompiles each time\n"
        "        import jax\n\n"
        "        x = jax.jit(lambda y: y * 1.0)(x)\n" + SELU
    ),
    "names": "    # the same program under other names\n"
    "    return scale * xp.where(v > 0, v, alpha * xp.exp(v) - alpha)\n",
}
EXPECTED = {"defeat": 1, "recompile": 1, "names": 0, "empty": 0}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def scratch_repository(into: Path) -> Path:
    repo = into / "repo"
    shutil.copytree(REPO / "suites", repo / "suites")
    git(repo, "init", "-q", "-b", "base")
    git(repo, "-c", "user.email=a@b", "-c", "user.name=check", "add", "-A")
    git(repo, "-c", "user.email=a@b", "-c", "user.name=check", "commit", "-qm", "base")
    suite = repo / "suites" / "elementwise.py"
    source = suite.read_text()
    if SELU not in source:
        sys.exit("selu's body is not where this check expects it in suites/elementwise.py")
    for name in ("defeat", "recompile", "names", "empty"):
        git(repo, "checkout", "-q", "-b", name, "base")
        if name in EDITS:
            body = EDITS[name]
            if name == "names":
                new = source.replace(SELU, body).replace(
                    "def selu(xp, x, alpha=1.67, lmbda=1.05):",
                    "def selu(xp, v, alpha=1.67, scale=1.05):",
                )
            else:
                new = source.replace(SELU, body)
            suite.write_text(new)
        git(repo, "-c", "user.email=a@b", "-c", "user.name=check", "commit", "-qam", name,
            "--allow-empty")  # fmt: skip
    git(repo, "checkout", "-q", "base")
    return repo


def trial(repo: Path, rev: str, out: Path) -> tuple[int, float, list[str]]:
    """(exit code, wall seconds, what moved) of one `--metrics-only` comparison."""
    report = out / f"{rev}.json"
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "jitbench", "ab", "--rev", "base", "--rev-new", rev,
         "--metrics-only", "--out", str(out / "runs"), "--json", str(report)],
        cwd=repo, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    wall = time.perf_counter() - started
    moved = []
    if report.exists():
        for e in json.loads(report.read_text())["entries"]:
            program = e.get("program")
            if program and program["changed"]:
                moved.append(f"{e['workload']} {e['mode']}: {', '.join(program['moved'])}")
    if proc.returncode not in (0, 1):
        moved.append(f"exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}")
    return proc.returncode, wall, moved


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--hog", type=int, default=2, help="busy processes during the trials")
    args = parser.parse_args()
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.hog)]
    loads = []
    try:
        with tempfile.TemporaryDirectory(prefix="jitbench-program-gate-") as tmp:
            repo = scratch_repository(Path(tmp))
            for rev, expected in EXPECTED.items():
                codes, walls, said = [], [], set()
                for _ in range(args.trials):
                    code, wall, moved = trial(repo, rev, Path(tmp) / "out")
                    codes.append(code)
                    walls.append(wall)
                    said.update(moved)
                    loads.append(os.getloadavg()[0])
                others = sorted({c for c in codes if c != expected})
                print(
                    f"{rev:<10} expected exit {expected}: {codes.count(expected)} of "
                    f"{args.trials}{f' (others exited {others})' if others else ''}; "
                    f"median {statistics.median(walls):.1f} s a comparison"
                )
                for line in sorted(said):
                    print(f"  moved: {line}")
    finally:
        for h in hogs:
            h.kill()
    print(
        f"{args.hog} busy process(es); load average {min(loads):.1f}-{max(loads):.1f} "
        "during the trials"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
