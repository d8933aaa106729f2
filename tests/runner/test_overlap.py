"""The second process measuring beside the first: when a run overlaps, how processes side
by side meet and end together, and a real overlapping run."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from jitbench import Mode, RunConfig, load_run, workload
from jitbench.errors import ConfigError
from jitbench.measure.threads import allowed_cores
from jitbench.results import Status
from jitbench.results.files import load_programs
from jitbench.runner import overlap
from jitbench.runner.channel import Channel
from tests.conftest import run_cli

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


def test_rounds_with_a_timeout_may_overlap() -> None:
    """Each process measures every case on its own (no group waits for another's mark),
    so a mode reaching --timeout in a later round is each process's own to record."""
    rounds = RunConfig(timeout_s=5.0)
    rounds = replace(rounds, plan=replace(rounds.plan, rounds=3))
    assert overlap.may_overlap(rounds) is TWO_CORES


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


def _peers() -> tuple[overlap.Peer, overlap.Peer]:
    """Two ends of one channel, as the first process and the second have (here, both in
    this process)."""
    here, there = multiprocessing.Pipe()
    return overlap.Peer(Channel(here)), overlap.Peer(Channel(there))


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
    # Each process compared its own outputs: M's mismatch is the run's.
    assert {status["S", mode] for mode in (Mode.NUMPY, Mode.EAGER, Mode.JIT)} == {Status.OK}
    assert status["M", Mode.NUMPY] is Status.OK
    assert status["M", Mode.EAGER] is status["M", Mode.JIT] is Status.MISMATCH
    assert all(len(m.run_sample_counts) == 2 for m in run.measurements if m.ok)
    # Each process's snapshots count both processes' cores as jitbench's.
    for snapshot in ("machine_before", "machine_after"):
        assert run.environment[snapshot]["cores_used"] == 2
    # Each process compiled its own program: both cold compiles pooled, the text kept for
    # the program gate.
    [jit] = [m for m in run.measurements if m.mode is Mode.JIT and m.ok]
    assert jit.compile is not None and jit.compile.compile_count == 1
    assert jit.compile.compile_repeats_s is not None and len(jit.compile.compile_repeats_s) == 2
    assert {key.split("|")[1] for key in load_programs(path)} == {"S", "M"}


def test_the_first_process_waits_for_the_follower_to_start_or_to_die() -> None:
    here, there = multiprocessing.Pipe()
    there.close()
    assert overlap.wait_started(Channel(here)) is None  # died before it started
    first, second = _peers()
    starting = threading.Timer(0.1, second.meet)
    starting.start()
    assert overlap.wait_started(first.channel) == os.getpid()
    starting.join()


def test_two_extra_processes_each_wait_for_the_other_or_for_the_limit() -> None:
    parent, alone = _peers()
    alone.together = True
    began = time.monotonic()
    # The other never starts: this one measures after the limit, alone.
    assert alone.meet(limit_s=0.1) == ()
    assert time.monotonic() - began >= 0.1
    assert overlap.wait_started(parent.channel) == os.getpid()  # it said it started


def test_processes_started_together_start_and_end_together() -> None:
    """The parent passes on what a pair says: each starts once both have started (knowing
    the other's pid) and ends once both have finished."""
    ends = [_peers() for _ in range(2)]
    for _, worker in ends:
        worker.together = True
    met: list[tuple[int, ...]] = []
    finished: list[float] = []

    def one_of_the_pair(peer: overlap.Peer, delay: float) -> None:
        time.sleep(delay)
        met.append(peer.meet())
        time.sleep(delay)
        peer.end_together()
        finished.append(time.monotonic())

    threads = [
        threading.Thread(target=one_of_the_pair, args=(worker, delay))
        for (_, worker), delay in zip(ends, (0.0, 0.2), strict=True)
    ]
    began = time.monotonic()
    for thread in threads:
        thread.start()
    assert overlap.pair_up([parent.channel for parent, _ in ends])
    for thread in threads:
        thread.join()
    assert met == [(os.getpid(),), (os.getpid(),)]
    assert min(finished) - began >= 0.4  # the quick one waited for the slow one


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
    from jitbench.runner.worker import start_worker

    standby = start_worker()
    standby.dismiss()
    assert not standby.alive()


@pytest.mark.e2e
@pytest.mark.skipif(not TWO_CORES, reason="two processes side by side need two cores")
def test_two_real_extra_processes_measure_side_by_side_on_a_core_each(tiny_suite: Path) -> None:
    """A pair of worker processes (`SideBySide.pair`): each pinned to a core of its own,
    both measure the cases they are given, and each counts both cores as jitbench's."""
    from jitbench.runner.processes import worker_args
    from jitbench.runner.scheduler import measure_selection
    from jitbench.suite.discovery import discover
    from jitbench.suite.selection import selection_of

    [double] = [w for name, w in discover([tiny_suite]).workloads.items() if name == "double"]
    config = RunConfig.quick_settings(sizes=("S",), processes=2)
    cores = overlap.plan_overlap(replace(config, overlap=True), resuming=False)
    assert cores is not None
    key = ("double", "S", "cpu:0", "float32")
    side = overlap.SideBySide(cores, None)
    told: list[tuple[str, ...]] = []
    args = worker_args(selection_of([double]), config, None, [key])
    runs = side.pair(measure_selection, args, lambda i, n, ms: told.append(ms[0].case.key))
    assert told == [key, key]  # each case as it finished, from both
    assert [[c.key for c in run.cases()] for run in runs] == [[key], [key]]
    for run in runs:
        assert {m.status for m in run.measurements} == {Status.OK}
        assert run.environment["machine_after"]["cores_used"] == 2
