"""Run files that are big, duplicated, non-strict or stored under another run's id: loaded
fast (validation compiled once, remembered by file stamp), refused with a one-line cause,
and never written over a different stored run."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from jitbench import ResultsFormatError, load_run, save_run
from jitbench.errors import OutputError
from jitbench.results import OutputLayout, check_run_copies, check_run_copy, codec, validated
from tests.results.test_codec import make_run


@pytest.fixture(autouse=True)
def _fresh_memory() -> None:
    validated.forget()


def _stored(tmp_path: Path, run=None) -> Path:  # type: ignore[no-untyped-def]
    run = run or make_run()
    return save_run(run, OutputLayout(tmp_path).run_json(run.run_id))


def test_duplicate_measurements_are_refused_with_a_count(tmp_path: Path) -> None:
    run = make_run()
    doubled = replace(run, measurements=run.measurements * 3)
    path = save_run(doubled, tmp_path / "doubled.json")
    with pytest.raises(ResultsFormatError) as err:
        load_run(path)
    message = str(err.value)
    assert "6 measurements but only 2 distinct" in message
    assert "4 duplicates" in message and "appears 3 times" in message


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_strict_numbers_are_refused(tmp_path: Path, literal: str) -> None:
    path = save_run(make_run(), tmp_path / "run.json")
    data = json.loads(path.read_text())
    data["measurements"][0]["samples_s"][1] = "@"
    path.write_text(json.dumps(data).replace('"@"', literal))
    with pytest.raises(ResultsFormatError, match=r"not strict JSON|not a finite number"):
        load_run(path)


def test_non_utf8_and_folders_are_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes('{"schema": "jitbench.run", "x": "caf\xe9"}'.encode("latin-1"))
    with pytest.raises(ResultsFormatError, match="not UTF-8"):
        load_run(path)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(ResultsFormatError, match="is a folder with no run files"):
        load_run(out)
    (out / "runs").mkdir()
    for run_id in ("20261126T120000Z-aaaaaa", "20261126T130000Z-bbbbbb"):
        (out / "runs" / f"{run_id}.json").write_text("{}")
    newest = str(out / "runs" / "20261126T130000Z-bbbbbb.json")
    with pytest.raises(ResultsFormatError) as caught:
        load_run(out)  # an output folder: the runs it holds, the newest named
    assert str(caught.value).endswith(f"pass a run file: it holds 2, the newest {newest!r}.")
    with pytest.raises(ResultsFormatError, match=r"it holds one, .*latin1\.json"):
        load_run(tmp_path)  # loose run files where there is no runs/


def test_validation_is_remembered_by_file_stamp(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    path = _stored(tmp_path)
    first = load_run(path)  # validated, and remembered beside the runs
    assert (path.parent / validated.CACHE_NAME).is_file()
    validated.forget()  # a new process: only the on-disk cache is left

    def must_not_validate(*_a: object, **_k: object) -> None:
        raise AssertionError("validated again")

    monkeypatch.setattr(codec, "validate_run_dict", must_not_validate)
    assert load_run(path) == first
    # Any new version of the file (a rewrite replaces its inode) is validated again.
    save_run(replace(first, run_id=first.run_id), path)
    with pytest.raises(AssertionError, match="validated again"):
        load_run(path)


def test_a_wrong_cache_entry_never_lets_a_broken_file_through(tmp_path: Path) -> None:
    path = _stored(tmp_path)
    load_run(path)
    data = json.loads(path.read_text())
    del data["measurements"][0]["case"]
    text = json.dumps(data)
    stamp = validated.stamp_of(path.stat())
    with path.open("r+") as fh:  # same inode; then forge size and mtime back
        fh.write(text)
        fh.truncate()
    os.utime(path, ns=(stamp[1], stamp[1]))
    validated.remember(path, validated.stamp_of(path.stat()))  # the cache now vouches for it
    with pytest.raises(ResultsFormatError, match="not a valid jitbench run"):
        load_run(path)


def test_cache_in_a_read_only_or_odd_place_is_ignored(tmp_path: Path) -> None:
    loose = save_run(make_run(), tmp_path / "loose.json")
    load_run(loose)
    assert not (tmp_path / validated.CACHE_NAME).exists()  # only runs/ folders get one
    runs = tmp_path / "out" / "runs"
    runs.mkdir(parents=True)
    (runs / validated.CACHE_NAME).write_text("{not json")  # corrupt: ignored, then replaced
    path = save_run(make_run(), runs / "r1.json")
    assert load_run(path).run_id == "r1"
    assert json.loads((runs / validated.CACHE_NAME).read_text())["files"]["r1.json"]


def test_the_copy_of_a_run_never_replaces_another_run(tmp_path: Path) -> None:
    complete = make_run()
    stored = _stored(tmp_path, complete)
    older = replace(complete, complete=False, measurements=complete.measurements[:1])
    source = save_run(older, tmp_path / "old-partial.json")
    with pytest.raises(OutputError, match="refusing to replace"):
        check_run_copy(older, tmp_path, source=source)
    hostile = replace(make_run(), environment={"host": "attacker"})
    with pytest.raises(OutputError, match="already holds a different version"):
        check_run_copy(hostile, tmp_path, source=None)
    assert load_run(stored) == complete  # untouched
    # The stored file itself, an identical copy, or a free name are fine.
    check_run_copy(complete, tmp_path, source=stored)
    check_run_copy(complete, tmp_path, source=save_run(complete, tmp_path / "copy.json"))
    check_run_copy(replace(complete, run_id="other"), tmp_path)
    # Two different runs under one id given together would replace each other.
    with pytest.raises(OutputError, match="same run id"):
        check_run_copies([(complete, stored), (older, source)], tmp_path / "elsewhere")


def test_get_finds_every_measurement_of_a_large_run() -> None:
    run = make_run()
    many = replace(
        run,
        measurements=tuple(
            replace(m, case=replace(m.case, workload=f"w{i}"))
            for i in range(2000)
            for m in run.measurements
        ),
    )
    for i in (0, 999, 1999):
        m = many.get((f"w{i}", "S", "cpu:0", "float32"), run.measurements[1].mode)
        assert m is not None and m.case.workload == f"w{i}"
    assert many.get(("nope", "S", "cpu:0", "float32"), run.measurements[0].mode) is None


@pytest.mark.parametrize(
    ("samples", "refused"),
    [
        ([1e308, 1e308], "not a finite number"),  # their sum overflows
        ([1.7976931348623157e308], "not a time per call"),
        ([5e-324, 1e-6], "not a time per call"),  # a denormal
        ([0.0, 1e-300], "not a time per call"),
        ([2e6], "not a time per call"),
        ([-1e-6], "not a finite number"),
        ([0.0, 1e-6, 1e6], None),  # zero and the ends of the range are accepted
        ([1e-15] * 3, None),
    ],
)
def test_samples_outside_what_anything_measures_are_refused(
    tmp_path: Path, samples: list[float], refused: str | None
) -> None:
    path = save_run(make_run(), tmp_path / "run.json")
    data = json.loads(path.read_text())
    data["measurements"][0]["samples_s"] = samples
    data["measurements"][0].pop("summary", None)
    data["measurements"][0].pop("part_counts", None)
    path.write_text(json.dumps(data))
    if refused is None:
        load_run(path)
        return
    with pytest.raises(ResultsFormatError, match=refused) as err:
        load_run(path)
    assert "\n" not in str(err.value)


def test_a_run_file_beyond_the_size_limit_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = save_run(make_run(), tmp_path / "run.json")
    monkeypatch.setattr(codec, "MAX_RUN_FILE_BYTES", 1000)
    with pytest.raises(ResultsFormatError, match="more than a run file may"):
        load_run(path)


def test_a_run_of_zero_times_prints_in_every_format(tmp_path: Path) -> None:
    """Zero is a valid sample (a clock that did not tick); an interval of zeros and
    infinities used to crash the table's ± figure."""
    from typer.testing import CliRunner

    from jitbench.cli import app

    path = save_run(make_run(), tmp_path / "run.json")
    data = json.loads(path.read_text())
    for m in data["measurements"]:
        m["samples_s"] = [0.0, 0.0, 1e-15]
        m.pop("summary", None)
        m.pop("part_counts", None)
    path.write_text(json.dumps(data))
    for fmt in ("table", "markdown", "csv"):
        result = CliRunner().invoke(app, ["report", str(path), "--format", fmt])
        assert result.exit_code == 0, result.output
    # Zero medians: nothing can be compared, which the gate says (exit 2), never a pass.
    result = CliRunner().invoke(app, ["compare", str(path), str(path)])
    assert result.exit_code == 2 and "NOTHING COMPARED" in result.output, result.output


def test_a_schema_error_is_caught_after_fastjsonschema_was_imported_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytester's in-process runs restore `sys.modules`, so fastjsonschema may be imported
    a second time after the schema was compiled: its errors are then of another class than
    the module now names, and slipped through (a random-order CI failure)."""
    import sys

    load_run(_stored(tmp_path))  # compiles the schema
    for name in [m for m in sys.modules if m.split(".")[0] == "fastjsonschema"]:
        monkeypatch.delitem(sys.modules, name)
    bad = tmp_path / "bad.json"
    data = json.loads(_stored(tmp_path / "other").read_text())
    del data["measurements"][0]["case"]
    bad.write_text(json.dumps(data))
    with pytest.raises(ResultsFormatError, match="not a valid jitbench run"):
        load_run(bad)
