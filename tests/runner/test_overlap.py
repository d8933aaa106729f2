"""The second process measuring beside the first: when a run overlaps, how the two take
turns to lead the groups, and how a follower keeps to its leader's pace and timeouts."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import jax
import pytest

from jitbench import Mode, RunConfig, load_run, workload
from jitbench.errors import ConfigError
from jitbench.measure import diagnose
from jitbench.measure.devices import resolve_devices
from jitbench.measure.protocol import skips_to_json
from jitbench.measure.threads import allowed_cores
from jitbench.results import Measurement, Status
from jitbench.results.files import load_programs
from jitbench.runner import overlap
from jitbench.runner.executors import InProcessExecutor, Turns
from jitbench.runner.plan import PlannedCase, case_key, group_cases, plan_cases
from tests.conftest import run_cli
from tests.runner.test_allocation import run_of

TWO_CORES = len(allowed_cores()) >= 2


def _vec(rng, *, dtype, n):  # type: ignore[no-untyped-def]
    return (rng.standard_normal(n).astype(dtype),)


@workload(inputs=_vec, sizes={"S": {"n": 4}}, name="twice")
def twice(xp, x):  # type: ignore[no-untyped-def]
    return x * 2.0


@workload(inputs=_vec, sizes={"S": {"n": 4}, "M": {"n": 8}, "L": {"n": 16}}, name="triple")
def triple(xp, x):  # type: ignore[no-untyped-def]
    return x * 3.0


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


def _twice(config: RunConfig) -> tuple[RunConfig, list[jax.Device], PlannedCase]:
    """`config`, the default devices and the one planned case of `twice`."""
    devices = resolve_devices([])
    [planned] = plan_cases([twice], config, devices)
    return config, devices, planned


def _following(
    planned: PlannedCase,
    *,
    leader_alive: Callable[[], bool] = lambda: True,
    followed: list[Measurement] | None = None,
) -> Turns:
    """Turns that follow the group of `planned`."""
    return Turns(frozenset({overlap.group_key([planned])}), leader_alive, followed)


def test_the_leader_marks_each_group_and_a_follower_waits_for_the_mark(
    tmp_path: Path,
) -> None:
    config, devices, planned = _twice(RunConfig.quick_settings())
    lead = InProcessExecutor(config, devices, shared_compiles=tmp_path)
    result, _ = lead.measure([planned])
    assert {m.status for m in result} == {Status.OK}
    [mark] = tmp_path.glob(f"*/{overlap.OPENED_FILE}")
    body = json.loads(mark.read_text())
    assert body["skips"] == []  # nothing timed out
    assert len(body["measurements"]) == len(result)  # for the first process to record
    # The follower waits while the mark is away, and goes on once it is back.
    held = mark.read_text()
    mark.unlink()
    writer = threading.Timer(0.2, lambda: mark.write_text(held))
    follower = InProcessExecutor(
        config, devices, shared_compiles=tmp_path, check_outputs=False, turns=_following(planned)
    )
    before = overlap.waited_s()
    began = time.monotonic()
    writer.start()
    result, _ = follower.measure([planned])
    writer.join()
    assert time.monotonic() - began >= 0.2 and overlap.waited_s() - before > 0
    assert {m.status for m in result} == {Status.OK}
    assert mark.read_text() == held  # a follower marks nothing


def test_the_two_take_turns_to_lead_pairs_of_groups() -> None:
    config = RunConfig(sizes=("S", "M", "L"))
    groups = group_cases(plan_cases([triple], config, resolve_devices([])))
    keys = [overlap.group_key(g) for g in groups]
    first = overlap.led_groups(groups, second=False, turns=True)
    second = overlap.led_groups(groups, second=True, turns=True)
    assert first == {keys[0], keys[2]} and second == {keys[1]}
    # The second leads one group of each pair while the first leads the other.
    assert [pc.size for pc in overlap.turn_order(groups)] == ["M", "S", "L"]
    # Without turns (--rounds), the first leads every group.
    assert overlap.led_groups(groups, second=False, turns=False) == set(keys)
    assert overlap.led_groups(groups, second=True, turns=False) == set()
    with_rounds = replace(config, plan=replace(config.plan, rounds=2))
    assert overlap.takes_turns(config) and not overlap.takes_turns(with_rounds)


def test_the_first_process_records_what_the_leader_measured_and_keeps_its_own(
    tmp_path: Path,
) -> None:
    config, devices, planned = _twice(RunConfig.quick_settings())
    led, _ = InProcessExecutor(config, devices, shared_compiles=tmp_path).measure([planned])
    own: list[Measurement] = []
    first = InProcessExecutor(
        config, devices, shared_compiles=tmp_path, turns=_following(planned, followed=own)
    )
    recorded, _ = first.measure([planned])
    # The run's part 0 holds the leader's measurements, with the compiles it timed ...
    assert [m.samples_s for m in recorded] == [m.samples_s for m in led]
    jit = next(m for m in recorded if m.mode is Mode.JIT)
    assert jit.compile is not None and jit.compile.compile_count == 1
    assert jit.compile.program_text  # lent by the follower: a mark carries no program text
    # ... and the first's own, programs loaded (no compiles), are the run's second part.
    assert {m.mode for m in own} == {m.mode for m in led}
    assert all(m.compile is None for m in own)
    part = overlap.second_part(run_of(*led), own)
    assert part.measurements == tuple(own)


def test_a_follower_whose_leader_died_leads_the_group_itself(tmp_path: Path) -> None:
    config, devices, planned = _twice(RunConfig.quick_settings())
    # The leader compiled and kept its programs, then died before its mark.
    InProcessExecutor(config, devices, shared_compiles=tmp_path).measure([planned])
    [mark] = tmp_path.glob(f"*/{overlap.OPENED_FILE}")
    mark.unlink()
    own: list[Measurement] = []
    first = InProcessExecutor(
        config,
        devices,
        shared_compiles=tmp_path,
        turns=_following(planned, leader_alive=lambda: False, followed=own),
    )
    result, _ = first.measure([planned])  # no mark comes: it does not wait for ever
    assert {m.status for m in result} == {Status.OK} and own == []
    # Compiled here, in a folder of its own: not a load of what the dead leader left.
    jit = next(m for m in result if m.mode is Mode.JIT)
    assert jit.compile is not None and jit.compile.compile_count == 1
    [mark] = tmp_path.glob(f"*/taken-over/{overlap.OPENED_FILE}")  # marked, as a leader does
    assert json.loads(mark.read_text())["skips"] == []


@pytest.mark.parametrize("retry", [False, True])
def test_a_follower_leaves_out_a_mode_that_timed_out_in_the_first_process(
    tmp_path: Path, retry: bool
) -> None:
    config, devices, planned = _twice(RunConfig.quick_settings(timeout_s=5.0, retry_timeouts=retry))
    InProcessExecutor(config, devices, shared_compiles=tmp_path).measure([planned])
    [mark] = tmp_path.glob(f"*/{overlap.OPENED_FILE}")
    why = "eager exceeded --timeout 5 s"
    body = json.loads(mark.read_text())
    body["skips"] = skips_to_json({(case_key(planned), Mode.EAGER): why})
    mark.write_text(json.dumps(body))
    follower = InProcessExecutor(
        config, devices, shared_compiles=tmp_path, check_outputs=False, turns=_following(planned)
    )
    result, _ = follower.measure([planned])
    eager = next(m for m in result if m.mode is Mode.EAGER)
    if retry:
        assert eager.status is Status.OK
    else:
        assert eager.status is Status.SKIPPED
        assert eager.diagnostics[0].code == diagnose.TIMED_OUT_BEFORE
        assert why in eager.diagnostics[0].message


# Right at S, wrong on the JAX side at M: the group the second process leads.
TURNS_SUITE = """
from jitbench import workload

def vec(rng, *, dtype, n):
    return (rng.standard_normal(n).astype(dtype),)

@workload(inputs=vec, sizes={"S": {"n": 64}, "M": {"n": 256}})
def wrong_at_m(xp, x):
    return 2 * x + (1 if xp.__name__ != "numpy" and x.shape[0] == 256 else 0)
"""


@pytest.mark.e2e  # a `jitbench run` process and its overlapping worker
@pytest.mark.skipif(not TWO_CORES, reason="two processes side by side need two cores")
def test_a_real_overlapping_run_pools_both_processes_and_counts_neither_as_another(
    tmp_path: Path,
) -> None:
    suite = tmp_path / "turns_suite.py"
    suite.write_text(TURNS_SUITE)
    out = tmp_path / "out"
    proc = run_cli(
        "run", "--suite", str(suite), "--quick", "--processes", "2", "--overlap",
        "-s", "S,M", "--out", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    [path] = (out / "runs").glob("*.json")
    run = load_run(path)
    assert run.config.settings is not None and run.config.settings.overlap is True
    assert run.processes == 2
    status = {(m.case.size, m.mode): m.status for m in run.measurements}
    # S was led by the first process, M by the second, which compared its outputs too.
    assert {status["S", mode] for mode in (Mode.NUMPY, Mode.EAGER, Mode.JIT)} == {Status.OK}
    assert status["M", Mode.NUMPY] is Status.OK
    assert status["M", Mode.EAGER] is status["M", Mode.JIT] is Status.MISMATCH
    assert all(len(m.run_sample_counts) == 2 for m in run.measurements if m.ok)
    # Each process's snapshots count both processes' cores as jitbench's.
    for snapshot in ("machine_before", "machine_after"):
        assert run.environment[snapshot]["cores_used"] == 2
    # One compile per program, timed by the process that led its group (the other loaded
    # it); its text kept for the program gate.
    [jit] = [m for m in run.measurements if m.mode is Mode.JIT and m.ok]
    assert jit.compile is not None and jit.compile.compile_count == 1
    assert {key.split("|")[1] for key in load_programs(path)} == {"S", "M"}


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


@pytest.mark.e2e  # a worker process started and ended
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
