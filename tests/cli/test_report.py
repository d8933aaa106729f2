"""`jitbench report` printing tables: the size filter in every format, and options that
cannot go together refused in one line."""

from __future__ import annotations

import csv
import io
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from jitbench.cli import app
from jitbench.results import load_run, save_run
from tests.conftest import REPO

FIXTURE = REPO / "tests" / "results" / "fixtures" / "run-schema-1.3.json"


@pytest.fixture(scope="module")
def two_sizes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture run (double and cumulative at S) with each case measured at M too."""
    run = load_run(FIXTURE)
    at_m = [replace(m, case=replace(m.case, size="M")) for m in run.measurements]
    path = tmp_path_factory.mktemp("report") / "two-sizes.json"
    return save_run(replace(run, measurements=(*run.measurements, *at_m)), path)


def report(*args: object) -> Result:
    return CliRunner().invoke(
        app, ["report", *map(str, args)], env={"COLUMNS": "120", "NO_COLOR": None}
    )


def test_sizes_filter_every_format(two_sizes: Path) -> None:
    markdown = report(two_sizes, "--format", "markdown", "-s", "M")
    assert markdown.exit_code == 0, markdown.output
    assert markdown.stdout == report(two_sizes, "--markdown", "-", "-s", "M").stdout
    rows = [line for line in markdown.stdout.splitlines() if line.startswith("| `")]
    assert len(rows) == 2 and all("| M (n=64) |" in row for row in rows)

    result = report(two_sizes, "--format", "csv", "-s", "M")
    assert result.exit_code == 0, result.output
    sizes = [row["size"] for row in csv.DictReader(io.StringIO(result.stdout))]
    assert sizes == ["M", "M"]

    for layout in ("table", "wide"):
        table = report(two_sizes, "--format", layout, "-s", "S")
        assert table.exit_code == 0, table.output
        assert "double" in table.stdout and " M " not in table.stdout

    unfiltered = report(two_sizes, "--format", "csv")
    assert len(list(csv.DictReader(io.StringIO(unfiltered.stdout)))) == 4


@pytest.mark.parametrize("fmt", [("--markdown", "-"), ("--format", "csv")])
def test_a_size_the_run_lacks_is_refused_naming_its_sizes(two_sizes: Path, fmt: tuple) -> None:
    result = report(two_sizes, *fmt, "-s", "XL")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.strip() == "error: unknown size 'XL'; the run has: S, M."


def test_markdown_file_and_format_together_are_refused(two_sizes: Path) -> None:
    result = report(two_sizes, "--markdown", "-", "--format", "csv")
    assert result.exit_code == 2 and result.stdout == ""
    assert "--markdown and --format both choose" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_sizes_without_a_printed_table_are_refused(two_sizes: Path, tmp_path: Path) -> None:
    result = report(two_sizes, "-s", "S", "--out", tmp_path)
    assert result.exit_code == 2
    assert "-s filters the tables of --markdown and --format" in result.stderr
    assert not any(tmp_path.iterdir())  # refused before anything is written


def test_ten_runs_make_one_comparison_page_named_by_a_digest(tmp_path: Path) -> None:
    from jitbench.report.comparison import page_name

    run = load_run(FIXTURE)
    runs = [replace(run, run_id=f"20261201T0000{i:02d}Z-{'x' * 30}") for i in range(10)]
    assert len(page_name(runs)) < 60 and page_name(runs) != page_name(runs[1:])
    assert page_name(runs[:2]).startswith("compare-20261201T000000Z")  # two: still by name
    paths = [save_run(r, tmp_path / f"r{i}.json") for i, r in enumerate(runs)]
    out = tmp_path / "out"
    result = report(*paths, "--out", out)
    assert result.exit_code == 0, result.output
    [page] = out.glob("compare-*.html")
    assert page.name.startswith("compare-10-runs-")


def test_an_output_folder_is_rendered_again(tmp_path: Path) -> None:
    run = load_run(FIXTURE)
    out = tmp_path / "out"
    for i in range(2):
        result = report(
            save_run(replace(run, run_id=f"r{i}"), tmp_path / f"r{i}.json"), "--out", out
        )
        assert result.exit_code == 0, result.output
    (out / "index.html").unlink()
    (out / "runs" / "r0.html").unlink()
    (out / "runs" / "broken.json").write_text("{")
    again = CliRunner().invoke(app, ["report", str(out)], env={"COLUMNS": "120"})
    assert again.exit_code == 0, again.output
    assert (out / "index.html").is_file() and (out / "runs" / "r0.html").is_file()
    assert not list(out.glob("compare-*.html"))  # its runs' pages, not a page of them all
    assert "left out" in again.stderr
    plain = tmp_path / "plain"
    plain.mkdir()
    save_run(run, plain / "a.json")
    listed = report(plain, "--format", "csv")
    assert listed.exit_code == 0 and listed.stdout.startswith("workload,")
    mixed = report(plain, plain / "a.json")
    assert mixed.exit_code == 2 and "one folder alone" in " ".join(mixed.output.split())
