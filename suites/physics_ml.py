"""Physics and machine learning steps: an n-body step, a k-means step and a
logistic-regression gradient step (jax.grad vs a hand-derived NumPy gradient)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jitbench import workload

# ---------------------------------------------------------------------------- n-body


def particles(rng, *, dtype, n):
    """Positions in a unit ball-ish cloud, small velocities, masses summing to one."""
    pos = rng.standard_normal((n, 3)).astype(dtype)
    vel = (0.1 * rng.standard_normal((n, 3))).astype(dtype)
    mass = (rng.uniform(0.5, 1.5, n) / n).astype(dtype)
    return pos, vel, mass


SOFTENING = 0.1  # Plummer softening: keeps close pairs bounded, hence float32 errors too
TIME_STEP = 0.01


@workload(
    inputs=particles,
    sizes={"S": {"n": 125}, "M": {"n": 400}, "L": {"n": 1250}},
    sweep=[{"n": n} for n in (10, 30, 100, 300, 1000, 3000)],
    tags=("physics", "nbody", "pairwise"),
)
def nbody(xp, pos, vel, mass):
    """One softened-gravity leapfrog (kick-drift) step of n bodies, all pairs at once."""
    diff = pos[None, :, :] - pos[:, None, :]  # (n, n, 3): vector from body i to body j
    dist2 = xp.sum(diff * diff, axis=-1) + SOFTENING * SOFTENING
    inv_d3 = dist2**-1.5
    acc = xp.sum(diff * (mass[None, :] * inv_d3)[:, :, None], axis=1)
    vel = vel + TIME_STEP * acc
    pos = pos + TIME_STEP * vel
    return pos, vel


# ---------------------------------------------------------------------------- k-means


def blobs(rng, *, dtype, n, k, dim):
    """`n` points around `k` well-separated centres, and initial centroids near them.

    Centres lie 12 standard deviations apart or more, so no point sits within float32
    rounding of a tie between two centroids and both sides assign every point alike.
    """
    centres = np.zeros((k, dim))
    centres[np.arange(k), np.arange(k) % dim] = 12.0 * (1 + np.arange(k) // dim)
    labels = rng.integers(0, k, n)
    x = centres[labels] + rng.standard_normal((n, dim))
    init = centres + 0.5 * rng.standard_normal((k, dim))
    return x.astype(dtype), init.astype(dtype)


@workload(
    inputs=blobs,
    sizes={
        "S": {"n": 8000, "k": 8, "dim": 16},
        "M": {"n": 80_000, "k": 8, "dim": 16},
        "L": {"n": 800_000, "k": 8, "dim": 16},
    },
    sweep=[{"n": n, "k": 8, "dim": 16} for n in (100, 1000, 10_000, 100_000, 1_000_000)],
    tags=("ml", "clustering", "matmul"),
)
def kmeans_step(xp, x, centroids):
    """One Lloyd iteration of k-means: assign each point to its nearest centroid, re-average."""
    k = centroids.shape[0]
    d2 = (
        xp.sum(x * x, axis=1)[:, None]
        - 2.0 * (x @ centroids.T)
        + xp.sum(centroids * centroids, axis=1)[None, :]
    )
    labels = xp.argmin(d2, axis=1)
    one_hot = (labels[:, None] == xp.arange(k)[None, :]).astype(x.dtype)
    counts = xp.sum(one_hot, axis=0)
    return (one_hot.T @ x) / xp.maximum(counts, 1.0)[:, None]


# -------------------------------------------------------------- logistic regression


def classification(rng, *, dtype, n, dim):
    """Features, 0/1 labels from a noisy linear rule, and small initial weights."""
    x = rng.standard_normal((n, dim))
    true_w = rng.standard_normal(dim)
    y = (x @ true_w + rng.standard_normal(n) > 0).astype(dtype)
    w = 0.01 * rng.standard_normal(dim)
    return w.astype(dtype), x.astype(dtype), y


LEARNING_RATE = 0.5


def _logistic_loss(w, x, y):
    z = x @ w
    # Binary cross-entropy from logits: log(1 + e^z) - y z, written stably.
    return jnp.mean(jnp.logaddexp(0.0, z) - y * z)


_logistic_grad = jax.grad(_logistic_loss)  # module level: one grad transform, reused


def logreg_step_numpy(w, x, y):
    z = x @ w
    p = 1.0 / (1.0 + np.exp(-z))
    grad = x.T @ (p - y) / x.shape[0]  # hand-derived d/dw of the mean cross-entropy
    return w - LEARNING_RATE * grad


@workload(
    inputs=classification,
    numpy=logreg_step_numpy,
    sizes={
        "S": {"n": 25_000, "dim": 128},
        "M": {"n": 120_000, "dim": 128},
        "L": {"n": 1_000_000, "dim": 128},
    },
    sweep=[{"n": n, "dim": 128} for n in (100, 1000, 10_000, 100_000, 1_000_000)],
    tags=("ml", "autodiff", "grad"),
)
def logreg_step(w, x, y):
    """One logistic-regression gradient-descent step: jax.grad vs a hand-derived gradient."""
    return w - LEARNING_RATE * _logistic_grad(w, x, y)
