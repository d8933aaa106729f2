"""One cold compile per case: the first call's stage split from JAX's compile events, the
program analysis read from the cache (no second compile), and how often a case compiles.
Real JAX on tiny arrays."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jitbench import Mode, workload
from jitbench.config import SamplingPlan
from jitbench.measure import compilation as jcompile
from jitbench.measure.opening import PlannedCase, open_case

PLAN = SamplingPlan(min_sample_s=0.0, warmup_s=0.0, budget_s=0.01, min_samples=3, max_samples=3)


def _f(x):  # type: ignore[no-untyped-def]
    return jnp.tanh(x) * jnp.exp(-x) + jnp.where(x > 0, x, 0.0).sum()


def test_a_cold_call_is_split_into_trace_lower_and_compile() -> None:
    x = jnp.ones(32)
    jitted = jax.jit(_f)
    cold = jcompile.cold_call(lambda: jitted(x).block_until_ready())
    assert cold.compile_count == 1
    assert cold.stages_s is not None
    trace_s, lower_s, compile_s = cold.stages_s
    assert min(trace_s, lower_s, compile_s) > 0
    # The stages happen inside the call, which also runs the program.
    assert trace_s + lower_s + compile_s <= cold.seconds
    # Called again it is a cache hit: no compile, no stage.
    again = jcompile.cold_call(lambda: jitted(x).block_until_ready(), clear=False)
    assert again.compile_count == 0 and again.stages_s is None


def test_the_analysis_comes_from_the_cache_without_a_second_compile() -> None:
    x = jnp.asarray(np.random.default_rng(0).standard_normal((24, 24)), jnp.float32)
    jitted = jax.jit(_f)
    jcompile.cold_call(lambda: jitted(x).block_until_ready())
    cached, compiles = jcompile.cached_analysis(jitted, args=(x,), kwargs={})
    assert compiles == 0
    aot = jcompile.cold_aot_breakdown(_f, static_argnames=(), args=(x,), kwargs={})
    assert aot.compile_count == 1
    assert cached.hlo_fingerprint == aot.hlo_fingerprint is not None
    assert cached.flops == aot.flops is not None
    assert cached.bytes_accessed == aot.bytes_accessed
    assert cached.memory == aot.memory is not None
    assert cached.jaxpr_eqn_count == aot.jaxpr_eqn_count is not None


def test_after_a_clear_the_analysis_compiles_again() -> None:
    x = jnp.ones(8)
    jitted = jax.jit(_f)
    jitted(x).block_until_ready()
    jcompile.clear_caches()
    _, compiles = jcompile.cached_analysis(jitted, args=(x,), kwargs={})
    assert compiles == 1


def _vec(rng, *, dtype, n):  # type: ignore[no-untyped-def]
    return (rng.standard_normal(n).astype(dtype),)


def _steps(rng, *, dtype, n):  # type: ignore[no-untyped-def]
    return {"x": rng.standard_normal(n).astype(dtype), "steps": 3}


@workload(inputs=_vec, sizes={"S": {"n": 16}}, name="compiled_once")
def compiled_once(xp, x):  # type: ignore[no-untyped-def]
    return xp.sin(x) * 2 + 1


@workload(inputs=_steps, sizes={"S": {"n": 16}}, static_argnames=("steps",), name="static_once")
def static_once(xp, x, *, steps):  # type: ignore[no-untyped-def]
    for _ in range(steps):
        x = xp.cos(x)
    return x


def _open(wl, modes):  # type: ignore[no-untyped-def]
    pc = PlannedCase(wl, "S", dict(wl.sizes["S"]), jax.devices("cpu")[0], "float32")
    with jcompile.count_compiles() as events:
        session = open_case(pc, timed=modes, plan=PLAN, seed=0, quick=True)
    return session, events


@pytest.mark.parametrize("wl", [compiled_once, static_once], ids=["positional", "static-kwarg"])
def test_a_case_compiles_its_jit_program_once(wl) -> None:  # type: ignore[no-untyped-def]
    session, events = _open(wl, (Mode.NUMPY, Mode.JIT))
    [m] = [m for m in session.measurements() if m.mode is Mode.JIT]
    c = m.compile
    assert events.compile_count == 1 == c.compile_count
    assert min(c.trace_s, c.lower_s, c.compile_s) > 0
    assert c.total_compile_s <= c.first_call_s
    assert c.hlo_fingerprint and c.jaxpr_eqn_count >= 1 and c.bytes_accessed is not None


def test_eager_and_jit_compile_only_their_cold_first_calls() -> None:
    """One clear per case, jit first: warm-up and calibration compile nothing again."""
    session, events = _open(compiled_once, (Mode.NUMPY, Mode.EAGER, Mode.JIT))
    by_mode = {m.mode: m for m in session.measurements()}
    eager, jit = by_mode[Mode.EAGER].compile, by_mode[Mode.JIT].compile
    assert eager.compile_count >= 1 and jit.compile_count == 1
    assert events.compile_count == eager.compile_count + jit.compile_count
    # Sampled right away, nothing recompiles: no other case cleared the caches.
    generation = jcompile.cache_generation()
    with jcompile.count_compiles() as sampling:
        session.sample(PLAN)
    assert sampling.compile_count == 0 and jcompile.cache_generation() == generation


def test_a_case_is_rewarmed_only_after_another_case_cleared_the_caches() -> None:
    first, _ = _open(compiled_once, (Mode.EAGER, Mode.JIT))
    first.sample(PLAN)
    _open(static_once, (Mode.JIT,))  # its cold compile clears JAX's caches
    with jcompile.count_compiles() as sampling:
        first.sample(PLAN)
    assert sampling.compile_count >= 2  # re-warmed: eager's programs and jit's, untimed
    assert all(m.compile.timed_compile_count == 0 for m in first.measurements())


def test_nested_counters_each_see_the_compiles_and_unregister() -> None:
    x = jnp.ones(3)
    with jcompile.count_compiles() as outer:
        with jcompile.count_compiles() as inner:
            jax.jit(lambda v: v * 5.0)(x).block_until_ready()
        assert inner == outer and inner.compile_count == 1
    assert jcompile._active == []


def test_takes_gradient_sees_autodiff_in_the_trace() -> None:
    def loss(x):  # type: ignore[no-untyped-def]
        return jnp.sum(jnp.where(x > 0, jnp.log(x), 0.0))

    def scaled(x, *, k):  # type: ignore[no-untyped-def]
        return jax.grad(loss)(x) * k

    x = jnp.ones(4)
    assert jcompile.takes_gradient(jax.grad(loss), args=(x,), kwargs={})
    assert jcompile.takes_gradient(scaled, args=(x,), kwargs={"k": 2}, static_argnames=("k",))
    assert not jcompile.takes_gradient(loss, args=(x,), kwargs={})
    assert not jcompile.takes_gradient(lambda v: v.item(), args=(x,), kwargs={})  # untraceable


def _sharing_case(folder):  # type: ignore[no-untyped-def]
    """A fresh jax.jit(_f) cold-called (caches cleared) while sharing `folder`."""
    x = jnp.arange(40.0)
    jitted = jax.jit(_f)
    with jcompile.sharing_compiles(folder):
        return jcompile.cold_call(lambda: jitted(x).block_until_ready(), share=True)


def test_a_later_process_loads_the_programs_the_first_compiled(tmp_path) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "case"
    first = _sharing_case(folder)
    assert first.compile_count == 1 and first.stages_s is not None  # a real, timed compile
    assert any(folder.iterdir())  # ... kept on disk
    later = _sharing_case(folder)  # caches cleared again: as a fresh process sees it
    assert later.loaded and later.compile_count == 0 and later.stages_s is None
    assert np.allclose(later.output, first.output)
    # Outside the sharing block, and for calls that do not share, nothing is loaded.
    x = jnp.arange(40.0)
    assert jcompile.cold_call(lambda: jax.jit(_f)(x).block_until_ready()).compile_count == 1
    with jcompile.sharing_compiles(folder):
        assert jcompile.cold_call(lambda: jax.jit(_f)(x).block_until_ready()).compile_count == 1
    assert jcompile._shared is None


def test_a_users_persistent_cache_is_off_for_cold_calls_and_kept_after(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # JAX decides once whether its cache is in use; a cold call must still not read it.
    x = jnp.arange(24.0)
    before = jax.config.jax_compilation_cache_dir
    try:
        jax.config.update("jax_compilation_cache_dir", str(tmp_path))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
        jcompile._reset_persistent_cache()
        jcompile.clear_caches()
        jax.jit(_f)(x).block_until_ready()  # the user's cache is in use, and holds _f
        assert any(tmp_path.iterdir())
        cold = jcompile.cold_call(lambda: jax.jit(_f)(x).block_until_ready())
        assert cold.compile_count == 1 and not cold.loaded
        assert jax.config.jax_enable_compilation_cache  # as the user had it
        assert jax.config.jax_compilation_cache_dir == str(tmp_path)
    finally:
        jax.config.update("jax_compilation_cache_dir", before)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
        jcompile._reset_persistent_cache()


def test_each_device_and_mode_compiles_its_own_program(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # One group of cases on two devices: the second device must not load the first's
    # program (on GPU, JAX leaves the device out of the key).
    x = jnp.arange(16.0)
    counts = []
    with jcompile.sharing_compiles(tmp_path):
        for label in ("cpu:0-jit", "cpu:1-jit"):
            with jcompile.shared_subfolder(label):
                cold = jcompile.cold_call(lambda: jax.jit(_f)(x).block_until_ready(), share=True)
            counts.append((cold.compile_count, cold.loaded))
    assert counts == [(1, False), (1, False)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cpu_0-jit", "cpu_1-jit"]


def test_a_call_that_raises_leaves_the_cache_flags_as_they_were(tmp_path) -> None:  # type: ignore[no-untyped-def]
    names = (
        "jax_enable_compilation_cache",
        "jax_compilation_cache_dir",
        "jax_persistent_cache_min_compile_time_secs",
        "jax_persistent_cache_min_entry_size_bytes",
    )
    before = {name: getattr(jax.config, name) for name in names}

    def boom() -> None:
        raise RuntimeError("the workload failed")

    with jcompile.sharing_compiles(tmp_path), pytest.raises(RuntimeError):
        jcompile.cold_call(boom, share=True)
    with pytest.raises(RuntimeError):
        jcompile.cold_call(boom)
    assert {name: getattr(jax.config, name) for name in names} == before


def test_a_later_rounds_rewarm_loads_the_programs_the_first_round_compiled(
    tiny_suite,  # type: ignore[no-untyped-def]
) -> None:
    """With --rounds, each case opened after another clears JAX's caches, so a case's
    second round starts with a re-warm: it loads the programs the case's cold calls kept,
    one process or several, instead of compiling eager's every primitive again."""
    from dataclasses import replace

    import jitbench
    from jitbench import RunConfig

    quick = RunConfig.quick_settings(sizes=("S", "M"))
    config = replace(quick, plan=replace(quick.plan, rounds=2))
    with jcompile.count_compiles() as events:
        run = jitbench.run(["double"], suites=[tiny_suite], config=config)
    assert all(m.ok for m in run.measurements)
    assert {m.case.size for m in run.measurements} == {"S", "M"}
    assert events.load_count > 0  # the re-warm of S's second round, after M cleared them


def test_the_program_fingerprint_ignores_names_and_lines_not_the_program() -> None:
    """A renamed function (with a comment and a moved line) compiles to the same program
    text; a float16 round trip is another program, with two more converts."""

    def selu(x, alpha=1.67, lmbda=1.05):
        return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

    def renamed(y, alpha=1.67, lmbda=1.05):
        # the same program, written under another name
        return lmbda * jnp.where(y > 0, y, alpha * jnp.exp(y) - alpha)

    def narrowed(x, alpha=1.67, lmbda=1.05):
        h = x.astype(jnp.float16)
        return (lmbda * jnp.where(h > 0, h, alpha * jnp.exp(h) - alpha)).astype(jnp.float32)

    x = jnp.ones(64)
    texts = [jax.jit(f).trace(x).lower().compile().as_text() for f in (selu, renamed, narrowed)]
    prints = [jcompile.program_fingerprint(t) for t in texts]
    assert prints[0] == prints[1] != prints[2]
    assert jcompile.hlo_fingerprint(texts[0]) != jcompile.hlo_fingerprint(texts[1])
    ops = [jcompile.opcode_counts(t) for t in texts]
    assert ops[0] == ops[1] and ops[2].get("convert", 0) == ops[0].get("convert", 0) + 2
    assert ops[0]["fusion"] >= 1 and "HloModule m" in jcompile.program_text(texts[0])
