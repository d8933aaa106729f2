"""Cases measured in child processes (`--isolate`): a crash or a hang costs only its case,
measurements cross the process boundary intact, and the child's start-up is not charged to
the case's --timeout. The healthy and the aborting entry share one run (every child imports
JAX afresh); the CLI's hang waits out its --timeout 4 in a run of its own, end to end
(-m e2e), and a hung child past a 0.5 s timeout is checked here without the CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jitbench.config import RunConfig
from jitbench.results import Run, Status, load_run, measurement_from_dict, measurement_to_dict
from jitbench.runner import child, worker
from jitbench.runner.scheduler import run_workloads
from jitbench.suite.discovery import discover
from tests.faults import FAULT_SUITE, OK, QUICK, REPO, all_modes, invoke, run_files, statuses

ISOLATED_FAULTS = {
    "isolate-healthy-case": ("ok_double[S]", OK, ""),
    "isolate-child-aborts": ("aborts[S]", all_modes("error"), "child process died with SIGABRT"),
    "isolate-hang-killed-by-timeout": (
        "hangs[S]",
        all_modes("timeout"),
        "exceeded --timeout 4 s",  # each mode's own limit: "numpy exceeded --timeout 4 s …"
    ),
}


def _isolated_run(out: Path, *workloads: str) -> tuple[object, Run]:
    started = time.monotonic()
    result = invoke("run", *QUICK, "--out", out, "--isolate", "--timeout", "4", *workloads)
    elapsed = time.monotonic() - started
    assert elapsed < 120, f"isolated run took {elapsed:.0f} s"
    return result, load_run(run_files(out)[0])


@pytest.fixture(scope="module")
def isolated_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, Run]:
    return _isolated_run(tmp_path_factory.mktemp("isolated"), "ok_double", "aborts")


@pytest.mark.parametrize(
    "name",
    [
        # Each starts child processes (a fresh interpreter and JAX per case): end-to-end
        # (-m e2e), as is the hang, which waits out its --timeout in a run of its own.
        pytest.param("isolate-healthy-case", marks=pytest.mark.e2e),
        pytest.param("isolate-child-aborts", marks=pytest.mark.e2e),
        pytest.param("isolate-hang-killed-by-timeout", marks=pytest.mark.e2e),
    ],
)
def test_fault_matrix_isolated(name: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    label, expected, message = ISOLATED_FAULTS[name]
    if name == "isolate-hang-killed-by-timeout":
        workloads = ["ok_double", "hangs"]
        result, run = _isolated_run(tmp_path, *workloads)
    else:
        workloads = ["ok_double", "aborts"]
        result, run = request.getfixturevalue("isolated_run")
    # A child that aborts in every mode, NumPy included, is a broken workload (exit 3);
    # a hang is ended by --timeout, which is no verdict on the workload (exit 0).
    broken = "aborts" in workloads
    assert result.exit_code == (3 if broken else 0), result.stderr
    assert "Traceback" not in result.stderr
    assert run.complete and run.config.settings.isolate is True
    table = statuses(run)
    assert table[label] == expected, [m.error for m in run.measurements]
    assert list(table) == [f"{w}[S]" for w in workloads]  # nothing lost, in order
    for m in run.measurements:
        if f"{m.case.workload}[{m.case.size}]" == label and message:
            assert m.error is not None and message in m.error.message
            assert m.error.hint
        if m.status is Status.OK:
            assert m.samples_s and m.case.platform == "cpu"  # measured in the child, sent back


# What a child imports between its "ready" and its result is charged to the case's
# --timeout: on a busy machine a lazily imported scipy.stats (half a second idle) made a
# healthy case exceed --timeout 4. The child's warm-up must import it first.
_STARTUP_PROBE = """
import sys
from pathlib import Path
from jitbench.config import RunConfig
from jitbench.measure import devices, opening
from jitbench.runner.warmup import warm_up
from jitbench.suite.discovery import import_suite_file

wl = import_suite_file(Path(sys.argv[1])).ok_double
device = devices.resolve_devices(["cpu"])[0]
warm_up([device])
before = set(sys.modules)
planned = opening.PlannedCase(wl, "S", {"n": 32}, device, "float32")
opening.measure_case(planned, RunConfig.quick_settings())
print(sorted(m for m in set(sys.modules) - before if m.split(".")[0] == "scipy"))
"""


@pytest.mark.e2e
def test_a_case_imports_nothing_heavy_after_the_warm_up() -> None:
    env = {"PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu"}
    done = subprocess.run(
        [sys.executable, "-c", _STARTUP_PROBE, str(FAULT_SUITE)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("exitcode", "message", "hint"),
    [
        (-signal.SIGKILL, "child process died with SIGKILL", "out-of-memory killer"),
        (-signal.SIGSEGV, "child process died with SIGSEGV", "native code"),
        (3, "child process exited with code 3 before sending results", "sys.exit"),
    ],
    ids=["oom-kill", "segfault", "exit-code"],
)
def test_child_death_messages(exitcode: int, message: str, hint: str) -> None:
    info = child._death_message(exitcode)
    assert info.message == message and hint in info.hint


def test_measurement_dicts_round_trip() -> None:
    run = run_workloads([discover([FAULT_SUITE]).get("ok_double")], RunConfig.quick_settings())
    assert run.measurements
    for m in run.measurements:
        again = measurement_from_dict(json.loads(json.dumps(measurement_to_dict(m))))
        assert again.samples_s == m.samples_s and again.case == m.case


THREAD_CHECK_SUITE = '''
import os

from threadpoolctl import threadpool_info

from jitbench import workload


def vec(rng, *, dtype, n):
    return (rng.standard_normal(n).astype(dtype),)


@workload(inputs=vec, sizes={"S": {"n": 8}})
def one_core_one_thread(xp, x):
    """Fails unless it runs on one core with one BLAS thread (--threads 1)."""
    cores = len(os.sched_getaffinity(0))
    pools = [p["num_threads"] for p in threadpool_info()]
    if cores != 1 or any(n != 1 for n in pools):
        raise RuntimeError(f"{cores} cores, BLAS threads {pools}")
    return x + 1
'''


@pytest.mark.e2e
@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this OS")
def test_the_child_measures_with_the_runs_threads(tmp_path: Path) -> None:
    suite = tmp_path / "thread_check.py"
    suite.write_text(THREAD_CHECK_SUITE)
    out = tmp_path / "out"
    result = invoke("run", "--suite", suite, "--quick", "-m", "numpy", "--isolate", "--out", out)
    assert result.exit_code == 0, result.stderr
    run = load_run(run_files(out)[0])
    assert statuses(run) == {"one_core_one_thread[S]": {"numpy": "ok"}}, run.measurements
    assert run.environment["threads"]["requested"] == 1
    # The same check fails in this process without the limit (where there is more to use).
    if len(os.sched_getaffinity(0)) > 1:
        free = run_workloads(
            discover([suite]).select((), None),
            RunConfig.quick_settings(modes=("numpy",), threads=None),
        )
        assert free.measurements[0].status is Status.ERROR
        assert "cores" in free.measurements[0].error.message


class _SigtermOnDelete:
    # The handler then runs inside __del__, where Python drops its raise: the trap of a
    # signal landing in a JAX callback while the parent waits on its child.
    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGTERM)


def _hang_spec() -> dict[str, object]:
    return {
        "suite": str(FAULT_SUITE.resolve()),
        "workload": "hangs",
        "size": "S",
        "params": {"n": 32},
        "devices": ["cpu:0"],
        "dtype": "float32",
        "config": RunConfig.quick_settings(),
    }


@pytest.mark.e2e
def test_a_child_past_its_timeout_is_killed() -> None:
    # The default run's check of the isolated timeout (the CLI's, with --timeout 4, is e2e).

    failure = child.run_in_child(_hang_spec(), timeout_s=0.5)
    assert isinstance(failure, child.ChildFailure), failure
    assert failure.status is Status.TIMEOUT
    assert failure.error.message == "case exceeded --timeout 0.5 s; child process killed"
    assert _own_children() == []


def test_a_swallowed_stop_is_obeyed_while_waiting_on_a_child() -> None:

    from jitbench.runner import signals

    spec = _hang_spec()
    with signals.stop_signals():
        _SigtermOnDelete()  # SIGTERM arrives; its raise is lost, the request recorded
        started = time.monotonic()
        with pytest.raises(signals.Terminated):
            child.run_in_child(spec, timeout_s=20)  # the child would hang for 20 s
        waited = time.monotonic() - started
    assert waited < 5, f"the stop took {waited:.1f} s"
    assert _own_children() == []  # the child was killed


@pytest.mark.e2e  # a worker process started
def test_a_worker_starts_with_the_default_sigterm_whatever_the_parents_handler() -> None:
    """A worker is a fresh program (`worker.Command`): the parent's Python handler for
    SIGTERM (jitbench's stop, or a caller's) is not its own; ended, it is reaped."""
    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        started = worker.start_worker()
        started.order(_report_sigterm_handler)
        kind, body = started.channel.receive({"handler"}, limit_s=120) or ("", "")
        started.stop()
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert (kind, body) == ("handler", "default")
    assert _own_children() == []


def _report_sigterm_handler(conn) -> None:  # type: ignore[no-untyped-def]  # in a worker
    default = signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    conn.send(("handler", "default" if default else "other"))


def _own_children() -> list[int]:
    """The pids of this process's children still there (a worker not ended and reaped)."""
    import os
    from pathlib import Path

    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == os.getpid():
            found.append(int(stat.parent.name))
    return found
