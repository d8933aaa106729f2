"""Capture what a measurement ran on: host, CPU, versions, devices, flags, threads and git
state; and the thread settings `jitbench env` shows."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from dataclasses import replace
from importlib import metadata
from pathlib import Path
from typing import Any

from jitbench.measure.machine import MachineState
from jitbench.measure.threads import ThreadState, allowed_cores, blas_pools, current_state
from jitbench.results import Run

# Variables that change what is measured: the backends' and thread pools' settings, and
# glibc malloc's (`ab.duet.FIXED_ALLOCATOR`).
_ENV_PREFIXES = (
    "JAX_",
    "XLA_",
    "TF_CPP_",
    "CUDA_",
    "OMP_",
    "MKL_",
    "OPENBLAS_",
    "NPROC",
    "MALLOC_",
)

# What JAX raises when it cannot start a backend: RuntimeError for a platform that fails to
# initialise, AssertionError (JAX 0.10: `assert _default_backend is not None`) when
# JAX_PLATFORMS names only platforms it skips, as cuda without a visible NVIDIA GPU.
BACKEND_START_ERRORS: tuple[type[Exception], ...] = (RuntimeError, AssertionError)


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


# Environment variables that size a thread pool of NumPy's BLAS, OpenMP or XLA.
THREAD_ENV_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "TF_NUM_INTRAOP_THREADS",
    "TF_NUM_INTEROP_THREADS",
    "NPROC",
)
# XLA_FLAGS that change how many threads XLA's CPU backend uses.
XLA_THREAD_FLAGS = (
    "--xla_cpu_multi_thread_eigen",
    "--xla_force_host_platform_device_count",
    "intra_op_parallelism_threads",
    "inter_op_parallelism_threads",
)


def thread_settings() -> dict[str, Any]:
    """What sizes the thread pools now: allowed cores, BLAS/OpenMP pools (threadpoolctl),
    thread-related XLA flags and environment variables (JSON-ready; for `jitbench env`)."""
    flags = os.environ.get("XLA_FLAGS", "").split()
    return {
        "allowed_cores": list(allowed_cores()),
        "blas": [dict(b) for b in blas_pools()],
        "xla_thread_flags": [f for f in flags if any(name in f for name in XLA_THREAD_FLAGS)],
        "env": {k: os.environ[k] for k in THREAD_ENV_VARS if k in os.environ},
    }


def capture(
    *,
    cwd: str | os.PathLike[str] = ".",
    threads: ThreadState | None = None,
    machine_before: MachineState | None = None,
) -> dict[str, Any]:
    """Describe the machine and software a run measures on (JSON-ready).

    Args:
        threads: what the run measures with (`limited_threads`); default the current state.
        machine_before: the machine's state before the run, stored as "machine_before".
    """

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
        "backend": _default_backend(),
        "devices": devices,
        "process": process_record(),
        "x64": bool(jax_flag("jax_enable_x64")),
        # float32 matmuls and convolutions: JAX's default is TensorFloat-32 on recent NVIDIA
        # GPUs (and bfloat16 passes on TPU), which changes both speed and the outputs.
        "matmul_precision": str(jax_flag("jax_default_matmul_precision") or "default"),
        "env": {k: v for k, v in sorted(os.environ.items()) if k.startswith(_ENV_PREFIXES)},
        "git": _git_state(Path(cwd)),
        "threads": (threads or current_state()).to_dict(),
        **({"machine_before": machine_before.to_dict()} if machine_before is not None else {}),
    }


def _default_backend() -> str | None:
    """JAX's default backend, or None when it cannot start one (`jitbench env` still works)."""
    import jax

    try:
        return str(jax.default_backend())
    except BACKEND_START_ERRORS:
        return None


def with_machine_after(run: Run, state: MachineState) -> Run:
    """`run` with the machine's state after it stored as environment["machine_after"]."""
    return replace(run, environment={**run.environment, "machine_after": state.to_dict()})


def jax_flag(name: str) -> Any:
    """The current value of a JAX config flag (`jax.config` has no typed attributes)."""
    import jax

    return getattr(jax.config, name)


def all_devices() -> list[Any]:
    """Every device of every platform JAX can initialise (CPU first) that this process
    drives: under `jax.distributed`, its own devices, not the other processes'."""
    import jax

    found: list[Any] = []
    for platform_name in ("cpu", "gpu", "tpu"):
        try:
            found.extend(jax.local_devices(backend=platform_name))
        except BACKEND_START_ERRORS:
            continue
    return found


def process_record() -> dict[str, int]:
    """This process's place in a multi-process JAX program (`jax.distributed`): its index
    and the process count ({"index": 0, "count": 1} when run alone)."""
    import jax

    try:
        return {"index": int(jax.process_index()), "count": int(jax.process_count())}
    except BACKEND_START_ERRORS:  # no backend: a lone process
        return {"index": 0, "count": 1}
