"""A workload that changes JAX's global configuration leaves the next case as the run was
configured, and its own case says what it changed (`measure.jax_config`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jitbench import workload
from jitbench.config import Mode, RunConfig, SamplingPlan
from jitbench.measure import jax_config
from jitbench.runner.scheduler import run_workloads


def _vector(rng, *, dtype, n):
    return (rng.standard_normal(n).astype(dtype),)


def test_kept_restores_and_says_what_changed() -> None:
    seen = []
    with jax_config.kept(seen.append):
        jax.config.update("jax_disable_jit", True)
    assert not jax.config.jax_disable_jit
    assert seen == [{"jax_disable_jit": (False, True)}]


def test_a_workload_that_turns_x64_on_does_not_leak_into_the_next_case() -> None:
    @workload(inputs=_vector, sizes={"S": {"n": 64}}, name="flips_x64")
    def flips_x64(xp, x):
        jax.config.update("jax_enable_x64", True)
        return x * 2

    @workload(inputs=_vector, sizes={"S": {"n": 64}}, name="innocent")
    def innocent(xp, x):
        return xp.zeros(x.shape) + x

    config = RunConfig(processes=1, plan=SamplingPlan(budget_s=0.01, min_samples=3))
    run = run_workloads([flips_x64, innocent], config)
    assert not jax.config.jax_enable_x64
    flipped = next(c for c in run.cases() if c.workload == "flips_x64")
    codes = {d.code for d in run.get(flipped.key, Mode.JIT).diagnostics}
    assert "changed-jax-config" in codes
    clean = next(c for c in run.cases() if c.workload == "innocent")
    for mode in Mode.NUMPY, Mode.EAGER, Mode.JIT:
        m = run.get(clean.key, mode)
        assert m.ok and "changed-jax-config" not in {d.code for d in m.diagnostics}, mode
    assert jnp.zeros(3).dtype == np.float32


def test_a_worker_takes_the_options_its_parent_set_whatever_set_them() -> None:
    """`portable` carries every option of this process another can take (not only the
    watched ones: a platform, a cache folder), enums as their values; `apply` sets those
    that differ from the worker's own."""
    import jax

    from jitbench.measure import jax_config

    before = jax_config.portable()
    assert "jax_platforms" in before  # not one of the watched
    assert isinstance(before["jax_numpy_dtype_promotion"], str)  # an enum, by its value
    try:
        jax.config.update("jax_default_device", jax.devices("cpu")[0])
        assert "jax_default_device" not in jax_config.portable()  # a device stays here
        jax.config.update("jax_default_device", None)
        jax_config.apply({**before, "jax_default_matmul_precision": "highest"})
        assert jax.config.jax_default_matmul_precision == "highest"
        jax_config.apply({"jax_no_such_option": 1})  # another JAX's: left out
    finally:
        jax.config.update("jax_default_matmul_precision", None)
