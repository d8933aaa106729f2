"""SIGINT and SIGTERM as a clean stop: real signals to a real `jitbench run`, which must save
a partial run that `--resume` finishes, leave no child process behind, and stop even when
the handler's raise is swallowed. SIGINT then `--resume` and the handlers' bookkeeping run
by default; SIGTERM under --isolate, SIGHUP, SIGKILL of the parent, hung children and a
swallowed raise in a real process are end-to-end, `-m e2e`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from jitbench.results import load_run
from jitbench.runner import signals
from tests.faults import FAULT_SUITE, OK, QUICK, REPO, invoke, run_files, statuses


def _noop(_signum: int, _frame: object) -> None:
    """A Python-level handler: across exec it becomes SIG_DFL, as SIG_IGN would not."""


def _start_run(out: Path, *args: str, tag: str) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "JAX_PLATFORMS": "cpu",
        "JITBENCH_TEST_TAG": tag,
        "JITBENCH_HANG_MARKER": str(_hang_marker(out)),
    }
    # A job started in the background (CI, a non-interactive shell) inherits SIGINT
    # ignored, and so would the child; a terminal's Ctrl-C reaches a process whose SIGINT
    # is not ignored. A Python-level handler becomes SIG_DFL across exec, so install one
    # while starting the child (no preexec_fn: forking a process that runs JAX is unsafe).
    # The same for SIGHUP under `nohup` (ignored SIGHUP is kept by design: see signals.py).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    previous_hup = signal.signal(signal.SIGHUP, _noop)
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "jitbench", "run", *QUICK, "--out", str(out), *args],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.signal(signal.SIGHUP, previous_hup)


def _wait_for_first_case(proc: subprocess.Popen[str], out: Path, limit_s: float = 120) -> Path:
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        assert proc.poll() is None, f"the run ended early: {proc.communicate()}"
        for path in run_files(out):
            try:
                if json.loads(path.read_text())["measurements"]:
                    return path
            except (OSError, ValueError):
                pass  # cannot happen with atomic writes; retry anyway
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("no case finished in time")


SIGNAL_RUN = ("ok_double", "ok_sleepy", "-s", "S,M")  # 3 cases, the last two slower


def _processes_tagged(tag: str) -> list[int]:
    """Live processes whose environment holds JITBENCH_TEST_TAG=tag (children inherit it)."""
    pids = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if f"JITBENCH_TEST_TAG={tag}".encode() in environ.read_bytes().split(b"\0"):
                pids.append(int(environ.parent.name))
        except OSError:
            pass
    return pids


# Real signals to a real `jitbench run` subprocess: end-to-end (-m e2e).
@pytest.mark.e2e
@pytest.mark.parametrize(
    ("sig", "exit_code", "word", "extra"),
    [
        (signal.SIGINT, 130, "interrupted", ()),
        (signal.SIGTERM, 143, "terminated", ("--isolate",)),
    ],
    ids=["sigint-then-resume", "sigterm-isolated"],
)
def test_real_signal_saves_a_resumable_run(
    sig: signal.Signals, exit_code: int, word: str, extra: tuple[str, ...], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    tag = f"{os.getpid()}-{tmp_path.name}"
    proc = _start_run(out, *SIGNAL_RUN, *extra, tag=tag)
    path = _wait_for_first_case(proc, out)
    if "--isolate" in extra:  # signal the parent while a child is measuring a case
        end = time.monotonic() + 60
        while len(_processes_tagged(tag)) < 2 and time.monotonic() < end:
            time.sleep(0.05)
    assert proc.pid in _processes_tagged(tag)  # the orphan check below can see processes
    # With --isolate: the parent, the child and multiprocessing's resource tracker.
    assert len(_processes_tagged(tag)) >= (2 if "--isolate" in extra else 1)
    proc.send_signal(sig)
    _stdout, stderr = proc.communicate(timeout=120)
    stderr = " ".join(stderr.split())  # undo rich's line wrapping
    assert proc.returncode == exit_code, stderr
    time.sleep(0.2)
    assert _processes_tagged(tag) == [], "a child process outlived the run"
    assert f"{word}: partial run" in stderr and f"--resume {path}" in stderr
    assert "Traceback" not in stderr
    partial = load_run(path)  # valid, loadable, marked incomplete
    assert not partial.complete and partial.finished_at is None
    done = statuses(partial)
    assert done and all(v == OK for v in done.values())
    if sig is not signal.SIGINT:
        return
    result = invoke("run", "--resume", path)
    assert result.exit_code == 0, result.stderr
    final = load_run(path)
    assert final.complete and final.run_id == partial.run_id
    assert statuses(final) == {"ok_double[S]": OK, "ok_double[M]": OK, "ok_sleepy[S]": OK}
    before = {(m.case.key, m.mode): m.samples_s for m in partial.measurements}
    for m in final.measurements:
        if (m.case.key, m.mode) in before:  # finished before the signal: not re-measured
            assert m.samples_s == before[(m.case.key, m.mode)]


@pytest.mark.e2e
def test_a_signal_whose_raise_is_swallowed_still_stops_the_run(tmp_path: Path) -> None:
    # A real process: Python's own unraisable hook would print the dropped exception.
    from tests.conftest import run_cli

    out = tmp_path / "out"
    result = run_cli(
        "run",
        "--quick",
        "--suite",
        str(FAULT_SUITE),
        "--out",
        str(out),
        "sigterm_swallowed",
        "ok_double",
    )
    assert result.returncode == 143, result.stderr
    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr
    [path] = run_files(out)
    partial = load_run(path)
    # The case in which the signal arrived stops at its next step (its first NumPy call
    # sent the signal, before any sample); nothing after it is measured.
    assert not partial.complete
    assert partial.measurements == ()


def test_stop_signals_restore_the_handlers_and_forget_requests() -> None:
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    with pytest.raises(signals.Terminated), signals.stop_signals():
        assert signal.getsignal(signal.SIGTERM) is not before[signal.SIGTERM]
        os.kill(os.getpid(), signal.SIGTERM)  # the handler raises at the next bytecode
        pytest.fail("the SIGTERM handler did not raise")
    assert {s: signal.getsignal(s) for s in before} == before
    signals.raise_if_stop_requested()  # the request ended with the block: nothing raised


def test_signals_ignored_shields_a_save_and_delivers_the_signal_after() -> None:
    # A Ctrl-C handler of our own: an xdist worker may have inherited SIGINT ignored, and
    # an ignored signal is (rightly) dropped, not delivered after the block.
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    saved = False
    try:
        with pytest.raises(KeyboardInterrupt), signals.signals_ignored():
            # To the main thread, where Python runs handlers.
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)  # held back
            saved = True
        assert saved  # the block finished before the interrupt was delivered
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, before)


def test_a_signal_held_during_a_save_is_dropped_only_when_it_was_ignored_anyway() -> None:
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        with signals.signals_ignored():
            os.kill(os.getpid(), signal.SIGTERM)
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, previous)


def _hang_marker(out: Path) -> Path:
    return out.parent / f"{out.name}.hanging"  # the fault suite's `hangs` touches it


def _wait_for_hang(out: Path, limit_s: float = 90) -> None:
    """Until the `hangs` workload runs (in the child, with --isolate)."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        if _hang_marker(out).exists():
            time.sleep(0.3)  # into the loop
            return
        time.sleep(0.05)
    raise AssertionError("the hanging case did not start")


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("sig", "exit_code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["term", "int"]
)
def test_a_stop_under_isolate_kills_a_hung_child_within_a_second(
    sig: signal.Signals, exit_code: int, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    tag = f"{os.getpid()}-{tmp_path.name}"
    proc = _start_run(out, "ok_double", "hangs", "--isolate", tag=tag)
    path = _wait_for_first_case(proc, out)  # ok_double is done; the child now hangs
    _wait_for_hang(out)
    sent = time.monotonic()
    proc.send_signal(sig)
    _stdout, stderr = proc.communicate(timeout=60)
    waited = time.monotonic() - sent
    assert proc.returncode == exit_code, stderr
    # About 0.1 s of polling plus saving; generous for a loaded machine (it was 25-40 s).
    assert waited < 5, f"took {waited:.1f} s to stop"
    time.sleep(0.2)
    assert _processes_tagged(tag) == [], "the child outlived the run"
    partial = load_run(path)
    assert not partial.complete and statuses(partial) == {"ok_double[S]": OK}


@pytest.mark.e2e
def test_children_die_with_their_parent_on_sigkill(tmp_path: Path) -> None:
    out = tmp_path / "out"
    tag = f"{os.getpid()}-{tmp_path.name}"
    proc = _start_run(out, "ok_double", "hangs", "--isolate", tag=tag)
    _wait_for_first_case(proc, out)
    _wait_for_hang(out)
    proc.kill()  # SIGKILL: the parent cannot clean up
    proc.communicate(timeout=30)
    end = time.monotonic() + 10
    while _processes_tagged(tag) and time.monotonic() < end:
        time.sleep(0.05)
    assert _processes_tagged(tag) == [], "a child outlived its SIGKILLed parent"


@pytest.mark.e2e
def test_sighup_saves_the_partial_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    tag = f"{os.getpid()}-{tmp_path.name}"
    proc = _start_run(out, *SIGNAL_RUN, tag=tag)
    path = _wait_for_first_case(proc, out)
    proc.send_signal(signal.SIGHUP)
    _stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 129, stderr
    assert f"--resume {path}" in " ".join(stderr.split())
    assert not load_run(path).complete


def test_a_workload_cannot_ignore_a_stop_signal_during_its_call() -> None:
    """A SIGTERM arriving while the workload had set it to ignored would be lost."""
    import signal

    from jitbench.runner.signals import stop_handlers_kept, stop_signals

    real = signal.signal
    with stop_signals():
        ours = signal.getsignal(signal.SIGTERM)
        with stop_handlers_kept():
            assert signal.signal(signal.SIGTERM, signal.SIG_IGN) is ours  # the workload
            assert signal.getsignal(signal.SIGTERM) is ours
            previous = signal.signal(signal.SIGUSR1, signal.SIG_IGN)  # others as asked
            assert signal.getsignal(signal.SIGUSR1) is signal.SIG_IGN
            signal.signal(signal.SIGUSR1, previous)
        assert signal.signal is real  # put back
