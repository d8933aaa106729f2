"""The pytest plugin: the `jitbench` fixture, the session's run saved and judged by the gate,
run by pytest itself (`pytester`)."""

from __future__ import annotations

from dataclasses import replace
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np
import pytest

from jitbench import bench
from jitbench.gate import load_side
from jitbench.interactive.pytest_plugin import _test_name, session_run
from jitbench.results import Mode, load_run, save_run
from tests.conftest import run_cli_here

pytest_plugins = ["pytester"]

PLUGIN = "jitbench.interactive.pytest_plugin"
# Installed (`pip install -e .`), the entry point loads the plugin in every session;
# a checkout run without that install loads it by name.
INSTALLED = any(ep.value == PLUGIN for ep in entry_points(group="pytest11"))
LOAD = () if INSTALLED else ("-p", PLUGIN)
FAST = ("--jitbench-budget", "0.01", "-p", "no:randomly", "-p", "no:cacheprovider")


pytestmark = pytest.mark.usefixtures("extension_modules_loaded")


# NumPy and jit only: eager's op-by-op compiles were most of each session's time, and
# what the plugin does with a session (save, compare, gate) is the same for every mode.
TESTS = """
import numpy as np
import jax.numpy as jnp
import pytest

def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

def selu_np(x, alpha=1.67, lmbda=1.05):
    return lmbda * np.where(x > 0, x, alpha * np.exp(x) - alpha)

X = np.linspace(-2, 2, 1024, dtype=np.float32)

def test_selu(jitbench):
    r = jitbench(selu, X, numpy=selu_np, modes=("numpy", "jit"))
    assert r.name == "test_bench.test_selu" and r.run.processes == 1
    assert r.run.config.settings.plan.budget_s == 0.01
    assert r.speedup("jit") is not None

@pytest.mark.parametrize("n", [256])
def test_centred(jitbench, n):
    x = np.ones((n // 16, 16), dtype=np.float32)
    r = jitbench(lambda x: x.T @ (x - x.mean(axis=0)), x, modes=("numpy", "jit"))
    assert r.name == f"test_bench.test_centred-{n}"
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    # A project's config file fixes the rootdir, which the node ids (the workload names)
    # are relative to; without one a run path passed as an option would move it.
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_bench=TESTS)
    return pytester


@pytest.fixture(scope="module")
def _made() -> dict[str, tuple[Path, list[str]]]:
    return {}


@pytest.fixture
def saved(
    suite: pytest.Pytester,
    _made: dict[str, tuple[Path, list[str]]],
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, list[str]]:
    """The run file of one session of TESTS with `--jitbench-save DIR`, and its output:
    made once per module, for the tests that only read it (each session measures)."""
    if "saved" not in _made:
        out = tmp_path_factory.mktemp("saved") / "bench"
        result = _run(suite, "--jitbench-save", str(out))
        result.assert_outcomes(passed=2)
        [path] = (out / "runs").glob("*.json")
        _made["saved"] = (path, result.stdout.lines)
    return _made["saved"]


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # -p of a module already imported warns that its asserts are not rewritten: none to.
    quiet = ("-W", "ignore::pytest.PytestAssertRewriteWarning")
    result = pytester.runpytest(*LOAD, *quiet, *FAST, *args)
    print(result.stdout.str())  # shown when the test fails
    return result


def test_the_fixture_measures_and_the_session_saves_one_run(
    saved: tuple[Path, list[str]],
) -> None:
    path, lines = saved
    run = load_run(path)
    names = {"test_bench.test_selu", "test_bench.test_centred-256"}
    assert {c.workload for c in run.cases()} == names
    assert {s.workload for s in run.config.selection or ()} == names
    assert run.get(run.cases()[0], "jit") is not None
    pytest.LineMatcher(lines).fnmatch_lines(
        [
            "*- jitbench -*",
            "test_bench.test_selu: jit * vs NumPy*",
            "test_bench.test_centred-256: jit *",
            "run saved to *",
        ]
    )
    report = run_cli_here("report", str(path), "--format", "table")
    assert report.returncode == 0, report.stderr
    assert "test_selu" in report.stdout


def _faster(run_path: Path, target: Path, factor: float) -> None:
    """`run_path`'s run with every jit sample `factor` times faster, as another run. A
    factor far beyond what a busy machine does to a time (1000) makes a later session a
    regression however loaded either session was."""
    run = load_run(run_path)
    ms = tuple(
        replace(m, samples_s=tuple(s / factor for s in m.samples_s)) if m.mode is Mode.JIT else m
        for m in run.measurements
    )
    save_run(replace(run, run_id=run.run_id + "-fast", measurements=ms), target)


def test_a_regression_against_the_stored_run_fails_the_session_with_a_summary(
    suite: pytest.Pytester, saved: tuple[Path, list[str]], tmp_path: Path
) -> None:
    first, _ = saved
    baseline = tmp_path / "baseline.json"
    _faster(first, baseline, factor=1000.0)

    judged = _run(suite, f"--jitbench-compare={baseline}", "--jitbench-fail-on-regression")
    judged.assert_outcomes(passed=2)  # the tests passed; the gate failed the session
    assert judged.ret == pytest.ExitCode.TESTS_FAILED
    judged.stdout.fnmatch_lines(["*FAIL: *regression*", "*the session fails*regressed: test_*"])

    reported = _run(suite, f"--jitbench-compare={baseline}")
    assert reported.ret == pytest.ExitCode.OK  # judged and shown, not failing
    reported.stdout.fnmatch_lines(["*FAIL: *regression*"])


def test_compare_without_a_run_takes_the_latest_saved_one(
    suite: pytest.Pytester, tmp_path: Path
) -> None:
    out = tmp_path / "bench"
    first = _run(suite, "--jitbench-save", str(out), "--jitbench-compare")
    first.assert_outcomes(passed=2)
    first.stdout.fnmatch_lines(["*no run under * to compare with yet*"])
    [saved] = (out / "runs").glob("*.json")
    _faster(saved, out / "runs" / "99990101T000000Z-fast.json", factor=1000.0)  # the latest
    second = _run(
        suite, "--jitbench-save", str(out), "--jitbench-compare", "--jitbench-fail-on-regression"
    )
    assert second.ret == pytest.ExitCode.TESTS_FAILED
    second.stdout.fnmatch_lines(["*regressed:*"])
    assert len(list((out / "runs").glob("*.json"))) == 3
    assert len(load_side(out).cases()) == 2  # the folder pools as `jitbench compare DIR`


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--jitbench-fail-on-regression",), "needs --jitbench-compare"),
        (("--jitbench-compare",), "--jitbench-save DIR"),
        (("--jitbench-compare", "nowhere.json"), "--jitbench-compare nowhere.json: *"),
    ],
)
def test_options_that_cannot_work_are_usage_errors(
    pytester: pytest.Pytester, args: tuple[str, ...], message: str
) -> None:
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = _run(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}*"])


def test_a_session_without_measurements_writes_nothing(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    _run(pytester, "--jitbench-save", str(tmp_path / "b")).assert_outcomes(passed=1)
    assert not (tmp_path / "b").exists()


def test_test_names_become_workload_names() -> None:
    assert _test_name("t/test_a.py::test_f[1000-float32]") == "t.test_a.test_f-1000-float32"
    assert _test_name("test_a.py::T::test_g[a  b/c]") == "test_a.T.test_g-a-b-c"
    assert "--" not in _test_name("test_a.py::test_g[a--b]")  # '--call2' stays apart
    assert _test_name("1.py::test_h") == "test-1.test_h"


def test_the_entry_point_is_declared() -> None:
    import tomllib

    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert pyproject["project"]["entry-points"]["pytest11"] == {"jitbench": PLUGIN}


@pytest.mark.e2e
def test_under_xdist_the_workers_runs_become_one_saved_run(
    suite: pytest.Pytester, tmp_path: Path
) -> None:
    out = tmp_path / "bench"
    result = suite.runpytest_subprocess(
        *LOAD, *FAST, "-n", "2", "--jitbench-save", str(out), timeout=300
    )
    result.assert_outcomes(passed=2)
    [path] = (out / "runs").glob("*.json")
    names = {"test_bench.test_selu", "test_bench.test_centred-256"}
    assert {c.workload for c in load_run(path).cases()} == names
    result.stdout.fnmatch_lines(["*2 measured in worker processes*", "run saved to *"])


def test_one_name_from_two_workers_is_kept_apart(tmp_path: Path) -> None:
    r = bench(lambda x: x * 2, np.ones(8, np.float32), budget=0.01, processes=1, name="test_a")
    run = session_run([r.run, replace(r.run, run_id="other")])
    assert [c.workload for c in run.cases()] == ["test_a", "test_a-2"]
    assert [s.workload for s in run.config.selection or ()] == ["test_a", "test_a-2"]
    save_run(run, tmp_path / "run.json")  # distinct cases: the file is valid


TWO_MODULES = """
import numpy as np

def test_f(jitbench):
    jitbench(lambda x: x * {factor}, np.ones(64, np.float32), modes=("numpy", "jit"))
    jitbench(lambda x: x + {factor}, np.ones(64, np.float32), modes=("numpy", "jit"))
"""


def test_workloads_are_keyed_by_node_id_not_by_order(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_a=TWO_MODULES.format(factor=2), test_b=TWO_MODULES.format(factor=3))
    names = {}
    for order in (("test_a.py", "test_b.py"), ("test_b.py", "test_a.py")):
        out = tmp_path / "-".join(order)
        _run(pytester, *order, "--jitbench-save", str(out)).assert_outcomes(passed=2)
        [path] = (out / "runs").glob("*.json")
        run = load_run(path)
        names[order] = {c.workload for c in run.cases()}
    first, second = names.values()
    assert first == second == {
        "test_a.test_f", "test_a.test_f--call2", "test_b.test_f", "test_b.test_f--call2"
    }  # fmt: skip


def test_a_partial_baseline_fails_the_pytest_gate_as_compare_exits_4(
    suite: pytest.Pytester, saved: tuple[Path, list[str]], tmp_path: Path
) -> None:
    first, _ = saved
    # Every mode of the baseline 1000x slower: the new session can only be faster, however
    # busy this machine is in either.
    base = load_run(first)
    run = replace(
        base,
        measurements=tuple(
            replace(m, samples_s=tuple(s * 1000 for s in m.samples_s)) for m in base.measurements
        ),
    )
    partial = tmp_path / "partial.json"
    save_run(replace(run, complete=False, finished_at=None), partial)
    gate = ("--jitbench-compare=" + str(partial), "--jitbench-fail-on-regression")
    judged = _run(suite, *gate)
    assert judged.ret == pytest.ExitCode.TESTS_FAILED
    judged.stdout.fnmatch_lines(["*partial*", "*the session fails*inconclusive*"])
    assert run_cli_here("compare", str(partial), str(first)).returncode == 4
    allowed = _run(suite, *gate, "--jitbench-allow-inconclusive")
    assert allowed.ret == pytest.ExitCode.OK


def test_a_save_path_that_cannot_be_written_is_refused_before_the_tests(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    (tmp_path / "file").write_text("x")
    for save in (tmp_path / "file" / "out", tmp_path / "file", tmp_path / "file" / "r.json"):
        result = _run(pytester, "--jitbench-save", str(save))
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*--jitbench-save *: cannot be written: *"])


def test_a_save_that_fails_at_the_end_keeps_the_run_in_a_temporary_file(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    temp = tmp_path / "temp"  # the system's temp folder, here: nothing is left in /tmp
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    out = tmp_path / "gone"
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(
        test_late=f"""
import numpy as np
from pathlib import Path

def test_f(jitbench):
    jitbench(lambda x: x * 2, np.ones(8, np.float32), modes=("numpy", "jit"))
    Path({str(out)!r}).write_text("now a file")  # the folder cannot be made any more
"""
    )
    result = _run(pytester, "--jitbench-save", str(out))
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*could not write * the session's run is saved to * instead"])
    saved = result.stdout.str().split("saved to ")[1].split(" instead")[0]
    assert load_run(saved).cases()[0].workload == "test_late.test_f"
    assert Path(saved).parent == temp  # with its programs beside it


def test_a_save_path_ending_in_json_is_the_run_file(suite: pytest.Pytester, tmp_path: Path) -> None:
    target = tmp_path / "base.json"
    _run(suite, "--jitbench-save", str(target)).assert_outcomes(passed=2)
    assert target.is_file() and len(load_run(target).cases()) == 2
    again = _run(suite, "--jitbench-save", str(target), "--jitbench-compare")
    again.assert_outcomes(passed=2)
    again.stdout.fnmatch_lines([f"run saved to {target}", "jitbench compare *"])
