"""Elementwise workloads: memory-bound maps where jit's win is fusing the temporaries."""

from __future__ import annotations

from jitbench import workload


def vector(rng, *, dtype, n):
    return (rng.standard_normal(n).astype(dtype),)


def positive_vector(rng, *, dtype, n):
    return (rng.uniform(0.1, 10.0, n).astype(dtype),)


VECTOR_SWEEP = [{"n": 10**k} for k in range(2, 8)]


@workload(
    inputs=vector,
    sizes={"S": {"n": 100_000}, "M": {"n": 1_000_000}, "L": {"n": 10_000_000}},
    sweep=VECTOR_SWEEP,
    tags=("elementwise", "tutorial"),
)
def selu(xp, x, alpha=1.67, lmbda=1.05):
    """Scaled exponential linear unit, the jit tutorial's example."""
    return lmbda * xp.where(x > 0, x, alpha * xp.exp(x) - alpha)


@workload(
    inputs=positive_vector,
    sizes={"S": {"n": 300_000}, "M": {"n": 3_000_000}, "L": {"n": 30_000_000}},
    sweep=VECTOR_SWEEP,
    tags=("elementwise", "jaxpr"),
)
def log2(xp, x):
    """Base-2 logarithm as ln(x) / ln(2), the jaxpr documentation's example."""
    ln_x = xp.log(x)
    ln_2 = xp.log(xp.asarray(2.0, dtype=x.dtype))
    return ln_x / ln_2
