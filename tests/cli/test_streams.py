"""A standard stream that breaks (its reader went away, a full disk) never costs the
command its work: the write failure is recorded, the command goes on, and the exit code
says what happened (141 for a closed reader, 74 for a failed write), with one line on
stderr where stderr still works. Real pipes, real /dev/full, real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from jitbench.cli import common
from tests.conftest import REPO

FIXTURE = REPO / "tests" / "results" / "fixtures" / "run-schema-1.7.json"
ENV = {**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu"}


@pytest.fixture
def no_failures(monkeypatch: pytest.MonkeyPatch) -> dict[str, OSError]:
    failures: dict[str, OSError] = {}
    monkeypatch.setattr(common, "_stream_failures", failures)
    monkeypatch.setattr(common, "_kept", [])
    return failures


def test_a_write_to_a_closed_pipe_is_recorded_not_raised(no_failures: dict) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    stream = common.GuardedStream(open(write_end, "w", closefd=True), "stdout")  # noqa: SIM115
    try:
        assert stream.write("a table\n") == len("a table\n")
        stream.flush()
        stream.write("more")  # dropped, not raised
        stream.flush()
    finally:
        stream.close()
    assert isinstance(no_failures["stdout"], BrokenPipeError)
    assert common._exit_after_streams(0) == common.EXIT_BROKEN_PIPE
    assert common._exit_after_streams(1) == 1  # a regression says more


def test_a_full_device_is_recorded_and_turns_success_into_74(no_failures: dict) -> None:
    stream = common.GuardedStream(open("/dev/full", "w"), "stderr")  # noqa: SIM115
    try:
        stream.write("progress\n")
        stream.flush()
    finally:
        stream.close()
    assert no_failures["stderr"].strerror == os.strerror(28)  # ENOSPC
    assert common._exit_after_streams(0) == common.EXIT_STREAM_FAILED


def _jitbench(*args: str, **streams: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jitbench", *args],
        cwd=REPO,
        env=ENV,
        text=True,
        timeout=120,
        **streams,  # type: ignore[call-overload]
    )


@pytest.mark.e2e  # a real process writing into /dev/full
@pytest.mark.parametrize("fmt", ["table", "csv"])
def test_report_to_a_full_stdout_says_so_in_one_line_and_exits_74(fmt: str) -> None:
    with open("/dev/full", "w") as full:
        proc = _jitbench(
            "report", str(FIXTURE), "--format", fmt, stdout=full, stderr=subprocess.PIPE
        )
    assert proc.returncode == common.EXIT_STREAM_FAILED, proc.stderr
    assert proc.stderr.startswith("error: cannot write to stdout (No space left on device)")
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.e2e  # a real process writing into a closed pipe
def test_report_into_a_closed_pipe_exits_141_quietly() -> None:
    # Both streams are one pipe whose reader is gone before anything is written, as in
    # `jitbench report RUN.json --format table 2>&1 | head -0`.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = _jitbench(
            "report", str(FIXTURE), "--format", "table", stdout=write_end, stderr=write_end
        )
    finally:
        os.close(write_end)
    assert proc.returncode == common.EXIT_BROKEN_PIPE


@pytest.mark.e2e
@pytest.mark.parametrize("redirect", ["2>/dev/full", ">/dev/full", "2>&1 | head -1"])
def test_a_run_with_a_broken_stream_is_saved_whole(redirect: str, tmp_path: Path) -> None:
    from jitbench.results import load_run
    from tests.faults import QUICK, run_files

    command = " ".join([sys.executable, "-m", "jitbench", "run", *QUICK, "ok_double", "ok_sleepy"])
    proc = subprocess.run(
        ["bash", "-c", f"{command} --out {tmp_path} {redirect}; exit ${{PIPESTATUS[0]}}"],
        cwd=REPO,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    expected = common.EXIT_BROKEN_PIPE if "head" in redirect else common.EXIT_STREAM_FAILED
    assert proc.returncode == expected, proc.stderr
    [path] = run_files(tmp_path)
    run = load_run(path)
    assert run.complete and len(run.cases()) == 2
    assert path.with_suffix(".html").is_file() and (tmp_path / "index.html").is_file()
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr


SLOW_COMMAND = """
import sys, time, typer
from jitbench.cli.common import handles_errors

@handles_errors
def slow() -> None:
    print("started", flush=True)
    time.sleep(60)

try:
    slow()
except typer.Exit as exc:
    sys.exit(exc.exit_code)
"""


@pytest.mark.e2e  # a real process signalled
@pytest.mark.parametrize(
    ("sig", "code", "word"), [("SIGTERM", 143, "terminated"), ("SIGHUP", 129, "terminated")]
)
def test_every_command_stops_on_sigterm_and_sighup_as_on_ctrl_c(
    sig: str, code: int, word: str
) -> None:
    """Any command (report, compare, history, …), not only run: one line and 128 + N,
    with what it was writing cleaned up, not a silent death by the signal."""
    import signal

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_COMMAND],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "started\n"
    proc.send_signal(getattr(signal, sig))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    assert err.strip() == word
