"""`jitbench run` with faults (issue 8): the fault-injection matrix on tests/fault_suite.py,
one injected fault per entry, checks the documented exit code, the one-line message and that
the results file is valid and holds every case measured before the fault. The CLI runs in
this process (fast)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from jitbench.results import Status, load_run
from tests.faults import OK, QUICK, all_modes, invoke, run_files, statuses


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
        3,  # a broken workload: it fails in NumPy too
        {"ok_double[S]": OK, "inputs_raise[S]": all_modes("error")},
        "raised by the input function of 'inputs_raise'",
    ),
    "output-is-a-string": Fault(
        ("ok_double", "returns_string"),
        3,  # a broken workload: it fails in NumPy too
        {"ok_double[S]": OK, "returns_string[S]": all_modes("error")},
        "returned a str ('not an array') where an array was expected",
    ),
    "output-is-none": Fault(
        ("ok_double", "returns_none"),
        0,
        # A NumPy side may return None (it may write into its arguments): it is timed, and
        # with nothing to compare its JAX sides' None is the error.
        {"ok_double[S]": OK, "returns_none[S]": {"numpy": "ok", "eager": "error", "jit": "error"}},
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
        3,  # a broken workload: it fails in NumPy too
        {"ok_double[S]": OK, "too_big[S]": OK, "too_big[XXL]": all_modes("error")},
        "does not fit in memory",
    ),
    "size-does-not-fit-jax": Fault(
        ("ok_double", "jax_oom"),
        0,
        {"ok_double[S]": OK, "jax_oom[S]": {"numpy": "ok", "eager": "error", "jit": "error"}},
        "RESOURCE_EXHAUSTED",
    ),
    "output-is-a-generator": Fault(
        ("ok_double", "returns_generator"),
        3,  # a broken workload: it fails in NumPy too
        {"ok_double[S]": OK, "returns_generator[S]": all_modes("error")},
        "generator",
    ),
    "negative-size": Fault(
        ("ok_double", "too_big", "-s", "S,NEG"),
        3,  # a broken workload: it fails in NumPy too
        {"ok_double[S]": OK, "too_big[S]": OK, "too_big[NEG]": all_modes("error")},
        "negative",
    ),
    "workload-calls-sys-exit": Fault(
        ("ok_double", "calls_exit", "ok_double", "-s", "S,M"),
        3,  # a broken workload: it fails in NumPy too
        {"ok_double[S]": OK, "ok_double[M]": OK, "calls_exit[S]": all_modes("error")},
        "called sys.exit()",
    ),
    "hang-cut-by-timeout-in-process": Fault(
        ("ok_double", "hangs", "--timeout", "3"),
        0,
        {"ok_double[S]": OK, "hangs[S]": all_modes("timeout")},
        "exceeded --timeout 3 s",
    ),
    "strict-with-a-failed-case": Fault(
        ("ok_double", "returns_none", "--strict"),
        1,
        {"ok_double[S]": OK, "returns_none[S]": {"numpy": "ok", "eager": "error", "jit": "error"}},
        "exit 1 (--strict): 2 measurement(s) failed or mismatched.",
    ),
    "unknown-workload": Fault(("ok_doubel",), 2, {}, "did you mean 'ok_double'"),
    "unknown-size": Fault(("ok_double", "-s", "XL"), 2, {}, "unknown size 'XL'"),
    "retry-without-timeout": Fault(
        ("ok_double", "--setting", "retry_timeouts=true"),
        2,
        {},
        "retry_timeouts=true measures again",
    ),
    "allow-changed-without-resume": Fault(
        ("ok_double", "--allow-changed-suites"), 2, {}, "goes with --resume"
    ),
    "empty-size": Fault(("ok_double", "-s", ""), 2, {}, "--sizes was given an empty value"),
    "empty-modes": Fault(("ok_double", "-m", ","), 2, {}, "--modes was given an empty value"),
    "unknown-mode": Fault(("ok_double", "-m", "jitt"), 2, {}, "did you mean 'jit'"),
    "unknown-device": Fault(("ok_double", "-d", "tpu"), 2, {}, "unknown device 'tpu'"),
    "bad-timeout-value": Fault(("ok_double", "--timeout", "0"), 2, {}, "--timeout is a positive"),
}


# The hang waits out its --timeout: end-to-end (-m e2e), as in the isolated matrix.
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.e2e) if name.startswith("hang") else name
        for name in IN_PROCESS_FAULTS
    ],
)
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
    assert result.exit_code == 3  # a broken workload, said so in one line
    broken = [line for line in result.stderr.splitlines() if "broken workload:" in line]
    assert len(broken) == 1 and "too_big[XXL]" in broken[0]
    run = load_run(run_files(tmp_path)[0])
    for m in run.measurements:
        assert m.error is not None and m.error.hint, m
    assert "hint:" in result.stderr


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


def test_all_nan_output_is_ok_with_a_diagnostic(tmp_path: Path) -> None:
    result = invoke("run", *QUICK, "--out", tmp_path, "all_nan")
    assert result.exit_code == 0, result.stderr
    run = load_run(run_files(tmp_path)[0])
    for m in run.measurements:
        assert [d.code for d in m.diagnostics if d.code == "no-finite-output"], m
    assert "no-finite-output" in " ".join(result.stderr.split())


@pytest.mark.e2e
def test_a_segfault_without_isolate_names_the_case(tmp_path: Path) -> None:
    from tests.conftest import run_cli

    result = run_cli("run", *QUICK, "--out", str(tmp_path), "ok_double", "segfaults")
    assert result.returncode == -11, result.stderr  # the process died: nothing to catch
    # The last line before the crash names the case, so the user knows which one it was.
    started = [line for line in result.stderr.splitlines() if "…" in line]
    assert started and "segfaults[S] cpu:0 float32" in started[-1], result.stderr


@pytest.mark.e2e
def test_output_piped_to_a_closed_reader_stops_quietly(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from tests.faults import REPO

    env = {**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu"}
    command = [sys.executable, "-m", "jitbench", "run", *QUICK, "--out", str(tmp_path)]
    with subprocess.Popen(
        [*command, "ok_double"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # like `| head -0`: the reader is gone before the table
        stderr = proc.stderr.read()
        proc.wait(timeout=300)
    assert proc.returncode == 141, stderr
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr
    [path] = run_files(tmp_path)
    assert load_run(path).complete and path.with_suffix(".html").is_file()
    assert (tmp_path / "index.html").is_file()


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("redirect", "env"),
    [
        (">&-", {}),  # stdout closed, as some CI runners and daemons leave it
        ("", {"LC_ALL": "POSIX", "LANG": "POSIX", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}),
    ],
    ids=["stdout-closed", "ascii-locale"],
)
def test_hostile_standard_streams_still_finish_the_run(
    redirect: str, env: dict[str, str], tmp_path: Path
) -> None:
    import os
    import shlex
    import subprocess
    import sys

    from tests.faults import REPO

    command = [sys.executable, "-m", "jitbench", "run", *QUICK, "--out", str(tmp_path), "ok_double"]
    proc = subprocess.run(
        ["bash", "-c", f"{shlex.join(command)} {redirect}"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu", **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    [path] = run_files(tmp_path)
    assert load_run(path).complete and path.with_suffix(".html").is_file()


@pytest.mark.e2e
def test_xla_flags_xla_cannot_parse_are_a_one_line_error(tmp_path: Path) -> None:
    """XLA aborts a process on such flags (94 lines of its fatal log, exit 1): a child
    probe finds them first."""
    from tests.conftest import run_cli

    flags = "--xla_force_host_platform_device_count=abc"
    for args in (("run", *QUICK, "--out", str(tmp_path), "ok_double"), ("env",)):
        result = run_cli(*args, env={"XLA_FLAGS": flags})
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith(f"error: XLA_FLAGS='{flags}' is refused by XLA: ")
        assert "Couldn't interpret value abc" in result.stderr
        assert len(result.stderr.splitlines()) == 1, result.stderr
    assert run_files(tmp_path) == []


@pytest.mark.e2e
def test_a_platform_jax_cannot_start_is_a_one_line_error(tmp_path: Path) -> None:
    from tests.conftest import run_cli

    result = run_cli(
        "run", *QUICK, "--out", str(tmp_path), "ok_double", env={"JAX_PLATFORMS": "tpu"}
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: JAX cannot start any backend")
    assert "JAX_PLATFORMS" in result.stderr and "internal error" not in result.stderr
    assert run_files(tmp_path) == []


@pytest.mark.parametrize("table_format", ["csv", "markdown"])
def test_a_machine_format_leaves_stdout_to_the_runs_table(
    table_format: str, tmp_path: Path
) -> None:
    """`--format csv|markdown` keeps stdout for the run's table alone: where the run went
    and its notes go to stderr, so `> run.csv` stays one table."""
    import csv

    result = invoke("run", *QUICK, "--out", tmp_path, "ok_double", "--format", table_format)
    assert result.exit_code == 0, result.stderr
    assert "run saved to" not in result.stdout and "run saved to" in result.stderr
    lines = result.stdout.splitlines()
    if table_format == "csv":
        rows = list(csv.reader(lines))
        assert rows[0][0] == "workload" and len(rows) == 2  # the header and the one case
        assert {len(row) for row in rows} == {len(rows[0])}
    else:  # the table, then (where a speedup is marked or left out) the legend under it
        prose = [line for line in lines if line and not line.startswith("|")]
        assert lines[0].startswith("|") and all("geometric means" in line for line in prose)
        assert len(prose) <= 1


def test_workloads_without_the_sizes_asked_for_are_named_as_left_out(
    tiny_suite: Path, tmp_path: Path
) -> None:
    """`-s M` measures the workloads that define M; the two that define only S are left
    out, and the run says which and what sizes they have, instead of dropping them
    without a word."""
    result = invoke(
        "run", "--suite", tiny_suite, "--quick", "-m", "numpy", "-s", "M",
        "--out", tmp_path, "--format", "csv",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    said = " ".join(result.stderr.split())
    assert "left out: wrong_in_jit (S), value_branch (S), defining none of the sizes" in said
    assert "asked for (M); add theirs to --sizes" in said
    [path] = run_files(tmp_path)
    assert set(statuses(load_run(path))) == {"double[M]"}


def test_a_run_that_measures_every_workload_leaves_nothing_out(
    tiny_suite: Path, tmp_path: Path
) -> None:
    result = invoke(
        "run", "--suite", tiny_suite, "--quick", "-m", "numpy", "-s", "S",
        "--out", tmp_path, "--format", "csv",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "left out" not in result.stderr


def test_format_wide_shows_the_full_table_at_its_natural_width(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--format wide`: the full table (every time, jit compile, GFLOP/s), nothing cut at
    60 columns, on stdout with the notes under it."""
    monkeypatch.setenv("COLUMNS", "60")
    result = invoke(
        "run", *QUICK, "-m", "numpy,jit", "--out", tmp_path, "ok_double", "--format", "wide"
    )
    assert result.exit_code == 0, result.stderr
    header = next(line for line in result.stdout.splitlines() if "workload" in line)
    assert "GFLOP/s" in header and "break-even" in header and "…" not in result.stdout
    assert "run saved to" in result.stdout


def test_clock_cpu_is_recorded_and_said_under_the_table(tmp_path: Path) -> None:
    """`--clock cpu` samples the process's CPU time: the run records it, every time is a
    positive number of seconds, and the footer says what the times count."""
    result = invoke("run", *QUICK, "--out", tmp_path, "--clock", "cpu", "ok_double")
    assert result.exit_code == 0, result.output
    [path] = run_files(tmp_path)
    run = load_run(path)
    assert run.config.settings is not None and run.config.settings.plan.clock == "cpu"
    assert all(m.samples_s and min(m.samples_s) > 0 for m in run.measurements)
    assert "measuring process's CPU time (--clock cpu" in " ".join(result.stdout.split())
    bad = invoke("run", *QUICK, "--out", tmp_path / "b", "--clock", "tsc", "ok_double")
    assert bad.exit_code == 2 and "--clock is one of wall, cpu" in bad.stderr


def test_a_run_keeps_its_programs_and_compare_diffs_a_changed_one(tmp_path: Path) -> None:
    """A run stores its jit programs beside its file; `compare BASE RUN` after it names
    the diff of a program that changed (here: the baseline's, edited) and writes it beside
    the run."""
    from dataclasses import replace

    from jitbench.results import Mode, load_programs, save_run
    from tests.gate.builders import with_program_text

    first = invoke("run", *QUICK, "-m", "numpy,jit", "--out", tmp_path, "ok_double")
    assert first.exit_code == 0, first.stderr
    [base] = run_files(tmp_path)
    [(key, text)] = load_programs(base).items()
    assert key.startswith("ok_double|") and key.endswith("|jit") and "HloModule m" in text
    edited = load_run(base)
    edited = replace(edited, measurements=tuple(
        replace(m, compile=replace(m.compile, program_fingerprint="0" * 16))
        if m.mode is Mode.JIT and m.compile is not None else m
        for m in edited.measurements
    ))  # fmt: skip
    old = tmp_path / "old" / "base.json"
    save_run(with_program_text(edited, text + "\n  %v99 = f32[] constant(0)"), old)
    second = invoke("run", *QUICK, "-m", "numpy,jit", "--out", tmp_path / "new", "ok_double")
    assert second.exit_code == 0, second.stderr
    [new] = run_files(tmp_path / "new")
    result = invoke("compare", old, new, "--allow-inconclusive")
    assert result.exit_code in (0, 1), result.stderr  # a quick run's timing may move
    said = " ".join((result.stdout + result.stderr).split())
    assert "program diff of ok_double" in said, said
    [diff] = (tmp_path / "new" / "runs").glob("*.diffs/*.diff")
    assert diff.read_text().startswith("--- jitbench program base ok_double")
