"""`%load_ext jitbench`: the `%jitbench` line magic and `%%jitbench` cell magic, in a real
IPython shell."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from jitbench import BenchResult, Mode
from jitbench.interactive.magics import split_options

SETUP = """
import numpy as np
import jax.numpy as jnp

def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

def selu_np(x, alpha=1.67, lmbda=1.05):
    return lmbda * np.where(x > 0, x, alpha * np.exp(x) - alpha)

x = np.linspace(-2, 2, 2048, dtype=np.float32)
"""


@pytest.fixture(scope="module")
def shell() -> Iterator[InteractiveShell]:
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "jitbench")
    ip.run_cell(SETUP).raise_error()
    yield ip


def _modes(r: BenchResult) -> set[Mode]:
    return {m.mode for m in r.run.measurements}


def test_the_line_magic_measures_the_call_with_its_options(shell: InteractiveShell) -> None:
    r = shell.run_line_magic("jitbench", "-m numpy,jit -b 0.05 -p 1 --numpy selu_np selu(x)")
    assert isinstance(r, BenchResult) and r.name == "selu"
    assert _modes(r) == {Mode.NUMPY, Mode.JIT} and all(m.ok for m in r.run.measurements)
    assert r.run.config.settings.plan.budget_s == 0.05  # type: ignore[union-attr]
    assert r.speedup("jit") is not None


def test_assigned_in_a_cell_with_keywords_and_expressions(shell: InteractiveShell) -> None:
    cell = "r = %jitbench -b=0.05 -p1 --numpy=selu_np selu(x[:1024] * 2, alpha=1.5)"
    shell.run_cell(cell).raise_error()
    r = shell.user_ns["r"]
    assert _modes(r) == {Mode.NUMPY, Mode.EAGER, Mode.JIT}
    assert r.run.cases()[0].input_elements == 1024
    assert all(m.ok for m in r.run.measurements)  # alpha=1.5 reached both sides alike


def test_the_cell_magic_runs_its_setup_then_measures_its_last_line(
    shell: InteractiveShell,
) -> None:
    cell = (
        "def centred(x):\n"
        "    return x.T @ (x - x.mean(axis=0))\n"
        "m = np.ones((32, 32), dtype=np.float32)\n"
        "centred(m)\n"
    )
    out = shell.run_cell(f"%%jitbench -b 0.05 -p 1 --numpy centred\n{cell}")
    out.raise_error()
    r = out.result
    assert isinstance(r, BenchResult) and r.name == "centred"
    assert "centred" in shell.user_ns  # the setup ran in the user's namespace
    assert _modes(r) == {Mode.NUMPY, Mode.EAGER, Mode.JIT}
    assert "<table" in r._repr_html_()


@pytest.mark.e2e  # a real worker process receives the function
def test_a_function_defined_in_the_shell_reaches_two_worker_processes(
    shell: InteractiveShell,
) -> None:
    r = shell.run_line_magic("jitbench", "-m eager,jit -b 0.05 -p 2 selu(x)")
    assert r.notes == () and r.run.processes == 2


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("", "needs a call"),
        ("-q selu(x)", "unknown option '-q'"),
        ("-b selu(x)", "--budget takes a number"),
        ("-b", "needs a value"),
        ("-b fast selu(x)", "--budget takes a number"),
        ("x + 1", "one call such as f\\(x\\), got 'x \\+ 1'"),
        ("selu(x", "one call"),
        ("--numpy nothing_here selu(x)", "NameError"),
        ("-m numpy,warp selu(x)", "unknown mode 'warp'"),
        ("selu(x, x, x, x, x)", "do not fit selu"),
        ("-b 0.05 selu(x, budget=1)", "also a %jitbench option"),
    ],
)
def test_usage_errors_are_one_line(shell: InteractiveShell, line: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        shell.run_line_magic("jitbench", line)


def test_a_cell_whose_last_line_is_not_a_call_is_refused(shell: InteractiveShell) -> None:
    with pytest.raises(UsageError, match="last line must be the call"):
        shell.run_cell_magic("jitbench", "-p 1", "y = 1\ny + 1\n")


def test_options_split_from_the_call() -> None:
    assert split_options("-m numpy,jit -b 0.2 -p 1 --x64 f(x, -1)") == (
        {"modes": "numpy,jit", "budget": "0.2", "processes": "1", "x64": True},
        "f(x, -1)",
    )
