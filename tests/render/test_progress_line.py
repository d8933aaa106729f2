"""The line printed as each case finishes (no live display): the times its row shows,
from the analysis the table uses, and whose figures they are when they are one process's
share of the run."""

from __future__ import annotations

from dataclasses import replace

from jitbench import formatting as fmt
from jitbench.render.progress_line import plain_case_line
from jitbench.results import Case, Measurement, Mode, Run, Status
from jitbench.results.analysis import analyse

CASE = Case(workload="softmax", size="S", device="cpu:0", dtype="float32")


def measured(mode: Mode, parts: list[list[float]]) -> Measurement:
    return Measurement(
        case=CASE,
        mode=mode,
        status=Status.OK,
        samples_s=tuple(x for part in parts for x in part),
        calls_per_sample=1,
        run_sample_counts=tuple(len(p) for p in parts) if len(parts) > 1 else (),
    )


def run_of(ms: list[Measurement]) -> Run:
    return Run(
        run_id="r", started_at="t", finished_at="t", complete=True, environment={},
        measurements=tuple(ms),
    )  # fmt: skip


def test_the_line_quotes_the_times_the_table_shows_not_the_medians() -> None:
    """jit's row shows NumPy's time ÷ the speedup taken round by round, which a stalled
    round moves away from jit's own median: the line quotes the row."""
    numpy_s = [655, 660, 700, 650, 662, 671, 640, 690, 655, 648, 666, 702]
    jit_s = [61.9, 63, 61, 80, 62.5, 61.7, 66, 62, 75, 61, 64, 62]
    numpy = measured(Mode.NUMPY, [[x * 1e-6 for x in numpy_s]])
    jit = measured(Mode.JIT, [[x * 1e-6 for x in jit_s]])
    shown = analyse(run_of([numpy, jit])).time(CASE, Mode.JIT)
    assert shown is not None and fmt.seconds(shown.value) != fmt.seconds(jit.median_s)
    line = plain_case_line([numpy, jit])
    assert line == f"softmax[S] cpu:0 float32: numpy 661 µs, jit {fmt.seconds(shown.value)}"


def test_one_process_share_of_a_run_says_so() -> None:
    numpy = measured(Mode.NUMPY, [[1e-3] * 5])
    failed = replace(measured(Mode.JIT, []), status=Status.ERROR)
    line = plain_case_line([numpy, failed], processes=2)
    assert line.endswith("numpy 1 ms, jit error (first of 2 processes)")


def test_every_process_share_is_the_table_s_figure() -> None:
    numpy = measured(Mode.NUMPY, [[1e-3] * 5, [1.2e-3] * 5])
    jit = measured(Mode.JIT, [[1e-4] * 5, [1.1e-4] * 5])
    figures = analyse(run_of([numpy, jit]))
    line = plain_case_line([numpy, jit], processes=2)
    for mode in (Mode.NUMPY, Mode.JIT):
        t = figures.time(CASE, mode)
        assert t is not None and f"{mode.value} {fmt.seconds(t.value)}" in line
    assert "process" not in line
    assert plain_case_line([numpy, jit], processes=3).endswith("(first 2 of 3 processes)")
    # More than the run's own: an extra process measured it again.
    assert plain_case_line([numpy, jit], processes=1).endswith(" (2 processes)")
    assert plain_case_line([]) == ""
