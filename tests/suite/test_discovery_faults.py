"""Suite files that fail to import, as `jitbench run` meets them: the others still run, the
failure is named by file and line, and `--strict` or an empty selection fail the run."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from jitbench.results import load_run
from jitbench.suite.discovery import discover
from tests.faults import FAULT_SUITE, OK, invoke, run_files, statuses

BROKEN_SUITE = "from jitbench import workload\n\ndef broken(:\n    pass\n"


@pytest.mark.parametrize(
    ("with_good", "strict", "exit_code"),
    [(True, False, 0), (True, True, 1), (False, False, 2)],
    ids=["syntax-error-others-run", "syntax-error-strict", "syntax-error-nothing-left"],
)
def test_suite_with_syntax_error(
    tmp_path: Path, with_good: bool, strict: bool, exit_code: int
) -> None:
    bad = tmp_path / "bad_suite.py"
    bad.write_text(BROKEN_SUITE)
    args: list[object] = ["run", "--suite", bad, "--quick", "--out", tmp_path / "out"]
    if with_good:
        args += ["--suite", FAULT_SUITE, "ok_double"]
    if strict:
        args.append("--strict")
    result = invoke(*args)
    assert result.exit_code == exit_code, result.stderr
    assert f"{bad}:3: SyntaxError" in result.stderr
    assert "Traceback" not in result.stderr
    files = run_files(tmp_path / "out")
    if with_good:
        assert statuses(load_run(files[0])) == {"ok_double[S]": OK}
    else:
        assert files == []
        assert "no workloads to run (1 suite file(s) failed to import)" in result.stderr


IMPORT_FAULTS = {
    "sys-exit-3": ("import sys\n\nsys.exit(3)\n", "SystemExit"),
    "sys-exit": ("import sys\n\nsys.exit()\n", "SystemExit"),
    "raise-systemexit": ("\n\nraise SystemExit('bye')\n", "SystemExit"),
    "raise-keyboardinterrupt": ("\n\nraise KeyboardInterrupt\n", "KeyboardInterrupt"),
    "generatorexit": ("\n\nraise GeneratorExit\n", "GeneratorExit"),
    "missing-module": ("import no_such_module_for_jitbench\n\n\n", "ModuleNotFoundError"),
}


def _failing_suite(folder: Path, name: str) -> tuple[Path, str]:
    """The suite file of IMPORT_FAULTS[name] and the `file:line: Type` naming its failure."""
    body, exc_type = IMPORT_FAULTS[name]
    bad = folder / f"{name.replace('-', '_')}_suite.py"
    bad.write_text(body)
    return bad, f"{bad}:{1 if exc_type == 'ModuleNotFoundError' else 3}: {exc_type}"


@pytest.mark.parametrize("name", list(IMPORT_FAULTS))
def test_any_exception_at_import_is_a_suite_error_and_the_others_are_found(
    tmp_path: Path, name: str
) -> None:
    bad, named = _failing_suite(tmp_path, name)
    registry = discover([bad, FAULT_SUITE])
    [error] = registry.errors
    assert named in " ".join(str(error).split())
    assert "ok_double" in registry.workloads


def test_suites_failing_at_import_are_named_and_the_others_run(tmp_path: Path) -> None:
    """Every failure of IMPORT_FAULTS in one run (each is discovered above): each named on
    stderr, none a traceback, and the good suite measured."""
    failing = [_failing_suite(tmp_path, name) for name in IMPORT_FAULTS]
    suites = [arg for bad, _ in failing for arg in ("--suite", bad)]
    out = tmp_path / "out"
    result = invoke("run", *suites, "--suite", FAULT_SUITE, "ok_double", "--quick", "--out", out)
    assert result.exit_code == 0, result.stderr
    stderr = " ".join(result.stderr.split())
    for _, named in failing:
        assert named in stderr, stderr
    assert "Traceback" not in result.stderr
    assert statuses(load_run(run_files(out)[0])) == {"ok_double[S]": OK}


def test_a_real_ctrl_c_during_suite_import_still_stops(tmp_path: Path) -> None:
    # The suite sends a real SIGINT to this process while it is being imported: that is
    # the user stopping the run, not a broken suite.
    from jitbench import discover

    bad = tmp_path / "slow_import.py"
    bad.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGINT)\nx = [0] * 1000\n")
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # xdist ignores it
    try:
        with pytest.raises(KeyboardInterrupt):
            discover([bad])
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_suite_that_changes_the_working_folder_cannot_move_the_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    suite = tmp_path / "chdir_suite.py"
    suite.write_text(f"import os\nos.chdir({str(elsewhere)!r})\n")
    monkeypatch.chdir(tmp_path)  # restored after the test, whatever the suite does
    result = invoke(
        "run", "--suite", suite, "--suite", FAULT_SUITE, "ok_double", "--quick", "--out", "rel-out"
    )
    assert result.exit_code == 0, result.stderr
    assert len(run_files(tmp_path / "rel-out")) == 1
    assert (tmp_path / "rel-out" / "index.html").is_file()
    assert not (elsewhere / "rel-out").exists()


@pytest.mark.parametrize(
    ("decorator", "message"),
    [
        ('sizes={"S": 1000}', "sizes['S'] is 1000; map each size preset"),
        ('sizes={"S": {"n": 8}}, sweep={"n": 100}', "sweep takes a list"),
        ('sizes={"S": {"n": 8}}, static_argnums="0"', "static_argnums takes"),
    ],
)
def test_a_malformed_workload_is_a_suite_error_at_its_line(
    tmp_path: Path, decorator: str, message: str
) -> None:
    bad = tmp_path / "shapes.py"
    bad.write_text(
        "from jitbench import workload\n\n"
        "def vec(rng, *, dtype, n):\n"
        "    return (rng.standard_normal(n).astype(dtype),)\n\n"
        f"@workload(inputs=vec, {decorator})\n"
        "def double(xp, x):\n"
        "    return 2 * x\n"
    )
    result = invoke("list", "--suite", bad)
    assert result.exit_code == 2
    stderr = " ".join(result.stderr.split())
    assert f"{bad}:6: WorkloadError: workload 'double': " in stderr and message in stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_suite_folder_holding_no_regular_file_is_refused_at_once(tmp_path: Path, kind) -> None:
    """A named pipe would make the import wait for a writer forever; /dev/zero never ends."""
    import os

    from jitbench.suite.discovery import discover

    folder = tmp_path / "suites"
    folder.mkdir()
    (folder / "good.py").write_text(
        "from jitbench import workload\n\n"
        "@workload(inputs=lambda rng, *, dtype: (), sizes={'S': {}})\n"
        "def fine(xp):\n    return xp.ones(2)\n"
    )
    odd = folder / "odd.py"
    if kind == "fifo":
        os.mkfifo(odd)
    else:
        odd.symlink_to("/dev/zero")
    registry = discover([folder])
    assert list(registry.workloads) == ["fine"]
    [error] = registry.errors
    assert error.path == str(odd) and "not a regular file" in str(error)
