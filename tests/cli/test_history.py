"""`jitbench history`: each series across run files the test writes, its steps with the
bisect line, the formats, and bad input refused in one line (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from jitbench.cli import app
from jitbench.results import OutputLayout, save_run
from tests.report.builders import stepped_runs


def history(*args: object) -> Result:
    return CliRunner().invoke(
        app, ["history", *map(str, args)], env={"COLUMNS": "200", "NO_COLOR": None}
    )


def write(folder: Path, commits: bool = True) -> Path:
    layout = OutputLayout(folder)
    for run in stepped_runs(commits):
        save_run(run, layout.run_json(run.run_id))
    return folder


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("history"))


def test_each_series_and_its_step_with_the_bisect_line(out: Path) -> None:
    result = history(out)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("8 runs, oldest first;")
    assert any(line.strip().startswith("double S jit:") and "8 runs" in line for line in lines)
    (step,) = [line for line in lines if line.startswith("double S jit: ×1.3 slower [")]
    assert "at run 5 (id r4, commit c4)" in step
    assert step.endswith("· jitbench bisect c3 c4 -k double -s S")


def test_selection_by_keyword_mode_and_device(out: Path) -> None:
    result = history(out, "-k", "cumulative", "-m", "eager")
    assert result.exit_code == 0, result.output
    series = [line.strip() for line in result.stdout.splitlines()[1:]]
    assert series and all(line.startswith("cumulative S eager:") for line in series)
    nothing = history(out, "-k", "no_such_workload")
    assert nothing.exit_code == 0 and "no series matching" in nothing.stdout
    unknown = history(out, "--device", "tpu:9")  # a device no run has: a usage error
    assert unknown.exit_code == 2 and "unknown device 'tpu:9'" in unknown.output


def test_json_and_markdown_carry_the_same_step(out: Path) -> None:
    result = history(*sorted((out / "runs").glob("*.json")), "--format", "json", "-m", "jit")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [r["run_id"] for r in doc["runs"]] == [f"r{i}" for i in range(8)]
    stepped = {s["workload"]: s for s in doc["series"] if s["steps"]}
    assert sorted(stepped) == ["cumulative", "double"]  # both cases' jit is 30 % slower
    (step,) = stepped["double"]["steps"]
    assert (stepped["double"]["size"], stepped["double"]["mode"]) == ("S", "jit")
    assert step["at_run"] == 5 and step["bisect"] == "jitbench bisect c3 c4 -k double -s S"
    assert step["low"] < step["ratio"] < step["high"] < 1
    markdown = history(out, "--format", "markdown")
    assert markdown.exit_code == 0, markdown.output
    assert "jitbench bisect c3 c4 -k double -s S" in markdown.stdout
    assert markdown.stdout.startswith("| series |")


def test_runs_without_commits_say_there_is_no_bisect_line(tmp_path: Path) -> None:
    result = history(write(tmp_path, commits=False))
    assert result.exit_code == 0, result.output
    (step,) = [line for line in result.stdout.splitlines() if line.startswith("double S jit: ×")]
    assert "(id r4, no commit)" in step
    assert step.endswith("no bisect line: the runs recorded no git commit")


def test_no_runs_or_a_corrupt_run_is_one_line_and_exit_2(tmp_path: Path) -> None:
    empty = history(tmp_path)
    assert empty.exit_code == 2
    assert "no run JSON files" in empty.output and len(empty.output.strip().splitlines()) == 1
    (tmp_path / "broken.json").write_text("{")
    broken = history(tmp_path)
    assert broken.exit_code == 2
    assert "broken.json" in broken.output and "not valid JSON" in broken.output
    missing = history(tmp_path / "nowhere")
    assert missing.exit_code == 2 and "does not exist" in missing.output
    bad_mode = history(tmp_path, "-m", "numpy")
    assert bad_mode.exit_code == 2 and "unknown mode 'numpy'" in bad_mode.output


def test_a_hard_link_counts_once_and_two_runs_of_one_id_are_refused(tmp_path: Path) -> None:
    import os
    from dataclasses import replace

    folder = write(tmp_path / "out")
    runs = sorted((folder / "runs").glob("*.json"))
    os.link(runs[0], folder / "linked.json")  # the same file under another name
    result = history(folder)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("8 runs, oldest first;")
    again = history(runs[0], runs[0], *runs[1:])  # one file given twice
    assert again.exit_code == 0 and again.stdout.startswith("8 runs")
    first = stepped_runs(True)[0]
    other = replace(first, measurements=first.measurements[1:])
    save_run(other, tmp_path / "same-id.json")
    clash = history(folder, tmp_path / "same-id.json")
    assert clash.exit_code == 2
    assert f"are different runs with the same run id {first.run_id!r}" in " ".join(
        clash.output.split()
    )


def test_a_broken_file_in_a_folder_is_left_out_with_a_warning(tmp_path: Path) -> None:
    folder = write(tmp_path / "out")
    [first, *_] = sorted((folder / "runs").glob("*.json"))
    (folder / "runs" / "truncated.json").write_text(first.read_text()[:200])
    result = history(folder)
    assert result.exit_code == 0, result.output
    assert "8 runs" in result.stdout and "warning: left out" in result.stderr
    named = history(folder / "runs" / "truncated.json", first)  # named: refused
    assert named.exit_code == 2
