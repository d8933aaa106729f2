"""Sharded mode's derived figures (speedup over one device, efficiency) and the merge of
a multi-process run's files."""

from __future__ import annotations

import pytest

from jitbench.errors import ResultsFormatError
from jitbench.results import Case, Measurement, Mode, Run, ShardingInfo, Status, run_from_dict
from jitbench.results.analysis import analyse
from jitbench.results.codec import run_to_dict
from jitbench.results.merge import merge_processes

CASE = Case(workload="w", size="S", device="cpu:0", dtype="float32")


def _m(mode: Mode, samples: tuple[float, ...], **extra: object) -> Measurement:
    return Measurement(
        case=CASE, mode=mode, status=Status.OK, samples_s=samples, calls_per_sample=1, **extra
    )


def _run(jit_s: tuple[float, ...], sharded_s: tuple[float, ...], *, process=None) -> Run:
    info = ShardingInfo(device_count=4, mesh_shape={"devices": 4}, split_axes={"x": 0})
    return Run(
        run_id="r",
        started_at="2026-01-01T00:00:00+00:00",
        finished_at="2026-01-01T00:01:00+00:00",
        complete=True,
        environment={"process": process} if process else {},
        measurements=(_m(Mode.JIT, jit_s), _m(Mode.SHARDED, sharded_s, sharding=info)),
    )


def test_speedup_is_jit_over_sharded_and_efficiency_per_device() -> None:
    run = _run((4.0,) * 10, (2.0,) * 10)
    scaling = analyse(run).case(CASE.key).scaling
    assert scaling is not None and scaling.device_count == 4
    assert scaling.speedup.value == pytest.approx(2.0)
    assert scaling.efficiency.value == pytest.approx(0.5)
    assert scaling.efficiency.low == pytest.approx(scaling.speedup.low / 4)  # type: ignore[operator]


def test_no_scaling_without_both_modes_ok() -> None:
    run = _run((4.0,) * 10, (2.0,) * 10)
    skipped = Measurement(case=CASE, mode=Mode.SHARDED, status=Status.SKIPPED)
    from dataclasses import replace

    assert (
        analyse(replace(run, measurements=(run.measurements[0], skipped))).case(CASE.key).scaling
        is None
    )
    assert analyse(replace(run, measurements=run.measurements[1:])).case(CASE.key).scaling is None


def test_scaling_is_written_for_readers_and_the_sharding_round_trips() -> None:
    run = _run((3.0,) * 10, (1.0,) * 10)
    data = run_to_dict(run)
    sharded = data["measurements"][1]
    assert sharded["scaling"]["speedup"]["value"] == pytest.approx(3.0)
    assert sharded["scaling"]["efficiency"]["value"] == pytest.approx(0.75)
    again = run_from_dict(data)
    assert again.measurements == run.measurements


def test_the_mesh_and_the_device_count_must_agree() -> None:
    with pytest.raises(ValueError, match=r"holds 2 device\(s\), but device_count is 4"):
        ShardingInfo(device_count=4, mesh_shape={"devices": 2})
    assert ShardingInfo(device_count=6, mesh_shape={"a": 2, "b": 3}).device_count == 6
    data = run_to_dict(_run((1.0,) * 3, (1.0,) * 3))
    data["measurements"][1]["sharding"]["device_count"] = 8
    with pytest.raises(ResultsFormatError, match=r"at measurements/1: sharding\.mesh_shape"):
        run_from_dict(data)


def test_merge_processes_labels_each_process_devices() -> None:
    p0 = _run((4.0,) * 10, (2.0,) * 10, process={"index": 0, "count": 2})
    p1 = _run((4.0,) * 10, (1.0,) * 10, process={"index": 1, "count": 2})
    from dataclasses import replace

    merged = merge_processes([replace(p1, run_id="b"), replace(p0, run_id="a")])
    assert merged.run_id == "a-merged"
    assert [c.device for c in merged.cases()] == ["cpu:0@p0", "cpu:0@p1"]
    assert [p["run_id"] for p in merged.environment["processes"]] == ["a", "b"]
    assert analyse(merged).case(merged.cases()[1].key).scaling.speedup.value == pytest.approx(4.0)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("processes", "message"),
    [
        ((None, {"index": 0, "count": 2}), "records no process index"),
        (({"index": 0, "count": 2}, {"index": 0, "count": 2}), "not the processes of one"),
    ],
)
def test_merge_refuses_runs_that_are_not_one_runs_processes(processes, message) -> None:
    runs = [_run((1.0,) * 3, (1.0,) * 3, process=p) for p in processes]
    with pytest.raises(ResultsFormatError, match=message):
        merge_processes(runs)


def test_merge_of_some_processes_is_kept_but_incomplete() -> None:
    from dataclasses import replace

    runs = [
        replace(_run((1.0,) * 3, (1.0,) * 3, process={"index": i, "count": 3}), run_id=f"r{i}")
        for i in (0, 2)
    ]
    merged = merge_processes(runs)
    assert not merged.complete
    assert merged.environment["missing_processes"] == [1]
    assert [c.device for c in merged.cases()] == ["cpu:0@p0", "cpu:0@p2"]
