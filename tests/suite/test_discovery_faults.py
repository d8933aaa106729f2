"""Suite files that fail to import, as `jitbench run` meets them: the others still run, the
failure is named by file and line, and `--strict` or an empty selection fail the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitbench.results import load_run
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
