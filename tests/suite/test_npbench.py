"""The NPBench adapter against a tiny kernel folder in NPBench's layout, written here
(nothing of NPBench is in this repository): loading, discovery, and real runs."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import jax
import pytest

import jitbench
from jitbench import Mode, RunConfig, Status
from jitbench.errors import SuiteError
from jitbench.results.model import Selection
from jitbench.runner.events import FloatWidthChosen, KernelsLeftOut
from jitbench.suite import npbench
from jitbench.suite.discovery import discover, suite_of
from jitbench.suite.selection import workloads_for_selection
from tests.faults import invoke

KERNELS: dict[str, dict[str, object]] = {
    # A jitted JAX kernel; its NumPy side returns the result; alpha is a traced scalar.
    "axpy": {
        "info": {
            "parameters": {"S": {"N": 16}, "M": {"N": 64}, "paper": {"N": 128}},
            "init": {
                "func_name": "initialize",
                "input_args": ["N"],
                "output_args": ["alpha", "x", "y"],
            },
            "input_args": ["alpha", "x", "y"],
            "array_args": ["x", "y"],
            "output_args": [],
            "kind": "microbench",
            "domain": "LinAlg",
            "dwarf": "dense_linear_algebra",
        },
        "init": """
            def initialize(N, datatype=np.float64):
                alpha = datatype(1.5)
                x = np.fromfunction(lambda i: i / N, (N,), dtype=datatype)
                return alpha, x, x + 1
        """,
        "numpy": """
            def kernel(alpha, x, y):
                return alpha * x + y
        """,
        "jax": """
            @jax.jit
            def kernel(alpha, x, y):
                return alpha * x + y
        """,
        "jax_lib": """
            def kernel(alpha, x, y):
                return jnp.add(alpha * x, y)
        """,
    },
    # An in-place NumPy kernel returning None; the JAX side has a positional static.
    "smooth": {
        "info": {
            "parameters": {"S": {"TSTEPS": 4, "N": 10}},
            "init": {"func_name": "initialize", "input_args": ["N"], "output_args": ["A", "B"]},
            "input_args": ["TSTEPS", "A", "B"],
            "array_args": ["A", "B"],
            "output_args": ["A", "B"],
        },
        "init": """
            def initialize(N, datatype=np.float64):
                A = np.fromfunction(lambda i, j: i * (j + 2) / N, (N, N), dtype=datatype)
                return A, A.copy()
        """,
        "numpy": """
            def kernel(TSTEPS, A, B):
                for t in range(1, TSTEPS):
                    B[1:-1] = 0.5 * (A[1:-1] + A[2:])
                    A[1:-1] = 0.5 * (B[1:-1] + B[:-2])
        """,
        "jax": """
            @partial(jax.jit, static_argnums=(0,))
            def kernel(TSTEPS, A, B):
                def body(t, ab):
                    A, B = ab
                    B = B.at[1:-1].set(0.5 * (A[1:-1] + A[2:]))
                    A = A.at[1:-1].set(0.5 * (B[1:-1] + B[:-2]))
                    return A, B
                return lax.fori_loop(1, TSTEPS, body, (A, B))
        """,
    },
    # An integer kernel: its initialiser's datatype defaults to np.int32.
    "count": {
        "info": {
            "parameters": {"S": {"N": 20}},
            "init": {"func_name": "initialize", "input_args": ["N"], "output_args": ["seq"]},
            "input_args": ["seq"],
            "array_args": ["seq"],
            "output_args": [],
        },
        "init": """
            def initialize(N, datatype=np.int32):
                return np.fromfunction(lambda i: (i + 1) % 4, (N,), dtype=datatype)
        """,
        "numpy": """
            def kernel(seq):
                return np.cumsum(seq * 3) % 5
        """,
        "jax": """
            @jax.jit
            def kernel(seq):
                return jnp.cumsum(seq * 3) % 5
        """,
    },
    "nojax": {
        "info": {
            "parameters": {"S": {"N": 2}},
            "input_args": ["N"],
            "array_args": [],
            "output_args": [],
        },
        "init": "",
        "numpy": """
            def kernel(N):
                return np.ones(N)
        """,
    },
    "broken": {
        "info": {
            "parameters": {"S": {"N": 2}},
            "input_args": ["N"],
            "array_args": [],
            "output_args": [],
        },
        "init": "",
        "numpy": """
            def kernel(N):
                return np.ones(N)
        """,
        "jax": """
            jax.config.update("jax_enable_x64", True)  # as careless kernel files may
            raise ImportError("no module named 'dace'")
        """,
    },
}

HEADER = """\
import numpy as np
import jax
import jax.numpy as jnp
from functools import partial
from jax import lax
"""


def write_npbench(root: Path) -> Path:
    """A clone-shaped folder: bench_info/<name>.json and npbench/benchmarks/<name>/."""
    (root / "bench_info").mkdir(parents=True)
    for name, k in KERNELS.items():
        info = {
            "name": f"the {name} kernel",
            "short_name": name,
            "relative_path": f"group/{name}",
            "module_name": name,
            "func_name": "kernel",
            **k["info"],
        }  # type: ignore[dict-item]
        (root / "bench_info" / f"{name}.json").write_text(json.dumps({"benchmark": info}))
        folder = root / "npbench" / "benchmarks" / "group" / name
        folder.mkdir(parents=True)
        files = {"": "init", "_numpy": "numpy", "_jax": "jax", "_jax_lib": "jax_lib"}
        for suffix, key in files.items():
            if key in k:
                body = textwrap.dedent(str(k[key]))
                (folder / f"{name}{suffix}.py").write_text(HEADER + body)
    return root


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_npbench(tmp_path_factory.mktemp("npbench"))


def test_kernels_become_workloads_without_per_kernel_code(clone: Path):
    suite = npbench.load(clone)
    by_name = {w.name: w for w in suite.workloads}
    assert sorted(by_name) == ["axpy", "axpy.lib", "count", "smooth"]
    axpy, smooth, count = by_name["axpy"], by_name["smooth"], by_name["count"]
    assert list(axpy.sizes) == ["S", "M", "paper"]
    assert axpy.tags == ("npbench", "microbench", "linalg", "dense_linear_algebra")
    assert axpy.description == "the axpy kernel"
    assert axpy.static_argnums == () and axpy.eager == "nojit"
    assert smooth.static_argnums == (0,) and smooth.outputs == (1, 2)
    assert count.dtype == "int32" and axpy.dtype is None
    assert by_name["axpy.lib"].static_argnums == (0,)  # a plain function: scalars static
    assert suite_of(axpy) == f"npbench:{clone.resolve()}"
    problems = {p.kernel: p for p in suite.problems}
    assert problems["nojax"].reason == (
        "no JAX version: npbench/benchmarks/group/nojax/nojax_jax.py is missing"
    )
    assert not problems["nojax"].error
    assert problems["broken"].error and "dace" in problems["broken"].reason
    assert problems["broken"].line == 8  # the raise
    assert not jax.config.jax_enable_x64  # the broken kernel's x64 switch was put back


def test_inputs_follow_the_case_dtype(clone: Path):
    by_name = {w.name: w for w in npbench.load(clone).workloads}
    host = by_name["axpy"].make_inputs({"N": 4}, dtype="float32")
    assert type(host.args[0]) is __import__("numpy").float32
    assert host.dtypes == {"alpha": "float32", "x": "float32", "y": "float32"}
    assert by_name["count"].make_inputs({"N": 4}, dtype="int32").dtypes == {"seq": "int32"}


def test_discovery_by_scheme_and_errors(clone: Path, tmp_path: Path):
    registry = discover([f"npbench:{clone}"])
    assert set(registry.workloads) == {"axpy", "axpy.lib", "count", "smooth"}
    assert [e.path.endswith("broken_jax.py") for e in registry.errors] == [True]
    with pytest.raises(SuiteError, match="is not an NPBench clone"):
        discover([f"npbench:{tmp_path}"])
    # Another process (a resumed run, a --processes worker) finds them again by spec.
    again = workloads_for_selection(
        [Selection(workload="smooth", suite=suite_of(registry.workloads["smooth"]))]
    )
    assert [w.name for w in again] == ["smooth"]


def test_a_real_run_measures_and_validates_every_kernel(clone: Path):
    """In float64 by default, as NPBench runs, said once; --no-x64 (x64=False) is float32;
    the kernel with no JAX version is listed with why."""
    events: list[object] = []
    run = jitbench.run(
        suites=[f"npbench:{clone}"], config=RunConfig.quick_settings(), on_event=events.append
    )
    chosen = [e for e in events if isinstance(e, FloatWidthChosen)]
    assert chosen == [FloatWidthChosen("float64", (f"npbench:{clone.resolve()}",), 4, 4)]
    [left_out] = [e for e in events if isinstance(e, KernelsLeftOut)]
    assert [name for name, _why in left_out.kernels] == ["nojax"]
    assert run.config.settings.x64 is True
    statuses = {(m.case.workload, m.mode): m.status for m in run.measurements}
    assert set(statuses.values()) == {Status.OK}, statuses
    assert {m.case.workload for m in run.measurements} == {"axpy", "axpy.lib", "count", "smooth"}
    for m in run.measurements:
        assert not any(d.code in {"unvalidated", "scalar-promotion"} for d in m.diagnostics)
    dtypes = {m.case.workload: m.case.dtype for m in run.measurements}
    assert dtypes["count"] == "int32" and dtypes["axpy"] == "float64"
    narrow = jitbench.run(
        ["axpy"], suites=[f"npbench:{clone}"], config=RunConfig.quick_settings(x64=False)
    )
    assert {m.case.dtype for m in narrow.measurements} == {"float32"}


@pytest.mark.e2e
def test_an_isolated_case_finds_its_kernel_in_the_child(clone: Path):
    config = RunConfig.quick_settings(isolate=True, modes=(Mode.NUMPY, Mode.JIT))
    run = jitbench.run(["smooth"], suites=[f"npbench:{clone}"], config=config)
    assert {m.status for m in run.measurements} == {Status.OK}


def test_the_cli_runs_a_clone(clone: Path, tmp_path: Path):
    # In this process, as the real run above: `jitbench run --suite npbench:PATH`.
    result = invoke(
        "run", "--suite", f"npbench:{clone}", "-k", "axpy and not lib", "--quick", "--out", tmp_path
    )
    assert result.exit_code == 0, result.stderr
    assert "axpy" in result.stdout and "broken" in result.stderr


def test_list_and_run_say_what_the_clone_leaves_out_and_its_float_width(clone: Path):
    from typer.testing import CliRunner

    from jitbench.cli import app

    runner = CliRunner()
    listed = runner.invoke(app, ["list", "--suite", f"npbench:{clone}", "-k", "axpy"])
    assert listed.exit_code == 0, listed.output
    assert "left out: nojax (no JAX version: npbench/benchmarks/group/nojax/nojax_jax.py" in (
        listed.stderr.replace("\n", " ")
    )
    args = ["run", "--quick", "--suite", f"npbench:{clone}", "-k", "axpy and not lib", "-m", "jit"]
    ran = runner.invoke(app, args)
    assert ran.exit_code == 0, ran.output
    said = ran.stderr.replace("\n", " ")
    assert said.count("left out: nojax") == 1
    assert said.count("declares float64") == 1 and "--no-x64 runs float32" in said
