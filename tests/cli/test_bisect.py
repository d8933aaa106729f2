"""`jitbench bisect` on a real scratch git repository with a tiny suite: one commit changes
`grow`'s compiled program (and makes it far slower), the others do not. The decisions
themselves are tested with fake evaluators in tests/gate/test_bisect.py; nothing here
asserts on speed. The whole bisection (worktrees, worker pairs importing JAX, about 30 s)
is end-to-end, `-m e2e`; its refusals run by default."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from jitbench.cli import app
from jitbench.gate.bisect import STATE_FILE
from tests.conftest import run_cli

SUITE = '''
from jitbench import workload


def vector(rng, *, dtype, n):
    return (rng.standard_normal(n).astype(dtype),)


@workload(inputs=vector, sizes={"S": {"n": 20_000}})
def grow(xp, x):
    """x + 1."""
    return x + 1
'''
# Forty more operations in the program: another fingerprint, and many times the work.
SLOW = """    y = x
    for _ in range(40):
        y = xp.sin(y)
    return x + 1 + 1e-9 * y
"""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=t@t.invalid", "-c", "user.name=t", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """Four commits: the suite (GOOD), notes, `grow` slowed (the one to find), notes (BAD)."""
    repo = tmp_path / "proj"
    (repo / "suites").mkdir(parents=True)
    suite = repo / "suites" / "tiny.py"
    suite.write_text(SUITE)
    (repo / "NOTES").write_text("notes\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "the suite")
    for subject in ("notes 2", "grow does more", "notes 4"):
        if subject == "grow does more":
            suite.write_text(SUITE.replace("    return x + 1\n", SLOW))
        else:
            (repo / "NOTES").write_text((repo / "NOTES").read_text() + subject + "\n")
        _git(repo, "commit", "-qam", subject)
    return repo


@pytest.mark.e2e
def test_bisect_names_the_commit_whose_program_changed_and_resumes(
    project: Path, tmp_path: Path
) -> None:
    out, report = tmp_path / "bisect", tmp_path / "bisect.json"
    args = ("bisect", "HEAD~3", "HEAD", "--pairs", "1", "--budget", "0.2", "--out", str(out))
    proc = run_cli(*args, "--json", str(report), cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    slow = _git(project, "rev-parse", "HEAD~1")
    assert f"first bad commit: {slow} grow does more" in proc.stdout
    assert "changed from GOOD to BAD: grow[S] jit +" in proc.stdout
    # Every step was settled by the program (against GOOD's and BAD's fingerprints).
    steps = [line for line in proc.stdout.splitlines() if line.startswith("step ")]
    assert steps and all("program = " in line for line in steps), proc.stdout
    data = json.loads(report.read_text())
    assert data["first_bad"]["sha"] == slow
    assert data["steps_taken"] == len(steps) <= 2
    assert (out / STATE_FILE).is_file()
    # Run again: everything is recorded, so nothing is measured again.
    again = run_cli(*args, cwd=project)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"first bad commit: {slow}" in again.stdout
    assert "measuring" not in again.stderr
    # The steps, and the commit timed against its parent (its own change).
    assert again.stdout.count("(recorded)") == len(steps) + 1
    assert data["confirmation"]["side"] == "bad", proc.stdout
    assert "it carries the change, timed against its parent " in proc.stdout


runner = CliRunner()


def test_a_corrupt_state_file_exits_2_with_what_to_do(project: Path, tmp_path: Path, monkeypatch):
    out = tmp_path / "bisect"
    out.mkdir()
    (out / STATE_FILE).write_text("{truncated")
    monkeypatch.chdir(project)
    result = runner.invoke(app, ["bisect", "HEAD~3", "HEAD", "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "cannot be read" in result.output and "--restart" in result.output


def test_a_state_of_another_bisection_is_not_overwritten(
    project: Path, tmp_path: Path, monkeypatch
):
    from jitbench.gate.bisect import BisectState, Commit

    out = tmp_path / "bisect"
    out.mkdir()
    head = _git(project, "rev-parse", "HEAD")
    other = BisectState(
        good=Commit(sha=_git(project, "rev-parse", "HEAD~1")),
        bad=Commit(sha=head),
        commits=(Commit(sha=head),),
    )
    other.save(out / STATE_FILE)
    monkeypatch.chdir(project)
    result = runner.invoke(app, ["bisect", "HEAD~3", "HEAD", "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "another bisection" in result.output and "--restart" in result.output


@pytest.mark.parametrize(
    ("good", "bad", "needle"),
    [
        ("HEAD", "HEAD~2", "not an older ancestor"),
        ("HEAD~3", "no-such", "BAD 'no-such' names no commit"),
        ("HEAD~3 --python-good /no/such/python", "HEAD", "--python-good '/no/such/python'"),
        ("HEAD~3 --pairs 0", "HEAD", "--pairs must be at least 1"),
        ("HEAD~3 --attempts 0", "HEAD", "--attempts must be at least 1"),
        ("HEAD~3 --budget inf", "HEAD", "--budget must be positive and finite"),
    ],
)
def test_bad_input_exits_2_before_anything_is_measured(
    project: Path, tmp_path: Path, monkeypatch, good: str, bad: str, needle: str
) -> None:
    monkeypatch.chdir(project)
    args = ["bisect", *good.split(), bad, "--out", str(tmp_path / "b")]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert needle in result.output


@pytest.mark.e2e
def test_timing_only_bisects_by_same_window_timing(project: Path, tmp_path: Path) -> None:
    """The same history decided by timing against GOOD alone (the change is many times
    the work, so no step is in doubt on a busy machine)."""
    report = tmp_path / "bisect.json"
    proc = run_cli(
        "bisect", "HEAD~3", "HEAD", "--timing-only", "--pairs", "1", "--budget", "0.2",
        "--out", str(tmp_path / "b"), "--json", str(report), cwd=project,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(report.read_text())
    assert data["first_bad"]["sha"] == _git(project, "rev-parse", "HEAD~1")
    steps = data["state"]["steps"]
    assert steps and all(s["by"] == "timing" for s in steps)
    assert all("grow[S] jit" in s["evidence"] for s in steps)


@pytest.mark.e2e
def test_sigterm_during_a_bisection_removes_its_worktrees_and_keeps_its_state(
    project: Path, tmp_path: Path
) -> None:
    """SIGTERM while a midpoint is measured: exit 143, every worktree and temp folder
    removed, no worker left, the state kept (the same command resumes)."""
    import os
    import signal
    import time

    from tests.conftest import start_cli, tagged

    scratch, out = tmp_path / "tmp", tmp_path / "bisect"
    scratch.mkdir()
    tag = f"bisect-{os.getpid()}"
    args = ("bisect", "HEAD~3", "HEAD", "--pairs", "1", "--budget", "0.2", "--out", str(out))
    proc = start_cli(*args, cwd=project, tag=tag, env={"TMPDIR": str(scratch)})
    end = time.monotonic() + 180
    while time.monotonic() < end:  # until GOOD and BAD are measured
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        try:
            if json.loads((out / STATE_FILE).read_text()).get("endpoints"):
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.1)
    time.sleep(1.0)  # a midpoint's worktree and workers
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err[-2000:]
    assert "Traceback" not in err and "the same command resumes" in " ".join(err.split())
    assert len(_git(project, "worktree", "list").splitlines()) == 1
    assert list(scratch.iterdir()) == []
    while tagged(tag) and time.monotonic() < end + 10:
        time.sleep(0.1)
    assert tagged(tag) == []
    assert json.loads((out / STATE_FILE).read_text())["endpoints"]
