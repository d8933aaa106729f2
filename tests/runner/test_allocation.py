"""cases_for_another_process: which cases of a pooled run another process measures."""

from __future__ import annotations

import math

from jitbench.results import Case, Measurement, Mode, Run, Status
from jitbench.results.analysis import analyse
from jitbench.runner.allocation import WIDE_INTERVAL, cases_for_another_process

ROUNDS = 6  # paired samples per process


def case(name: str, size: str = "S") -> Case:
    return Case(workload=name, size=size, device="cpu:0", dtype="float32", params={"n": 8})


def measured(c: Case, mode: Mode, per_process: list[float], **fields: object) -> Measurement:
    """A measurement pooled from one process per entry of `per_process` (that process's
    time per call), `ROUNDS` paired samples each with a little in-process jitter."""
    jitter = (1.0, 1.01, 0.99, 1.02, 0.98, 1.0)
    samples = tuple(t * j for t in per_process for j in jitter[:ROUNDS])
    counts = (ROUNDS,) * len(per_process) if len(per_process) > 1 else ()
    return Measurement(
        case=c,
        mode=mode,
        status=Status.OK,
        samples_s=samples,
        calls_per_sample=1,
        run_sample_counts=counts,
        **fields,  # type: ignore[arg-type]
    )


def run_of(*ms: Measurement) -> Run:
    return Run(
        run_id="r",
        started_at="2026-11-26T00:00:00+00:00",
        finished_at=None,
        complete=False,
        environment={},
        measurements=ms,
    )


def pair(name: str, numpy: list[float], jit: list[float], size: str = "S") -> list[Measurement]:
    c = case(name, size)
    return [measured(c, Mode.NUMPY, numpy), measured(c, Mode.JIT, jit)]


def steady(name: str, processes: int = 2) -> list[Measurement]:
    """A case whose processes measured the same speedup (2x) to within 1 %."""
    jit = [1.0 * (1 + 0.01 * (i % 2)) for i in range(processes)]
    return pair(name, [2.0] * processes, jit)


def calm_suite(processes: int = 2) -> list[Measurement]:
    """Five steady cases: most of a suite agrees from process to process, so the run's
    typical spread, which each case's interval is shrunk toward, is small."""
    return [m for i in range(5) for m in steady(f"calm{i}", processes)]


def width(run: Run, name: str, size: str = "S") -> float:
    r = analyse(run).speedup(case(name, size).key, Mode.JIT)
    assert r is not None and r.low is not None and r.high is not None
    return math.sqrt(r.high / r.low)


def test_only_cases_whose_interval_is_wider_than_the_bound_get_another_process() -> None:
    run = run_of(
        *calm_suite(),
        *pair("wild", [2.0, 2.0], [1.0, 1.3]),  # jit's speedup 2.0x, then 1.54x
    )
    assert width(run, "calm0") <= WIDE_INTERVAL < width(run, "wild")
    assert cases_for_another_process(run, most=4) == [case("wild").key]


def test_the_widest_first_and_processes_that_disagree_before_them() -> None:
    run = run_of(
        *pair("wide", [2.0, 2.0], [1.0, 1.2]),
        *pair("wider", [2.0, 2.0], [1.0, 1.4]),
        *calm_suite(),
        # every mode 1.6x slower in the second process: the speedup holds (narrow), but the
        # times rest on two processes that disagree
        *pair("split", [2.0, 3.2], [1.0, 1.6]),
        # ... and one whose speedup moved too (2.0x, then 1.45x)
        *pair("split and wide", [2.0, 3.2], [1.0, 2.2]),
    )
    assert width(run, "split") <= WIDE_INTERVAL < width(run, "split and wide")
    assert width(run, "wider") > width(run, "wide") > WIDE_INTERVAL
    assert cases_for_another_process(run, most=4) == [
        case("split and wide").key,
        case("split").key,
        case("wider").key,
        case("wide").key,
    ]


def test_a_case_measured_in_the_most_processes_already_gets_no_more() -> None:
    run = run_of(
        *pair("wild", [2.0] * 4, [1.0, 1.3, 1.0, 1.3]),
        *pair("young", [2.0, 2.0], [1.0, 1.3]),
        *calm_suite(4),
    )
    assert width(run, "wild") > WIDE_INTERVAL
    assert cases_for_another_process(run, most=4) == [case("young").key]
    assert cases_for_another_process(run, most=2) == []


def test_one_process_failed_cases_and_cases_without_an_interval_get_none() -> None:
    broken = case("broken")
    one = run_of(*pair("single", [2.0], [1.3]))
    assert cases_for_another_process(one, most=4) == []
    run = run_of(
        *pair("wild", [2.0, 2.0], [1.0, 1.3]),
        measured(broken, Mode.NUMPY, [2.0, 2.0]),
        Measurement(case=broken, mode=Mode.JIT, status=Status.MISMATCH),
        *calm_suite(),
    )
    assert cases_for_another_process(run, most=4) == [case("wild").key]


def test_a_wide_eager_interval_alone_asks_for_none() -> None:
    dispatch, both = case("dispatch"), case("both")
    run = run_of(
        measured(dispatch, Mode.NUMPY, [2.0, 2.0]),
        measured(dispatch, Mode.EAGER, [1.0, 1.3]),
        measured(dispatch, Mode.JIT, [1.0, 1.0]),
        measured(both, Mode.NUMPY, [2.0, 2.0]),
        measured(both, Mode.EAGER, [1.0, 1.3]),
        measured(both, Mode.JIT, [1.0, 1.3]),
        *calm_suite(),
    )
    eager = analyse(run).speedup(dispatch.key, Mode.EAGER)
    assert eager is not None and eager.low and eager.high
    assert math.sqrt(eager.high / eager.low) > WIDE_INTERVAL
    assert cases_for_another_process(run, most=4) == [both.key]


def test_cases_measured_in_different_numbers_of_processes_are_judged_each_on_its_own() -> None:
    # A run whose extra processes measured some cases: 3 processes for one, 2 for another.
    run = run_of(
        *pair("third", [2.0, 2.0, 2.0], [1.0, 1.3, 1.15]),
        *pair("two", [2.0, 2.0], [1.0, 1.3]),
        *calm_suite(),
    )
    picked = cases_for_another_process(run, most=4)
    assert set(picked) == {case("third").key, case("two").key}
    assert cases_for_another_process(run, most=3) == [case("two").key]
