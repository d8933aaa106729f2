"""Linear algebra: BLAS-bound work where NumPy and XLA call comparable kernels."""

from __future__ import annotations

from jitbench import workload


def square(rng, *, dtype, n):
    return (rng.standard_normal((n, n)).astype(dtype),)


@workload(
    inputs=square,
    sizes={"S": {"n": 350}, "M": {"n": 1000}, "L": {"n": 2000}},
    sweep=[{"n": n} for n in (10, 30, 100, 300, 1000, 3000)],
    tags=("linalg", "faq"),
)
def centred_product(xp, x):
    """The JAX FAQ's f(x) = x.T @ (x - x.mean(axis=0))."""
    return x.T @ (x - x.mean(axis=0))
