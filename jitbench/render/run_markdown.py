"""A run as a GitHub-flavoured markdown table: medians, speedups with CIs, compile, break-even.

`jitbench report RUN.json --markdown FILE` writes it (the README's tables come from it).
"""

from __future__ import annotations

from collections.abc import Collection

from jitbench import formatting as fmt
from jitbench.config import ALL_MODES, JAX_MODES
from jitbench.measure import diagnose
from jitbench.render.run_table import INCOMPLETE, cases_of_sizes
from jitbench.results import Case, Mode, Run

SUSPECT_NOTE = (
    "⚠ rests on a figure slower than a larger size of the same workload "
    "(`size-order-inverted`): probably a stall, not a speedup."
)

HEADER = (
    "| workload | size | device | NumPy | eager | jit | eager × | jit × | jit compile "
    "| break-even |\n"
    "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
)


def _size_cell(case: Case) -> str:
    params = ", ".join(
        f"{k}={v:,}" if isinstance(v, int) else f"{k}={v}" for k, v in case.params.items()
    )
    return f"{case.size} ({params})" if params and params != case.size else case.size


def run_markdown(run: Run, *, sizes: Collection[str] = ()) -> str:
    """The run's cases as one markdown table (only `sizes` where given), one row per case.

    A mode that did not produce a time shows its status (`error`, `mismatch`, …); a ratio
    without a trustworthy value shows `—`, a suspect one (`diagnose.suspect_speedup`) is
    marked ⚠ and explained under the table.
    """
    lines = [HEADER]
    suspect = False
    for case in cases_of_sizes(run, sizes):
        times = []
        for mode in ALL_MODES:
            m = run.get(case.key, mode)
            if m is None:
                times.append("")
            else:
                times.append(fmt.seconds(m.median_s) if m.ok else m.status.value)
        ratios = []
        for mode in JAX_MODES:
            r = run.speedup(case.key, mode)
            mark = r is not None and diagnose.suspect_speedup(run, case.key, mode)
            suspect = suspect or mark
            ratios.append((fmt.ratio_ci(r.value, r.low, r.high) if r else "—") + " ⚠" * mark)
        jit = run.get(case.key, Mode.JIT)
        compile_s = jit.compile.total_compile_s if jit and jit.compile else None
        cells = [
            f"`{fmt.md_escape(case.workload)}`",
            fmt.md_escape(_size_cell(case)),
            fmt.md_escape(case.device),
            *times,
            *ratios,
            fmt.seconds(compile_s),
            fmt.count(run.break_even_calls(case.key)),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if suspect:
        lines += ["", SUSPECT_NOTE]
    if not run.complete:  # a pull-request comment must not pass a partial run off as whole
        lines += ["", f"⚠ {INCOMPLETE}."]
    return "\n".join(lines) + "\n"
