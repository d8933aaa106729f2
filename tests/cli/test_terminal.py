"""The command line in a terminal and in a pipe (issue 20): tables that fit 80 and 120
columns in a real pseudo-terminal, plain piped output that respects $COLUMNS, help with
defaults and examples, and a start that imports no JAX."""

from __future__ import annotations

import csv
import fcntl
import io
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import textwrap
from pathlib import Path

import pytest
from rich.cells import cell_len
from typer.testing import CliRunner

from jitbench.cli import app
from tests.conftest import REPO, TINY_SUITE

FIXTURE = REPO / "tests" / "results" / "fixtures" / "run-schema-1.3.json"
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][0-9A-B]")


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu", "TERM": "xterm"}
    env.pop("COLUMNS", None)
    env.pop("NO_COLOR", None)
    return {**env, **extra}


def in_pty(args: list[str], columns: int, *, cwd: Path, timeout: float = 240) -> tuple[int, str]:
    """Run `python -m jitbench ARGS` with a pseudo-terminal `columns` wide as its stdin,
    stdout and stderr; its exit code and what the terminal showed (escape codes removed;
    for a line redrawn with carriage returns, what was left on it)."""
    main, side = pty.openpty()
    fcntl.ioctl(side, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "jitbench", *args],
        stdin=side,
        stdout=side,
        stderr=side,
        cwd=cwd,
        env=_env(),
        start_new_session=True,
    )
    os.close(side)
    chunks = []
    try:
        while True:
            ready, _, _ = select.select([main], [], [], timeout)
            if not ready:
                proc.kill()
                raise AssertionError(f"jitbench {args} showed nothing for {timeout} s")
            try:
                data = os.read(main, 65536)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        code = proc.wait(timeout)
        os.close(main)
    text = ANSI.sub("", b"".join(chunks).decode("utf-8", "replace"))
    # A terminal ends lines with \r\n; a bare \r redraws the line (the progress bar).
    lines = [line.rstrip("\r").split("\r")[-1] for line in text.split("\n")]
    return code, "\n".join(lines)


def _check_fits(text: str, columns: int) -> None:
    assert "…" not in text, text
    too_wide = [line for line in text.splitlines() if cell_len(line) > columns]
    assert not too_wide, "\n".join(too_wide)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("terminal")
    (root / "tiny.py").write_text(TINY_SUITE)
    return root


@pytest.mark.e2e
@pytest.mark.parametrize("columns", [80, 120])
def test_run_in_a_terminal_fits_and_cuts_nothing(tiny: Path, columns: int) -> None:
    code, shown = in_pty(
        ["run", "--quick", "--suite", "tiny.py", "--out", f"out{columns}"], columns, cwd=tiny
    )
    assert code == 0, shown
    _check_fits(shown, columns)
    table = shown[shown.index("jitbench run 2") :]
    for name in ("double S", "wrong_in_jit S", "value_branch S"):
        assert name in table, table
    assert "mismatch" in table and "error" in table  # failed modes show their status
    assert "transfer" in table or "H→D" in table


@pytest.mark.e2e  # a real process in a pseudo-terminal
@pytest.mark.parametrize("columns", [80, 120])
def test_compare_in_a_terminal_fits_and_cuts_nothing(columns: int) -> None:
    code, shown = in_pty(["compare", str(FIXTURE), str(FIXTURE)], columns, cwd=REPO)
    assert code == 0, shown
    _check_fits(shown, columns)
    assert "double S jit" in shown and "pass:" in shown


@pytest.mark.e2e  # a real process in a pseudo-terminal
@pytest.mark.parametrize(
    "args",
    [["report", str(FIXTURE)], ["compare", str(FIXTURE), str(FIXTURE)]],
    ids=["report", "compare"],
)
def test_the_wide_table_in_a_narrow_terminal_cuts_nothing(args: list[str]) -> None:
    """`--format wide` is every column at its natural width: in an 80-column terminal its
    lines run past the edge (the terminal wraps them), and no figure is cut to "…"."""
    code, shown = in_pty([*args, "--format", "wide"], 80, cwd=REPO)
    assert code == 0, shown
    assert "…" not in shown, shown
    assert max(cell_len(line) for line in shown.splitlines()) > 80
    header = next(line for line in shown.splitlines() if "workload" in line)
    for column in ("size", "device", "jit compile" if args[0] == "report" else "verdict"):
        assert column in header, header


@pytest.mark.e2e
def test_piped_output_respects_columns_and_has_no_padding() -> None:
    def piped(*args: str, **env: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "jitbench", *args],
            capture_output=True,
            text=True,
            env=_env(**env),
            cwd=REPO,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    narrow = piped("compare", str(FIXTURE), str(FIXTURE), COLUMNS="80")
    _check_fits(narrow, 80)
    natural = piped("compare", str(FIXTURE), str(FIXTURE))
    for text in (narrow, natural):
        assert "\x1b[" not in text  # no colour codes in a pipe
        assert all(line == line.rstrip() for line in text.splitlines())  # no padding
    assert max(map(len, natural.splitlines())) > 80  # no $COLUMNS: nothing wraps


def test_compare_formats_for_machines() -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["compare", str(FIXTURE), str(FIXTURE), "--format", "csv"])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert {r["mode"] for r in rows} == {"numpy", "eager", "jit"}
    assert all(r["verdict"] == "unchanged" for r in rows)
    result = runner.invoke(app, ["compare", str(FIXTURE), str(FIXTURE), "--format", "markdown"])
    assert result.exit_code == 0 and result.stdout.startswith("## ✅ jitbench regression gate")


def test_help_shows_defaults_and_examples_in_a_sensible_order() -> None:
    runner = CliRunner()
    top = runner.invoke(app, ["--help"]).output
    listed = re.findall(r"^  (\w+) ", top[top.index("Commands:") :], flags=re.M)
    assert listed == [
        "run", "list", "profile", "report", "history", "compare", "ab", "bisect", "env"
    ]  # fmt: skip
    for command in listed:
        text = runner.invoke(app, [command, "--help"], terminal_width=100).output
        assert "<bool>" not in text, command
        assert "Examples:" in text and f"jitbench {command}" in text, command
    run_help = " ".join(runner.invoke(app, ["run", "--help"], terminal_width=200).output.split())
    for default in (
        "--budget SECONDS",
        "[default: (0.2; --quick: 0.02)]",
        "precision=0.02 (stop sampling at ±2 %; default ±1%)",
        "[default: (S,M; --quick: S)]",
        "[default: (numpy,eager,jit)]",
        "[default: (10; --quick: 3)]",
    ):
        assert default in run_help, default


@pytest.mark.e2e
def test_starting_the_command_line_imports_no_jax() -> None:
    """`import jitbench.cli`, `--help`, `report --markdown` and `compare` import no JAX
    (and `--help` no NumPy, SciPy or plotly either): they start at once."""
    script = textwrap.dedent(
        f"""
        import sys
        import jitbench.cli
        from jitbench.cli import app

        def run(*args):
            try:
                app(list(args), standalone_mode=False)
            except SystemExit:
                pass

        heavy = ("jax", "numpy", "scipy", "plotly", "jinja2")
        assert not [m for m in heavy if m in sys.modules], "import jitbench.cli"
        run("--help")
        for command in ("run", "list", "profile", "report", "compare", "env"):
            run(command, "--help")
        assert not [m for m in heavy if m in sys.modules], "--help"
        run("report", {str(FIXTURE)!r}, "--markdown", "-")
        assert not [m for m in ("jax", "scipy", "plotly") if m in sys.modules], "report"
        run("compare", {str(FIXTURE)!r}, {str(FIXTURE)!r})
        assert "jax" not in sys.modules and "plotly" not in sys.modules, "compare"
        print("ok")
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=_env(), timeout=120
    )
    assert proc.returncode == 0 and proc.stdout.endswith("ok\n"), proc.stderr + proc.stdout


def test_report_prints_a_runs_table_again_in_every_format() -> None:
    # In this process: what a pipe gets (no terminal), without a JAX start per format.
    def piped(*args: str, **env: str) -> str:
        result = CliRunner().invoke(
            app, ["report", str(FIXTURE), *args], env={"COLUMNS": None, "NO_COLOR": None, **env}
        )
        assert result.exit_code == 0, result.output
        return result.stdout

    table = piped("--format", "table", COLUMNS="80")
    _check_fits(table, 80)
    assert "double S" in table and "cumulative S" in table
    assert all(line == line.rstrip() for line in table.splitlines())
    wide = piped("--format", "wide", COLUMNS="80")  # every column, nothing cut
    assert "GFLOP/s" in wide and "workload" in wide and "…" not in wide
    assert max(cell_len(line) for line in wide.splitlines()) > 80
    rows = list(csv.DictReader(io.StringIO(piped("--format", "csv"))))
    assert [r["workload"] for r in rows] == ["double", "cumulative"]
    assert piped("--format", "markdown").startswith("| workload | size |")
