"""The markdown table of a run, and `jitbench report --markdown`."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from typer.testing import CliRunner

from jitbench.cli import app
from jitbench.render.run_markdown import run_markdown
from jitbench.results import ErrorInfo, Mode, Status, load_run

RUN_FILE = Path(__file__).resolve().parents[1] / "results" / "fixtures" / "run-schema-1.2.json"


def test_one_row_per_case_with_times_speedups_compile_and_break_even() -> None:
    run = load_run(RUN_FILE)
    lines = run_markdown(run).splitlines()
    assert lines[0].startswith("| workload | size | device | NumPy | eager | jit |")
    # the rows, then the line saying which speedups the geometric means leave out
    assert len(lines) == 2 + len(run.cases()) + 2 and lines[-2] == ""
    assert "wider than ×/÷ 1.5" in lines[-1] and lines[0].endswith("| notes |")
    row = next(line for line in lines if line.startswith("| `double`"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:3] == ["S (n=64)", "cpu:0"]
    assert all(c.endswith("s") for c in cells[3:6])  # three medians with units
    assert "×" in cells[6] and "[" in cells[7]  # speedups with intervals
    assert cells[8].endswith("ms") and cells[9]


def test_failed_mode_shows_its_status_and_hostile_names_are_escaped() -> None:
    run = load_run(RUN_FILE)
    broken = tuple(
        replace(
            m,
            case=replace(m.case, workload="a|b"),
            status=Status.ERROR if m.mode is Mode.JIT else m.status,
            samples_s=() if m.mode is Mode.JIT else m.samples_s,
            error=ErrorInfo(type="E", message="x") if m.mode is Mode.JIT else None,
        )
        for m in run.measurements
        if m.case.workload == "double"
    )
    text = run_markdown(replace(run, measurements=broken))
    assert "| a\\|b |" in text  # no code span: a pipe ends a cell even in one
    row = text.splitlines()[2]
    assert len(re.findall(r"(?<!\\)\|", row)) == 12  # the name's pipe adds no cell
    assert "| error |" in row


def test_sizes_filter() -> None:
    assert len(run_markdown(load_run(RUN_FILE), sizes=("M",)).splitlines()) == 2


def test_cli_report_markdown_to_stdout_and_file(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["report", str(RUN_FILE), "--markdown", "-"])
    assert result.exit_code == 0, result.output
    assert result.output == run_markdown(load_run(RUN_FILE))
    target = tmp_path / "table.md"
    result = runner.invoke(
        app, ["report", str(RUN_FILE), "--markdown", str(target), "--out", str(tmp_path / "h")]
    )
    assert result.exit_code == 0, result.output
    assert target.read_text() == run_markdown(load_run(RUN_FILE))
    assert not (tmp_path / "h").exists()  # markdown instead of HTML


def test_a_suspect_speedup_is_marked_and_explained() -> None:
    from jitbench.results import Case, Measurement, Run
    from jitbench.results.analysis import judgement

    def gemm(size: str, mode: Mode, median: float, nbytes: int) -> Measurement:
        case = Case(workload="gemm", size=size, device="cpu:0", dtype="float32", input_bytes=nbytes)
        samples = tuple(median * (0.99 + 0.02 * i / 11) for i in range(12))
        return Measurement(case=case, mode=mode, status=Status.OK, samples_s=samples)

    ms = (
        gemm("S", Mode.NUMPY, 49.5e-3, 980_000),
        gemm("S", Mode.JIT, 4.5e-3, 980_000),
        gemm("M", Mode.NUMPY, 45.6e-3, 3_920_000),
        gemm("M", Mode.JIT, 22.8e-3, 3_920_000),
    )
    run = Run(
        run_id="r", started_at="t", finished_at="t", complete=True, environment={}, config={},
        measurements=ms,
    )  # fmt: skip
    text = run_markdown(judgement.run_diagnostics(run))
    s_row = next(line for line in text.splitlines() if line.startswith("| `gemm` | S"))
    m_row = next(line for line in text.splitlines() if line.startswith("| `gemm` | M"))
    assert "11× [" in s_row and "] ⚠ |" in s_row and "⚠" not in m_row
    assert "⚠ slower than a larger size (a stall)" in text.rstrip().splitlines()[-1]
    assert "⚠" not in run_markdown(run)  # without the diagnostic nothing is marked
