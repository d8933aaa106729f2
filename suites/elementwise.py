"""Elementwise workloads: memory-bound maps where jit's win is fusing the temporaries."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.special
import numpy as np
from scipy.special import ndtr  # float32 in, float32 out, like jax.scipy's ndtr

from jitbench import workload


def vector(rng, *, dtype, n):
    return (rng.standard_normal(n).astype(dtype),)


def positive_vector(rng, *, dtype, n):
    return (rng.uniform(0.1, 10.0, n).astype(dtype),)


VECTOR_SWEEP = [{"n": 10**k} for k in range(2, 8)]


@workload(
    inputs=vector,
    sizes={"S": {"n": 150_000}, "M": {"n": 1_000_000}, "L": {"n": 10_000_000}},
    sweep=VECTOR_SWEEP,
    tags=("elementwise", "tutorial"),
)
def selu(xp, x, alpha=1.67, lmbda=1.05):
    """Scaled exponential linear unit, the jit tutorial's example."""
    return lmbda * xp.where(x > 0, x, alpha * xp.exp(x) - alpha)


@workload(
    inputs=positive_vector,
    sizes={"S": {"n": 500_000}, "M": {"n": 4_000_000}, "L": {"n": 30_000_000}},
    sweep=VECTOR_SWEEP,
    tags=("elementwise", "jaxpr"),
)
def log2(xp, x):
    """Base-2 logarithm as ln(x) / ln(2), the jaxpr documentation's example."""
    ln_x = xp.log(x)
    ln_2 = xp.log(xp.asarray(2.0, dtype=x.dtype))
    return ln_x / ln_2


@workload(
    inputs=vector,
    sizes={"S": {"n": 250_000}, "M": {"n": 2_000_000}, "L": {"n": 15_000_000}},
    sweep=VECTOR_SWEEP,
    tags=("elementwise", "ml", "activation"),
)
def gelu(xp, x):
    """GELU activation, tanh approximation as in BERT and GPT-2."""
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)  # sqrt(2/pi) * (x + c x^3)
    return 0.5 * x * (1.0 + xp.tanh(inner))


def option_batch(rng, *, dtype, n):
    """Spot prices, strikes and maturities of `n` European options (the classic
    Black-Scholes benchmark ranges: spot 5-30, strike 1-100, 0.25-10 years)."""
    spot = rng.uniform(5.0, 30.0, n).astype(dtype)
    strike = rng.uniform(1.0, 100.0, n).astype(dtype)
    years = rng.uniform(0.25, 10.0, n).astype(dtype)
    return spot, strike, years


RATE = 0.02
VOLATILITY = 0.30


def _black_scholes(xp, ndtr, spot, strike, years):
    sqrt_t = xp.sqrt(years)
    d1 = (xp.log(spot / strike) + (RATE + 0.5 * VOLATILITY * VOLATILITY) * years) / (
        VOLATILITY * sqrt_t
    )
    d2 = d1 - VOLATILITY * sqrt_t
    discounted = strike * xp.exp(-RATE * years)
    call = spot * ndtr(d1) - discounted * ndtr(d2)
    put = call - spot + discounted  # put-call parity
    return call, put


def black_scholes_numpy(spot, strike, years):
    return _black_scholes(np, ndtr, spot, strike, years)


@workload(
    inputs=option_batch,
    numpy=black_scholes_numpy,
    sizes={"S": {"n": 20_000}, "M": {"n": 200_000}, "L": {"n": 2_000_000}},
    sweep=VECTOR_SWEEP,
    tags=("elementwise", "finance"),
)
def black_scholes(spot, strike, years):
    """Black-Scholes prices of European calls and puts, normal CDF via scipy/jax ndtr."""
    return _black_scholes(jnp, jax.scipy.special.ndtr, spot, strike, years)
