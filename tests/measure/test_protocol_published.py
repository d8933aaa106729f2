"""Published code as it is, through the whole protocol (real JAX, tiny sizes): in-place
NumPy kernels, positional statics, an already-jitted JAX side, dtypes and their
diagnostics."""

from __future__ import annotations

from functools import partial

import jax
import numpy as np
from jax import lax

from jitbench import Mode, RunConfig, Status, run_workloads, workload
from jitbench.results import Run


def by(run: Run, name: str, mode: Mode):
    return next(m for m in run.measurements if m.case.workload == name and m.mode is mode)


def codes(run: Run, name: str, mode: Mode) -> set[str]:
    return {d.code for d in by(run, name, mode).diagnostics}


def jacobi_inputs(rng, *, dtype, n):
    a = np.fromfunction(lambda i, j: i * (j + 2) / n, (n, n))  # float64, as published
    return 5, a, a.copy()


def jacobi_numpy(steps, a, b):
    for _ in range(1, steps):
        b[1:-1, 1:-1] = 0.2 * (a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[2:, 1:-1])
        a[1:-1, 1:-1] = 0.2 * (b[1:-1, 1:-1] + b[1:-1, :-2] + b[1:-1, 2:] + b[2:, 1:-1])


@partial(jax.jit, static_argnums=(0,))
def jacobi_jax(steps, a, b):
    def body(_, ab):
        a, b = ab
        b = b.at[1:-1, 1:-1].set(0.2 * (a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[2:, 1:-1]))
        a = a.at[1:-1, 1:-1].set(0.2 * (b[1:-1, 1:-1] + b[1:-1, :-2] + b[1:-1, 2:] + b[2:, 1:-1]))
        return a, b

    return lax.fori_loop(1, steps, body, (a, b))


def test_an_in_place_kernel_with_a_jitted_jax_side_runs_without_glue():
    wl = workload(
        jacobi_jax,
        numpy=jacobi_numpy,
        inputs=jacobi_inputs,
        outputs=("a", "b"),
        sizes={"S": {"n": 12}},
        name="jacobi_published",
    )
    run = run_workloads([wl], RunConfig.quick_settings())
    for mode in (Mode.NUMPY, Mode.EAGER, Mode.JIT):
        m = by(run, "jacobi_published", mode)
        assert m.status is Status.OK, m.failure_text
        assert "recompiled-during-timing" not in codes(run, "jacobi_published", mode)
    case = by(run, "jacobi_published", Mode.JIT).case
    assert case.dtype == "float32" and case.input_dtypes == {"a": "float32", "b": "float32"}
    eager = by(run, "jacobi_published", Mode.EAGER)
    assert "eager-nojit" in codes(run, "jacobi_published", Mode.EAGER)
    assert eager.compile is not None and eager.compile.compile_count > 0  # op by op
    assert not (codes(run, "jacobi_published", Mode.NUMPY) & {"scalar-promotion", "numpy-float64"})


def test_a_numpy_side_returning_none_without_outputs_is_timed_but_unvalidated():
    def np_side(x):
        x *= 2

    wl = workload(
        lambda x: x * 2,
        numpy=np_side,
        inputs=lambda rng, *, dtype, n: np.ones(n, dtype),
        setup=lambda x: (x.copy(),),
        sizes={"S": {"n": 4}},
        name="no_outputs",
    )
    run = run_workloads([wl], RunConfig.quick_settings())
    assert by(run, "no_outputs", Mode.NUMPY).status is Status.OK
    eager = by(run, "no_outputs", Mode.EAGER)
    note = next(d for d in eager.diagnostics if d.code == "unvalidated")
    assert "returned None" in note.message and "outputs=" in note.hint


def test_integer_narrowing_and_scalar_promotion_are_diagnosed():
    def inputs(rng, *, dtype, n):
        return np.float64(0.5), np.arange(n, dtype=np.int64) + 2**33

    def np_side(alpha, idx):
        return (idx % 7) * alpha

    wl = workload(
        lambda alpha, idx: (idx % 7) * alpha,
        numpy=np_side,
        inputs=inputs,
        static_argnums=(0,),  # a static NumPy scalar is passed as it is
        sizes={"S": {"n": 4}},
        name="narrowing",
    )
    run = run_workloads([wl], RunConfig.quick_settings(modes=(Mode.NUMPY, Mode.JIT)))
    assert "scalar-promotion" in codes(run, "narrowing", Mode.NUMPY)
    narrowed = next(
        d for d in by(run, "narrowing", Mode.JIT).diagnostics if d.code == "input-narrowed"
    )
    assert "idx int64 → int32 (values out of range" in narrowed.message
    assert by(run, "narrowing", Mode.JIT).case.input_dtypes == {"idx": "int64"}


def test_a_pinned_float64_workload_needs_x64():
    wl = workload(
        lambda xp, x: x + 1,
        inputs=lambda rng, *, dtype, n: np.ones(n, dtype),
        sizes={"S": {"n": 4}},
        dtype="float64",
        name="needs_x64",
    )
    run = run_workloads([wl], RunConfig.quick_settings(modes=(Mode.NUMPY, Mode.JIT)))
    m = by(run, "needs_x64", Mode.JIT)
    assert m.status is Status.ERROR and m.case.dtype == "float64"
    assert m.error is not None and "--x64" in m.error.message
    ok = run_workloads([wl], RunConfig.quick_settings(modes=(Mode.NUMPY, Mode.JIT), x64=True))
    assert by(ok, "needs_x64", Mode.JIT).status is Status.OK


def test_a_float32_only_workload_keeps_float32_under_x64():
    wl = workload(
        lambda xp, x: x * 2,
        inputs=lambda rng, *, dtype, n: np.ones(n),  # float64, whatever is asked
        sizes={"S": {"n": 4}},
        dtype="float32",
        name="float32_only",
    )
    run = run_workloads([wl], RunConfig.quick_settings(modes=(Mode.NUMPY, Mode.JIT), x64=True))
    m = by(run, "float32_only", Mode.JIT)
    assert m.status is Status.OK and m.case.dtype == "float32"
    assert m.case.input_dtypes == {"x": "float32"}
