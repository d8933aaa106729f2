"""--processes: the run measured again in worker processes and pooled."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from jitbench import Mode, RunConfig, SamplingPlan, load_run
from jitbench.results import dump_run, run_from_dict
from jitbench.results.analysis import analyse
from jitbench.results.merge import pool_runs
from jitbench.results.model import Selection
from jitbench.runner import processes
from jitbench.runner.events import ProcessStarted, RunInterrupted
from jitbench.runner.processes import run_in_processes
from tests.conftest import REPO, TINY_SUITE, run_cli
from tests.results.test_codec import make_run

SELECTION = (Selection(workload="w", suite="/nowhere/suite.py"),)


class _Side:
    """What `run_in_processes` asks of an overlapping run's `SideBySide`, here: the second
    process (`beside`) and the extra processes two at a time (`pair(cases)`)."""

    def __init__(self, beside=None, pair=None):  # type: ignore[no-untyped-def]
        self.beside, self._pair = beside, pair

    def second(self):  # type: ignore[no-untyped-def]
        return self.beside

    def pair(self, target, cases, on_case):  # type: ignore[no-untyped-def]
        return self._pair(cases)


def _pooled_here(first, config, *, worker, side=None, **kwargs):  # type: ignore[no-untyped-def]
    """`run_in_processes` with `first()` as the first process and `worker(cases)` measuring
    in this process in place of each worker process."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(processes, "run_worker", lambda target, cases, on_case: worker(cases))
        return run_in_processes(
            lambda _on_event: first(),
            lambda _first_run, cases: (None, cases),
            config,
            side=side,
            **kwargs,
        )


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

    def worker(cases=None):  # type: ignore[no-untyped-def]
        calls.append(cases)
        # (Its speedups are the first's, its times 1.2x: no case asks for an extra process.)
        return _part(1.2, run_id="worker")

    run = _pooled_here(
        lambda: _part(1.0),
        RunConfig(processes=3),
        on_event=events.append,
        checkpoint=saved.append,
        worker=worker,
    )
    assert calls == [None, None]
    assert events == [ProcessStarted(index=2, total=3), ProcessStarted(index=3, total=3)]
    assert [r.complete for r in saved] == [False, True]
    assert run.run_id == "r1" and run.processes == 3
    assert all(m.run_sample_counts == (6, 6, 6) for m in run.measurements)


def test_the_pooled_run_says_how_the_machine_was_after_the_last_process() -> None:
    def with_load(run, load):  # type: ignore[no-untyped-def]
        after = {"load_1min": load}
        return replace(run, environment={**run.environment, "machine_after": after})

    first = with_load(_part(1.0), 0.5)
    run = _pooled_here(
        lambda: first,
        RunConfig(processes=2),
        worker=lambda cases=None: with_load(_part(1.2, run_id="worker"), 7.0),
    )
    assert run.run_id == "r1"
    assert run.environment["machine_after"] == {"load_1min": 7.0}
    assert run.environment.get("machine_before") == first.environment.get("machine_before")


def test_an_interrupt_in_a_worker_keeps_the_processes_measured_so_far() -> None:
    saved = []

    def worker(cases=None):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt

    with pytest.raises(RunInterrupted) as info:
        _pooled_here(
            lambda: _part(1.0),
            RunConfig(processes=2),
            checkpoint=saved.append,
            worker=worker,
        )
    assert info.value.partial.measurements == _part(1.0).measurements
    assert saved and not saved[-1].complete


def test_a_resumed_run_that_pooled_some_workers_measures_only_the_others() -> None:
    calls: list[int] = []
    saved: list[object] = []
    events: list[object] = []

    def worker_of(processes: int):  # type: ignore[no-untyped-def]
        def worker(cases=None):  # type: ignore[no-untyped-def]
            calls.append(processes)
            return _part(1.2, run_id="worker")

        return worker

    run = _pooled_here(
        lambda: _pooled_here(lambda: _part(1.0), RunConfig(processes=2), worker=worker_of(2)),
        # processes 1 and 2 of 3, pooled (as a partial run's file holds them)
        RunConfig(processes=3),
        on_event=events.append,
        checkpoint=saved.append,
        worker=worker_of(3),
    )
    assert calls == [2, 3] and events == [ProcessStarted(index=3, total=3)]
    assert [r.complete for r in saved] == [True]
    assert all(m.run_sample_counts == (6, 6, 6) for m in run.measurements)


def _resumable_processes(
    monkeypatch: pytest.MonkeyPatch, stop: Callable[[], None]
) -> tuple[list[float], list[int]]:
    """Workers measured in this process (`measure_selection`), each calling `stop` first (to
    interrupt the run there); the budgets every process sampled with (schedule's plan), and
    the worker processes' calls by index, are recorded."""
    from jitbench.runner import scheduler

    budgets: list[float] = []
    workers: list[int] = []
    real_schedule = scheduler.schedule

    def spy(cases, *args, plan, **kwargs):  # type: ignore[no-untyped-def]
        budgets.append(plan.budget_s)
        return real_schedule(cases, *args, plan=plan, **kwargs)

    def worker_here(target, args, on_case):  # type: ignore[no-untyped-def]
        workers.append(args[1].processes)
        stop()
        return worker_in_this_process(target, args, on_case)

    monkeypatch.setattr(scheduler, "schedule", spy)
    monkeypatch.setattr(processes, "run_worker", worker_here)
    return budgets, workers


def _three_processes() -> RunConfig:
    quick = RunConfig.quick_settings(sizes=("S", "M"))
    # One after another: the workers run here, in this test's process.
    return replace(quick, processes=3, plan=replace(quick.plan, budget_s=0.03), overlap=False)


def test_a_run_stopped_in_a_worker_process_is_resumed_with_the_workers_it_lacks(
    monkeypatch: pytest.MonkeyPatch, tiny_suite: Path, tmp_path: Path
) -> None:
    """Stopped during worker process 3 of 3 (the file pools processes 1 and 2): the resume
    measures that process, and the run pools all three, each with its share of the budget;
    it does not call the run finished with two."""
    import jitbench
    from jitbench.runner.events import RunStarted

    def stop_in_worker_3() -> None:
        if len(workers) == 2:
            raise KeyboardInterrupt

    budgets, workers = _resumable_processes(monkeypatch, lambda: stop_in_worker_3())
    with pytest.raises(RunInterrupted) as info:
        jitbench.run(["double"], suites=[tiny_suite], config=_three_processes(), out=tmp_path)
    path = info.value.saved_to
    partial = load_run(path)
    assert not partial.complete and budgets == pytest.approx([0.01, 0.01])
    assert {len(m.run_sample_counts) for m in partial.measurements} == {2}
    budgets.clear(), workers.clear()
    events: list[object] = []
    run = jitbench.run(resume=path, on_event=events.append)
    assert workers == [3] and budgets == pytest.approx([0.01])  # worker 3 alone
    assert not any(isinstance(e, RunStarted) for e in events)
    assert run.complete and run.config.resumed_at and load_run(path).complete
    assert {len(m.run_sample_counts) for m in run.measurements} == {3}
    assert run.processes == 3


def test_a_run_stopped_in_its_first_process_is_resumed_in_its_share_then_the_workers(
    monkeypatch: pytest.MonkeyPatch, tiny_suite: Path, tmp_path: Path
) -> None:
    """Stopped during the first process (after its first case): the resume measures the
    other case with the first process's share of the budget, not all of it, then both
    worker processes, and announces the three processes."""
    import jitbench
    from jitbench.runner.events import CaseFinished, RunStarted

    budgets, workers = _resumable_processes(monkeypatch, lambda: None)

    def stop_after_the_first_case(event: object) -> None:
        if isinstance(event, CaseFinished):
            raise KeyboardInterrupt

    with pytest.raises(RunInterrupted) as info:
        jitbench.run(
            ["double"],
            suites=[tiny_suite],
            config=_three_processes(),
            out=tmp_path,
            on_event=stop_after_the_first_case,
        )
    path = info.value.saved_to
    assert {m.case.size for m in load_run(path).measurements} == {"S"}
    budgets.clear()
    events: list[object] = []
    run = jitbench.run(resume=path, on_event=events.append)
    assert budgets == pytest.approx([0.01, 0.01, 0.01]) and workers == [3, 3]
    [started] = [e for e in events if isinstance(e, RunStarted)]
    assert (started.done_cases, started.processes) == (1, 3)
    assert run.complete and {m.case.size for m in run.measurements} == {"S", "M"}
    assert {len(m.run_sample_counts) for m in run.measurements} == {3}


def test_processes_must_be_a_positive_whole_number() -> None:
    from jitbench import ConfigError

    for bad in (0, -1, 1.5, True):
        with pytest.raises(ConfigError, match="--processes"):
            RunConfig(processes=bad)  # type: ignore[arg-type]


@pytest.mark.e2e
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
    jit = analyse(run).speedup(run.cases()[0].key, Mode.JIT)
    assert jit is not None and jit.low is not None and jit.low < jit.value < jit.high
    # The compiles are the first process's three (with rounds: 1 + 2 repeats); a worker
    # after it loads its program (no compile), the one beside it compiles its own (one).
    [compiled] = [m for m in run.measurements if m.mode is Mode.JIT]
    assert compiled.compile is not None and compiled.compile.compile_count == 1
    assert compiled.compile.compile_repeats_s is not None
    beside = run.config.settings.overlap
    assert len(compiled.compile.compile_repeats_s) == (4 if beside else 3)
    assert min(compiled.compile.compile_repeats_s) > 0


def test_two_processes_by_default_one_for_a_smoke_run_and_for_older_files() -> None:
    assert RunConfig().processes == 2
    assert RunConfig.quick_settings().processes == 1
    assert RunConfig.from_dict({"sizes": ["S"]}).processes == 1  # before --processes


def test_a_plans_share_for_each_process_splits_the_budget_and_the_floor() -> None:
    plan = SamplingPlan(budget_s=0.3, floor_samples=10, max_samples=400, rounds=2)
    share = plan.for_process(3)
    assert share.budget_s == pytest.approx(0.1)
    # The floor is the case's too (rounded up: the processes give at least the whole);
    # the cap and the rounds stay as they are.
    assert (share.floor_samples, share.max_samples, share.rounds) == (4, 400, 2)
    assert plan.for_process(2).floor_samples == 5
    assert plan.for_process(1) is plan


class _Conn:
    """What `measure_selection` sends to, in this process (a pipe would fill up unread)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []

    def send(self, message: tuple[str, Any]) -> None:
        self.sent.append(pickle.loads(pickle.dumps(message)))  # as a pipe carries it

    def close(self) -> None:
        pass


def worker_in_this_process(target, args, on_case=None):  # type: ignore[no-untyped-def]
    """Run a worker's `target` here, as `processes.run_worker` would in a worker process
    (the same arguments, the same messages on its connection, pickled), and return its
    run."""
    conn = _Conn()
    target(conn, *args)
    for kind, body in conn.sent:
        if kind == "case" and on_case is not None:
            on_case(body[0], body[1], list(body[2]))
    [(kind, body)] = [m for m in conn.sent if m[0] != "case"]
    assert kind == "ok", body
    return body


def test_each_process_samples_with_its_share_of_the_cases_budget(
    monkeypatch: pytest.MonkeyPatch, tiny_suite: Path
) -> None:
    """The budget is the case's, however many processes measure it: the first process and
    each worker sample with a third of it here, and the run records the whole budget."""
    import jitbench

    budgets, workers = _resumable_processes(monkeypatch, stop=lambda: None)
    quick = RunConfig.quick_settings()
    plan = replace(quick.plan, budget_s=0.03)
    config = replace(quick, processes=3, plan=plan, overlap=False)  # the workers run here
    run = jitbench.run(["double"], suites=[tiny_suite], config=config)
    assert budgets == pytest.approx([0.01, 0.01, 0.01]) and workers == [3, 3]
    assert run.processes == 3 and run.config.settings is not None
    assert run.config.settings.plan.budget_s == 0.03 and run.config.settings.processes == 3


def test_workloads_no_worker_can_find_run_in_one_process_unless_more_are_asked_for() -> None:
    from jitbench import ConfigError, run_workloads, workload

    @workload(
        inputs=lambda rng, n: (rng.standard_normal(n),), sizes={"S": {"n": 8}, "M": {"n": 16}}
    )
    def here(xp, x):  # type: ignore[no-untyped-def]
        return x + 1

    events: list[object] = []
    with pytest.raises(ConfigError, match=r"'here' was not loaded from a suite file.*processes=1"):
        run_workloads([here], RunConfig.quick_settings(processes=2), on_event=events.append)
    assert events == []
    run = run_workloads([here], RunConfig.quick_settings(processes=1))
    assert run.complete and run.processes == 1
    # Without a configuration, the default's second process is left out for them.
    run = run_workloads([here])
    assert run.complete and run.processes == 1
    assert run.config.settings is not None and run.config.settings.processes == 1


def test_only_the_first_process_compares_the_outputs_with_numpy(
    monkeypatch: pytest.MonkeyPatch, tiny_suite: Path
) -> None:
    """A worker runs the programs the first process compiled and checked, on the same
    inputs: it does not compare them again, and the first process's mismatch stands."""
    import jitbench
    from jitbench.results import Status

    workers: list[jitbench.Run] = []

    def worker_here(target, args, on_case):  # type: ignore[no-untyped-def]
        workers.append(worker_in_this_process(target, args, on_case))
        return workers[-1]

    monkeypatch.setattr(processes, "run_worker", worker_here)
    config = RunConfig.quick_settings(processes=2, overlap=False)
    run = jitbench.run(["wrong_in_jit"], suites=[tiny_suite], config=config)
    assert {m.mode: m.status for m in run.measurements if m.mode is not Mode.NUMPY} == {
        Mode.EAGER: Status.MISMATCH,
        Mode.JIT: Status.MISMATCH,
    }
    [worker] = workers
    assert all(m.status is Status.OK for m in worker.measurements)


COUNTING_SUITE = """
import os
import numpy as np
from jitbench import workload

def vec(rng, *, dtype, n):
    return {"x": rng.standard_normal(n).astype(dtype)}

@workload(inputs=vec, sizes={"S": {"n": 64}})
def counted(xp, x):
    if xp is np:  # the NumPy side: one line per call
        with open(os.environ["JITBENCH_TEST_NUMPY_CALLS"], "a") as f:
            f.write("call\\n")
    return x * 2.0
"""


def test_a_worker_of_a_jit_only_run_never_calls_the_numpy_side(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With `-m jit` NumPy is neither timed nor, in a worker, a reference to check
    against: the worker must not spend a call of the NumPy side on nothing."""
    import jitbench
    from jitbench.results import Status

    suite = tmp_path / "counting.py"
    suite.write_text(COUNTING_SUITE)
    calls = tmp_path / "numpy_calls"
    monkeypatch.setenv("JITBENCH_TEST_NUMPY_CALLS", str(calls))
    in_worker: list[int] = []

    def worker_here(target, args, on_case):  # type: ignore[no-untyped-def]
        before = len(calls.read_text().splitlines())
        run = worker_in_this_process(target, args, on_case)
        in_worker.append(len(calls.read_text().splitlines()) - before)
        return run

    monkeypatch.setattr(processes, "run_worker", worker_here)
    config = RunConfig.quick_settings(processes=2, modes=(Mode.JIT,), overlap=False)
    run = jitbench.run(["counted"], suites=[suite], config=config)
    [m] = run.measurements
    assert m.mode is Mode.JIT and m.status is Status.OK  # checked against NumPy, once
    assert len(calls.read_text().splitlines()) == 1
    assert in_worker == [0]


@pytest.mark.e2e  # a real worker process, stopped by the edit
def test_a_suite_edited_during_a_run_stops_it_with_the_cause_and_keeps_the_first_process(
    tmp_path: Path,
) -> None:
    """The worker refuses a suite file changed since the run started (its cases would mix
    two versions of the code): the error says so and what to do, not "run without
    --processes to see where", and the first process's cases are kept."""
    import jitbench
    from jitbench.runner.worker import WorkerError

    suite = tmp_path / "tiny.py"
    suite.write_text(TINY_SUITE)
    saved: list[jitbench.Run] = []

    def edit_on_the_second_process(event: object) -> None:
        if isinstance(event, ProcessStarted):
            with suite.open("a") as f:
                f.write("\n# edited while the run measures\n")

    with pytest.raises(WorkerError) as caught:
        jitbench.run(
            ["double"],
            suites=[suite],
            # In turn: a second process beside the first has read the suite before.
            config=RunConfig.quick_settings(processes=2, overlap=False),
            on_event=edit_on_the_second_process,
            checkpoint=saved.append,
        )
    message = str(caught.value)
    assert "has changed since" in message and "--allow-changed-suites" in message
    assert "run without --processes" not in message
    assert saved and not saved[-1].complete
    assert {m.case.workload for m in saved[-1].measurements} == {"double"}


PRECISION_SUITE = """
import os
import jax
from jitbench import workload

def vec(rng, *, dtype, n):
    return (rng.standard_normal(n).astype(dtype),)

@workload(inputs=vec, sizes={"S": {"n": 8}})
def noted(xp, x):
    with open(os.environ["JITBENCH_TEST_PRECISION"], "a") as f:
        f.write(f"{os.getpid()} {jax.config.jax_default_matmul_precision}\\n")
    return x * 2.0
"""


def _run_script(
    tmp_path: Path, guarded: bool, *, stdin: bool = False
) -> tuple[subprocess.CompletedProcess[str], Path, dict[str, str]]:
    """A user's script that sets a JAX option at its top level and calls jitbench.run() in
    two processes, with or without an `if __name__ == "__main__":` guard (from a file, or
    piped to `python -`); its top level appends a line to a marker file each time it
    runs, and its workload notes each process's option (pid -> value)."""
    suite = tmp_path / "noted.py"
    suite.write_text(PRECISION_SUITE)
    marker, notes = tmp_path / "imported", tmp_path / "precision"
    call = (
        "run = jitbench.run(['noted'], suites=[SUITE], "
        "config=RunConfig.quick_settings(processes=2))\n"
        "print('processes', run.processes)\n"
    )
    body = "if __name__ == '__main__':\n" + textwrap.indent(call, "    ") if guarded else call
    script = tmp_path / "bench.py"
    script.write_text(
        "import jax\nimport jitbench\nfrom jitbench import RunConfig\n"
        "jax.config.update('jax_default_matmul_precision', 'highest')\n"
        f"SUITE = {str(suite)!r}\n"
        f"with open({str(marker)!r}, 'a') as f:\n"
        "    f.write('imported\\n')\n" + body
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu"}
    env["JITBENCH_TEST_PRECISION"] = str(notes)
    command = [sys.executable, "-"] if stdin else [sys.executable, str(script)]
    proc = subprocess.run(
        command,
        input=script.read_text() if stdin else None,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = notes.read_text().splitlines() if notes.exists() else []
    return proc, marker, {line.split()[0]: line.split()[1] for line in lines}


@pytest.mark.e2e
@pytest.mark.parametrize(("guarded", "stdin"), [(False, False), (True, False), (False, True)])
def test_a_script_runs_in_two_processes_once_with_its_jax_options_in_both(
    tmp_path: Path, guarded: bool, stdin: bool
) -> None:
    """A script calling `jitbench.run()`, guarded or not, or piped to `python -` (its main
    is '<stdin>'): the workers are started as commands, so none runs the script again
    (spawn did, and an unguarded one started the run again inside its worker), and each
    takes the script's top-level `jax.config.update` with its order."""
    proc, marker, seen = _run_script(tmp_path, guarded=guarded, stdin=stdin)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == ["processes 2"]
    assert marker.read_text().splitlines() == ["imported"]
    assert len(seen) == 2 and set(seen.values()) == {"highest"}, seen


IPYTHON_SCRIPT = """\
%load_ext jitbench
import numpy as np

def double(x):
    return 2 * x

x = np.ones(64, dtype=np.float32)
r = %jitbench -b 0.05 -p 2 double(x)
print("processes", r.run.config.settings.processes)
"""


@pytest.mark.e2e
def test_an_ipython_script_runs_its_workers(tmp_path: Path) -> None:
    """`ipython script.ipy` using %jitbench: spawn took the .ipy file for Python to run
    again in the worker (a SyntaxError at `%load_ext`), and the worker died."""
    script = tmp_path / "bench.ipy"
    script.write_text(IPYTHON_SCRIPT)
    ipython = Path(sys.executable).with_name("ipython")
    env = {**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run(
        [str(ipython), "--no-banner", "--colors=NoColor", str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "worker process died" not in proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == "processes 2", proc.stdout[-2000:]


class _Clock:
    """A fake clock the fake workers advance: each process takes `per_case` seconds a case."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _processes(wild_jit: list[float]):  # type: ignore[no-untyped-def]
    """One run per process of a suite whose "wild" case's jit time is `wild_jit[i]` in
    process i (its other cases steady), and the keys of "wild" and a calm case."""
    from tests.runner.test_allocation import case, pair, run_of, steady

    runs = []
    for i, jit in enumerate(wild_jit):
        calm = [m for n in range(5) for m in steady(f"calm{n}", 1)]
        # steady(..., 1) is one process: the runs pool into the processes' parts
        runs.append(run_of(*calm, *pair("wild", [2.0], [jit])))
        runs[-1] = replace(runs[-1], run_id=f"p{i}", complete=True)
    return runs, case("wild").key, case("calm0").key


def _only(run, keys):  # type: ignore[no-untyped-def]
    return replace(run, measurements=tuple(m for m in run.measurements if m.case.key in keys))


def test_cases_with_wide_intervals_are_measured_in_extra_processes_up_to_the_most() -> None:
    """The wild case's two processes disagree by 30 %: extra processes 3 and 4 measure it
    alone (each announced with its case count), the calm cases keep two; the checkpoint
    after the last process is the complete run, and each case records its processes."""
    runs, wild, calm = _processes([1.0, 1.3, 1.15, 1.15])
    clock = _Clock()
    events: list[object] = []
    saved: list[object] = []
    calls: list[object] = []

    def first():  # type: ignore[no-untyped-def]
        clock.now += 6.0
        return runs[0]

    def worker(cases=None):  # type: ignore[no-untyped-def]
        calls.append(cases)
        part = runs[len(calls)]
        clock.now += 1.0 * (len(part.cases()) if cases is None else len(cases))
        return part if cases is None else _only(part, set(cases))

    run = _pooled_here(
        first,
        RunConfig(processes=2),
        on_event=events.append,
        checkpoint=saved.append,
        worker=worker,
        clock=clock,
    )
    assert calls == [None, [wild], [wild]]
    assert events == [
        ProcessStarted(index=2, total=2),
        ProcessStarted(index=3, total=3, cases=1),
        ProcessStarted(index=4, total=4, cases=1),
    ]
    assert [r.complete for r in saved] == [False, False, True] and run.complete
    counts = {m.case.key: len(m.run_sample_counts) for m in run.measurements}
    assert counts[wild] == 4 and counts[calm] == 2 and run.processes == 4
    # The run file keeps each case's count of processes (`run_sample_counts`).
    again = run_from_dict(json.loads(dump_run(run)))
    assert {m.case.key: len(m.run_sample_counts) for m in again.measurements} == counts


def test_where_the_first_two_overlapped_two_extra_processes_measure_side_by_side() -> None:
    """The wild case's extra processes 3 and 4 start together (`pair`, announced once with
    both numbers), each a part of the pooled run; no single extra process follows."""
    runs, wild, calm = _processes([1.0, 1.3, 1.15, 1.15])
    clock = _Clock()
    events: list[object] = []
    calls: list[object] = []
    pairs: list[list[object]] = []

    def first():  # type: ignore[no-untyped-def]
        clock.now += 6.0
        return runs[0]

    def worker(cases=None):  # type: ignore[no-untyped-def]
        calls.append(cases)
        clock.now += len(runs[1].cases())
        return runs[1]

    def pair(cases):  # type: ignore[no-untyped-def]
        pairs.append(list(cases))
        clock.now += 1.0 * len(cases)  # both at once: one's time
        return [_only(runs[2], set(cases)), _only(runs[3], set(cases))]

    run = _pooled_here(
        first,
        RunConfig(processes=2),
        on_event=events.append,
        worker=worker,
        side=_Side(pair=pair),
        clock=clock,
    )
    assert calls == [None] and pairs == [[wild]]
    assert events == [
        ProcessStarted(index=2, total=2),
        ProcessStarted(index=4, total=4, cases=1, together=2),
    ]
    counts = {m.case.key: len(m.run_sample_counts) for m in run.measurements}
    assert counts[wild] == 4 and counts[calm] == 2 and run.processes == 4


def test_extra_processes_stay_within_their_share_of_the_runs_time() -> None:
    """The first two processes took 12 s (the worker 1 s a case): the extra processes may
    take `EXTRA_TIME_SHARE` of that, 3.6 s: the wild case once more, which took 5 s, and
    then no more; a run whose intervals are all wide would otherwise double its time."""
    runs, wild, _ = _processes([1.0, 1.3, 1.15, 1.15])
    clock = _Clock()
    calls: list[object] = []

    def first():  # type: ignore[no-untyped-def]
        clock.now += 6.0
        return runs[0]

    def worker(cases=None):  # type: ignore[no-untyped-def]
        calls.append(cases)
        part = runs[len(calls)]
        clock.now += 5.0 if cases is not None else len(part.cases())
        return part if cases is None else _only(part, set(cases))

    run = _pooled_here(first, RunConfig(processes=2), worker=worker, clock=clock)
    assert calls == [None, [wild]]
    assert {len(m.run_sample_counts) for m in run.measurements if m.case.key == wild} == {3}


def test_the_second_beside_the_first_is_process_two_and_the_extra_processes_pair_up() -> None:
    """The second process measured beside the first (started 6 s into its 20): its run is
    the run's second part, asked for once the first is done, and the wild case's extra
    processes come two at a time (`pair`), each a part of the pooled run."""
    runs, wild, calm = _processes([1.0, 1.3, 1.15, 1.15])
    clock = _Clock()
    pairs: list[object] = []

    class Beside:  # a Worker that finished with the first process
        started, pid = 6.0, 12345

        def result(self, on_case=None):  # type: ignore[no-untyped-def]
            return runs[1]

        def alive(self) -> bool:
            return False

        def stop(self) -> None:
            pass

    def first():  # type: ignore[no-untyped-def]
        clock.now += 20.0
        return runs[0]

    def pair(cases):  # type: ignore[no-untyped-def]
        pairs.append(list(cases))
        clock.now += 2.0
        return [_only(runs[2], set(cases)), _only(runs[3], set(cases))]

    def no_worker(cases=None):  # type: ignore[no-untyped-def]
        raise AssertionError("the second is the one beside the first; extras pair up")

    run = _pooled_here(
        first,
        RunConfig(processes=2),
        worker=no_worker,
        side=_Side(beside=Beside(), pair=pair),
        clock=clock,
    )
    assert pairs == [[wild]]
    counts = {m.case.key: len(m.run_sample_counts) for m in run.measurements}
    assert counts[wild] == 4 and counts[calm] == 2


def test_each_cases_pooled_line_quotes_the_figures_of_the_run_it_ends_in() -> None:
    """The parent pools each case's shares as they arrive (the first process's from its
    events, the workers' from their channel): the last line printed for each case, once
    every process measuring it has sent its share (the wild case's again after each extra
    process), quotes the times the pooled run's table shows."""
    from jitbench import formatting as fmt
    from jitbench.render.progress_line import plain_case_line
    from jitbench.runner.events import CaseFinished, CasePooled

    runs, wild, calm = _processes([1.0, 1.6, 1.3, 1.3])
    events: list[object] = []
    told: list[object] = []

    def first(on_event):  # type: ignore[no-untyped-def]
        for i, case in enumerate(runs[0].cases()):
            ms = tuple(m for m in runs[0].measurements if m.case == case)
            on_event(CaseFinished(case, i, len(runs[0].cases()), ms))
        return runs[0]

    def run_worker(target, cases, on_case):  # type: ignore[no-untyped-def]
        told.append(cases)
        part = runs[len(told)] if cases is None else _only(runs[len(told)], set(cases))
        for i, case in enumerate(part.cases()):
            on_case(i, len(part.cases()), [m for m in part.measurements if m.case == case])
        return part

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(processes, "run_worker", run_worker)
        run = run_in_processes(
            first, lambda _run, cases: (None, cases), RunConfig(processes=2),
            on_event=events.append, clock=_Clock(),
        )  # fmt: skip
    pooled = [e for e in events if isinstance(e, CasePooled)]
    last = {e.case.key: e for e in pooled}
    assert len(last) == len(run.cases()) and told == [None, [wild], [wild]]
    assert [e.case.key for e in pooled].count(wild) == 3  # with 2, then 3, then 4
    assert [e.case.key for e in pooled].count(calm) == 1
    figures = analyse(run)
    for key, event in last.items():
        line = plain_case_line(event.measurements, processes=2)
        for m in event.measurements:
            shown = figures.time(key, m.mode)
            assert shown is not None and f"{m.mode.value} {fmt.seconds(shown.value)}" in line


def test_a_smoke_run_gets_no_extra_process() -> None:
    runs, _, _ = _processes([1.0, 1.3])
    calls: list[object] = []

    def worker(cases=None):  # type: ignore[no-untyped-def]
        calls.append(cases)
        return runs[1]

    config = replace(RunConfig.quick_settings(), processes=2)
    run = _pooled_here(lambda: runs[0], config, worker=worker, clock=_Clock())
    assert calls == [None] and run.processes == 2


def test_a_resumed_run_goes_on_with_the_extra_processes_it_lacks() -> None:
    """Stopped after its two processes, before the extra ones: the resume pools them."""
    runs, wild, _ = _processes([1.0, 1.3, 1.15, 1.15])
    both = pool_runs(runs[:2])
    calls: list[object] = []

    def worker(cases=None):  # type: ignore[no-untyped-def]
        calls.append(cases)
        return _only(runs[1 + len(calls)], set(cases))

    run = _pooled_here(lambda: both, RunConfig(processes=2), worker=worker)
    assert calls == [[wild], [wild]] and run.complete
    assert {len(m.run_sample_counts) for m in run.measurements if m.case.key == wild} == {4}


def test_an_extra_worker_measures_only_the_cases_it_is_given(tiny_suite: Path) -> None:
    """`measure_selection` with case keys measures those alone (double at S, not at M)."""
    from jitbench.runner.scheduler import measure_selection
    from jitbench.suite.discovery import discover
    from jitbench.suite.selection import selection_of

    [double] = [w for name, w in discover([tiny_suite]).workloads.items() if name == "double"]
    quick = RunConfig.quick_settings(sizes=("S", "M"))
    conn = _Conn()
    key = ("double", "S", "cpu:0", "float32")
    measure_selection(conn, selection_of([double]), quick, None, [key])
    [(kind, run)] = [m for m in conn.sent if m[0] != "case"]
    assert kind == "ok", run
    assert [c.key for c in run.cases()] == [key]


SLOW_EAGER_SUITE = """
import time
import jax
import numpy as np
from jitbench import workload

def vec(rng, *, dtype, n):
    return (rng.standard_normal(n).astype(dtype),)

@workload(inputs=vec, sizes={"S": {"n": 8}}, eager="nojit")
def slow_eager(xp, x):
    if xp is not np and not isinstance(x, jax.core.Tracer):  # op by op: slow
        end = time.monotonic() + 30
        while time.monotonic() < end:
            pass
    return x * 2.0
"""


@pytest.mark.parametrize("retry", [False, True])
def test_a_worker_does_not_pay_again_for_a_mode_that_timed_out(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, retry: bool
) -> None:
    """Eager ran past --timeout in the first process: the worker leaves it out (it says
    why), unless --retry-timeouts; NumPy and jit are pooled from both."""
    import jitbench
    from jitbench.measure import diagnose
    from jitbench.results import Status

    suite = tmp_path / "slow_suite.py"
    suite.write_text(SLOW_EAGER_SUITE)
    workers: list[jitbench.Run] = []

    def worker_here(target, args, on_case):  # type: ignore[no-untyped-def]
        workers.append(worker_in_this_process(target, args, on_case))
        return workers[-1]

    monkeypatch.setattr(processes, "run_worker", worker_here)
    config = RunConfig.quick_settings(
        processes=2, timeout_s=1.0, retry_timeouts=retry, overlap=False
    )
    run = jitbench.run(suites=[suite], config=config)
    statuses = {m.mode: m.status for m in run.measurements}
    assert statuses == {Mode.NUMPY: Status.OK, Mode.EAGER: Status.TIMEOUT, Mode.JIT: Status.OK}
    [worker] = workers
    eager = next(m for m in worker.measurements if m.mode is Mode.EAGER)
    if retry:
        assert eager.status is Status.TIMEOUT
    else:
        assert eager.status is Status.SKIPPED
        assert eager.diagnostics[0].code == diagnose.TIMED_OUT_BEFORE
        assert "eager exceeded --timeout 1 s" in eager.diagnostics[0].message


INPUT_COUNTING_SUITE = """
import os
import numpy as np
from jitbench import workload

def _count():
    with open(os.environ["JITBENCH_TEST_INPUT_CALLS"], "a") as f:
        f.write("call\\n")

def vec(rng, *, dtype, n):
    _count()
    return {"x": rng.standard_normal(n).astype(dtype)}

@workload(inputs=vec, sizes={"S": {"n": 64}, "M": {"n": 128}})
def shared(xp, x):
    return x * 2.0

def vec_and_a_function(rng, *, dtype, n):
    _count()
    return {"x": rng.standard_normal(n).astype(dtype), "f": lambda v: v + 1.0}

@workload(
    inputs=vec_and_a_function, sizes={"S": {"n": 64}, "M": {"n": 128}}, static_argnames=("f",)
)
def unpicklable(xp, x, f):
    return f(x)
"""


@pytest.mark.parametrize(("name", "input_calls"), [("shared", 2), ("unpicklable", 4)])
def test_a_worker_loads_the_inputs_the_first_process_made_where_they_pickle(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str, input_calls: int
) -> None:
    """The input function runs once per case (two) in a run of two processes, as the
    worker loads what the first made; inputs that do not pickle are made by each."""
    import jitbench
    from jitbench.results import Status

    suite = tmp_path / "inputs_suite.py"
    suite.write_text(INPUT_COUNTING_SUITE)
    calls = tmp_path / "input_calls"
    monkeypatch.setenv("JITBENCH_TEST_INPUT_CALLS", str(calls))

    def worker_here(target, args, on_case):  # type: ignore[no-untyped-def]
        return worker_in_this_process(target, args, on_case)

    monkeypatch.setattr(processes, "run_worker", worker_here)
    config = RunConfig.quick_settings(processes=2, sizes=("S", "M"), overlap=False)
    run = jitbench.run([name], suites=[suite], config=config)
    assert {m.status for m in run.measurements} == {Status.OK}
    assert all(m.run_sample_counts and len(m.run_sample_counts) == 2 for m in run.measurements)
    assert len(calls.read_text().splitlines()) == input_calls


def test_shared_inputs_are_made_again_where_the_kept_file_is_broken(tmp_path: Path) -> None:
    import numpy as np

    from jitbench.measure import compilation
    from jitbench.measure.shared_inputs import INPUTS_FILE, shared_inputs
    from jitbench.suite.workload import Inputs

    made: list[int] = []

    def make() -> Inputs:
        made.append(1)
        return Inputs(args=(np.arange(3.0),), kwargs={}, static={})

    with compilation.sharing_compiles(tmp_path):
        first = shared_inputs(make)
        again = shared_inputs(make)
        (tmp_path / INPUTS_FILE).write_bytes(b"not a pickle")
        third = shared_inputs(make)
        fourth = shared_inputs(make)
    assert len(made) == 2  # the first, and again after the file broke
    for inputs in (again, third, fourth):
        np.testing.assert_array_equal(inputs.args[0], first.args[0])
    # Loaded arrays are NumPy's own (not views into the pickle's buffers), and writable.
    assert again.args[0].flags.owndata and again.args[0].flags.writeable
    assert shared_inputs(make) is not None and len(made) == 3  # outside: no sharing


def test_inputs_over_the_limit_are_made_by_each_process(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import numpy as np

    from jitbench.measure import compilation, shared_inputs
    from jitbench.suite.workload import Inputs

    monkeypatch.setattr(shared_inputs, "KEEP_LIMIT_BYTES", 16)
    made: list[int] = []

    def make() -> Inputs:
        made.append(1)
        return Inputs(args=(np.arange(3.0),), kwargs={}, static={})  # 24 bytes

    with compilation.sharing_compiles(tmp_path):
        shared_inputs.shared_inputs(make)
        shared_inputs.shared_inputs(make)
    assert len(made) == 2 and not (tmp_path / shared_inputs.INPUTS_FILE).exists()
