"""JAX code as its users write it (`tests.idioms`: jitted functions, transforms, pytrees,
PRNG keys, donation, static arguments, flax, optax and equinox objects) through every
entry point: `jitbench.bench` with its default two processes, a suite file run by
`jitbench run`, the pytest fixture and the `%jitbench` magic. Each idiom's jit mode must
be `ok` and validated (against eager: the idioms are JAX-only), and its jit figure shown
as a speedup over eager. The default tier runs the quicker half in one process; the e2e
tier runs every idiom through every entry point."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import jitbench
from jitbench.config import Mode, RunConfig, SamplingPlan
from jitbench.results import Run, Status
from jitbench.results.analysis import analyse
from tests.idioms import IDIOMS

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "tests" / "idioms" / "suite.py"
BY_NAME = {i.name: i for i in IDIOMS}
#: The idioms quick enough for the default tier (each well under a second to open).
QUICK = (
    "static_argnums",
    "namedtuple_state",
    "dataclass_pytree",
    "vmap_in_axes",
    "checkpoint",
    "dropout_typed_key",
    "donated_update",
    "dict_in_tuple_out",
)


def assert_jit_ok_and_validated(run: Run, names: list[str] | tuple[str, ...]) -> None:
    """Every named idiom's jit `ok`, checked against eager, its speedup over eager shown."""
    seen = {c.workload for c in run.cases()}
    assert set(names) <= seen, set(names) - seen
    for c in analyse(run):
        if c.case.workload not in names:
            continue
        jit = run.get(c.key, Mode.JIT)
        eager = run.get(c.key, Mode.EAGER)
        assert jit is not None and eager is not None, c.case.workload
        assert jit.status is Status.OK, (c.case.workload, jit.status, jit.error)
        assert eager.status is Status.OK, (c.case.workload, eager.status, eager.error)
        codes = {d.code for d in jit.diagnostics}
        assert "unvalidated" not in codes, (c.case.workload, codes)
        f = c.get(Mode.JIT)
        assert f is not None and f.speedup is not None and f.over is Mode.EAGER
        assert c.baseline is Mode.EAGER and c.break_even_calls is not None


def test_the_quick_idioms_as_a_suite_in_process() -> None:
    registry = jitbench.discover([SUITE])
    workloads = [registry.get(name) for name in QUICK]
    config = RunConfig(
        modes=(Mode.EAGER, Mode.JIT),
        processes=1,
        plan=SamplingPlan(budget_s=0.02, min_samples=3, warmup_calls=1),
    )
    run = jitbench.run_workloads(workloads, config)
    assert_jit_ok_and_validated(run, QUICK)


def test_bench_keeps_positional_and_keyword_arguments_as_given() -> None:
    idiom = BY_NAME["static_shape_argnames"]
    a = idiom.arguments()
    r = jitbench.bench(idiom.fn(), *a.args, processes=1, budget=0.02, **a.kwargs)
    assert_jit_ok_and_validated(r.run, [r.name])
    # jax.jit's own static_argnames (n) were read from the jitted function.
    assert r.speedup("jit") == r.case().eager_over_jit


@pytest.mark.e2e
@pytest.mark.parametrize("name", [i.name for i in IDIOMS])
def test_every_idiom_through_bench_with_two_processes(name: str) -> None:
    idiom = BY_NAME[name]
    a = idiom.arguments()
    r = jitbench.bench(idiom.fn(), *a.args, name=name, budget=0.05, **idiom.options, **a.kwargs)
    assert r.run.config.to_dict()["processes"] == 2 and not r.notes, r.notes
    assert_jit_ok_and_validated(r.run, [name])


@pytest.mark.e2e
def test_every_idiom_through_a_suite_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "jitbench",
            "run",
            "--suite",
            str(SUITE),
            "--quick",
            "--processes",
            "2",
            "-m",
            "eager,jit",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    [path] = (out / "runs").glob("*.json")
    run = jitbench.load_run(path)
    assert json.loads(path.read_text())["config"]["processes"] == 2
    assert_jit_ok_and_validated(run, [i.name for i in IDIOMS])
    assert "ᵉ jit over eager" in proc.stdout


@pytest.mark.e2e
def test_every_idiom_through_the_pytest_fixture(pytester: pytest.Pytester) -> None:
    # pytester's in-process run drops the modules it imported, and an extension module
    # cannot load twice in a process: flax's, optax's and equinox's are imported here first.
    for idiom in IDIOMS:
        idiom.arguments()
    pytester.syspathinsert(REPO)
    pytester.makepyfile(
        test_idioms_fixture="""
        import pytest
        from tests.idioms import IDIOMS

        @pytest.mark.parametrize("idiom", IDIOMS, ids=lambda i: i.name)
        def test_idiom(jitbench, idiom):
            a = idiom.arguments()
            r = jitbench(idiom.fn(), *a.args, name=idiom.name, **idiom.options, **a.kwargs)
            jit = r.run.measurements[-1]
            assert jit.mode.value == "jit" and jit.status.value == "ok", jit.error
            assert "unvalidated" not in {d.code for d in jit.diagnostics}
            assert r.case().baseline.value == "eager"
        """
    )
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-q")
    result.assert_outcomes(passed=len(IDIOMS))


@pytest.mark.e2e
def test_every_idiom_through_the_magic() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "jitbench")
    for idiom in IDIOMS:
        a = idiom.arguments()
        names = [f"a{i}" for i in range(len(a.args))]
        shell.user_ns.update(dict(zip(names, a.args, strict=True)), fn=idiom.fn(), **a.kwargs)
        call = ", ".join([*names, *(f"{k}={k}" for k in a.kwargs)])
        statics = idiom.options.get("static_argnums")
        flag = f"--static-argnums {statics} " if statics is not None else ""
        r = shell.run_line_magic("jitbench", f"-b 0.05 {flag}fn({call})")
        assert isinstance(r, jitbench.BenchResult), idiom.name
        assert_jit_ok_and_validated(r.run, [r.name])
