"""Real runs of tiny workloads through the whole protocol (real JAX compiles, real timing)."""

from __future__ import annotations

from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jitbench import Mode, RunConfig, Status, discover, run_workloads, workload
from jitbench.measure.compilation import cold_first_call, count_compiles


def vec(rng, *, dtype, n):
    return (rng.standard_normal(n).astype(dtype),)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    from tests.conftest import TINY_SUITE

    path = tmp_path_factory.mktemp("suite") / "tiny.py"
    path.write_text(TINY_SUITE)
    reg = discover([path])
    return run_workloads(list(reg.workloads.values()), RunConfig.quick_settings())


def by(run, workload, mode):
    [m] = [m for m in run.measurements if m.case.workload == workload and m.mode is mode]
    return m


def test_good_workload_is_ok_in_every_mode(tiny_run):
    for mode in Mode:
        m = by(tiny_run, "double", mode)
        assert m.status is Status.OK, m.error
        assert m.samples_s and m.calls_per_sample >= 1
    assert tiny_run.complete and tiny_run.environment["versions"]["jax"] == jax.__version__


def test_jit_compile_is_a_real_cold_compile(tiny_run):
    jit = by(tiny_run, "double", Mode.JIT)
    c = jit.compile
    assert c.compile_count >= 1  # the cold first call compiled
    assert c.trace_s > 0 and c.lower_s > 0 and c.compile_s > 0
    assert c.timed_compile_count == 0
    assert c.first_call_s > jit.median_s
    assert c.jaxpr_eqn_count >= 1 and c.hlo_fingerprint


def test_eager_first_call_counts_its_compiles(tiny_run):
    eager = by(tiny_run, "double", Mode.EAGER)
    assert eager.compile.compile_count >= 1
    assert eager.compile.trace_s is None


def test_wrong_value_is_a_mismatch_not_a_speedup(tiny_run):
    key = by(tiny_run, "wrong_in_jit", Mode.JIT).case.key
    for mode in (Mode.EAGER, Mode.JIT):
        m = by(tiny_run, "wrong_in_jit", mode)
        assert m.status is Status.MISMATCH
        assert any(d.code == "output-mismatch" for d in m.diagnostics)
    assert by(tiny_run, "wrong_in_jit", Mode.NUMPY).status is Status.OK
    assert tiny_run.speedup(key, Mode.JIT) is None


def test_traced_branch_is_an_error_under_jit_only(tiny_run):
    jit = by(tiny_run, "value_branch", Mode.JIT)
    assert jit.status is Status.ERROR
    assert jit.error.type in ("TracerBoolConversionError", "ConcretizationTypeError")
    assert "static_argnames" in jit.error.hint
    assert by(tiny_run, "value_branch", Mode.EAGER).status is Status.OK
    assert by(tiny_run, "value_branch", Mode.NUMPY).status is Status.OK


def test_cache_hit_is_not_a_compile():
    f = jax.jit(lambda x: x * 3.0 + 1.0)
    x = jnp.ones(7)
    with count_compiles() as first:
        f(x).block_until_ready()
    with count_compiles() as second:
        f(x).block_until_ready()
    assert first.compile_count == 1 and second.compile_count == 0
    seconds, compiles, _ = cold_first_call(lambda: f(x).block_until_ready())
    assert compiles == 1 and seconds > 0


def test_a_real_guard_error_maps_to_the_implicit_transfer_diagnostic():
    # On CPU device memory is host memory, so JAX's guard never sees a device -> host
    # copy; a host -> device upload is caught on every backend.
    from jitbench.measure import diagnose

    with pytest.raises(Exception) as info, jax.transfer_guard("disallow"):
        jnp.asarray(np.ones(3, np.float32)).block_until_ready()
    [d] = diagnose.for_exception(info.value)
    assert d.code == "implicit-transfer" and "jax.numpy" in d.hint


def test_float64_numpy_side_is_diagnosed():
    def upcast(x):
        return x.astype(np.float64) * 2

    @workload(inputs=vec, sizes={"S": {"n": 16}}, numpy=upcast, name="upcast")
    def doubled(x):
        return x * 2

    run = run_workloads([doubled], RunConfig.quick_settings())
    numpy_m = by(run, "upcast", Mode.NUMPY)
    assert any(d.code == "numpy-float64" for d in numpy_m.diagnostics)
    assert by(run, "upcast", Mode.JIT).status is Status.OK


def test_x64_switches_both_sides_to_float64():
    seen = {}

    @workload(inputs=vec, sizes={"S": {"n": 8}}, name="dtype_probe")
    def probe(xp, x):
        seen[xp.__name__] = x.dtype
        return x + 1

    run = run_workloads([probe], RunConfig.quick_settings(x64=True, modes=(Mode.NUMPY, Mode.JIT)))
    assert {m.case.dtype for m in run.measurements} == {"float64"}
    assert all(str(v) == "float64" for v in seen.values())
    assert not jax.config.jax_enable_x64  # restored afterwards


def test_checkpoint_receives_partial_runs():
    partial_runs = []

    @workload(inputs=vec, sizes={"S": {"n": 8}, "M": {"n": 16}}, name="two_sizes")
    def two(xp, x):
        return x - 1

    final = run_workloads(
        [two], RunConfig.quick_settings(sizes=("S", "M")), checkpoint=partial_runs.append
    )
    assert [len(r.measurements) for r in partial_runs] == [3, 6]
    assert not any(r.complete for r in partial_runs) and final.complete


def test_without_a_numpy_reference_outputs_are_marked_unvalidated():
    def broken_numpy(x):
        raise RuntimeError("numpy side broken")

    @workload(inputs=vec, sizes={"S": {"n": 8}}, numpy=broken_numpy, name="no_reference")
    def no_reference(x):
        return x * 2

    run = run_workloads([no_reference], RunConfig.quick_settings())
    assert by(run, "no_reference", Mode.NUMPY).status is Status.ERROR
    eager = by(run, "no_reference", Mode.EAGER)
    jit = by(run, "no_reference", Mode.JIT)
    assert any(d.code == "unvalidated" for d in eager.diagnostics)
    # jit was checked against eager, so it is not unvalidated.
    assert not any(d.code == "unvalidated" for d in jit.diagnostics)
    assert jit.status is Status.OK

    only_jit = run_workloads([no_reference], RunConfig.quick_settings(modes=(Mode.NUMPY, Mode.JIT)))
    assert any(d.code == "unvalidated" for d in by(only_jit, "no_reference", Mode.JIT).diagnostics)


def test_rounds_spread_each_cases_samples_over_the_run():
    """With rounds, every case is sampled once per round, after all cases were opened; the
    later cases' cold compiles clear JAX's caches, and that must not show up as compiles
    during timing (the live cases are re-warmed, uncounted)."""
    from jitbench.run.scheduler import RoundStarted

    @workload(inputs=vec, sizes={"S": {"n": 8}, "M": {"n": 16}}, name="spread_a")
    def spread_a(xp, x):
        return xp.exp(x) - 1

    @workload(inputs=vec, sizes={"S": {"n": 8}}, name="spread_b")
    def spread_b(xp, x):
        return xp.sin(x) * 2

    events, partial_runs = [], []
    config = RunConfig.quick_settings(sizes=("S", "M"))
    # min_samples = max_samples: no case converges before its last round.
    config = RunConfig.quick_settings(
        sizes=("S", "M"), plan=replace(config.plan, rounds=3, max_samples=6, min_samples=6)
    )
    run = run_workloads(
        [spread_a, spread_b], config, on_event=events.append, checkpoint=partial_runs.append
    )
    rounds = [e for e in events if isinstance(e, RoundStarted)]
    assert [(e.index, e.total, e.cases) for e in rounds] == [(2, 3, 3), (3, 3, 3)]
    # One checkpoint per case in round 1, one per later round, one after the two extra
    # cold compile measurements; samples only grow.
    assert len(partial_runs) == 3 + 2 + 1 and run.complete
    counts = [sum(len(m.samples_s) for m in r.measurements) for r in partial_runs]
    assert counts == sorted(counts) and counts[-1] > counts[2]
    assert len(run.measurements) == 9
    for m in run.measurements:
        assert m.status is Status.OK, m.error
        # max_samples 6 over 3 rounds: at most 2 a round, at least 1 (the floor) a round.
        assert 3 <= len(m.samples_s) <= 6
        if m.compile is not None:
            assert m.compile.timed_compile_count == 0
        if m.mode is Mode.JIT:  # three cold compiles; the stage figures are the median's
            repeats = m.compile.compile_repeats_s
            assert len(repeats) == 3 and all(r > 0 for r in repeats)
            assert m.compile.total_compile_s == pytest.approx(sorted(repeats)[1])
        assert not any(d.code == "recompiled-during-timing" for d in m.diagnostics)
    assert run.config.settings.plan.rounds == 3


def test_a_case_failing_in_a_later_round_keeps_the_others_going():
    calls = {"n": 0}

    def flaky(x):
        calls["n"] += 1
        if calls["n"] > 6:  # fine for the reference, warm-up and round 1, then breaks
            raise RuntimeError("broke in a later round")
        return x + 1

    @workload(inputs=vec, sizes={"S": {"n": 8}}, numpy=flaky, name="late_fault")
    def late_fault(x):
        return x + 1

    @workload(inputs=vec, sizes={"S": {"n": 8}}, name="steady")
    def steady(xp, x):
        return x * 3

    base = RunConfig.quick_settings()
    plan = replace(base.plan, rounds=4, max_samples=4, warmup_calls=1, min_sample_s=0.0)
    run = run_workloads([late_fault, steady], replace(base, plan=plan))
    assert by(run, "late_fault", Mode.NUMPY).status is Status.ERROR
    assert "later round" in by(run, "late_fault", Mode.NUMPY).error.message
    for mode in (Mode.EAGER, Mode.JIT):
        assert by(run, "late_fault", mode).status is Status.OK
    for mode in Mode:
        assert by(run, "steady", mode).status is Status.OK
        assert len(by(run, "steady", mode).samples_s) >= 4
