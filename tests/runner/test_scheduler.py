"""The scheduler: its order of cases, rounds, checkpoints and events with a fake executor and
a fake clock (exact, no sleeps), then real runs of tiny workloads through the whole protocol
(real JAX compiles, real timing)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jitbench import Mode, RunConfig, Status, discover, run_workloads, workload
from jitbench.config import ALL_MODES, SamplingPlan
from jitbench.measure import diagnose
from jitbench.measure.compilation import cold_first_call, count_compiles
from jitbench.measure.opening import PlannedCase, planned_case_record
from jitbench.measure.session import StepReport
from jitbench.results import Measurement, Run
from jitbench.results.analysis import analyse
from jitbench.results.model import RecordedConfig
from jitbench.runner import signals
from jitbench.runner.events import (
    CaseFinished,
    CaseStarted,
    RoundStarted,
    RunInterrupted,
    RunStarted,
)
from jitbench.runner.scheduler import schedule, unfinished
from tests.faults import FAULT_SUITE, OK, statuses


def vec(rng, *, dtype, n):
    return (rng.standard_normal(n).astype(dtype),)


# --- the loop, with a fake executor and a fake clock ------------------------------------------


class FakeClock:
    """UTC times "T0", "T1", … one per call."""

    def __init__(self) -> None:
        self.ticks = iter(range(10**6))

    def __call__(self) -> str:
        return f"T{next(self.ticks)}"


@dataclass
class FakeCase:
    """A live case that records its steps; it stops sampling after `rounds` rounds, or
    raises `interrupt_in` round `interrupt_in` (a Ctrl-C)."""

    name: str
    log: list[tuple[str, str]]
    pc: PlannedCase
    rounds: int = 99
    interrupt_in: int | None = None
    taken: int = 1

    @property
    def sampling(self) -> bool:
        return self.taken < self.rounds

    def measurements(self) -> list[Measurement]:
        case = planned_case_record(self.pc)
        return [
            Measurement(case=case, mode=Mode.JIT, status=Status.OK, samples_s=(1.0,) * self.taken)
        ]

    def next_round(self, report: StepReport | None = None) -> list[Measurement]:
        self.log.append(("round", self.name))
        if self.interrupt_in == self.taken + 1:
            raise KeyboardInterrupt
        self.taken += 1
        return self.measurements()

    def repeat_compile(self, report: StepReport | None = None) -> list[Measurement]:
        self.log.append(("compile", self.name))
        return self.measurements()


@dataclass
class FakeExecutor:
    spreads_rounds: bool
    log: list[tuple[str, str]] = field(default_factory=list)
    options: dict[str, dict[str, int]] = field(default_factory=dict)  # FakeCase fields by name
    hook: dict[str, object] = field(default_factory=dict)  # called when measuring a name

    def prepare(self) -> None:
        self.log.append(("prepare", ""))

    def measure(
        self, pcs: Sequence[PlannedCase], report: StepReport | None = None
    ) -> tuple[list[Measurement], FakeCase | None]:
        [pc] = pcs  # one device: a group of one case
        name = pc.workload.name
        self.log.append(("measure", name))
        if name in self.hook:
            self.hook[name]()  # type: ignore[operator]
            if report is not None:
                report("sampling", 0.5)  # as the protocol does after every round of samples
        live = FakeCase(name, self.log, pc, **self.options.get(name, {}))
        return live.measurements(), live if self.spreads_rounds else None


def _planned(*names: str) -> list[PlannedCase]:
    device = jax.devices("cpu")[0]
    cases = []
    for name in names:

        @workload(inputs=vec, sizes={"S": {"n": 4}}, name=name)
        def wl(xp, x):
            return x

        cases.append(PlannedCase(wl, "S", {"n": 4}, device, "float32"))
    return cases


def _start(*measurements: Measurement) -> Run:
    return Run(
        run_id="r1",
        started_at="T-start",
        finished_at=None,
        complete=False,
        environment={},
        config=RecordedConfig(settings=RunConfig()),
        measurements=measurements,
    )


def _samples(run: Run) -> dict[str, int]:
    return {m.case.workload: len(m.samples_s) for m in run.measurements}


#: What a three-round run of cases a and b asks of its executor, in order: each case
#: opened (round 1), rounds 2 and 3 in case order, then the two repeated cold compiles.
THREE_ROUNDS_OF_A_AND_B = [
    ("prepare", ""),
    ("measure", "a"),
    ("measure", "b"),
    ("round", "a"),
    ("round", "b"),
    ("round", "a"),
    ("round", "b"),
    ("compile", "a"),
    ("compile", "b"),
    ("compile", "a"),
    ("compile", "b"),
]


def test_cases_then_later_rounds_then_compiles_in_case_order() -> None:
    executor, events, checkpoints = FakeExecutor(spreads_rounds=True), [], []
    run = schedule(
        _planned("a", "b"),
        executor,
        _start(),
        plan=SamplingPlan(rounds=3),
        on_event=events.append,
        checkpoint=checkpoints.append,
        clock=FakeClock(),
    )
    assert executor.log == THREE_ROUNDS_OF_A_AND_B
    assert [type(e) for e in events] == [
        RunStarted,
        CaseStarted,
        CaseFinished,
        CaseStarted,
        CaseFinished,
        RoundStarted,
        RoundStarted,
    ]
    # The plan, for the progress estimate: the budget of a case, spread over 3 rounds.
    assert events[0] == RunStarted(
        "r1", 2, 0, budget_s=SamplingPlan().budget_s, rounds=3, sizes=("S", "S")
    )
    assert [(e.case.workload, e.index, e.total) for e in events[1:5]] == [
        ("a", 0, 2),
        ("a", 0, 2),
        ("b", 1, 2),
        ("b", 1, 2),
    ]
    assert events[5:] == [RoundStarted(2, 3, 2), RoundStarted(3, 3, 2)]
    # A checkpoint after each case, each later round and the compiles; all partial.
    assert [_samples(c) for c in checkpoints] == [
        {"a": 1},
        {"a": 1, "b": 1},
        {"a": 2, "b": 2},
        {"a": 3, "b": 3},
        {"a": 3, "b": 3},
    ]
    assert not any(c.complete or c.finished_at for c in checkpoints)
    # Until its rounds and compiles are all taken, a case says so in the checkpoints.
    assert [all(unfinished(m) for m in c.measurements) for c in checkpoints] == [
        True,
        True,
        True,
        True,
        False,
    ]
    assert not any(m.diagnostics for m in checkpoints[-1].measurements)
    assert run.complete and (run.started_at, run.finished_at) == ("T-start", "T0")
    assert _samples(run) == {"a": 3, "b": 3} and run.run_id == "r1"
    assert not any(unfinished(m) for m in run.measurements)


def test_a_case_that_stops_sampling_leaves_the_later_rounds() -> None:
    executor, events = FakeExecutor(spreads_rounds=True, options={"b": {"rounds": 2}}), []
    run = schedule(
        _planned("a", "b"),
        executor,
        _start(),
        plan=SamplingPlan(rounds=3),
        on_event=events.append,
        clock=FakeClock(),
    )
    assert executor.log[3:] == [
        ("round", "a"),
        ("round", "b"),
        ("round", "a"),
        ("compile", "a"),
        ("compile", "a"),
    ]
    assert [e for e in events if isinstance(e, RoundStarted)] == [
        RoundStarted(2, 3, 2),
        RoundStarted(3, 3, 1),
    ]
    assert _samples(run) == {"a": 3, "b": 2}


def test_an_executor_that_does_not_spread_rounds_measures_each_case_once() -> None:
    executor, events, checkpoints = FakeExecutor(spreads_rounds=False), [], []
    run = schedule(
        _planned("a", "b"),
        executor,
        _start(),
        plan=SamplingPlan(rounds=3),
        on_event=events.append,
        checkpoint=checkpoints.append,
        clock=FakeClock(),
    )
    assert executor.log == [("prepare", ""), ("measure", "a"), ("measure", "b")]
    assert not any(isinstance(e, RoundStarted) for e in events)
    assert len(checkpoints) == 2 and run.complete and run.finished_at == "T0"


def test_the_devices_of_one_workload_size_and_dtype_are_measured_together() -> None:
    """One group per workload × size × dtype, its cases in plan order: the NumPy side is
    measured once for all devices. Events stay per case, a checkpoint follows each group."""
    a0, b0 = _planned("a", "b")
    cpu1 = SimpleNamespace(platform="cpu", id=1, device_kind="cpu")
    a1, b1 = (replace(pc, device=cpu1) for pc in (a0, b0))
    log: list[tuple[str, ...]] = []

    class GroupExecutor:
        spreads_rounds = False

        def prepare(self) -> None:
            pass

        def measure(
            self, pcs: Sequence[PlannedCase], report: StepReport | None = None
        ) -> tuple[list[Measurement], None]:
            log.append(tuple(f"{pc.workload.name}@{pc.device.id}" for pc in pcs))
            return [
                Measurement(case=planned_case_record(pc), mode=m, status=Status.OK)
                for pc in pcs
                for m in (Mode.NUMPY, Mode.JIT)
            ], None

    events: list[object] = []
    checkpoints: list[Run] = []
    run = schedule(
        [a0, a1, b0, b1],
        GroupExecutor(),
        _start(),
        plan=SamplingPlan(),
        on_event=events.append,
        checkpoint=checkpoints.append,
        clock=FakeClock(),
    )
    assert log == [("a@0", "a@1"), ("b@0", "b@1")]
    assert [(type(e).__name__, e.case.device, e.index) for e in events[1:]] == [
        ("CaseStarted", "cpu:0", 0),
        ("CaseStarted", "cpu:1", 1),
        ("CaseFinished", "cpu:0", 0),
        ("CaseFinished", "cpu:1", 1),
        ("CaseStarted", "cpu:0", 2),
        ("CaseStarted", "cpu:1", 3),
        ("CaseFinished", "cpu:0", 2),
        ("CaseFinished", "cpu:1", 3),
    ]
    finished = [e for e in events if isinstance(e, CaseFinished)]
    assert all({m.case.key for m in e.measurements} == {e.case.key} for e in finished)
    assert [len(c.measurements) for c in checkpoints] == [4, 8]
    assert [m.case.device for m in run.measurements] == ["cpu:0"] * 2 + ["cpu:1"] * 2 + [
        "cpu:0"
    ] * 2 + ["cpu:1"] * 2


def test_resume_measures_only_the_cases_the_run_lacks() -> None:
    a, b = _planned("a", "b")
    held = Measurement(
        case=planned_case_record(a), mode=Mode.JIT, status=Status.OK, samples_s=(9.0,)
    )
    executor, events = FakeExecutor(spreads_rounds=False), []
    run = schedule(
        [a, b],
        executor,
        _start(held),
        plan=SamplingPlan(),
        on_event=events.append,
        clock=FakeClock(),
    )
    assert executor.log == [("prepare", ""), ("measure", "b")]
    assert events[0] == RunStarted("r1", 2, 1, budget_s=SamplingPlan().budget_s, sizes=("S",))
    assert (events[1].case.workload, events[1].index) == ("b", 1)
    assert run.measurements[0] is held and _samples(run) == {"a": 1, "b": 1}


def test_an_interrupt_in_a_later_round_carries_every_round_finished_so_far() -> None:
    executor = FakeExecutor(spreads_rounds=True, options={"b": {"interrupt_in": 2}})
    with pytest.raises(RunInterrupted) as info:
        schedule(
            _planned("a", "b"), executor, _start(), plan=SamplingPlan(rounds=3), clock=FakeClock()
        )
    partial = info.value.partial
    assert isinstance(info.value.cause, KeyboardInterrupt) and info.value.saved_to is None
    assert not partial.complete and partial.finished_at is None
    assert _samples(partial) == {"a": 2, "b": 1}  # a's round 2 is kept, b's was cut short
    [a, b] = partial.measurements
    code = diagnose.UNFINISHED_ROUNDS
    marks = [d.message for m in (a, b) for d in m.diagnostics if d.code == code]
    assert marks == [
        "the run stopped after 2 of 3 sampling rounds of this case",
        "the run stopped after 1 of 3 sampling rounds of this case",
    ]


def test_a_resume_measures_every_round_of_a_case_stopped_between_its_rounds() -> None:
    """A partial run holds only some rounds of a case stopped between them: a resume must
    not call that case done (the run would claim rounds it never took). It measures the
    case again, every round, and the old measurements stay until the new ones arrive."""
    first = FakeExecutor(
        spreads_rounds=True, options={"b": {"interrupt_in": 2}, "c": {"rounds": 1}}
    )
    with pytest.raises(RunInterrupted) as info:
        schedule(
            _planned("a", "b", "c"),
            first,
            _start(),
            plan=SamplingPlan(rounds=3),
            clock=FakeClock(),
        )
    partial = info.value.partial
    # c stopped sampling after its first round (it reached its target): it is finished.
    assert {m.case.workload: unfinished(m) for m in partial.measurements} == {
        "a": True,
        "b": True,
        "c": False,
    }
    executor, events, checkpoints = FakeExecutor(spreads_rounds=True), [], []
    run = schedule(
        _planned("a", "b", "c"),
        executor,
        partial,
        plan=SamplingPlan(rounds=3),
        on_event=events.append,
        checkpoint=checkpoints.append,
        clock=FakeClock(),
    )
    assert executor.log == THREE_ROUNDS_OF_A_AND_B
    started = events[0]
    assert (started.total_cases, started.done_cases, started.redone_cases) == (3, 1, 2)
    # The first checkpoint: a measured again (its first round), b and c as they were.
    assert _samples(checkpoints[0]) == {"c": 1, "b": 1, "a": 1}
    assert run.complete and _samples(run) == {"c": 1, "a": 3, "b": 3}
    assert len(run.measurements) == 3 and not any(unfinished(m) for m in run.measurements)


@pytest.fixture
def stop_signals() -> Iterator[None]:
    with signals.stop_signals():
        yield


def test_a_swallowed_stop_signal_stops_the_run_at_the_cases_next_step(stop_signals: None) -> None:
    def swallowed_sigterm() -> None:
        try:
            os.kill(os.getpid(), signal.SIGTERM)  # the handler raises at the next bytecode
            pytest.fail("the SIGTERM handler did not raise")
        except signals.Terminated:
            pass  # as a __del__ or JAX's gc callback drops it

    executor = FakeExecutor(spreads_rounds=False, hook={"a": swallowed_sigterm})
    with pytest.raises(RunInterrupted) as info:
        schedule(_planned("a", "b"), executor, _start(), plan=SamplingPlan(), clock=FakeClock())
    assert isinstance(info.value.cause, signals.Terminated)
    assert _samples(info.value.partial) == {}  # cut at a's next step; b never started
    assert executor.log == [("prepare", ""), ("measure", "a")]


def test_a_resumed_run_records_when_it_was_resumed() -> None:
    registry = discover([FAULT_SUITE])
    config = RunConfig.quick_settings()
    clock = FakeClock()
    first = run_workloads([registry.get("ok_double")], config, clock=clock)
    assert (first.started_at, first.finished_at) == ("T0", "T1")
    partial = replace(first, complete=False, finished_at=None)
    again = run_workloads([registry.get("ok_double")], config, resume=partial, clock=clock)
    assert again.config.resumed_at == ("T2",) and again.finished_at == "T3"
    assert again.measurements == first.measurements  # nothing left to measure
    # x64 and overlap left unset are recorded as what the run did (float32: no suite
    # declared float64; one process, so nothing overlapped).
    assert again.config.settings == replace(config, x64=False, overlap=False)
    assert again.config.selection == first.config.selection


def test_interrupt_carries_the_partial_run() -> None:
    registry = discover([FAULT_SUITE])
    seen: list[object] = []

    def on_event(event: object) -> None:
        seen.append(event)
        if type(event).__name__ == "CaseFinished":
            raise KeyboardInterrupt  # as a Ctrl-C arriving right after the first case

    with pytest.raises(RunInterrupted) as info:
        run_workloads(
            [registry.get("ok_double")],
            RunConfig.quick_settings(sizes=("S", "M")),
            on_event=on_event,
        )
    partial = info.value.partial
    assert isinstance(info.value, KeyboardInterrupt)
    assert not partial.complete and partial.finished_at is None
    assert statuses(partial) == {"ok_double[S]": OK}


# --- real runs ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    from tests.conftest import TINY_SUITE

    path = tmp_path_factory.mktemp("suite") / "tiny.py"
    path.write_text(TINY_SUITE)
    reg = discover([path])
    return run_workloads(list(reg.workloads.values()), RunConfig.quick_settings())


def by(run, workload, mode):
    [m] = [m for m in run.measurements if m.case.workload == workload and m.mode is mode]
    return m


def test_good_workload_is_ok_in_every_mode(tiny_run):
    for mode in ALL_MODES:  # the default modes (sharded is opt-in)
        m = by(tiny_run, "double", mode)
        assert m.status is Status.OK, m.error
        assert m.samples_s and m.calls_per_sample >= 1
    assert tiny_run.complete and tiny_run.environment["versions"]["jax"] == jax.__version__


def test_jit_compile_is_a_real_cold_compile(tiny_run):
    jit = by(tiny_run, "double", Mode.JIT)
    c = jit.compile
    assert c.compile_count >= 1  # the cold first call compiled
    assert c.trace_s > 0 and c.lower_s > 0 and c.compile_s > 0
    assert c.timed_compile_count == 0
    assert c.first_call_s > jit.median_s
    assert c.jaxpr_eqn_count >= 1 and c.hlo_fingerprint


def test_eager_first_call_counts_its_compiles(tiny_run):
    eager = by(tiny_run, "double", Mode.EAGER)
    assert eager.compile.compile_count >= 1
    assert eager.compile.trace_s is None


def test_wrong_value_is_a_mismatch_not_a_speedup(tiny_run):
    key = by(tiny_run, "wrong_in_jit", Mode.JIT).case.key
    for mode in (Mode.EAGER, Mode.JIT):
        m = by(tiny_run, "wrong_in_jit", mode)
        assert m.status is Status.MISMATCH
        assert any(d.code == "output-mismatch" for d in m.diagnostics)
    assert by(tiny_run, "wrong_in_jit", Mode.NUMPY).status is Status.OK
    assert analyse(tiny_run).speedup(key, Mode.JIT) is None


def test_traced_branch_is_an_error_under_jit_only(tiny_run):
    jit = by(tiny_run, "value_branch", Mode.JIT)
    assert jit.status is Status.ERROR
    assert jit.error.type in ("TracerBoolConversionError", "ConcretizationTypeError")
    assert "static_argnames" in jit.error.hint
    assert by(tiny_run, "value_branch", Mode.EAGER).status is Status.OK
    assert by(tiny_run, "value_branch", Mode.NUMPY).status is Status.OK


def test_cache_hit_is_not_a_compile():
    f = jax.jit(lambda x: x * 3.0 + 1.0)
    x = jnp.ones(7)
    with count_compiles() as first:
        f(x).block_until_ready()
    with count_compiles() as second:
        f(x).block_until_ready()
    assert first.compile_count == 1 and second.compile_count == 0
    seconds, compiles, _ = cold_first_call(lambda: f(x).block_until_ready())
    assert compiles == 1 and seconds > 0


def test_a_real_guard_error_maps_to_the_implicit_transfer_diagnostic():
    # On CPU device memory is host memory, so JAX's guard never sees a device -> host
    # copy; a host -> device upload is caught on every backend.

    with pytest.raises(Exception) as info, jax.transfer_guard("disallow"):
        jnp.asarray(np.ones(3, np.float32)).block_until_ready()
    [d] = diagnose.for_exception(info.value)
    assert d.code == "implicit-transfer" and "jax.numpy" in d.hint


def test_float64_numpy_side_is_diagnosed():
    def upcast(x):
        return x.astype(np.float64) * 2

    @workload(inputs=vec, sizes={"S": {"n": 16}}, numpy=upcast, name="upcast")
    def doubled(x):
        return x * 2

    run = run_workloads([doubled], RunConfig.quick_settings())
    numpy_m = by(run, "upcast", Mode.NUMPY)
    assert any(d.code == "numpy-float64" for d in numpy_m.diagnostics)
    assert by(run, "upcast", Mode.JIT).status is Status.OK


def test_x64_switches_both_sides_to_float64():
    seen = {}

    @workload(inputs=vec, sizes={"S": {"n": 8}}, name="dtype_probe")
    def probe(xp, x):
        seen[xp.__name__] = x.dtype
        return x + 1

    run = run_workloads([probe], RunConfig.quick_settings(x64=True, modes=(Mode.NUMPY, Mode.JIT)))
    assert {m.case.dtype for m in run.measurements} == {"float64"}
    assert all(str(v) == "float64" for v in seen.values())
    assert not jax.config.jax_enable_x64  # restored afterwards


def test_checkpoint_receives_partial_runs():
    partial_runs = []

    @workload(inputs=vec, sizes={"S": {"n": 8}, "M": {"n": 16}}, name="two_sizes")
    def two(xp, x):
        return x - 1

    final = run_workloads(
        [two], RunConfig.quick_settings(sizes=("S", "M")), checkpoint=partial_runs.append
    )
    assert [len(r.measurements) for r in partial_runs] == [3, 6]
    assert not any(r.complete for r in partial_runs) and final.complete


def test_without_a_numpy_reference_outputs_are_marked_unvalidated():
    def broken_numpy(x):
        raise RuntimeError("numpy side broken")

    @workload(inputs=vec, sizes={"S": {"n": 8}}, numpy=broken_numpy, name="no_reference")
    def no_reference(x):
        return x * 2

    run = run_workloads([no_reference], RunConfig.quick_settings())
    assert by(run, "no_reference", Mode.NUMPY).status is Status.ERROR
    eager = by(run, "no_reference", Mode.EAGER)
    jit = by(run, "no_reference", Mode.JIT)
    assert any(d.code == "unvalidated" for d in eager.diagnostics)
    # jit was checked against eager, so it is not unvalidated.
    assert not any(d.code == "unvalidated" for d in jit.diagnostics)
    assert jit.status is Status.OK

    only_jit = run_workloads([no_reference], RunConfig.quick_settings(modes=(Mode.NUMPY, Mode.JIT)))
    assert any(d.code == "unvalidated" for d in by(only_jit, "no_reference", Mode.JIT).diagnostics)


def test_rounds_spread_each_cases_samples_over_the_run():
    """With rounds, every case is sampled once per round, after all cases were opened; the
    later cases' cold compiles clear JAX's caches, and that must not show up as compiles
    during timing (the live cases are re-warmed, uncounted)."""
    from jitbench.runner.scheduler import RoundStarted

    @workload(inputs=vec, sizes={"S": {"n": 8}, "M": {"n": 16}}, name="spread_a")
    def spread_a(xp, x):
        return xp.exp(x) - 1

    @workload(inputs=vec, sizes={"S": {"n": 8}}, name="spread_b")
    def spread_b(xp, x):
        return xp.sin(x) * 2

    events, partial_runs = [], []
    config = RunConfig.quick_settings(sizes=("S", "M"))
    # min_samples = max_samples: no case converges before its last round.
    config = RunConfig.quick_settings(
        sizes=("S", "M"), plan=replace(config.plan, rounds=3, max_samples=6, min_samples=6)
    )
    run = run_workloads(
        [spread_a, spread_b], config, on_event=events.append, checkpoint=partial_runs.append
    )
    rounds = [e for e in events if isinstance(e, RoundStarted)]
    assert [(e.index, e.total, e.cases) for e in rounds] == [(2, 3, 3), (3, 3, 3)]
    # One checkpoint per case in round 1, one per later round, one after the two extra
    # cold compile measurements; samples only grow.
    assert len(partial_runs) == 3 + 2 + 1 and run.complete
    counts = [sum(len(m.samples_s) for m in r.measurements) for r in partial_runs]
    assert counts == sorted(counts) and counts[-1] > counts[2]
    assert len(run.measurements) == 9
    for m in run.measurements:
        assert m.status is Status.OK, m.error
        # max_samples 6 over 3 rounds: at most 2 a round, at least 1 (the floor) a round.
        assert 3 <= len(m.samples_s) <= 6
        if m.compile is not None:
            assert m.compile.timed_compile_count == 0
        if m.mode is Mode.JIT:  # three cold compiles; the stage figures are the median's
            repeats = m.compile.compile_repeats_s
            assert len(repeats) == 3 and all(r > 0 for r in repeats)
            assert m.compile.total_compile_s == pytest.approx(sorted(repeats)[1])
        assert not any(d.code == "recompiled-during-timing" for d in m.diagnostics)
    assert run.config.settings.plan.rounds == 3


def test_a_run_stopped_between_rounds_is_resumed_with_every_round():
    """Stopped in round 2 (as by Ctrl-C), then resumed: the run holds every round of each
    case and the repeated cold compiles its plan says, not round 1's samples."""
    from jitbench.runner.scheduler import RoundStarted

    @workload(inputs=vec, sizes={"S": {"n": 8}}, name="stopped_a")
    def stopped_a(xp, x):
        return xp.exp(x) - 1

    base = RunConfig.quick_settings(processes=1)
    # min_samples = max_samples: no case converges before its last round.
    config = replace(base, plan=replace(base.plan, rounds=3, max_samples=6, min_samples=6))

    def stop_in_round_2(event: object) -> None:
        if isinstance(event, RoundStarted):
            raise KeyboardInterrupt

    with pytest.raises(RunInterrupted) as info:
        run_workloads([stopped_a], config, on_event=stop_in_round_2)
    partial = info.value.partial
    assert all(unfinished(m) for m in partial.measurements)
    run = run_workloads([stopped_a], config, resume=partial)
    assert run.complete and run.run_id == partial.run_id
    for m in run.measurements:
        assert m.status is Status.OK and not unfinished(m)
        assert len(m.samples_s) >= 3  # at least 1 a round (the floor), every round
        if m.mode is Mode.JIT:
            assert len(m.compile.compile_repeats_s) == 3


def test_a_case_failing_in_a_later_round_keeps_the_others_going():
    calls = {"n": 0}

    def flaky(x):
        calls["n"] += 1
        if calls["n"] > 6:  # fine for the reference, warm-up and round 1, then breaks
            raise RuntimeError("broke in a later round")
        return x + 1

    @workload(inputs=vec, sizes={"S": {"n": 8}}, numpy=flaky, name="late_fault")
    def late_fault(x):
        return x + 1

    @workload(inputs=vec, sizes={"S": {"n": 8}}, name="steady")
    def steady(xp, x):
        return x * 3

    base = RunConfig.quick_settings()
    plan = replace(base.plan, rounds=4, max_samples=4, warmup_calls=1, min_sample_s=0.0)
    run = run_workloads([late_fault, steady], replace(base, plan=plan))
    assert by(run, "late_fault", Mode.NUMPY).status is Status.ERROR
    assert "later round" in by(run, "late_fault", Mode.NUMPY).error.message
    for mode in (Mode.EAGER, Mode.JIT):
        assert by(run, "late_fault", mode).status is Status.OK
    for mode in ALL_MODES:  # the default modes (sharded is opt-in)
        assert by(run, "steady", mode).status is Status.OK
        assert len(by(run, "steady", mode).samples_s) >= 4


# --- threads and the machine's state (issue 14) ------------------------------------------------


def test_a_run_records_its_threads_and_the_machine_before_and_after(tiny_run):
    from jitbench.measure.threads import ThreadState
    from jitbench.results.analysis.machine import MachineState

    env = tiny_run.environment
    threads = ThreadState.from_dict(env["threads"])
    assert threads.requested == 1 and len(threads.cores) == 1
    if hasattr(os, "sched_setaffinity"):
        assert threads.pinned and all(b["num_threads"] == 1 for b in threads.blas)
    for key in ("machine_before", "machine_after"):
        state = MachineState.from_dict(env[key])
        assert state.cores_used == 1 and state.probe is not None, key
    # The process got its cores back (its affinity is what it was before the run).
    if hasattr(os, "sched_getaffinity"):
        assert set(threads.cores) < os.sched_getaffinity(0) or len(os.sched_getaffinity(0)) == 1


def test_threads_none_keeps_the_libraries_defaults():
    reg = discover([FAULT_SUITE])
    run = run_workloads(
        [reg.get("ok_double")], RunConfig.quick_settings(threads=None, modes=("numpy",))
    )
    assert run.environment["threads"]["requested"] is None
    assert run.environment["threads"]["pinned"] is False
    assert run.config.settings is not None and run.config.settings.threads is None


def test_the_finished_run_gets_the_run_level_diagnostics(monkeypatch):

    from jitbench.results.analysis import judgement
    from jitbench.runner import scheduler

    seen: list[Run] = []
    real = judgement.run_diagnostics

    def spy(run: Run) -> Run:
        seen.append(run)
        return real(run)

    monkeypatch.setattr(scheduler.judgement, "run_diagnostics", spy)
    reg = discover([FAULT_SUITE])
    run = run_workloads([reg.get("ok_double")], RunConfig.quick_settings(modes=("numpy",)))
    assert len(seen) == 1 and seen[0].complete and "machine_after" in seen[0].environment
    assert run.complete


# Its JAX side makes its output without touching x: the array lands on JAX's default
# device, which must be the case's (a CPU case on a GPU machine once computed on the GPU).
FILLED = """

@workload(inputs=vec, sizes={"S": {"n": 64}})
def filled(xp, x):
    return xp.full(x.shape, 2.0, dtype=xp.float32)

# Pins its eager output to cpu:0 itself, whatever the case's device: warned on cpu:1.
def _pinned_numpy(x):
    return 2 * x

@workload(inputs=vec, sizes={"S": {"n": 64}}, numpy=_pinned_numpy)
def pinned(x):
    import jax
    return jax.device_put(2 * x, jax.devices("cpu")[0])
"""


@pytest.mark.e2e
def test_two_devices_share_one_numpy_baseline(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """NumPy is host code: with two devices in one run it is measured once, in the same
    rounds as both devices' JAX modes, and each device's case records that one series.
    Each device's JAX modes run with that device as JAX's default."""
    from tests.conftest import TINY_SUITE, run_cli

    suite = tmp_path / "tiny.py"
    suite.write_text(TINY_SUITE + FILLED)
    done = run_cli(
        "run", "double", "filled", "pinned", "--suite", str(suite), "--quick",
        "--devices", "cpu:0,cpu:1",
        "--out", str(tmp_path / "out"),
        env={"XLA_FLAGS": "--xla_force_host_platform_device_count=2"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    from jitbench import load_run

    [path] = (tmp_path / "out" / "runs").glob("*.json")
    run = load_run(path)
    from jitbench.measure.diagnose import OTHER_DEVICE

    warned = {
        (m.case.workload, m.case.device, m.mode.value)
        for m in run.measurements
        for d in m.diagnostics
        if d.code == OTHER_DEVICE
    }
    assert warned == {("pinned", "cpu:1", "eager")}
    numpy = {
        m.case.device: m
        for m in run.measurements
        if m.mode is Mode.NUMPY and m.case.workload == "double"
    }
    assert set(numpy) == {"cpu:0", "cpu:1"}
    assert numpy["cpu:0"].samples_s == numpy["cpu:1"].samples_s
    assert numpy["cpu:0"].calls_per_sample == numpy["cpu:1"].calls_per_sample
    for m in run.measurements:
        assert m.status is Status.OK and m.samples_s, m.error
        if m.mode is not Mode.NUMPY:
            assert m.compile is not None and m.compile.timed_compile_count == 0
    jit = [m for m in run.measurements if m.mode is Mode.JIT and m.case.workload == "double"]
    assert len(jit) == 2 and all(m.compile.compile_count == 1 for m in jit)
