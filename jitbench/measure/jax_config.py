"""JAX's global configuration kept from one case to the next.

A workload that calls `jax.config.update("jax_enable_x64", True)` (or turns off jit, sets
a default device or matmul precision) changed every later case of the run: the next,
innocent workload's jit came back float64 while the run recorded float32, or ran eagerly
and was reported `ok`. `kept` snapshots the options that change what a case computes,
and restores any the block changed, saying which (`diagnose.changed_jax_config`).
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Callable, Iterator
from typing import Any

import jax

#: The options that change what a case computes or how it is run.
WATCHED = (
    "jax_enable_x64",
    "jax_disable_jit",
    "jax_default_matmul_precision",
    "jax_default_device",
    "jax_numpy_rank_promotion",
    "jax_numpy_dtype_promotion",
    "jax_debug_nans",
    "jax_debug_infs",
    "jax_default_prng_impl",
    "jax_enable_checks",
    "jax_log_compiles",
)

Changes = dict[str, tuple[Any, Any]]


def snapshot() -> dict[str, Any]:
    """The watched options' values (those this JAX has)."""
    found = {}
    for name in WATCHED:
        with contextlib.suppress(AttributeError):
            found[name] = getattr(jax.config, name)
    return found


def portable() -> dict[str, Any]:
    """Every JAX option of this process whose value another process can take (a bool, a
    number, a string, None, an enum's value; not a device): what a worker is started with
    (`runner.worker`), so that it measures as the process that started it would, whatever
    set them (a notebook cell, a script's top level, guarded or not)."""
    values = getattr(jax.config, "values", None) or snapshot()
    found = {}
    for name, value in values.items():
        value = value.value if isinstance(value, enum.Enum) else value
        if value is None or isinstance(value, (bool, int, float, str)):
            found[name] = value
    return found


def apply(options: dict[str, Any]) -> None:
    """Set each of `options` (another process's `portable`) that differs from this
    process's own value (its default, or what its environment set: the same environment
    as the other's), where this JAX has and accepts it."""
    own = portable()
    for name, value in options.items():
        if name in own and own[name] != value:
            with contextlib.suppress(Exception):
                jax.config.update(name, value)


@contextlib.contextmanager
def kept(on_change: Callable[[Changes], None]) -> Iterator[None]:
    """Run the block; restore every watched option it changed and tell `on_change`
    which (name -> (before, after))."""
    before = snapshot()
    try:
        yield
    finally:
        after = snapshot()
        changed = {
            k: (v, after.get(k))
            for k, v in before.items()
            if after.get(k) is not v and after.get(k) != v
        }
        for name, (value, _) in changed.items():
            with contextlib.suppress(Exception):
                jax.config.update(name, value)
        if changed:
            on_change(changed)
