"""Real asv on a temporary git copy: discovery, a quick run, stored results, publish."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]

TINY = '''
from jitbench import workload

def vec(rng, *, dtype, n):
    return (rng.standard_normal(n).astype(dtype),)

@workload(inputs=vec, sizes={"S": {"n": 64}})
def double(xp, x):
    """Double every element."""
    return 2 * x

@workload(inputs=vec, sizes={"S": {"n": 64}})
def value_branch(xp, x):
    """Python `if` on a traced value: an error under jit."""
    if x.sum() > 0:
        return x
    return -x
'''

MACHINE = "jitbench-test"


def _asv(args: list[str], *, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HOME": str(home),  # asv keeps its machine file in ~/.asv-machine.json
        "ASV_PYTHONPATH": str(REPO),  # --python=same: import this checkout's jitbench
        "JAX_PLATFORMS": "cpu",
    }
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(
        [sys.executable, "-m", "asv", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"asv {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def _git(args: list[str], cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def _results(repo: Path) -> dict[str, dict[str, object]]:
    """{benchmark name: {"params": ..., "result": [...]}} from asv's stored results file."""
    files = [
        p for p in (repo / ".asv" / "results" / MACHINE).glob("*.json") if p.name != "machine.json"
    ]
    assert len(files) == 1, files
    data = json.loads(files[0].read_text())
    columns = data["result_columns"]
    return {name: dict(zip(columns, row, strict=False)) for name, row in data["results"].items()}


@pytest.mark.skipif(shutil.which("git") is None, reason="asv needs git")
def test_real_asv_run_stores_time_and_compile_results_and_publishes(tmp_path: Path):
    repo = tmp_path / "repo"
    (repo / "suites").mkdir(parents=True)
    shutil.copy(REPO / "asv.conf.json", repo / "asv.conf.json")
    shutil.copy(REPO / "suites" / "asv_benchmarks.py", repo / "suites" / "asv_benchmarks.py")
    (repo / "suites" / "__init__.py").write_text("")
    (repo / "suites" / "tiny.py").write_text(TINY)
    (repo / ".gitignore").write_text(".asv/\nreports/\n")
    _git(["init", "-q", "-b", "main"], repo)
    _git(["add", "."], repo)
    _git(["commit", "-q", "-m", "tiny suite"], repo)
    home = tmp_path / "home"
    home.mkdir()

    _asv(["machine", "--yes", "--machine", MACHINE], cwd=repo, home=home)
    run = _asv(
        [
            "run",
            "--python=same",
            "--quick",
            "--set-commit-hash",
            "HEAD",
            "--machine",
            MACHINE,
            "-b",
            "double",
            "-b",
            r"value_branch.time_call\('S', 'jit'\)",
        ],
        cwd=repo,
        home=home,
    )
    assert "asv_benchmarks.double.time_call" in run.stdout

    results = _results(repo)
    time_call = results["asv_benchmarks.double.time_call"]
    assert time_call["params"] == [["'S'"], ["'numpy'", "'eager'", "'jit'"]]
    assert all(isinstance(v, float) and 0 < v < 1 for v in time_call["result"]), time_call

    compile_track = results["asv_benchmarks.double.track_compile_s"]
    assert compile_track["params"] == [["'S'"], ["'jit'"]]
    (compile_s,) = compile_track["result"]
    assert 0 < compile_s < 60

    first_call = results["asv_benchmarks.double.track_first_call_s"]
    assert first_call["params"] == [["'S'"], ["'eager'", "'jit'"]]
    assert all(0 < v < 60 for v in first_call["result"])

    # The jit program's metrics, tracked over commits (a program change is a step).
    (instructions,) = results["asv_benchmarks.double.track_hlo_instructions"]["result"]
    (bytes_accessed,) = results["asv_benchmarks.double.track_bytes_accessed"]["result"]
    assert instructions >= 3 and bytes_accessed > 0
    assert results["asv_benchmarks.double.track_fusions"]["params"] == [["'S'"], ["'jit'"]]

    peakmem = results["asv_benchmarks.double.peakmem_call"]
    assert all(v > 1_000_000 for v in peakmem["result"])  # bytes of a process with JAX

    # A case that fails under jit is skipped (asv stores NaN for skipped, null for failed).
    skipped = results["asv_benchmarks.value_branch.time_call"]["result"]
    assert isinstance(skipped[2], float) and math.isnan(skipped[2]), skipped  # (S, jit)

    benchmarks = json.loads((repo / ".asv" / "results" / "benchmarks.json").read_text())
    assert benchmarks["asv_benchmarks.double.track_compile_s"]["unit"] == "seconds"
    assert benchmarks["asv_benchmarks.double.track_fusions"]["unit"] == "fusions"

    _asv(["publish"], cwd=repo, home=home)
    assert (repo / "reports" / "asv" / "index.html").is_file()
