"""Capture what a measurement ran on: host, CPU, versions, devices, flags and git state."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

_ENV_PREFIXES = ("JAX_", "XLA_", "TF_CPP_", "CUDA_", "OMP_", "MKL_", "OPENBLAS_", "NPROC")


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git_state(cwd: Path) -> dict[str, Any]:
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(
                ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=5, check=True
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip()

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return {"commit": None, "dirty": None}
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def capture(*, cwd: str | os.PathLike[str] = ".") -> dict[str, Any]:
    """Describe the machine and software a run measures on (JSON-ready)."""
    import jax

    try:
        affinity = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = None
    devices = [
        {"id": d.id, "platform": d.platform, "kind": d.device_kind, "label": f"{d.platform}:{d.id}"}
        for d in all_devices()
    ]
    return {
        "host": platform.node(),
        "os": platform.platform(),
        "machine": platform.machine(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity_count": affinity,
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "versions": {
            name: _version(name)
            for name in ("jitbench", "jax", "jaxlib", "numpy", "scipy", "ml_dtypes")
        },
        "backend": jax.default_backend(),
        "devices": devices,
        "x64": bool(jax_flag("jax_enable_x64")),
        "env": {k: v for k, v in sorted(os.environ.items()) if k.startswith(_ENV_PREFIXES)},
        "git": _git_state(Path(cwd)),
    }


def jax_flag(name: str) -> Any:
    """The current value of a JAX config flag (`jax.config` has no typed attributes)."""
    import jax

    return getattr(jax.config, name)


def all_devices() -> list[Any]:
    """Every device of every platform JAX can initialise (CPU first)."""
    import jax

    found: list[Any] = []
    for platform_name in ("cpu", "gpu", "tpu"):
        try:
            found.extend(jax.devices(platform_name))
        except RuntimeError:
            continue
    return found
