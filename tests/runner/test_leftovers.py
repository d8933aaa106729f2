"""What a workload does to the process that measures it cannot take the run with it: a
SIGINT it sets to ignored is taken back, an `os._exit` costs its case, not the run, the
processes it starts end with its isolated child, and a thread it leaves does not keep
jitbench from exiting."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from jitbench.runner.executors import ProcessExitRefused, exits_refused
from jitbench.runner.signals import keep_stop_handlers, stop_signals
from tests.faults import QUICK, invoke, run_files, statuses


def test_a_stop_handler_a_workload_replaced_is_put_back() -> None:
    with stop_signals():
        ours = signal.getsignal(signal.SIGINT)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # what the workload does
        keep_stop_handlers()
        assert signal.getsignal(signal.SIGINT) is ours
    keep_stop_handlers()  # outside a run: nothing to keep


def test_os_exit_in_the_measuring_thread_raises_instead() -> None:
    with exits_refused(), pytest.raises(ProcessExitRefused, match=r"os\._exit\(0\)"):
        os._exit(0)
    assert os._exit.__name__ == "_exit"  # the real one is back


def test_os_exit_in_a_forked_child_still_exits() -> None:
    import multiprocessing

    with exits_refused():  # the child: a workload's own multiprocessing
        child = multiprocessing.get_context("fork").Process(target=os._exit, args=(7,))
        child.start()
        child.join()
    assert child.exitcode == 7


def test_a_workload_calling_os_exit_costs_its_case_not_the_run(tmp_path: Path) -> None:
    result = invoke("run", *QUICK, "--out", tmp_path, "--processes", "1", "exits_hard", "ok_double")
    assert result.exit_code != 0, result.stderr  # the case failed in every mode
    from jitbench.results import load_run

    run = load_run(run_files(tmp_path)[0])
    assert run.complete
    table = statuses(run)
    assert set(table["exits_hard[S]"].values()) == {"error"}
    assert set(table["ok_double[S]"].values()) == {"ok"}


@pytest.mark.e2e
def test_a_thread_left_behind_does_not_keep_jitbench_from_exiting(tmp_path: Path) -> None:
    from tests.conftest import run_cli

    result = run_cli(
        "run", *QUICK, "--processes", "1", "--out", str(tmp_path), "leaves_a_thread", timeout=120
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.e2e
def test_a_workloads_own_process_ends_with_its_timed_out_child(tmp_path: Path) -> None:
    from tests.faults import REPO

    marker = tmp_path / "sleeper"
    env = {**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu"}
    env["JITBENCH_SLEEPER_PID"] = str(marker)
    command = [sys.executable, "-m", "jitbench", "run", *QUICK, "--out", str(tmp_path)]
    proc = subprocess.run(
        [*command, "spawns_and_hangs", "--isolate", "--timeout", "3"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "timeout" in proc.stderr, proc.stderr
    pid = int(marker.read_text().split()[0])
    stat = Path(f"/proc/{pid}/stat")
    # Gone, or a zombie waiting for a container's init to reap it: either way not running.
    assert not stat.exists() or stat.read_text().split(") ")[1][0] == "Z"


FORK_CHECK = """
import multiprocessing, os, subprocess, sys
from jitbench.runner.forks import FORKED_CHILD_STATUS, forks_made, forks_refused, refuse_forks

with forks_refused():
    pass
pid = os.fork()  # outside the block: left alone
if pid == 0:
    os._exit(5)
assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 5
refuse_forks()
pid = os.fork()
if pid == 0:
    print("the child went on", flush=True)
    os._exit(0)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == FORKED_CHILD_STATUS, status
assert forks_made() == 1
# subprocess's fork (an exec follows) and multiprocessing's are left alone, and not counted
assert subprocess.run([sys.executable, "-c", "print(6)"], preexec_fn=lambda: None,
                      capture_output=True, text=True).stdout == "6\\n"
with multiprocessing.get_context("fork").Pool(1) as pool:
    assert pool.apply(abs, (-3,)) == 3
assert forks_made() == 1
print("done")
"""


def test_a_bare_forks_child_ends_at_once_and_is_counted() -> None:
    """In a process of its own: the hooks, once installed, stay for the process."""
    from tests.faults import REPO

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", FORK_CHECK], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "done\n"


@pytest.mark.e2e
@pytest.mark.parametrize("how", [("--processes", "2"), ("--isolate",)])
def test_a_workload_that_forks_fails_its_case_and_the_piped_run_ends(
    tmp_path: Path, how: tuple[str, ...]
) -> None:
    """`jitbench run forks ok_double | cat`: the forked child would have held the pipe
    (here: capture_output's) open as a second jitbench."""
    from jitbench.results import load_run
    from tests.conftest import run_cli

    result = run_cli("run", *QUICK, *how, "--out", str(tmp_path), "forks", "ok_double", timeout=150)
    assert result.returncode == 3, result.stderr  # its case failed in every mode
    assert "os.fork()" in result.stdout + result.stderr
    run = load_run(run_files(tmp_path)[0])
    table = statuses(run)
    assert set(table["forks[S]"].values()) == {"error"}
    assert set(table["ok_double[S]"].values()) == {"ok"}


@pytest.mark.e2e
def test_a_workload_that_deletes_the_working_folder_still_gets_its_table(tmp_path: Path) -> None:
    """The paths are shown absolute when no relative path exists; exit 0."""
    from tests.conftest import run_cli

    here, out = tmp_path / "work", tmp_path / "out"
    here.mkdir()
    result = run_cli(
        "run", *QUICK, "--processes", "1", "--out", str(out), "deletes_cwd", "ok_double",
        cwd=here, env={"JITBENCH_DELETE_CWD": str(here)}, timeout=150,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert not here.exists()
    assert "deletes_cwd" in result.stdout and "internal error" not in result.stderr
    [path] = run_files(out)
    assert f"run saved to {path}" in result.stdout
