"""The line `jitbench run` prints as each case finishes, where no live progress display is
drawn (output to a pipe or a file): each mode's time as the run's table shows it.

The figures come from the analysis the table uses (`analyse_case` on the measurements the
event carries): in a `--processes` run the parent pools every process's share of the case
as they arrive (`runner.processes.CaseShares`), so the line and the case's row agree; a
line handed fewer (the first process's, before the workers measured it) says whose
figures it quotes rather than pass them off as the run's.
"""

from __future__ import annotations

from collections.abc import Sequence

from jitbench import formatting as fmt
from jitbench.results import Measurement, Status
from jitbench.results.analysis import analyse_case
from jitbench.results.merge import processes_in


def plain_case_line(
    measurements: Sequence[Measurement], *, processes: int = 1, rounds: int = 1
) -> str:
    """One finished case: 'label: numpy 655 µs, eager 197 µs, jit 61.9 µs', each mode's
    shown time or its status; '(first of 2 processes)' when the measurements hold fewer
    processes' samples than the run's `processes`, '(3 processes)' when more (extra
    processes measured the case again); 'round 1 of 3' where they are the first of the
    run's `rounds` (a case's line comes after its first round)."""
    c = analyse_case(measurements)
    if c is None:
        return ""
    parts = []
    for m in measurements:
        f = c.get(m.mode)
        if m.status is Status.OK and f is not None and f.time is not None:
            parts.append(f"{m.mode.value} {fmt.seconds(f.time.value)}")
        else:
            parts.append(f"{m.mode.value} {m.status.value}")
    line = f"{measurements[0].case.label}: " + ", ".join(parts)
    held, notes = processes_in(measurements), []
    if held < processes:
        notes.append(f"{'first' if held == 1 else f'first {held}'} of {processes} processes")
    elif held > processes:  # an extra process measured it again: the line is its update
        notes.append(f"{held} processes")
    if rounds > 1:
        notes.append(f"round 1 of {rounds}")
    return line + (f" ({', '.join(notes)})" if notes else "")
