"""`jax.jit` over the array leaves of arguments that hold other leaves too.

An equinox module passed to a plain function holds its activation function as a pytree
leaf, which `jax.jit` refuses as an argument; equinox's `filter_jit` jits over the array
leaves and holds the rest static. `PartitionedJit` does the same for jit mode, where the
staged arguments hold such leaves or the JAX side is another library's jitted callable
(`modes.jit_function`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import numpy as np

from jitbench.suite.workload import Workload


def is_staged_leaf(x: Any) -> bool:
    """Whether a pytree leaf of an input goes to the device: arrays (NumPy's, JAX's, typed
    PRNG keys) and Python numbers, as `jax.jit` takes them. Other leaves (a function in an
    equinox module, a string) stay the Python values they are."""
    return isinstance(x, (np.ndarray, np.generic, jax.Array, int, float, complex))


def has_python_leaves(wl: Workload, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> bool:
    """Whether a staged argument that is not static holds a leaf that is not staged (a
    function, a string): `jax.jit` refuses those as arguments."""
    static = set(wl.static_argnums)
    values = [a for i, a in enumerate(args) if i not in static] + list(kwargs.values())
    return not all(is_staged_leaf(x) for x in jax.tree_util.tree_leaves(values))


class _Fixed:
    """A leaf held static by `PartitionedJit`, hashed and compared by identity."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __hash__(self) -> int:
        return id(self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Fixed) and other.value is self.value


class PartitionedJit:
    """`jax.jit` of a JAX side over the array leaves of its arguments and outputs, the
    other leaves (an equinox module's activation function, a string) held static, as
    equinox's `filter_jit` does; static positions and names stay static whole. Each call
    partitions its arguments (a pytree flatten), as a user's `filter_jit` call does."""

    def __init__(self, wl: Workload) -> None:
        self.fn = wl.jax_fn
        self.static_argnums = set(wl.static_argnums)
        self.static_argnames = set(wl.static_argnames)
        self.outputs: dict[Any, tuple[Any, list[Any]]] = {}
        self._jitted = jax.jit(self._inner, static_argnums=0)

    def _inner(self, key: Any, dynamic: list[Any]) -> list[Any]:
        tree, fixed = key
        leaves = [d if f is None else f.value for f, d in zip(fixed, dynamic, strict=True)]
        args, kwargs = jax.tree_util.tree_unflatten(tree, leaves)
        out_leaves, out_tree = jax.tree_util.tree_flatten(self.fn(*args, **kwargs))
        arrays = [x if isinstance(x, jax.Array) else None for x in out_leaves]
        held = [None if a is not None else x for a, x in zip(arrays, out_leaves, strict=True)]
        self.outputs[key] = (out_tree, held)
        return arrays

    def _split(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, list[Any]]:
        held = (
            tuple(_Fixed(a) if i in self.static_argnums else a for i, a in enumerate(args)),
            {k: _Fixed(v) if k in self.static_argnames else v for k, v in kwargs.items()},
        )
        leaves, tree = jax.tree_util.tree_flatten(held, is_leaf=lambda x: isinstance(x, _Fixed))
        fixed = tuple(
            x if isinstance(x, _Fixed) else (None if is_staged_leaf(x) else _Fixed(x))
            for x in leaves
        )
        dynamic = [None if f is not None else x for f, x in zip(fixed, leaves, strict=True)]
        return (tree, fixed), dynamic

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        key, dynamic = self._split(args, kwargs)
        arrays = self._jitted(key, dynamic)
        out_tree, held = self.outputs[key]
        leaves = [a if h is None else h for a, h in zip(arrays, held, strict=True)]
        return jax.tree_util.tree_unflatten(out_tree, leaves)

    def trace(self, *args: Any, **kwargs: Any) -> Any:
        return self._jitted.trace(*self._split(args, kwargs))

    def lower(self, *args: Any, **kwargs: Any) -> Any:
        return self._jitted.lower(*self._split(args, kwargs))
