"""Do the speedups a run shows agree with the times shown beside them?

For each run file (or every run under a folder's runs/), reads what `jitbench report RUN
--format csv` prints and counts the speedups that differ from the shown NumPy time ÷ the
shown mode time by more than 1 %, and prints them. Exit 1 when any does.

    python tools/agreement_check.py reports/examples/runs/*.json
    python tools/agreement_check.py /tmp/aa          # every run/*/runs/*.json below it
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from pathlib import Path

from jitbench.render.run_csv import run_csv
from jitbench.results import load_run

TOLERANCE = 0.01


def run_files(paths: list[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(p for p in path.rglob("*.json") if p.parent.name == "runs")
        else:
            found.append(path)
    return found


def disagreements(path: Path) -> tuple[int, list[str]]:
    """(speedups checked, a line for each that differs by more than `TOLERANCE`)."""
    checked, bad = 0, []
    for row in csv.DictReader(io.StringIO(run_csv(load_run(path)))):
        for mode in ("eager", "jit"):
            speedup, numpy, time = row[f"{mode}_speedup"], row["numpy_s"], row[f"{mode}_s"]
            if not (speedup and numpy and time):
                continue
            checked += 1
            quotient = float(numpy) / float(time)
            off = float(speedup) / quotient - 1
            if abs(off) > TOLERANCE:
                bad.append(
                    f"  {row['workload']} {row['size']} {row['device']} {mode}: shown "
                    f"{float(speedup):.4g}x, times give {quotient:.4g}x ({off:+.1%})"
                )
    return checked, bad


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    args = parser.parse_args()
    total = off = 0
    for path in run_files(args.paths):
        checked, bad = disagreements(path)
        total, off = total + checked, off + len(bad)
        print(f"{path}: {len(bad)} of {checked} speedups off by more than 1 %")
        for line in bad:
            print(line)
    print(f"all: {off} of {total} speedups differ from shown NumPy ÷ shown mode by more than 1 %")
    return 1 if off else 0


if __name__ == "__main__":
    sys.exit(main())
