"""The execution modes: stage inputs, build a synchronised call, guard the timed region.

- numpy: the NumPy side on host arrays. NumPy is synchronous, so nothing to wait for.
- eager: the JAX side called directly: JAX dispatches one small compiled program per
  primitive (op-by-op). Calls block on the output with `block_until_ready`. A workload
  whose eager choice is "nojit" is called under `jax.disable_jit()`: jitted functions it
  calls and lax loops then run op by op too (loops as Python loops).
- jit: the JAX side under `jax.jit`, called the way users call it (`jitted(*args)`); a JAX
  side that is already jitted is called as it is.
- sharded: jit's call on inputs spread over a device mesh (`measure.sharding` stages them);
  guarded and synchronised as jit is.

A NumPy side with an untimed per-call setup (`Workload.setup`, `Workload.outputs`) is
timed call by call: the setup runs between two clock reads, outside the timed region.

Timed regions run under JAX's transfer guard so a hidden host↔device copy is an error,
not a slowdown. Eager mode guards device→host only: op-by-op dispatch uploads every
Python scalar operand (`2.0 * x`) to the device, which is inherent to eager execution;
"nojit" eager is not guarded at all, since its Python loops read each loop condition back
to the host by design. On the CPU backend device memory is host memory, so JAX sees no
device→host transfer to guard; those copies are caught on GPU and TPU.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import jax
import numpy as np

from jitbench.config import Mode
from jitbench.measure.partitioned import PartitionedJit, has_python_leaves, is_staged_leaf
from jitbench.suite.jitted import is_jax_jit, is_jitted
from jitbench.suite.workload import Inputs, Workload, is_key


@dataclass(frozen=True)
class Staged:
    """Inputs placed on one JAX device, and what the transfer cost."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    static: dict[str, Any]
    transfer_s: float
    transfer_bytes: int


def nbytes_of(tree: Any) -> int:
    return int(sum(getattr(leaf, "nbytes", 0) for leaf in jax.tree_util.tree_leaves(tree)))


def nelements_of(tree: Any) -> int:
    return int(sum(getattr(leaf, "size", 0) for leaf in jax.tree_util.tree_leaves(tree)))


def staged_values(inputs: Inputs) -> list[Any]:
    """The arguments staging places on devices, in order: the positional ones that are not
    static, then the keyword ones (pytrees of arrays)."""
    static = set(inputs.static_argnums)
    return [a for i, a in enumerate(inputs.args) if i not in static] + list(inputs.kwargs.values())


def stage_with(
    inputs: Inputs,
    put: Callable[[list[Any]], list[Any]],
    *,
    transfer_bytes: int | None = None,
) -> Staged:
    """Place the inputs with `put` (`staged_values` in, their device copies out, in order)
    and wait, timing the transfer on its own. Static arguments stay the Python values they
    are. `transfer_bytes`: what lands on the devices, if not the host values' bytes."""
    values = staged_values(inputs)
    t0 = time.perf_counter()
    on_device = put(values)
    jax.block_until_ready(on_device)
    elapsed = time.perf_counter() - t0
    positional = len(values) - len(inputs.kwargs)
    placed = iter(on_device[:positional])
    static = set(inputs.static_argnums)
    args = tuple(a if i in static else next(placed) for i, a in enumerate(inputs.args))
    return Staged(
        args=args,
        kwargs=dict(zip(inputs.kwargs, on_device[positional:], strict=True)),
        static=dict(inputs.static),
        transfer_s=elapsed,
        transfer_bytes=nbytes_of(values) if transfer_bytes is None else transfer_bytes,
    )


def put_arrays(values: list[Any], device: Any) -> list[Any]:
    """`values` with their staged leaves (`is_staged_leaf`) placed on `device` by one
    `jax.device_put`, every other leaf as it is."""
    leaves, tree = jax.tree_util.tree_flatten(values)
    where = [i for i, leaf in enumerate(leaves) if is_staged_leaf(leaf)]
    if len(where) == len(leaves):
        return list(jax.device_put(values, device))
    placed = jax.device_put([leaves[i] for i in where], device)
    for i, leaf in zip(where, placed, strict=True):
        leaves[i] = leaf
    return list(jax.tree_util.tree_unflatten(tree, leaves))


def stage(inputs: Inputs, device: jax.Device) -> Staged:
    """Copy the input arrays to `device` (one `jax.device_put` of them all, `put_arrays`)
    and wait, timing the transfer on its own (`stage_with`)."""
    return stage_with(inputs, lambda values: put_arrays(values, device))


def jit_function(wl: Workload, staged: Staged | None = None) -> Callable[..., Any]:
    """`jax.jit` of the workload's JAX side with its static arguments; a JAX side that is
    already jitted (with its own static arguments) as it is, the way its users call it.
    Where the staged arguments hold leaves `jax.jit` cannot take (an equinox module's
    functions) or the side is another library's jitted callable, a `PartitionedJit`."""
    if is_jax_jit(wl.jax_fn):
        return wl.jax_fn
    if is_jitted(wl.jax_fn) or (
        staged is not None and has_python_leaves(wl, staged.args, staged.kwargs)
    ):
        return PartitionedJit(wl)
    return jax.jit(
        wl.jax_fn,
        static_argnums=wl.static_argnums or None,
        static_argnames=wl.static_argnames or None,
        donate_argnums=wl.donate_argnums or None,
    )


def _synchronised(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    nojit: bool = False,
    donated: tuple[int, ...] = (),
):
    """A zero-argument call of `fn` that returns only when its output is ready; with
    `nojit`, `fn` runs under `jax.disable_jit()` (entering it is inside the timed call);
    with `donated` positions, a `DonatingCall`."""
    if donated:
        return DonatingCall(fn, args, kwargs, donated=donated, nojit=nojit)
    block = jax.block_until_ready
    if nojit:
        disable_jit = jax.disable_jit

        def call_without_jit() -> Any:
            with disable_jit():
                out = fn(*args, **kwargs)
            return block(out)

        return call_without_jit
    if kwargs:
        return lambda: block(fn(*args, **kwargs))
    return lambda: block(fn(*args))


class DonatingCall:
    """A call of a function that donates arguments (`donate_argnums`): a donated buffer is
    deleted by the call that takes it, so every call gets fresh device copies of the
    donated arguments (one on-device copy of each array leaf, `jax.Array.copy`, waited
    for), made before the clock starts. Timed call by call (two clock reads around each,
    as `NumpyCall`), so the copies are in no figure; they cost the sampling budget one
    device copy of the donated bytes a call."""

    __slots__ = ("args", "donated", "fn", "kwargs", "nojit")

    def __init__(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        donated: tuple[int, ...],
        nojit: bool,
    ) -> None:
        self.fn, self.args, self.kwargs, self.nojit = fn, args, kwargs, nojit
        self.donated = tuple(i for i in donated if i < len(args))

    def fresh(self) -> list[Any]:
        """The arguments of one call: copies of the donated ones, ready."""
        args = list(self.args)
        copies = [jax.tree_util.tree_map(_device_copy, args[i]) for i in self.donated]
        for i, copy in zip(self.donated, jax.block_until_ready(copies), strict=True):
            args[i] = copy
        return args

    def _run(self, args: list[Any]) -> Any:
        if self.nojit:
            with jax.disable_jit():
                out = self.fn(*args, **self.kwargs)
            return jax.block_until_ready(out)
        return jax.block_until_ready(self.fn(*args, **self.kwargs))

    def __call__(self) -> Any:
        return self._run(self.fresh())

    def run_batch(self, n: int, clock: Callable[[], float]) -> float:
        total = 0.0
        for _ in repeat(None, n):
            args = self.fresh()
            t0 = clock()
            self._run(args)
            total += clock() - t0
        return total


def _device_copy(leaf: Any) -> Any:
    return leaf.copy() if isinstance(leaf, jax.Array) else leaf


class _SingleArrayCall:
    """`fn(*args).block_until_ready()`: the same work as `jax.block_until_ready` for one
    output array, without flattening a pytree on every call (~1 µs on the smallest cases).

    `run_batch` is the timed loop with the call inlined, as timeit compiles its statement
    into its loop: one Python frame less per call, about 2 % of a 9 µs jitted call.
    """

    __slots__ = ("args", "fn")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.fn, self.args = fn, args

    def __call__(self) -> Any:
        return self.fn(*self.args).block_until_ready()

    def run_batch(self, n: int, clock: Callable[[], float]) -> float:
        fn, args = self.fn, self.args
        if len(args) == 1:
            (x,) = args
            t0 = clock()
            for _ in repeat(None, n):
                fn(x).block_until_ready()
            return clock() - t0
        t0 = clock()
        for _ in repeat(None, n):
            fn(*args).block_until_ready()
        return clock() - t0


class NumpyCall:
    """The NumPy side with an untimed per-call setup (`Workload.fresh_arguments`): every
    call gets fresh arguments first, and only the call itself is timed (two clock reads
    around each call; ~0.1 µs a call, nothing next to a call that needs fresh copies).
    Called directly, it returns the output: what the side returns, or the workload's
    `outputs` arguments after the call when it returns None."""

    __slots__ = ("args", "fn", "kwargs", "wl")

    def __init__(self, wl: Workload, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.wl, self.fn, self.args, self.kwargs = wl, wl.numpy_fn, args, kwargs

    def __call__(self) -> Any:
        args, kwargs = self.wl.fresh_arguments(self.args, self.kwargs)
        returned = self.fn(*args, **kwargs)
        if returned is not None or not self.wl.outputs:
            return returned
        found = [
            args[where] if isinstance(where, int) else kwargs[where]
            for where in self.wl.output_locations(len(args), kwargs)
        ]
        return found[0] if len(found) == 1 else tuple(found)

    def run_batch(self, n: int, clock: Callable[[], float]) -> float:
        fresh, fn, args0, kwargs0 = self.wl.fresh_arguments, self.fn, self.args, self.kwargs
        total = 0.0
        for _ in repeat(None, n):
            args, kwargs = fresh(args0, kwargs0)
            t0 = clock()
            fn(*args, **kwargs)
            total += clock() - t0
        return total


def _single_array_fast_path(fn: Callable[..., Any], args: tuple[Any, ...]) -> _SingleArrayCall:
    return _SingleArrayCall(fn, args)


def build_call(
    mode: Mode,
    wl: Workload,
    *,
    host: Inputs,
    staged: Staged | None,
    jitted: Callable[..., Any] | None = None,
) -> Callable[[], Any]:
    """Return the zero-argument call that is timed for `mode`.

    For numpy it calls the NumPy side on host arrays; for eager the JAX side on staged
    arrays; for jit `jitted` (from `jit_function`) on staged arrays. JAX calls block on
    their output inside the call, so the timed region includes the device work.
    """
    if mode is Mode.NUMPY:
        kwargs = {**host.kwargs, **host.static}
        if wl.setup is not None or wl.outputs:
            return NumpyCall(wl, host.args, kwargs)
        fn_np = wl.numpy_fn
        args_np = host.args
        if kwargs:
            return lambda: fn_np(*args_np, **kwargs)
        return lambda: fn_np(*args_np)
    assert staged is not None, "JAX modes need staged inputs"
    fn = wl.jax_fn if mode is Mode.EAGER else jitted
    assert fn is not None, "jit mode needs the jitted function"
    nojit = mode is Mode.EAGER and wl.eager == "nojit"
    return _synchronised(
        fn,
        staged.args,
        {**staged.kwargs, **staged.static},
        nojit=nojit,
        donated=wl.donate_argnums,
    )


def specialise_call(
    mode: Mode,
    call: Callable[[], Any],
    output: Any,
    *,
    staged: Staged | None,
    jitted: Callable[..., Any] | None,
) -> Callable[[], Any]:
    """Swap in the single-array fast path once the output is known to be one jax.Array."""
    if (
        mode is Mode.JIT
        and not isinstance(call, DonatingCall)
        and jitted is not None
        and staged is not None
        and not staged.kwargs
        and not staged.static
        and isinstance(output, jax.Array)
    ):
        return _single_array_fast_path(jitted, staged.args)
    return call


def on_device(device: jax.Device | None) -> AbstractContextManager[object]:
    """Make `device` JAX's default while a JAX side runs, so the arrays it creates itself
    (`jnp.zeros`, `jnp.arange`, a loop counter) live where its inputs do. Without it they
    land on JAX's first device: a CPU case on a GPU machine then computed part of its
    eager work on the GPU and copied it back. None leaves the default as it is."""
    return nullcontext() if device is None else jax.default_device(device)


@contextmanager
def timed_region(
    mode: Mode, *, nojit: bool = False, device: jax.Device | None = None
) -> Iterator[None]:
    """What the timed loop of `mode` runs under: the transfer guard (none for "nojit"
    eager) and, for a JAX mode, its case's `device` as JAX's default (`on_device`)."""
    if mode in (Mode.JIT, Mode.SHARDED):
        guard: AbstractContextManager[object] = jax.transfer_guard("disallow")
    elif mode is Mode.EAGER and not nojit:
        guard = jax.transfer_guard_device_to_host("disallow")
    else:
        guard = nullcontext()
    with guard, on_device(None if mode is Mode.NUMPY else device):
        yield


def to_host(tree: Any) -> Any:
    """Copy every leaf of an output pytree to NumPy (outside any timed region). A leaf
    spread over devices of several processes (sharded mode under `jax.distributed`) is
    gathered from all of them first: every process must then call this alike.

    Leaf by leaf with `np.asarray`, as users read outputs; not `jax.device_get`, whose
    `copy_to_host_async` first would overlap several leaves' copies on a GPU but costs
    20-100 µs a leaf on the CPU backend, where the host copy is a view and copies nothing."""
    return jax.tree_util.tree_map(_host_copy, tree)


@dataclass(frozen=True)
class Fetched:
    """An output copied to the host, and what the copy cost."""

    host: Any
    transfer_s: float
    transfer_bytes: int


def fetch(output: Any) -> Fetched:
    """Copy a JAX mode's output to the host (`to_host`), timing the copy on its own.

    `output` must be ready (its call blocked on it) and not yet read: a jax.Array keeps the
    host copy of its first read, so a second read copies nothing. `transfer_bytes` counts
    the jax.Array leaves (other leaves are host values already); a sharded leaf counts
    whole, since the copy gathers it. On the CPU backend device memory is host memory and
    JAX hands back a view of the output's buffer: the copy is bookkeeping, not a memcpy.
    """
    nbytes = nbytes_of([x for x in jax.tree_util.tree_leaves(output) if isinstance(x, jax.Array)])
    t0 = time.perf_counter()
    host = to_host(output)
    elapsed = time.perf_counter() - t0
    return Fetched(host=host, transfer_s=elapsed, transfer_bytes=nbytes)


def _host_copy(leaf: Any) -> Any:
    if is_key(leaf):  # a typed PRNG key: its key data stands for it
        leaf = jax.random.key_data(leaf)
    if isinstance(leaf, jax.Array) and not leaf.is_fully_addressable:
        from jax.experimental import multihost_utils

        return np.asarray(multihost_utils.process_allgather(leaf, tiled=True))
    return np.asarray(leaf)
