"""JAX code as its users write it, each idiom a function and the arguments of one call, in
the style of JAX's own documentation: already-jitted functions, transforms (`grad`,
`value_and_grad`, `vmap`, `checkpoint`), pytrees of parameters and optimiser state,
PRNG keys, donated buffers, static shape arguments, Python loops against `lax` loops, and
the real flax, optax and equinox objects. `tests/interactive/test_idioms.py` runs every
one through `jitbench.bench`, a suite file (`tests/idioms/suite.py`), the pytest fixture
and the `%jitbench` magic."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jitbench import Arguments

RNG = np.random.default_rng(0)


def _normal(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# -- an MLP on dict params, forward and a whole training step ---------------------------


def init_mlp(sizes: tuple[int, ...] = (16, 32, 1)) -> dict[str, Any]:
    return {
        f"layer{i}": {"w": _normal(a, b) / np.sqrt(a), "b": np.zeros(b, np.float32)}
        for i, (a, b) in enumerate(itertools.pairwise(sizes))
    }


@jax.jit
def mlp_forward(params: dict[str, Any], x: jax.Array) -> jax.Array:
    *hidden, last = params.values()
    for layer in hidden:
        x = jnp.tanh(x @ layer["w"] + layer["b"])
    return x @ last["w"] + last["b"]


def mse(params: dict[str, Any], x: jax.Array, y: jax.Array) -> jax.Array:
    return jnp.mean((mlp_forward(params, x) - y) ** 2)


@jax.jit
def sgd_momentum_step(params, velocity, x, y, lr=0.01, beta=0.9):
    """An optax-style update written by hand: gradients, a momentum state, new params."""
    loss, grads = jax.value_and_grad(mse)(params, x, y)
    velocity = jax.tree_util.tree_map(lambda v, g: beta * v + g, velocity, grads)
    params = jax.tree_util.tree_map(lambda p, v: p - lr * v, params, velocity)
    return params, velocity, loss


def optax_adam():
    import optax

    return optax.adam(1e-3)


def optax_inputs() -> Arguments:
    params = init_mlp()
    state = optax_adam().init(params)
    return Arguments(params, state, _normal(64, 16), _normal(64, 1))


def optax_step(params, opt_state, x, y):
    """A real optax adam step on dict params (the optimiser made at import, as users do)."""
    import optax

    loss, grads = jax.value_and_grad(mse)(params, x, y)
    updates, opt_state = OPTIMISER.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


try:
    OPTIMISER = optax_adam()
except ImportError:  # pragma: no cover - optax is in the test extra
    OPTIMISER = None


# -- loops: lax.scan and fori_loop against a Python loop ---------------------------------


def cumsum_scan(x: jax.Array) -> jax.Array:
    def body(acc, v):
        acc = acc + v
        return acc, acc

    return jax.lax.scan(body, jnp.zeros((), x.dtype), x)[1]


def cumsum_fori(x: jax.Array) -> jax.Array:
    def body(i, out):
        return out.at[i].set(out[i - 1] + x[i])

    return jax.lax.fori_loop(1, x.shape[0], body, jnp.zeros_like(x).at[0].set(x[0]))


def cumsum_python(x: jax.Array) -> jax.Array:
    acc, out = jnp.zeros((), x.dtype), []
    for i in range(x.shape[0]):
        acc = acc + x[i]
        out.append(acc)
    return jnp.stack(out)


# -- PRNG keys, donation, static shapes, pytrees in and out -----------------------------


def dropout(key: jax.Array, x: jax.Array, rate: float = 0.1) -> jax.Array:
    keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)
    return jnp.where(keep, x / (1.0 - rate), 0.0)


def split_and_sample(key: jax.Array) -> tuple[jax.Array, jax.Array]:
    """A legacy uint32 key in, a new key and samples out."""
    key, sub = jax.random.split(key)
    return key, jax.random.normal(sub, (256,))


@partial(jax.jit, donate_argnums=0)
def accumulate(buffer: jax.Array, update: jax.Array) -> jax.Array:
    """An in-place update of a donated buffer."""
    return buffer.at[:, 0].add(update)


@partial(jax.jit, static_argnames="n")
def chebyshev(x: jax.Array, n: int) -> jax.Array:
    """A static shape argument: the polynomial degree fixes the program."""
    t0, t1 = jnp.ones_like(x), x
    for _ in range(n - 1):
        t0, t1 = t1, 2 * x * t1 - t0
    return t1


def tiled(x: jax.Array, reps: int) -> jax.Array:
    """A positional static argument (`static_argnums=1`)."""
    return jnp.tile(x, reps) * 2.0


def dict_in_tuple_out(batch: dict[str, jax.Array]) -> tuple[jax.Array, jax.Array]:
    centred = batch["x"] - batch["x"].mean(axis=0)
    return centred, centred.T @ batch["y"]


class State(NamedTuple):
    position: jax.Array
    velocity: jax.Array


def leapfrog(state: State, dt: float = 0.01) -> State:
    """A NamedTuple state through a physics step (a harmonic oscillator)."""
    v = state.velocity - 0.5 * dt * state.position
    x = state.position + dt * v
    return State(x, v - 0.5 * dt * x)


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Linear:
    weight: jax.Array
    bias: jax.Array


def linear_apply(layer: Linear, x: jax.Array) -> jax.Array:
    """A dataclass registered as a pytree, as the JAX docs show."""
    return x @ layer.weight + layer.bias


# -- transforms --------------------------------------------------------------------------


def loss(w: jax.Array, x: jax.Array) -> jax.Array:
    return jnp.sum(jnp.tanh(x @ w) ** 2)


per_example_grads = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0)))
batched_matvec = jax.vmap(lambda w, x: w @ x, in_axes=(None, 0))
checkpointed = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)) * jnp.cos(x))


# -- flax and equinox ---------------------------------------------------------------------


def flax_train_state() -> Arguments:
    import flax.linen as nn
    from flax.training import train_state

    class Model(nn.Module):
        @nn.compact
        def __call__(self, x, train: bool = True):
            x = nn.Dense(32)(x)
            x = nn.Dropout(0.1, deterministic=not train)(x)
            return nn.Dense(1)(nn.relu(x))

    model = Model()
    x = _normal(64, 16)
    params = model.init(jax.random.key(0), x, train=False)["params"]
    state = train_state.TrainState.create(apply_fn=model.apply, params=params, tx=optax_adam())
    return Arguments(state, {"x": x, "y": _normal(64, 1)}, jax.random.key(1))


@jax.jit
def flax_step(state, batch, key):
    """The flax docs' train step with dropout: a TrainState, a batch dict and a key."""

    def loss_fn(params):
        pred = state.apply_fn({"params": params}, batch["x"], rngs={"dropout": key})
        return jnp.mean((pred - batch["y"]) ** 2)

    loss_value, grads = jax.value_and_grad(loss_fn)(state.params)
    return state.apply_gradients(grads=grads), loss_value


def equinox_mlp() -> Arguments:
    import equinox as eqx

    model = eqx.nn.MLP(16, 1, 32, 2, key=jax.random.key(0))
    return Arguments(model, _normal(64, 16))


def equinox_loss(model, x):
    """An equinox module (its activation a leaf that is no array) in a plain function."""
    return jnp.mean(jax.vmap(model)(x) ** 2)


def equinox_sgd(model, x):
    """An equinox module in and out: one SGD step, under equinox's own filter_jit."""
    import equinox as eqx

    grads = eqx.filter_grad(equinox_loss)(model, x)
    return eqx.apply_updates(model, jax.tree_util.tree_map(lambda g: -0.01 * g, grads))


def _equinox_sgd_jitted():
    import equinox as eqx

    return eqx.filter_jit(equinox_sgd)


@dataclasses.dataclass(frozen=True)
class Idiom:
    """One idiom: the function, a call's arguments (made fresh), and `bench` options."""

    name: str
    fn: Callable[[], Callable[..., Any]]
    arguments: Callable[[], Arguments]
    options: dict[str, Any] = dataclasses.field(default_factory=dict)


def _args(*args: Any, **kwargs: Any) -> Callable[[], Arguments]:
    return lambda: Arguments(*args, **kwargs)


def _init_sgd() -> Arguments:
    params = init_mlp()
    velocity = jax.tree_util.tree_map(np.zeros_like, params)
    return Arguments(params, velocity, _normal(64, 16), _normal(64, 1))


IDIOMS: tuple[Idiom, ...] = (
    Idiom("mlp_forward", lambda: mlp_forward, lambda: Arguments(init_mlp(), _normal(64, 16))),
    Idiom("sgd_momentum_step", lambda: sgd_momentum_step, _init_sgd),
    Idiom("optax_adam_step", lambda: optax_step, optax_inputs),
    Idiom("cumsum_scan", lambda: cumsum_scan, _args(_normal(64))),
    Idiom("cumsum_fori", lambda: cumsum_fori, _args(_normal(64))),
    Idiom("cumsum_python_loop", lambda: cumsum_python, _args(_normal(64))),
    Idiom("dropout_typed_key", lambda: dropout, _args(jax.random.key(0), _normal(1024))),
    Idiom("legacy_key_split", lambda: split_and_sample, _args(jax.random.PRNGKey(0))),
    Idiom("donated_update", lambda: accumulate, _args(_normal(128, 8), _normal(128))),
    Idiom("static_shape_argnames", lambda: chebyshev, _args(_normal(1024), n=5)),
    Idiom(
        "static_argnums",
        lambda: tiled,
        _args(_normal(256), 3),
        {"static_argnums": 1},
    ),
    Idiom(
        "dict_in_tuple_out",
        lambda: dict_in_tuple_out,
        _args({"x": _normal(128, 8), "y": _normal(128, 2)}),
    ),
    Idiom("namedtuple_state", lambda: leapfrog, _args(State(_normal(512), _normal(512)))),
    Idiom(
        "dataclass_pytree",
        lambda: linear_apply,
        _args(Linear(_normal(8, 4), _normal(4)), _normal(32, 8)),
    ),
    Idiom("grad", lambda: jax.grad(loss), _args(_normal(8, 4), _normal(32, 8))),
    Idiom("value_and_grad", lambda: jax.value_and_grad(loss), _args(_normal(8, 4), _normal(32, 8))),
    Idiom("vmap_in_axes", lambda: batched_matvec, _args(_normal(8, 8), _normal(32, 8))),
    Idiom("jit_vmap_grad", lambda: per_example_grads, _args(_normal(8, 4), _normal(32, 8))),
    Idiom("checkpoint", lambda: checkpointed, _args(_normal(1024))),
    Idiom("flax_train_state_dropout", lambda: flax_step, flax_train_state),
    Idiom("equinox_module_in", lambda: equinox_loss, equinox_mlp),
    Idiom("equinox_filter_jit_in_out", _equinox_sgd_jitted, equinox_mlp),
)
