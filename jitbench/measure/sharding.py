"""Sharded mode's placement: a one-axis mesh over every device of a platform, which axis of
each input is split across it, and staging the inputs there.

An input is split along the axis the workload declares (`@workload(shard=...)`), else along
its leading axis; where that axis does not divide by the device count, or the workload says
None, the input is replicated (a whole copy on every device). The program is jit mode's
`jax.jit`; the shardings of its inputs propagate through it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jitbench.errors import WorkloadError
from jitbench.measure.modes import Staged, nbytes_of, stage_with, staged_values
from jitbench.measure.timer import Agree, decide_alone
from jitbench.results import ShardingInfo
from jitbench.suite.workload import Inputs, Workload

#: The mesh's one axis: every device of the platform in a row.
MESH_AXIS = "devices"


@dataclass(frozen=True)
class Placement:
    """How one staged argument is placed: split along `axis` (None: replicated) and, when
    a split was wanted but its axis does not divide by the device count, why not."""

    name: str
    axis: int | None
    why_replicated: str = ""


def platform_devices(platform: str) -> list[jax.Device]:
    """Every device of `platform` (with `jax.distributed`, those of every process)."""
    return list(jax.devices(platform))


def agreement() -> Agree:
    """`decide_alone` in a one-process program; under `jax.distributed`, process 0's value
    broadcast to every process (a collective: every process must ask, in the same order).
    Each process calibrates and samples on its own clock; without this, two processes
    could call a sharded program a different number of times, and one whose program
    communicates across processes would wait for its peers' missing calls for ever."""
    if jax.process_count() == 1:
        return decide_alone
    from jax.experimental import multihost_utils

    def process_zeros(value: int) -> int:
        # Asked between calls, possibly inside a mode's transfer guard: the broadcast's own
        # copies are jitbench's, not the workload's.
        with jax.transfer_guard("allow"):
            return int(multihost_utils.broadcast_one_to_all(np.int32(value)))

    return process_zeros


def one_device_reason(platform: str) -> str:
    """Why sharded mode is skipped on a platform with a single device, and the fix."""
    fix = (
        "set XLA_FLAGS=--xla_force_host_platform_device_count=N (N ≥ 2) before JAX starts "
        "to split the CPU into N devices"
        if platform == "cpu"
        else "run where JAX sees several, or across hosts with --distributed"
    )
    return f"sharded mode needs 2 or more {platform} devices and JAX sees 1; {fix}."


def mesh_of(devices: Sequence[jax.Device]) -> Mesh:
    """A one-axis mesh (`MESH_AXIS`) over `devices`, in their order."""
    return Mesh(np.array(list(devices), dtype=object), (MESH_AXIS,))


def _leaf_shapes(tree: Any) -> list[tuple[int, ...]]:
    return [tuple(np.shape(leaf)) for leaf in jax.tree_util.tree_leaves(tree)]


def place_inputs(wl: Workload, host: Inputs, device_count: int) -> list[Placement]:
    """Where each staged argument of `host` goes on a mesh of `device_count` devices:
    positional arrays first (by parameter name), then keyword arrays.

    An axis applies to every array leaf of an argument; a leaf whose axis does not divide by
    the device count replicates its whole argument. Arguments with no array of one
    dimension or more (scalars) are replicated silently.

    Raises:
        WorkloadError: `shard=` names an input the call does not have, a static one, or an
            axis the input lacks (a scalar has none).
    """
    static = set(host.static_argnums)
    names = wl.argument_names(len(host.args))
    staged: list[tuple[int | None, str, Any]] = [
        (i, names[i], a) for i, a in enumerate(host.args) if i not in static
    ]
    staged += [(None, k, v) for k, v in host.kwargs.items()]
    declared = _declared(wl, host, names)
    placements = []
    for position, name, value in staged:
        shapes = [s for s in _leaf_shapes(value) if s]
        key = position if position is not None else name
        if key in declared or name in declared:
            axis = declared[key] if key in declared else declared[name]
            if axis is None:
                placements.append(Placement(name, None))
                continue
            placements.append(_split(wl, name, shapes, axis, device_count, declared=True))
        elif not shapes:
            placements.append(Placement(name, None))
        else:
            placements.append(_split(wl, name, shapes, 0, device_count, declared=False))
    return placements


def _declared(wl: Workload, host: Inputs, names: list[str]) -> dict[int | str, int | None]:
    """`wl.shard` with positions made non-negative, checked against the call's inputs.

    Raises:
        WorkloadError: an entry names an input the call does not have, a static one, or
            one another entry names too (by position and by name, or by two positions).
    """
    count = len(host.args)
    static = set(host.static_argnums)
    known = [*names, *host.kwargs]
    out: dict[int | str, int | None] = {}
    named_by: dict[str, int | str] = {}  # input name -> the key that names it
    for key, axis in wl.shard.items():
        where: int | str = key
        if isinstance(key, int):
            if not -count <= key < count:
                raise WorkloadError(
                    f"workload {wl.name!r}: shard names position {key}, but its inputs made "
                    f"{count} positional argument(s)."
                )
            where = key % count
        elif key not in known:
            raise WorkloadError(
                f"workload {wl.name!r}: shard names {key!r}, which is not one of its inputs "
                f"({', '.join(known) or 'none'})."
            )
        position = where if isinstance(where, int) else names.index(where) if where in names else -1
        if position in static:
            raise WorkloadError(
                f"workload {wl.name!r}: shard names {key!r}, a static argument, which is not "
                "staged to any device; leave it out of shard=."
            )
        name = names[position] if position >= 0 else str(where)
        if name in named_by:
            raise WorkloadError(
                f"workload {wl.name!r}: shard names input {name!r} twice, by "
                f"{_key_text(named_by[name])} and by {_key_text(key)}; keep one of them."
            )
        named_by[name] = key
        out[where] = axis
    return out


def _key_text(key: int | str) -> str:
    return f"position {key}" if isinstance(key, int) else f"name {key!r}"


def _split(
    wl: Workload,
    name: str,
    shapes: list[tuple[int, ...]],
    axis: int,
    device_count: int,
    *,
    declared: bool,
) -> Placement:
    if not shapes:  # only a declaration gets here with a scalar
        raise WorkloadError(
            f"workload {wl.name!r}: shard splits axis {axis} of {name!r}, a scalar with no "
            "axis to split; leave it out, or None to replicate it."
        )
    for shape in shapes:
        if not -len(shape) <= axis < len(shape):
            raise WorkloadError(
                f"workload {wl.name!r}: shard splits axis {axis} of {name!r}, which has "
                f"{len(shape)} dimension(s) (shape {shape}); name an axis it has, or None "
                "to replicate it."
            )
    for shape in shapes:
        size = shape[axis]
        if size % device_count:
            which = f"its axis {axis}" if declared else "its leading axis"
            return Placement(
                name,
                None,
                f"{name}: {which} has {size} elements, which {device_count} devices do not "
                "divide; replicated",
            )
    return Placement(name, axis % len(shapes[0]))


def _spec(leaf: Any, axis: int | None) -> PartitionSpec:
    if axis is None or not np.shape(leaf):
        return PartitionSpec()
    return PartitionSpec(*([None] * axis), MESH_AXIS)


def _put(leaf: Any, sharding: NamedSharding) -> jax.Array:
    """`jax.device_put` of one host array; across processes (`jax.distributed`), where a
    mesh spans devices this process cannot address, each process builds its own shards
    from its copy of the (identical, seeded) host array."""
    if sharding.is_fully_addressable:
        return jax.device_put(leaf, sharding)
    host = np.asarray(leaf)
    return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])


def stage_sharded(
    wl: Workload, host: Inputs, devices: Sequence[jax.Device]
) -> tuple[Staged, ShardingInfo, list[Placement]]:
    """Place the inputs on a mesh over `devices` (`place_inputs`) and wait, timing the
    transfer on its own as `modes.stage` does (`modes.stage_with`). `transfer_bytes` counts
    what lands on the devices: a replicated input once per device. Static arguments stay
    Python values.

    Raises:
        WorkloadError: a `shard=` entry the inputs do not fit (see `place_inputs`).
    """
    mesh = mesh_of(devices)
    count = len(devices)
    placements = place_inputs(wl, host, count)
    values = staged_values(host)
    shardings = [
        jax.tree_util.tree_map(lambda leaf, p=p: NamedSharding(mesh, _spec(leaf, p.axis)), v)
        for v, p in zip(values, placements, strict=True)
    ]
    placed_bytes = sum(
        nbytes_of(v) * (1 if p.axis is not None else count)
        for v, p in zip(values, placements, strict=True)
    )

    def put(values: list[Any]) -> list[Any]:
        return [jax.tree_util.tree_map(_put, v, s) for v, s in zip(values, shardings, strict=True)]

    staged = stage_with(host, put, transfer_bytes=placed_bytes)
    info = ShardingInfo(
        device_count=count,
        mesh_shape={MESH_AXIS: count},
        split_axes={p.name: p.axis for p in placements},
    )
    return staged, info, placements
