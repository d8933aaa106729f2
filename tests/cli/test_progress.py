"""`run`'s plain progress lines (no terminal): what each finished case's line quotes."""

from __future__ import annotations

import pytest

from jitbench.cli.progress import RunProgress
from jitbench.config import Mode
from jitbench.runner.events import CaseFinished, CasePooled, RunStarted
from tests.render.test_progress_line import CASE, measured


@pytest.mark.parametrize("beside", [True, False])
def test_a_run_in_processes_prints_each_case_with_every_process_share(
    capsys: pytest.CaptureFixture[str], beside: bool
) -> None:
    """Beside the second process, a case's line waits for the pooled shares (the table's
    figures); one after another, the first process's line says whose it is, and the
    pooled line follows as the worker measures."""
    first = (measured(Mode.NUMPY, [[1e-3] * 5]), measured(Mode.JIT, [[1e-4] * 5]))
    both = (
        measured(Mode.NUMPY, [[1e-3] * 5, [1.5e-3] * 5]),
        measured(Mode.JIT, [[1e-4] * 5, [1.5e-4] * 5]),
    )
    show = RunProgress()
    show(RunStarted("r", total_cases=1, processes=2, beside=beside))
    show(CaseFinished(CASE, 0, 1, first))
    show(CasePooled(CASE, 0, 1, both))
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("[1/1]")]
    pooled = "[1/1] softmax[S] cpu:0 float32: numpy 1.22 ms, jit 122 µs ("
    if beside:
        assert len(lines) == 1 and lines[0].startswith(pooled)
    else:
        assert len(lines) == 2 and "(first of 2 processes)" in lines[0]
        assert lines[1].startswith(pooled) and "processes" not in lines[1]


def test_beside_a_third_process_each_share_after_the_first_prints_its_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--processes 3` with the second beside the first: no line waits for the third
    process; each pooled share prints one, the first two saying whose they are."""
    first = (measured(Mode.NUMPY, [[1e-3] * 5]),)
    two = (measured(Mode.NUMPY, [[1e-3] * 5, [1.5e-3] * 5]),)
    three = (measured(Mode.NUMPY, [[1e-3] * 5, [1.5e-3] * 5, [1.2e-3] * 5]),)
    show = RunProgress()
    show(RunStarted("r", total_cases=1, processes=3, beside=True))
    show(CaseFinished(CASE, 0, 1, first))
    show(CasePooled(CASE, 0, 1, two))
    show(CasePooled(CASE, 0, 1, three))
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("[1/1]")]
    assert len(lines) == 2
    assert "(first 2 of 3 processes)" in lines[0] and "processes" not in lines[1]


def test_with_rounds_a_cases_line_says_it_is_its_first_round(
    capsys: pytest.CaptureFixture[str],
) -> None:
    show = RunProgress()
    show(RunStarted("r", total_cases=1, processes=2, beside=True, rounds=3))
    show(CaseFinished(CASE, 0, 1, (measured(Mode.NUMPY, [[1e-3] * 5]),)))
    [line] = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("[1/1]")]
    assert "(first of 2 processes, round 1 of 3)" in line
