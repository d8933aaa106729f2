"""`jitbench.profile` (library) and `jitbench profile` (CLI, as a real subprocess)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jitbench.adapters.profiling import profile_to_dict, profile_workload
from jitbench.config import SamplingPlan
from jitbench.errors import ConfigError
from jitbench.results import Mode, Status
from jitbench.suite.discovery import discover
from tests.faults import invoke

SUITES = Path(__file__).resolve().parents[2] / "suites"
FAST = SamplingPlan(
    min_sample_s=0.001, warmup_s=0.0, min_samples=3, max_samples=5, precision=0.05, budget_s=0.02
)


def test_profile_of_the_faq_function() -> None:
    wl = discover([SUITES]).get("centred_product")
    p = profile_workload(wl, size="n=30", plan=FAST, keep_text=True)
    assert p.case.size == "n=30" and p.case.params == {"n": 30}
    assert [m.mode for m in p.run.measurements] == [Mode.NUMPY, Mode.EAGER, Mode.JIT]
    assert all(m.status is Status.OK for m in p.run.measurements)
    c = p.jit_compile
    assert c is not None and c.compile_count == 1 and c.jaxpr_eqn_count
    assert c.flops is not None and abs(c.flops - 2 * 30**3) / (2 * 30**3) < 0.1
    assert p.eager_compile is not None and p.eager_compile.compile_count >= 2  # op by op
    assert p.jaxpr_text and "dot_general" in p.jaxpr_text
    assert p.hlo_text and "HloModule" in p.hlo_text

    d = profile_to_dict(p)
    text = json.dumps(d, allow_nan=False)  # strict JSON: no NaN or Infinity
    assert json.loads(text)["workload"]["name"] == "centred_product"
    assert d["jit_compile"]["total_compile_s"] == pytest.approx(c.total_compile_s)
    assert d["eager_first_call"]["compile_count"] == p.eager_compile.compile_count
    assert d["derived"]["achieved_flops_per_s"] == pytest.approx(c.flops / p.get(Mode.JIT).median_s)
    assert set(d["modes"]) == {"numpy", "eager", "jit"}
    assert d["jaxpr"] == p.jaxpr_text


def test_profile_measures_with_the_run_default_threads_and_records_them() -> None:
    wl = discover([SUITES]).get("selu")
    p = profile_workload(wl, size="n=1000", plan=FAST)
    threads = p.run.environment["threads"]
    assert threads["requested"] == 1 and len(threads["cores"]) == 1
    assert p.run.config.settings is not None and p.run.config.settings.threads == 1
    free = profile_workload(wl, size="n=1000", plan=FAST, threads=None)
    assert free.run.environment["threads"]["requested"] is None


def test_profile_of_a_traced_branch_keeps_the_error_and_its_code() -> None:
    wl = discover([SUITES / "pitfalls.py"]).get("branch_on_value")
    p = profile_workload(wl, plan=FAST, keep_text=True)
    jit = p.get(Mode.JIT)
    assert jit is not None and jit.status is Status.ERROR
    assert jit.error is not None and jit.error.type == "TracerBoolConversionError"
    assert ("jit", "traced-control-flow") in [(m.value, d.code) for m, d in p.diagnostics]
    assert p.text_error is not None and p.jaxpr_text is None
    d = profile_to_dict(p)
    assert d["derived"]["break_even_calls"] is None and d["derived"]["jit_pays_off"] is None
    json.dumps(d, allow_nan=False)


@pytest.mark.parametrize(
    ("size", "nearest"), [("n=10000000000", "n=10000000"), ("n=12345", "n=10000"), ("s", "S")]
)
def test_unknown_size_suggests_close_names(size: str, nearest: str) -> None:
    wl = discover([SUITES]).get("selu")
    with pytest.raises(ConfigError, match=rf"unknown size '{size}'; did you mean '{nearest}'\?"):
        profile_workload(wl, size=size, plan=FAST)


# A fresh `jitbench profile` process on the default suite: end-to-end (-m e2e). How long
# it takes is a figure to print (docs/guide/profiling.md), not something a test asserts.
@pytest.mark.e2e
def test_cli_profile_prints_the_whole_breakdown(cli) -> None:  # type: ignore[no-untyped-def]
    proc = cli("profile", "selu")
    assert proc.returncode == 0, proc.stderr
    for section in (
        "profile selu",
        "trace",
        "lower",
        "compile",
        "jaxpr equations",
        "HLO fingerprint",
        "flops",
        "bytes accessed",
        "GFLOP/s",
        "break-even",
        "eager first call",
        "compiles (one per primitive)",
        "steady state",
        "numpy",
        "eager",
        "jit",
        "diagnostics",
    ):
        assert section in proc.stdout, (section, proc.stdout)


def test_cli_profile_ir_and_json() -> None:
    # In this process (the real one above shows the whole breakdown): JAX is imported.
    proc = invoke("profile", "log2", "--jaxpr", "--hlo", "--budget", "0.05")
    assert proc.exit_code == 0, proc.stderr
    assert "{ lambda" in proc.stdout and "log" in proc.stdout
    assert "HloModule jit_log2" in proc.stdout or "HloModule" in proc.stdout
    breakdown = proc.stdout[: proc.stdout.index("{ lambda")]
    assert "steady state" in breakdown and "compiles in first call" in breakdown
    assert all(line == line.rstrip() for line in breakdown.splitlines())  # piped: no padding

    # A pitfall that is cheap to compile (unrolled_loop's 1000-equation jaxpr took 5 s of
    # the default tier; tests/test_pitfalls.py checks large-jaxpr on a run).
    proc = invoke(
        "profile",
        "numpy_float64",
        "--suite",
        str(SUITES / "pitfalls.py"),
        "--json",
        "--budget",
        "0.05",
    )
    assert proc.exit_code == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert d["jit_compile"]["jaxpr_eqn_count"] >= 1
    assert "numpy-float64" in [x["code"] for x in d["diagnostics"]]
    assert d["jaxpr"] is None  # only with --jaxpr


def test_cli_profile_bad_name_exits_2_with_a_suggestion() -> None:
    proc = invoke("profile", "selj")
    assert proc.exit_code == 2, (proc.stdout, proc.stderr)
    assert "did you mean 'selu'" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("profile", "selu", "--size", "XL"), "unknown size 'XL'"),
        (("profile", "selu", "--device", "cpux"), "did you mean 'cpu'"),
        (("profile", "unrolled_loop"), "unknown workload 'unrolled_loop'"),  # needs --suite
        (("profile", "selu", "--budget", "0"), "--budget must be positive"),
    ],
)
def test_cli_profile_bad_input_exits_2(args, needle, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from jitbench.cli import app

    monkeypatch.chdir(SUITES.parent)
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 2, result.output
    assert needle in result.output


def test_profile_samples_to_the_run_precision_and_shows_the_transfer() -> None:
    from jitbench.adapters.profiling import PROFILE_PLAN
    from jitbench.cli.profile import PROFILE_BUDGET_S, profile_renderable
    from jitbench.render.layout import plain_text

    assert PROFILE_PLAN.precision == SamplingPlan().precision  # ±1 %, as `jitbench run`
    assert PROFILE_PLAN.budget_s == PROFILE_BUDGET_S  # what `profile --help` says
    steps: list[str] = []
    wl = discover([SUITES]).get("selu")
    p = profile_workload(wl, size="n=1000", plan=FAST, report=lambda s, _f: steps.append(s))
    assert {"inputs", "jit compile", "eager first call", "sampling"} <= set(steps)
    assert p.transfer_s is not None and p.transfer_s > 0 and p.transfer_bytes == 4000
    assert profile_to_dict(p)["transfer"] == {"seconds": p.transfer_s, "bytes": 4000}
    assert p.transfer_back_s is not None and p.transfer_back_s > 0
    assert p.transfer_back_bytes == 4000  # selu's output: as many float32s as its input
    assert profile_to_dict(p)["transfer_back"] == {"seconds": p.transfer_back_s, "bytes": 4000}
    text = plain_text(profile_renderable(p), 100)
    assert "transfer of the inputs" in text and "3.91 KiB" in text
    assert "copy of jit's first output to the host" in text
    # JAX's CPU backend keeps no allocator figures: no device-memory section, no guess.
    assert p.device_peak is None and profile_to_dict(p)["device_peak"] is None
    assert "device memory" not in text
    # Where the device has them (a GPU), the section shows the peak, "≤" for a bound.
    from dataclasses import replace

    bound = {"device_peak_bytes": 3 << 20, "device_peak_exact": False}
    gpu = replace(p, run=replace(p.run, measurements=tuple(
        m if m.mode is Mode.NUMPY else replace(m, **bound) for m in p.run.measurements
    )))  # fmt: skip
    assert gpu.device_peak == (3 << 20, False)
    assert profile_to_dict(gpu)["device_peak"] == {"bytes": 3 << 20, "exact": False}
    assert "≤ 3 MiB" in plain_text(profile_renderable(gpu), 100)


FAILING_SUITE = """
from jitbench import workload


def vec(rng, *, dtype, n):
    return (rng.standard_normal(n).astype(dtype),)


@workload(inputs=vec, sizes={"S": {"n": 8}})
def raises(xp, x):
    raise ValueError("boom from the workload")


@workload(inputs=vec, sizes={"S": {"n": 8}})
def branches(xp, x):
    return x if x[0] > 0 else -x
"""


@pytest.fixture
def failing_suite(tmp_path: Path) -> Path:
    path = tmp_path / "failing.py"
    path.write_text(FAILING_SUITE)
    return path


def test_cli_profile_where_every_mode_fails_says_so_and_exits_1(failing_suite: Path) -> None:
    proc = invoke("profile", "raises", "--suite", failing_suite, "--budget", "0.02")
    assert proc.exit_code == 1, (proc.stdout, proc.stderr)
    stdout = " ".join(proc.stdout.split())
    assert "failed • numpy, eager and jit error: ValueError: boom from the workload" in stdout
    assert proc.stderr.strip() == (
        "error: profile of raises failed in every mode: error: ValueError: boom from the workload"
    )
    as_json = invoke("profile", "raises", "--suite", failing_suite, "--budget", "0.02", "--json")
    assert as_json.exit_code == 1 and "failed in every mode" in as_json.stderr
    data = json.loads(as_json.stdout)
    assert data["failed"] == ["numpy", "eager", "jit"]
    assert {m["status"] for m in data["modes"].values()} == {"error"}


def test_cli_profile_where_one_mode_fails_shows_the_rest_and_exits_1(failing_suite: Path) -> None:
    proc = invoke("profile", "branches", "--suite", failing_suite, "--budget", "0.02")
    assert proc.exit_code == 1, (proc.stdout, proc.stderr)
    assert "steady state" in proc.stdout and "jit traced-control-flow" in proc.stdout
    assert proc.stderr.startswith(
        "error: profile of branches failed in jit: error: TracerBoolConversionError"
    )
    assert len(proc.stderr.strip().splitlines()) == 1


def test_cli_profile_of_a_mismatch_gives_the_fix_from_its_diagnostic() -> None:
    """A mismatch carries no error; its hint sits on its diagnostic, and the failed
    section printed none for it."""
    proc = invoke(
        "profile", "impure_global", "--suite", str(SUITES / "pitfalls.py"), "--budget", "0.02"
    )
    assert proc.exit_code == 1, (proc.stdout, proc.stderr)
    failed = proc.stdout.split("\nfailed\n", 1)[1].split("\ndiagnostics\n", 1)[0]
    assert "fix: jit runs the Python body once, at trace time" in " ".join(failed.split())
