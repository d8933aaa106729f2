"""What does spreading a run over sampling rounds cost, and where does it go?

Each case opened in a run clears JAX's caches (its cold figures need it), so a case's
second round starts by calling each mode again: without help, eager compiles its every
primitive again and jit its program. A run of several processes or rounds keeps the
programs its cold calls compiled in a folder of its own, and that re-warm loads them
(`compilation.loading_shared`). This runs the default suite in this process, one process
each (`--processes 1`), once per `--rounds` value given, and prints each one's wall time,
the backend compiles JAX reported (a program loaded from the folder is reported there
too) and the programs loaded from the folder.

    python tools/rounds_cost.py                 # rounds 1, 2 and 4, sizes S
    python tools/rounds_cost.py --rounds 1 3 -s S,M
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("-s", "--sizes", default="S")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))

    from jitbench import RunConfig, run_workloads
    from jitbench.measure import compilation
    from jitbench.suite.discovery import discover

    workloads = list(discover([REPO / "suites"]).workloads.values())
    base = RunConfig(sizes=tuple(args.sizes.split(",")), processes=1)
    print("rounds  wall      backend compiles  loaded from the run's folder")
    for rounds in args.rounds:
        config = replace(base, plan=replace(base.plan, rounds=rounds))
        started = time.perf_counter()
        with compilation.count_compiles() as events:
            run_workloads(workloads, config)
        wall = time.perf_counter() - started
        compile_s = events.durations_s.get(compilation.BACKEND_COMPILE_EVENT, 0.0)
        print(
            f"{rounds:<7} {wall:6.1f} s  {events.compile_count:4d} ({compile_s:5.1f} s)"
            f"       {events.load_count}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
