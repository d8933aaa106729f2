"""Sharded mode: where inputs go on the mesh (pure), a real run over 4 forced CPU devices
in a subprocess (the device count must be set before JAX starts), and the skip with one."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from jitbench import workload
from jitbench.errors import WorkloadError
from jitbench.measure.sharding import place_inputs
from jitbench.results import Mode, Status, load_run
from jitbench.results.analysis import analyse
from tests.conftest import run_cli

SUITE = """
from jitbench import workload
from jitbench.results.analysis import analyse

def vec(rng, *, dtype, n):
    return (rng.standard_normal(n).astype(dtype),)

@workload(inputs=vec, sizes={"S": {"n": 64}, "odd": {"n": 66}})
def double(xp, x):
    return 2 * x

def scaled(rng, *, dtype, n):
    return (rng.standard_normal((n, 8)).astype(dtype), rng.standard_normal(8).astype(dtype))

@workload(inputs=scaled, sizes={"S": {"n": 6}}, shard=(1, None))
def colscale(xp, a, w):
    return (a * w).sum(axis=0)
"""


def _vec(rng: np.random.Generator, *, dtype: np.dtype, n: int) -> tuple[np.ndarray, ...]:
    return (np.ones((n, 3), dtype), np.ones(3, dtype), np.float32(2.0))


def _inputs(**options: object):
    wl = workload(inputs=_vec, sizes={"S": {"n": 8}}, name="w", **options)(
        lambda xp, a, b, c: a * b * c
    )
    return wl, wl.make_inputs({"n": 8}, dtype="float32")


def test_default_splits_leading_axes_that_divide_and_replicates_the_rest() -> None:
    wl, host = _inputs()
    placed = place_inputs(wl, host, 4)
    assert [(p.name, p.axis) for p in placed] == [("a", 0), ("b", None), ("c", None)]
    assert "b: its leading axis has 3 elements, which 4 devices do not divide" in (
        placed[1].why_replicated
    )
    assert placed[2].why_replicated == ""  # a scalar has nothing to split
    assert [p.axis for p in place_inputs(wl, host, 2)] == [0, None, None]


def test_declared_axes_and_replication() -> None:
    wl, host = _inputs(shard={"a": 1, 1: None})
    placed = place_inputs(wl, host, 3)
    assert [(p.name, p.axis, p.why_replicated) for p in placed] == [
        ("a", 1, ""),
        ("b", None, ""),
        ("c", None, ""),
    ]
    assert [p.axis for p in place_inputs(*_inputs(shard=(-1,)), 3)] == [1, 0, None]


@pytest.mark.parametrize(
    ("shard", "message"),
    [
        ({"a": 2}, "shard splits axis 2 of .a., which has 2 dimension"),
        ({"zz": 0}, "shard names 'zz', which is not one of its inputs"),
        ({5: 0}, "shard names position 5"),
        ({"c": 0}, "shard splits axis 0 of .c., a scalar with no axis to split"),
        (
            {0: 1, "a": None},
            "shard names input 'a' twice, by position 0 and by name 'a'; keep one of them",
        ),
        ({"b": 0, 1: None}, "shard names input 'b' twice, by name 'b' and by position 1"),
        ({2: None, -1: None}, "shard names input 'c' twice, by position 2 and by position -1"),
    ],
)
def test_a_declaration_the_inputs_do_not_fit_is_refused(shard: object, message: str) -> None:
    wl, host = _inputs(shard=shard)
    with pytest.raises(WorkloadError, match=message):
        place_inputs(wl, host, 2)


@pytest.mark.parametrize(
    ("shard", "message"),
    [
        ("x", "shard takes one axis"),
        ({"a": 1.5}, "shard\\['a'\\] is an axis"),
        ({0.5: 0}, "by position or name"),
    ],
)
def test_shard_option_is_checked_when_declared(shard: object, message: str) -> None:
    with pytest.raises(WorkloadError, match=message):
        _inputs(shard=shard)


def test_one_device_skips_sharded_mode_with_the_fix(tmp_path: Path) -> None:
    import jax

    if len(jax.devices("cpu")) > 1:
        pytest.skip("this process sees several CPU devices")
    from jitbench import RunConfig, run

    (tmp_path / "suite.py").write_text(SUITE)
    result = run(
        ["double"],
        suites=[tmp_path / "suite.py"],
        config=RunConfig.quick_settings(modes=("jit", "sharded")),
    )
    sharded = [m for m in result.measurements if m.mode is Mode.SHARDED]
    assert sharded and all(m.status is Status.SKIPPED and not m.failed for m in sharded)
    reason = sharded[0].diagnostics[0]
    assert reason.code == "sharded-one-device"
    assert "XLA_FLAGS=--xla_force_host_platform_device_count=N" in reason.message
    assert all(m.ok for m in result.measurements if m.mode is Mode.JIT)


def _run_on_four_devices(tmp_path: Path, suite: str, *options: str):  # type: ignore[no-untyped-def]
    """`jitbench run` of `suite` with numpy, jit and sharded modes, the CPU split into 4
    devices (the flag only counts before JAX starts: a subprocess), into tmp_path/out."""
    (tmp_path / "suite.py").write_text(suite)
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=4"
    return run_cli(
        *("run", "--suite", "suite.py", "-m", "numpy,jit,sharded", *options, "--out", "out"),
        cwd=tmp_path,
        env={"XLA_FLAGS": flags.strip(), "COLUMNS": "100"},
    )


PARITY_SUITE = """
import numpy as np
from jitbench import workload

def counts(rng, *, dtype, n):
    return (np.arange(n, dtype=np.int64) % 5,)

@workload(inputs=counts, sizes={"S": {"n": 64}})
def tally(xp, k):
    return (k * 3).astype("float32"), k[:8] + 1
"""


FourDeviceRun = tuple[Path, subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def four_device_run(tmp_path_factory: pytest.TempPathFactory) -> FourDeviceRun:
    """One real run over 4 forced CPU devices of SUITE and PARITY_SUITE together, with
    `--rounds 3` (`tally` has no `odd` size: it is measured at S only), shared by the two
    tests below, which each read their own workloads: a subprocess of its own for each
    cost a JAX start and a measurement for nothing either checks."""
    tmp_path = tmp_path_factory.mktemp("four")
    done = _run_on_four_devices(
        tmp_path, SUITE + PARITY_SUITE, "-s", "S,odd", "--quick", "--rounds", "3"
    )
    return tmp_path, done


@pytest.mark.e2e
def test_sharded_run_over_four_cpu_devices(four_device_run: FourDeviceRun) -> None:
    tmp_path, done = four_device_run
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sharded" in done.stdout and "eff." in done.stdout, done.stdout
    (path,) = (tmp_path / "out" / "runs").glob("*.json")
    run = load_run(path)
    by = {(m.case.workload, m.case.size, m.mode): m for m in run.measurements}
    for key in (("double", "S"), ("double", "odd"), ("colscale", "S")):
        m = by[(*key, Mode.SHARDED)]
        assert m.ok, m.failure_text  # ok: its output matched NumPy's
        assert m.sharding is not None and m.sharding.device_count == 4
        assert dict(m.sharding.mesh_shape) == {"devices": 4}
        assert m.compile is not None and m.compile.total_compile_s
        scaling = analyse(run).case(m.case.key).scaling
        assert scaling is not None and scaling.device_count == 4
        assert scaling.efficiency.value == pytest.approx(scaling.speedup.value / 4)
    assert by[("double", "S", Mode.SHARDED)].sharding.split_axes == {"x": 0}  # type: ignore[union-attr]
    odd = by[("double", "odd", Mode.SHARDED)]
    assert odd.sharding is not None and odd.sharding.split_axes == {"x": None}
    (note,) = [d for d in odd.diagnostics if d.code == "sharded-replicated"]
    assert "66 elements, which 4 devices do not divide" in note.message
    custom = by[("colscale", "S", Mode.SHARDED)].sharding
    assert custom is not None and custom.split_axes == {"a": 1, "w": None}
    raw = json.loads(path.read_text())
    derived = [
        m["scaling"]
        for m in raw["measurements"]
        if m["mode"] == "sharded" and m["case"]["workload"] in ("double", "colscale")
    ]
    assert len(derived) == 3 and all(d["efficiency"]["value"] > 0 for d in derived)
    assert raw["environment"]["process"] == {"index": 0, "count": 1}


@pytest.mark.e2e
def test_sharded_mode_has_jits_checks_repeats_and_copy_back(
    four_device_run: FourDeviceRun,
) -> None:
    """What jit mode gets, sharded mode gets: the narrowed-input check, cold compiles
    repeated under --rounds, and the output's copy back to the host (a gather)."""
    tmp_path, done = four_device_run
    assert done.returncode == 0, done.stdout + done.stderr
    (path,) = (tmp_path / "out" / "runs").glob("*.json")
    by = {m.mode: m for m in load_run(path).measurements if m.case.workload == "tally"}
    jit, sharded = by[Mode.JIT], by[Mode.SHARDED]
    assert sharded.ok, sharded.failure_text
    for m in (jit, sharded):
        assert "input-narrowed" in {d.code for d in m.diagnostics}, m.diagnostics
        assert m.compile is not None and len(m.compile.compile_repeats_s) == 3, m.compile
        assert m.compile.total_compile_s == pytest.approx(
            sorted(m.compile.compile_repeats_s)[1], rel=1e-6
        )
        # float32 × 64 and int32 × 8: the outputs' bytes, copied once each
        assert m.transfer_back_s is not None and m.transfer_back_s > 0
        assert m.transfer_back_bytes == 64 * 4 + 8 * 4
    # Sharded mode's transfers are its own: to the mesh, and gathered back from it.
    assert sharded.transfer_back_s != jit.transfer_back_s
    assert sharded.transfer_bytes == 64 * 8  # int64 on the host, split (not replicated)


REDUCING_SUITE = """
from jitbench import workload

def vec(rng, *, dtype, n):
    return (rng.standard_normal(n).astype(dtype),)

@workload(inputs=vec, sizes={"S": {"n": 4096}})
def total(xp, x):
    return xp.sum(x * x)
"""


@pytest.mark.e2e
def test_two_processes_make_the_same_sharded_calls(tmp_path: Path) -> None:
    """Two `jitbench run --distributed` processes on this machine, 2 CPU devices each (a
    4-device global mesh), with a workload whose sharded program sums across processes:
    its collectives wait for every process's call, so both must calibrate and sample
    alike, though each times on its own clock (before, a run could wait for ever)."""
    import socket
    import subprocess
    import sys

    from tests.conftest import REPO

    (tmp_path / "suite.py").write_text(REDUCING_SUITE)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=2"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "JAX_PLATFORMS": "cpu",
        "XLA_FLAGS": flags.strip(),
    }
    procs = [
        subprocess.Popen(
            [
                *(sys.executable, "-m", "jitbench", "run", "--suite", "suite.py"),
                *("-m", "jit,sharded", "-s", "S", "--budget", "0.2", "--out", f"p{i}"),
                *("--distributed", "--process-id", f"{i}/2"),
            ],
            cwd=tmp_path,
            env={**env, "JAX_COORDINATOR_ADDRESS": f"127.0.0.1:{port}"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    try:
        outs = [p.communicate(timeout=240) for p in procs]
    finally:
        for p in procs:
            p.kill()
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, out + err
    sharded = []
    for i in range(2):
        (path,) = (tmp_path / f"p{i}" / "runs").glob("*.json")
        (m,) = [m for m in load_run(path).measurements if m.mode is Mode.SHARDED]
        assert m.ok, m.failure_text
        sharded.append(m)
    assert sharded[0].calls_per_sample == sharded[1].calls_per_sample
    assert len(sharded[0].samples_s) == len(sharded[1].samples_s)
