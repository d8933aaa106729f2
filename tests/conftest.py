"""Shared fixtures. JAX is pinned to the CPU so tests behave the same on every machine."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

# XLA's backend (LLVM) optimisations and its CPU fusion emitters off in the tests'
# processes and the ones they start (the legacy emitters compile a tiny program in half the
# time): most of a real-JAX test's CPU time was XLA compiling tiny programs, and no test
# needs them fast, only correct (`XLA_FLAGS` given in the environment wins). Marked
# checked, as `measure.devices.check_xla_flags` marks flags that parsed, so no process
# starts one more interpreter to check them; its own tests set their flags and marks.
if "XLA_FLAGS" not in os.environ:
    os.environ["XLA_FLAGS"] = (
        "--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false"
    )
    os.environ["JITBENCH_XLA_FLAGS_CHECKED"] = os.environ["XLA_FLAGS"]

# Where PYTHONDONTWRITEBYTECODE is set (as on this project's VMs), every Python the tests
# start compiled jitbench from source again (0.5-0.8 s of CPU apiece), and each xdist worker
# rewrote every test module's asserts again. They share one bytecode cache outside the
# checkout instead. Suite files are compiled from their text on every import
# (suite/discovery.py), so a suite edited within the same second still counts; NPBench
# kernels are imported through the import system (suite/npbench.py) and would not, so a
# test must not rewrite one at the same path and size within a second.
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None):
    os.environ.setdefault(
        "PYTHONPYCACHEPREFIX", str(Path(tempfile.gettempdir()) / f"jitbench-pycache-{os.getuid()}")
    )
    sys.dont_write_bytecode = False
    sys.pycache_prefix = os.environ["PYTHONPYCACHEPREFIX"]

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def repo() -> Path:
    return REPO


#: The noise probe's samples before and after each run the tests measure (see below).
TESTS_PROBE_SAMPLES = 3
#: The probe's loop in one sample (the default's tenth: about 0.5 ms).
TESTS_PROBE_LOOP = 10_000
#: The window that picks the least busy core for a one-thread run (the default's fifth).
TESTS_CORE_WINDOW_S = 0.01


@pytest.fixture(scope="session", autouse=True)
def short_noise_probe() -> Iterator[None]:
    """Every run measured in the tests' own processes takes a noise probe of
    `TESTS_PROBE_SAMPLES` samples of `TESTS_PROBE_LOOP` iterations before and after it, not
    `--quick`'s 8 or the default 20 of 100 000: at 5-15 ms a sample the probe was a third
    of a short run's time, in hundreds of runs. The probe still runs and is recorded (three
    samples give a robust CV); its own length and figures are tested in
    tests/measure/test_machine.py, and runs in fresh processes (the e2e tier) take the
    real one. The window that picks a one-thread run's core is as short (which core a
    test's run takes does not matter; a sleep of 50 ms per run did, in a hundred runs)."""
    from jitbench.measure import machine

    saved = (
        machine.PROBE_SAMPLES,
        machine.QUICK_PROBE_SAMPLES,
        machine.PROBE_LOOP,
        machine.CORE_WINDOW_S,
    )
    machine.PROBE_SAMPLES = machine.QUICK_PROBE_SAMPLES = TESTS_PROBE_SAMPLES
    machine.PROBE_LOOP, machine.CORE_WINDOW_S = TESTS_PROBE_LOOP, TESTS_CORE_WINDOW_S
    yield
    (
        machine.PROBE_SAMPLES,
        machine.QUICK_PROBE_SAMPLES,
        machine.PROBE_LOOP,
        machine.CORE_WINDOW_S,
    ) = saved


@pytest.fixture(scope="session", autouse=True)
def cli_built_once() -> Iterator[None]:
    """typer's `CliRunner.invoke(app)` builds the click command of `app` again on every
    call (13 ms: every command's signature and annotations read again), and the tests
    invoke the CLI some five hundred times. The command of each app is built once per
    session instead, by typer's own `get_command`, and invoked as before: the same click
    command, which keeps no state between invocations."""
    import typer.testing

    built: dict[int, tuple[object, object]] = {}
    get_command = typer.testing._get_command

    def once(app):  # type: ignore[no-untyped-def]
        if id(app) not in built:
            built[id(app)] = (app, get_command(app))  # the app kept: its id stays its own
        return built[id(app)][1]

    typer.testing._get_command = once
    yield
    typer.testing._get_command = get_command


@pytest.fixture(scope="session", autouse=True)
def every_run_written_agrees(tmp_path_factory: pytest.TempPathFactory):
    """After the session, every run file the tests wrote (under runs/ of their temporary
    folders) shows figures that agree in every format (`tests/agreement.py`). Files a test
    made unreadable on purpose are skipped: they are the fault tests' business."""
    yield
    from jitbench.errors import JitbenchError
    from jitbench.results import load_run
    from tests.agreement import CHECKS

    checked = 0
    for path in sorted(tmp_path_factory.getbasetemp().rglob("runs/*.json")):
        if path.is_symlink() or not path.is_file() or path.stat().st_size > 20_000_000:
            continue
        try:
            run = load_run(path)
        except (JitbenchError, OSError, ValueError):
            continue
        for check in CHECKS:
            check(run)
        checked += 1
    os.environ["JITBENCH_TESTS_RUNS_CHECKED"] = str(checked)


def run_cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run `python -m jitbench ARGS` as a real subprocess (the checkout's code, not an install)."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "jitbench", *args],
        cwd=cwd or REPO,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def cli():
    return run_cli


def run_cli_here(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`jitbench ARGS` in this process (in `cwd`, if given), its result read as `run_cli`'s
    (returncode, stdout, stderr apart): the same command without a fresh interpreter's
    start and JAX import, for the tests that read what a command did rather than how a
    process ends."""
    import contextlib

    from typer.testing import CliRunner

    from jitbench.cli import app

    with contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext():
        result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    return subprocess.CompletedProcess(
        ["jitbench", *args], result.exit_code, result.stdout, result.stderr
    )


@pytest.fixture
def cli_here():
    return run_cli_here


#: `jitbench run` in one process, for the tests not about processes: a run of the default
#: two starts the second early (a standby worker, a fresh interpreter), even one refused.
ONE_PROCESS = ("--processes", "1")


#: The variable `start_cli` tags a process and its children with (they inherit it).
CLI_TAG = "JITBENCH_TEST_TAG"


def start_cli(
    *args: str, cwd: Path, tag: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """`python -m jitbench ARGS` started in the background, its processes tagged with
    `tag` (see `tagged`), SIGINT not ignored (as under a terminal)."""
    full_env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "JAX_PLATFORMS": "cpu",
        CLI_TAG: tag,
        **(env or {}),
    }
    reset = (
        "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
        "os.execv(sys.executable, [sys.executable, '-m', 'jitbench', *sys.argv[1:]])"
    )
    return subprocess.Popen(
        [sys.executable, "-c", reset, *args],
        cwd=cwd,
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def tagged(tag: str) -> list[int]:
    """Live processes started by `start_cli(tag=tag)`, or by one of them."""
    pids = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if f"{CLI_TAG}={tag}".encode() in environ.read_bytes().split(b"\0"):
                pids.append(int(environ.parent.name))
        except OSError:
            pass
    return pids


TINY_SUITE = '''
from jitbench import workload

def vec(rng, *, dtype, n):
    return (rng.standard_normal(n).astype(dtype),)

@workload(inputs=vec, sizes={"S": {"n": 64}, "M": {"n": 256}}, tags=("tiny",))
def double(xp, x):
    """Double every element."""
    return 2 * x

@workload(inputs=vec, sizes={"S": {"n": 64}}, tags=("tiny", "broken"))
def wrong_in_jit(xp, x):
    """Right in NumPy, wrong in JAX: adds one on the JAX side only."""
    return x + (0 if xp.__name__ == "numpy" else 1)

@workload(inputs=vec, sizes={"S": {"n": 64}}, tags=("tiny", "broken"))
def value_branch(xp, x):
    """Python `if` on a traced value: fine in NumPy and eager, an error under jit."""
    if x.sum() > 0:
        return x
    return -x
'''


@pytest.fixture
def tiny_suite(tmp_path: Path) -> Path:
    path = tmp_path / "tiny_suite.py"
    path.write_text(TINY_SUITE)
    return path


def alarm_raises_inside_an_exit(expected: type[BaseException]) -> bool:
    """Call the SIGALRM handler now armed while a context manager exits (within
    contextlib's `__exit__`, where a time limit must not raise) and say whether it raised
    `expected` there."""
    import contextlib
    import signal

    raised: list[bool] = []

    @contextlib.contextmanager
    def exiting() -> Iterator[None]:
        try:
            yield
        finally:
            handler = signal.getsignal(signal.SIGALRM)
            assert callable(handler)
            try:
                handler(signal.SIGALRM, sys._getframe())
            except expected:
                raised.append(True)

    with exiting():
        pass
    return bool(raised)
