"""`jitbench ab` end to end with real worker processes, real JAX and a real git repository:
a throwaway repository with a tiny suite, committed, then changed in the working tree.
Budgets are tiny; nothing here asserts on speed. The whole `jitbench ab` (a git worktree,
two interpreters) is end-to-end, `-m e2e`; its refusals and errors run by default."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from jitbench import load_run
from jitbench.ab.duet import DuetError, DuetPlan
from jitbench.ab.sides import comparison_sides
from jitbench.api import compare_revisions
from jitbench.config import RunConfig
from jitbench.errors import ConfigError
from jitbench.gate import Verdict, are_partners
from tests.conftest import run_cli, run_cli_here

SUITE = '''
from jitbench import workload


def vector(rng, *, dtype, n):
    return (rng.standard_normal(n).astype(dtype),)


@workload(inputs=vector, sizes={"S": {"n": 64}})
def scale(xp, x):
    """2 x + 1."""
    return 2 * x + 1
'''

ADDED = '''

@workload(inputs=vector, sizes={"S": {"n": 64}})
def square(xp, x):
    """x * x."""
    return x * x
'''

TINY = DuetPlan(budget_s=0.0, min_rounds=4, max_rounds=4, compiles=2, pairs=2)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git repository with suites/tiny.py committed (tag `base`); the working tree then
    adds a workload."""
    repo = tmp_path / "proj"
    (repo / "suites").mkdir(parents=True)
    (repo / "suites" / "tiny.py").write_text(SUITE)
    _git(repo, "init", "-q")
    _git(repo, "-c", "user.email=t@t.invalid", "-c", "user.name=t", "add", "-A")
    _git(repo, "-c", "user.email=t@t.invalid", "-c", "user.name=t", "commit", "-qm", "base")
    _git(repo, "tag", "base")
    with (repo / "suites" / "tiny.py").open("a") as f:
        f.write(ADDED)
    return repo


@pytest.mark.e2e
def test_revision_against_working_tree_measures_both_sides_interleaved(
    project: Path, tmp_path: Path
) -> None:
    """End to end below the CLI (the slow part: two workers importing JAX); the CLI's own
    wiring is checked by the cheap error paths below."""
    # A package of the tree's own named jitbench must not shadow the harness.
    (project / "jitbench").mkdir()
    (project / "jitbench" / "__init__.py").write_text("raise ImportError('not the harness')\n")
    out = tmp_path / "out"
    cmp, result = compare_revisions(
        rev="base", config=RunConfig(sizes=("S",)), plan=TINY, out=out, cwd=project
    )
    base, new = result.base, result.new
    assert are_partners(base, new)
    assert base.complete and new.complete
    # Both runs are on disk, as the checkpoints left them.
    saved = {load_run(p).run_id for p in (out / "runs").glob("*.json")}
    assert saved == {base.run_id, new.run_id}
    # `scale` is on both sides, measured in the same rounds: equal sample counts, paired
    # compiles; `square` exists only in the working tree.
    verdicts = {(e.workload, e.mode.value): e for e in cmp.entries}
    for mode in ("numpy", "eager", "jit"):
        e = verdicts[("scale", mode)]
        assert e.base is not None and e.new is not None
        # Two worker pairs, four rounds each: each pair's samples are a part of their own.
        assert len(e.base.samples_s) == len(e.new.samples_s) == 8
        assert e.base.run_sample_counts == e.new.run_sample_counts == (4, 4)
        assert e.verdict is not Verdict.NOT_COMPARED
    jit = verdicts[("scale", "jit")]
    assert jit.compile is not None and jit.compile.count == 4  # two per side and pair
    assert verdicts[("square", "jit")].verdict is Verdict.NEW
    # Both workers ran with the fixed allocator settings, and their runs say so.
    for run in (base, new):
        assert run.environment["env"]["MALLOC_MMAP_THRESHOLD_"] == str(32 * 1024 * 1024)
    assert "working tree" in new.config.extra["interleaved"]["label"]
    assert "base" in base.config.extra["interleaved"]["label"]
    # Each of the four workers held its own random heap offset (echoed back by the worker).
    offsets = [o for run in (base, new) for o in run.config.extra["interleaved"]["layout_offsets"]]
    assert len(offsets) == 4 and len(set(offsets)) == 4
    # The worktree of the base revision is gone afterwards.
    listed = subprocess.run(
        ["git", "-C", str(project), "worktree", "list"], capture_output=True, text=True
    ).stdout
    assert len(listed.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"rev": "no-such-branch"}, "names no commit"),
        ({"rev_new": "base"}, "needs --rev"),
        ({"rev": "base", "python_base": "/usr/bin/python3"}, "not both"),
        ({"python_base": "/no/such/python"}, "does not exist"),
    ],
)
def test_bad_sides_are_refused_before_anything_starts(project: Path, kwargs, needle) -> None:
    opts = {"rev": None, "rev_new": None, "python_base": None, "python_new": None, **kwargs}
    with (
        pytest.raises(ConfigError, match=needle),
        comparison_sides(suites=["suites"], cwd=project, **opts),
    ):
        pass


def test_two_environments_without_a_suite_take_the_one_run_would(tmp_path, monkeypatch):
    """Outside a checkout (no ./suites), `run` takes the suite installed with jitbench;
    two environments compared without --suite looked for ./suites and failed."""
    import sys

    from jitbench.suite.discovery import default_suite_path

    monkeypatch.chdir(tmp_path)
    opts = {"rev": None, "rev_new": None, "python_new": None}
    with comparison_sides(suites=[], cwd=tmp_path, python_base=sys.executable, **opts) as sides:
        assert [s.suites for s in sides] == [(str(default_suite_path()),)] * 2


@pytest.mark.e2e
def test_outside_a_git_repository_rev_says_what_to_do(tmp_path: Path) -> None:
    proc = run_cli("ab", "--rev", "main", cwd=tmp_path)
    assert proc.returncode == 2
    assert "git repository" in proc.stderr


def test_stored_runs_and_rev_at_once_is_a_usage_error(tmp_path: Path) -> None:
    proc = run_cli_here("compare", "a.json", "b.json", "--rev", "main", cwd=tmp_path)
    assert proc.returncode == 2
    assert "`jitbench ab`" in proc.stderr  # `compare --rev` is gone: one line says where


def test_a_side_whose_python_cannot_start_is_a_clear_error(project: Path, tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'broken interpreter' >&2\nexit 3\n")
    fake.chmod(0o755)
    with pytest.raises(DuetError, match=r"did not start.*broken interpreter"):
        compare_revisions(
            python_base=str(fake),
            config=RunConfig(sizes=("S",)),
            plan=TINY,
            out=tmp_path / "o",
            cwd=project,
        )


def test_the_callers_own_allocator_settings_are_kept() -> None:
    from jitbench.ab.duet import FIXED_ALLOCATOR, Side, side_environment

    side = Side("base", "base", "python", ("/harness", "/tree"), (), "/tree")
    env = side_environment(side, {"PYTHONPATH": "/mine", "MALLOC_TRIM_THRESHOLD_": "0"})
    assert env["PYTHONPATH"] == os.pathsep.join(["/harness", "/tree", "/mine"])
    assert env["MALLOC_TRIM_THRESHOLD_"] == "0"
    assert env["MALLOC_MMAP_THRESHOLD_"] == FIXED_ALLOCATOR["MALLOC_MMAP_THRESHOLD_"]


def test_layout_offsets_are_seeded_aligned_and_bounded() -> None:
    import random

    from jitbench.ab.duet import MAX_LAYOUT_OFFSET, layout_offsets

    first = layout_offsets(random.Random(7), 50)
    assert first == layout_offsets(random.Random(7), 50)
    assert all(0 <= o < MAX_LAYOUT_OFFSET and o % 16 == 0 for o in first)
    assert len(set(first)) > 40  # spread over the range, not a handful of values


@pytest.mark.e2e
def test_a_float64_suite_is_compared_in_float64_unless_told(tmp_path: Path) -> None:
    """--x64 left unset: both sides follow their suites' declared float width (as `run`
    does for NPBench), and the runs record it."""
    repo = tmp_path / "proj"
    (repo / "suites").mkdir(parents=True)
    wide = SUITE.replace(
        "@workload(inputs=vector,", '@workload(float_width="float64", inputs=vector,'
    )
    (repo / "suites" / "tiny.py").write_text(wide)
    _git(repo, "init", "-q")
    _git(repo, "-c", "user.email=t@t.invalid", "-c", "user.name=t", "add", "-A")
    _git(repo, "-c", "user.email=t@t.invalid", "-c", "user.name=t", "commit", "-qm", "base")
    one = DuetPlan(budget_s=0.0, min_rounds=2, max_rounds=2, compiles=1, pairs=1)
    _, result = compare_revisions(
        rev="HEAD", config=RunConfig(sizes=("S",)), plan=one, out=tmp_path / "out", cwd=repo
    )
    for run in (result.base, result.new):
        assert {c.dtype for c in run.cases()} == {"float64"}
        assert run.config.settings is not None and run.config.settings.x64 is True


def test_an_unknown_clock_is_refused_before_anything_starts() -> None:
    from typer.testing import CliRunner

    from jitbench.cli import app

    for command in ("ab", "bisect"):
        args = ["--rev", "base"] if command == "ab" else ["base", "HEAD"]
        result = CliRunner().invoke(app, [command, *args, "--clock", "tsc"])
        assert result.exit_code == 2, (command, result.output)
        assert "--clock is one of wall, cpu" in result.output


@pytest.mark.e2e
def test_metrics_only_opens_both_sides_at_once_and_keeps_their_programs(
    project: Path, tmp_path: Path
) -> None:
    """`--metrics-only`'s plan: the sides open each case concurrently (a core each where
    two are allowed); each side's programs come back with its measurements and are stored
    beside its run; a changed constant is a changed program with a diff."""
    from jitbench.config import Mode
    from jitbench.gate.diffs import program_diffs
    from jitbench.results import load_programs, run_programs

    tiny = project / "suites" / "tiny.py"
    tiny.write_text(tiny.read_text().replace("return 2 * x + 1\n", "return 2 * x + 3\n"))
    plan = DuetPlan(budget_s=0.0, min_rounds=1, max_rounds=1, compiles=1, pairs=1, concurrent=True)
    out = tmp_path / "out"
    cmp, result = compare_revisions(
        rev="base",
        config=RunConfig(sizes=("S",), processes=1, modes=(Mode.EAGER, Mode.JIT)),
        plan=plan,
        out=out,
        cwd=project,
        programs_only=True,
    )
    [scale] = [e for e in cmp.entries if e.workload == "scale" and e.mode is Mode.JIT]
    assert scale.program is not None and scale.program.changed
    base_programs, new_programs = run_programs(result.base), run_programs(result.new)
    assert base_programs and set(base_programs) <= set(new_programs)
    for run in (result.base, result.new):  # stored beside each run as it was checkpointed
        assert load_programs(out / "runs" / f"{run.run_id}.json") == run_programs(run)
    diff = program_diffs(cmp, base_programs, new_programs)["scale|S|cpu:0|float32|jit"]
    assert "constant(1)" in diff and "constant(3)" in diff


SLEEPY = '''

@workload(inputs=vector, sizes={"S": {"n": 64}})
def sleepy(xp, x):
    """x + 1, slowly (a run that lasts long enough to stop)."""
    import time

    time.sleep(0.01)
    return x + 1
'''


def _first_saved_case(proc: subprocess.Popen[str], runs: Path, limit_s: float = 180) -> None:
    """Until a run file under `runs` holds a measured case."""
    import json
    import time

    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        for path in runs.glob("*.json") if runs.is_dir() else ():
            try:
                if json.loads(path.read_text())["measurements"]:
                    return
            except (OSError, ValueError):
                pass
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("no case was saved in time")


@pytest.mark.e2e
@pytest.mark.parametrize(("sig", "code"), [("SIGTERM", 143), ("SIGHUP", 129)])
def test_a_stop_signal_during_ab_ends_it_as_ctrl_c_does(
    project: Path, tmp_path: Path, sig: str, code: int
) -> None:
    """SIGTERM (a CI job cancelled) and SIGHUP (the terminal closed) during `ab`: both
    partial runs saved, the worktree and its temp folder removed, no worker left, 128 + N."""
    import signal
    import time

    from tests.conftest import start_cli, tagged

    with (project / "suites" / "tiny.py").open("a") as f:
        f.write(SLEEPY)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    out = tmp_path / "out"
    tag = f"ab-{sig}-{os.getpid()}"
    args = ("ab", "--rev", "base", "--budget", "1.5", "--pairs", "1", "--out", str(out))
    proc = start_cli(*args, cwd=project, tag=tag, env={"TMPDIR": str(scratch)})
    _first_saved_case(proc, out / "runs")
    proc.send_signal(getattr(signal, sig))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err[-2000:]
    assert "Traceback" not in err, err[-2000:]
    assert "partial runs saved" in " ".join(err.split()), err[-2000:]
    listed = subprocess.run(
        ["git", "-C", str(project), "worktree", "list"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert len(listed) == 1, listed
    assert list(scratch.iterdir()) == []
    end = time.monotonic() + 10
    while tagged(tag) and time.monotonic() < end:
        time.sleep(0.1)
    assert tagged(tag) == []
    runs = [load_run(p) for p in sorted((out / "runs").glob("*.json"))]
    assert len(runs) == 2 and all(not r.complete and r.measurements for r in runs)


def test_a_half_made_worktree_is_unregistered_and_the_users_stale_ones_are_kept(
    project: Path, tmp_path: Path
) -> None:
    """A signal that cut `git worktree add` short leaves a registration whose folder is
    gone with the scratch folder: pruned. The user's own stale entry is kept when none of
    ours is left (prune would have dropped it)."""
    import shutil

    from jitbench.ab.sides import add_worktree, remove_all

    def listed() -> str:
        return subprocess.run(
            ["git", "-C", str(project), "worktree", "list"], capture_output=True, text=True
        ).stdout

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    half = add_worktree(project, "base", scratch / "base")
    (half / ".git").unlink()  # `git worktree remove` now fails on it, as on a half-made one
    remove_all(project, [half], scratch)
    assert not scratch.exists()
    assert str(half) not in listed()
    # None of ours left registered: nothing pruned, so the user's stale entry stays.
    users = tmp_path / "users-tree"
    add_worktree(project, "base", users)
    shutil.rmtree(users)
    other = tmp_path / "scratch2"
    other.mkdir()
    remove_all(project, [other / "never-made"], other)
    assert str(users) in listed()
