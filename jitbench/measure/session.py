"""A case made ready to time, and its sampling: `CaseSession`, the one sampling API.

`opening.open_cases` makes the session; `CaseSession.sample` adds a round of interleaved
samples (with re-warm calls where another case ran in between), `repeat_compile`
measures the cold compile again, `trace_splits` splits host dispatch from device time,
and `measurements` reports what is known so far. The runner's executors, the `--isolate`
child, the `ab` worker, asv and `profile` all sample through it, directly or through
`opening.measure_cases`. The protocol's steps and why: docs: methodology, "The
measurement protocol".
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import jax

from jitbench.config import SamplingPlan
from jitbench.errors import WorkloadError
from jitbench.measure import compilation as jcompile
from jitbench.measure import diagnose, jax_config, modes
from jitbench.measure.capture import OutputCapture, PrintTally, maybe_attribute
from jitbench.measure.faults import add_hint, error_info
from jitbench.measure.limits import ModeLimit, ModeTimeout
from jitbench.measure.timer import (
    DEFAULT_CLOCK,
    Agree,
    Clock,
    decide_alone,
    relative_ci_halfwidth,
    sample_interleaved,
    time_calls,
)
from jitbench.results import (
    Case,
    CompileInfo,
    Diagnostic,
    Measurement,
    Mode,
    Severity,
    ShardingInfo,
    Status,
    TimeSplit,
    is_cpu_device,
)

StepReport = Callable[[str, "float | None"], None]
"""Told what a case is doing as it goes: a step ("inputs", "jit compile", "sampling", …)
and, while sampling, the fraction of this round's budget spent (else None). Called between
samples, never inside a timed region."""


def no_report(_step: str, _fraction: float | None) -> None:
    pass


Slot = tuple[str, Mode]
"""A sampled series of a session: (device label, mode); the shared NumPy side is on HOST."""

HOST = "host"


@dataclass
class ModeState:
    """Everything learnt about one mode of one case (one device) before sampling."""

    mode: Mode
    call: Callable[[], Any] | None = None
    error: BaseException | None = None
    compile: CompileInfo | None = None
    status: Status = Status.OK
    diagnostics: list[Diagnostic] = field(default_factory=list)
    calls_per_sample: int = 0
    timed_compiles: jcompile.CompileEvents = field(default_factory=jcompile.CompileEvents)
    printed: PrintTally = field(default_factory=PrintTally)
    nojit: bool = False  # eager under jax.disable_jit(): no transfer guard
    device: jax.Device | None = None  # JAX's default device while the mode runs
    # Sharded mode stages its own inputs: its transfer figures and the mesh it ran on.
    transfer: dict[str, Any] | None = None
    sharding: ShardingInfo | None = None
    # The time this mode spent in its own calls, against --timeout (`measure.limits`).
    limit: ModeLimit = field(default_factory=lambda: ModeLimit(""))

    def skip(self, diagnostic: Diagnostic) -> None:
        """Not measured, for the reason `diagnostic` gives (not a failure)."""
        self.status, self.call = Status.SKIPPED, None
        self.diagnostics.append(diagnostic)

    def fail(self, exc: BaseException) -> None:
        self.error, self.status, self.call = exc, Status.ERROR, None
        if isinstance(exc, ModeTimeout):  # this mode alone ran past --timeout
            self.status = Status.TIMEOUT
            diagnostic = diagnose.mode_timeout(exc, self.limit.others)
            add_hint(exc, diagnostic.hint or "")
            self.diagnostics.append(diagnostic)
            return
        self.diagnostics.extend(diagnose.for_exception(exc))

    def capped(self, exc: ModeTimeout, samples: int) -> None:
        """Ran past --timeout while sampling, after `samples` samples: those are kept,
        and the mode is sampled no more."""
        self.call = None
        self.diagnostics.append(diagnose.mode_capped(exc, samples, self.limit.others))


def sample_clock(plan: SamplingPlan, devices: Sequence[str]) -> Clock | None:
    """The clock a case's samples are timed with: the process's CPU time where the plan
    asks for it and every device of the case is a CPU (a GPU's work is not this process's
    CPU time), else None (the sampler's wall clock)."""
    if plan.clock == "cpu" and all(is_cpu_device(d) for d in devices):
        return time.process_time
    return None


@contextlib.contextmanager
def mode_region(
    state: ModeState, capture: OutputCapture | None = None, step: str = "samples"
) -> Iterator[None]:
    with (
        state.limit.charged(step),
        maybe_attribute(capture, state.printed, timed=True),
        modes.timed_region(state.mode, nojit=state.nojit, device=state.device),
        jcompile.count_compiles() as events,
    ):
        yield
    state.timed_compiles.compile_count += events.compile_count


@dataclass(frozen=True)
class ReadyMode:
    """A mode of an opened case, warmed up and calibrated: what an adapter times."""

    call: Callable[[], Any]
    calls_per_sample: int
    compile: CompileInfo | None  # None for NumPy


@dataclass
class CaseSession:
    """One workload × size × dtype made ready to time on one or more devices (inputs
    staged, compiled, validated, calibrated), and the samples taken so far. The NumPy side
    is host code: it is measured once and its samples are shared by every device's case,
    so the devices' speedups have one baseline. `sample` adds a round; `measurements`
    reports them."""

    cases: list[Case]
    states: dict[Slot, ModeState]
    plan: SamplingPlan
    quick: bool
    timed: tuple[Mode, ...] = ()
    # False in a worker that loads the first process's programs: it checked those outputs.
    check_outputs: bool = True
    transfer: dict[str, dict[str, Any]] = field(default_factory=dict)  # by device label
    samples: dict[Slot, list[float]] = field(default_factory=dict)
    cache_generation: int = -1  # jcompile.cache_generation() when last warm
    capture: OutputCapture | None = None  # while a step runs: where the workload's output goes
    # Per compiled mode of a device (jit, sharded): measures its cold compile again.
    compile_again: dict[Slot, Callable[[], tuple[float, float, float]]] = field(
        default_factory=dict
    )
    compile_repeats: dict[Slot, list[tuple[float, float, float]]] = field(default_factory=dict)
    splits: dict[Slot, TimeSplit] = field(default_factory=dict)  # `trace_splits`
    # By device label: (bytes, exact) of the allocator's high-water mark from staging to
    # the end of warm-up (`devices.case_peak`); absent where the device keeps no figures.
    device_peaks: dict[str, tuple[int, bool]] = field(default_factory=dict)

    @property
    def agree(self) -> Agree:
        """How the sampling decisions are made: with every process of a multi-process
        program where sharded mode runs (its collectives wait for every process's call, so
        all must call it as often), else by this process alone."""
        if any(mode is Mode.SHARDED for _, mode in self.states):
            from jitbench.measure import sharding

            return sharding.agreement()
        return decide_alone

    @property
    def case(self) -> Case:
        """The first device's case (the only one of a single-device session)."""
        return self.cases[0]

    @property
    def runnable(self) -> list[ModeState]:
        return [s for s in self.states.values() if s.call is not None]

    def _runnable_slots(self) -> dict[Slot, ModeState]:
        return {slot: s for slot, s in self.states.items() if s.call is not None}

    @contextlib.contextmanager
    def _capturing(self) -> Iterator[OutputCapture]:
        """Capture the workload's output for one step (see `measure.capture`), with JAX's
        global configuration restored after it where the workload changed it
        (`measure.jax_config`)."""
        with jax_config.kept(self._config_changed), OutputCapture() as capture:
            self.capture = capture
            try:
                yield capture
            finally:
                self.capture = None

    def _config_changed(self, changed: jax_config.Changes) -> None:
        diagnostic = diagnose.changed_jax_config(changed)
        for s in self.states.values():
            if all(d.message != diagnostic.message for d in s.diagnostics):
                s.diagnostics.append(diagnostic)

    def sample(self, plan: SamplingPlan, *, report: StepReport | None = None) -> None:
        """Take one round of interleaved samples of every mode still able to run: the NumPy
        side, then each device's eager and jit, in turn. The budget is per case, so a
        session of several devices gets that many budgets. `report` hears the fraction
        of the budget spent after every round of samples."""
        with self._capturing():
            self._sample(plan, report or no_report)

    def _sample(self, plan: SamplingPlan, report: StepReport) -> None:
        if self.cache_generation != jcompile.cache_generation():
            report("re-warm", None)
            self._rewarm(plan)
        runnable = self._runnable_slots()
        if not runnable:
            return
        if len(self.cases) > 1:
            plan = replace(plan, budget_s=plan.budget_s * len(self.cases))
        budget, cap = plan.budget_s, plan.max_samples

        def on_round(taken: int, elapsed: float) -> None:
            report("sampling", min(1.0, max(elapsed / budget if budget else 0.0, taken / cap)))

        report("sampling", 0.0)
        series = sample_interleaved(
            {slot: s.call for slot, s in runnable.items() if s.call is not None},
            {slot: s.calls_per_sample for slot, s in runnable.items()},
            plan=plan,
            region=lambda slot: mode_region(runnable[slot], self.capture),
            prior=self.samples,
            on_round=on_round,
            agree=self.agree,
            sample_clock=sample_clock(plan, [case.device for case in self.cases]),
        )
        for slot, ser in series.items():
            if isinstance(ser.error, ModeTimeout) and ser.samples_s:
                self.states[slot].capped(ser.error, len(ser.samples_s))
                self.samples[slot] = ser.samples_s
            elif ser.error is not None:
                self.states[slot].fail(ser.error)
                self.samples.pop(slot, None)
            else:
                self.samples[slot] = ser.samples_s
        self.cache_generation = jcompile.cache_generation()

    def repeat_compile(self, *, report: StepReport | None = None) -> None:
        """Measure each device's cold compiles once more (jit's, and sharded mode's where
        it ran); a mode's compile figures become those of its repeat with the median
        total. A failure here keeps the earlier figures."""
        with self._capturing() as capture:
            self._repeat_compile(capture, report or no_report, list(self.compile_again))

    def _repeat_compile(
        self, capture: OutputCapture, report: StepReport, slots: Sequence[Slot]
    ) -> None:
        for slot in slots:
            again = self.compile_again.get(slot)
            state = self.states.get(slot)
            if again is None or state is None or state.compile is None or state.call is None:
                continue
            report(f"{state.mode.value} compile again", None)
            c = state.compile
            repeats = self.compile_repeats.setdefault(slot, [])
            if not repeats and c.total_compile_s is not None:  # (a loaded program: none)
                repeats.append((c.trace_s or 0.0, c.lower_s or 0.0, c.compile_s or 0.0))
            try:
                with capture.attribute(state.printed, timed=False):
                    stages = again()
            except Exception:
                continue
            repeats.append(stages)
            by_total = sorted(repeats, key=sum)
            trace_s, lower_s, compile_s = by_total[(len(by_total) - 1) // 2]
            state.compile = replace(
                c,
                trace_s=trace_s,
                lower_s=lower_s,
                compile_s=compile_s,
                compile_repeats_s=tuple(sum(stages) for stages in repeats),
            )

    def trace_splits(self, calls: int, *, report: StepReport | None = None) -> None:
        """Split each runnable JAX mode's time into host dispatch and device execution
        from JAX's profiler trace of `calls` calls (`measure.timeline`); a mode whose
        trace fails or holds no call keeps no split and says why (`time-split-unavailable`:
        the measurement is unaffected)."""
        from jitbench.measure import timeline

        if report is not None:
            report("tracing calls", None)
        if self.cache_generation != jcompile.cache_generation():
            self._rewarm(self.plan)
        for slot, state in self._runnable_slots().items():
            if state.mode is Mode.NUMPY or state.call is None:
                continue
            try:
                with modes.timed_region(state.mode, nojit=state.nojit, device=state.device):
                    split = timeline.time_split(state.call, calls)
            except Exception as exc:  # the profiler's own trouble: the samples stand
                reason = f"the profiler trace failed ({type(exc).__name__}: {exc})"
                state.diagnostics.append(diagnose.no_time_split(state.mode, reason))
                continue
            if split is None:
                reason = "the profiler trace held none of the traced calls"
                state.diagnostics.append(diagnose.no_time_split(state.mode, reason))
            else:
                self.splits[slot] = split

    def calls_per_sample(self, mode: Mode) -> int:
        """The calibrated calls per sample of `mode` (first device); 0 when it cannot run."""
        state = self.states.get(self._slot(self.case.device, mode))
        return state.calls_per_sample if state is not None and state.call is not None else 0

    def time_sample(self, mode: Mode, calls: int) -> float | None:
        """Take one sample of `mode` (first device) of `calls` back-to-back calls, record it
        and return its seconds per call; None when the mode cannot run or just failed
        (the failure is recorded on it). For callers that interleave samples across
        processes themselves (`jitbench ab`); `sample` is the usual way.

        Unlike `sample`, it makes no re-warm calls after a switch (`SamplingPlan.rewarm_s`;
        it re-warms only after another case cleared JAX's caches): the sample starts cold
        after whatever ran before it, which a caller pairing both sides alike cancels in its
        ratios, not in its times (docs: methodology, "The gate's statistics")."""
        if self.cache_generation != jcompile.cache_generation():
            self._rewarm(self.plan)
        slot = self._slot(self.case.device, mode)
        state = self.states.get(slot)
        if state is None or state.call is None:
            return None
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            with mode_region(state):
                clock = sample_clock(self.plan, [self.case.device]) or DEFAULT_CLOCK
                elapsed = time_calls(state.call, calls, clock)
        except Exception as exc:
            state.fail(exc)
            self.samples.pop(slot, None)
            return None
        finally:
            if gc_was_enabled:
                gc.enable()
        per_call = elapsed / calls
        self.samples.setdefault(slot, []).append(per_call)
        return per_call

    def compile_once(self) -> float | None:
        """Measure the first device's cold jit compile once more (as `repeat_compile` does,
        jit's alone) and return its trace + lower + compile seconds; None when it cannot be
        measured."""
        slot = (self.case.device, Mode.JIT)
        before = len(self.compile_repeats.get(slot, ()))
        with self._capturing() as capture:
            self._repeat_compile(capture, no_report, [slot])
        repeats = self.compile_repeats.get(slot, [])
        # The first repeat also records the cold compile `open_cases` measured.
        if len(repeats) != max(before, 1) + 1:
            return None
        return float(sum(repeats[-1]))

    def _rewarm(self, plan: SamplingPlan) -> None:
        """Call each mode a few times, untimed and uncounted: another case's cold
        measurement cleared JAX's caches since this case was last warm, so its first
        calls now recompile. That is jitbench's doing, not the workload's. Where the run
        shares its programs (`sharing_compiles`: every run of several processes or
        rounds), they are loaded from the mode's folder instead of compiled again."""
        for (label, mode), s in self._runnable_slots().items():
            assert s.call is not None
            try:
                with (
                    s.limit.charged("re-warm"),
                    maybe_attribute(self.capture, s.printed, timed=True),
                    (
                        contextlib.nullcontext()  # host code: nothing to compile
                        if mode is Mode.NUMPY
                        else jcompile.loading_shared(f"{label}-{mode.value}")
                    ),
                    modes.timed_region(s.mode, nojit=s.nojit, device=s.device),
                ):
                    for _ in range(max(1, plan.warmup_calls)):
                        s.call()
            except Exception as exc:
                s.fail(exc)
        self.cache_generation = jcompile.cache_generation()

    def ready(self, mode: Mode) -> ReadyMode:
        """`mode` as prepared by `open_case` (on the first device): its timed call,
        calibration and cold compile figures, for adapters that time the call themselves
        (asv).

        Raises:
            WorkloadError: the mode failed or did not match the reference; the message is
                the measurement's one-line failure text.
        """
        state = self.states[self._slot(self.case.device, mode)]
        if state.status is not Status.OK or state.call is None:
            failed = next(m for m in self.measurements() if m.mode is mode)
            raise WorkloadError(f"{self.case.label} {mode.value}: {failed.failure_text}")
        return ReadyMode(
            call=state.call, calls_per_sample=state.calls_per_sample, compile=state.compile
        )

    @staticmethod
    def _slot(device: str, mode: Mode) -> Slot:
        return (HOST, mode) if mode is Mode.NUMPY else (device, mode)

    def measurements(self) -> list[Measurement]:
        """The measurements from the samples so far, case by case (device by device), each
        case's in the timed modes' order; every case's NumPy measurement holds the one
        shared NumPy series. May be called after any round."""
        plan = self.plan
        extra: dict[Slot, list[Diagnostic]] = {}
        samples: dict[Slot, tuple[float, ...]] = {}
        for slot, s in self.states.items():
            if (printed := diagnose.prints_during_call(s.printed, s.mode)) is not None:
                extra.setdefault(slot, []).append(printed)
        for slot, taken in self.samples.items():
            s = self.states[slot]
            if s.status in _NO_FIGURES:
                continue
            samples[slot] = tuple(taken)
            notes = extra.setdefault(slot, [])
            if s.timed_compiles.compile_count:
                notes.append(
                    diagnose.recompiled_during_timing(s.timed_compiles.compile_count, s.mode)
                )
            if not self.quick:
                width = relative_ci_halfwidth(list(taken))
                if width > plan.precision:
                    notes.append(diagnose.noisy(width, plan.precision))
        out: list[Measurement] = []
        for case in self.cases:
            slots = {m: self._slot(case.device, m) for m in self.timed}
            out += diagnose.case_diagnostics(
                [
                    _measurement(
                        case,
                        mode,
                        self.states[slot],
                        samples.get(slot, ()),
                        None if mode is Mode.NUMPY else self.transfer.get(case.device),
                        extra.get(slot, ()),
                        self.splits.get(slot),
                        None if mode is Mode.NUMPY else self.device_peaks.get(case.device),
                    )
                    for mode, slot in slots.items()
                ]
            )
        return out


#: A mode that failed or ran past its --timeout keeps no samples.
_NO_FIGURES = (Status.ERROR, Status.TIMEOUT)


def _measurement(
    case: Case,
    mode: Mode,
    s: ModeState,
    samples: tuple[float, ...],
    transfer: Mapping[str, Any] | None,
    extra: Sequence[Diagnostic],
    split: TimeSplit | None = None,
    device_peak: tuple[int, bool] | None = None,
) -> Measurement:
    t = s.transfer or transfer or {}
    peak_bytes, peak_exact = device_peak or (None, None)
    return Measurement(
        case=case,
        mode=mode,
        status=s.status,
        samples_s=() if s.status in _NO_FIGURES else samples,
        calls_per_sample=s.calls_per_sample if s.status not in _NO_FIGURES else 0,
        transfer_s=t.get("transfer_s"),
        transfer_bytes=t.get("transfer_bytes"),
        transfer_back_s=t.get("transfer_back_s"),
        transfer_back_bytes=t.get("transfer_back_bytes"),
        device_peak_bytes=peak_bytes,
        device_peak_exact=peak_exact,
        compile=replace(s.compile, timed_compile_count=s.timed_compiles.compile_count)
        if s.compile
        else None,
        error=error_info(s.error) if s.error is not None else None,
        # The reason a mode failed or mismatched first, before any note (`failure_text`).
        diagnostics=tuple(
            sorted((*s.diagnostics, *extra), key=lambda d: d.severity is not Severity.ERROR)
        ),
        time_split=split,
        sharding=s.sharding,
    )
