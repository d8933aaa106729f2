"""What of a JAX function is already jitted: the function itself (and the static arguments
its `jax.jit` declares), or jitted helpers it calls. Eager mode's "auto" choice and the
`eager-partly-jitted` diagnostic rest on it."""

from __future__ import annotations

import contextlib
import dis
import inspect
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any


def is_jitted(fn: Any) -> bool:
    """Whether `fn` runs compiled when called: a `jax.jit`-wrapped function, or a library's
    jitted callable (equinox's `filter_jit`); each has the AOT `lower`."""
    return callable(fn) and hasattr(fn, "lower")


def is_jax_jit(fn: Any) -> bool:
    """Whether `fn` is `jax.jit`'s own (it has the AOT `trace` beside `lower`): jit mode
    calls it as it is and reads its program from JAX's caches."""
    return is_jitted(fn) and hasattr(fn, "trace")


def jit_statics(fn: Any) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """(static_argnums, static_argnames) a jitted function was declared with, as JAX
    normalised them (names of positional parameters also appear as positions). Read from
    JAX's `_jit_info`, which is not public API: ((), ()) where it is missing."""
    info = getattr(fn, "_jit_info", None)
    nums = getattr(info, "static_argnums", ()) or ()
    names = getattr(info, "static_argnames", ()) or ()
    return tuple(int(i) for i in nums), tuple(str(n) for n in names)


def jit_options(fn: Any) -> dict[str, Any] | None:
    """The `jax.jit` options a jitted function was made with, to make it again in another
    process (`suite.shipped`); None for anything else. Read from JAX's `_jit_info` and
    `_fun`, which are not public API (None where they are missing).

    Raises:
        ValueError: options that cannot be made again (shardings, a device or backend).
    """
    info, fun = getattr(fn, "_jit_info", None), getattr(fn, "_fun", None)
    if info is None or fun is None or not is_jitted(fn):
        return None
    if getattr(info, "user_specified_in_shardings", False) or any(
        type(leaf).__name__ != "UnspecifiedValue"
        for leaf in getattr(info, "out_shardings_leaves", ())
    ):
        raise ValueError("a jitted function with in_shardings/out_shardings is not shipped")
    if getattr(info, "device", None) is not None or getattr(info, "backend", None) is not None:
        raise ValueError("a jitted function with device=/backend= is not shipped")
    options: dict[str, Any] = {
        "static_argnums": tuple(info.static_argnums) or None,
        "static_argnames": tuple(info.static_argnames) or None,
        "donate_argnums": tuple(info.donate_argnums) or None,
        "donate_argnames": tuple(info.donate_argnames) or None,
        "keep_unused": bool(info.keep_unused),
        "inline": bool(info.inline),
    }
    if kvs := getattr(info, "compiler_options_kvs", ()):
        options["compiler_options"] = dict(kvs)
    return {k: v for k, v in options.items() if v is not None}


def jit_donated(fn: Any) -> tuple[int, ...]:
    """The positions a jitted function donates (`donate_argnums`, with names of positional
    parameters as positions, as JAX normalised them); () for anything else."""
    info = getattr(fn, "_jit_info", None) if is_jitted(fn) else None
    return tuple(int(i) for i in (getattr(info, "donate_argnums", ()) or ()))


def code_objects(code: Any) -> Iterator[Any]:
    """`code` and the code objects nested in it (inner functions, comprehensions)."""
    yield code
    for const in code.co_consts:
        if inspect.iscode(const):
            yield from code_objects(const)


#: The instructions that read a module global by name (`update(...)`); an attribute of the
#: same name (`optimizer.update(...)`, LOAD_ATTR/LOAD_METHOD) is another object.
_GLOBAL_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME"})


def called_globals(code: Any) -> list[str]:
    """The module globals `code` itself reads, in order (not its attribute names, which
    share `co_names` with them)."""
    return list(
        dict.fromkeys(
            str(ins.argval) for ins in dis.get_instructions(code) if ins.opname in _GLOBAL_LOADS
        )
    )


def jitted_parts(fn: Callable[..., Any]) -> list[str]:
    """What of `fn` runs compiled even when called directly: `fn` itself when it is jitted,
    and the jitted functions its code calls as module globals or closure variables (an
    attribute such as `optimizer.update` is not the module's `update`)."""
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
        for n in called_globals(obj):
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
