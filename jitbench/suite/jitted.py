"""What of a JAX function is already jitted: the function itself (and the static arguments
its `jax.jit` declares), or jitted helpers it calls. Eager mode's "auto" choice and the
`eager-partly-jitted` diagnostic rest on it."""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any


def is_jitted(fn: Any) -> bool:
    """Whether `fn` is a `jax.jit`-wrapped function (it has the AOT `trace`/`lower`)."""
    return callable(fn) and hasattr(fn, "lower") and hasattr(fn, "trace")


def jit_statics(fn: Any) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """(static_argnums, static_argnames) a jitted function was declared with, as JAX
    normalised them (names of positional parameters also appear as positions). Read from
    JAX's `_jit_info`, which is not public API: ((), ()) where it is missing."""
    info = getattr(fn, "_jit_info", None)
    nums = getattr(info, "static_argnums", ()) or ()
    names = getattr(info, "static_argnames", ()) or ()
    return tuple(int(i) for i in nums), tuple(str(n) for n in names)


def code_objects(code: Any) -> Iterator[Any]:
    """`code` and the code objects nested in it (inner functions, comprehensions)."""
    yield code
    for const in code.co_consts:
        if inspect.iscode(const):
            yield from code_objects(const)


def jitted_parts(fn: Callable[..., Any]) -> list[str]:
    """What of `fn` runs compiled even when called directly: `fn` itself when it is jitted,
    and the jitted functions of its module (or closure) its code refers to by name."""
    while isinstance(fn, partial):
        fn = fn.func
    found: list[str] = []
    target: Any = fn
    if is_jitted(fn):
        found.append(f"{getattr(fn, '__name__', 'it')} is jitted")
        target = getattr(fn, "__wrapped__", None)
    code = getattr(target, "__code__", None)
    if code is None:
        return found
    helpers: list[str] = []
    scope = getattr(target, "__globals__", {})
    for obj in code_objects(code):
        for n in obj.co_names:
            if n not in helpers and is_jitted(scope.get(n)):
                helpers.append(n)
    for name, cell in zip(
        code.co_freevars, getattr(target, "__closure__", None) or (), strict=False
    ):
        with contextlib.suppress(ValueError):  # an empty cell
            if name not in helpers and is_jitted(cell.cell_contents):
                helpers.append(name)
    if helpers:
        found.append(f"it calls jitted {', '.join(helpers)}")
    return found
