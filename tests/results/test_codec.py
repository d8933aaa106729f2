"""Run JSON: round trip, schema checks and refusal of bad files."""

from __future__ import annotations

import json
import re

import pytest

from jitbench import ResultsFormatError, load_run, save_run
from jitbench.results import (
    SCHEMA_VERSION,
    Case,
    CompileInfo,
    Diagnostic,
    Measurement,
    Mode,
    Run,
    Severity,
    Status,
    dump_run,
)
from jitbench.results.analysis import analyse


def make_run(**overrides) -> Run:
    case = Case(workload="w", size="S", device="cpu:0", dtype="float32", params={"n": 4})
    ms = (
        Measurement(
            case=case,
            mode=Mode.NUMPY,
            status=Status.OK,
            samples_s=(2e-3, 2.1e-3, 1.9e-3),
            calls_per_sample=5,
        ),
        Measurement(
            case=case,
            mode=Mode.JIT,
            status=Status.OK,
            samples_s=(1e-3, 1.1e-3, 0.9e-3),
            calls_per_sample=10,
            compile=CompileInfo(
                first_call_s=0.05, compile_count=1, trace_s=0.01, lower_s=0.01, compile_s=0.02
            ),
            diagnostics=(Diagnostic(code="noisy", severity=Severity.INFO, message="m", hint="h"),),
        ),
    )
    fields = dict(
        run_id="r1",
        started_at="2026-01-01T00:00:00+00:00",
        finished_at=None,
        complete=True,
        environment={"host": "h"},
        config={},
        measurements=ms,
    )
    fields.update(overrides)
    return Run(**fields)


def test_round_trip(tmp_path):
    run = make_run()
    path = save_run(run, tmp_path / "sub" / "run.json")
    loaded = load_run(path)
    assert loaded == run
    assert analyse(loaded).speedup(("w", "S", "cpu:0", "float32"), Mode.JIT).value == pytest.approx(
        2.0
    )
    assert analyse(loaded).break_even_calls(("w", "S", "cpu:0", "float32")) == pytest.approx(40.0)


def test_transfers_both_ways_survive_a_round_trip(tmp_path):
    from dataclasses import replace

    numpy, jit = make_run().measurements
    jit = replace(
        jit, transfer_s=4e-4, transfer_bytes=4096, transfer_back_s=2e-5, transfer_back_bytes=512
    )
    run = make_run(measurements=(numpy, jit))
    data = json.loads(dump_run(run))
    assert data["measurements"][1]["transfer_back_s"] == 2e-5
    assert data["measurements"][1]["transfer_back_bytes"] == 512
    assert data["measurements"][0]["transfer_back_s"] is None  # NumPy copies nothing
    loaded = load_run(save_run(run, tmp_path / "run.json"))
    assert loaded == run
    assert loaded.measurements[1].transfer_back_s == 2e-5
    data["measurements"][1]["transfer_back_bytes"] = -1
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(ResultsFormatError, match="transfer_back_bytes"):
        load_run(tmp_path / "bad.json")


def test_the_device_peak_survives_a_round_trip(tmp_path):
    from dataclasses import replace

    numpy, jit = make_run().measurements
    run = make_run(
        measurements=(numpy, replace(jit, device_peak_bytes=3 << 20, device_peak_exact=False))
    )
    data = json.loads(dump_run(run))
    assert data["measurements"][1]["device_peak_bytes"] == 3 << 20
    assert data["measurements"][1]["device_peak_exact"] is False
    assert data["measurements"][0]["device_peak_bytes"] is None
    assert load_run(save_run(run, tmp_path / "run.json")) == run
    data["measurements"][1]["device_peak_exact"] = "yes"
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(ResultsFormatError, match="device_peak_exact"):
        load_run(tmp_path / "bad.json")


def test_json_carries_schema_and_summary(tmp_path):
    data = json.loads(dump_run(make_run()))
    assert data["schema"] == "jitbench.run" and data["schema_version"] == SCHEMA_VERSION
    assert data["measurements"][0]["summary"]["median"] == pytest.approx(2e-3)


def test_a_checkpoint_leaves_out_the_figures_that_loading_recomputes(tmp_path):
    run = make_run()
    with_figures = json.loads(dump_run(run))
    assert all("figures" in m for m in with_figures["measurements"])
    path = save_run(run, tmp_path / "run.json", figures=False)
    data = json.loads(path.read_text())
    assert not any("figures" in m for m in data["measurements"])
    assert load_run(path) == run


def test_each_measurement_takes_one_line_and_the_rest_is_indented():
    run = make_run()
    text = dump_run(run)
    lines = text.splitlines()
    assert lines[-2:] == [" ]", "}"]
    measurement_lines = lines[-2 - len(run.measurements) : -2]
    for m, line in zip(json.loads(text)["measurements"], measurement_lines, strict=True):
        assert json.loads(line.strip().rstrip(",")) == m
    assert ' "environment": {\n  "host": "h"\n },' in text
    assert json.loads(dump_run(make_run(measurements=())))["measurements"] == []


def test_break_even_is_infinite_when_jit_is_slower():
    case = ("w", "S", "cpu:0", "float32")
    run = make_run()
    slow = tuple(
        m if m.mode is Mode.NUMPY else Measurement(**{**m.__dict__, "samples_s": (5e-3,) * 3})
        for m in run.measurements
    )
    assert analyse(make_run(measurements=slow)).break_even_calls(case) == float("inf")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"schema": "jitbench.run", "schema_version": "1.0", "run_id"', "not valid JSON"),
        ("hello", "not valid JSON"),
        ('{"name": "some-package", "version": "1.0"}', 'not a jitbench run (no "schema"'),
        ('{"schema": "asv.results"}', """not a jitbench run ("schema": 'asv.results', not"""),
        ('{"schema": "jitbench.comparison"}', "is a comparison written by `jitbench compare"),
        ("[1, 2, 3]", "not a jitbench run"),
        ('{"schema": "jitbench.run", "schema_version": "99.0"}', "newer than this jitbench"),
        (
            '{"schema": "jitbench.run", "schema_version": "1.0", "run_id": "x"}',
            "not a valid jitbench run",
        ),
    ],
)
def test_bad_files_are_refused_with_one_line_cause(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ResultsFormatError, match=re.escape(message)) as info:
        load_run(path)
    assert "\n" not in str(info.value)


def test_missing_file(tmp_path):
    with pytest.raises(ResultsFormatError, match="does not exist"):
        load_run(tmp_path / "nope.json")


def test_invalid_measurement_names_the_path(tmp_path):
    data = json.loads(dump_run(make_run()))
    data["measurements"][1]["mode"] = "turbo"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ResultsFormatError, match="measurements/1/mode"):
        load_run(path)


def test_atomic_write_leaves_no_temp_files(tmp_path):
    save_run(make_run(), tmp_path / "run.json")
    save_run(make_run(run_id="r2"), tmp_path / "run.json")
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]
    assert load_run(tmp_path / "run.json").run_id == "r2"


def test_pooled_measurement_keeps_its_runs_through_json(tmp_path):
    base = make_run().measurements[0]
    pooled = Measurement(
        **{**base.__dict__, "samples_s": (1.0, 1.1, 2.0, 2.2, 2.4), "run_sample_counts": (2, 3)}
    )
    assert pooled.run_medians_s == (1.05, 2.2)
    loaded = load_run(save_run(make_run(measurements=(pooled,)), tmp_path / "p.json"))
    assert loaded.measurements[0].run_sample_counts == (2, 3)
    # A plain run writes no partition at all.
    assert "run_sample_counts" not in json.loads(dump_run(make_run()))["measurements"][0]
    with pytest.raises(ValueError, match="do not add up"):
        Measurement(**{**base.__dict__, "run_sample_counts": (1,)})
    with pytest.raises(ValueError, match="one or more per run"):  # a run without samples
        Measurement(**{**base.__dict__, "run_sample_counts": (0, 3)})


def test_run_sample_counts_that_do_not_add_up_are_refused(tmp_path):
    data = json.loads(dump_run(make_run()))
    data["measurements"][0]["run_sample_counts"] = [2, 2]  # 3 samples
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ResultsFormatError, match="do not add up") as info:
        load_run(path)
    assert "\n" not in str(info.value)
