"""How well does `jitbench ab --rev` catch a real slowdown, and how often does it cry
wolf? (detection power and false alarms of the interleaved gate)

Builds a scratch git repository holding a copy of this repository's `suites/` with two
commits: A, the suites as they are, and B, the same with `gemm`'s jit path doing extra
work (a slice of the product computed again and added times 0.0, so the output is
unchanged and validation passes): a real code change, not edited samples. Then runs, in
that repository, TRIALS comparisons of each kind, one after the other:

- `jitbench ab --rev A --rev-new B` (detection): is `gemm` jit flagged (exit 1, a
  run-time regression row)? Any other flagged row is a false alarm;
- `jitbench ab --rev A --rev-new A` (A/A): every flagged row is a false alarm.

Prints one line per comparison (wall time, gemm jit's paired ratio and verdict, false
alarms) and the totals. `--hog` keeps one core busy meanwhile (a noisy neighbour).

    python tools/duet_check.py --trials 10 --fraction 0.05
    python tools/duet_check.py --trials 10 --hog -- --pairs 2
    python tools/duet_check.py --trials 20 --keep /tmp/duet   # keep every comparison's runs
    python tools/duet_check.py --judge /tmp/duet              # judge kept runs again

`--judge DIR` measures nothing: it judges the runs a `--keep DIR` left (comparisons
`aaN` and `detectN`) again with this repository's gate, so a change of the judge is
tried on measurements taken before it.

Extra arguments after `--` go to `jitbench compare` (default: `-s S`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
INJECTED = "gemm"

_ORIGINAL = """    return a @ b
"""
_SLOWED = """    out = a @ b
    import jax

    if isinstance(a, jax.core.Tracer):  # injected by tools/duet_check.py: jit path only
        k = max(1, int(a.shape[0] * {fraction}))
        out = out + xp.sum(a[:k] @ b) * 0.0
    return out
"""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def make_repository(root: Path, fraction: float) -> None:
    """A git repository at `root`: commit A (the suites), commit B (gemm's jit slowed)."""
    shutil.copytree(REPO / "suites", root / "suites", ignore=shutil.ignore_patterns("__pycache__"))
    _git(root, "init", "-q")
    _git(root, "config", "user.email", "duet-check@example.invalid")
    _git(root, "config", "user.name", "duet check")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "A: the suites")
    _git(root, "tag", "A")
    linalg = root / "suites" / "linalg.py"
    text = linalg.read_text()
    head, sep, tail = text.partition("def gemm(")
    if _ORIGINAL not in tail:
        sys.exit("suites/linalg.py's gemm changed; update tools/duet_check.py's injection")
    linalg.write_text(head + sep + tail.replace(_ORIGINAL, _SLOWED.format(fraction=fraction), 1))
    _git(root, "commit", "-qam", "B: gemm's jit path does extra work")
    _git(root, "tag", "B")


def compare(
    root: Path, base: str, new: str, out: Path, extra: list[str]
) -> tuple[float, int, dict]:  # type: ignore[type-arg]
    """One `jitbench ab --rev base --rev-new new`; (wall seconds, exit code, JSON)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started = time.perf_counter()
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "jitbench", "ab", "--rev", base, "--rev-new", new),
            *("--out", str(out), "--json", str(out / "gate.json"), *extra),
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        sys.exit(f"jitbench compare failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return wall, proc.returncode, json.loads((out / "gate.json").read_text())


@dataclass
class _Totals:
    trials: int = 0
    flagged: int = 0
    false: int = 0
    walls: list[float] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)


def _flagged(entry: dict) -> list[str]:  # type: ignore[type-arg]
    label = f"{entry['workload']}[{entry['size']}] {entry['mode']}"
    out = []
    if entry["verdict"] in ("regression", "improvement", "now failing"):
        out.append(f"{label} {entry['verdict']} {entry['ratio'] or 0:.3f}")
    compile_ = entry.get("compile") or {}
    if compile_.get("verdict") in ("regression", "improvement"):
        out.append(f"{label} compile {compile_['verdict']} {compile_['ratio'] or 0:.3f}")
    return out


def judge_kept(out: Path) -> dict:  # type: ignore[type-arg]
    """The gate's JSON for the two runs a kept comparison left in `out/runs`, judged by
    this repository's code as `jitbench ab --rev` judges them."""
    sys.path.insert(0, str(REPO))
    from jitbench.gate import INTERLEAVED_THRESHOLD, Thresholds, compare_interleaved
    from jitbench.results import load_run

    runs = [load_run(p) for p in sorted((out / "runs").glob("*.json"))]
    by_side = {(r.config.extra or {}).get("interleaved", {}).get("side"): r for r in runs}
    if set(by_side) != {"base", "new"}:
        sys.exit(f"{out}: expected one base and one new run in {out / 'runs'}")
    cmp = compare_interleaved(
        by_side["base"], by_side["new"], thresholds=Thresholds(threshold=INTERLEAVED_THRESHOLD)
    )
    return json.loads(cmp.to_json())


def _kept(root: Path) -> list[tuple[str, int, Path]]:
    """(kind, trial, folder) of every comparison kept under `root`, in trial order."""
    found = []
    for d in root.iterdir():
        for kind in ("detect", "aa"):
            if d.is_dir() and d.name.startswith(kind) and d.name[len(kind) :].isdigit():
                found.append((kind, int(d.name[len(kind) :]), d))
    return sorted(found, key=lambda t: (t[1], t[0] != "detect"))


def _record(
    t: _Totals,
    kind: str,
    trial: int,
    gate: dict,  # type: ignore[type-arg]
    wall: float,
    code: int | None,
    load: float | None,
) -> None:
    """Count one comparison's outcome into `t` and print its line."""
    target = next(
        (e for e in gate["entries"] if e["workload"] == INJECTED and e["mode"] == "jit"), None
    )
    caught = kind == "detect" and target is not None and target["verdict"] == "regression"
    false = [
        text
        for e in gate["entries"]
        if not (kind == "detect" and e["workload"] == INJECTED and e["mode"] != "numpy")
        for text in _flagged(e)
    ]
    t.flagged += caught
    t.false += len(false)
    if not math.isnan(wall):  # measured now (NaN when judged again)
        t.walls.append(wall)
    t.trials += 1
    if target is not None and target["ratio"]:
        t.ratios.append(target["ratio"])
    measured = "judged again" if code is None else f"{wall:5.0f} s, load {load:.1f}, exit {code}"
    print(
        f"{kind:6s} {trial:2d}: {measured}, "
        f"{INJECTED} jit {target['ratio'] if target else float('nan'):.3f} "
        f"p={target['p_adjusted'] if target else None} "
        f"{target['verdict'] if target else '-'} "
        f"(compile {((target or {}).get('compile') or {}).get('verdict', '-')}); "
        "false alarms: " + (", ".join(false) or "none"),
        flush=True,
    )


def _measure(
    args: argparse.Namespace, kinds: list[str], totals: dict[str, _Totals], extra: list[str]
) -> None:
    """The comparisons themselves, in a scratch repository (kept with `--keep`)."""
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.hog else None
    try:
        with tempfile.TemporaryDirectory(prefix="duet-check-") as scratch:
            tmp = args.keep or Path(scratch)
            root = Path(tmp) / "repo"
            root.mkdir(parents=True)
            make_repository(root, args.fraction)
            for trial in range(1, args.trials + 1):
                for kind in kinds:
                    new = "B" if kind == "detect" else "A"
                    out = Path(tmp) / f"{kind}{trial}"
                    wall, code, gate = compare(root, "A", new, out, extra)
                    load = os.getloadavg()[0]
                    _record(totals[kind], kind, trial, gate, wall, code, load)
    finally:
        if hog is not None:
            hog.kill()


def main() -> int:
    argv = sys.argv[1:]
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10, help="comparisons of each kind")
    parser.add_argument(
        "--fraction", type=float, default=0.05, help="extra share of gemm's rows computed again"
    )
    parser.add_argument("--hog", action="store_true", help="keep one core busy meanwhile")
    parser.add_argument("--kinds", default="detect,aa", help="detect, aa or both")
    parser.add_argument(
        "--keep", type=Path, help="keep the scratch repository and every comparison's runs here"
    )
    parser.add_argument(
        "--judge", type=Path, help="judge the comparisons kept here again; measure nothing"
    )
    args = parser.parse_args(argv)
    extra = extra or ["-s", "S"]
    kinds = [k for k in args.kinds.split(",") if k]
    totals = {k: _Totals() for k in kinds}
    if args.judge:
        for kind, trial, out in _kept(args.judge):
            if kind in totals:
                wall = float("nan")  # not measured again
                _record(totals[kind], kind, trial, judge_kept(out), wall, None, None)
    else:
        _measure(args, kinds, totals, extra)
    for kind, t in totals.items():
        n = t.trials
        if not n:
            continue
        ratios = t.ratios
        median_ratio = statistics.median(ratios) if ratios else float("nan")
        if kind == "detect":
            print(
                f"detection: {INJECTED} jit flagged in {t.flagged}/{n} "
                f"(median paired ratio {median_ratio:.3f})"
            )
        wall_text = (
            f"; wall median {statistics.median(t.walls):.0f} s (max {max(t.walls):.0f} s)"
            if t.walls
            else ""
        )
        print(f"{kind}: {t.false} false alarms in {n} comparisons{wall_text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
