"""Modes: staging with static positions, and the NumPy call with an untimed setup."""

from __future__ import annotations

import jax
import numpy as np

from jitbench import workload
from jitbench.config import Mode
from jitbench.measure import modes
from jitbench.measure.timer import time_calls


def steps_and_grid(rng, *, dtype, n):
    return 4, np.arange(n, dtype=dtype)


def test_static_positions_are_not_staged():
    @workload(inputs=steps_and_grid, sizes={"S": {"n": 3}}, static_argnums=(0,))
    def scaled(xp, steps, u):
        return u * steps

    host = scaled.make_inputs({"n": 3}, dtype="float32")
    staged = modes.stage(host, jax.devices()[0])
    assert staged.args[0] == 4 and isinstance(staged.args[1], jax.Array)
    assert staged.transfer_bytes == 12
    jitted = modes.jit_function(scaled)
    call = modes.build_call(Mode.JIT, scaled, host=host, staged=staged, jitted=jitted)
    out = call()
    fast = modes.specialise_call(Mode.JIT, call, out, staged=staged, jitted=jitted)
    assert fast is not call  # positional statics keep the single-array fast path
    np.testing.assert_array_equal(np.asarray(fast()), np.arange(3) * 4)


def test_keyword_arrays_are_staged_by_name():
    def inputs(rng, *, dtype, n):
        return {"w": np.arange(n, dtype=dtype), "b": np.zeros(2, dtype)}

    @workload(inputs=inputs, sizes={"S": {"n": 4}})
    def affine(xp, *, w, b):
        return w + b.sum()

    host = affine.make_inputs({"n": 4}, dtype="float32")
    staged = modes.stage(host, jax.devices()[0])
    assert staged.args == () and list(staged.kwargs) == ["w", "b"]
    assert all(isinstance(v, jax.Array) for v in staged.kwargs.values())
    np.testing.assert_array_equal(np.asarray(staged.kwargs["w"]), np.arange(4))
    assert staged.transfer_bytes == (4 + 2) * 4 and staged.transfer_s > 0
    assert [np.shape(v) for v in modes.staged_values(host)] == [(4,), (2,)]


class StepClock:
    """Advances 1 s per read, and the setup's calls are counted apart."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def test_setup_runs_before_every_call_outside_the_timed_region():
    copies = []

    def np_side(steps, u):
        u += steps  # in place, as published NumPy kernels do

    def setup(steps, u):
        copies.append(1)
        clock.now += 100.0  # a slow copy: must not be timed
        return steps, u.copy()

    @workload(
        inputs=steps_and_grid,
        sizes={"S": {"n": 3}},
        numpy=np_side,
        setup=setup,
        outputs=("u",),
        static_argnums=(0,),
    )
    def inplace(steps, u):
        return u + steps

    clock = StepClock()
    host = inplace.make_inputs({"n": 3}, dtype="float32")
    call = modes.build_call(Mode.NUMPY, inplace, host=host, staged=None)
    assert time_calls(call, 5, clock) == 5.0  # one second per call, setup excluded
    assert len(copies) == 5
    np.testing.assert_array_equal(call(), np.arange(3) + 4)  # output: the written argument
    np.testing.assert_array_equal(host.args[1], np.arange(3))  # the inputs stay pristine


def test_outputs_without_setup_copy_only_the_outputs():
    def np_side(u, v):
        u *= 2
        v *= 3

    def two(rng, *, dtype, n):
        return np.ones(n, dtype), np.ones(n, dtype)

    @workload(inputs=two, sizes={"S": {"n": 2}}, numpy=np_side, outputs=(0, 1))
    def pair(u, v):
        return u * 2, v * 3

    host = pair.make_inputs({"n": 2}, dtype="float32")
    call = modes.build_call(Mode.NUMPY, pair, host=host, staged=None)
    for _ in range(3):
        u, v = call()
    np.testing.assert_array_equal(u, [2, 2])
    np.testing.assert_array_equal(v, [3, 3])


def test_nojit_eager_runs_jitted_code_op_by_op():
    from functools import partial

    seen = []

    @partial(jax.jit, static_argnums=(0,))
    def kernel(steps, u):
        seen.append(isinstance(u, jax.core.Tracer))
        return u * steps

    wl = workload(kernel, numpy=lambda s, u: u * s, inputs=steps_and_grid, sizes={"S": {"n": 3}})
    host = wl.make_inputs({"n": 3}, dtype="float32")
    staged = modes.stage(host, jax.devices()[0])
    eager = modes.build_call(Mode.EAGER, wl, host=host, staged=staged)
    eager()
    assert seen == [False]  # not traced: every operation ran on its own
    assert modes.jit_function(wl) is kernel  # jit mode calls the kernel as it is
