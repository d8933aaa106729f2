"""Does `jitbench bisect` name the commit that slowed `selu`, on a busy box, in few steps?

Builds a scratch git repository of 16 first-parent commits from this checkout's default
suite: the first is GOOD, the last BAD; one commit in between (`--slow-at`, default the
11th) slows `selu` by about 15 % by adding work to its compiled program (a degree-5
polynomial, a tiny term of the result), another (the 5th) only edits comments in
`suites/elementwise.py`, and the rest edit a notes file. Then runs
`jitbench bisect GOOD BAD -k selu` TRIALS times (each from scratch: --restart), with HOG
busy processes taking cores, and prints per trial whether the named commit is the slowing
one, the steps (and whether the commit, timed against its parent, carries the change) and
the seconds; then the summary (correct/N, most steps, median seconds).

    python tools/bisect_check.py --trials 10 --hog 2
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
SLOW_SELU = (
    "    p = x\n"
    "    for _ in range(5):  # more work in the program: a polynomial, a tiny term\n"
    "        p = p * x + 0.5\n"
    "    return lmbda * xp.where(x > 0, x, alpha * xp.exp(x) - alpha) + 1e-12 * p\n"
)
LOG2_DOC = '    """Base-2 logarithm as ln(x) / ln(2), the jaxpr documentation\'s example."""\n'
COMMITS = 16
COMMENT_AT = 5


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=a@b", "-c", "user.name=check", *args],
        check=True,
        capture_output=True,
        text=True,
    )
    return proc.stdout.strip()


def scratch_repository(into: Path, *, slow_at: int = 11) -> tuple[Path, str, str, str]:
    """The 16-commit repository: (its path, GOOD's sha, BAD's sha, the slowing commit's)."""
    repo = into / "repo"
    shutil.copytree(REPO / "suites", repo / "suites", ignore=shutil.ignore_patterns("__pycache__"))
    suite = repo / "suites" / "elementwise.py"
    source = suite.read_text()
    if SELU not in source or LOG2_DOC not in source:
        sys.exit("selu's body or log2's docstring is not where this check expects it")
    (repo / "NOTES.md").write_text("# notes\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "commit 1: the suites")
    slow = ""
    for i in range(2, COMMITS + 1):
        if i == slow_at:
            suite.write_text(suite.read_text().replace(SELU, SLOW_SELU))
            subject = f"commit {i}: selu does more work"
        elif i == COMMENT_AT:
            text = suite.read_text().replace(LOG2_DOC, LOG2_DOC + "    # ln(x) / ln(2)\n")
            suite.write_text(text)
            subject = f"commit {i}: a comment in log2"
        else:
            with (repo / "NOTES.md").open("a") as f:
                f.write(f"- note {i}\n")
            subject = f"commit {i}: notes"
        git(repo, "commit", "-qam", subject)
        if i == slow_at:
            slow = git(repo, "rev-parse", "HEAD")
    good = git(repo, "rev-list", "--max-parents=0", "HEAD")
    return repo, good, git(repo, "rev-parse", "HEAD"), slow


def trial(repo: Path, good: str, bad: str, out: Path, extra: list[str]) -> dict[str, object]:
    """One bisection from scratch: its exit code, wall seconds and JSON outcome."""
    report = out / "bisect.json"
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "jitbench", "bisect", good, bad, "-k", "selu", "--restart",
         "--out", str(out), "--json", str(report), *extra],
        cwd=repo, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    wall = time.perf_counter() - started
    data = json.loads(report.read_text()) if report.exists() else {}
    return {"code": proc.returncode, "seconds": wall, "data": data, "stdout": proc.stdout,
            "stderr": proc.stderr}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--hog", type=int, default=1, help="busy processes during the trials")
    parser.add_argument("--slow-at", type=int, default=11, help="which commit slows selu (2-16)")
    parser.add_argument("--verbose", action="store_true", help="print each bisection's output")
    parser.add_argument("extra", nargs="*", help="more `jitbench bisect` options, after --")
    args = parser.parse_args()
    if not (2 <= args.slow_at <= COMMITS and args.slow_at != COMMENT_AT):
        parser.error(f"--slow-at is 2 to {COMMITS}, not {COMMENT_AT} (the comment commit)")
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.hog)]
    results: list[tuple[bool, int, float]] = []
    loads = []
    try:
        with tempfile.TemporaryDirectory(prefix="jitbench-bisect-check-") as tmp:
            repo, good, bad, slow = scratch_repository(Path(tmp), slow_at=args.slow_at)
            for n in range(1, args.trials + 1):
                r = trial(repo, good, bad, Path(tmp) / "out", args.extra)
                loads.append(os.getloadavg()[0])
                data = r["data"]
                assert isinstance(data, dict)
                first = (data.get("first_bad") or {}).get("sha")
                steps = data.get("steps_taken", 0)
                by = [s["by"] for s in (data.get("state") or {}).get("steps", [])]
                confirmed = (data.get("confirmation") or {}).get("side")
                correct = first == slow
                measured = int(steps) + len((data.get("state") or {}).get("confirmations", []))
                results.append((correct, measured, float(r["seconds"])))  # type: ignore[arg-type]
                print(
                    f"trial {n}: {'correct' if correct else 'WRONG'} "
                    f"({(first or 'none')[:10]}; exit {r['code']}), {steps} steps "
                    f"({by.count('program')} by program, {by.count('timing')} by timing; "
                    f"against its parent: {confirmed or 'not timed'}), {r['seconds']:.1f} s",
                    flush=True,
                )
                if args.verbose or r["code"] not in (0, 4):
                    print(r["stdout"], r["stderr"], sep="\n")
    finally:
        for h in hogs:
            h.kill()
    right = sum(1 for c, _, _ in results if c)
    median = statistics.median(s for *_, s in results)
    print(
        f"{right}/{len(results)} correct; at most {max(s for _, s, _ in results)} steps a "
        f"bisection (after GOOD against BAD, the confirmation included); median {median:.1f} "
        f"s a bisection; {args.hog} busy process(es), load average "
        f"{min(loads):.1f}-{max(loads):.1f} during the trials"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
