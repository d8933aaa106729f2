"""The progress estimate (`jitbench.runner.progress`): cases done, the step of the current
case and the time left, from the run's events and a fake clock (exact arithmetic)."""

from __future__ import annotations

import pytest

from jitbench.formatting import eta as eta_text
from jitbench.results import Case
from jitbench.runner.events import (
    CaseFinished,
    CaseProgress,
    CaseStarted,
    ProcessStarted,
    RoundStarted,
    RunStarted,
)
from jitbench.runner.progress import OVERHEAD_PRIOR_S, ProgressEstimate


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _case(name: str) -> Case:
    return Case(workload=name, size="S", device="cpu:0", dtype="float32")


def test_eta_from_the_plan_then_from_finished_cases() -> None:
    clock = Clock()
    est = ProgressEstimate(clock=clock)
    assert est.eta_s() is None and eta_text(None) == ""
    est.update(RunStarted("r", total_cases=4, budget_s=0.5))
    # Before any case: 4 × (the overhead prior + the budget).
    assert est.eta_s() == pytest.approx(4 * (OVERHEAD_PRIOR_S + 0.5))
    a = _case("a")
    est.update(CaseStarted(a, 0, 4))
    est.update(CaseProgress(a, 0, 1, 4, "jit compile"))
    clock.now += 0.5  # half the prior overhead spent
    assert est.description() == "a[S] cpu:0 float32 · jit compile"
    assert est.eta_s() == pytest.approx(0.5 + 0.5 + 3 * (OVERHEAD_PRIOR_S + 0.5))
    clock.now += 0.5
    est.update(CaseProgress(a, 0, 1, 4, "sampling", 0.0))
    clock.now += 0.25
    est.update(CaseProgress(a, 0, 1, 4, "sampling", 0.5))  # moves during the case
    assert est.eta_s() == pytest.approx(0.25 + 3 * (OVERHEAD_PRIOR_S + 0.5))
    clock.now += 0.25
    est.update(CaseFinished(a, 0, 4, ()))
    # The case took 1.5 s: 1 s beyond its budget is the overhead now expected per case.
    assert est.done_cases == 1 and est.overhead_s == pytest.approx(1.0)
    assert est.eta_s() == pytest.approx(3 * (1.0 + 0.5))
    assert est.fraction() == pytest.approx(1.5 / (1.5 + 4.5))


def test_later_rounds_and_repeated_compiles_count() -> None:
    clock = Clock()
    est = ProgressEstimate(clock=clock)
    est.update(RunStarted("r", total_cases=2, budget_s=0.3, rounds=3))
    for i, name in enumerate("ab"):
        case = _case(name)
        est.update(CaseStarted(case, i, 2))
        clock.now += 1.1  # overhead 1 s + its first round (0.1 s)
        est.update(CaseFinished(case, i, 2, ()))
    assert est.overhead_s == pytest.approx(1.0)
    # Two more rounds of both cases (0.1 s each), then two repeated compiles per case at
    # half the overhead each.
    assert est.eta_s() == pytest.approx(2 * 2 * 0.1 + 2 * 2 * 0.5)
    est.update(RoundStarted(2, 3, 2))
    est.update(CaseProgress(_case("a"), 0, 1, 2, "sampling", 0.5, round=2))
    assert est.eta_s() == pytest.approx(0.05 + 0.1 + 2 * 0.1 + 2 * 2 * 0.5)
    est.update(RoundStarted(3, 3, 2))
    est.update(CaseProgress(_case("a"), 0, 1, 2, "sampling", 1.0, round=3))
    est.update(CaseProgress(_case("b"), 1, 1, 2, "sampling", 1.0, round=3))
    assert est.eta_s() == pytest.approx(2 * 2 * 0.5)
    est.update(CaseProgress(_case("a"), 0, 1, 2, "jit compile again", None, round=4))
    clock.now += 0.2
    assert est.eta_s() == pytest.approx(0.3 + 3 * 0.5)


def test_worker_processes_take_as_long_as_the_first() -> None:
    clock = Clock()
    est = ProgressEstimate(clock=clock)
    est.update(RunStarted("r", total_cases=1, budget_s=0.5, processes=3))
    a = _case("a")
    est.update(CaseStarted(a, 0, 1))
    clock.now += 2.0
    est.update(CaseFinished(a, 0, 1, ()))
    assert est.eta_s() == pytest.approx(2 * 2.0)  # two more processes like this one
    est.update(ProcessStarted(2, 3))
    clock.now += 0.5
    assert est.eta_s() == pytest.approx(1.5 + 2.0)
    assert "worker process 2/3" in est.description()


def test_a_second_process_beside_the_first_adds_no_time_and_a_pair_is_named() -> None:
    """With the second process measuring beside the first (`RunStarted.beside`), only the
    third of three is foreseen after the first; two extra processes side by side are
    announced by both numbers."""
    clock = Clock()
    est = ProgressEstimate(clock=clock)
    est.update(RunStarted("r", total_cases=1, budget_s=0.5, processes=3, beside=True))
    a = _case("a")
    est.update(CaseStarted(a, 0, 1))
    clock.now += 2.0
    est.update(CaseFinished(a, 0, 1, ()))
    assert est.eta_s() == pytest.approx(2.0)  # the third process; the second ran beside
    est.update(ProcessStarted(5, 5, cases=1, together=2))
    assert "extra processes 4 and 5: 1 case(s)" in est.description()


def test_the_second_beside_the_first_is_estimated_from_what_it_has_left() -> None:
    """Beside the first, the second has measured most of its cases when the first ends:
    its cases reported since it started say how much is left at the first's pace (3 of
    4 done: a quarter of the first's 8 s), not a pace counted from the first's end."""
    from jitbench.runner.events import WorkerProgress

    clock = Clock()
    est = ProgressEstimate(clock=clock)
    est.update(RunStarted("r", total_cases=4, budget_s=0.5, processes=2, beside=True))
    for i in range(4):
        case = _case(f"c{i}")
        est.update(CaseStarted(case, i, 4))
        clock.now += 2.0
        est.update(CaseFinished(case, i, 4, ()))
    est.update(ProcessStarted(2, 2))
    clock.now += 1.0
    est.update(WorkerProgress(done=3, total=4))
    assert est.eta_s() == pytest.approx(8.0 * (1 - 3 / 4))


def test_an_extra_process_takes_its_share_of_the_cases_time() -> None:
    """An extra process measures the cases whose intervals are widest: 1 of 4 here, so a
    quarter of what the first process took, and nothing after it is foreseen."""
    clock = Clock()
    est = ProgressEstimate(clock=clock)
    est.update(RunStarted("r", total_cases=4, budget_s=0.5, processes=2))
    for i in range(4):
        c = _case(f"c{i}")
        est.update(CaseStarted(c, i, 4))
        clock.now += 2.0
        est.update(CaseFinished(c, i, 4, ()))
    est.update(ProcessStarted(2, 2))
    clock.now += 8.0
    est.update(ProcessStarted(3, 3, cases=1))
    clock.now += 0.5
    assert est.eta_s() == pytest.approx(2.0 - 0.5)
    assert "extra process 3: 1 case(s) whose intervals are widest" in est.description()


def test_a_resumed_runs_workers_are_taken_to_measure_every_case() -> None:
    """Resumed with 3 of 4 cases in the file, the first process measures one; each worker
    measures all four again, so it takes four times as long, not as long as the first."""
    clock = Clock()
    est = ProgressEstimate(clock=clock)
    est.update(RunStarted("r", total_cases=4, done_cases=3, budget_s=0.5, processes=2))
    a = _case("a")
    est.update(CaseStarted(a, 3, 4))
    clock.now += 2.0
    est.update(CaseFinished(a, 3, 4, ()))
    assert est.eta_s() == pytest.approx(4 * 2.0)
    est.update(ProcessStarted(2, 2))
    clock.now += 1.0
    assert est.eta_s() == pytest.approx(7.0)
    # Nothing left for the first process: a worker is taken to cost the prior per case.
    est = ProgressEstimate(clock=clock)
    est.update(RunStarted("r", total_cases=2, done_cases=2, budget_s=0.5, processes=2))
    assert est.eta_s() == pytest.approx(2 * (est.overhead_s + 0.5))


def test_eta_text() -> None:
    assert eta_text(7.4) == "ETA 0:07"
    assert eta_text(65) == "ETA 1:05"
    assert eta_text(3723) == "ETA 1:02:03"


def test_the_estimate_learns_by_size_and_leaves_timeouts_out_of_the_workers() -> None:
    """A case left is priced at what the finished cases of its size cost; a mode that ran
    past --timeout is not measured again by a worker, which then takes that much less."""
    from jitbench.results import Measurement, Mode, Status

    clock = Clock()
    est = ProgressEstimate(clock=clock)
    sizes = ("S", "M", "S", "M")
    est.update(RunStarted("r", 4, budget_s=0.5, processes=2, sizes=sizes, timeout_s=10.0))
    small = Case(workload="a", size="S", device="cpu:0", dtype="float32")
    big = Case(workload="b", size="M", device="cpu:0", dtype="float32")
    est.update(CaseStarted(small, 0, 4))
    clock.now += 1.5  # S: 1 s beyond the budget
    est.update(CaseFinished(small, 0, 4, ()))
    est.update(CaseStarted(big, 1, 4))
    clock.now += 20.5  # M: 20 s beyond the budget, eager stopped at its 10 s timeout
    timed_out = Measurement(case=big, mode=Mode.EAGER, status=Status.TIMEOUT)
    est.update(CaseFinished(big, 1, 4, (timed_out,)))
    assert est.overhead_s == pytest.approx(10.5)
    # Left: one S (1 + 0.5) and one M (20 + 0.5), not twice the mean; the worker process
    # then takes the first's 22 + 22 s less the 10 s timeout.
    this_process = 22.0 + 1.5 + 20.5
    assert est.eta_s() == pytest.approx(22.0 + this_process - 10.0)


def test_a_worker_process_is_estimated_at_its_own_pace_once_it_reports() -> None:
    from jitbench.runner.events import WorkerProgress

    clock = Clock()
    est = ProgressEstimate(clock=clock)
    est.update(RunStarted("r", 2, budget_s=0.5, processes=2, sizes=("S", "S")))
    for i, name in enumerate("ab"):
        est.update(CaseStarted(_case(name), i, 2))
        clock.now += 10.0
        est.update(CaseFinished(_case(name), i, 2, ()))
    est.update(ProcessStarted(index=2, total=2))
    assert est.eta_s() == pytest.approx(20.0)  # the first process's 20 s, before it reports
    clock.now += 2.0
    est.update(WorkerProgress(done=1, total=2))
    assert est.eta_s() == pytest.approx(2.0)  # 2 s a case: one case left
