"""The regression gate on constructed runs: classification, statistics edge cases, rendering.

These runs are built from the real result types and written to real files; no timing here
(tests/test_compare_cli.py measures real runs).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

import jitbench
from jitbench.errors import ConfigError
from jitbench.gate.compare import (
    Thresholds,
    Verdict,
    compare,
    compare_compile,
    compare_timing,
)
from jitbench.render.comparison import (
    comparison_markdown,
    comparison_table,
    md_escape,
    thresholds_line,
)
from jitbench.results import (
    Case,
    CompileInfo,
    ErrorInfo,
    Measurement,
    Mode,
    Run,
    Status,
    dump_run,
    run_from_dict,
)

ENV = {
    "host": "box",
    "machine": "x86_64",
    "cpu": "cpu",
    "cpu_count": 2,
    "backend": "cpu",
    "devices": [{"id": 0, "platform": "cpu", "kind": "cpu", "label": "cpu:0"}],
    "x64": False,
    "versions": {"jax": "0.10.2", "numpy": "2.0"},
    "env": {},
    "git": {"commit": "abc", "dirty": False},
}


def spread(center: float, n: int, rel: float = 0.01) -> tuple[float, ...]:
    """n deterministic samples evenly spread ±rel around center."""
    if n == 1:
        return (center,)
    return tuple(center * (1 - rel + 2 * rel * i / (n - 1)) for i in range(n))


def meas(
    workload: str = "w",
    mode: Mode = Mode.JIT,
    samples: tuple[float, ...] = (),
    status: Status = Status.OK,
    compile_s: float | None = None,
    size: str = "S",
    params: dict | None = None,
) -> Measurement:
    compile_info = None
    if compile_s is not None:
        compile_info = CompileInfo(
            trace_s=compile_s / 2,
            lower_s=compile_s / 4,
            compile_s=compile_s / 4,
            first_call_s=compile_s,
        )
    return Measurement(
        case=Case(
            workload=workload, size=size, device="cpu:0", dtype="float32", params=params or {}
        ),
        mode=mode,
        status=status,
        samples_s=samples,
        calls_per_sample=10,
        compile=compile_info,
        error=ErrorInfo(type="ValueError", message="boom") if status is Status.ERROR else None,
    )


def make_run(
    *measurements: Measurement,
    run_id: str = "r",
    env: dict | None = None,
    config: dict | None = None,
) -> Run:
    run = Run(
        run_id=run_id,
        started_at="2026-01-01T00:00:00+00:00",
        finished_at="2026-01-01T00:01:00+00:00",
        complete=True,
        environment=env or ENV,
        config=config or {"plan": {"budget_s": 2.0}},
        measurements=tuple(measurements),
    )
    # Round-trip through the real JSON form and schema, as `jitbench compare` would.
    return run_from_dict(json.loads(dump_run(run)))


def only(cmp, workload="w", mode=Mode.JIT):
    return next(e for e in cmp.entries if e.workload == workload and e.mode is mode)


# --- timing classification -----------------------------------------------------------


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
    loose = compare(make_run(meas(samples=base)), make_run(meas(samples=new)), threshold=1.2)
    assert only(loose).verdict is Verdict.UNCHANGED
    strict_alpha = compare(
        make_run(meas(samples=spread(1e-3, 5))),
        make_run(meas(samples=spread(1.5e-3, 5))),
        alpha=0.001,
    )
    assert only(strict_alpha).verdict is Verdict.INCONCLUSIVE


@pytest.mark.parametrize(
    "kwargs",
    [
        {"threshold": 1.0},
        {"threshold": 0.9},
        {"threshold": float("inf")},
        {"alpha": 0.0},
        {"alpha": 1.0},
        {"compile_threshold": 1.0},
        {"compile_floor_s": -1.0},
    ],
)
def test_bad_thresholds_raise_config_error(kwargs):
    with pytest.raises(ConfigError):
        compare(make_run(), make_run(), **kwargs)


# --- status changes --------------------------------------------------------------------


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


# --- compile time ----------------------------------------------------------------------


def test_compile_needs_factor_and_floor():
    t = Thresholds()
    assert compare_compile(0.100, 0.130, t).verdict is Verdict.REGRESSION  # ×1.3, +30 ms
    assert compare_compile(0.100, 0.120, t).verdict is Verdict.UNCHANGED  # ×1.2
    assert compare_compile(0.010, 0.029, t).verdict is Verdict.UNCHANGED  # ×2.9, +19 ms
    assert compare_compile(0.130, 0.100, t).verdict is Verdict.IMPROVEMENT
    assert compare_compile(None, 0.1, t) is None


def test_compile_regression_fails_the_gate_on_its_own():
    ok = spread(1e-3, 10)
    cmp = compare(
        make_run(meas(samples=ok, compile_s=0.1)), make_run(meas(samples=ok, compile_s=0.2))
    )
    e = only(cmp)
    assert e.verdict is Verdict.UNCHANGED
    assert e.compile is not None and e.compile.verdict is Verdict.REGRESSION
    assert cmp.has_regression and cmp.compile_regressions == (e,)
    looser = compare(
        make_run(meas(samples=ok, compile_s=0.1)),
        make_run(meas(samples=ok, compile_s=0.2)),
        compile_threshold=2.5,
    )
    assert not looser.has_regression
    reported_only = compare(
        make_run(meas(samples=ok, compile_s=0.1)),
        make_run(meas(samples=ok, compile_s=0.2)),
        compile_gates=False,
    )
    assert not reported_only.has_regression
    assert len(reported_only.compile_regressions) == 1


# --- summaries -------------------------------------------------------------------------


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


def test_environment_differences_are_listed():
    env2 = {
        **ENV,
        "host": "other",
        "x64": True,
        "versions": {"jax": "0.11.0", "numpy": "2.0"},
        "devices": [{"id": 0, "platform": "gpu", "kind": "H100", "label": "gpu:0"}],
        "git": {"commit": "def", "dirty": True},
    }
    cmp = compare(make_run(env=ENV), make_run(env=env2, config={"plan": {"budget_s": 0.5}}))
    names = {d.name: (d.base, d.new) for d in cmp.environment_differences}
    assert names["jax"] == ("0.10.2", "0.11.0")
    assert names["x64"] == (False, True)
    assert names["host"] == ("box", "other")
    assert "gpu:0=H100" in names["devices"][1]
    assert names["config.plan.budget_s"] == (2.0, 0.5)
    assert "git" not in names and "numpy" not in names
    assert cmp.new_commit == "def dirty"
    assert not compare(make_run(), make_run()).environment_differences


def test_to_dict_is_strict_json():
    cmp = compare(
        make_run(meas(samples=spread(1e-3, 10), compile_s=0.0)),
        make_run(meas(samples=spread(1.5e-3, 10), compile_s=0.1)),
    )
    data = json.loads(json.dumps(cmp.to_dict(), allow_nan=False))
    assert data["schema"] == "jitbench.comparison"
    assert data["has_regression"] is True
    assert data["entries"][0]["verdict"] == "regression"
    assert data["entries"][0]["compile"]["ratio"] is None  # infinite ratio from a 0 s base
    assert data["counts"]["regression"] == 1


def test_compare_is_exported():
    assert jitbench.compare is compare
    assert "compare" in jitbench.__all__ and "Comparison" in jitbench.__all__


# --- rendering -------------------------------------------------------------------------


def _unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


def test_markdown_names_regressed_workloads_and_escapes_pipes():
    ok = spread(1e-3, 12)
    base = make_run(meas("a|b", samples=ok), meas("calm", samples=ok))
    new = make_run(meas("a|b", samples=spread(1.5e-3, 12)), meas("calm", samples=ok))
    md = comparison_markdown(compare(base, new))
    head = md.splitlines()[0]
    assert "❌" in head and "a\\|b" in head and "calm" not in head
    # Every table row keeps its column count despite the pipe in the name.
    table_lines = [ln for ln in md.splitlines() if ln.startswith("| ")]
    assert table_lines
    entry_rows = [ln for ln in table_lines if not ln.startswith(("| device", "| cpu:0", "| ---"))]
    assert len(entry_rows) == 2 + 3  # regressions (header + 1 row), all (header + 2 rows)
    assert {_unescaped_pipes(ln) for ln in entry_rows} == {13}  # 12 columns each
    assert "### Regressions" in md


def test_markdown_lists_compile_regressions_apart():
    ok = spread(1e-3, 12)
    md = comparison_markdown(
        compare(
            make_run(meas("slowc", samples=ok, compile_s=0.1)),
            make_run(meas("slowc", samples=ok, compile_s=0.3)),
        )
    )
    assert "slowc" in md.splitlines()[0]
    assert "### Compile-time regressions" in md and "### Regressions" not in md
    assert "| slowc | S | cpu:0 | float32 | jit | 100 ms | 300 ms | +200.0 % |" in md


def test_markdown_pass_and_environment_warning():
    ok = spread(1e-3, 12)
    env2 = {**ENV, "versions": {"jax": "0.11.0", "numpy": "2.0"}}
    md = comparison_markdown(
        compare(make_run(meas(samples=ok)), make_run(meas(samples=ok), env=env2))
    )
    assert md.splitlines()[0].startswith("## ✅")
    assert "no regression" in md.splitlines()[0]
    assert "**jax**: 0.10.2 → 0.11.0" in md


def test_md_escape():
    assert md_escape("a|b") == "a\\|b"
    assert md_escape("x*y_z") == "x\\*y\\_z"
    assert md_escape("two\nlines") == "two lines"


def test_rich_table_has_a_row_per_entry():
    ok = spread(1e-3, 12)
    cmp = compare(
        make_run(meas("a", samples=ok), meas("b", samples=ok)),
        make_run(meas("a", samples=spread(2e-3, 12)), meas("b", samples=ok)),
    )
    assert comparison_table(cmp).row_count == 2
    assert comparison_table(cmp, all_rows=False).row_count == 1


# --- rounds: several runs of one side pooled -----------------------------------------------


def test_merge_runs_pools_samples_and_keeps_median_compile():
    from jitbench.gate.compare import merge_runs

    r1 = make_run(meas(samples=(1.0, 1.1), compile_s=0.3), meas("b", samples=(1.0,)), run_id="r1")
    r2 = make_run(meas(samples=(1.2,), compile_s=0.1), meas("b", status=Status.ERROR), run_id="r2")
    r3 = make_run(meas(samples=(1.3,), compile_s=0.2), meas("b", samples=(1.0,)), run_id="r3")
    merged = merge_runs([r1, r2, r3])
    assert merged.run_id == "r1+2"
    w = merged.get(("w", "S", "cpu:0", "float32"), Mode.JIT)
    assert w.samples_s == (1.0, 1.1, 1.2, 1.3)
    assert w.compile.total_compile_s == pytest.approx(0.2)
    b = merged.get(("b", "S", "cpu:0", "float32"), Mode.JIT)
    assert b.status is Status.ERROR  # failing in any round is failing
    assert merge_runs([r1]) is r1
    with pytest.raises(ValueError):
        merge_runs([])


def test_compile_is_judged_on_the_median_of_every_pooled_repeat():
    from jitbench.gate.compare import merge_runs

    def run_with(repeats, run_id):
        m = meas(samples=spread(1e-3, 12), compile_s=sorted(repeats)[1])
        m = replace(m, compile=replace(m.compile, compile_repeats_s=tuple(repeats)))
        return make_run(m, run_id=run_id)

    # Base: one quiet run and one slow minute; new: two ordinary runs, 25 % above the
    # quiet one. Judged run by run (the lower run's median) this is a compile regression;
    # on the median of all six cold compiles per side it is not.
    base = merge_runs([run_with((0.100, 0.102, 0.104), "b1"), run_with((0.15, 0.16, 0.14), "b2")])
    new = merge_runs([run_with((0.126, 0.128, 0.13), "n1"), run_with((0.127, 0.125, 0.129), "n2")])
    assert base.measurements[0].compile.compile_repeats_s == (0.100, 0.102, 0.104, 0.15, 0.16, 0.14)
    e = only(compare(base, new))
    assert e.compile.base_s == pytest.approx((0.104 + 0.14) / 2)
    assert e.compile.verdict is Verdict.UNCHANGED
    # A real doubling still regresses.
    slower = merge_runs([run_with((0.25, 0.26, 0.24), "s1"), run_with((0.25, 0.27, 0.26), "s2")])
    assert only(compare(base, slower)).compile.verdict is Verdict.REGRESSION


def test_a_run_the_machine_slowed_as_a_whole_is_left_out_of_its_side():
    from jitbench.gate.compare import merge_runs, run_levels

    def run(factor, run_id, compile_s):
        return make_run(
            *(
                meas(f"w{i}", samples=spread(1e-3 * (i + 1) * factor, 8), compile_s=compile_s)
                for i in range(6)
            ),
            run_id=run_id,
        )

    quiet, busy = run(1.0, "quiet", 0.10), run(1.3, "busy", 0.20)
    # Relative to the per-case median of the two runs (their mean): 1/1.15 and 1.3/1.15.
    assert run_levels([quiet, busy]) == [pytest.approx(1 / 1.15), pytest.approx(1.3 / 1.15)]
    side = merge_runs([quiet, busy])
    w0 = side.get(("w0", "S", "cpu:0", "float32"), Mode.JIT)
    assert w0.samples_s == quiet.measurements[0].samples_s  # the busy run's are left out
    assert w0.compile.compile_repeats_s == (0.10, 0.20)  # its compiles still count
    assert side.config["pooled"]["excluded"] == [{"run_id": "busy", "level": pytest.approx(1.3)}]
    # Siblings within the factor pool as before, and 0 keeps every run.
    assert len(merge_runs([quiet, run(1.1, "near", 0.1)]).measurements[0].samples_s) == 16
    assert len(merge_runs([quiet, busy], disturbed_factor=0).measurements[0].samples_s) == 16

    cmp = compare(side, merge_runs([quiet, run(1.02, "q2", 0.1)]))
    left_out = [n for n in cmp.pooling if n.left_out]
    assert len(left_out) == 1
    assert left_out[0].text.startswith("base: run busy left out: 1.30× slower")
    assert [n.text for n in cmp.pooling if not n.left_out][:2] == [
        "base: 2 runs pooled",
        "new: 2 runs pooled",
    ]
    # The busy run's samples are out, so base is one run against new's two: too few.
    assert "(1 base vs 2 new runs)" in cmp.pooling[-1].text
    assert "measure 4 per side" in cmp.pooling[-1].text
    assert cmp.to_dict()["pooling"][1]["left_out"] is True
    assert not cmp.environment_differences  # pooling is not a measurement difference
    assert "left out" in comparison_markdown(cmp)
    with pytest.raises(ConfigError, match="--disturbed-factor"):
        merge_runs([quiet, busy], disturbed_factor=0.9)


def test_compare_accepts_folders_of_rounds(tmp_path):
    from typer.testing import CliRunner

    from jitbench.cli import app
    from jitbench.results import save_run

    for side, center in (("base", 1e-3), ("head", 1.5e-3)):
        for i in range(3):
            save_run(
                make_run(meas(samples=spread(center, 4, 0.02)), run_id=f"{side}{i}"),
                tmp_path / side / "runs" / f"{side}{i}.json",
            )
    # 4 samples per run cannot reach p < 0.01; 3 rounds pooled (12 per side) can.
    single = CliRunner().invoke(
        app,
        [
            "compare",
            str(tmp_path / "base" / "runs" / "base0.json"),
            str(tmp_path / "head" / "runs" / "head0.json"),
        ],
    )
    assert single.exit_code == 0, single.output
    pooled = CliRunner().invoke(
        app,
        [
            "compare",
            str(tmp_path / "base"),
            str(tmp_path / "head"),
            "--json",
            str(tmp_path / "c.json"),
        ],
    )
    assert pooled.exit_code == 1, pooled.output
    data = json.loads((tmp_path / "c.json").read_text())
    assert data["entries"][0]["base_n"] == 12 and data["entries"][0]["verdict"] == "regression"
    (tmp_path / "empty").mkdir()
    empty = CliRunner().invoke(app, ["compare", str(tmp_path / "empty"), str(tmp_path / "head")])
    assert empty.exit_code == 2 and "no run JSON" in empty.output


# --- multiplicity ------------------------------------------------------------------------


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
    e = only(compare(base, new, p_adjust="none"), workload="w0")
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


def test_unknown_p_adjust_is_a_config_error():
    with pytest.raises(ConfigError, match="--p-adjust"):
        Thresholds(p_adjust="holm")


# --- pooled runs: tested run by run ----------------------------------------------------


def _runs(levels_by_case: dict[str, list[float]], tag: str) -> list[Run]:
    """One run per position in the level lists; each case's 8 samples sit tightly (±0.5 %)
    around 1 ms × its level in that run, as samples of one run do on a real machine."""
    n_runs = len(next(iter(levels_by_case.values())))
    return [
        make_run(
            *(
                meas(workload=w, samples=spread(1e-3 * levels[i], 8, 0.005))
                for w, levels in levels_by_case.items()
            ),
            run_id=f"{tag}{i}",
        )
        for i in range(n_runs)
    ]


# Run-to-run levels of steady cases (about ±3 %), the same for both sides.
_STEADY = {
    f"u{i}": [1.0, 1.03, 0.97, 1.01][i % 4 :] + [1.0, 1.03, 0.97, 1.01][: i % 4] for i in range(8)
}


def test_pooled_sides_are_tested_run_by_run():
    from jitbench.gate.compare import SignificanceTest, merge_runs

    # w: three of four new runs came out 30 % slower, the fourth 15 % faster: runs that
    # disagree, as one case's runs sometimes do on a shared machine.
    base = merge_runs(_runs({"w": [1.0, 1.02, 0.98, 1.0], **_STEADY}, "b"))
    new = merge_runs(_runs({"w": [1.3, 1.3, 1.3, 0.85], **_STEADY}, "n"))
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
    from jitbench.gate.compare import SignificanceTest, merge_runs

    base = merge_runs(_runs({"w": [1.0, 1.03, 0.97, 1.01], **_STEADY}, "b"))
    new = merge_runs(_runs({"w": [1.3, 1.33, 1.27, 1.31], **_STEADY}, "n"))
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
    assert "4 base vs 4 new runs" in cmp.pooling[-1].text
    assert "typical run-to-run spread of" in cmp.pooling[-1].text
    assert "measure 4 per side" not in cmp.pooling[-1].text


def test_merge_runs_keeps_each_runs_median():
    from jitbench.gate.compare import merge_runs

    runs = _runs({"w": [1.0, 1.5, 2.0], **_STEADY}, "r")
    w = merge_runs(runs).get(("w", "S", "cpu:0", "float32"), Mode.JIT)
    assert w.run_sample_counts == (8, 8, 8)
    assert w.run_medians_s == pytest.approx((1e-3, 1.5e-3, 2e-3))
    # A pooled side merged again keeps the runs apart.
    again = merge_runs([merge_runs(runs[:2]), runs[2]], disturbed_factor=0)
    assert again.get(("w", "S", "cpu:0", "float32"), Mode.JIT).run_sample_counts == (8, 8, 8)
    # One run: one median, and no partition.
    assert runs[0].measurements[0].run_medians_s == pytest.approx((1e-3,))


def test_pooled_runs_with_too_few_samples_are_inconclusive():
    from jitbench.gate.compare import SignificanceTest, merge_runs

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
