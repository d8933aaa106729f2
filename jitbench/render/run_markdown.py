"""A run as a GitHub-flavoured markdown table: medians, speedups with CIs, compile, break-even.

`jitbench report RUN.json --markdown FILE` writes it (the docs' tables of runs come from it).
"""

from __future__ import annotations

from collections.abc import Collection

from jitbench import formatting as fmt
from jitbench.config import ALL_MODES, JAX_MODES
from jitbench.render.run_table import (
    FOOTER_CODES,
    INCOMPLETE,
    cases_of_sizes,
    compact_notes,
    mark_legend,
    speedup_marks,
)
from jitbench.results import Case, Mode, Run
from jitbench.results.analysis import analyse

HEADER = (
    "| workload | size | device | NumPy | eager | jit | eager × | jit × | jit compile "
    "| break-even | notes |\n"
    "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
)


def _size_cell(case: Case) -> str:
    params = ", ".join(
        f"{k}={v:,}" if isinstance(v, int) else f"{k}={v}" for k, v in case.params.items()
    )
    return f"{case.size} ({params})" if params and params != case.size else case.size


def run_markdown(run: Run, *, sizes: Collection[str] = ()) -> str:
    """The run's cases as one markdown table (only `sizes` where given), one row per case.

    A mode that did not produce a time shows its status (`error`, `mismatch`, …); a ratio
    without a trustworthy value shows `—`; a marked one (`run_table.speedup_marks`) is
    explained under the table. The notes are the diagnostic codes of the row, as the
    terminal's compact table writes them (`noisy` aside: the JSON and `--format wide` have it).
    """
    lines = [HEADER]
    figures = analyse(run)
    cases = cases_of_sizes(run, sizes)
    for case in cases:
        c = figures.case(case)
        assert c is not None
        times = []
        for mode in ALL_MODES:
            f = c.get(mode)
            if f is None:
                times.append("")
            else:
                shown = f.ok and f.time is not None
                times.append(fmt.seconds(f.time.value) if shown else f.status.value)  # type: ignore[union-attr]
        ratios = []
        for mode in JAX_MODES:
            f = c.get(mode)
            r = f.speedup if f is not None else None
            marks = speedup_marks(f)
            ratios.append(
                (fmt.ratio_ci(r.value, r.low, r.high) if r else "—") + f" {marks}" * bool(marks)
            )
        jit = c.get(Mode.JIT)
        compile_s = jit.compile_s if jit else None
        cells = [
            fmt.md_code(case.workload),
            fmt.md_escape(_size_cell(case)),
            fmt.md_escape(case.device),
            *times,
            *ratios,
            fmt.seconds(compile_s),
            fmt.count(c.break_even_calls),
            fmt.md_escape(
                compact_notes((run.get(case.key, m) for m in ALL_MODES), skip=FOOTER_CODES)
            ),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    legend = mark_legend(run, cases)
    if legend:
        lines += ["", fmt.md_escape(legend)]
    if not run.complete:  # a pull-request comment must not pass a partial run off as whole
        lines += ["", f"⚠ {INCOMPLETE}."]
    return "\n".join(lines) + "\n"
