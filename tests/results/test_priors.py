"""A case's interval is shrunk toward the spread of the run's other cases, never its own."""

from __future__ import annotations

import math

from jitbench import stats
from jitbench.config import Mode
from jitbench.results import Case, Measurement, Run, Status
from jitbench.results.analysis import analyse
from jitbench.results.analysis.estimates import PROCESS_PRIOR_DF, typical_variance
from jitbench.results.analysis.figures import PRIOR_PEERS


def _two_processes(workload: str, first: float, second: float) -> Measurement:
    return Measurement(
        case=Case(workload=workload, size="S", device="cpu:0", dtype="float32"),
        mode=Mode.JIT,
        status=Status.OK,
        samples_s=(first,) * 5 + (second,) * 5,
        calls_per_sample=1,
        run_sample_counts=(5, 5),
    )


def _run(*ms: Measurement) -> Run:
    return Run(run_id="r", started_at="t", finished_at="t", complete=True, environment={},
               measurements=ms)  # fmt: skip


def test_a_run_of_one_case_has_no_prior_so_its_interval_rests_on_its_own_spread() -> None:
    """`bench` of one function: two processes, one degree of freedom, Student's t of 1
    df, not an interval narrowed by a prior that is the case itself."""
    run = _run(_two_processes("f", 1.00e-3, 1.02e-3))
    shown = analyse(run).case(run.measurements[0].case).get(Mode.JIT)
    assert shown is not None and shown.time is not None
    own = stats.repeat_interval([math.log(1.00e-3), math.log(1.02e-3)], None, 0.0)
    assert shown.time.low == own.low and shown.time.high == own.high
    assert analyse(run).time_prior(Mode.JIT, "cpu:0") is None


def test_a_case_among_enough_peers_is_shrunk_toward_theirs_without_its_own() -> None:
    peers = [_two_processes(f"p{i}", 1e-3, 1e-3 * (1.01 + 0.01 * i)) for i in range(PRIOR_PEERS)]
    wayward = _two_processes("w", 1e-3, 1.5e-3)
    run = _run(wayward, *peers)
    a = analyse(run)
    prior = a.time_prior(Mode.JIT, "cpu:0", excluding=wayward.case.key)
    logs_of_peers = [[math.log(m.samples_s[0]), math.log(m.samples_s[-1])] for m in peers]
    assert prior is not None and math.isclose(prior, typical_variance(logs_of_peers))
    shown = a.case(wayward.case).get(Mode.JIT)
    assert shown is not None and shown.time is not None
    expected = stats.repeat_interval([math.log(1e-3), math.log(1.5e-3)], prior, PROCESS_PRIOR_DF)
    assert math.isclose(shown.time.low, expected.low) and math.isclose(
        shown.time.high, expected.high
    )
    # One peer fewer and there is no prior at all.
    assert (
        analyse(_run(wayward, *peers[1:])).time_prior(Mode.JIT, "cpu:0", excluding=wayward.case.key)
        is None
    )
