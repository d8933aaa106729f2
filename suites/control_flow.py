"""Control flow: data-dependent loops and recurrences, lax.while_loop / lax.scan on the JAX
side and the Python loops a NumPy user writes."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

from jitbench import workload

# ---------------------------------------------------------------------------- Mandelbrot


def complex_plane(rng, *, dtype, height, width, max_iter):
    """A `height` x `width` grid over [-2.2, 0.8] x [-1.2, 1.2] (no randomness needed)."""
    del rng
    re = np.linspace(-2.2, 0.8, width, dtype=np.float64)
    im = np.linspace(-1.2, 1.2, height, dtype=np.float64)
    cr, ci = np.meshgrid(re, im)
    return {"cr": cr.astype(dtype), "ci": ci.astype(dtype), "max_iter": max_iter}


def mandelbrot_numpy(cr, ci, *, max_iter):
    zr = np.zeros_like(cr)
    zi = np.zeros_like(ci)
    count = np.zeros_like(cr)  # float, like an escape-time image (exact up to 2**24)
    for _ in range(max_iter):
        active = zr * zr + zi * zi <= 4.0
        if not active.any():
            break
        # Same operation order as the JAX side, so both round alike.
        new_zr = zr * zr - zi * zi + cr
        new_zi = 2.0 * zr * zi + ci
        zr = np.where(active, new_zr, zr)
        zi = np.where(active, new_zi, zi)
        count += active
    return count


def _mandel_cond(state):
    i, limit, zr, zi, _, _, _ = state
    # Stop at the iteration cap or as soon as every point has escaped.
    return (i < limit) & jnp.any(zr * zr + zi * zi <= 4.0)


def _mandel_body(state):
    # Module level: eager while_loop caches its compiled loop on the functions' identity.
    i, limit, zr, zi, cr, ci, count = state
    active = zr * zr + zi * zi <= 4.0
    new_zr = zr * zr - zi * zi + cr
    new_zi = 2.0 * zr * zi + ci
    zr = jnp.where(active, new_zr, zr)
    zi = jnp.where(active, new_zi, zi)
    return i + 1, limit, zr, zi, cr, ci, count + active.astype(count.dtype)


@workload(
    inputs=complex_plane,
    numpy=mandelbrot_numpy,
    static_argnames=("max_iter",),
    sizes={
        "S": {"height": 60, "width": 80, "max_iter": 32},
        "M": {"height": 240, "width": 320, "max_iter": 32},
        "L": {"height": 720, "width": 960, "max_iter": 32},
    },
    sweep=[{"height": h, "width": (4 * h) // 3, "max_iter": 32} for h in (12, 36, 108, 324, 972)],
    # Counts near the set's boundary are chaotic: a different rounding (FMA contraction,
    # as XLA does on GPU) can move a boundary pixel's escape by an iteration. With 32
    # iterations that stays at one: recomputing L with one rounding per complex update
    # (float64 then float32) changes 4 of 691,200 pixels, each by exactly 1. So allow one
    # iteration per pixel and nothing relative. On CPU all three modes agree exactly today.
    rtol=0.0,
    atol=1.0,
    tags=("control_flow", "while_loop", "fractal"),
)
def mandelbrot(cr, ci, *, max_iter):
    """Mandelbrot escape-time counts with masked updates, lax.while_loop on the JAX side."""
    zeros = jnp.zeros_like(cr)
    state = (0, max_iter, zeros, zeros, cr, ci, zeros)
    return lax.while_loop(_mandel_cond, _mandel_body, state)[-1]


# ------------------------------------------------------------ exponential moving average


def series_batch(rng, *, dtype, steps, series):
    """`series` random walks of `steps` time steps, time along axis 0."""
    return (np.cumsum(rng.standard_normal((steps, series)), axis=0).astype(dtype),)


SMOOTHING = 0.9  # y[t] = a y[t-1] + (1 - a) x[t]


def ema_numpy(x):
    out = np.empty_like(x)
    out[0] = x[0]
    for t in range(1, x.shape[0]):
        out[t] = SMOOTHING * out[t - 1] + (1.0 - SMOOTHING) * x[t]
    return out


def _ema_step(carry, xt):
    # Module level: eager scan caches its compiled loop on the body's identity.
    y = SMOOTHING * carry + (1.0 - SMOOTHING) * xt
    return y, y


@workload(
    inputs=series_batch,
    numpy=ema_numpy,
    sizes={
        "S": {"steps": 300, "series": 256},
        "M": {"steps": 1000, "series": 6144},
        "L": {"steps": 5000, "series": 16_384},
    },
    sweep=[{"steps": 1000, "series": b} for b in (1, 16, 256, 4096, 65_536)],
    tags=("control_flow", "scan", "recurrence", "timeseries"),
)
def ema(x):
    """Exponential moving average of many time series, a Python loop vs lax.scan."""
    _, ys = lax.scan(_ema_step, x[0], x[1:])
    return jnp.concatenate([x[:1], ys], axis=0)
