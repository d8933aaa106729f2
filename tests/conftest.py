"""Shared fixtures. JAX is pinned to the CPU so tests behave the same on every machine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def repo() -> Path:
    return REPO


def run_cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run `python -m jitbench ARGS` as a real subprocess (the checkout's code, not an install)."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "jitbench", *args],
        cwd=cwd or REPO,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def cli():
    return run_cli


TINY_SUITE = '''
from jitbench import workload

def vec(rng, *, dtype, n):
    return (rng.standard_normal(n).astype(dtype),)

@workload(inputs=vec, sizes={"S": {"n": 64}, "M": {"n": 256}}, tags=("tiny",))
def double(xp, x):
    """Double every element."""
    return 2 * x

@workload(inputs=vec, sizes={"S": {"n": 64}}, tags=("tiny", "broken"))
def wrong_in_jit(xp, x):
    """Right in NumPy, wrong in JAX: adds one on the JAX side only."""
    return x + (0 if xp.__name__ == "numpy" else 1)

@workload(inputs=vec, sizes={"S": {"n": 64}}, tags=("tiny", "broken"))
def value_branch(xp, x):
    """Python `if` on a traced value: fine in NumPy and eager, an error under jit."""
    if x.sum() > 0:
        return x
    return -x
'''


@pytest.fixture
def tiny_suite(tmp_path: Path) -> Path:
    path = tmp_path / "tiny_suite.py"
    path.write_text(TINY_SUITE)
    return path
