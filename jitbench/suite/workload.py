"""The workload spec and the `@workload` decorator that suite files use to define one.

A workload is a named computation with a JAX side and a NumPy side. Written once against
an array namespace (`def f(xp, x): ...`), the same code serves `numpy` and `jax.numpy`;
where idioms differ (in-place updates vs `.at[]`, Python loops vs `lax.fori_loop`), pass a
separate NumPy implementation with `numpy=` and both sides take the arrays only.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from jitbench.errors import ConfigError, WorkloadError, unknown_name_message

SIZE_PRESETS = ("S", "M", "L")
# Names are matched whole (`fullmatch`: a `$` would let a trailing newline through).
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
# Size preset names and tags: printable ASCII with no space and no comma (`--sizes S,M`
# and `-k` split on those, so such a name could never be selected).
_LABEL_RE = re.compile(r"[!-+\--~]+")


def check_label(kind: str, value: object, *, workload: str) -> str:
    """A size preset name or tag as given, or WorkloadError saying what is allowed."""
    if not (isinstance(value, str) and _LABEL_RE.fullmatch(value)):
        raise WorkloadError(
            f"workload {workload!r}: invalid {kind} {value!r}: use printable ASCII characters "
            "without spaces or commas, such as 'S' or 'elementwise'."
        )
    return value


@dataclass(frozen=True)
class Inputs:
    """Arguments for one call: `arrays` are staged to the device, `static` are not.

    `args` and `kwargs` hold pytrees of arrays; `static` holds hashable Python values
    passed by keyword (and to `jax.jit` as `static_argnames`).
    """

    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    static: Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class Workload:
    """A benchmarkable computation. Build one with `@workload`, not directly.

    Attributes:
        jax_fn: the JAX side, called with the staged arrays (run eagerly and under jit).
        numpy_fn: the NumPy side, called with host arrays; its output is the reference.
        inputs: `inputs(rng, *, dtype, **params)` returns a tuple of positional arrays,
            a dict of keyword arguments, or a single array.
        sizes: preset name ("S", "M", "L", …) -> params passed to `inputs`.
        sweep: params for a size sweep (crossover charts), smallest first.
        static_argnames: keyword arguments that are Python values, static under jit.
        rtol, atol: validation tolerances; None picks dtype-aware defaults.
    """

    name: str
    jax_fn: Callable[..., Any]
    numpy_fn: Callable[..., Any]
    inputs: Callable[..., Any]
    sizes: Mapping[str, Mapping[str, Any]]
    sweep: tuple[Mapping[str, Any], ...] = ()
    static_argnames: tuple[str, ...] = ()
    rtol: float | None = None
    atol: float | None = None
    tags: tuple[str, ...] = ()
    description: str = ""
    source: str = field(default="", compare=False)

    def make_inputs(self, params: Mapping[str, Any], *, dtype: Any, seed: int = 0) -> Inputs:
        """Call the input function with a fresh seeded generator and split statics out.

        Raises:
            WorkloadError: the input function returned something that is not arguments.
        """
        rng = np.random.default_rng(seed)
        produced = self.inputs(rng, dtype=np.dtype(dtype), **params)
        if isinstance(produced, Mapping):
            args: tuple[Any, ...] = ()
            kwargs = dict(produced)
        elif isinstance(produced, tuple):
            args, kwargs = produced, {}
        elif isinstance(produced, (np.ndarray, np.generic)):
            args, kwargs = (produced,), {}
        else:
            raise WorkloadError(
                f"inputs of workload {self.name!r} returned {type(produced).__name__}; "
                "return a tuple of arrays, a dict of keyword arguments, or one array."
            )
        static = {k: kwargs.pop(k) for k in self.static_argnames if k in kwargs}
        return Inputs(args=args, kwargs=kwargs, static=static)

    def resolve_size(self, size: str | None = None) -> tuple[str, dict[str, Any]]:
        """(label, params) of a size preset or sweep label; the smallest preset (S, else
        the first one declared) when `size` is None. The one size resolver: `run`,
        `profile` and asv all go through it.

        Raises:
            ConfigError: an unknown size, with the close matches and the known ones.
        """
        if size is None:
            size = "S" if "S" in self.sizes else next(iter(self.sizes))
        if size in self.sizes:
            return size, dict(self.sizes[size])
        for label, params in zip(self.sweep_labels, self.sweep, strict=True):
            if label == size:
                return label, dict(params)
        known = [*self.sizes, *self.sweep_labels]
        raise ConfigError(unknown_name_message("size", size, known) + f" (workload {self.name!r})")

    def size_params(self, size: str) -> dict[str, Any]:
        """Params of a preset or sweep label (see `resolve_size`)."""
        return self.resolve_size(size)[1]

    @property
    def sweep_labels(self) -> list[str]:
        return [sweep_label(p) for p in self.sweep]


def sweep_label(params: Mapping[str, Any]) -> str:
    """A stable label for sweep params, e.g. ``{'n': 1000} -> 'n=1000'``."""
    return ",".join(f"{k}={v}" for k, v in params.items())


def _default_description(fn: Callable[..., Any]) -> str:
    doc = inspect.getdoc(fn) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def _source_of(fn: Callable[..., Any]) -> str:
    try:
        return f"{inspect.getsourcefile(fn)}:{inspect.getsourcelines(fn)[1]}"
    except (OSError, TypeError):
        return ""


def workload(
    fn: Callable[..., Any] | None = None,
    *,
    inputs: Callable[..., Any],
    sizes: Mapping[str, Mapping[str, Any]],
    sweep: Sequence[Mapping[str, Any]] = (),
    numpy: Callable[..., Any] | None = None,
    static_argnames: Sequence[str] = (),
    rtol: float | None = None,
    atol: float | None = None,
    tags: Sequence[str] = (),
    description: str | None = None,
    name: str | None = None,
) -> Any:
    """Define a workload from a function.

    Without `numpy=`, the decorated function takes the array namespace first,
    ``f(xp, *arrays, **static)``, and serves both sides. With `numpy=`, the decorated
    function is the JAX side and `numpy` the NumPy side; both take the arrays only.

    Returns:
        A `Workload` (or a decorator producing one when called with options only).

    Raises:
        WorkloadError: an invalid name, empty sizes, or a static name the function lacks.
    """

    def build(f: Callable[..., Any]) -> Workload:
        wl_name = name or f.__name__
        if not (isinstance(wl_name, str) and _NAME_RE.fullmatch(wl_name)):
            raise WorkloadError(
                f"invalid workload name {wl_name!r}: use ASCII letters, digits, '_', '-' and "
                "'.', starting with a letter or '_'."
            )
        if not isinstance(sizes, Mapping) or not sizes:
            raise WorkloadError(
                f"workload {wl_name!r} needs at least one size preset, as a dict such as "
                "{'S': {'n': 1000}}."
            )
        if isinstance(tags, str):
            raise WorkloadError(f"workload {wl_name!r}: tags is a tuple of names, got {tags!r}.")
        if not callable(inputs):
            raise WorkloadError(f"inputs of workload {wl_name!r} is not callable.")
        if numpy is None:
            import jax.numpy as jnp

            jax_fn: Callable[..., Any] = partial(f, jnp)
            numpy_fn: Callable[..., Any] = partial(f, np)
        else:
            jax_fn, numpy_fn = f, numpy
        params = inspect.signature(jax_fn).parameters
        accepts_var_kw = any(p.kind is p.VAR_KEYWORD for p in params.values())
        for s in static_argnames:
            if s not in params and not accepts_var_kw:
                raise WorkloadError(
                    f"workload {wl_name!r}: static_argnames names {s!r}, "
                    f"which is not a parameter of {f.__name__}."
                )
        return Workload(
            name=wl_name,
            jax_fn=jax_fn,
            numpy_fn=numpy_fn,
            inputs=inputs,
            sizes={check_label("size", k, workload=wl_name): dict(v) for k, v in sizes.items()},
            sweep=tuple(dict(p) for p in sweep),
            static_argnames=tuple(static_argnames),
            rtol=rtol,
            atol=atol,
            tags=tuple(check_label("tag", t, workload=wl_name) for t in tags),
            description=description if description is not None else _default_description(f),
            source=_source_of(f),
        )

    return build(fn) if fn is not None else build
