"""Helpers shared by the fault tests (issue 8): the fault suite, running `jitbench run` in
this process, and reading back what a run file holds."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner, Result

from jitbench.cli import app
from jitbench.results import Run

REPO = Path(__file__).resolve().parents[1]
FAULT_SUITE = Path(__file__).with_name("fault_suite.py")
QUICK = ("--suite", str(FAULT_SUITE), "--quick")
MODES = ("numpy", "eager", "jit")


def invoke(*args: object) -> Result:
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
