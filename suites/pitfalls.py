"""The classic JAX pitfalls from the JAX documentation, each reproduced so jitbench shows it.

Kept out of the default run: load it explicitly with
`jitbench run --suite suites/pitfalls.py` or `jitbench profile NAME --suite suites/pitfalls.py`.
Beside most pitfalls sits its fixed twin, so the table shows what the fix buys.
`EXPECTED_CODES` says which diagnostic each workload must produce (tests check it).
"""

from __future__ import annotations

from functools import partial

import jax
import numpy as np
from jax import lax

from jitbench import workload

__jitbench_collect__ = False

SIZES = {"S": {"n": 1_000}, "M": {"n": 100_000}}
LOOP_STEPS = 300  # 4 primitives per step: 1,200 jaxpr equations once unrolled

# workload name -> {mode: diagnostic code it must produce}; {} for a fixed twin, which
# must produce no pitfall code at all.
EXPECTED_CODES: dict[str, dict[str, str]] = {
    "branch_on_value": {"jit": "traced-control-flow"},
    "branch_with_where": {},
    "while_traced_bound": {"jit": "traced-control-flow"},
    "while_static_bound": {},
    "unrolled_loop": {"jit": "large-jaxpr", "eager": "eager-dispatch-bound"},
    "fori_loop_twin": {},
    "jit_partial_per_call": {"eager": "recompiled-during-timing"},
    "jit_lambda_per_call": {"eager": "recompiled-during-timing"},
    "jit_cached": {},
    "impure_global": {"jit": "output-mismatch"},
    "numpy_float64": {"numpy": "numpy-float64"},
    "tiny_dispatch": {"jit": "jit-slower-than-numpy"},
    "grad_through_where": {"jit": "nonfinite-output", "eager": "nonfinite-output"},
    "grad_double_where": {},
    "prints_each_call": {"eager": "prints-during-call", "jit": "prints-during-call"},
    "prints_nothing": {},
}


def vector(rng, *, dtype, n):
    return (rng.standard_normal(n).astype(dtype),)


def half_zeros(rng, *, dtype, n):
    # max(0, N(0, 1)): about half the entries are exactly 0, where log(x) is -inf.
    return (np.maximum(rng.standard_normal(n), 0).astype(dtype),)


def vector_and_bound(rng, *, dtype, n):
    return {"x": rng.standard_normal(n).astype(dtype), "n": 20}


# --- Python control flow on a traced value ("Control flow" in the JAX docs) ------------


@workload(inputs=vector, sizes=SIZES, tags=("pitfall", "control-flow"))
def branch_on_value(xp, x):
    """`if x > 0` on a traced value: fine in NumPy and eager, an error under jit."""
    if x.mean() > 0:
        return x
    return 2 * x


@workload(inputs=vector, sizes=SIZES, tags=("fixed", "control-flow"))
def branch_with_where(xp, x):
    """The fix for branch_on_value: select with where, no Python `if` on a value."""
    return xp.where(x.mean() > 0, x, 2 * x)


def _count_to(x, n):
    # The JAX docs' example: a Python while loop whose bound is an argument.
    i = 0
    while i < n:
        i += 1
    return x + i


@workload(inputs=vector_and_bound, numpy=_count_to, sizes=SIZES, tags=("pitfall", "control-flow"))
def while_traced_bound(x, n):
    """`while i < n` with n traced: jit cannot convert the comparison to a Python bool."""
    return _count_to(x, n)


@workload(
    inputs=vector_and_bound,
    numpy=_count_to,
    static_argnames=("n",),
    sizes=SIZES,
    tags=("fixed", "control-flow"),
)
def while_static_bound(x, n):
    """The same loop with static_argnames=("n",): n is a Python int at trace time."""
    return _count_to(x, n)


# --- A Python loop unrolled into the trace, beside its lax.fori_loop twin --------------


def _cos_step(_, x):
    # Module level: eager fori_loop caches its compiled loop on the body's identity.
    return 0.5 * jax.numpy.cos(x) + 0.5 * x


def _cos_iteration_numpy(x):
    for _ in range(LOOP_STEPS):
        x = 0.5 * np.cos(x) + 0.5 * x
    return x


# Small vectors: each step's arithmetic is cheap next to eager's dispatch of it, so eager
# stays many times slower than jit (its pitfall) even when a busy machine slows jit's
# longer calls more than eager's (at n=1000 two busy cores brought 18x down to 6x).
LOOP_SIZES = {"S": {"n": 128}, "M": {"n": 10_000}}


@workload(inputs=vector, sizes=LOOP_SIZES, tags=("pitfall", "loop"))
def unrolled_loop(xp, x):
    """A Python for loop under jit: every step is traced, so the program grows with it."""
    for _ in range(LOOP_STEPS):
        x = 0.5 * xp.cos(x) + 0.5 * x
    return x


@workload(inputs=vector, numpy=_cos_iteration_numpy, sizes=LOOP_SIZES, tags=("fixed", "loop"))
def fori_loop_twin(x):
    """The fix for unrolled_loop: lax.fori_loop traces the body once."""
    return lax.fori_loop(0, LOOP_STEPS, _cos_step, x)


# --- jax.jit created anew on every call, beside a cached jitted function --------------


def _affine(a, x):
    return a * x + 1.0


@workload(inputs=vector, numpy=partial(_affine, 2.0), sizes=SIZES, tags=("pitfall", "recompile"))
def jit_partial_per_call(x):
    """jax.jit(partial(f, 2.0)) inside the function: a new function object, a new compile."""
    return jax.jit(partial(_affine, 2.0))(x)


@workload(inputs=vector, numpy=partial(_affine, 2.0), sizes=SIZES, tags=("pitfall", "recompile"))
def jit_lambda_per_call(x):
    """jax.jit(lambda ...) inside the function: compiled again on every call."""
    return jax.jit(lambda v: 2.0 * v + 1.0)(x)


_affine_jitted = jax.jit(partial(_affine, 2.0))


@workload(inputs=vector, numpy=partial(_affine, 2.0), sizes=SIZES, tags=("fixed", "recompile"))
def jit_cached(x):
    """The fix: create the jitted function once and reuse it."""
    return _affine_jitted(x)


# --- An impure function ("Pure functions" in the JAX docs) ----------------------------

_calls = {"count": 0}


def vector_counting_from_zero(rng, *, dtype, n):
    # Each case starts the counter at 0, so the NumPy reference (x + 1) and the value jit
    # froze (x + 2) differ by 1 in every run, and in a second run in the same process too
    # (suite modules stay imported): from a counter left at N, x + N + 1 against x + N would
    # pass float32's tolerance and the pitfall would go unseen.
    _calls["count"] = 0
    return vector(rng, dtype=dtype, n=n)


@workload(inputs=vector_counting_from_zero, sizes=SIZES, tags=("pitfall", "impure"))
def impure_global(xp, x):
    """Reads and bumps a global call counter: jit freezes the value seen when tracing."""
    _calls["count"] += 1
    return x + _calls["count"]


# --- An unfair comparison: NumPy silently widens to float64 ----------------------------


@workload(inputs=vector, sizes=SIZES, tags=("pitfall", "dtype"))
def numpy_float64(xp, x):
    """x * arange(n): NumPy promotes float32 × int64 to float64, JAX stays in float32."""
    return x * xp.arange(x.shape[0])


# --- Too small for jit to pay off -----------------------------------------------------


@workload(inputs=vector, sizes={"S": {"n": 8}, "M": {"n": 64}}, tags=("pitfall", "dispatch"))
def tiny_dispatch(xp, x):
    """One add on a few numbers: jit's per-call dispatch costs more than NumPy's whole call."""
    return x + 1.0


# --- A NaN gradient through jnp.where (the JAX FAQ), beside the double-where fix --------


def _where_log(x):
    return jax.numpy.sum(jax.numpy.where(x > 0, jax.numpy.log(x), 0.0))


def _double_where_log(x):
    safe = jax.numpy.where(x > 0, x, 1.0)  # the risky op never sees the masked points
    return jax.numpy.sum(jax.numpy.where(x > 0, jax.numpy.log(safe), 0.0))


def _where_log_grad_numpy(x):
    # d/dx sum(where(x > 0, log x, 0)) = where(x > 0, 1/x, 0), without dividing by 0.
    return np.divide(1.0, x, out=np.zeros_like(x), where=x > 0)


@workload(inputs=half_zeros, numpy=_where_log_grad_numpy, sizes=SIZES, tags=("pitfall", "gradient"))
def grad_through_where(x):
    """jax.grad through where(x > 0, log(x), 0): NaN at x = 0 (0 × inf in the backward pass)."""
    return jax.grad(_where_log)(x)


@workload(inputs=half_zeros, numpy=_where_log_grad_numpy, sizes=SIZES, tags=("fixed", "gradient"))
def grad_double_where(x):
    """The fix: where on the input too, so log never sees the masked zeros (the FAQ's double
    where)."""
    return jax.grad(_double_where_log)(x)


# --- print inside the measured function ------------------------------------------------


@workload(inputs=vector, sizes=SIZES, tags=("pitfall", "print"))
def prints_each_call(xp, x):
    """print in the function: every eager and NumPy call prints; under jit it prints once,
    at trace time, and shows a tracer. jitbench captures it and says so."""
    print("sum is", x.sum())
    return x * 2


@workload(inputs=vector, sizes=SIZES, tags=("fixed", "print"))
def prints_nothing(xp, x):
    """The same function without the print."""
    return x * 2
