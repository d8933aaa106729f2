"""Text from a run file reaches the terminal shown, never acted on: an OSC 52 clipboard
write or a screen clear in a workload name or label is printed as an escape by every
command (the consoles and the plain writes neutralise it once, at the output edge), and a
CSV cell that would start a formula gets an apostrophe in every CSV (one rule,
`formatting.csv_cell`)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from rich.text import Text
from typer.testing import CliRunner

from jitbench.cli import app
from jitbench.cli.common import SafeConsole
from jitbench.formatting import csv_cell, terminal_safe
from tests.conftest import REPO

FIXTURE = REPO / "tests" / "results" / "fixtures" / "run-schema-1.7.json"
OSC52 = "\x1b]52;c;aGVsbG8=\x07"
CLEAR = "\x1b[2J\x1b[H"
HOSTILE = f"=HYPERLINK(1){OSC52}{CLEAR}\x9b31m\u202e"
RAW = ("\x1b", "\x07", "\x9b", "\u202e")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two versions of the fixture run whose workloads and label carry escape sequences."""
    folder = tmp_path_factory.mktemp("hostile")
    data = json.loads(FIXTURE.read_text())
    names = {m["case"]["workload"] for m in data["measurements"]}
    for m in data["measurements"]:
        m["case"]["workload"] = f"{HOSTILE}{m['case']['workload']}"
    data["config"]["label"] = f"@SUM(1){CLEAR}"
    assert names
    base = folder / "base.json"
    base.write_text(json.dumps(data))
    data["run_id"] += "-new"
    new = folder / "new.json"
    new.write_text(json.dumps(data))
    return base, new


def _clean(text: str) -> None:
    for raw in RAW:
        assert raw not in text, repr(text[max(0, text.find(raw) - 40) : text.find(raw) + 40])


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv"])
def test_report_prints_hostile_names_as_escapes(hostile: tuple[Path, Path], fmt: str) -> None:
    result = CliRunner().invoke(app, ["report", str(hostile[0]), "--format", fmt])
    assert result.exit_code == 0, result.output
    _clean(result.stdout)
    _clean(result.stderr)
    assert "\\x1b" in result.stdout  # shown as an escape (rich drops a bare BEL)


@pytest.mark.parametrize("fmt", ["table", "wide", "markdown", "csv"])
def test_compare_prints_hostile_names_as_escapes(hostile: tuple[Path, Path], fmt: str) -> None:
    result = CliRunner().invoke(app, ["compare", *map(str, hostile), "--format", fmt])
    assert result.exit_code in (0, 4), result.output
    _clean(result.stdout)
    _clean(result.stderr)


def test_a_terminal_gets_the_colours_but_not_the_escapes() -> None:
    buffer = io.StringIO()
    console = SafeConsole(file=buffer, force_terminal=True, color_system="standard", width=200)
    console.print(Text(f"case {OSC52}{CLEAR}", style="bold red"))
    shown = buffer.getvalue()
    assert "\x1b[1;31m" in shown  # rich's own style codes pass
    assert "\x1b]52" not in shown and "\x1b[2J" not in shown
    assert "\\x1b]52;c;aGVsbG8=" in shown


def test_terminal_safe_keeps_text_and_layout() -> None:
    assert terminal_safe("µs ×  tab\tnew\nline") == "µs ×  tab\tnew\nline"
    assert terminal_safe("a\rb\x00c\x7f") == "a\\x0db\\x00c\\x7f"


@pytest.mark.parametrize("fmt", ["csv"])
def test_every_csv_neutralises_formula_cells(hostile: tuple[Path, Path], fmt: str) -> None:
    report = CliRunner().invoke(app, ["report", str(hostile[0]), "--format", fmt])
    compare = CliRunner().invoke(app, ["compare", *map(str, hostile), "--format", fmt])
    for text in (report.stdout, compare.stdout):
        rows = list(csv.reader(io.StringIO(text)))
        cells = [cell for row in rows[1:] for cell in row]
        assert cells and not [c for c in cells if c[:1] in ("=", "+", "@") or c[:2] == "-="]
        assert any(c.startswith("'=HYPERLINK") for c in cells)


def test_the_runs_csv_and_the_terminal_csv_share_the_rule(
    hostile: tuple[Path, Path], tmp_path: Path
) -> None:
    result = CliRunner().invoke(app, ["report", str(hostile[0]), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    [stored] = (tmp_path / "runs").glob("*.csv")
    rows = list(csv.DictReader(io.StringIO(stored.read_text())))
    assert all(r["workload"].startswith("'=HYPERLINK") for r in rows)
    assert all(r["label"].startswith("'@SUM") for r in rows)
    assert [csv_cell(v) for v in ("-1.5e-06", "-x", "+1+1", 3.0)] == [
        "-1.5e-06",
        "'-x",
        "'+1+1",
        3.0,
    ]
