"""`jitbench compare` on real runs and on bad input, and `run … && compare` as a gate.

The real runs measure a tiny suite whose amount of work is set by an environment variable,
so the same case key can do more work. The runs of one comparison are measured at the same
time (concurrent subprocesses): on a shared machine whose load drifts from one second to the
next, that gives both sides the same conditions, as interleaving does in CI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from jitbench import Mode, RunConfig, run
from jitbench.cli import app
from jitbench.results import dump_run, load_run, save_run

REPO = Path(__file__).resolve().parents[2]

GATE_SUITE = '''
import os
from jitbench import workload

STEPS = int(os.environ.get("JITBENCH_TEST_STEPS", "20"))

def chain(rng, *, dtype, n, steps):
    x = rng.standard_normal((n, n)).astype(dtype)
    w = (rng.standard_normal((n, n)) / n ** 0.5).astype(dtype)
    return {"x": x, "w": w, "steps": steps}

@workload(inputs=chain, sizes={"S": {"n": 64, "steps": STEPS}}, static_argnames=("steps",),
          tags=("gate",))
def busy(xp, x, w, *, steps):
    """`steps` dependent matrix products: the work grows linearly with steps."""
    for _ in range(steps):
        x = xp.tanh(x @ w)
    return x
'''

# 25 samples per mode: Mann–Whitney needs at least 5 per side to ever reach p < 0.01, and
# many more to see a real change through the noise of a busy shared machine. A loose
# precision target stops sampling right there; the budget only caps a very busy machine.
# The runs are measured at the same time on purpose (drift hits them alike), so they keep
# the OS's balancing over every core (--threads all): pinned, three runs on two cores would
# share them unevenly, one alone and two on the other. One process each: the tests take
# one process's samples apart (the A/A halves), and three runs already share the cores.
RUN_ARGS = (
    "--processes",
    "1",
    "--threads",
    "all",
    "-s",
    "S",
    "--modes",
    "numpy,jit",
    "--min-samples",
    "25",
    "--setting",
    "precision=0.5",
    "--budget",
    "20",
)


def _start_run(suite: Path, out: Path, steps: int) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "JAX_PLATFORMS": "cpu",
        "JITBENCH_TEST_STEPS": str(steps),
    }
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jitbench",
            "run",
            "--suite",
            str(suite),
            "--out",
            str(out),
            *RUN_ARGS,
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _run_file(out: Path) -> Path:
    (path,) = (out / "runs").glob("*.json")
    return path


def _measure_together(root: Path, suite: Path, steps: dict[str, int]) -> dict[str, Path]:
    """Real runs of the gate suite, one per name, measured at the same time."""
    procs = {name: _start_run(suite, root / name, n) for name, n in steps.items()}
    for name, p in procs.items():
        stdout, stderr = p.communicate(timeout=300)
        assert p.returncode == 0, f"run {name} failed:\n{stdout}\n{stderr}"
    return {name: _run_file(root / name) for name in procs}


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory) -> dict[str, Path]:
    """Two real runs measured at the same time: base, and ten times the work. Two fresh
    `jitbench run` processes, so the tests that read them are end-to-end (-m e2e); the
    gate's judgement itself is tested in process in tests/gate.

    Ten times, not a subtle change: the two runs start together but need not end together,
    and on a busy 2-core box one run's samples can all fall in a contended stretch (seen in
    CI: 2.5 times the work measured 23 % *faster*, base samples 0.6 and 1.7 ms apart).
    """
    root = tmp_path_factory.mktemp("gate")
    suite = root / "gate_suite.py"
    suite.write_text(GATE_SUITE)
    runs = _measure_together(root, suite, {"a": 20, "slow": 200})
    return {"suite": suite, "root": root, **runs}


def _samples(path: Path) -> str:
    run = load_run(path)
    return "\n".join(
        f"{m.case.label} {m.mode.value}: {[f'{s:.3g}' for s in m.samples_s]}"
        for m in run.measurements
    )


@pytest.mark.e2e
def test_real_runs_have_enough_samples_to_be_significant(real_runs):
    for name in ("a", "slow"):
        for m in load_run(real_runs[name]).measurements:
            assert m.ok, f"{name}: {m.status}"
            assert len(m.samples_s) >= 25, _samples(real_runs[name])


@pytest.mark.e2e
def test_a_a_comparison_of_real_runs_flags_nothing(real_runs, tmp_path, cli):
    """Real samples, no real change: the even and the odd rounds of one real run, compared.

    Both halves come from the same process and the same seconds, so what differs between
    them is measurement noise alone (two whole runs side by side on a busy 2-core machine
    also differ by the machine's drift, up to 2x here: that false-alarm rate is a figure of
    `tools/gate_check.py`, not a unit test). Compile time is one cold sample per run, so
    its gate is exercised on constructed runs (tests/gate), not here.
    """
    run = load_run(real_runs["a"])
    halves = []
    for parity in (0, 1):
        ms = tuple(replace(m, samples_s=m.samples_s[parity::2]) for m in run.measurements)
        path = tmp_path / f"half{parity}.json"
        save_run(replace(run, run_id=f"half{parity}", measurements=ms), path)
        halves.append(path)
    md = tmp_path / "aa.md"
    proc = cli(
        "compare", str(halves[0]), str(halves[1]), "--markdown", str(md), "--compile-floor", "1"
    )
    assert proc.returncode == 0, f"{proc.stdout}\n{_samples(real_runs['a'])}"
    assert "no regression" in md.read_text().splitlines()[0]


@pytest.mark.e2e
def test_real_slowdown_is_a_regression_with_exit_1(real_runs, tmp_path, cli):
    md, js = tmp_path / "slow.md", tmp_path / "slow.json"
    proc = cli(
        "compare",
        str(real_runs["a"]),
        str(real_runs["slow"]),
        "--markdown",
        str(md),
        "--json",
        str(js),
    )
    detail = (
        f"{proc.stdout}\n{proc.stderr}\nbase:\n{_samples(real_runs['a'])}\n"
        f"new:\n{_samples(real_runs['slow'])}"
    )
    assert proc.returncode == 1, detail
    assert "busy" in md.read_text().splitlines()[0], detail
    data = json.loads(js.read_text())
    assert data["regressed_workloads"] == ["busy"]
    numpy_entry = next(e for e in data["entries"] if e["mode"] == "numpy")
    assert numpy_entry["verdict"] == "regression", detail
    assert numpy_entry["ratio"] > 1.3 and numpy_entry["p_value"] < 0.01
    assert "steps 20→200" in numpy_entry["note"]
    assert "regressed: busy" in proc.stdout


@pytest.mark.e2e
def test_a_run_then_compare_fails_on_regression(real_runs, tmp_path, cli):
    """The CI gate: `jitbench run … --out head/ && jitbench compare BASE head/`. Ten times
    the work, measured alone, not beside the baseline, so it must stand out of whatever
    the machine's load did in between."""
    head = tmp_path / "head"
    proc = cli(
        "run",
        "--suite",
        str(real_runs["suite"]),
        "--out",
        str(head),
        *RUN_ARGS,
        env={"JITBENCH_TEST_STEPS": "200"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = cli("compare", str(real_runs["a"]), str(head))  # a folder side: its runs/
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "regressed: busy" in proc.stdout


# --- bad input: exit 2 --------------------------------------------------------------------

runner = CliRunner()


@pytest.fixture(scope="module")
def good_run(tmp_path_factory) -> Path:
    """A real (quick, NumPy-only) run file to corrupt: measured once for the module, as
    every test only reads it (each writes its corrupted copies into its own tmp_path)."""
    from tests.conftest import TINY_SUITE

    root = tmp_path_factory.mktemp("good")
    suite = root / "tiny_suite.py"
    suite.write_text(TINY_SUITE)
    r = run(["double"], suites=[suite], config=RunConfig.quick_settings(modes=(Mode.NUMPY,)))
    path = root / "good.json"
    path.write_text(dump_run(r))
    return path


def _bad_file(kind: str, good: Path, tmp_path: Path) -> Path:
    text = good.read_text()
    bad = tmp_path / f"{kind}.json"
    if kind == "missing":
        return tmp_path / "does-not-exist.json"
    if kind == "truncated":
        bad.write_text(text[: len(text) // 2])
    elif kind == "not_json":
        bad.write_text("selu,1.2ms\nlog2,3.4ms\n")
    elif kind == "other_json":
        bad.write_text(json.dumps({"benchmarks": [{"name": "x", "stats": {"mean": 1.0}}]}))
    elif kind == "newer_schema":
        data = json.loads(text)
        data["schema_version"] = "2.0"
        bad.write_text(json.dumps(data))
    elif kind == "invalid_content":
        data = json.loads(text)
        data["measurements"][0]["mode"] = "warp-drive"
        bad.write_text(json.dumps(data))
    return bad


BAD_KINDS = ["missing", "truncated", "not_json", "other_json", "newer_schema", "invalid_content"]


@pytest.mark.parametrize("kind", BAD_KINDS)
def test_compare_bad_input_exits_2(kind, good_run, tmp_path):
    bad = _bad_file(kind, good_run, tmp_path)
    for args in ((str(good_run), str(bad)), (str(bad), str(good_run))):
        result = runner.invoke(app, ["compare", *args])
        assert result.exit_code == 2, result.output
        assert "error:" in result.output


@pytest.mark.e2e
def test_compare_bad_input_exits_2_as_a_subprocess(good_run, tmp_path, cli):
    bad = _bad_file("truncated", good_run, tmp_path)
    proc = cli("compare", str(good_run), str(bad))
    assert proc.returncode == 2
    assert "not valid JSON" in proc.stderr


def test_compare_same_file_passes_and_writes_outputs(good_run, tmp_path):
    md, js = tmp_path / "out.md", tmp_path / "out.json"
    result = runner.invoke(
        app, ["compare", str(good_run), str(good_run), "--markdown", str(md), "--json", str(js)]
    )
    assert result.exit_code == 0, result.output
    assert md.read_text().startswith("## ✅")
    assert json.loads(js.read_text())["has_regression"] is False


@pytest.mark.parametrize("option", ["--markdown", "--json", "--html"])
def test_an_output_that_cannot_be_written_is_refused_before_anything_is_read(option, tmp_path):
    """It used to be found after measuring (`--rev`: minutes), turning a verdict into exit
    2, with "File exists" and a hint at --out for a path under a file."""
    (tmp_path / "afile").write_text("x")
    missing = tmp_path / "no-such-run.json"  # never read: the output fails first
    result = runner.invoke(
        app, ["compare", str(missing), str(missing), option, str(tmp_path / "afile" / "x")]
    )
    assert result.exit_code == 2, result.output
    message = " ".join(result.output.split())
    assert "afile' is a file, not a folder; give a path whose folders are folders" in message
    assert "no-such-run" not in message
    folder = runner.invoke(app, ["compare", str(missing), str(missing), option, str(tmp_path)])
    assert folder.exit_code == 2 and "is a folder; give a file name" in folder.output


def test_an_html_page_has_no_stdout_form(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["compare", "a.json", "b.json", "--html", "-"])
    assert result.exit_code == 2
    assert "--html writes a page and plotly.js beside it" in " ".join(result.output.split())
    assert list(tmp_path.iterdir()) == []  # no file named '-', no plotly.js


def test_compare_markdown_to_stdout(good_run):
    result = runner.invoke(app, ["compare", str(good_run), str(good_run), "--markdown", "-"])
    assert result.exit_code == 0
    assert "## ✅ jitbench regression gate" in result.stdout


def test_compare_bad_threshold_exits_2(good_run):
    result = runner.invoke(app, ["compare", str(good_run), str(good_run), "--threshold", "0.9"])
    assert result.exit_code == 2
    assert "--threshold" in result.output


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--threshold", "nan"),
        ("--threshold", "inf"),
        ("--threshold", "-1.2"),
        ("--threshold", "0.95"),
        ("--alpha", "nan"),
        ("--alpha", "inf"),
        ("--alpha", "-0.01"),
        ("--compile-threshold", "nan"),
        ("--compile-threshold", "0.8"),
        ("--compile-floor", "inf"),
        ("--compile-floor", "-0.5"),
        ("--disturbed-factor", "nan"),
        ("--disturbed-factor", "inf"),
        ("--disturbed-factor", "-2"),
    ],
)
def test_compare_bad_option_exits_2_with_one_line_before_reading_files(option, value, tmp_path):
    # The files do not exist: the option is refused first, by the library's own check.
    missing = [str(tmp_path / "base.json"), str(tmp_path / "new.json")]
    result = runner.invoke(app, ["compare", *missing, option, value])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"error: {option} is ") and f"got {float(value)!r}." in lines[0]
    assert "does not exist" not in result.output and "Traceback" not in result.output


@pytest.mark.e2e
def test_compare_bad_option_is_one_line_on_stderr_as_a_subprocess(cli):
    proc = cli("compare", "base.json", "new.json", "--alpha", "nan")
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "error: --alpha is a significance level between 0 and 1 such as 0.01, got nan."
    )
    assert proc.stdout == ""


@pytest.mark.parametrize(
    ("args", "instead"),
    [
        (["--baseline", "base.json"], "jitbench compare"),
        (["--fail-on-regression"], "jitbench compare"),
        (["--allow-inconclusive"], "jitbench compare"),
        (["--precision", "0.02"], "--setting precision=VALUE"),
        (["--seed=3"], "--setting seed=VALUE"),
        (["--sweep"], "--setting sweep=true"),
        (["--time-split"], "--setting time_split=true"),
        (["--retry-timeouts"], "--setting retry_timeouts=true"),
        (["--wide"], "--format wide"),
        (["--coordinator", "h:1"], "JAX_COORDINATOR_ADDRESS"),
        (["--num-processes", "2"], "--process-id I/N"),
    ],
)
def test_an_option_run_no_longer_takes_names_its_replacement(args, instead, tmp_path):
    """One line naming what to type instead, exit 2, nothing measured."""
    out = tmp_path / "reports"
    result = runner.invoke(app, ["run", "double", "--quick", "--out", str(out), *args])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: jitbench run {args[0].split('=')[0]} ")
    assert instead in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize("command", [["compare", "a.json", "b.json"], ["ab"], ["report", "a.json"]])
def test_wide_is_a_format_in_every_command(command, tmp_path):
    """`--wide` is `--format wide` in `run`, `report`, `compare` and `ab` alike: the old
    option is one line naming it, exit 2, before any file is read."""
    result = runner.invoke(app, [*command, "--wide"])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == f"error: jitbench {command[0]} --wide is `--format wide` now."


def test_a_gate_that_compared_nothing_exits_2(good_run, tmp_path, tiny_suite):
    """The baseline measured `double` at S, this run at M: with nothing in common
    the gate would pass, having checked nothing."""
    args = ["run", "--suite", str(tiny_suite), "double", "-s", "M", "-m", "numpy", "--quick"]
    assert runner.invoke(app, [*args, "--out", str(tmp_path / "r")]).exit_code == 0
    gated = runner.invoke(app, ["compare", str(good_run), str(tmp_path / "r")])
    assert gated.exit_code == 2, gated.output
    assert "the gate compared nothing, so it checked nothing" in " ".join(gated.output.split())


def test_stored_runs_of_one_interleaved_comparison_are_judged_on_their_pairs(
    tmp_path: Path,
) -> None:
    """`jitbench compare base.json new.json` on the two files `jitbench ab` saved uses
    the paired test again, not the test for runs taken apart."""
    from tests.gate.builders import make_run, meas

    def config(side: str, partner: str) -> dict:
        return {"plan": {"budget_s": 1.0}, "interleaved": {"side": side, "partner_run_id": partner}}

    samples = tuple(1e-3 * (1 + 0.01 * i) for i in range(12))
    base = make_run(meas(samples=samples), run_id="b", config=config("base", "n"))
    new = make_run(meas(samples=samples), run_id="n", config=config("new", "b"))
    save_run(base, tmp_path / "b.json")
    save_run(new, tmp_path / "n.json")
    result = CliRunner().invoke(
        app, ["compare", str(tmp_path / "b.json"), str(tmp_path / "n.json"), "--json", "-"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout[result.stdout.index("{") :])
    assert data["entries"][0]["test"] == "paired rounds: signed-rank"


def test_fail_on_program_gates_a_changed_program(tmp_path: Path) -> None:
    """The 1.8 fixture against itself with jit's programs recompiled differently (more
    bytes accessed): reported by default, a failure with --fail-on program."""
    fixtures = Path(__file__).resolve().parents[1] / "results" / "fixtures"
    base = load_run(fixtures / "run-schema-1.8.json")
    changed = replace(
        base,
        run_id="changed",
        measurements=tuple(
            replace(
                m,
                compile=replace(
                    m.compile,
                    program_fingerprint="0" * 16,
                    bytes_accessed=(m.compile.bytes_accessed or 1.0) * 2,
                ),
            )
            if m.mode is Mode.JIT and m.compile is not None
            else m
            for m in base.measurements
        ),
    )
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(dump_run(base))
    b.write_text(dump_run(changed))
    runner = CliRunner()
    reported = runner.invoke(
        app, ["compare", str(a), str(b), "--format", "wide", "--allow-inconclusive"]
    )
    assert "program changed: bytes accessed +100 %" in reported.output, reported.output
    gated = runner.invoke(
        app, ["compare", str(a), str(b), "--fail-on", "program", "--allow-inconclusive"]
    )
    assert gated.exit_code == 1, gated.output
    bad = runner.invoke(app, ["compare", str(a), str(b), "--fail-on", "programs"])
    assert bad.exit_code == 2 and "did you mean 'program'" in bad.output


@pytest.mark.e2e
def test_metrics_only_flags_a_changed_program_and_passes_renamed_code(tmp_path: Path) -> None:
    """Two revisions of the default suite compiled, not sampled: selu through float16 fails
    the gate naming what moved; selu with renamed parameters and a comment passes."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
    from program_gate_check import scratch_repository, trial

    repo = scratch_repository(tmp_path)
    code, _, moved = trial(repo, "defeat", tmp_path / "defeat")
    assert code == 1 and moved == ["selu jit: +2 convert, flops +40 %"]
    code, _, moved = trial(repo, "names", tmp_path / "names")
    assert code == 0 and moved == []


# --- the revision A/B is `jitbench ab`: the old `compare --rev` spelling points there ------


@pytest.mark.parametrize("option", ["--rev", "--rev-new", "--python-base", "--python-new"])
def test_compare_rev_names_ab_in_one_line(option: str) -> None:
    result = CliRunner().invoke(app, ["compare", option, "main"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: jitbench compare {option} is gone")
    assert "`jitbench ab`" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_compare_takes_no_measuring_options(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["compare", "a.json", "b.json", "--budget", "2"])
    assert result.exit_code == 2 and "--budget" in result.output, result.output
    help_text = CliRunner().invoke(app, ["compare", "--help"]).output
    assert "--rev" not in help_text and "--budget" not in help_text


def test_ab_needs_its_sides_and_refuses_a_bad_output_first(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["ab"])
    assert result.exit_code == 2 and "--rev BASE" in result.output, result.output
    result = CliRunner().invoke(app, ["ab", "--rev", "main", "--html", "-"])
    assert result.exit_code == 2 and "needs a file name" in result.output, result.output
    result = CliRunner().invoke(app, ["ab", "--rev", "main"])
    assert result.exit_code == 2 and "git repository" in result.output, result.output
    assert "jitbench ab" not in result.output.split("error:")[0]  # no pointer: this is ab


def test_a_changed_programs_diff_is_written_and_named_in_every_format(tmp_path: Path) -> None:
    """Stored runs with their programs beside them: the changed jit programs' diffs go to
    files beside the new run, named after the table, previewed under --format wide, listed in the
    markdown and shown folded on the HTML page; unchanged programs get none."""
    from tests.gate.builders import with_program_text

    fixtures = Path(__file__).resolve().parents[1] / "results" / "fixtures"
    base = load_run(fixtures / "run-schema-1.8.json")
    text = "HloModule m\n\nENTRY %v0 {\n  ROOT %v1 = f32[8] add(%v2, %v3)\n}\n"
    changed = replace(
        base,
        run_id="changed",
        measurements=tuple(
            replace(m, compile=replace(m.compile, program_fingerprint="0" * 16))
            if m.mode is Mode.JIT and m.compile is not None
            else m
            for m in base.measurements
        ),
    )
    a, b = tmp_path / "a" / "a.json", tmp_path / "b" / "b.json"
    save_run(with_program_text(base, text), a)
    save_run(with_program_text(changed, text.replace("add", "multiply")), b)
    runner = CliRunner()
    md, page = tmp_path / "gate.md", tmp_path / "gate.html"
    args = ["compare", str(a), str(b), "--allow-inconclusive", "--markdown", str(md)]
    result = runner.invoke(app, [*args, "--html", str(page), "--format", "wide"])
    assert result.exit_code == 0, result.output
    diffs = sorted((tmp_path / "b").glob("*.diffs/*.diff"))
    jit_cases = [m for m in changed.measurements if m.mode is Mode.JIT and m.compile]
    assert diffs and len(diffs) == len(jit_cases)
    assert diffs[0].read_text().startswith("--- jitbench program base ")
    assert "-  ROOT %v1 = f32[8] add(%v2, %v3)" in diffs[0].read_text()
    assert result.output.count("program diff of ") == len(diffs)
    assert "+  ROOT %v1 = f32[8] multiply(%v2, %v3)" in result.output  # wide: a preview
    assert "### Program diffs" in md.read_text() and diffs[0].name in md.read_text()
    html = page.read_text()
    assert 'class="program-diff"' in html and "f32[8] multiply(%v2, %v3)" in html
    compact = runner.invoke(app, args[:4])
    assert "program diff of " in compact.output and "+  ROOT" not in compact.output
    same = runner.invoke(app, ["compare", str(a), str(a), "--allow-inconclusive"])
    assert "program diff" not in same.output


@pytest.mark.parametrize(
    ("option", "needle"),
    [
        ("--pairs=0", "--pairs must be at least 1"),
        ("--budget=nan", "--budget must be positive and finite"),
        ("--budget=0", "--budget must be positive and finite"),
        ("--compiles=0", "--compiles must be at least 1"),
    ],
)
def test_ab_refuses_a_bad_amount_before_measuring(option: str, needle: str) -> None:
    import sys

    result = CliRunner().invoke(app, ["ab", "--python-base", sys.executable, option])
    assert result.exit_code == 2 and needle in result.output, result.output
    assert "internal error" not in result.output
