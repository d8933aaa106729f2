"""Devices when JAX cannot start a backend (a one-line ConfigError, never an internal error),
and a GPU shared by a run's processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jax
import pytest

from jitbench.errors import ConfigError
from jitbench.measure import devices, environment


def _jax_asserts(*args: object, **kwargs: object) -> None:
    # JAX 0.10 with JAX_PLATFORMS=cuda and no NVIDIA GPU: `assert _default_backend is not None`.
    raise AssertionError


@pytest.fixture
def cuda_without_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAX_PLATFORMS", "cuda")
    for name in ("local_devices", "devices", "default_backend", "process_index"):
        monkeypatch.setattr(jax, name, _jax_asserts)


@pytest.mark.usefixtures("cuda_without_gpu")
def test_a_backend_start_assertion_is_the_cannot_start_error(monkeypatch) -> None:
    monkeypatch.setattr(devices, "_platforms_without_jax_platforms", lambda: ["cpu"])
    assert environment.all_devices() == []
    with pytest.raises(ConfigError) as raised:
        devices.resolve_devices([])
    message = str(raised.value)
    assert message == (
        "JAX cannot start any backend (JAX_PLATFORMS='cuda'): it asks for cuda, and JAX "
        "cannot start cuda here; this machine has cpu: set JAX_PLATFORMS=cpu, or unset "
        "JAX_PLATFORMS."
    )
    assert raised.value.exit_code == 2


@pytest.mark.usefixtures("cuda_without_gpu")
def test_of_several_platforms_the_one_missing_is_named(monkeypatch) -> None:
    """JAX_PLATFORMS=cpu,gpu on a machine with a CPU: the GPU is what is missing."""
    monkeypatch.setenv("JAX_PLATFORMS", "cpu,gpu")
    monkeypatch.setattr(devices, "_platforms_without_jax_platforms", lambda: ["cpu"])
    message = devices._no_backend_message()
    assert "it asks for cpu, gpu, and JAX cannot start gpu here" in message
    assert "this machine has cpu: set JAX_PLATFORMS=cpu" in message
    assert "CPU, GPU or TPU" not in message


def test_xla_flags_already_checked_are_not_probed_again(monkeypatch) -> None:
    """A run's other processes inherit the mark and start no probe (none could run here:
    the probe's Python is made one that does not exist)."""
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=abc")
    monkeypatch.setenv(devices._XLA_FLAGS_CHECKED, "--xla_force_host_platform_device_count=abc")
    monkeypatch.setattr(devices, "_backends_started", lambda: False)
    monkeypatch.setattr("sys.executable", "/nonexistent/python")
    devices.check_xla_flags()  # no probe, no error


@pytest.mark.usefixtures("cuda_without_gpu")
def test_env_records_no_backend_when_jax_asserts() -> None:
    assert environment._default_backend() is None
    assert environment.process_record() == {"index": 0, "count": 1}


@pytest.mark.parametrize(
    ("spec", "fix"), [("gpu", '"jax[cuda12]"'), ("cuda", '"jax[cuda12]"'), ("tpu:3", '"jax[tpu]"')]
)
def test_a_platform_this_jax_lacks_says_what_to_install(
    spec: str, fix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--devices gpu` on a CPU-only JAX is not a typo to correct to 'cpu': the error says
    JAX sees no GPU, which devices it does see, and the build to install."""
    monkeypatch.delenv("JAX_PLATFORMS", raising=False)  # the tests' backend is CPU only
    with pytest.raises(ConfigError) as caught:
        devices.resolve_devices([spec])
    message = str(caught.value)
    platform = "TPU" if spec.startswith("tpu") else "GPU"
    assert message.startswith(f"unknown device {spec!r}: JAX sees no {platform} here, only cpu:0")
    assert fix in message and "did you mean" not in message


def test_jax_platforms_hiding_a_platform_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    with pytest.raises(ConfigError, match="JAX_PLATFORMS='cpu' hides the others: unset it"):
        devices.resolve_devices(["gpu:1"])


def test_a_typo_of_a_platform_jax_has_is_still_corrected() -> None:
    with pytest.raises(ConfigError, match=r"unknown device 'cpu:5'; did you mean 'cpu:0'"):
        devices.resolve_devices(["cpu:5"])


@pytest.fixture
def gpu_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """None of the allocator's variables set (they are taken away again at the end), and
    JAX's backends not started: the state of a run's first process before JAX starts
    (the tests' own process has started them; the fresh-process test below is the real
    one)."""
    for name in devices.GPU_ALLOCATOR_VARS:
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    monkeypatch.setattr(devices, "_backends_started", lambda: False)
    return monkeypatch


def _fraction(*args: object) -> str:
    """XLA_PYTHON_CLIENT_MEM_FRACTION after `share_gpu_memory(*args)` ('-' where unset)."""
    devices.share_gpu_memory(*args)  # type: ignore[arg-type]
    return os.environ.get("XLA_PYTHON_CLIENT_MEM_FRACTION", "-")


def test_processes_alive_at_once_share_a_gpu_in_equal_parts(gpu_env: pytest.MonkeyPatch) -> None:
    assert _fraction(2, ("gpu",)) == "0.375"
    gpu_env.delenv("XLA_PYTHON_CLIENT_MEM_FRACTION")
    assert _fraction(3, ("cpu", "cuda:0")) == "0.25"
    gpu_env.delenv("XLA_PYTHON_CLIENT_MEM_FRACTION")
    # One process, CPU devices only, or the user's own choice: left alone.
    assert _fraction(1, ("gpu",)) == "-"
    assert _fraction(2, ("cpu", "cpu:1")) == "-"
    gpu_env.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    assert _fraction(2, ("gpu",)) == "-"


def test_by_default_a_gpu_plugin_of_jax_means_a_gpu_may_be_used(
    gpu_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # An empty package named as JAX's CUDA plugin: found on the path, never imported.
    (tmp_path / "jax_cuda12_plugin").mkdir()
    (tmp_path / "jax_cuda12_plugin" / "__init__.py").write_text("")
    gpu_env.syspath_prepend(str(tmp_path))
    assert _fraction(2, ("cpu",)) == "-"
    assert _fraction(2) == "0.375"


def _fraction_in_fresh_process(env: dict[str, str], call: str) -> str:
    """XLA_PYTHON_CLIENT_MEM_FRACTION after `call` in a fresh interpreter (JAX not started)."""
    script = (
        "import os\n"
        "from jitbench.measure.devices import share_gpu_memory\n"
        f"{call}\n"
        "print(os.environ.get('XLA_PYTHON_CLIENT_MEM_FRACTION', '-'))\n"
    )
    clean = {k: v for k, v in os.environ.items() if k not in devices.GPU_ALLOCATOR_VARS}
    out = subprocess.run(
        [sys.executable, "-c", script],
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return out.stdout.strip()


@pytest.mark.e2e
def test_a_fresh_process_with_a_gpu_plugin_takes_its_equal_part(tmp_path: Path) -> None:
    """The real state the in-process tests stand in for: JAX not started, a plugin found
    on PYTHONPATH."""
    (tmp_path / "jax_cuda12_plugin").mkdir()
    (tmp_path / "jax_cuda12_plugin" / "__init__.py").write_text("")
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    assert _fraction_in_fresh_process(env, "share_gpu_memory(2)") == "0.375"
    assert _fraction_in_fresh_process({}, "share_gpu_memory(2, ('cpu',))") == "-"


def test_a_started_backend_keeps_its_share_and_the_workers_allocate_as_they_go(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in devices.GPU_ALLOCATOR_VARS:
        monkeypatch.setenv(name, "")  # so that the test's end takes them away again
        monkeypatch.delenv(name)
    jax.devices()  # started in this process: its allocation can no longer change
    assert devices.share_gpu_memory(2, ("gpu",)) == "XLA_PYTHON_CLIENT_PREALLOCATE=false"
    assert "XLA_PYTHON_CLIENT_MEM_FRACTION" not in os.environ
