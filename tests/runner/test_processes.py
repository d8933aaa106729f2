"""--processes: the run measured again in worker processes and pooled."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from jitbench import Mode, RunConfig, load_run
from jitbench.results.model import Selection
from jitbench.runner.events import ProcessStarted, RunInterrupted
from jitbench.runner.processes import run_in_processes
from tests.conftest import TINY_SUITE, run_cli
from tests.results.test_codec import make_run

SELECTION = (Selection(workload="w", suite="/nowhere/suite.py"),)


def _part(factor: float, run_id: str = "r1"):  # type: ignore[no-untyped-def]
    run = make_run(run_id=run_id)
    ms = tuple(
        replace(m, samples_s=tuple(x * factor for x in m.samples_s * 2)) for m in run.measurements
    )
    return replace(run, measurements=ms)


def test_parts_are_pooled_with_each_process_share_checkpointed_and_announced() -> None:
    events: list[object] = []
    saved = []
    calls = []

    def worker(selection, config):  # type: ignore[no-untyped-def]
        calls.append((selection, config.processes))
        return _part(1.5, run_id="worker")

    run = run_in_processes(
        lambda: _part(1.0),
        SELECTION,
        RunConfig(processes=3),
        on_event=events.append,
        checkpoint=saved.append,
        worker=worker,
    )
    assert calls == [(SELECTION, 3), (SELECTION, 3)]
    assert events == [ProcessStarted(index=2, total=3), ProcessStarted(index=3, total=3)]
    assert [r.complete for r in saved] == [False, True]
    assert run.run_id == "r1" and run.processes == 3
    assert all(m.run_sample_counts == (6, 6, 6) for m in run.measurements)


def test_an_interrupt_in_a_worker_keeps_the_processes_measured_so_far() -> None:
    saved = []

    def worker(selection, config):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt

    with pytest.raises(RunInterrupted) as info:
        run_in_processes(
            lambda: _part(1.0),
            SELECTION,
            RunConfig(processes=2),
            checkpoint=saved.append,
            worker=worker,
        )
    assert info.value.partial.measurements == _part(1.0).measurements
    assert saved and not saved[-1].complete


def test_processes_must_be_a_positive_whole_number() -> None:
    from jitbench import ConfigError

    for bad in (0, -1, 1.5, True):
        with pytest.raises(ConfigError, match="--processes"):
            RunConfig(processes=bad)  # type: ignore[arg-type]


def test_real_run_in_two_processes_pools_both_and_widens_nothing_it_cannot_see(
    tmp_path: Path,
) -> None:
    suite = tmp_path / "tiny.py"
    suite.write_text(TINY_SUITE)
    out = tmp_path / "out"
    proc = run_cli(
        "run", "double", "--suite", str(suite), "--quick", "--processes", "2",
        "--rounds", "2", "--min-samples", "6", "--out", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "worker process 2/2" in proc.stderr
    [path] = (out / "runs").glob("*.json")
    run = load_run(path)
    assert run.config.settings is not None and run.config.settings.processes == 2
    assert run.processes == 2
    assert all(len(m.run_sample_counts) == 2 for m in run.measurements if m.ok)
    jit = run.speedup(run.cases()[0].key, Mode.JIT)
    assert jit is not None and jit.low is not None and jit.low < jit.value < jit.high
    # The worker loaded the program the first process compiled: its cold call is no
    # compile, so the compiles are the first process's three (with rounds: 1 + 2 repeats).
    [compiled] = [m for m in run.measurements if m.mode is Mode.JIT]
    assert compiled.compile is not None and compiled.compile.compile_count == 1
    assert compiled.compile.compile_repeats_s is not None
    assert len(compiled.compile.compile_repeats_s) == 3
    assert min(compiled.compile.compile_repeats_s) > 0
