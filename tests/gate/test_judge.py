"""Judging (`jitbench.gate.judge`): verdicts from run-time ratios and significance, status
changes, compile time, geometric means, the multiplicity adjustment and the run-level test
of pooled sides, on constructed runs (tests/cli/test_compare.py measures real runs).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from jitbench import stats
from jitbench.gate import (
    SignificanceTest,
    Thresholds,
    Verdict,
    compare,
    compare_compile,
    compare_timing,
    merge_runs,
)
from jitbench.gate.judge import RUN_PRIOR_DF, run_priors, run_spread_of
from jitbench.render.comparison import comparison_markdown, thresholds_line
from jitbench.results import Mode, Run, Status
from tests.gate.builders import STEADY, make_run, meas, only, runs_at_levels, spread

# --- timing classification ------------------------------------------------------------


def test_identical_runs_are_unchanged():
    samples = spread(1e-3, 20, 0.05)
    cmp = compare(make_run(meas(samples=samples)), make_run(meas(samples=samples)))
    e = only(cmp)
    assert e.verdict is Verdict.UNCHANGED
    assert e.ratio == pytest.approx(1.0)
    assert e.p_value == pytest.approx(1.0, abs=1e-9) or e.p_value > 0.9
    assert not cmp.has_regression


def test_large_and_significant_slowdown_is_a_regression():
    base, new = spread(1e-3, 15), spread(1.3e-3, 15)
    cmp = compare(make_run(meas(samples=base)), make_run(meas(samples=new)))
    e = only(cmp)
    assert e.verdict is Verdict.REGRESSION
    assert e.ratio == pytest.approx(1.3)
    assert e.p_value < 0.01
    assert cmp.has_regression and cmp.regressed_workloads == ("w",)


def test_large_and_significant_speedup_is_an_improvement():
    cmp = compare(
        make_run(meas(samples=spread(1.3e-3, 15))), make_run(meas(samples=spread(1e-3, 15)))
    )
    assert only(cmp).verdict is Verdict.IMPROVEMENT
    assert not cmp.has_regression


def test_significant_but_small_change_is_unchanged():
    # 5 % slower with tight samples: significant, but below the 1.10 factor.
    cmp = compare(
        make_run(meas(samples=spread(1e-3, 30, 0.005))),
        make_run(meas(samples=spread(1.05e-3, 30, 0.005))),
    )
    e = only(cmp)
    assert e.p_value < 1e-6
    assert e.verdict is Verdict.UNCHANGED


def test_large_but_not_significant_change_is_unchanged():
    # Medians 30 % apart, but the samples overlap almost completely.
    base = tuple(x * 1e-3 for x in (0.9, 0.95, 1.0, 1.0, 1.0, 1.0, 1.5, 1.6, 1.7, 1.8))
    new = tuple(x * 1e-3 for x in (0.9, 0.95, 1.0, 1.3, 1.3, 1.3, 1.5, 1.6, 1.7, 1.8))
    e = only(compare(make_run(meas(samples=base)), make_run(meas(samples=new))))
    assert e.ratio > 1.1
    assert e.p_value >= 0.01
    assert e.verdict is Verdict.UNCHANGED
    assert "not significant" in e.note


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_too_few_samples_are_inconclusive_never_a_regression(n):
    # Twice as slow, but n vs n samples cannot reach p < 0.01 even perfectly separated.
    cmp = compare(make_run(meas(samples=spread(1e-3, n))), make_run(meas(samples=spread(2e-3, n))))
    e = only(cmp)
    assert e.verdict is Verdict.INCONCLUSIVE
    assert "--min-samples" in e.note
    assert not cmp.has_regression


def test_few_samples_within_threshold_are_unchanged():
    cmp = compare(
        make_run(meas(samples=spread(1e-3, 3))), make_run(meas(samples=spread(1.02e-3, 3)))
    )
    assert only(cmp).verdict is Verdict.UNCHANGED


def test_zero_variance_identical_is_unchanged():
    cmp = compare(make_run(meas(samples=(1e-3,) * 12)), make_run(meas(samples=(1e-3,) * 12)))
    e = only(cmp)
    assert e.verdict is Verdict.UNCHANGED and e.p_value == 1.0


def test_zero_variance_on_both_sides_but_different_is_a_regression():
    # Constant samples on each side (a coarse clock): fully separated, so significant.
    cmp = compare(make_run(meas(samples=(1e-3,) * 12)), make_run(meas(samples=(2e-3,) * 12)))
    e = only(cmp)
    assert e.p_value < 1e-4
    assert e.verdict is Verdict.REGRESSION


def test_zero_median_is_not_compared():
    verdict = compare_timing((0.0, 0.0, 0.0), (1e-3, 1e-3, 1e-3), Thresholds()).verdict
    assert verdict is Verdict.NOT_COMPARED


def test_threshold_and_alpha_are_options():
    base, new = spread(1e-3, 15), spread(1.15e-3, 15)
    assert (
        only(compare(make_run(meas(samples=base)), make_run(meas(samples=new)))).verdict
        is Verdict.REGRESSION
    )
    loose = compare(
        make_run(meas(samples=base)),
        make_run(meas(samples=new)),
        thresholds=Thresholds(threshold=1.2),
    )
    assert only(loose).verdict is Verdict.UNCHANGED
    strict_alpha = compare(
        make_run(meas(samples=spread(1e-3, 5))),
        make_run(meas(samples=spread(1.5e-3, 5))),
        thresholds=Thresholds(alpha=0.001),
    )
    assert only(strict_alpha).verdict is Verdict.INCONCLUSIVE


# --- status changes -------------------------------------------------------------------


def test_new_removed_failing_fixed():
    ok = spread(1e-3, 10)
    base = make_run(
        meas("kept", samples=ok),
        meas("gone", samples=ok),
        meas("breaks", samples=ok),
        meas("heals", status=Status.ERROR),
        meas("broken", status=Status.MISMATCH, samples=ok),
        meas("skip", status=Status.SKIPPED),
    )
    new = make_run(
        meas("kept", samples=ok),
        meas("added", samples=ok),
        meas("breaks", status=Status.ERROR),
        meas("heals", samples=ok),
        meas("broken", status=Status.MISMATCH, samples=ok),
        meas("skip", samples=ok),
    )
    cmp = compare(base, new)
    verdicts = {e.workload: e.verdict for e in cmp.entries}
    assert verdicts == {
        "kept": Verdict.UNCHANGED,
        "added": Verdict.NEW,
        "gone": Verdict.REMOVED,
        "breaks": Verdict.NOW_FAILING,
        "heals": Verdict.FIXED,
        "broken": Verdict.STILL_FAILING,
        "skip": Verdict.NOT_COMPARED,
    }
    assert cmp.has_regression
    assert cmp.regressed_workloads == ("breaks",)
    assert only(cmp, "breaks").note == "ValueError"
    # Removed cases come last, after the new run's order.
    assert cmp.entries[-1].workload == "gone"


def test_mismatch_is_now_failing():
    ok = spread(1e-3, 10)
    cmp = compare(make_run(meas(samples=ok)), make_run(meas(status=Status.MISMATCH, samples=ok)))
    assert only(cmp).verdict is Verdict.NOW_FAILING


def test_matching_uses_size_device_dtype_and_mode():
    ok = spread(1e-3, 10)
    cmp = compare(
        make_run(meas(samples=ok, size="S"), meas(samples=ok, mode=Mode.NUMPY)),
        make_run(meas(samples=ok, size="M"), meas(samples=ok, mode=Mode.NUMPY)),
    )
    verdicts = sorted((e.size, e.mode.value, e.verdict.value) for e in cmp.entries)
    assert verdicts == [("M", "jit", "new"), ("S", "jit", "removed"), ("S", "numpy", "unchanged")]


def test_changed_size_parameters_are_noted():
    cmp = compare(
        make_run(meas(samples=spread(1e-3, 10), params={"n": 50})),
        make_run(meas(samples=spread(1e-3, 10), params={"n": 65})),
    )
    assert "n 50→65" in only(cmp).note


# --- compile time ---------------------------------------------------------------------


FIVE = (0.98, 0.99, 1.0, 1.01, 1.02)  # five cold compiles a side reach p < 0.01


def _judged(base_s: float, new_s: float) -> Verdict:
    b, n = tuple(base_s * f for f in FIVE), tuple(new_s * f for f in FIVE)
    return compare_compile(base_s, new_s, Thresholds(), base_figures=b, new_figures=n).verdict


def test_compile_needs_factor_and_floor():
    assert _judged(0.100, 0.130) is Verdict.REGRESSION  # ×1.3, +30 ms
    assert _judged(0.100, 0.120) is Verdict.UNCHANGED  # ×1.2
    assert _judged(0.010, 0.029) is Verdict.UNCHANGED  # ×2.9, +19 ms
    assert _judged(0.130, 0.100) is Verdict.IMPROVEMENT
    assert compare_compile(None, 0.1, Thresholds()) is None


def test_one_cold_compile_a_side_is_reported_not_tested():
    """A/A pairs of a 200-workload suite failed on 13-24 single cold compiles (28.5 ms →
    81.6 ms): one a side cannot support a verdict; beyond the factor it is inconclusive."""
    t = Thresholds()
    one = compare_compile(0.0285, 0.0816, t)
    assert one is not None and one.verdict is Verdict.INCONCLUSIVE and one.p_value is None
    assert compare_compile(0.0816, 0.0285, t).verdict is Verdict.INCONCLUSIVE
    assert compare_compile(0.100, 0.120, t).verdict is Verdict.UNCHANGED  # within the factor
    ok = spread(1e-3, 10)
    cmp = compare(
        make_run(meas(samples=ok, compile_s=0.0285)), make_run(meas(samples=ok, compile_s=0.0816))
    )
    assert not cmp.has_regression and cmp.compile_untested == cmp.entries
    assert cmp.inconclusive == ()  # reported, not exit 4
    assert any("1 compile-time change(s) beyond ×1.25 were not tested" in w for w in cmp.warnings)
    data = cmp.to_dict()
    assert data["compile_untested"] == 1
    assert data["entries"][0]["compile"]["verdict"] == "inconclusive"


# The cold compiles of ema at S, four runs of the same code a side with three each, on
# the noisy day in docs/validation/gate-power.md: medians
# 1.27x apart.
EMA_A = (0.229, 0.344, 0.267, 0.218, 0.290, 0.219, 0.257, 0.252, 0.215, 0.219, 0.319, 0.226)
#: EMA_A with its one 344 ms outlier at 244 ms, all 1.3 times slower.
EMA_A_SLOWER = tuple(
    1.3 * c
    for c in (0.229, 0.244, 0.267, 0.218, 0.290, 0.219, 0.257, 0.252, 0.215, 0.219, 0.319, 0.226)
)
EMA_B = (0.242, 0.311, 0.283, 0.302, 0.322, 0.276, 0.326, 0.336, 0.334, 0.303, 0.241, 0.309)


def test_enough_compiles_a_side_must_also_differ_significantly():
    t = Thresholds()
    a_a = compare_compile(0.241, 0.305, t, base_figures=EMA_A, new_figures=EMA_B)
    # ×1.27 and +64 ms pass the factor and floor; Mann–Whitney p = 0.017 does not.
    assert a_a.verdict is Verdict.UNCHANGED
    assert a_a.p_value == pytest.approx(0.0166, abs=5e-4) and a_a.count == 12
    overlapping = (0.20, 0.31, 0.24, 0.22, 0.27)
    shuffled = (0.31, 0.22, 0.27, 0.24, 0.20)
    within_noise = compare_compile(0.24, 0.31, t, base_figures=overlapping, new_figures=shuffled)
    assert within_noise.verdict is Verdict.UNCHANGED  # ×1.29 and +70 ms, but p = 1
    doubled = tuple(2 * c for c in overlapping)
    assert (
        compare_compile(0.24, 0.48, t, base_figures=overlapping, new_figures=doubled).verdict
        is Verdict.REGRESSION
    )
    # Three a side can never reach p < 0.01: not tested, never a regression.
    few = compare_compile(0.24, 0.31, t, base_figures=overlapping[:3], new_figures=shuffled[:3])
    assert few.verdict is Verdict.INCONCLUSIVE and few.p_value is None


def _with_compiles(m, compiles):
    return replace(m, compile=replace(m.compile, compile_repeats_s=tuple(compiles)))


def test_compile_tests_are_adjusted_over_the_comparison():
    """Twenty workloads, one with ema's A/A compiles: not a regression; a doubled compile
    among them is one, its p-value adjusted over the twenty compile tests."""
    ok = spread(1e-3, 10)
    same = [0.2 * f for f in (0.98, 1.02, 0.99, 1.01, 1.0, 0.97, 1.03, 1.0, 0.99, 1.01)]
    base = [_with_compiles(meas(f"w{i}", samples=ok, compile_s=0.2), same) for i in range(20)]
    new = list(base)
    base[0] = _with_compiles(meas("w0", samples=ok, compile_s=0.241), EMA_A)
    new[0] = _with_compiles(meas("w0", samples=ok, compile_s=0.305), EMA_B)
    # w2: 1.3x and p = 0.0029 alone, which twenty tests adjust to above 0.01
    new[2] = _with_compiles(meas("w2", samples=ok, compile_s=0.307), EMA_A_SLOWER)
    base[2] = _with_compiles(meas("w2", samples=ok, compile_s=0.241), EMA_A)
    cmp = compare(make_run(*base), make_run(*new))
    assert only(cmp, "w0").compile.verdict is Verdict.UNCHANGED
    w2 = only(cmp, "w2").compile
    assert w2.verdict is Verdict.UNCHANGED and w2.p_value > 0.01
    assert not cmp.has_regression
    line = thresholds_line(cmp)
    assert "with enough cold compiles a side, Mann–Whitney on them p < 0.01" in line
    assert "paired" not in line
    new[1] = _with_compiles(meas("w1", samples=ok, compile_s=0.4), [2 * c for c in same])
    cmp = compare(make_run(*base), make_run(*new))
    doubled = only(cmp, "w1").compile
    assert doubled.verdict is Verdict.REGRESSION
    assert 0 < doubled.p_value < 0.01
    assert cmp.regressed_workloads == ("w1",)


def test_compile_regression_fails_the_gate_on_its_own():
    ok = spread(1e-3, 10)

    def run(compile_s: float):  # five cold compiles: enough for the test
        m = meas(samples=ok, compile_s=compile_s)
        return make_run(_with_compiles(m, [compile_s * f for f in FIVE]))

    cmp = compare(run(0.1), run(0.2))
    e = only(cmp)
    assert e.verdict is Verdict.UNCHANGED
    assert e.compile is not None and e.compile.verdict is Verdict.REGRESSION
    assert cmp.has_regression and cmp.compile_regressions == (e,)
    looser = compare(run(0.1), run(0.2), thresholds=Thresholds(compile_threshold=2.5))
    assert not looser.has_regression
    reported_only = compare(run(0.1), run(0.2), thresholds=Thresholds(compile_gates=False))
    assert not reported_only.has_regression
    assert len(reported_only.compile_regressions) == 1


# --- summaries ------------------------------------------------------------------------


def test_geometric_mean_per_mode_and_device():
    base = make_run(
        meas("a", samples=spread(1e-3, 10)),
        meas("b", samples=spread(1e-3, 10)),
        meas("a", Mode.NUMPY, samples=spread(1e-3, 10)),
    )
    new = make_run(
        meas("a", samples=spread(2e-3, 10)),
        meas("b", samples=spread(0.5e-3, 10)),
        meas("a", Mode.NUMPY, samples=spread(1.5e-3, 10)),
    )
    g = {(x.device, x.mode): (x.ratio, x.count) for x in compare(base, new).geomeans}
    assert g[("cpu:0", Mode.JIT)][0] == pytest.approx(1.0)
    assert g[("cpu:0", Mode.JIT)][1] == 2
    assert g[("cpu:0", Mode.NUMPY)][0] == pytest.approx(1.5)


# --- multiplicity ---------------------------------------------------------------------


def _borderline_runs(n_cases: int) -> tuple[Run, Run]:
    """Each case 15 % slower with p ~0.001 on its own (12 vs 12 overlapping samples):
    significant one at a time, not across many tests."""
    base_s = spread(1e-3, 12, 0.12)
    new_s = tuple(sorted(x * 1.15 for x in base_s))
    base = [meas(workload=f"w{i}", samples=base_s) for i in range(n_cases)]
    new = [meas(workload=f"w{i}", samples=new_s) for i in range(n_cases)]
    return make_run(*base), make_run(*new)


def test_p_values_are_adjusted_for_the_number_of_tests():
    base, new = _borderline_runs(1)
    single = only(compare(base, new), workload="w0")
    p = single.p_value
    assert p is not None and 0.0005 < p < 0.01
    assert single.verdict is Verdict.REGRESSION  # one test: adjusted p equals p
    assert single.p_adjusted == pytest.approx(p)

    # The same case beside 40 unchanged ones: BH multiplies its p by 41, no regression.
    steady = spread(1e-3, 12, 0.05)
    others = [meas(workload=f"u{i}", samples=steady) for i in range(40)]
    base = make_run(*base.measurements, *others)
    new = make_run(*new.measurements, *others)
    e = only(compare(base, new), workload="w0")
    assert e.p_value == pytest.approx(p)
    assert e.p_adjusted == pytest.approx(min(1.0, p * 41))
    assert e.verdict is Verdict.UNCHANGED
    assert "not significant across 41 tests" in e.note
    # Without the adjustment each case is tested at alpha on its own.
    e = only(compare(base, new, thresholds=Thresholds(p_adjust="none")), workload="w0")
    assert e.verdict is Verdict.REGRESSION and e.p_adjusted == pytest.approx(p)


def test_a_clear_slowdown_survives_the_adjustment():
    steady = spread(1e-3, 30, 0.05)
    others = [meas(workload=f"u{i}", samples=steady) for i in range(59)]
    base = make_run(meas(samples=steady), *others)
    new = make_run(meas(samples=tuple(x * 1.3 for x in steady)), *others)
    cmp = compare(base, new)
    e = only(cmp)
    assert e.verdict is Verdict.REGRESSION and e.p_adjusted < 0.01
    assert cmp.regressed_workloads == ("w",)
    assert "Benjamini–Hochberg" in comparison_markdown(cmp)


# --- pooled runs: tested run by run ---------------------------------------------------


def test_pooled_sides_are_tested_run_by_run():
    # w: three of four new runs came out 30 % slower, the fourth 15 % faster: runs that
    # disagree, as one case's runs sometimes do on a shared machine.
    base = merge_runs(runs_at_levels({"w": [1.0, 1.02, 0.98, 1.0], **STEADY}, "b"))
    new = merge_runs(runs_at_levels({"w": [1.3, 1.3, 1.3, 0.85], **STEADY}, "n"))
    e = only(compare(base, new))
    assert e.test is SignificanceTest.RUNS
    # The ratio of the geometric means of the runs' medians.
    assert e.ratio == pytest.approx((1.3**3 * 0.85 / (1.02 * 0.98)) ** 0.25, rel=1e-3)
    # Large (1.17×), but four runs this scattered cannot make it significant.
    assert e.ratio > 1.10 and e.verdict is Verdict.UNCHANGED and e.p_value > 0.01
    # The same samples as one run per side: Mann–Whitney counts 32 samples per side as
    # independent, and 24 of the new ones sit above every base one: a "regression".
    flat = compare(_unpooled(base), _unpooled(new))
    assert only(flat).test is SignificanceTest.SAMPLES
    assert only(flat).verdict is Verdict.REGRESSION


def _unpooled(run: Run) -> Run:
    return replace(
        run, measurements=tuple(replace(m, run_sample_counts=()) for m in run.measurements)
    )


def test_a_slowdown_in_every_run_is_a_regression_run_by_run():
    base = merge_runs(runs_at_levels({"w": [1.0, 1.03, 0.97, 1.01], **STEADY}, "b"))
    new = merge_runs(runs_at_levels({"w": [1.3, 1.33, 1.27, 1.31], **STEADY}, "n"))
    cmp = compare(base, new)
    e = only(cmp)
    assert e.test is SignificanceTest.RUNS and e.verdict is Verdict.REGRESSION
    assert e.ratio_low < 1.3 < e.ratio_high and e.p_adjusted < 0.01
    assert cmp.regressed_workloads == ("w",)
    assert (
        "t-test on the runs' medians and Mann–Whitney on the samples, both p < 0.01"
        in thresholds_line(cmp)
    )
    assert "t-test on the runs" in comparison_markdown(cmp)
    assert cmp.to_dict()["entries"][0]["test"] == "run t-test + mann-whitney"
    assert "(4 base vs 4 new; " in cmp.pooling[-1].text
    assert "the typical run-to-run spread of its mode (jit 2.7%)" in cmp.pooling[-1].text
    assert "measure 4 per side" not in cmp.pooling[-1].text


#: Run-to-run levels of wayward cases (up to ±25 %), the same for both sides.
WAYWARD = {
    f"e{i}": [1.0, 1.25, 0.8, 1.1][i % 4 :] + [1.0, 1.25, 0.8, 1.1][: i % 4] for i in range(12)
}


def _sides(eager: dict[str, list[float]]) -> tuple[Run, Run]:
    """Four runs a side: `w` and STEADY's cases in jit, `w` 12 % slower in the new side,
    and `eager`'s cases in eager mode, alike on both sides."""
    jit = {"w": [1.0, 1.03, 0.97, 1.01], **STEADY}

    def side(tag: str, slower: float) -> Run:
        return merge_runs(
            [
                make_run(
                    *(
                        meas(w, samples=spread(1e-3 * lv[i] * (slower if w == "w" else 1), 8))
                        for w, lv in jit.items()
                    ),
                    *(
                        meas(w, Mode.EAGER, samples=spread(1e-3 * lv[i], 8, 0.005))
                        for w, lv in eager.items()
                    ),
                    run_id=f"{tag}{i}",
                )
                for i in range(4)
            ]
        )

    return side("b", 1.0), side("n", 1.12)


def test_each_mode_is_shrunk_toward_its_own_typical_spread():
    """Eager cases that move ±25 % from run to run leave jit's run-level test as it is
    without them: each mode (on each device) has its own typical spread. One figure for
    all lent jit's tests eager's spread, and eager's jit's steadiness."""
    alone = only(compare(*_sides({})))
    cmp = compare(*_sides(WAYWARD))
    mixed = only(cmp)
    assert mixed.test is SignificanceTest.RUNS
    assert (mixed.ratio_low, mixed.p_value) == pytest.approx((alone.ratio_low, alone.p_value))
    assert mixed.verdict is alone.verdict is Verdict.REGRESSION
    note = cmp.pooling[-1].text
    assert "the typical run-to-run spread of its mode (eager 22.1%, jit 2.7%)" in note


def _on_cpu1(run: Run) -> Run:
    """`run` with its eager cases moved to a second device, in jit mode."""
    return replace(
        run,
        measurements=tuple(
            replace(m, case=replace(m.case, device="cpu:1"), mode=Mode.JIT)
            if m.mode is Mode.EAGER
            else m
            for m in run.measurements
        ),
    )


def test_each_device_is_shrunk_toward_its_own_typical_spread():
    alone = only(compare(*_sides({})))
    cmp = compare(*(_on_cpu1(side) for side in _sides(WAYWARD)))
    assert only(cmp).p_value == pytest.approx(alone.p_value)
    assert "of its mode on its device (jit on cpu:0 2.7%, jit on cpu:1 22.1%)" in (
        cmp.pooling[-1].text
    )


def _t_test_low(e, prior: float | None) -> float:
    """The low end of `e`'s run-level ratio interval with `prior` as the typical variance."""
    spread = run_spread_of(e.base, e.new)
    assert spread is not None
    return stats.moderated_t_test(spread, prior, RUN_PRIOR_DF).low


def test_a_mode_with_few_cases_takes_the_whole_comparisons_typical_spread():
    # Three eager cases are too few to say what is typical of eager (MIN_CASES_FOR_GROUP_PRIOR):
    # they are shrunk toward the whole comparison's typical spread, jit toward jit's own.
    base, new = _sides(dict(list(WAYWARD.items())[:3]))
    cmp = compare(base, new)
    priors = run_priors(
        {(m.case.key, m.mode): m for m in base.measurements},
        {(m.case.key, m.mode): m for m in new.measurements},
    )
    assert set(priors.groups) == {("cpu:0", Mode.JIT)}
    assert priors.of("cpu:0", Mode.EAGER) == priors.whole
    eager = [e for e in cmp.entries if e.mode is Mode.EAGER]
    eager_own = stats.typical_run_variance([run_spread_of(e.base, e.new) for e in eager])
    assert eager_own != pytest.approx(priors.whole)
    for e in eager:
        assert e.test is SignificanceTest.RUNS
        assert e.ratio_low == pytest.approx(_t_test_low(e, priors.whole))
        assert e.ratio_low != pytest.approx(_t_test_low(e, eager_own))
    jit = only(cmp)
    assert jit.ratio_low == pytest.approx(_t_test_low(jit, priors.groups[("cpu:0", Mode.JIT)]))
    assert (
        "(jit 2.7%; eager, with fewer than 5 cases: the whole comparison's, "
        in cmp.pooling[-1].text
    )


def test_a_small_group_on_a_second_device_is_named_in_the_note():
    cmp = compare(*(_on_cpu1(side) for side in _sides(dict(list(WAYWARD.items())[:3]))))
    assert (
        "of its mode on its device (jit on cpu:0 2.7%; jit on cpu:1, with fewer than 5 cases: "
        "the whole comparison's, " in cmp.pooling[-1].text
    )


def test_pooled_runs_with_too_few_samples_are_inconclusive():
    # Three runs of one sample each per side: the runs agree, but 3 vs 3 samples can never
    # give Mann–Whitney p < 0.01, so the pooled test cannot either.
    base = merge_runs(
        [
            make_run(meas(samples=(1e-3 * f,)), run_id=f"b{i}")
            for i, f in enumerate((1.0, 1.01, 0.99))
        ]
    )
    new = merge_runs(
        [
            make_run(meas(samples=(1.5e-3 * f,)), run_id=f"n{i}")
            for i, f in enumerate((1.0, 1.01, 0.99))
        ]
    )
    e = only(compare(base, new))
    assert e.test is SignificanceTest.RUNS and e.verdict is Verdict.INCONCLUSIVE
    assert "3 vs 3 samples cannot reach p < 0.01" in e.note


def _on(m, device):
    return replace(m, case=replace(m.case, device=device))


def test_numpy_filed_under_each_device_is_judged_once():
    """A run measures NumPy once per case and files it under every device: judged per
    device, one NumPy change counted twice and the adjustment ran over 240 tests, not 200."""

    def side(numpy_s, jit_s, run_id):
        numpy_ = meas(mode=Mode.NUMPY, samples=spread(numpy_s, 20))
        jit = meas(samples=spread(jit_s, 20))
        return make_run(numpy_, jit, _on(numpy_, "gpu:0"), _on(jit, "gpu:0"), run_id=run_id)

    cmp = compare(side(2e-3, 1e-3, "b"), side(3e-3, 1e-3, "n"))
    numpy_rows = [e for e in cmp.entries if e.mode is Mode.NUMPY]
    assert [(e.device, e.verdict) for e in numpy_rows] == [("cpu:0", Verdict.REGRESSION)]
    assert len(cmp.entries) == 3
    assert any("NumPy judged once per case" in n.text and "gpu:0" in n.text for n in cmp.pooling)
    # Devices listed the other way round on one side (`--devices gpu,cpu`): the same.
    flipped = side(3e-3, 1e-3, "n")
    flipped = replace(flipped, measurements=flipped.measurements[2:] + flipped.measurements[:2])
    cmp = compare(side(2e-3, 1e-3, "b"), flipped)
    assert [(e.device, e.verdict) for e in cmp.entries if e.mode is Mode.NUMPY] == [
        ("cpu:0", Verdict.REGRESSION)
    ]
    # A pooled side one of whose runs lacked the GPU: its GPU NumPy is a share of the
    # CPU's series, still no evidence of its own.
    cpu_only = make_run(
        meas(mode=Mode.NUMPY, samples=spread(3e-3, 20)), meas(samples=spread(1e-3, 20)), run_id="c"
    )
    pooled = merge_runs([side(3e-3, 1e-3, "n1"), cpu_only], disturbed_factor=0)
    cmp = compare(side(2e-3, 1e-3, "b"), pooled)
    assert [e.device for e in cmp.entries if e.mode is Mode.NUMPY] == ["cpu:0"]
    # A NumPy series of its own on each device (older runs, `--distributed`) stays per device.
    own = make_run(
        meas(mode=Mode.NUMPY, samples=spread(2e-3, 20)),
        _on(meas(mode=Mode.NUMPY, samples=spread(2.1e-3, 20)), "gpu:0"),
    )
    assert len(compare(own, own).entries) == 2


def test_the_sides_times_are_the_figures_the_change_is_taken_from():
    """Pooled runs: the change is a ratio of the geometric means of the runs' medians, and
    the columns showed pooled sample medians: 800 µs → 798 µs beside a change of +6.1 %."""

    def runs(medians, tag):
        return [
            make_run(meas(samples=spread(x, 8, 0.005)), run_id=f"{tag}{i}")
            for i, x in enumerate(medians)
        ]

    base = merge_runs(runs([1.0e-3, 1.0e-3, 1.6e-3], "b"), disturbed_factor=0)
    new = merge_runs(runs([1.05e-3, 1.05e-3, 1.05e-3, 1.9e-3], "n"), disturbed_factor=0)
    e = only(compare(base, new))
    assert e.test is SignificanceTest.RUNS
    assert e.new_s / e.base_s == pytest.approx(e.ratio)
    assert e.base_s == pytest.approx((1.0e-3 * 1.0e-3 * 1.6e-3) ** (1 / 3), rel=1e-3)
    one = only(compare(runs([1e-3], "b")[0], runs([1.1e-3], "n")[0]))
    assert one.base is not None and one.new is not None
    assert (one.base_s, one.new_s) == (one.base.median_s, one.new.median_s)
