"""The interleaved gate's judge (`gate.paired`) on runs built from the real result types.

The machine's drift is simulated as a factor shared by both sides of a round; the point
of pairing is that it cancels, where the unpaired gate cannot see past it.
"""

from __future__ import annotations

import random

import pytest

from jitbench.gate import Thresholds, Verdict, compare, compare_interleaved
from jitbench.gate.model import SignificanceTest
from jitbench.gate.paired import are_partners, paired_logs
from jitbench.render.comparison import thresholds_line
from jitbench.results import CompileInfo, Mode, Status
from tests.gate.builders import make_run, meas, only


def _partners(base_ms, new_ms, *, pairs: int = 1):
    """Two runs that record each other as interleaved partners."""

    def config(side: str, partner: str) -> dict:
        return {
            "plan": {"budget_s": 1.0},
            "interleaved": {"side": side, "partner_run_id": partner, "pairs": pairs},
        }

    return (
        make_run(*base_ms, run_id="b", config=config("base", "n")),
        make_run(*new_ms, run_id="n", config=config("new", "b")),
    )


def _drifting(n: int, factor: float, seed: int, *, drift: float = 0.4, noise: float = 0.01):
    """(base, new) samples of n rounds: each round's speed drifts by up to ×/÷ (1+drift),
    the same for both sides, and new is `factor` times base beside a small noise."""
    rng = random.Random(seed)
    base, new = [], []
    for _ in range(n):
        level = 1e-3 * (1 + drift) ** rng.uniform(-1, 1)
        base.append(level * (1 + rng.gauss(0, noise)))
        new.append(level * factor * (1 + rng.gauss(0, noise)))
    return tuple(base), tuple(new)


def test_partners_are_recognised_only_both_ways() -> None:
    b, n = _partners([meas(samples=(1e-3,) * 3)], [meas(samples=(1e-3,) * 3)])
    assert are_partners(b, n)
    assert not are_partners(n, b)
    plain = make_run(meas(samples=(1e-3,) * 3), run_id="n")
    assert not are_partners(b, plain)


def test_a_ten_percent_slowdown_under_drift_is_caught_only_when_paired() -> None:
    base_s, new_s = _drifting(40, 1.10, seed=1)
    b, n = _partners([meas(samples=base_s)], [meas(samples=new_s)])
    paired = only(compare_interleaved(b, n, thresholds=Thresholds(threshold=1.05)))
    assert paired.verdict is Verdict.REGRESSION
    assert paired.test is SignificanceTest.PAIRED
    assert paired.ratio == pytest.approx(1.10, rel=0.02)
    assert paired.ratio_low is not None and paired.ratio_low > 1.05
    # The unpaired gate sees two overlapping clouds: the drift hides the change.
    unpaired = only(compare(b, n, thresholds=Thresholds(threshold=1.05)))
    assert unpaired.verdict is Verdict.UNCHANGED


@pytest.mark.parametrize("seed", range(5))
def test_identical_code_under_drift_is_not_flagged(seed: int) -> None:
    base_s, new_s = _drifting(40, 1.0, seed=seed)
    b, n = _partners([meas(samples=base_s)], [meas(samples=new_s)])
    entry = only(compare_interleaved(b, n, thresholds=Thresholds(threshold=1.05)))
    assert entry.verdict is Verdict.UNCHANGED
    assert entry.ratio == pytest.approx(1.0, abs=0.02)


def test_a_difference_living_in_one_worker_pair_is_not_the_codes() -> None:
    """Two worker pairs: the first pair's new process is 8 % slower, the second's is not.
    Within pair 1 that is significant; across pairs it is not a property of the code."""
    b1, n1 = _drifting(30, 1.08, seed=3)
    b2, n2 = _drifting(30, 1.00, seed=4)
    base = meas(samples=b1 + b2)
    new = meas(samples=n1 + n2)
    from dataclasses import replace

    base, new = replace(base, run_sample_counts=(30, 30)), replace(new, run_sample_counts=(30, 30))
    b, n = _partners([base], [new], pairs=2)
    assert paired_logs(b.measurements[0], n.measurements[0]) is not None
    entry = only(compare_interleaved(b, n, thresholds=Thresholds(threshold=1.03)))
    assert entry.verdict is Verdict.UNCHANGED


def _three_pairs(workload: str, factors, *, noise: float, seed: int):
    """(base, new) measurements of three worker pairs, 40 rounds each; pair i's new
    process is `factors[i]` times its base."""
    from dataclasses import replace

    parts = [_drifting(40, f, seed=seed + i, noise=noise) for i, f in enumerate(factors)]
    base = meas(workload, samples=tuple(x for b, _ in parts for x in b))
    new = meas(workload, samples=tuple(x for _, n in parts for x in n))
    counts = (40, 40, 40)
    return replace(base, run_sample_counts=counts), replace(new, run_sample_counts=counts)


def test_a_workload_is_judged_by_its_own_scatter_not_the_suites() -> None:
    """A quiet suite and one workload whose rounds scatter widely; its three pairs put new
    2, 8 and 14 % slower. For a workload that scatters so, pairs that far apart are what
    processes do, not evidence; a quiet workload's three pairs at 7–9 % are."""
    rng = random.Random(0)
    quiet = [
        _three_pairs(f"q{i}", [1 + rng.gauss(0, 0.004) for _ in range(3)], noise=0.01, seed=10 * i)
        for i in range(12)
    ]
    scattered = _three_pairs("scatter", (1.02, 1.08, 1.14), noise=0.05, seed=500)
    steady = _three_pairs("steady", (1.07, 1.08, 1.09), noise=0.01, seed=600)
    cases = [*quiet, scattered, steady]
    b, n = _partners([c[0] for c in cases], [c[1] for c in cases], pairs=3)
    judged = compare_interleaved(b, n, thresholds=Thresholds(threshold=1.05))
    entries = {e.workload: e for e in judged.entries}
    assert entries["scatter"].verdict is Verdict.UNCHANGED
    assert entries["steady"].verdict is Verdict.REGRESSION
    assert all(entries[f"q{i}"].verdict is Verdict.UNCHANGED for i in range(12))


def test_unpaired_samples_fall_back_to_the_plain_test() -> None:
    b, n = _partners([meas(samples=(1e-3,) * 12)], [meas(samples=(1e-3,) * 10)])
    entry = only(compare_interleaved(b, n))
    assert entry.test is SignificanceTest.SAMPLES


def _with_compiles(m, compiles):
    from dataclasses import replace

    return replace(
        m,
        compile=CompileInfo(
            trace_s=0.0, lower_s=0.0, compile_s=compiles[0], compile_repeats_s=tuple(compiles)
        ),
    )


def test_paired_compiles_catch_a_compile_regression_and_spare_identical_code() -> None:
    base_s, new_s = _drifting(20, 1.0, seed=5)
    base_c = (0.20, 0.31, 0.24, 0.22, 0.27)
    slower = tuple(c * 1.5 for c in base_c)
    same = tuple(c * f for c, f in zip(base_c, (1.02, 0.97, 1.01, 0.99, 1.03), strict=True))
    b, n = _partners(
        [
            _with_compiles(meas(samples=base_s), base_c),
            _with_compiles(meas("v", samples=base_s), base_c),
        ],
        [
            _with_compiles(meas(samples=new_s), slower),
            _with_compiles(meas("v", samples=new_s), same),
        ],
    )
    cmp = compare_interleaved(b, n)
    regressed = only(cmp, "w").compile
    assert regressed is not None and regressed.verdict is Verdict.REGRESSION
    assert regressed.count == 5 and regressed.ratio == pytest.approx(1.5)
    unchanged = only(cmp, "v").compile
    assert unchanged is not None and unchanged.verdict is Verdict.UNCHANGED
    assert cmp.has_regression and cmp.regressed_workloads == ("w",)
    line = thresholds_line(cmp)
    assert "a t-test on paired cold compiles p < 0.01" in line and "Mann–Whitney" not in line


def test_compiles_that_do_not_pair_are_tested_unpaired_and_the_line_names_both_tests() -> None:
    """Five cold compiles against six do not pair: Mann–Whitney judges them, unadjusted
    by `compare` first (its adjusted p is not adjusted again), and the thresholds line
    names both tests."""
    base_s, new_s = _drifting(20, 1.0, seed=5)
    base_c = (0.20, 0.31, 0.24, 0.22, 0.27)
    b, n = _partners(
        [
            _with_compiles(meas(samples=base_s), base_c),
            _with_compiles(meas("u", samples=base_s), base_c),
        ],
        [
            _with_compiles(meas(samples=new_s), tuple(c * 1.5 for c in base_c)),
            _with_compiles(meas("u", samples=new_s), (*(c * 2 for c in base_c), 0.5)),
        ],
    )
    cmp = compare_interleaved(b, n)
    unpaired = only(cmp, "u").compile
    assert unpaired is not None and unpaired.paired_ratio is None
    assert unpaired.verdict is Verdict.REGRESSION and unpaired.count == 5
    # Mann–Whitney's p for 5 against 6 fully apart is 2/462; ranked second of the two
    # compile tests, Benjamini–Hochberg leaves it at that (× 2/2), adjusted once.
    assert unpaired.p_value == pytest.approx(2 / 462, rel=1e-6)
    line = thresholds_line(cmp)
    assert "a t-test on paired cold compiles or, with enough cold compiles a side" in line


def test_a_case_failing_on_one_side_is_now_failing_not_a_timing_regression() -> None:
    base_s, _ = _drifting(20, 1.0, seed=6)
    b, n = _partners([meas(samples=base_s)], [meas(status=Status.ERROR)])
    entry = only(compare_interleaved(b, n))
    assert entry.verdict is Verdict.NOW_FAILING
    assert entry.ratio is None


def test_the_summary_names_the_interleaved_test() -> None:
    from jitbench.render.comparison import thresholds_line

    base_s, new_s = _drifting(20, 1.0, seed=7)
    b, n = _partners(
        [meas(samples=base_s, mode=Mode.NUMPY)], [meas(samples=new_s, mode=Mode.NUMPY)]
    )
    cmp = compare_interleaved(b, n)
    assert "signed-rank" in thresholds_line(cmp)
    assert any("interleaved" in p.text for p in cmp.pooling)
    # Which side a run was is not an environment difference.
    assert not [d for d in cmp.environment_differences if "interleaved" in d.name]


def test_times_that_moved_against_the_paired_ratio_are_said_to():
    """Drift falls unevenly on the two sides' medians: here they read 1.5 ms → 1.05 ms
    (faster) while five of six rounds were 5 % slower, and the rounds decide."""
    base = (1.0e-3, 1.0e-3, 2.0e-3, 2.0e-3, 3.0e-3, 1.0e-3)
    new = (1.05e-3, 1.05e-3, 2.1e-3, 2.1e-3, 0.5e-3, 0.98e-3)
    b, n = _partners([meas(samples=base)], [meas(samples=new)])
    e = only(compare_interleaved(b, n))
    assert e.ratio > 1 and e.new_s < e.base_s
    assert "the times moved the other way (1.5 ms → 1.05 ms); the per-round ratios decide" in (
        e.note
    )
    agreeing = only(compare_interleaved(*_partners([meas(samples=base)], [meas(samples=base)])))
    assert "moved the other way" not in agreeing.note
