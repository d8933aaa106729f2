"""Derived figures of the result model: paired speedups from lockstep rounds."""

from __future__ import annotations

from dataclasses import replace

import pytest

from jitbench import stats
from jitbench.results import Mode, Run
from tests.results.test_codec import make_run

DRIFT = (1.0, 1.7, 0.9, 2.3, 1.1, 1.5, 0.95, 1.9, 1.2, 1.05)


def _drifting(run: Run) -> Run:
    """NumPy 2 ms and jit 1 ms per call, both slowed by the same factor in each round."""
    ms = []
    for m in run.measurements:
        base = 2e-3 if m.mode is Mode.NUMPY else 1e-3
        ms.append(replace(m, samples_s=tuple(base * d for d in DRIFT)))
    return replace(run, measurements=tuple(ms))


def test_runs_from_schema_1_3_on_are_paired_older_ones_are_not() -> None:
    assert make_run().paired
    assert not make_run(schema_version="1.2").paired
    assert not make_run(schema_version="garbage").paired


def test_a_paired_run_takes_the_speedup_round_by_round() -> None:
    run = _drifting(make_run())
    key = run.measurements[0].case.key
    speedup = run.speedup(key, Mode.JIT)
    assert speedup == stats.Ratio(pytest.approx(2.0), pytest.approx(2.0), pytest.approx(2.0))


def test_an_older_run_keeps_the_unpaired_ratio_of_medians() -> None:
    run = _drifting(make_run(schema_version="1.2"))
    key = run.measurements[0].case.key
    speedup = run.speedup(key, Mode.JIT)
    assert speedup is not None and speedup.value == pytest.approx(2.0)
    assert speedup.low is not None and speedup.high is not None
    assert speedup.high / speedup.low > 1.2  # the drift is not cancelled without pairing


def test_unequal_sample_counts_fall_back_to_unpaired() -> None:
    run = _drifting(make_run())
    numpy_m, jit_m = run.measurements
    run = replace(run, measurements=(numpy_m, replace(jit_m, samples_s=jit_m.samples_s[:-1])))
    speedup = run.speedup(numpy_m.case.key, Mode.JIT)
    assert speedup is not None and speedup.high != speedup.low
