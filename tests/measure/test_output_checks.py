"""What an output's check says when there is little to check: a Python float of float32
data is judged at float32's tolerance, an empty output and a NumPy side that ran JAX are
said so."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jitbench import bench
from jitbench.measure.validation import check_outputs

X = np.random.default_rng(0).standard_normal(100_000).astype(np.float32)
FAST = {"budget": 0.01, "processes": 1}


def codes(r, mode: str) -> set[str]:
    return {d[1] for d in r.diagnostics if d[0] == mode}


def test_a_python_float_of_float32_data_is_judged_at_float32() -> None:
    a, b = float(np.float32(X).sum()), float(X.astype(np.float64).sum())
    assert a != b and check_outputs(b, a).ok


def test_a_python_float_output_is_no_mismatch() -> None:
    # (eager: under jit, float() of a traced value is traced-control-flow)
    r = bench(lambda xp, x: float(x.sum()), X, modes=["numpy", "eager"], **FAST)
    eager = r.run.measurements[-1]
    assert eager.status.value == "ok", r.diagnostics


def test_an_empty_output_says_nothing_was_checked() -> None:
    r = bench(lambda xp, x: x[:0] * 2, X, modes=["numpy", "jit"], **FAST)
    assert "empty-output" in codes(r, "jit")


def test_a_numpy_side_that_runs_jax_is_said_so() -> None:
    r = bench(lambda x: jnp.tanh(x), X, numpy=lambda x: jnp.tanh(x), modes=["numpy", "jit"], **FAST)
    assert "numpy-side-ran-jax" in codes(r, "numpy")
