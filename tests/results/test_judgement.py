"""Judging a run's stored figures (`results.analysis.judgement`): outliers, sizes out of
order, processes that disagree and a pooled run's notes, on hand-built measurements with
exact figures; every note quotes the figures the table shows."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from jitbench import formatting as fmt
from jitbench.measure import diagnose
from jitbench.render.run_table import problems, summary_table
from jitbench.results import (
    Case,
    Measurement,
    Mode,
    Run,
    Severity,
    Status,
    TimeSplit,
    dump_run,
    run_from_dict,
)
from jitbench.results.analysis import analyse, judgement


def m(mode: Mode, samples: list[float]) -> Measurement:
    case = Case(workload="w", size="S", device="cpu:0", dtype="float32")
    return Measurement(
        case=case, mode=mode, status=Status.OK, samples_s=tuple(samples), calls_per_sample=1
    )


def _run(ms: list[Measurement]) -> Run:
    return Run(
        run_id="r",
        started_at="t",
        finished_at="t",
        complete=True,
        environment={},
        config={},
        measurements=tuple(ms),
    )


# --- run-level detectors: outliers and sizes out of order ------------------------------------


def sized(
    size: str,
    mode: Mode,
    samples: list[float],
    *,
    nbytes: int | None,
    elements: int | None = None,
    workload: str = "gemm",
    device: str = "cpu:0",
) -> Measurement:
    case = Case(
        workload=workload,
        size=size,
        device=device,
        dtype="float32",
        input_bytes=nbytes,
        input_elements=elements,
    )
    return Measurement(
        case=case, mode=mode, status=Status.OK, samples_s=tuple(samples), calls_per_sample=1
    )


def around(center: float, n: int = 12, rel: float = 0.01) -> list[float]:
    """n samples evenly spread ±rel around center."""
    return [center * (1 - rel + 2 * rel * i / (n - 1)) for i in range(n)]


def run_codes(run: Run) -> dict[tuple[str, str], list[str]]:
    return {(x.case.size, x.mode.value): [d.code for d in x.diagnostics] for x in run.measurements}


def test_outlier_samples_names_how_many_and_how_far() -> None:
    samples = [*around(10e-3, 30), 42e-3, 31e-3]
    [found] = judgement.run_diagnostics(_run([m(Mode.NUMPY, samples)])).measurements[0].diagnostics
    assert found.code == judgement.OUTLIERS and found.severity is Severity.INFO
    assert found.message.startswith("2 of 32 samples lie beyond Q3 + 3·IQR")
    assert "the worst 4.2× the median 10 ms" in found.message


@pytest.mark.parametrize(
    "samples",
    [
        [*around(10e-3, 6), 40e-3],  # too few samples to call anything far
        around(10e-3, 30, rel=0.2),  # wide but without a far tail
        [10e-3] * 20 + [10.3e-3],  # beyond Q3 + 3·IQR (IQR 0) but only 3 % above the median
    ],
)
def test_no_outliers_without_a_far_tail(samples: list[float]) -> None:
    run = judgement.run_diagnostics(_run([m(Mode.NUMPY, samples)]))
    assert run.measurements[0].diagnostics == ()


def two_processes(first: float, second: float, mode: Mode = Mode.JIT) -> Measurement:
    """One measurement of a --processes 2 run whose processes measured these medians."""
    return replace(m(mode, [*around(first), *around(second)]), run_sample_counts=(12, 12))


def test_processes_that_measured_two_speeds_are_said_to_disagree() -> None:
    """softmax M in an A/A run: the first process's executable ran at 6.57 ms, the
    worker's at 1.71 ms, and the speedup landed between the two."""
    run = judgement.run_diagnostics(_run([two_processes(6.57e-3, 1.71e-3)]))
    [found] = run.measurements[0].diagnostics
    assert found.code == judgement.PROCESSES_DISAGREE and found.severity is Severity.WARNING
    assert found.message.startswith("its 2 processes measured 6.57 ms, 1.71 ms (3.84× apart)")
    assert "--processes 4" in found.hint
    # The analysis layer's own test of the same figures: one test, one answer.
    figure = analyse(run).figure(run.measurements[0].case, Mode.JIT)
    assert figure is not None and figure.time_disagree
    assert judgement.run_diagnostics(run) == run  # once


def test_a_whole_process_slowed_is_told_apart_from_one_mode_that_split() -> None:
    """mlp S in a noisy default run: NumPy, eager and jit all ran 1.3-1.5x slower in the
    worker, so the machine moved, not the code; softmax M: only jit split."""
    alike = judgement.run_diagnostics(
        _run(
            [
                two_processes(0.97e-3, 1.27e-3, Mode.NUMPY),
                two_processes(1.11e-3, 1.70e-3, Mode.EAGER),
                two_processes(0.89e-3, 1.22e-3, Mode.JIT),
            ]
        )
    )
    [found] = alike.measurements[1].diagnostics  # eager: 1.53x, the others 1.31x and 1.37x
    assert found.code == judgement.PROCESSES_DISAGREE
    assert "between the same processes numpy moved 1.31×, jit moved 1.37×" in found.message
    assert "every mode moved alike, so the machine was slower during one process" in found.message
    assert found.severity is Severity.INFO  # the speedups hold: not among the run's problems
    alone = judgement.run_diagnostics(
        _run(
            [
                two_processes(7.7e-3, 7.6e-3, Mode.NUMPY),
                two_processes(6.6e-3, 6.5e-3, Mode.EAGER),
                two_processes(6.57e-3, 1.71e-3, Mode.JIT),
            ]
        )
    )
    [found] = alone.measurements[2].diagnostics
    assert "numpy moved 1.01×, eager moved 1.02×" in found.message
    assert "the same code ran at different speeds in different processes" in found.message
    assert "every mode moved alike" not in found.message
    assert found.severity is Severity.WARNING


def test_a_busier_machine_that_slowed_the_modes_unequally_is_named_with_the_speedups_moved() -> (
    None
):
    """standardise S in a noisy default run: every mode was slower in the worker
    (NumPy 1.47x, eager 1.93x, jit 1.59x): the machine was busier, not the code's
    executable slow, and the eager speedups moved by the difference."""
    run = judgement.run_diagnostics(
        _run(
            [
                two_processes(0.80e-3, 1.176e-3, Mode.NUMPY),
                two_processes(0.70e-3, 1.351e-3, Mode.EAGER),
                two_processes(0.283e-3, 0.45e-3, Mode.JIT),
            ]
        )
    )
    [found] = run.measurements[1].diagnostics  # eager: 1.93x
    assert "between the same processes numpy moved 1.47×, jit moved 1.59×" in found.message
    assert "every mode was slower in the same process, so the machine was busier" in found.message
    assert "(its time relative to numpy's 1.31×, to jit's 1.21×)" in found.message
    assert "the same code ran at different speeds" not in found.message
    assert found.severity is Severity.WARNING  # its speedups did move
    [found] = run.measurements[2].diagnostics  # jit: 1.59x; eager moved more, NumPy less
    assert "relative to numpy's 1.08×, to eager's 1.21×" in found.message


def test_modes_alike_with_one_but_not_with_each_other_have_not_moved_alike() -> None:
    """ema S in the same run: eager moved 1.69x, NumPy 1.82x and jit 1.41x, each within
    1.2x of eager's but 1.29x apart, so jit's speedup over NumPy moved: not a note that
    the speedups hold."""
    run = judgement.run_diagnostics(
        _run(
            [
                two_processes(0.96e-3, 1.75e-3, Mode.NUMPY),
                two_processes(1.0e-3, 1.69e-3, Mode.EAGER),
                two_processes(0.30e-3, 0.423e-3, Mode.JIT),
            ]
        )
    )
    [found] = run.measurements[1].diagnostics  # eager
    assert "numpy moved 1.82×, jit moved 1.41×" in found.message
    assert "every mode moved alike" not in found.message
    assert "the machine was busier then" in found.message
    assert found.severity is Severity.WARNING


@pytest.mark.parametrize(
    "measurement",
    [
        two_processes(1.43e-3, 1.38e-3),  # the usual few per cent between processes
        two_processes(1.4e-3, 2.0e-3),  # 1.43x: far, but within the factor
        m(Mode.JIT, [*around(6.57e-3), *around(1.71e-3)]),  # one process: no parts
    ],
)
def test_processes_that_roughly_agree_are_not_flagged(measurement: Measurement) -> None:
    run = judgement.run_diagnostics(_run([measurement]))
    assert judgement.PROCESSES_DISAGREE not in [d.code for d in run.measurements[0].diagnostics]
    figure = analyse(run).figure(measurement.case, Mode.JIT)
    assert figure is not None and not figure.time_disagree


def test_a_pooled_run_drops_each_processs_noisy_and_judges_none_again() -> None:
    """Five samples a process have no 95 % interval, so each process said `noisy`; the
    pooled row shows where a repeat run lands (the processes' spread), so no note about
    one process's sampling CI stands beside it, however wide the row's interval."""
    per_process = judgement.noisy(math.inf, 0.01)

    def pooled(device: str, first: float, second: float) -> Measurement:
        samples = (*around(first, 5, rel=0.001), *around(second, 5, rel=0.001))
        case = Case(workload="w", size="S", device=device, dtype="float32")
        return Measurement(
            case=case,
            mode=Mode.JIT,
            status=Status.OK,
            samples_s=samples,
            run_sample_counts=(5, 5),
            diagnostics=(per_process,),
        )

    tight, wide = pooled("cpu:0", 1e-3, 1.0001e-3), pooled("cpu:1", 1e-3, 1.3e-3)
    run = judgement.pooled_judgement(_run([tight, wide]))
    assert [m.diagnostics for m in run.measurements] == [(), ()]
    shown = analyse(run).time(wide.case, Mode.JIT)
    assert shown is not None and shown.high is not None and shown.high > 1.15e-3 * 1.01


def test_jit_slower_is_judged_again_on_the_pooled_run_with_the_figures_it_shows() -> None:
    """ema M in the H200 example: the first process's note said "jit is 2.52× slower than
    NumPy (31.5 ms vs 12.5 ms)" beside a row of 16.8 ms vs 9.21 ms, and gemm M was
    flagged with a speedup interval [0.805–1.02] that holds 1."""
    first_note = judgement.jit_slower(2.52, 31.5e-3, 12.5e-3)

    def case(numpy_s: tuple[float, float], jit_s: tuple[float, float]) -> list[Measurement]:
        numpy_m = two_processes(*numpy_s, Mode.NUMPY)
        jit_m = replace(two_processes(*jit_s, Mode.JIT), diagnostics=(first_note,))
        return [numpy_m, jit_m]

    slower = judgement.pooled_judgement(_run(case((12.5e-3, 11e-3), (31.5e-3, 27e-3))))
    [note] = [d for d in slower.measurements[1].diagnostics if d.code == judgement.JIT_SLOWER]
    numpy_m, jit_m = slower.measurements
    assert note != first_note
    shown = analyse(slower)
    jit_t, numpy_t = shown.time(jit_m.case, Mode.JIT), shown.time(numpy_m.case, Mode.NUMPY)
    assert jit_t is not None and numpy_t is not None
    assert f"({fmt.seconds(jit_t.value)} vs {fmt.seconds(numpy_t.value)})" in note.message
    speedup = shown.speedup(jit_m.case.key, Mode.JIT)
    assert speedup is not None and speedup.high is not None and speedup.high < 1
    assert f"jit is {fmt.ratio(1 / speedup.value)} slower" in note.message
    # The processes disagree about it: the interval holds 1, so no note.
    unsure = judgement.pooled_judgement(_run(case((12.5e-3, 9e-3), (31.5e-3, 7e-3))))
    assert judgement.JIT_SLOWER not in [d.code for d in unsure.measurements[1].diagnostics]


def seed_case() -> list[Measurement]:
    """The seed of issue 14: gemm NumPy at S 49.5 ms (a BLAS stall), at M 45.6 ms."""
    s_bytes, m_bytes = 2 * 350 * 350 * 4, 2 * 700 * 700 * 4
    return [
        sized("S", Mode.NUMPY, around(49.5e-3), nbytes=s_bytes),
        sized("S", Mode.JIT, around(4.5e-3), nbytes=s_bytes),
        sized("M", Mode.NUMPY, around(45.6e-3), nbytes=m_bytes),
        sized("M", Mode.JIT, around(40e-3), nbytes=m_bytes),
    ]


def test_the_seed_case_marks_the_smaller_size_and_names_the_larger() -> None:
    run = judgement.run_diagnostics(_run(seed_case()))
    assert run_codes(run) == {
        ("S", "numpy"): [judgement.SIZE_ORDER],
        ("S", "jit"): [],
        ("M", "numpy"): [],
        ("M", "jit"): [],
    }
    [d] = run.measurements[0].diagnostics
    assert d.severity is Severity.WARNING
    assert d.message.startswith(
        "numpy at S (49.5 ms) is slower than at M (45.6 ms, 4× the input bytes)"
    )
    assert "left out of the geometric-mean speedup" in d.message
    assert "jitbench run gemm -s S,M" in d.hint and "--threads 1" in d.hint
    figures = analyse(run)
    s_numpy, m_numpy = run.measurements[0], run.measurements[2]
    assert figures.figure(s_numpy.case, Mode.JIT).suspect  # type: ignore[union-attr]
    assert not figures.figure(m_numpy.case, Mode.JIT).suspect  # type: ignore[union-attr]
    assert judgement.run_diagnostics(run) == run  # idempotent


def test_the_worst_contradiction_is_named_across_three_sizes() -> None:
    ms = [
        sized("S", Mode.NUMPY, around(9e-3), nbytes=100),
        sized("M", Mode.NUMPY, around(5e-3), nbytes=1_000),
        sized("L", Mode.NUMPY, around(8e-3), nbytes=10_000),
    ]
    run = judgement.run_diagnostics(_run(ms))
    assert run_codes(run) == {
        ("S", "numpy"): [judgement.SIZE_ORDER],
        ("M", "numpy"): [],
        ("L", "numpy"): [],
    }
    assert (
        "slower than at L (8 ms, 100× the input bytes)"
        in run.measurements[0].diagnostics[0].message
    )


@pytest.mark.parametrize(
    "ms",
    [
        # Overlapping CIs: S is slower by the median only.
        [
            sized("S", Mode.NUMPY, around(10.2e-3, rel=0.1), nbytes=100),
            sized("M", Mode.NUMPY, around(10e-3, rel=0.1), nbytes=1_000),
        ],
        # Apart, but by less than the margin (a sweep's neighbouring points).
        [
            sized("n=1000", Mode.NUMPY, around(10.3e-3, rel=0.001), nbytes=1_000),
            sized("n=1024", Mode.NUMPY, around(10e-3, rel=0.001), nbytes=1_024),
        ],
        # Calls dominated by per-call overhead: flat in the size, their order is drift.
        [
            sized("S", Mode.JIT, around(60e-6), nbytes=100),
            sized("M", Mode.JIT, around(50e-6), nbytes=1_000),
        ],
        # Longer calls whose time split shows them dispatch-bound (eager on a GPU).
        [
            sized("S", Mode.EAGER, around(680e-6), nbytes=100),
            replace(
                sized("L", Mode.EAGER, around(540e-6), nbytes=1_000),
                time_split=TimeSplit(calls=5, wall_s=6e-4, host_s=5.7e-4, device_s=2e-5),
            ),
        ],
        # Same input size (a preset that changes an iteration count, not the input).
        [
            sized("S", Mode.NUMPY, around(20e-3), nbytes=1_000),
            sized("M", Mode.NUMPY, around(10e-3), nbytes=1_000),
        ],
        # Different modes, devices or workloads are never compared.
        [
            sized("S", Mode.NUMPY, around(20e-3), nbytes=100),
            sized("M", Mode.JIT, around(10e-3), nbytes=1_000),
            sized("M", Mode.NUMPY, around(10e-3), nbytes=1_000, device="gpu:0"),
            sized("M", Mode.NUMPY, around(10e-3), nbytes=1_000, workload="other"),
        ],
        # No recorded input size (a failed input function, an old file).
        [
            sized("S", Mode.NUMPY, around(20e-3), nbytes=None),
            sized("M", Mode.NUMPY, around(10e-3), nbytes=None),
        ],
    ],
)
def test_no_inversion_without_a_clear_contradiction(ms: list[Measurement]) -> None:
    run = judgement.run_diagnostics(_run(ms))
    assert all(not codes for codes in run_codes(run).values()), run_codes(run)


def test_sizes_are_ordered_by_elements_when_bytes_are_unknown() -> None:
    ms = [
        sized("S", Mode.NUMPY, around(20e-3), nbytes=None, elements=10),
        sized("M", Mode.NUMPY, around(10e-3), nbytes=None, elements=100),
    ]
    run = judgement.run_diagnostics(_run(ms))
    assert run_codes(run)[("S", "numpy")] == [judgement.SIZE_ORDER]
    assert "10× the elements" in run.measurements[0].diagnostics[0].message


def test_run_level_codes_are_listed_and_survive_the_json_round_trip() -> None:
    assert {judgement.OUTLIERS, judgement.SIZE_ORDER} <= diagnose.CODES
    run = judgement.run_diagnostics(_run(seed_case()))
    again = run_from_dict(json.loads(dump_run(run)))
    assert run_codes(again) == run_codes(run)


def test_the_terminal_table_and_problems_show_the_inversion() -> None:
    from rich.console import Console

    run = judgement.run_diagnostics(_run(seed_case()))
    console = Console(width=250, record=True)
    console.print(summary_table(run))
    text = console.export_text()
    assert "numpy: size-order-inverted" in text
    assert any(
        line.startswith("gemm[S] cpu:0 float32 numpy: size-order-inverted: numpy at S")
        for line in problems(run)
    )


def test_the_noisy_count_is_one_tally_that_the_terminal_and_the_page_both_quote() -> None:
    from jitbench.config import RunConfig, SamplingPlan
    from jitbench.render.run_table import noisy_footer
    from jitbench.report.data import run_notes
    from jitbench.results.model import RecordedConfig

    quiet = m(Mode.JIT, around(1e-3))
    loud = replace(m(Mode.NUMPY, around(2e-3)), diagnostics=(judgement.noisy(0.05, 0.02),))
    run = replace(
        _run([quiet, loud]),
        config=RecordedConfig(settings=RunConfig(plan=SamplingPlan(precision=0.02))),
    )
    tally = judgement.noisy_tally(run)
    assert tally == judgement.NoisyTally(noisy=1, measurements=2, precision=0.02)
    said = "1 of 2 measurements did not reach the ±2 % target"
    footer = noisy_footer(run)
    assert footer is not None and said in footer
    assert any(said in note.text for note in run_notes(run))
    assert judgement.noisy_tally(_run([quiet])) is None
