"""Devices: which ones a run uses by default, how they are named, and readying them.

The rules are written once here: a run measures the first device of every platform JAX
can initialise by default (`resolve_devices`); single-device tools (`profile`, asv) take
the first accelerator, else the CPU (`pick_device`).
"""

from __future__ import annotations

import contextlib
import os
import pkgutil
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import jax
import numpy as np

from jitbench.errors import ConfigError, short_repr, unknown_name_message
from jitbench.measure import environment

#: The share of a GPU's memory JAX preallocates in each process by default.
JAX_PREALLOCATED_SHARE = 0.75
#: The variables that choose JAX's GPU allocation: where the user set one, the runs leave
#: the allocation to them (`share_gpu_memory`).
GPU_ALLOCATOR_VARS = (
    "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "XLA_PYTHON_CLIENT_PREALLOCATE",
    "XLA_PYTHON_CLIENT_ALLOCATOR",
)


def share_gpu_memory(processes_at_once: int, specs: Sequence[str] = ()) -> str | None:
    """Give each of a run's JAX processes alive at once an equal part of JAX's usual share
    of a GPU, in this process's environment, which the workers inherit: the variable set
    ("NAME=value"), or None where nothing was.

    JAX preallocates 75 % of a GPU's memory in every process. A `--processes` worker (or an
    `--isolate` child) measures while the first process, idle, still holds its 75 %: on
    a GPU the worker got what little the first left (docs: validation, "H100 A/A runs"),
    and cuFFT could not allocate its plan's
    scratch space beside it. So each process takes 75 %/N (XLA_PYTHON_CLIENT_MEM_FRACTION)
    where JAX has not started here yet; where it has (a notebook), this process's share
    can no longer change, and the workers allocate as they go instead
    (XLA_PYTHON_CLIENT_PREALLOCATE=false) in what it left. Nothing is set for one process,
    for a run of CPU devices (`specs`, the run's --devices; by default, where no GPU plugin
    of JAX is installed), or where the user set any of `GPU_ALLOCATOR_VARS`. The run
    records the variable (`environment.env`)."""
    if processes_at_once < 2 or any(name in os.environ for name in GPU_ALLOCATOR_VARS):
        return None
    if not _may_use_gpu(specs):
        return None
    if _backends_started():
        name, value = "XLA_PYTHON_CLIENT_PREALLOCATE", "false"
    else:
        name, value = (
            "XLA_PYTHON_CLIENT_MEM_FRACTION",
            f"{JAX_PREALLOCATED_SHARE / processes_at_once:.3g}",
        )
    os.environ[name] = value
    return f"{name}={value}"


def _may_use_gpu(specs: Sequence[str]) -> bool:
    """Whether a run of devices `specs` may measure on a GPU, before JAX starts: one named,
    or by default (every platform) where a GPU plugin of JAX is installed."""
    if specs:
        return any(not spec.strip().lower().startswith("cpu") for spec in specs)
    return any(_GPU_PLUGIN.match(module.name) for module in pkgutil.iter_modules())


#: JAX's GPU plugins (jax_cuda12_plugin, jax_cuda13_plugin, jax_rocm60_plugin, …).
_GPU_PLUGIN = re.compile(r"jax_(cuda|rocm)\d*_plugin$")


def _backends_started() -> bool:
    """Whether this process's JAX backends are initialised (devices allocated)."""
    from jax._src import xla_bridge

    started = getattr(xla_bridge, "backends_are_initialized", None)
    if started is not None:
        return bool(started())
    return bool(getattr(xla_bridge, "_backends", None))


def device_label(device: jax.Device) -> str:
    return f"{device.platform}:{device.id}"


@dataclass(frozen=True)
class MemoryMark:
    """A device allocator's bytes in use and its high-water mark at one moment."""

    in_use: int
    peak: int


def memory_mark(device: jax.Device) -> MemoryMark | None:
    """The allocator's figures now (`Device.memory_stats()`); None where the device keeps
    none (JAX's CPU backend returns None; a plugin may not implement it)."""
    try:
        stats = device.memory_stats()
    except (RuntimeError, NotImplementedError):
        return None
    if not stats or "peak_bytes_in_use" not in stats:
        return None
    return MemoryMark(
        in_use=int(stats.get("bytes_in_use", 0)), peak=int(stats["peak_bytes_in_use"])
    )


def case_peak(before: MemoryMark | None, after: MemoryMark | None) -> tuple[int, bool] | None:
    """(bytes, exact): the high-water mark reached between two marks, above what was in
    use at the first. JAX cannot reset an allocator's mark, so when it did not rise the
    case stayed below an earlier high-water mark, and that mark is only an upper bound
    (exact False). None when either mark is missing."""
    if before is None or after is None:
        return None
    if after.peak > before.peak:
        return after.peak - before.in_use, True
    return max(0, before.peak - before.in_use), False


def resolve_devices(specs: Sequence[str]) -> list[jax.Device]:
    """Devices named by platform ("cpu", "gpu") or platform:id ("cpu:1").

    Default: the first device of every platform JAX can initialise.
    Raises ConfigError for an unknown platform or id, or when JAX can initialise none
    (JAX_PLATFORMS naming a platform this machine lacks).
    """
    check_xla_flags()
    available = environment.all_devices()
    if not available:
        raise ConfigError(_no_backend_message())
    if not specs:
        first: dict[str, jax.Device] = {}
        for d in available:
            first.setdefault(d.platform, d)
        return list(first.values())
    by_label = {f"{d.platform}:{d.id}": d for d in available}
    platforms = {d.platform for d in available}
    chosen: list[jax.Device] = []
    for raw in specs:
        spec = raw.strip().lower().replace("cuda", "gpu").replace("rocm", "gpu")
        if spec in by_label:
            chosen.append(by_label[spec])
        elif spec in platforms:
            chosen.append(next(d for d in available if d.platform == spec))
        elif (platform := spec.partition(":")[0]) in _PLATFORMS and platform not in platforms:
            raise ConfigError(_platform_missing_message(raw, platform, by_label))
        else:
            raise ConfigError(
                unknown_name_message("device", raw, sorted(platforms) + sorted(by_label))
            )
    return list(dict.fromkeys(chosen))


#: The platforms a JAX build may bring; a spec naming one this machine lacks is not a typo.
_PLATFORMS = ("cpu", "gpu", "tpu")


def _platform_missing_message(raw: str, platform: str, by_label: Mapping[str, object]) -> str:
    """'unknown device 'gpu': JAX sees no GPU here, only …; what to install or unset."""
    hidden = os.environ.get("JAX_PLATFORMS")
    if hidden:
        fix = f"JAX_PLATFORMS={hidden!r} hides the others: unset it"
    elif platform == "gpu":
        fix = (
            'on an NVIDIA GPU install JAX\'s CUDA build (pip install "jax[cuda12]", or '
            '"jax[cuda13]")'
        )
    else:
        fix = 'on a TPU VM install JAX\'s TPU build (pip install "jax[tpu]")'
    return (
        f"unknown device {raw!r}: JAX sees no {platform.upper()} here, only "
        f"{', '.join(sorted(by_label))}; {fix}, then check with `jitbench env`."
    )


def _no_backend_message() -> str:
    """What JAX_PLATFORMS asked for, what of it JAX cannot start, and what this machine
    has (a probe with JAX_PLATFORMS unset, in a child process: this one's JAX is set)."""
    reason = ""
    try:
        jax.devices()
    except environment.BACKEND_START_ERRORS as exc:  # JAX's AssertionError has no text
        reason = str(exc).splitlines()[0] if str(exc).strip() else ""
    asked = [p.strip() for p in os.environ.get("JAX_PLATFORMS", "").split(",") if p.strip()]
    have = _platforms_without_jax_platforms()
    have_text = ", ".join(have) if have else "none that JAX can start"
    if not asked:  # pragma: no cover - JAX picks what it can start without JAX_PLATFORMS
        return f"JAX cannot start any backend: {reason[:200] or 'no device'}."
    missing = [p for p in asked if _platform_name(p) not in have]
    # JAX's own reason only where the names alone do not say it (each exists, not together).
    why = f" ({reason[:100].rstrip()})" if reason and not missing else ""
    fix = f"JAX_PLATFORMS={','.join(have)}" if have else "JAX_PLATFORMS=cpu"
    what = " or ".join(missing) if missing else ", ".join(asked) + " together"
    return (
        f"JAX cannot start any backend (JAX_PLATFORMS={short_repr(os.environ['JAX_PLATFORMS'])}"
        f"): it asks for {', '.join(asked)}, and JAX cannot start {what} here{why}; this "
        f"machine has {have_text}: set {fix}, or unset JAX_PLATFORMS."
    )


def _platform_name(name: str) -> str:
    """A JAX_PLATFORMS name as a device's platform ('cuda', 'rocm' → 'gpu')."""
    name = name.strip().lower()
    return "gpu" if name in ("cuda", "rocm") else name


def _platforms_without_jax_platforms() -> list[str]:
    """The platforms JAX starts here with JAX_PLATFORMS unset ([] when the probe fails)."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
    code = "import jax; print(' '.join(sorted({d.platform for d in jax.devices()})))"
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    words = set(proc.stdout.split())
    if proc.returncode != 0 or not words <= set(_PLATFORMS):
        return []
    return sorted(words, key=_PLATFORMS.index)


#: Set (to XLA_FLAGS's value) once the flags passed `check_xla_flags`: the processes a run
#: starts inherit it and need not check again.
_XLA_FLAGS_CHECKED = "JITBENCH_XLA_FLAGS_CHECKED"
# An absl/XLA log record's message: "E1201 20:53:14.093526    9131 file.cc:63] message".
_LOG_MESSAGE = re.compile(r"^([EF])\d{4} [^\]]*\] (.*)$")


def check_xla_flags() -> None:
    """Refuse an XLA_FLAGS that XLA cannot parse, before this process starts a backend:
    XLA aborts the process on one (a fatal log, exit 1, which CI reads as a regression).
    A child process starts the CPU backend with the flags first, only when XLA_FLAGS is
    set and not yet checked, and only once (a run's other processes inherit the mark).

    Raises:
        ConfigError: XLA refused the flags; the message quotes XLA's reason.
    """
    import subprocess
    import sys

    flags = os.environ.get("XLA_FLAGS")
    if not flags or not flags.strip() or os.environ.get(_XLA_FLAGS_CHECKED) == flags:
        return
    if _backends_started():  # it survived them: nothing left to check
        os.environ[_XLA_FLAGS_CHECKED] = flags
        return
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    code = "import jax; jax.devices('cpu')"
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
        )
    except (OSError, subprocess.TimeoutExpired):
        return  # no verdict: let the run find out
    if proc.returncode == 0:
        os.environ[_XLA_FLAGS_CHECKED] = flags
        return
    records = [m for line in proc.stderr.splitlines() if (m := _LOG_MESSAGE.match(line))]
    if not records:
        return  # it failed for another reason, which the run will report itself
    first = next((m for m in records if m.group(1) == "E"), records[0])
    why = first.group(2)[:200].rstrip(".")
    raise ConfigError(
        f"XLA_FLAGS={short_repr(flags)} is refused by XLA: {why}; fix the flag or unset "
        "XLA_FLAGS (XLA would abort the process)."
    )


def start_distributed(
    *,
    coordinator: str | None = None,
    process_count: int | None = None,
    process_id: int | None = None,
) -> None:
    """Join a multi-process JAX program (`jax.distributed.initialize`), before anything
    starts a JAX backend. Arguments left None are JAX's to find: `JAX_COORDINATOR_ADDRESS`
    and the cluster's own variables (SLURM, Open MPI, Kubernetes, Cloud TPU).

    Raises:
        ConfigError: JAX could not join (a backend already started, no coordinator found,
            a timeout), with JAX's reason.
    """
    try:
        jax.distributed.initialize(
            coordinator_address=coordinator, num_processes=process_count, process_id=process_id
        )
    except (RuntimeError, ValueError) as exc:
        why = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        raise ConfigError(
            f"--distributed: JAX could not join the multi-process run: {why}; set "
            "JAX_COORDINATOR_ADDRESS=HOST:PORT and give --process-id I/N, or launch under a "
            "cluster manager JAX detects (SLURM, Open MPI)."
        ) from None


def _trivial(v: jax.Array) -> jax.Array:
    return v * 2 + 1


#: One jitted function for every warm-up of a process: the first compiles it (and starts
#: the backend's compiler), the later ones (each `bench` call, each run in a notebook)
#: only dispatch it, where a new function each time paid a trace and compile per run.
_TRIVIAL = jax.jit(_trivial)


def warm_up_process(devices: Sequence[jax.Device]) -> None:
    """Compile and run a trivial function per device so backend start-up is not charged
    to the first workload's compile time."""
    for device in devices:
        x = jax.device_put(np.ones(8, np.float32), device)
        jax.block_until_ready(_TRIVIAL(x))
        jax.block_until_ready(x + 1)


@contextlib.contextmanager
def x64_enabled(flag: bool | None) -> Iterator[None]:
    """Set `jax_enable_x64` for the block (both sides then use float64 inputs); None (a
    `RunConfig.x64` left unset and not resolved by a run) is off."""
    before = bool(environment.jax_flag("jax_enable_x64"))
    jax.config.update("jax_enable_x64", bool(flag))
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", before)


def pick_device(spec: str | None = None) -> jax.Device:
    """The one device a single-device tool (`jitbench profile`, asv) measures on: the one
    `spec` names, else the first accelerator (where comparing modes is most telling), else
    the CPU. Set `JAX_PLATFORMS=cpu` to pin it to the CPU.

    Raises:
        ConfigError: `spec` names no device JAX can see.
    """
    found = resolve_devices([spec] if spec else [])
    return next((d for d in found if d.platform != "cpu"), found[0])
