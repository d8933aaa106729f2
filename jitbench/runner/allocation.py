"""Where a run in several processes spends more: the cases another process should measure.

A run of `--processes K` measures every case in K processes (`runner.processes`), and the
speedup's interval comes from how far those processes' paired estimates spread
(`results.analysis`). Most cases agree from process to process; a few do not (a burst on a
shared host during one process's window, an executable that runs slow), and their
intervals are wide. Rather than spreading the budget evenly, the run measures those cases
again in further processes (`runner.processes.run_in_processes`): each one more process
narrows the interval (a t quantile on more degrees of freedom, and √(2/K) in its
half-width) where narrowing is needed. `cases_for_another_process` is the one rule that
picks them.
"""

from __future__ import annotations

from jitbench.config import Mode
from jitbench.results import Run
from jitbench.results.analysis import RunAnalysis, analyse
from jitbench.results.model import Measurement

CaseKey = tuple[str, str, str, str]

#: A jit speedup interval wider than this (×/÷, √(high / low)) asks for another process:
#: the width a default run aims at for jit. Narrower intervals are left as they are; a
#: case's processes that measured a mode `PROCESS_SPLIT_FACTOR` apart ask for one whatever
#: the width, since the case's time then rests on processes that disagree.
WIDE_INTERVAL = 1.10
#: The speedups whose width is judged: jit's (and sharded mode's, jit on several devices),
#: the headline. Eager's are not: at small sizes they are dispatch-bound Python that moves
#: more from process to process (docs: validation, "A/A coverage of the intervals"),
#: so about half of a default run's cases would ask for more for eager alone, and their
#: extra processes would take the time the jit intervals need. An extra process measures
#: every mode of its case, so eager's intervals narrow with jit's.
JUDGED_MODES = (Mode.JIT, Mode.SHARDED)


def processes_of(ms: list[Measurement]) -> int:
    """How many processes measured a case: the most parts of its measurements."""
    return max((len(m.part_counts) for m in ms), default=0)


def cases_for_another_process(run: Run, *, most: int) -> list[CaseKey]:
    """The cases of `run` (every process pooled so far) that one more process should
    measure, the neediest first: those whose processes measured a mode
    `PROCESS_SPLIT_FACTOR` or more apart, then those whose speedup interval over NumPy
    (`JUDGED_MODES`, as `results.analysis` shows it) is wider than `WIDE_INTERVAL`,
    each group widest first.

    Left out: cases measured in fewer than two processes (no spread to judge) or in `most`
    already, and cases with a failed measurement (a failure in any process is the case's
    result: more processes would not change it).
    """
    by_case: dict[CaseKey, list[Measurement]] = {}
    for m in run.measurements:
        by_case.setdefault(m.case.key, []).append(m)
    needs: list[tuple[bool, float, CaseKey]] = []
    figures = analyse(run)
    for key, ms in by_case.items():
        if any(m.failed for m in ms) or not 2 <= processes_of(ms) < most:
            continue
        c = figures.case(key)
        split = c is not None and any(f.ok and f.time_disagree for f in c.figures.values())
        widest = max(
            (_width(figures, key, m.mode) for m in ms if m.mode in JUDGED_MODES), default=1.0
        )
        if split or widest > WIDE_INTERVAL:
            needs.append((split, widest, key))
    needs.sort(key=lambda need: (not need[0], -need[1]))  # stable: plan order among equals
    return [key for _, _, key in needs]


def _width(figures: RunAnalysis, key: CaseKey, mode: Mode) -> float:
    """The speedup interval's width over NumPy as a factor (×/÷), 1 where there is none."""
    r = figures.speedup(key, mode)
    return (r.factor if r is not None else None) or 1.0
