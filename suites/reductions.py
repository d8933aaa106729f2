"""Reductions: a pass over the data that jit can fuse with the elementwise work around it."""

from __future__ import annotations

from jitbench import workload


def matrix(rng, *, dtype, rows, cols):
    return (rng.standard_normal((rows, cols)).astype(dtype),)


@workload(
    inputs=matrix,
    sizes={
        "S": {"rows": 500, "cols": 1000},
        "M": {"rows": 3000, "cols": 1000},
        "L": {"rows": 30_000, "cols": 1000},
    },
    sweep=[{"rows": r, "cols": 1000} for r in (1, 10, 100, 1000, 10_000)],
    tags=("reduction", "ml"),
)
def logsumexp(xp, x):
    """Row-wise log-sum-exp with the max subtracted for stability."""
    m = xp.max(x, axis=1, keepdims=True)
    return (m + xp.log(xp.sum(xp.exp(x - m), axis=1, keepdims=True)))[:, 0]


ROWS_SWEEP = [{"rows": r, "cols": 1000} for r in (1, 10, 100, 1000, 10_000)]


@workload(
    inputs=matrix,
    sizes={
        "S": {"rows": 300, "cols": 1000},
        "M": {"rows": 3000, "cols": 1000},
        "L": {"rows": 22_000, "cols": 1000},
    },
    sweep=ROWS_SWEEP,
    tags=("reduction", "ml", "activation"),
)
def softmax(xp, x):
    """Row-wise softmax over the last axis with the max subtracted, as in attention."""
    e = xp.exp(x - xp.max(x, axis=-1, keepdims=True))
    return e / xp.sum(e, axis=-1, keepdims=True)


@workload(
    inputs=matrix,
    sizes={
        "S": {"rows": 600, "cols": 1000},
        "M": {"rows": 4000, "cols": 1000},
        "L": {"rows": 30_000, "cols": 1000},
    },
    sweep=ROWS_SWEEP,
    tags=("reduction", "preprocessing"),
)
def standardise(xp, x):
    """Column-wise standardisation (x - mean) / std, the z-score of a feature matrix."""
    mean = xp.mean(x, axis=0)
    std = xp.std(x, axis=0)
    return (x - mean) / (std + 1e-6)
