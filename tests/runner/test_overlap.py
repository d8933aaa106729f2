"""The second process measuring beside the first: when a run overlaps, and how the
follower keeps to the first process's pace and its timeouts."""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from jitbench import Mode, RunConfig, load_run, workload
from jitbench.errors import ConfigError
from jitbench.measure import diagnose
from jitbench.measure.devices import resolve_devices
from jitbench.measure.protocol import skips_to_json
from jitbench.measure.threads import allowed_cores
from jitbench.results import Status
from jitbench.runner import overlap
from jitbench.runner.executors import InProcessExecutor
from jitbench.runner.plan import case_key, plan_cases
from tests.conftest import run_cli

TWO_CORES = len(allowed_cores()) >= 2


def _vec(rng, *, dtype, n):  # type: ignore[no-untyped-def]
    return (rng.standard_normal(n).astype(dtype),)


@workload(inputs=_vec, sizes={"S": {"n": 4}}, name="twice")
def twice(xp, x):  # type: ignore[no-untyped-def]
    return x * 2.0


@pytest.mark.parametrize(
    ("settings", "why"),
    [
        ({"isolate": True}, "--isolate"),
        ({"threads": None}, "--threads all"),
        # As many threads as cores: two such processes cannot both be pinned.
        ({"threads": len(allowed_cores())}, f"need {2 * len(allowed_cores())} cores"),
    ],
)
def test_a_run_that_cannot_overlap_measures_in_turn_and_refuses_to_be_told_to(
    settings: dict[str, object], why: str
) -> None:
    config = RunConfig(**settings)  # type: ignore[arg-type]
    assert overlap.plan_overlap(config, resuming=False) is None
    with pytest.raises(ConfigError, match=f"--overlap: .*{why}.*leave out --overlap"):
        overlap.plan_overlap(replace(config, overlap=True), resuming=False)


def test_one_process_no_overlap_or_a_resume_measure_in_turn() -> None:
    assert overlap.plan_overlap(RunConfig(processes=1, overlap=True), resuming=False) is None
    assert overlap.plan_overlap(RunConfig(overlap=False), resuming=False) is None
    assert overlap.plan_overlap(RunConfig(), resuming=True) is None
    # A run recorded as overlapped is resumed in turn, not refused.
    assert overlap.plan_overlap(RunConfig(overlap=True), resuming=True) is None


def test_rounds_with_a_timeout_measure_in_turn() -> None:
    rounds = RunConfig(timeout_s=5.0)
    rounds = replace(rounds, plan=replace(rounds.plan, rounds=3))
    assert overlap.plan_overlap(rounds, resuming=False) is None
    with pytest.raises(ConfigError, match="--rounds and --timeout"):
        overlap.plan_overlap(replace(rounds, overlap=True), resuming=False)


def test_a_default_run_overlaps_on_two_cores_one_each() -> None:
    plan = overlap.plan_overlap(RunConfig(), resuming=False)
    if not TWO_CORES:
        assert plan is None
        return
    assert plan is not None
    assert len(plan.first) == len(plan.second) == 1 and not plan.first & plan.second
    assert plan.first | plan.second <= set(allowed_cores()) and plan.count == 2


def test_the_config_records_overlap_and_older_files_measured_in_turn() -> None:
    assert RunConfig().overlap is None
    assert RunConfig.from_dict({"sizes": ["S"]}).overlap is False
    assert RunConfig.from_dict(RunConfig(overlap=True).to_dict()).overlap is True
    with pytest.raises(ConfigError, match="--overlap is a flag"):
        RunConfig(overlap="yes")  # type: ignore[arg-type]


def test_the_first_process_marks_each_group_and_a_follower_waits_for_the_mark(
    tmp_path: Path,
) -> None:
    config = RunConfig.quick_settings()
    devices = resolve_devices([])
    [planned] = plan_cases([twice], config, devices)
    lead = InProcessExecutor(config, devices, shared_compiles=tmp_path)
    result, _ = lead.measure([planned])
    assert {m.status for m in result} == {Status.OK}
    [mark] = tmp_path.glob(f"*/{overlap.OPENED_FILE}")
    assert json.loads(mark.read_text()) == []  # nothing timed out
    # The follower waits while the mark is away, and goes on once it is back.
    held = mark.read_text()
    mark.unlink()
    writer = threading.Timer(0.2, lambda: mark.write_text(held))
    follower = InProcessExecutor(
        config, devices, shared_compiles=tmp_path, check_outputs=False, follow=True
    )
    before = overlap.waited_s()
    began = time.monotonic()
    writer.start()
    result, _ = follower.measure([planned])
    writer.join()
    assert time.monotonic() - began >= 0.2 and overlap.waited_s() - before > 0
    assert {m.status for m in result} == {Status.OK}
    assert mark.read_text() == held  # a follower marks nothing


@pytest.mark.parametrize("retry", [False, True])
def test_a_follower_leaves_out_a_mode_that_timed_out_in_the_first_process(
    tmp_path: Path, retry: bool
) -> None:
    config = RunConfig.quick_settings(timeout_s=5.0, retry_timeouts=retry)
    devices = resolve_devices([])
    [planned] = plan_cases([twice], config, devices)
    InProcessExecutor(config, devices, shared_compiles=tmp_path).measure([planned])
    [mark] = tmp_path.glob(f"*/{overlap.OPENED_FILE}")
    why = "eager exceeded --timeout 5 s"
    mark.write_text(json.dumps(skips_to_json({(case_key(planned), Mode.EAGER): why})))
    follower = InProcessExecutor(
        config, devices, shared_compiles=tmp_path, check_outputs=False, follow=True
    )
    result, _ = follower.measure([planned])
    eager = next(m for m in result if m.mode is Mode.EAGER)
    if retry:
        assert eager.status is Status.OK
    else:
        assert eager.status is Status.SKIPPED
        assert eager.diagnostics[0].code == diagnose.TIMED_OUT_BEFORE
        assert why in eager.diagnostics[0].message


@pytest.mark.skipif(not TWO_CORES, reason="two processes side by side need two cores")
def test_a_real_overlapping_run_pools_both_processes_and_counts_neither_as_another(
    tiny_suite: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    proc = run_cli(
        "run", "double", "--suite", str(tiny_suite), "--quick", "--processes", "2", "--overlap",
        "-s", "S,M", "--out", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    [path] = (out / "runs").glob("*.json")
    run = load_run(path)
    assert run.config.settings is not None and run.config.settings.overlap is True
    assert run.processes == 2
    assert all(len(m.run_sample_counts) == 2 for m in run.measurements if m.ok)
    # Each process's snapshots count both processes' cores as jitbench's.
    for snapshot in ("machine_before", "machine_after"):
        assert run.environment[snapshot]["cores_used"] == 2
    # The compiles are the first process's: the second loaded its programs.
    assert all(m.compile.compile_count == 1 for m in run.measurements if m.mode is Mode.JIT)


def test_the_first_process_waits_for_the_follower_to_start_or_to_die(tmp_path: Path) -> None:
    assert overlap.wait_ready(tmp_path, lambda: False) == ()  # died before it was ready
    waiting = threading.Timer(0.1, lambda: overlap.mark_ready(tmp_path))
    waiting.start()
    assert overlap.wait_ready(tmp_path, lambda: True) == (os.getpid(),)
    waiting.join()


def test_two_extra_processes_each_wait_for_the_other_or_for_the_limit(tmp_path: Path) -> None:
    overlap.mark_ready(tmp_path)
    began = time.monotonic()
    # The other never starts: this one measures after the limit, alone.
    assert overlap.wait_ready(tmp_path, lambda: True, count=2, limit_s=0.1) == (os.getpid(),)
    assert time.monotonic() - began >= 0.1
    (tmp_path / f"{overlap.READY_PREFIX}12345").touch()  # the other, started
    assert sorted(overlap.wait_ready(tmp_path, lambda: True, count=2)) == sorted(
        (os.getpid(), 12345)
    )


def test_a_run_that_may_overlap_is_told_by_its_settings() -> None:
    assert overlap.may_overlap(RunConfig()) is TWO_CORES
    assert not overlap.may_overlap(RunConfig(processes=1))
    assert not overlap.may_overlap(RunConfig(overlap=False))
    assert not overlap.may_overlap(RunConfig(isolate=True))
    assert not overlap.may_overlap(RunConfig(threads=None))
    assert not overlap.may_overlap(RunConfig(devices=("cpu", "gpu")))
    assert overlap.may_overlap(RunConfig(devices=("cpu:0",))) is TWO_CORES


def test_a_standby_worker_not_given_work_ends_when_dismissed() -> None:
    from jitbench.runner.processes import start_standby

    standby = start_standby()
    standby.dismiss()
    assert not standby.alive()


def test_processes_started_together_end_together(tmp_path: Path) -> None:
    def the_other_finishes() -> None:
        (tmp_path / "done").mkdir(exist_ok=True)
        (tmp_path / "done" / f"{overlap.READY_PREFIX}12345").touch()

    other = threading.Timer(0.1, the_other_finishes)
    began = time.monotonic()
    other.start()
    overlap.end_together(tmp_path, 2)
    other.join()
    assert time.monotonic() - began >= 0.1
    assert len(list((tmp_path / "done").iterdir())) == 2
