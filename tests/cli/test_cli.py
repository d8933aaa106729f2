"""The command line as users drive it: exit codes, output, files on disk; in this process
(`run_cli_here`), the real processes' twins in the e2e tier."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from jitbench import load_run
from jitbench.cli import app
from tests.conftest import ONE_PROCESS, run_cli_here


@pytest.fixture(scope="module")
def tiny_run_result(tmp_path_factory):
    from tests.conftest import TINY_SUITE

    root = tmp_path_factory.mktemp("cli")
    suite = root / "tiny.py"
    suite.write_text(TINY_SUITE)
    plain = run_cli_here("run", "--quick", "--suite", str(suite), "--out", str(root / "out"))
    strict = run_cli_here(
        "run",
        "--quick",
        "--strict",
        "--suite",
        str(suite),
        "-k",
        "broken",
        "--out",
        str(root / "strict"),
    )
    return root, plain, strict


def test_run_writes_a_loadable_run_and_exits_0(tiny_run_result):
    root, result, _ = tiny_run_result
    assert result.returncode == 0, result.stderr
    [path] = (root / "out" / "runs").glob("*.json")
    run = load_run(path)
    assert run.complete and {m.case.workload for m in run.measurements} == {
        "double",
        "wrong_in_jit",
        "value_branch",
    }
    assert "run saved to" in result.stdout and "double" in result.stdout
    # A smoke run's noise probe is a short one, before and after.
    from jitbench.measure.machine import QUICK_PROBE_SAMPLES

    for when in ("machine_before", "machine_after"):
        assert len(run.environment[when]["probe_samples_s"]) == QUICK_PROBE_SAMPLES
    # Problems are listed with their hint on stderr.
    assert "mismatch" in result.stderr and "TracerBoolConversionError" in result.stderr


def test_strict_exits_1_on_errors_and_mismatches(tiny_run_result):
    _, _, strict = tiny_run_result
    assert strict.returncode == 1, strict.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "nosuchwork"], "unknown workload 'nosuchwork'"),
        (["run", "selux"], "did you mean 'selu'"),
        (["run", "--suite", "does/not/exist"], "does not exist"),
        (["run", "--modes", "jitt"], "unknown mode 'jitt'; did you mean 'jit'"),
        (["run", "--sizes", "XXL", "selu"], "unknown size 'XXL'"),
        (["run", "--sizes", "s", "selu"], "unknown size 's'; did you mean 'S'?"),
        (["run", "--devices", "tpu:7", "selu"], "unknown device 'tpu:7'"),
        (["run", "--setting", "precision=5", "selu"], "--setting precision is a fraction"),
        (["run", "--setting", "seed=x", "selu"], "--setting seed= takes an integer"),
        (["run", "--setting", "precison=0.1", "selu"], "did you mean 'precision'"),
        (["run", "--setting", "rounds=2", "selu"], "rounds has an option of its own: --rounds"),
        (["run", "--setting", "precision", "selu"], "--setting takes NAME=VALUE"),
        (["run", "--distributed", "--process-id", "2/2", "selu"], "--process-id takes I/N"),
        (["run", "--process-id", "0/2", "selu"], "--process-id goes with --distributed"),
        (["run", "--rounds", "0", "selu"], "--rounds must be at least 1"),
        (["compare", "a.json", "b.json", "--p-adjust", "holm"], "--p-adjust is one of bh, none"),
        (["compare", "a.json", "b.json", "--disturbed-factor", "0.5"], "--disturbed-factor is 0"),
    ],
)
def test_bad_usage_exits_2_with_one_line_cause(args, message):
    # In this process (a real one below): each costs JAX's import where it is a subprocess.
    result = CliRunner().invoke(app, [*args, *(ONE_PROCESS if args[0] == "run" else ())])
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert message in result.stderr
    # In process a crash is an exception the runner caught, not a traceback on stderr.
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.e2e
def test_bad_usage_in_a_real_process_exits_2_with_one_line_cause(cli):
    result = cli("run", "--devices", "tpu:7", "selu")
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "unknown device 'tpu:7'" in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_broken_suite_only_exits_2_and_names_file_and_line(tmp_path):
    (tmp_path / "broken.py").write_text("import jitbench\n\n1 / 0\n")
    result = run_cli_here("run", "--quick", "--suite", str(tmp_path))
    assert result.returncode == 2
    assert "broken.py:3: ZeroDivisionError" in result.stderr
    assert "no workloads to run" in result.stderr


def test_list_json_and_keyword(tiny_suite):
    runner = CliRunner()
    result = runner.invoke(app, ["list", "--json", "--suite", str(tiny_suite), "-k", "broken"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [w["name"] for w in data] == ["wrong_in_jit", "value_branch"]
    assert data[0]["tags"] == ["tiny", "broken"] and data[0]["sizes"] == {"S": {"n": 64}}


@pytest.mark.parametrize("as_json", [(), ("--json",)])
def test_list_matching_nothing_exits_2_as_run_does(tiny_suite, as_json):
    runner = CliRunner()
    listed = runner.invoke(app, ["list", "--suite", str(tiny_suite), "-k", "bogus", *as_json])
    ran = runner.invoke(app, ["run", "--suite", str(tiny_suite), "-k", "bogus", *ONE_PROCESS])
    assert listed.exit_code == ran.exit_code == 2
    assert listed.stdout == ""  # no empty table
    assert listed.stderr.strip() == (
        "error: no workloads matching -k 'bogus' to list; drop -k to list every workload."
    )
    assert "no workloads matching -k 'bogus' to run" in ran.stderr


def test_list_default_suite_table():
    result = CliRunner().invoke(app, ["list"])
    assert result.exit_code == 0
    for name in ("selu", "centred_product", "log2", "logsumexp", "jacobi2d"):
        assert name in result.output


def test_env_json_describes_devices():
    result = CliRunner().invoke(app, ["env", "--json"])
    assert result.exit_code == 0
    env = json.loads(result.output)
    assert env["backend"] == "cpu" and env["devices"][0]["label"] == "cpu:0"
    assert env["backend_error"] is None
    assert env["versions"]["jax"]


@pytest.mark.e2e  # JAX_PLATFORMS acts when JAX starts: a process of its own, as `run`'s twin
@pytest.mark.parametrize(("platform", "as_json"), [("tpu", False), ("cuda", True)])
def test_env_without_a_backend_shows_the_rest_says_why_and_exits_2(cli, platform, as_json):
    # A real process: JAX picks its platforms once per process.
    result = cli("env", *(["--json"] if as_json else []), env={"JAX_PLATFORMS": platform})
    assert result.returncode == 2, (result.stdout, result.stderr)
    why = f"error: JAX cannot start any backend (JAX_PLATFORMS='{platform}'): "
    assert result.stderr.startswith(why), result.stderr
    assert f"it asks for {platform}, and JAX cannot start {platform} here" in result.stderr
    assert "this machine has cpu: set JAX_PLATFORMS=cpu" in result.stderr
    assert "Traceback" not in result.stderr
    if as_json:
        env = json.loads(result.stdout)
        assert env["backend"] is None and env["devices"] == []
        assert env["backend_error"].startswith(why.removeprefix("error: "))
        assert env["thread_settings"]["allowed_cores"] and env["machine"]["probe_samples_s"]
    else:
        for row in ("backend", "numpy", "allowed cores", "blas pool", "machine"):
            assert row in result.stdout, row


@pytest.fixture(scope="module")
def double_run(tmp_path_factory):
    """One real `run double --quick --rounds 3 --threads 1` (in this process), shared by the
    rounds and the threads test: each reads its own part of it. (`--threads 1` is the
    default, spelled out here; a run of its own for each measured it again for nothing.)"""
    from tests.conftest import TINY_SUITE

    root = tmp_path_factory.mktemp("double")
    suite = root / "tiny.py"
    suite.write_text(TINY_SUITE)
    result = run_cli_here(
        "run", "--quick", "--rounds", "3", "--threads", "1",
        "--suite", str(suite), "-k", "double", "--out", str(root / "out"),
    )  # fmt: skip
    return root / "out", result


@pytest.fixture(scope="module")
def double_split_run(tmp_path_factory):
    """One real `run double --quick -m numpy,jit --setting time_split=true --threads all`
    (in this process), shared by the time-split and the `--threads all` test."""
    from tests.conftest import TINY_SUITE

    root = tmp_path_factory.mktemp("split")
    suite = root / "tiny.py"
    suite.write_text(TINY_SUITE)
    result = run_cli_here(
        "run", "double", "--quick", "-m", "numpy,jit", "--setting", "time_split=true",
        "--threads", "all",
        "--suite", str(suite), "--out", str(root / "out"),
    )  # fmt: skip
    return root / "out", result


def test_rounds_are_recorded_and_reported(double_run):
    tmp_path, result = double_run
    assert result.returncode == 0, result.stderr
    assert "sampling round 2/3" in result.stderr and "sampling round 3/3" in result.stderr
    [path] = (tmp_path / "runs").glob("*.json")
    run = load_run(path)
    assert run.complete and run.config.settings.plan.rounds == 3
    jit = [m for m in run.measurements if m.mode.value == "jit"]
    assert jit and all(len(m.compile.compile_repeats_s) == 3 for m in jit)
    assert all(len(m.samples_s) >= 3 for m in run.measurements)


def test_command_modules_import_only_common_and_options_from_the_cli(repo):
    """No hidden cycle: `jitbench.cli` imports the command modules, which register on
    `cli.common.app` and import nothing else from the package."""
    import ast

    # Shared helpers: the app and error boundary, options, output (files, comparisons),
    # and a command's own: revisions (`ab`'s sides), run_options and progress (`run`'s).
    shared = ("common", "options", "output", "revisions", "run_options", "progress")
    allowed = {f"jitbench.cli.{name}" for name in shared}
    for path in sorted((repo / "jitbench" / "cli").glob("*.py")):
        if path.name == "__init__.py" or path.stem in shared:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("jitbench.cli"):
                assert node.module in allowed, f"{path.name} imports {node.module}"


def test_run_threads_1_records_the_thread_state_and_the_banner_follows_the_machine(
    double_run,
):
    from jitbench.results.analysis import machine

    tmp_path, result = double_run
    assert result.returncode == 0, result.stderr
    [path] = (tmp_path / "runs").glob("*.json")
    run = load_run(path)
    threads = run.environment["threads"]
    assert threads["requested"] == 1 and len(threads["cores"]) == 1 and threads["pinned"]
    assert threads["blas"] and all(b["num_threads"] == 1 for b in threads["blas"])
    assert run.config.settings.threads == 1
    for key in ("machine_before", "machine_after"):
        state = machine.from_environment(run.environment, key)
        assert state is not None and state.cores_used == 1 and state.probe is not None
    # The table's title names the setting; the banner is there exactly when a snapshot says
    # the machine was busy or noisy (this shared machine may be either).
    core = threads["cores"][0]
    assert f"· 1 thread (core {core}; openblas 1)" in result.stdout
    banner = machine.banner(run.environment)
    if banner is None:
        assert "machine (" not in result.stdout
    else:
        first = result.stdout.splitlines()[0]
        assert first.startswith("⚠ ") and "noise floor ±" in first
        assert first[2:].startswith(banner[:40])


def test_run_threads_all_keeps_the_libraries_defaults(double_split_run):
    tmp_path, result = double_split_run
    assert result.returncode == 0, result.stderr
    [path] = (tmp_path / "runs").glob("*.json")
    run = load_run(path)
    assert run.environment["threads"]["requested"] is None
    assert run.config.settings.threads is None
    assert "library defaults on" in result.stdout


def test_env_shows_blas_pools_cores_xla_thread_flags_and_the_machine(monkeypatch):
    result = CliRunner().invoke(app, ["env"])
    assert result.exit_code == 0, result.output
    for row in ("allowed cores", "blas pool", "XLA thread flags", "machine", "--threads 1"):
        assert row in result.output, row
    data = json.loads(CliRunner().invoke(app, ["env", "--json"]).output)
    assert data["thread_settings"]["allowed_cores"] and "blas" in data["thread_settings"]
    assert data["machine"]["probe_samples_s"]
    # Only the thread-related XLA flags and variables are picked out (read, never applied:
    # this process's backend is not restarted).
    from jitbench.measure import environment

    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false --xla_dump_hlo_as_text")
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    settings = environment.thread_settings()
    assert settings["xla_thread_flags"] == ["--xla_cpu_multi_thread_eigen=false"]
    assert settings["env"]["OPENBLAS_NUM_THREADS"] == "1"


def test_run_time_split_records_and_shows_host_and_device_time(double_split_run):
    tmp_path, result = double_split_run
    assert result.returncode == 0, result.stderr
    [path] = (tmp_path / "runs").glob("*.json")
    run = load_run(path)
    assert run.config.settings.time_split
    by_mode = {m.mode.value: m for m in run.measurements}
    split = by_mode["jit"].time_split
    assert by_mode["numpy"].time_split is None  # host code: nothing to split
    assert split is not None and split.calls == 5
    assert split.wall_s > 0 and split.host_s > 0 and split.device_s >= 0
    page = path.with_suffix(".html").read_text()
    assert "jit host · device" in page
    assert "host_dispatch_s" in path.with_suffix(".csv").read_text().splitlines()[0]


def test_time_split_must_be_a_flag() -> None:
    from jitbench.config import RunConfig
    from jitbench.errors import ConfigError

    with pytest.raises(ConfigError, match="--setting time_split is a flag"):
        RunConfig(time_split="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["run", "--quick", "--out", ""], "--out"),
        (["run", "--out=", "--quick"], "--out"),
        (["run", "--suite", "", "--quick"], "--suite"),
        (["report", ""], "RUNS"),
        (["compare", "a.json", ""], "NEW"),
        (["ab", "--python-base", ""], "--python-base"),
        (["bisect", "HEAD~1", "HEAD", "--json", ""], "--json"),
    ],
)
def test_an_empty_path_is_refused_before_the_command_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], named: str
) -> None:
    """Path('') is the working folder: `--out ''` wrote the index, history and plotly.js
    there; `--python-base ''` took this Python."""
    from tests.faults import invoke

    monkeypatch.chdir(tmp_path)
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {named} was given an empty path ('')")
    assert len(result.stderr.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--quick", "N" * 100_000],
        ["run", "--quick", "-k", "K" * 100_000],
        ["run", "--quick", "-s", "S" * 100_000],
        ["run", "--quick", "--suite", "P" * 100_000],
        ["compare", "B" * 100_000, "N" * 100_000],
    ],
    ids=["name", "keyword", "size", "suite-path", "compare-paths"],
)
def test_a_100_kb_value_is_quoted_short_in_its_error(tmp_path: Path, monkeypatch, args) -> None:
    from tests.faults import invoke

    monkeypatch.chdir(tmp_path)
    result = invoke(*args, *(["--out", str(tmp_path / "o")] if args[0] == "run" else []))
    assert result.exit_code == 2, result.stderr[:300]
    assert result.stderr.startswith("error: ") and len(result.stderr) < 800, result.stderr[:800]
    assert "internal error" not in result.stderr
