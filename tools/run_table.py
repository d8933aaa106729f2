"""Print a markdown table of one run's medians and speedups (used for the README's table).

Usage: python tools/run_table.py reports/runs/RUN.json [--size M]
"""

from __future__ import annotations

import argparse

from jitbench import Mode, load_run
from jitbench import formatting as fmt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("--size", default=None, help="only this size preset")
    args = parser.parse_args()
    run = load_run(args.run)
    print("| workload | size | NumPy | eager | jit | eager × | jit × | jit compile | break-even |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for case in run.cases():
        if args.size and case.size != args.size:
            continue
        cells = []
        for mode in Mode:
            m = run.get(case.key, mode)
            cells.append(fmt.seconds(m.median_s) if m and m.ok else (m.status.value if m else ""))
        speed = [run.speedup(case.key, mode) for mode in (Mode.EAGER, Mode.JIT)]
        jit = run.get(case.key, Mode.JIT)
        compile_s = jit.compile.total_compile_s if jit and jit.compile else None
        params = ", ".join(
            f"{k}={v:,}" if isinstance(v, int) else f"{k}={v}" for k, v in case.params.items()
        )
        print(
            f"| `{case.workload}` | {params} | "
            + " | ".join(cells)
            + " | "
            + " | ".join(fmt.ratio_ci(r.value, r.low, r.high) if r else "—" for r in speed)
            + f" | {fmt.seconds(compile_s)} | {fmt.count(run.break_even_calls(case.key))} |"
        )


if __name__ == "__main__":
    main()
