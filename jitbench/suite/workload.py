"""The workload spec and the `@workload` decorator that suite files use to define one.

A workload is a named computation with a JAX side and a NumPy side. Written once against
an array namespace (`def f(xp, x): ...`), the same code serves `numpy` and `jax.numpy`;
where idioms differ (in-place updates vs `.at[]`, Python loops vs `lax.fori_loop`), pass a
separate NumPy implementation with `numpy=` and both sides take the arrays only. Published
code is taken as it is: a NumPy side that writes into its arguments (`outputs=`, `setup=`),
static arguments by position (`static_argnums=`), a JAX side that is already jitted
(`eager=`), its own dtypes (`dtype=`, `input_dtypes=`) and tolerances. `shard=` says how
sharded mode splits the inputs over a device mesh.
"""

from __future__ import annotations

import inspect
import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from jitbench.errors import (
    ConfigError,
    NoNumpySide,
    WorkloadError,
    short_repr,
    unknown_name_message,
)
from jitbench.suite.dtypes import conform, dtype_name, dtype_text
from jitbench.suite.jitted import is_jitted, jit_donated, jit_statics, jitted_parts

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


#: How eager mode calls the JAX side: "call" calls it as it is (jitted functions it calls
#: stay compiled, lax loops compile their body), "nojit" calls it under `jax.disable_jit()`
#: (every operation dispatched on its own, lax loops run as Python loops); "auto" is
#: "nojit" when the JAX side is jitted or calls jitted functions of its module, else "call".
EAGER_CHOICES = ("auto", "call", "nojit")

#: How sharded mode places one input on the mesh: the axis split across the devices, or
#: None to copy it whole to every device (replicate).
ShardAxis = int | None

Tolerance = float | Mapping[str, float] | None
"""A tolerance for every dtype (a number), per dtype name ({"float32": 1e-4, …}; dtypes
not named get the default), or None for the dtype-aware default."""


class Arguments:
    """A call's positional and keyword arguments, as given: ``Arguments(params, x, lr=0.1)``.

    An input function returns one where a call takes both kinds (a tuple is positional
    arguments alone, a dict keyword arguments alone); `bench` makes one of the arguments
    it is given, so `jax.grad`, `jax.vmap` and positional statics see them as the user
    passed them. Each argument is a pytree (arrays, dicts, tuples, NamedTuples,
    dataclasses, flax/optax/equinox state, PRNG keys) or a Python value.
    """

    __slots__ = ("args", "kwargs")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args: tuple[Any, ...] = args
        self.kwargs: dict[str, Any] = kwargs

    def __repr__(self) -> str:
        parts = [short_repr(a, 30) for a in self.args]
        parts += [f"{k}={short_repr(v, 30)}" for k, v in self.kwargs.items()]
        return f"Arguments({', '.join(parts)})"


@dataclass(frozen=True)
class Inputs:
    """Arguments for one call: arrays are staged to the device, static values are not.

    `args` and `kwargs` hold pytrees of arrays, except `args` at the positions in
    `static_argnums`, which hold Python values passed as they are (static under jit);
    `static` holds hashable Python values passed by keyword (`static_argnames`).
    `dtypes` names each argument's dtype as made (`input_dtypes` of the recorded case).
    """

    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    static: Mapping[str, Any]
    static_argnums: tuple[int, ...] = ()
    dtypes: Mapping[str, str] = field(default_factory=dict)


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
        static_argnums: positional arguments that are Python values, static under jit.
        donate_argnums: positional arguments the JAX side donates (`jax.jit`'s
            `donate_argnums`, its own where it is jitted): every JAX call gets fresh
            device copies of them, made outside the timed region.
        rtol: relative validation tolerance (see `Tolerance`); None: dtype-aware.
        atol: absolute validation tolerance; None: dtype-aware.
        norm_tol: relative norm error tolerance; None: dtype-aware.
        setup: untimed, before every timed call of the NumPy side: takes its arguments and
            returns fresh ones (a tuple, a dict of keyword arguments or one array).
        outputs: arguments (names or positions) the NumPy side writes its result into;
            when it returns None, they are its output. Without `setup`, each call gets
            fresh copies of them.
        dtype: the dtype the workload always runs in (its cases are labelled with it), or
            None to follow the run (float32, float64 with --x64).
        input_dtypes: inputs (names or positions) pinned to a dtype of their own.
        eager: how eager mode calls the JAX side, "call" or "nojit" (`EAGER_CHOICES`);
            `eager_reason` names its jitted parts when it is "nojit".
        shard: inputs (positions or names) mapped to the axis sharded mode splits across
            the devices, or None to replicate them; inputs not named follow the default
            (`measure.sharding`: split the leading axis where it divides by the device
            count, else replicate).
        origin: the suite a workload not defined in a suite file came from
            ("npbench:/path"), so another process can find it again.
        float_width: the float dtype the workload's own suite computes in ("float64" for
            NPBench, which runs float64), or None; a run that leaves --x64 unset follows
            it (`runner.plan.suite_float_width`).
    """

    name: str
    jax_fn: Callable[..., Any]
    numpy_fn: Callable[..., Any]
    inputs: Callable[..., Any]
    sizes: Mapping[str, Mapping[str, Any]]
    sweep: tuple[Mapping[str, Any], ...] = ()
    static_argnames: tuple[str, ...] = ()
    static_argnums: tuple[int, ...] = ()
    donate_argnums: tuple[int, ...] = ()
    rtol: Tolerance = None
    atol: Tolerance = None
    norm_tol: Tolerance = None
    setup: Callable[..., Any] | None = None
    outputs: tuple[str | int, ...] = ()
    dtype: str | None = None
    input_dtypes: Mapping[str | int, str] = field(default_factory=dict)
    eager: str = "call"
    eager_reason: str = ""
    shard: Mapping[int | str, ShardAxis] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    description: str = ""
    source: str = field(default="", compare=False)
    origin: str | None = field(default=None, compare=False)
    float_width: str | None = None

    @property
    def has_numpy(self) -> bool:
        """Whether the workload has a NumPy side (JAX-only ones compare jit with eager)."""
        return self.numpy_fn is not no_numpy_side

    def case_dtype(self, run_dtype: str) -> str:
        """The dtype a case of this workload runs in when the run asks for `run_dtype`."""
        return self.dtype or run_dtype

    def make_inputs(self, params: Mapping[str, Any], *, dtype: Any, seed: int = 0) -> Inputs:
        """Call the input function with a fresh seeded generator, split statics out and
        bring the inputs to the case's dtype.

        In a float32 case, float64 inputs (arrays and NumPy scalars; complex128 alike) are
        converted to float32 (see `dtypes.conform`); `input_dtypes` pins inputs to their
        own dtype; other inputs and static values are left as they are.

        Raises:
            WorkloadError: the input function returned something that is not arguments,
                a static name or position it did not produce, or an unknown pinned input.
        """
        rng = np.random.default_rng(seed)
        target = np.dtype(dtype)
        produced = on_host(self.inputs(rng, dtype=target, **params))
        args: tuple[Any, ...]
        if isinstance(produced, Arguments):
            args, kwargs = produced.args, dict(produced.kwargs)
        elif isinstance(produced, Mapping):
            args = ()
            kwargs = dict(produced)
        elif isinstance(produced, tuple):
            args, kwargs = produced, {}
        elif isinstance(produced, (np.ndarray, np.generic)):
            args, kwargs = (produced,), {}
        else:
            raise WorkloadError(
                f"inputs of workload {self.name!r} returned {type(produced).__name__}; "
                "return a tuple of arrays, a dict of keyword arguments, one array (NumPy "
                "or JAX), or jitbench.Arguments(*args, **kwargs) for both kinds."
            )
        params_of_fn = _parameter_names(self.jax_fn)
        for s in self.static_argnames:
            if s not in kwargs and s not in params_of_fn:
                made = ", ".join(sorted(kwargs)) or "no keyword arguments"
                raise WorkloadError(
                    f"workload {self.name!r}: static_argnames names {s!r}, which its inputs "
                    f"did not produce ({made}) and which is not a parameter of its JAX side."
                )
        static = {k: kwargs.pop(k) for k in self.static_argnames if k in kwargs}
        static_argnums = self._positions(
            self._given_positions(self.static_argnums, len(args), {**kwargs, **static}),
            len(args),
            "static_argnums",
        )
        names = self.argument_names(len(args))
        pinned = self._pinned(names, kwargs)
        args = tuple(
            a if i in static_argnums else conform(a, pinned.get(i), target)
            for i, a in enumerate(args)
        )
        kwargs = {k: conform(v, pinned.get(k), target) for k, v in kwargs.items()}
        dtypes = {
            names[i]: d
            for i, a in enumerate(args)
            if i not in static_argnums and (d := dtype_text(a))
        }
        dtypes.update({k: d for k, v in kwargs.items() if (d := dtype_text(v))})
        return Inputs(
            args=args,
            kwargs=kwargs,
            static=static,
            static_argnums=static_argnums,
            dtypes=dtypes,
        )

    def argument_names(self, count: int) -> list[str]:
        """Names of the first `count` positional arguments (the NumPy side's parameter
        names; `arg<i>` where it has none)."""
        known = _positional_names(self.numpy_fn) or _positional_names(self.jax_fn)
        return [known[i] if i < len(known) else f"arg{i}" for i in range(count)]

    def _given_positions(
        self, positions: Sequence[int], count: int, kwargs: Mapping[str, Any]
    ) -> list[int]:
        """`positions` less those past the call's positional arguments whose parameter the
        call gives by keyword or leaves to its default, as `jax.jit` takes
        ``f(x, n=3)`` for a function declared with ``static_argnums=1``."""
        sig = _signature(self.jax_fn)
        params = [
            p
            for p in (sig.parameters.values() if sig is not None else ())
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        kept = []
        for i in positions:
            if count <= i < len(params):
                p = params[i]
                if p.name in kwargs or p.default is not p.empty:
                    continue
            kept.append(i)
        return kept

    def _positions(self, given: Sequence[int], count: int, what: str) -> tuple[int, ...]:
        out = []
        for i in given:
            if not -count <= i < count:
                raise WorkloadError(
                    f"workload {self.name!r}: {what} names position {i}, but its inputs "
                    f"made {count} positional argument(s)."
                )
            out.append(i % count)
        return tuple(sorted(set(out)))

    def _pinned(self, names: Sequence[str], kwargs: Mapping[str, Any]) -> dict[int | str, Any]:
        """`input_dtypes` by position (positional arguments) or keyword."""
        pinned: dict[int | str, Any] = {}
        for key, dt in self.input_dtypes.items():
            if isinstance(key, int) and -len(names) <= key < len(names):
                pinned[key % len(names)] = np.dtype(dt)
            elif isinstance(key, str) and key in names:
                pinned[names.index(key)] = np.dtype(dt)
            elif isinstance(key, str) and key in kwargs:
                pinned[key] = np.dtype(dt)
            else:
                raise WorkloadError(
                    f"workload {self.name!r}: input_dtypes names {key!r}, which is not one "
                    f"of its inputs ({', '.join([*names, *kwargs]) or 'none'})."
                )
        return pinned

    def output_locations(self, count: int, kwargs: Mapping[str, Any]) -> list[int | str]:
        """Where the `outputs` are in a call of `count` positional arguments and `kwargs`:
        positions, or keyword names.

        Raises:
            WorkloadError: an output that is not among the call's arguments.
        """
        names = self.argument_names(count)
        found: list[int | str] = []
        for out in self.outputs:
            if isinstance(out, int) and -count <= out < count:
                found.append(out % count)
            elif isinstance(out, str) and out in names:
                found.append(names.index(out))
            elif isinstance(out, str) and out in kwargs:
                found.append(out)
            else:
                raise WorkloadError(
                    f"workload {self.name!r}: outputs names {out!r}, which is not one of the "
                    f"arguments its NumPy side is called with ({', '.join([*names, *kwargs])})."
                )
        return found

    def fresh_arguments(
        self, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The arguments of one NumPy call (the untimed per-call setup): `setup`'s, or
        fresh copies of the `outputs`, or the arguments themselves when neither is given.

        Raises:
            WorkloadError: `setup` returned something that is not arguments.
        """
        if self.setup is not None:
            made = self.setup(*args, **kwargs)
            if isinstance(made, Mapping):
                return args, {**kwargs, **made}
            if isinstance(made, tuple):
                return made, dict(kwargs)
            if isinstance(made, (np.ndarray, np.generic)):
                return (made,), dict(kwargs)
            raise WorkloadError(
                f"setup of workload {self.name!r} returned {type(made).__name__}; return the "
                "call's arguments: a tuple, a dict of keyword arguments, or one array."
            )
        if not self.outputs:
            return args, dict(kwargs)
        fresh_args, fresh_kwargs = list(args), dict(kwargs)
        for where in self.output_locations(len(args), kwargs):
            if isinstance(where, int):
                fresh_args[where] = np.copy(fresh_args[where])
            else:
                fresh_kwargs[where] = np.copy(fresh_kwargs[where])
        return tuple(fresh_args), fresh_kwargs

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


def on_host(made: Any) -> Any:
    """What an input function made, with its JAX arrays copied to NumPy arrays on the host,
    leaf by leaf in any pytree: inputs are host arrays (the NumPy side takes them, each
    JAX mode stages them itself), and a JAX array is an array to a user who wrote
    `jnp.ones(n)`. PRNG keys of a typed key dtype (`jax.random.key`) have no NumPy form
    and stay JAX arrays (staging moves them to the case's device)."""
    jax = sys.modules.get("jax")
    if jax is None:  # nothing made can be a JAX array
        return made
    if isinstance(made, Arguments):
        return Arguments(*on_host(made.args), **on_host(made.kwargs))
    if type(made) is tuple:  # the call's positional arguments, each a pytree
        return tuple(jax.tree_util.tree_map(host_leaf, a) for a in made)
    if isinstance(made, Mapping):  # keyword arguments, in the order given
        return {k: jax.tree_util.tree_map(host_leaf, v) for k, v in made.items()}
    return jax.tree_util.tree_map(host_leaf, made)


def host_leaf(x: Any) -> Any:
    """One pytree leaf on the host: a JAX array as a NumPy array (a typed PRNG key, which
    has none, as it is); anything else as it is."""
    jax = sys.modules.get("jax")
    if jax is None or not isinstance(x, jax.Array) or is_key(x):
        return x
    return np.array(x)


def is_key(x: Any) -> bool:
    """Whether `x` is a JAX array of a typed PRNG key dtype (`jax.random.key(0)`)."""
    jax = sys.modules.get("jax")
    dtype = getattr(x, "dtype", None)
    return bool(
        jax is not None
        and dtype is not None
        and not isinstance(dtype, np.dtype)
        and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)
    )


def _signature(fn: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def _parameter_names(fn: Callable[..., Any]) -> set[str]:
    sig = _signature(fn)
    return set() if sig is None else set(sig.parameters)


def _positional_names(fn: Callable[..., Any]) -> list[str]:
    sig = _signature(fn)
    if sig is None:
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in sig.parameters.values() if p.kind in kinds]


def sweep_label(params: Mapping[str, Any]) -> str:
    """A stable label for sweep params, e.g. ``{'n': 1000} -> 'n=1000'``."""
    return ",".join(f"{k}={v}" for k, v in params.items())


def _default_description(fn: Callable[..., Any]) -> str:
    doc = inspect.getdoc(fn) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def _source_of(fn: Callable[..., Any]) -> str:
    try:
        fn = inspect.unwrap(fn)  # a jitted function's source is that of what it wraps
        return f"{inspect.getsourcefile(fn)}:{inspect.getsourcelines(fn)[1]}"
    except (OSError, TypeError, ValueError):
        return ""


class _XpForm:
    """`workload`'s default `numpy=`: both sides from one function of `xp` when its first
    parameter is named `xp`, else a JAX-only workload."""

    def __repr__(self) -> str:
        return "XP_FORM"


XP_FORM: Any = _XpForm()


def takes_xp(fn: Callable[..., Any]) -> bool:
    """Whether `fn` takes the array namespace first (`f(xp, ...)`), serving both sides."""
    sig = _signature(fn)
    first = next(iter(sig.parameters), None) if sig is not None else None
    return first == "xp"


def no_numpy_side(*args: Any, **kwargs: Any) -> Any:
    """The NumPy side of a JAX-only workload: there is none (`errors.NoNumpySide`)."""
    raise NoNumpySide("no NumPy side was given")


def workload(
    fn: Callable[..., Any] | None = None,
    *,
    inputs: Callable[..., Any],
    sizes: Mapping[str, Mapping[str, Any]],
    sweep: Sequence[Mapping[str, Any]] = (),
    numpy: Callable[..., Any] | None = XP_FORM,
    static_argnames: str | Sequence[str] = (),
    static_argnums: int | Sequence[int] = (),
    donate_argnums: int | Sequence[int] = (),
    rtol: Tolerance = None,
    atol: Tolerance = None,
    norm_tol: Tolerance = None,
    setup: Callable[..., Any] | None = None,
    outputs: str | int | Sequence[str | int] = (),
    dtype: Any = None,
    input_dtypes: Mapping[str | int, Any] | None = None,
    eager: str = "auto",
    shard: Sequence[ShardAxis] | Mapping[int | str, ShardAxis] | None = None,
    tags: Sequence[str] = (),
    description: str | None = None,
    name: str | None = None,
    origin: str | None = None,
    float_width: str | None = None,
) -> Any:
    """Define a workload from a function.

    A function whose first parameter is `xp` takes the array namespace first and serves
    both sides; with `numpy=`, `f` is the JAX side and `numpy` the NumPy side; any other
    function (or `numpy=None`) is JAX-only: measured eager and jit, jit checked against
    eager and compared with it. A JAX side already jitted is called as it is under jit
    and under `jax.disable_jit()` in eager. Each argument in full: docs/reference/settings.md.

    Args:
        inputs: `inputs(rng, *, dtype, **params)` makes a call's arguments (a tuple, a
            dict, one array or `Arguments`; JAX arrays are copied to the host).
        sizes: size presets mapped to the parameters of `inputs` (`{"S": {"n": 1000}}`).
        sweep: parameters of `inputs` for `run --setting sweep=true`, smallest first.
        static_argnames: static argument names, as in `jax.jit`.
        static_argnums: static argument positions, as in `jax.jit`.
        donate_argnums: donated arguments, as in `jax.jit` (a jitted side's own are read
            from it): each JAX call gets fresh device copies, made untimed.
        rtol: relative tolerance, one number or per dtype name (dtype-aware default).
        atol: absolute tolerance, likewise.
        norm_tol: relative norm error an output may have when it fails elementwise.
        setup: untimed before every NumPy call: returns that call's arguments.
        outputs: the arguments the NumPy side writes into (its output when it returns None).
        dtype: a dtype the workload always runs in instead of the run's float dtype.
        input_dtypes: inputs (names or positions) pinned to their own dtype.
        eager: "auto" (default), "call" or "nojit" (`EAGER_CHOICES`).
        shard: how sharded mode splits each input (an axis, or None to replicate).
        tags: labels `jitbench list` shows and `-k` matches.
        description: one line `jitbench list` shows.
        name: the workload's name (default: the function's).
        origin: for suites that are not Python files (the NPBench adapter).
        float_width: "float64" where the workload's suite computes in float64.

    Returns:
        A `Workload` (or a decorator producing one when called with options only).

    Raises:
        WorkloadError: something not a function, an invalid name, empty or malformed sizes
            or sweep, a static name or position the function lacks, an unknown output,
            eager choice, dtype or tolerance.
    """

    def build(f: Callable[..., Any]) -> Workload:
        if not callable(f):
            called = f" {name!r}" if isinstance(name, str) and name else ""
            raise WorkloadError(
                f"workload{called}: {short_repr(f)} is not a function; pass the JAX side (or one "
                "function of xp for both sides): workload(f, inputs=..., sizes=...) or "
                "@workload(inputs=..., sizes=...) above `def f`."
            )
        wl_name: str = name or str(getattr(f, "__name__", ""))
        if not (isinstance(wl_name, str) and _NAME_RE.fullmatch(wl_name)):
            raise WorkloadError(
                f"invalid workload name {wl_name!r}: use ASCII letters, digits, '_', '-' and "
                "'.', starting with a letter or '_'."
            )
        if not isinstance(sizes, Mapping) or not sizes:
            raise WorkloadError(
                f"workload {wl_name!r} needs at least one size preset, as a dict such as "
                f"{{'S': {{'n': 1000}}}}, got {short_repr(sizes)}."
            )
        for label, params in sizes.items():
            if not _is_params(params):
                raise WorkloadError(
                    f"workload {wl_name!r}: sizes[{label!r}] is {short_repr(params)}; map each "
                    "size preset to the keyword arguments of its inputs, "
                    "e.g. sizes={'S': {'n': 1000}}."
                )
        if (
            isinstance(sweep, (str, Mapping))
            or not isinstance(sweep, Sequence)
            or not all(_is_params(p) for p in sweep)
        ):
            raise WorkloadError(
                f"workload {wl_name!r}: sweep takes a list of the keyword arguments of its "
                f"inputs, smallest first, e.g. sweep=[{{'n': 100}}, {{'n': 1000}}], got "
                f"{short_repr(sweep)}."
            )
        if isinstance(tags, str):
            raise WorkloadError(f"workload {wl_name!r}: tags is a tuple of names, got {tags!r}.")
        if not callable(inputs):
            raise WorkloadError(f"inputs of workload {wl_name!r} is not callable.")
        if numpy is not None and numpy is not XP_FORM and not callable(numpy):
            raise WorkloadError(f"numpy of workload {wl_name!r} is not callable.")
        if setup is not None and not callable(setup):
            raise WorkloadError(f"setup of workload {wl_name!r} is not callable.")
        jax_fn: Callable[..., Any]
        numpy_fn: Callable[..., Any]
        if numpy is XP_FORM and takes_xp(f):
            import jax.numpy as jnp

            jax_fn, numpy_fn = partial(f, jnp), partial(f, np)
        elif numpy is XP_FORM or numpy is None:
            jax_fn, numpy_fn = f, no_numpy_side
        else:
            jax_fn, numpy_fn = f, numpy
        fn_name = getattr(f, "__name__", repr(f))
        # As jax.jit takes them: one int or name alone, or several.
        static_nums = _one_or_many(static_argnums, int, "static_argnums", wl_name)
        static_names = _one_or_many(static_argnames, str, "static_argnames", wl_name)
        output_list = _one_or_many(outputs, (str, int), "outputs", wl_name)
        donated = _one_or_many(donate_argnums, int, "donate_argnums", wl_name)
        if is_jitted(jax_fn):  # what its own jax.jit declares static is static here too
            own_nums, own_names = jit_statics(jax_fn)
            static_nums = tuple(sorted(set(static_nums) | set(own_nums)))
            static_names = tuple(dict.fromkeys([*static_names, *own_names]))
            donated = (*donated, *jit_donated(jax_fn))
        sig = _signature(jax_fn)
        params = sig.parameters if sig is not None else {}
        accepts_var_kw = sig is None or any(p.kind is p.VAR_KEYWORD for p in params.values())
        for s in static_names:
            if s not in params and not accepts_var_kw:
                raise WorkloadError(
                    f"workload {wl_name!r}: static_argnames names {s!r}, "
                    f"which is not a parameter of {fn_name}."
                )
        accepts_var_pos = sig is None or any(p.kind is p.VAR_POSITIONAL for p in params.values())
        positional = _positional_names(jax_fn)
        for i in static_nums:
            if not accepts_var_pos and not -len(positional) <= i < len(positional):
                raise WorkloadError(
                    f"workload {wl_name!r}: static_argnums names position {i}, but {fn_name} "
                    f"takes {len(positional)} positional argument(s)."
                )
        np_sig = _signature(numpy_fn)
        np_params = set(np_sig.parameters) if np_sig is not None else set()
        for out in output_list:
            if isinstance(out, str) and np_sig is not None and out not in np_params:
                raise WorkloadError(
                    f"workload {wl_name!r}: outputs names {out!r}, which is not a parameter "
                    f"of its NumPy side ({', '.join(np_params) or 'none'})."
                )
            if not isinstance(out, (str, int)) or isinstance(out, bool):
                raise WorkloadError(
                    f"workload {wl_name!r}: outputs takes argument names or positions, got {out!r}."
                )
        if eager not in EAGER_CHOICES:
            raise WorkloadError(
                f"workload {wl_name!r}: eager={eager!r}; choose one of "
                f"{', '.join(map(repr, EAGER_CHOICES))}."
            )
        jitted = jitted_parts(f)
        eager_mode = eager if eager != "auto" else ("nojit" if jitted else "call")
        return Workload(
            name=wl_name,
            jax_fn=jax_fn,
            numpy_fn=numpy_fn,
            inputs=inputs,
            sizes={check_label("size", k, workload=wl_name): dict(v) for k, v in sizes.items()},
            sweep=tuple(dict(p) for p in sweep),
            static_argnames=static_names,
            static_argnums=static_nums,
            donate_argnums=tuple(sorted(set(donated))),
            rtol=_tolerance(rtol, "rtol", wl_name),
            atol=_tolerance(atol, "atol", wl_name),
            norm_tol=_tolerance(norm_tol, "norm_tol", wl_name),
            setup=setup,
            outputs=output_list,
            dtype=dtype_name(dtype, wl_name, "dtype") if dtype is not None else None,
            input_dtypes={
                k: dtype_name(v, wl_name, f"input_dtypes[{k!r}]")
                for k, v in (input_dtypes or {}).items()
            },
            eager=eager_mode,
            eager_reason="; ".join(jitted) if eager_mode == "nojit" else "",
            shard=_shard_axes(shard, wl_name),
            tags=tuple(check_label("tag", t, workload=wl_name) for t in tags),
            description=description if description is not None else _default_description(f),
            source=_source_of(f),
            origin=origin,
            float_width=_float_width(float_width, wl_name),
        )

    return build(fn) if fn is not None else build


def _float_width(value: object, name: str) -> str | None:
    if value is None or value in ("float32", "float64"):
        return value  # type: ignore[return-value]
    raise WorkloadError(
        f"workload {name!r}: float_width is 'float32' or 'float64' (the float dtype its suite "
        f"computes in), got {short_repr(value)}."
    )


def _is_params(value: object) -> bool:
    """Whether `value` is keyword arguments of an input function: a dict of names."""
    return isinstance(value, Mapping) and all(isinstance(k, str) for k in value)


def _one_or_many(value: object, kind: Any, what: str, wl_name: str) -> tuple[Any, ...]:
    """One value of `kind` (`static_argnums=0`, `static_argnames="steps"`, as `jax.jit`
    takes them) or a sequence of them, as a tuple; WorkloadError for anything else."""
    names = {int: "positions (ints)", str: "names (str)"}.get(kind, "names or positions")
    items = (value,) if isinstance(value, kind) else value
    if isinstance(items, str) or not isinstance(items, Sequence):
        raise WorkloadError(
            f"workload {wl_name!r}: {what} takes one or several {names}, got {short_repr(value)}."
        )
    for item in items:
        if not isinstance(item, kind) or isinstance(item, bool):
            raise WorkloadError(
                f"workload {wl_name!r}: {what} takes {names}, got {short_repr(item)}."
            )
    return tuple(items)


def _tolerance(value: Tolerance, what: str, wl_name: str) -> Tolerance:
    """A tolerance checked: a non-negative number, or dtype names mapped to such numbers."""
    if value is None:
        return None
    items = value.items() if isinstance(value, Mapping) else [(None, value)]
    checked: dict[str, float] = {}
    for key, number in items:
        ok = isinstance(number, (int, float)) and not isinstance(number, bool)
        if not ok or not math.isfinite(number) or number < 0:
            raise WorkloadError(
                f"workload {wl_name!r}: {what} must be a non-negative number, got {number!r}."
            )
        if key is not None:
            checked[dtype_name(key, wl_name, f"{what} key")] = float(number)
    return checked if isinstance(value, Mapping) else float(value)  # type: ignore[arg-type]


def _shard_axes(
    value: Sequence[ShardAxis] | Mapping[int | str, ShardAxis] | None, wl_name: str
) -> dict[int | str, ShardAxis]:
    """`shard=` as inputs (positions or names) mapped to an axis or None, checked."""
    if value is None:
        return {}
    if isinstance(value, str) or not isinstance(value, (Sequence, Mapping)):
        raise WorkloadError(
            f"workload {wl_name!r}: shard takes one axis (or None) per positional input, such "
            f"as (0, None), or inputs mapped to one, such as {{'w': None}}; got {value!r}."
        )
    items = value.items() if isinstance(value, Mapping) else enumerate(value)
    checked: dict[int | str, ShardAxis] = {}
    for key, axis in items:
        if isinstance(key, bool) or not isinstance(key, (int, str)):
            raise WorkloadError(
                f"workload {wl_name!r}: shard names inputs by position or name, got {key!r}."
            )
        if axis is not None and (isinstance(axis, bool) or not isinstance(axis, int)):
            raise WorkloadError(
                f"workload {wl_name!r}: shard[{key!r}] is an axis (an int such as 0 or -1) or "
                f"None to replicate the input, got {axis!r}."
            )
        checked[key] = axis
    return checked
