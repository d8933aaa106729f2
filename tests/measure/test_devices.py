"""Devices when JAX cannot start a backend: a one-line ConfigError, never an internal error."""

from __future__ import annotations

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
def test_a_backend_start_assertion_is_the_cannot_start_error() -> None:
    assert environment.all_devices() == []
    with pytest.raises(ConfigError) as raised:
        devices.resolve_devices([])
    message = str(raised.value)
    assert message.startswith("JAX cannot start any backend (JAX_PLATFORMS='cuda'): JAX found")
    assert "\n" not in message and "AssertionError" not in message
    assert raised.value.exit_code == 2


@pytest.mark.usefixtures("cuda_without_gpu")
def test_env_records_no_backend_when_jax_asserts() -> None:
    assert environment._default_backend() is None
    assert environment.process_record() == {"index": 0, "count": 1}
