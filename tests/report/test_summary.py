"""The index's per-run summaries and their cache beside the runs: used while the run file
is unchanged, rebuilt when it changes or the entry is damaged, never an error."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from jitbench import save_run
from jitbench.report import pages, summary, write_index, write_report
from jitbench.results import Run
from tests.report.builders import labelled


def _no_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(path: object) -> Run:
        raise AssertionError(f"the index loaded {path} instead of using its summary")

    monkeypatch.setattr(pages, "load_run", refuse)


def test_summary_round_trips_through_json(run: Run) -> None:
    s = summary.summarize(run)
    again = summary.RunSummary.from_json(json.loads(json.dumps(s.to_json())))
    assert again == s
    assert any(figs.speedups for figs in s.cases.values())


def test_program_metrics_round_trip_and_a_damaged_one_is_refused() -> None:
    from tests.report.builders import program_changed_runs

    s = summary.summarize(program_changed_runs()[-1])
    jit = s.cases[("double", "S", "cpu:0", "float32")].compiled["jit"]
    assert jit.fingerprint == "f" * 16 and jit.opcodes["fusion"] == 2 and jit.peak_bytes == 512
    raw = json.loads(json.dumps(s.to_json()))
    assert summary.RunSummary.from_json(raw) == s
    raw["cases"][0][-1]["compiled"]["jit"]["opcodes"] = {"fusion": "many"}
    with pytest.raises(ValueError):
        summary.RunSummary.from_json(raw)


def test_a_refresh_reads_summaries_not_runs(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_report([run], tmp_path)
    first = (tmp_path / "index.html").read_text()
    history = (tmp_path / "history.html").read_text()
    [entry] = (tmp_path / "runs" / summary.CACHE_FOLDER).iterdir()
    assert entry.name == f"{run.run_id}.json"
    _no_loading(monkeypatch)
    assert write_index(tmp_path).read_text() == first
    assert (tmp_path / "history.html").read_text() == history


def test_a_changed_run_file_is_summarised_again(run: Run, tmp_path: Path) -> None:
    write_report([run], tmp_path)
    stored = tmp_path / "runs" / f"{run.run_id}.json"
    save_run(labelled(run, "relabelled"), stored)  # the same file, new contents
    assert "relabelled" in write_index(tmp_path).read_text()


@pytest.mark.parametrize(
    "damage",
    [
        "not json {",
        '{"generation": 1}',
        '{"generation": "%s", "stamp": %s, "summary": {"run_id": 3}}',
        '{"generation": "%s", "stamp": %s, "summary": []}',
    ],
)
def test_a_damaged_cache_entry_is_rebuilt(run: Run, tmp_path: Path, damage: str) -> None:
    write_report([run], tmp_path)
    expected = (tmp_path / "index.html").read_text()
    stored = tmp_path / "runs" / f"{run.run_id}.json"
    entry = summary.cache_path(stored)
    if "%s" in damage:  # current generation and stamp: only the summary is damaged
        stamp = list(summary.stamp_of_file(stored))
        damage = damage % (summary._generation(), json.dumps(stamp))
    entry.write_text(damage)
    assert write_index(tmp_path).read_text() == expected
    assert json.loads(entry.read_text())["summary"]["run_id"] == run.run_id  # rebuilt


def test_entries_of_removed_runs_are_dropped(run: Run, tmp_path: Path) -> None:
    other = replace(run, run_id="other-run")
    write_report([run], tmp_path)
    write_report([other], tmp_path)
    cache = tmp_path / "runs" / summary.CACHE_FOLDER
    assert len(list(cache.iterdir())) == 2
    (tmp_path / "runs" / "other-run.json").unlink()
    index = write_index(tmp_path).read_text()
    assert "other-run" not in index
    assert [p.name for p in cache.iterdir()] == [f"{run.run_id}.json"]


def test_an_unwritable_cache_is_no_error(run: Run, tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    save_run(run, tmp_path / "runs" / f"{run.run_id}.json")
    (tmp_path / "runs" / summary.CACHE_FOLDER).write_text("a file, not a folder")
    assert run.run_id in write_index(tmp_path).read_text()


def test_a_version_not_recorded_is_absent_from_the_fingerprint_not_none(run: Run) -> None:
    """The history's "what changed" column printed 'jitbench None → 0.1.0' between a run
    that recorded no jitbench version and one that did."""
    env = dict(run.environment)
    env["versions"] = {**env.get("versions", {}), "jitbench": None}
    fingerprint = summary.environment_fingerprint(replace(run, environment=env))
    assert "jitbench" not in fingerprint and "None" not in fingerprint.values()
