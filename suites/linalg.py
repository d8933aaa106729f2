"""Linear algebra: BLAS-bound work where NumPy and XLA call comparable kernels."""

from __future__ import annotations

import jax
import jax.scipy.linalg
import numpy as np
import scipy.linalg

from jitbench import workload


def square(rng, *, dtype, n):
    return (rng.standard_normal((n, n)).astype(dtype),)


@workload(
    inputs=square,
    sizes={"S": {"n": 350}, "M": {"n": 1000}, "L": {"n": 1600}},
    sweep=[{"n": n} for n in (10, 30, 100, 300, 1000, 3000)],
    tags=("linalg", "faq"),
)
def centred_product(xp, x):
    """The JAX FAQ's f(x) = x.T @ (x - x.mean(axis=0))."""
    return x.T @ (x - x.mean(axis=0))


def two_squares(rng, *, dtype, n):
    a = rng.standard_normal((n, n)).astype(dtype)
    b = rng.standard_normal((n, n)).astype(dtype)
    return a, b


SQUARE_SWEEP = [{"n": n} for n in (10, 30, 100, 300, 1000, 3000)]


@workload(
    inputs=two_squares,
    sizes={"S": {"n": 350}, "M": {"n": 700}, "L": {"n": 1600}},
    sweep=SQUARE_SWEEP,
    tags=("linalg", "blas", "matmul"),
)
def gemm(xp, a, b):
    """Dense matrix product a @ b (GEMM): both sides call an optimised BLAS-like kernel."""
    return a @ b


def mlp_params(rng, *, dtype, batch, width):
    """A batch of inputs and the weights of a width -> 4*width -> width MLP (He init)."""
    hidden = 4 * width
    x = rng.standard_normal((batch, width)).astype(dtype)
    w1 = (rng.standard_normal((width, hidden)) * np.sqrt(2.0 / width)).astype(dtype)
    b1 = (0.1 * rng.standard_normal(hidden)).astype(dtype)
    w2 = (rng.standard_normal((hidden, width)) * np.sqrt(2.0 / hidden)).astype(dtype)
    b2 = (0.1 * rng.standard_normal(width)).astype(dtype)
    return x, w1, b1, w2, b2


@workload(
    inputs=mlp_params,
    sizes={
        "S": {"batch": 256, "width": 128},
        "M": {"batch": 512, "width": 320},
        "L": {"batch": 2048, "width": 512},
    },
    sweep=[{"batch": b, "width": 256} for b in (1, 4, 16, 64, 256, 1024, 4096)],
    tags=("linalg", "ml", "matmul"),
)
def mlp(xp, x, w1, b1, w2, b2):
    """Forward pass of a two-layer perceptron: relu(x @ W1 + b1) @ W2 + b2."""
    h = xp.maximum(x @ w1 + b1, 0.0)
    return h @ w2 + b2


def two_point_sets(rng, *, dtype, n, m, dim):
    x = rng.standard_normal((n, dim)).astype(dtype)
    y = rng.standard_normal((m, dim)).astype(dtype)
    return x, y


@workload(
    inputs=two_point_sets,
    sizes={
        "S": {"n": 500, "m": 500, "dim": 64},
        "M": {"n": 1500, "m": 1500, "dim": 64},
        "L": {"n": 4500, "m": 4500, "dim": 64},
    },
    sweep=[{"n": n, "m": n, "dim": 64} for n in (10, 30, 100, 300, 1000, 3000)],
    tags=("linalg", "ml", "matmul", "distances"),
)
def pairwise_distances(xp, x, y):
    """Euclidean distances between two point sets via |x|^2 + |y|^2 - 2 x.y (one GEMM)."""
    sq = xp.sum(x * x, axis=1)[:, None] + xp.sum(y * y, axis=1)[None, :] - 2.0 * (x @ y.T)
    return xp.sqrt(xp.maximum(sq, 0.0))


def spd_system(rng, *, dtype, n, rhs):
    """A well-conditioned symmetric positive-definite matrix M M^T / n + I and `rhs`
    right-hand sides."""
    m = rng.standard_normal((n, n))
    a = (m @ m.T / n + np.eye(n)).astype(dtype)
    b = rng.standard_normal((n, rhs)).astype(dtype)
    return a, b


def cholesky_solve_numpy(a, b):
    return scipy.linalg.cho_solve(scipy.linalg.cho_factor(a, lower=True), b)


@workload(
    inputs=spd_system,
    numpy=cholesky_solve_numpy,
    sizes={
        "S": {"n": 420, "rhs": 16},
        "M": {"n": 1100, "rhs": 16},
        "L": {"n": 2500, "rhs": 16},
    },
    sweep=[{"n": n, "rhs": 16} for n in (10, 30, 100, 300, 1000, 3000)],
    tags=("linalg", "lapack", "solve"),
)
def cholesky_solve(a, b):
    """Solve A x = b for symmetric positive-definite A by Cholesky factorisation."""
    return jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(a, lower=True), b)
