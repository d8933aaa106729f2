"""Iterative stencils: the JAX side loops with lax.fori_loop, NumPy with a Python loop."""

from __future__ import annotations

from jax import lax

from jitbench import workload


def grid(rng, *, dtype, n, steps):
    u = rng.standard_normal((n, n)).astype(dtype)
    return {"u": u, "steps": steps}


def jacobi_numpy(u, *, steps):
    u = u.copy()  # never mutate the caller's input: every timed call starts from the same grid
    for _ in range(steps):
        u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return u


def _jacobi_sweep(_, v):
    # Module level, not nested: eager fori_loop caches its compiled loop on the body
    # function's identity, and a fresh closure per call would recompile every call.
    interior = 0.25 * (v[:-2, 1:-1] + v[2:, 1:-1] + v[1:-1, :-2] + v[1:-1, 2:])
    return v.at[1:-1, 1:-1].set(interior)


@workload(
    inputs=grid,
    numpy=jacobi_numpy,
    static_argnames=("steps",),
    sizes={
        "S": {"n": 80, "steps": 50},
        "M": {"n": 400, "steps": 50},
        "L": {"n": 1200, "steps": 50},
    },
    sweep=[{"n": n, "steps": 50} for n in (16, 32, 64, 128, 256, 512, 1024)],
    tags=("stencil", "fori_loop"),
)
def jacobi2d(u, *, steps):
    """Jacobi relaxation on a 2-D grid with fixed boundaries, lax.fori_loop on the JAX side."""
    return lax.fori_loop(0, steps, _jacobi_sweep, u)


def rod(rng, *, dtype, n, steps):
    """A batch of 64 rods' initial temperatures on `n` points."""
    u = rng.uniform(0.0, 1.0, (64, n)).astype(dtype)
    return {"u": u, "steps": steps}


DIFFUSION = 0.25  # alpha = k dt / dx^2; the explicit scheme is stable for alpha <= 0.5


def heat1d_numpy(u, *, steps):
    u = u.copy()  # never mutate the caller's input
    for _ in range(steps):
        u[:, 1:-1] += DIFFUSION * (u[:, :-2] - 2.0 * u[:, 1:-1] + u[:, 2:])
    return u


def _heat_step(_, v):
    # Module level for the same reason as _jacobi_sweep.
    lap = v[:, :-2] - 2.0 * v[:, 1:-1] + v[:, 2:]
    return v.at[:, 1:-1].add(DIFFUSION * lap)


@workload(
    inputs=rod,
    numpy=heat1d_numpy,
    static_argnames=("steps",),
    sizes={
        "S": {"n": 100, "steps": 60},
        "M": {"n": 2000, "steps": 60},
        "L": {"n": 22_000, "steps": 60},
    },
    sweep=[{"n": n, "steps": 60} for n in (10, 100, 1000, 10_000, 100_000)],
    tags=("stencil", "fori_loop", "pde"),
)
def heat1d(u, *, steps):
    """Explicit finite-difference 1-D heat equation on 64 rods, fixed-temperature ends."""
    return lax.fori_loop(0, steps, _heat_step, u)
