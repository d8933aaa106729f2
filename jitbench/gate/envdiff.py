"""Environment differences between two runs: what a comparison warns about because it
can move timings (host, CPU, devices, library versions, XLA/JAX variables, the sampling
configuration), and the commit each run was measured at.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jitbench.gate.model import EnvDifference
from jitbench.results import Run


def _device_kinds(run: Run) -> str | None:
    devices = run.environment.get("devices") or []
    kinds = sorted({f"{d.get('label')}={d.get('kind')}" for d in devices})
    return ", ".join(kinds) or None


_ENV_FIELDS: tuple[tuple[str, Any], ...] = (
    ("host", lambda r: r.environment.get("host")),
    ("machine", lambda r: r.environment.get("machine")),
    ("cpu", lambda r: r.environment.get("cpu")),
    ("cpu_count", lambda r: r.environment.get("cpu_count")),
    ("cpu_affinity_count", lambda r: r.environment.get("cpu_affinity_count")),
    ("os", lambda r: r.environment.get("os")),
    ("python", lambda r: r.environment.get("python")),
    ("backend", lambda r: r.environment.get("backend")),
    ("devices", _device_kinds),
    ("x64", lambda r: r.environment.get("x64")),
    ("matmul_precision", lambda r: r.matmul_precision),
)


def environment_differences(base: Run, new: Run) -> tuple[EnvDifference, ...]:
    """Fields of the environment and the sampling configuration that differ.

    Library versions (jax, jaxlib, numpy, …), host, machine, CPU, devices, the x64 flag,
    JAX's default matmul precision,
    XLA/JAX environment variables and the sampling plan are compared; git state is not
    (a different commit is the point of a comparison).
    """
    diffs = [
        EnvDifference(name=name, base=get(base), new=get(new))
        for name, get in _ENV_FIELDS
        if get(base) != get(new)
    ]
    bv = base.environment.get("versions") or {}
    nv = new.environment.get("versions") or {}
    for name in sorted(set(bv) | set(nv)):
        if bv.get(name) != nv.get(name):
            diffs.append(EnvDifference(name=name, base=bv.get(name), new=nv.get(name)))
    be = base.environment.get("env") or {}
    ne = new.environment.get("env") or {}
    for name in sorted(set(be) | set(ne)):
        if be.get(name) != ne.get(name):
            diffs.append(EnvDifference(name=f"${name}", base=be.get(name), new=ne.get(name)))
    diffs.extend(config_differences(base.config_record(), new.config_record()))
    return tuple(diffs)


def config_differences(base: Mapping[str, Any], new: Mapping[str, Any]) -> list[EnvDifference]:
    """Settings of two runs' `Run.config` that differ, flattened ("config.plan.budget_s"),
    leaving out the keys `is_measurement_setting` rejects."""
    bc, nc = _flat(base), _flat(new)
    return [
        EnvDifference(name=f"config.{name}", base=bc.get(name), new=nc.get(name))
        for name in sorted(set(bc) | set(nc))
        if is_measurement_setting(name) and bc.get(name) != nc.get(name)
    ]


#: Top-level `Run.config` keys that say what ran (and which workloads of which suite
#: file), what the run was called (`--label`) and when it was resumed: not how it was
#: measured.
_WHAT_RAN_KEYS = frozenset(
    {"sizes", "modes", "devices", "seed", "label", "selection", "resumed_at"}
)


def is_measurement_setting(name: str) -> bool:
    """Whether a flattened `Run.config` key (e.g. "plan.budget_s") is a measurement setting
    whose difference a comparison reports. What ran (sizes, modes, devices, seed, the
    selection), when a run was resumed, and how
    runs were pooled ("pooled.*") and which side of an interleaved comparison a run was
    ("interleaved.*": the comparison's own header says) are not. The one place that knows
    `Run.config` keys by name, so a typed config can replace it."""
    return not (
        name in _WHAT_RAN_KEYS or name.startswith("pooled.") or name.startswith("interleaved.")
    )


def _flat(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def commit_label(run: Run) -> str | None:
    """The run's git commit, 12 characters and " dirty" with uncommitted changes; None
    when the run does not record one."""
    git = run.environment.get("git") or {}
    commit = git.get("commit")
    if not commit:
        return None
    return f"{str(commit)[:12]}{' dirty' if git.get('dirty') else ''}"
