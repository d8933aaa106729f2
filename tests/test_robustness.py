"""Faults, interrupts, isolation and bad input (issue 8).

The fault-injection matrix runs `jitbench run` on tests/fault_suite.py, one injected fault
per entry, and checks the documented exit code, the one-line message and that the results
file is valid and holds every case measured before the fault. Most entries run the CLI in
process (fast); the signal tests use a real subprocess, and the --isolate entries share one
run because every child process imports JAX afresh.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import jax
import numpy as np
import pytest
from typer.testing import CliRunner

from jitbench.cli import app
from jitbench.config import RunConfig
from jitbench.errors import ConfigError, WorkloadError
from jitbench.measure.devices import resolve_devices
from jitbench.measure.protocol import require_array_tree
from jitbench.results import (
    Mode,
    Run,
    Status,
    load_run,
    measurement_from_dict,
    measurement_to_dict,
    save_run,
)
from jitbench.run import child as isolate
from jitbench.run.scheduler import (
    RunInterrupted,
    measure_guarded,
    plan_cases,
    run_workloads,
)
from jitbench.suite.discovery import discover

REPO = Path(__file__).resolve().parents[1]

FAULT_SUITE = Path(__file__).with_name("fault_suite.py")
QUICK = ("--suite", str(FAULT_SUITE), "--quick")
MODES = ("numpy", "eager", "jit")


def invoke(*args: str) -> object:
    """`jitbench ARGS` in this process (stdout and stderr kept apart)."""
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


def run_files(out: Path) -> list[Path]:
    return sorted((out / "runs").glob("*.json")) if (out / "runs").is_dir() else []


def statuses(run: Run) -> dict[str, dict[str, str]]:
    """{case label: {mode: status}}."""
    table: dict[str, dict[str, str]] = {}
    for m in run.measurements:
        table.setdefault(f"{m.case.workload}[{m.case.size}]", {})[m.mode.value] = m.status.value
    return table


def all_modes(status: str) -> dict[str, str]:
    return dict.fromkeys(MODES, status)


OK = all_modes("ok")


@dataclass(frozen=True)
class Fault:
    """One matrix entry: CLI args, the exit code, what the file must hold, the message."""

    args: tuple[str, ...]
    exit_code: int
    cases: dict[str, dict[str, str]] = field(default_factory=dict)  # {} = no file written
    message: str = ""  # expected in stderr or in the recorded error/hint text


IN_PROCESS_FAULTS = {
    "input-function-raises": Fault(
        ("ok_double", "inputs_raise"),
        0,
        {"ok_double[S]": OK, "inputs_raise[S]": all_modes("error")},
        "raised by the input function of 'inputs_raise'",
    ),
    "output-is-a-string": Fault(
        ("ok_double", "returns_string"),
        0,
        {"ok_double[S]": OK, "returns_string[S]": all_modes("error")},
        "returned a str ('not an array') where an array was expected",
    ),
    "output-is-none": Fault(
        ("ok_double", "returns_none"),
        0,
        {"ok_double[S]": OK, "returns_none[S]": all_modes("error")},
        "returned None, which holds no array",
    ),
    "numpy-side-raises": Fault(
        ("ok_double", "numpy_raises"),
        0,
        {"ok_double[S]": OK, "numpy_raises[S]": {"numpy": "error", "eager": "ok", "jit": "ok"}},
        "numpy side failed",
    ),
    "size-does-not-fit-numpy": Fault(
        ("ok_double", "too_big", "-s", "S,XXL"),
        0,
        {"ok_double[S]": OK, "too_big[S]": OK, "too_big[XXL]": all_modes("error")},
        "does not fit in memory",
    ),
    "size-does-not-fit-jax": Fault(
        ("ok_double", "jax_oom"),
        0,
        {"ok_double[S]": OK, "jax_oom[S]": {"numpy": "ok", "eager": "error", "jit": "error"}},
        "RESOURCE_EXHAUSTED",
    ),
    "workload-calls-sys-exit": Fault(
        ("ok_double", "calls_exit", "ok_double", "-s", "S,M"),
        0,
        {"ok_double[S]": OK, "ok_double[M]": OK, "calls_exit[S]": all_modes("error")},
        "called sys.exit()",
    ),
    "hang-cut-by-timeout-in-process": Fault(
        ("ok_double", "hangs", "--timeout", "6"),
        0,
        {"ok_double[S]": OK, "hangs[S]": all_modes("timeout")},
        "case exceeded --timeout 6 s",
    ),
    "strict-with-a-failed-case": Fault(
        ("ok_double", "returns_none", "--strict"),
        1,
        {"ok_double[S]": OK, "returns_none[S]": all_modes("error")},
    ),
    "unknown-workload": Fault(("ok_doubel",), 2, {}, "did you mean 'ok_double'"),
    "unknown-size": Fault(("ok_double", "-s", "XL"), 2, {}, "unknown size 'XL'"),
    "unknown-mode": Fault(("ok_double", "-m", "jitt"), 2, {}, "did you mean 'jit'"),
    "unknown-device": Fault(("ok_double", "-d", "tpu"), 2, {}, "unknown device 'tpu'"),
    "bad-timeout-value": Fault(("ok_double", "--timeout", "0"), 2, {}, "--timeout is a positive"),
}


@pytest.mark.parametrize("name", list(IN_PROCESS_FAULTS))
def test_fault_matrix_in_process(name: str, tmp_path: Path) -> None:
    fault = IN_PROCESS_FAULTS[name]
    out = tmp_path / "out"
    result = invoke("run", *QUICK, "--out", out, *fault.args)
    assert result.exit_code == fault.exit_code, result.stderr
    assert "Traceback" not in result.stderr
    files = run_files(out)
    if not fault.cases:
        assert files == [], "a usage error must stop before measuring"
        assert fault.message in result.stderr
        assert result.stderr.strip().startswith("error:")
        return
    [path] = files
    run = load_run(path)  # valid against the schema
    assert run.complete
    assert statuses(run) == fault.cases
    for m in run.measurements:
        if m.status is Status.OK:
            assert m.samples_s and m.calls_per_sample > 0
        else:
            assert m.error is not None and m.error.message
    recorded = " ".join(
        f"{m.error.message} {m.error.hint}" for m in run.measurements if m.error is not None
    )
    assert fault.message in recorded + result.stderr


def test_failed_cases_carry_a_hint(tmp_path: Path) -> None:
    result = invoke("run", *QUICK, "--out", tmp_path, "too_big", "-s", "XXL", "calls_exit")
    assert result.exit_code == 0
    run = load_run(run_files(tmp_path)[0])
    for m in run.measurements:
        assert m.error is not None and m.error.hint, m
    assert "hint:" in result.stderr


def test_in_process_timeout_restores_the_alarm_handler() -> None:
    def marker(_signum: int, _frame: object) -> None:
        pass

    before = signal.signal(signal.SIGALRM, marker)
    try:
        with pytest.raises(isolate.CaseTimeout), isolate.deadline(0.2):
            while True:  # a real hang in Python, interrupted by SIGALRM
                pass
        assert signal.getsignal(signal.SIGALRM) is marker
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
        with isolate.deadline(5.0) as limit:
            pass
        assert not limit.expired and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    finally:
        signal.signal(signal.SIGALRM, before)


def test_deadline_off_the_main_thread_is_refused() -> None:
    import threading

    errors: list[BaseException] = []

    def worker() -> None:
        try:
            with isolate.deadline(1.0):
                pass
        except ConfigError as exc:
            errors.append(exc)

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert errors and "main thread" in str(errors[0])


# --- suites that fail to import -----------------------------------------------------------

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
    args = ["run", "--suite", bad, "--quick", "--out", tmp_path / "out"]
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


def test_unwritable_output_fails_before_measuring(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = invoke("run", *QUICK, "--out", blocker / "out", "ok_double")
    assert result.exit_code == 2
    assert "is not writable" in result.stderr and "--out" in result.stderr
    assert "case(s)" not in result.stderr  # nothing was measured
    assert "Traceback" not in result.stderr


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    plain = invoke("run", "--resume", tmp_path / "missing.json")
    debug = invoke("--debug", "run", "--resume", tmp_path / "missing.json")
    assert plain.exit_code == debug.exit_code == 2
    assert "Traceback" not in plain.stderr
    assert "Traceback" in debug.stderr
    assert "does not exist" in plain.stderr


# --- resume ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A complete quick run of ok_double at sizes S and M, measured once for the module."""
    out = tmp_path_factory.mktemp("finished")
    result = invoke("run", *QUICK, "--out", out, "ok_double", "-s", "S,M")
    assert result.exit_code == 0, result.stderr
    return run_files(out)[0]


def partial_copy(finished: Path, dest: Path, *, keep_sizes: tuple[str, ...] = ("S",)) -> Path:
    """The finished run cut back to `keep_sizes` and marked incomplete (as a Ctrl-C leaves it)."""
    run = load_run(finished)
    partial = replace(
        run,
        complete=False,
        finished_at=None,
        measurements=tuple(m for m in run.measurements if m.case.size in keep_sizes),
    )
    return save_run(partial, dest)


def test_resume_finishes_without_remeasuring(finished_run: Path, tmp_path: Path) -> None:
    path = partial_copy(finished_run, tmp_path / "partial.json")
    before = load_run(path)
    result = invoke("run", "--resume", path)
    assert result.exit_code == 0, result.stderr
    assert "resuming run" in result.stderr and "1 of 2 case(s) already measured" in result.stderr
    after = load_run(path)
    assert after.complete and after.run_id == before.run_id
    assert after.started_at == before.started_at and after.environment == before.environment
    assert statuses(after) == {"ok_double[S]": OK, "ok_double[M]": OK}
    kept = [m for m in after.measurements if m.case.size == "S"]
    assert [m.samples_s for m in kept] == [m.samples_s for m in before.measurements]
    assert len(after.config.resumed_at) == 1


def _write_bad_results(kind: str, finished: Path, path: Path) -> None:
    text = finished.read_text()
    if kind == "truncated":
        partial_copy(finished, path)
        path.write_text(path.read_text()[: len(text) // 3])
    elif kind == "not-json":
        path.write_text("jitbench? no: this is a log file\n")
    elif kind == "other-json":
        path.write_text(json.dumps({"name": "another tool", "results": [1, 2, 3]}))
    elif kind == "newer-schema":
        partial_copy(finished, path)
        data = json.loads(path.read_text())
        data["schema_version"] = "9.0"
        path.write_text(json.dumps(data))
    elif kind == "complete":
        path.write_text(text)
    elif kind == "invalid-content":
        partial_copy(finished, path)
        data = json.loads(path.read_text())
        data["measurements"][0]["status"] = "exploded"
        path.write_text(json.dumps(data))


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("truncated", "is not valid JSON"),
        ("not-json", "is not valid JSON"),
        ("other-json", "is not a jitbench run"),
        ("newer-schema", "uses run schema 9.0, newer than this jitbench reads"),
        ("complete", "is a complete run; nothing to resume"),
        ("invalid-content", "is not a valid jitbench run"),
    ],
)
def test_resume_refuses_bad_files(
    kind: str, message: str, finished_run: Path, tmp_path: Path
) -> None:
    path = tmp_path / "run.json"
    _write_bad_results(kind, finished_run, path)
    before = path.read_bytes()
    result = invoke("run", "--resume", path)
    assert result.exit_code == 2, result.stderr
    assert message in result.stderr
    assert result.stderr.count("\n") <= 3 and "Traceback" not in result.stderr
    assert path.read_bytes() == before  # a refused resume never touches the file


def test_resume_refuses_when_the_suite_is_gone(tmp_path: Path) -> None:
    suite = tmp_path / "moving_suite.py"
    suite.write_text(FAULT_SUITE.read_text())
    out = tmp_path / "out"
    assert invoke("run", "--suite", suite, "--quick", "--out", out, "ok_double").exit_code == 0
    path = partial_copy(run_files(out)[0], tmp_path / "partial.json", keep_sizes=())
    suite.unlink()
    result = invoke("run", "--resume", path)
    assert result.exit_code == 2
    assert "no longer exists" in result.stderr


def test_resume_refuses_when_the_workload_is_gone(finished_run: Path, tmp_path: Path) -> None:
    path = partial_copy(finished_run, tmp_path / "partial.json")
    data = json.loads(path.read_text())
    data["config"]["selection"][0]["workload"] = "ok_doubled"
    path.write_text(json.dumps(data))
    result = invoke("run", "--resume", path)
    assert result.exit_code == 2
    assert "unknown workload 'ok_doubled'; did you mean 'ok_double'" in result.stderr


def test_resume_refuses_new_selection_options(finished_run: Path, tmp_path: Path) -> None:
    path = partial_copy(finished_run, tmp_path / "partial.json")
    result = invoke("run", "--resume", path, "-s", "L", "--quick")
    assert result.exit_code == 2
    assert "drop --sizes, --quick" in result.stderr


# --- the runner as a library ----------------------------------------------------------------


def test_interrupt_carries_the_partial_run() -> None:
    registry = discover([FAULT_SUITE])
    seen: list[object] = []

    def on_event(event: object) -> None:
        seen.append(event)
        if type(event).__name__ == "CaseFinished":
            raise KeyboardInterrupt  # as a Ctrl-C arriving right after the first case

    with pytest.raises(RunInterrupted) as info:
        run_workloads(
            [registry.get("ok_double")],
            RunConfig.quick_settings(sizes=("S", "M")),
            on_event=on_event,
        )
    partial = info.value.partial
    assert isinstance(info.value, KeyboardInterrupt)
    assert not partial.complete and partial.finished_at is None
    assert statuses(partial) == {"ok_double[S]": OK}


@pytest.mark.parametrize("workload", ["interrupted_in_trace", "interrupted_in_sampling"])
def test_real_sigint_during_compile_or_sampling_leaves_clean_state(workload: str) -> None:
    from jitbench.measure import compilation as jcompile

    registry = discover([FAULT_SUITE])
    wls = [registry.get("ok_double"), registry.get(workload)]
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(RunInterrupted) as info:
            run_workloads(wls, RunConfig.quick_settings())
    finally:
        signal.signal(signal.SIGINT, previous)
    assert statuses(info.value.partial) == {"ok_double[S]": OK}
    assert gc.isenabled()  # sampling turned it back on
    assert jcompile._active == []  # no compile counter left registered
    # JAX still works normally afterwards (no transfer guard or trace left behind).
    assert float(jax.jit(lambda v: v + 1)(jax.numpy.ones(2)).sum()) == 4.0


def test_config_round_trips_through_the_run_file() -> None:
    config = RunConfig.quick_settings(
        sizes=("S", "M"), modes=(Mode.JIT,), timeout_s=3.0, isolate=True, x64=True, seed=7
    )
    assert RunConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config
    with pytest.raises(ConfigError):
        RunConfig.from_dict({"modes": ["warp"]})


@pytest.mark.parametrize(
    ("output", "ok"),
    [
        (np.ones(3), True),
        ((np.ones(3), {"b": np.float32(1.0)}), True),
        (1.5, True),
        (None, False),
        ((), False),
        ("text", False),
        ((np.ones(3), "text"), False),
        (object(), False),
    ],
    ids=["array", "pytree", "number", "none", "empty", "string", "string-leaf", "object"],
)
def test_require_array_tree(output: object, ok: bool) -> None:
    wl = discover([FAULT_SUITE]).get("ok_double")
    if ok:
        assert require_array_tree(output, wl, Mode.NUMPY) is output
    else:
        with pytest.raises(WorkloadError, match="ok_double"):
            require_array_tree(output, wl, Mode.NUMPY)


def test_measurement_dicts_round_trip(finished_run: Path) -> None:
    run = load_run(finished_run)
    for m in run.measurements:
        again = measurement_from_dict(json.loads(json.dumps(measurement_to_dict(m))))
        assert again.samples_s == m.samples_s and again.case == m.case


def test_isolate_needs_a_suite_file() -> None:
    from jitbench import workload

    @workload(inputs=lambda rng, *, dtype, n: (np.ones(n, dtype),), sizes={"S": {"n": 4}})
    def local(xp, x):
        return x

    config = RunConfig.quick_settings(isolate=True)
    [planned] = plan_cases([local], config, resolve_devices([]))
    result = measure_guarded(planned, config)
    assert {m.status for m in result} == {Status.ERROR}
    assert "not defined in a suite file" in result[0].error.message


# --- child processes (one shared run: every child imports JAX afresh) -----------------------

ISOLATED_FAULTS = {
    "isolate-healthy-case": ("ok_double[S]", OK, ""),
    "isolate-child-aborts": ("aborts[S]", all_modes("error"), "child process died with SIGABRT"),
    "isolate-hang-killed-by-timeout": (
        "hangs[S]",
        all_modes("timeout"),
        "case exceeded --timeout 4 s; child process killed",
    ),
}


@pytest.fixture(scope="module")
def isolated_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, Run]:
    out = tmp_path_factory.mktemp("isolated")
    started = time.monotonic()
    result = invoke(
        "run", *QUICK, "--out", out, "--isolate", "--timeout", "4", "ok_double", "aborts", "hangs"
    )
    elapsed = time.monotonic() - started
    assert elapsed < 120, f"isolated run took {elapsed:.0f} s"
    return result, load_run(run_files(out)[0])


@pytest.mark.parametrize("name", list(ISOLATED_FAULTS))
def test_fault_matrix_isolated(name: str, isolated_run: tuple[object, Run]) -> None:
    result, run = isolated_run
    label, expected, message = ISOLATED_FAULTS[name]
    assert result.exit_code == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert run.complete and run.config.settings.isolate is True
    table = statuses(run)
    assert list(table) == ["ok_double[S]", "aborts[S]", "hangs[S]"]  # nothing lost, in order
    assert table[label] == expected
    for m in run.measurements:
        if f"{m.case.workload}[{m.case.size}]" == label and message:
            assert m.error is not None and m.error.message == message
            assert m.error.hint
        if m.status is Status.OK:
            assert m.samples_s and m.case.platform == "cpu"  # measured in the child, sent back


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
    info = isolate._death_message(exitcode)
    assert info.message == message and hint in info.hint


# --- real signals to a real `jitbench run` --------------------------------------------------


def _start_run(out: Path, *args: str, tag: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu", "JITBENCH_TEST_TAG": tag}
    # A job started in the background (CI, a non-interactive shell) inherits SIGINT
    # ignored, and so would the child; a terminal's Ctrl-C reaches a process whose SIGINT
    # is not ignored. A Python-level handler becomes SIG_DFL across exec, so install one
    # while starting the child (no preexec_fn: forking a process that runs JAX is unsafe).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
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
    # The case in which the signal arrived finishes; nothing after it is measured.
    assert not partial.complete
    assert {m.case.workload for m in partial.measurements} == {"sigterm_swallowed"}
