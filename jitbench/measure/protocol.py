"""Measure one case under the protocol: open it, sample it, report it.

The protocol's steps and why: docs: methodology, "The measurement protocol".

`open_case` does everything before timing (inputs, NumPy reference, staging, one cold
compile per JAX mode, validation, warm-up, calibration) and returns a `CaseSession`; each
`CaseSession.sample` adds a round of interleaved samples; `CaseSession.measurements`
reports what is known so far. `open_cases` does the same for one workload × size × dtype on
several devices at once: the NumPy side is host code, measured once and sampled in the same
rounds as every device's JAX modes, so all devices' speedups share one baseline. Planning
cases, spreading rounds across cases, guards, checkpoints and events belong to
`jitbench.runner`; `jitbench profile` and the asv bridge reuse the parts here.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import jax
import numpy as np

from jitbench.config import RunConfig, SamplingPlan
from jitbench.errors import NoNumpySide, WorkloadError, short_repr
from jitbench.measure import compilation as jcompile
from jitbench.measure import diagnose, jax_config, modes, validation
from jitbench.measure.capture import OutputCapture, PrintTally, maybe_attribute
from jitbench.measure.devices import MemoryMark, case_peak, device_label, memory_mark
from jitbench.measure.limits import ModeLimit, ModeTimeout, doing
from jitbench.measure.shared_inputs import shared_inputs
from jitbench.measure.timer import (
    DEFAULT_CLOCK,
    Agree,
    Clock,
    decide_alone,
    relative_ci_halfwidth,
    sample_interleaved,
    time_calls,
    warm_up_and_calibrate,
)
from jitbench.results import (
    Case,
    CompileInfo,
    Diagnostic,
    ErrorInfo,
    Measurement,
    Mode,
    Severity,
    ShardingInfo,
    Status,
    TimeSplit,
    is_cpu_device,
)
from jitbench.suite.jitted import jitted_parts
from jitbench.suite.workload import Inputs, Workload

MAX_ERROR_CHARS = 2000

StepReport = Callable[[str, "float | None"], None]
"""Told what a case is doing as it goes: a step ("inputs", "jit compile", "sampling", …)
and, while sampling, the fraction of this round's budget spent (else None). Called between
samples, never inside a timed region."""


def _no_report(_step: str, _fraction: float | None) -> None:
    pass


@dataclass(frozen=True)
class PlannedCase:
    """One workload × size × device × dtype to measure, with the size's parameters."""

    workload: Workload
    size: str
    params: dict[str, Any]
    device: jax.Device
    dtype: str


def planned_case_record(pc: PlannedCase) -> Case:
    """The Case a planned case is recorded as (before its inputs are known)."""
    return Case(
        workload=pc.workload.name,
        size=pc.size,
        device=device_label(pc.device),
        dtype=pc.dtype,
        params=pc.params,
        platform=pc.device.platform,
        device_kind=pc.device.device_kind,
    )


def error_info(exc: BaseException) -> ErrorInfo:
    """An exception as recorded on a measurement: type, message (capped) and a fix hint."""
    text = str(exc)
    if len(text) > MAX_ERROR_CHARS:
        text = text[:MAX_ERROR_CHARS] + " …"
    hint = diagnose.hint_for_exception(exc) or getattr(exc, _HINT_ATTR, "")
    return ErrorInfo(type=type(exc).__name__, message=text, hint=hint)


_HINT_ATTR = "_jitbench_hint"


def add_hint(exc: BaseException, hint: str) -> None:
    """Attach where a fault came from, for `error_info` (Python 3.10 lacks add_note)."""
    with contextlib.suppress(AttributeError, TypeError):  # a type with __slots__
        setattr(exc, _HINT_ATTR, hint)


Skips = Mapping[tuple[tuple[str, ...], Mode], str]
"""Modes of cases left out, and why: (case key, mode) → the reason (`open_cases`'s skip;
a `--processes` worker's modes that timed out in the first process)."""


def skips_to_json(skips: Skips) -> list[dict[str, Any]]:
    return [
        {"case": list(key), "mode": mode.value, "why": why} for (key, mode), why in skips.items()
    ]


def skips_from_json(
    data: Sequence[Mapping[str, Any]] | None,
) -> dict[tuple[tuple[str, ...], Mode], str]:
    return {(tuple(d["case"]), Mode(d["mode"])): str(d["why"]) for d in data or ()}


def timed_out_skips(measurements: Iterable[Measurement]) -> dict[tuple[tuple[str, ...], Mode], str]:
    """The JAX modes of `measurements` that ran past --timeout (or reached it while
    sampling), with what happened: a later `--processes` worker leaves them out."""
    skips: dict[tuple[tuple[str, ...], Mode], str] = {}
    for m in measurements:
        if m.mode is Mode.NUMPY:
            continue
        capped = next((d for d in m.diagnostics if d.code == diagnose.MODE_CAPPED), None)
        if m.status is Status.TIMEOUT:
            skips[(m.case.key, m.mode)] = m.failure_text.removeprefix("timeout: ")
        elif capped is not None:
            skips[(m.case.key, m.mode)] = capped.message
    return skips


Slot = tuple[str, Mode]
"""A sampled series of a session: (device label, mode); the shared NumPy side is on HOST."""

HOST = "host"

# The cold first calls after a case's one cache clear: jit first, so its trace, lowering and
# compile are all cold; eager's per-primitive programs are then all still compiled for real
# (jit's compile fills none of their cache entries), which a second clear would only repeat
# at the price of compiling jit's program again before it is timed.
COLD_ORDER = (Mode.JIT, Mode.EAGER)


@dataclass
class _ModeState:
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
def _mode_region(
    state: _ModeState, capture: OutputCapture | None = None, step: str = "samples"
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
class PreparedMode:
    """A JAX mode made ready to time: its call, the cold first call's output, and the
    cold compile figures (shared by `jitbench run`, `jitbench profile` and asv)."""

    call: Callable[[], Any]
    output: Any
    compile: CompileInfo


def _jit_stages(
    wl: Workload, staged: modes.Staged, cold: jcompile.ColdCall
) -> tuple[float, float, float]:
    """(trace, lower, compile) seconds of a cold jit call, from its compile events; where
    JAX emitted none of a stage, the AOT stages timed cold instead (a second compile)."""
    if cold.stages_s is not None:
        return cold.stages_s
    aot = jcompile.cold_aot_breakdown(
        wl.jax_fn,
        static_argnames=wl.static_argnames,
        static_argnums=wl.static_argnums,
        args=staged.args,
        kwargs={**staged.kwargs, **staged.static},
    )
    return aot.trace_s, aot.lower_s, aot.compile_s


def prepare_jit(wl: Workload, host: Inputs, staged: modes.Staged) -> PreparedMode:
    """One cold first call of `jax.jit(f)`, the way users call it, with JAX's caches as the
    caller left them (`open_case` clears them just before): its seconds (trace + lower +
    compile + run) and the seconds JAX's compile events give each stage. The program's
    analysis (cost, memory, HLO, jaxpr) is read from the executable that call left in the
    cache, so the program is compiled once."""
    jitted = modes.jit_function(wl, staged)
    call = modes.build_call(Mode.JIT, wl, host=host, staged=staged, jitted=jitted)
    # A --timeout reached names the stage: tracing, XLA's compile, the first run, or
    # jitbench's own analysis of the program (`limits.doing`).
    with jcompile.count_compiles() as seen, doing(seen.cold_stage):
        cold = jcompile.cold_call(call, clear=False, share=True)
    xla_s = cold.stage_s(jcompile.BACKEND_COMPILE_EVENT)
    took = f" (XLA's compile took {xla_s:.1f} s)" if xla_s is not None and not cold.loaded else ""
    with doing(f"jitbench's analysis of the compiled program{took}"):
        analysis, _ = jcompile.cached_analysis(
            jitted, args=staged.args, kwargs={**staged.kwargs, **staged.static}
        )
    if cold.loaded:
        # Loaded from an earlier process of the run (`sharing_compiles`): no compile to
        # split, and none to pay for again.
        trace_s = lower_s = compile_s = None
    else:
        with doing("a second compile, its stages timed (JAX emitted no compile events)"):
            trace_s, lower_s, compile_s = _jit_stages(wl, staged, cold)
    return PreparedMode(
        call=modes.specialise_call(Mode.JIT, call, cold.output, staged=staged, jitted=jitted),
        output=cold.output,
        compile=CompileInfo(
            first_call_s=cold.seconds,
            compile_count=cold.compile_count,
            trace_s=trace_s,
            lower_s=lower_s,
            compile_s=compile_s,
            jaxpr_eqn_count=analysis.jaxpr_eqn_count,
            flops=analysis.flops,
            transcendentals=analysis.transcendentals,
            bytes_accessed=analysis.bytes_accessed,
            memory=analysis.memory,
            hlo_fingerprint=analysis.hlo_fingerprint,
            while_loop_count=analysis.while_loop_count,
            program_fingerprint=analysis.program_fingerprint,
            hlo_opcodes=analysis.hlo_opcodes,
            code_bytes=analysis.code_bytes,
            program_text=analysis.program_text,
        ),
    )


def cold_jit_stages(
    wl: Workload, host: Inputs, staged: modes.Staged, *, device: jax.Device | None = None
) -> tuple[float, float, float]:
    """Clear JAX's caches and measure a fresh `jax.jit(f)`'s cold first call again, with
    `device` as JAX's default: (trace, lower, compile) seconds. Raises what the call raises."""
    jitted = modes.jit_function(wl, staged)
    call = modes.build_call(Mode.JIT, wl, host=host, staged=staged, jitted=jitted)
    with modes.on_device(device):
        return _jit_stages(wl, staged, jcompile.cold_call(call))


def prepare_eager(wl: Workload, host: Inputs, staged: modes.Staged) -> PreparedMode:
    """Time the cold first eager call and count the programs op-by-op dispatch compiles
    (JAX's caches as the caller left them: cleared, then only jit's program compiled)."""
    call = modes.build_call(Mode.EAGER, wl, host=host, staged=staged)
    # Guarded from the first call on: JAX caches an array's host copy after one transfer,
    # so a hidden copy of an input would slip through every later, guarded call.
    with modes.timed_region(Mode.EAGER, nojit=wl.eager == "nojit"):
        cold = jcompile.cold_call(call, clear=False, share=True)
    return PreparedMode(
        call=call,
        output=cold.output,
        compile=CompileInfo(first_call_s=cold.seconds, compile_count=cold.compile_count),
    )


@dataclass(frozen=True)
class ReadyMode:
    """A mode of an opened case, warmed up and calibrated: what an adapter times."""

    call: Callable[[], Any]
    calls_per_sample: int
    compile: CompileInfo | None  # None for NumPy


_ARRAY_LEAF_TYPES = (np.ndarray, np.generic, jax.Array, int, float, complex)


def require_array_tree(output: Any, wl: Workload, mode: Mode) -> Any:
    """Return `output` if it is an array or a pytree of arrays (or numbers; functions
    beside them, as a module's are).

    Raises:
        WorkloadError: no array at all (None, an empty tuple), a leaf such as a string, or
            an iterator (a generator can be read once; JAX will refuse it as a pytree).
    """
    fix = "return an array or a tuple, list or dict of arrays."
    if isinstance(output, Iterator):
        raise WorkloadError(
            f"the {mode.value} side of {wl.name!r} returned a {type(output).__name__}, which "
            f"can be read only once; {fix}"
        )
    leaves = jax.tree_util.tree_leaves(output)
    if not leaves:
        raise WorkloadError(
            f"the {mode.value} side of {wl.name!r} returned {short_repr(output, 40)}, "
            f"which holds no array; {fix}"
        )
    for leaf in leaves:
        # A module's functions (an equinox MLP's activation) ride along with its arrays.
        if not isinstance(leaf, _ARRAY_LEAF_TYPES) and not callable(leaf):
            raise WorkloadError(
                f"the {mode.value} side of {wl.name!r} returned a {type(leaf).__name__} "
                f"({short_repr(leaf, 40)}) where an array was expected; {fix}"
            )
    return output


def _validate(
    state: _ModeState,
    wl: Workload,
    reference: Any,
    output: Any,
    *,
    against: str = "numpy",
    staged: modes.Staged | None = None,
) -> bool:
    """Compare a JAX output with the reference; mark a mismatch. Returns reference_wider.

    A non-finite output from a program that takes a gradient (traced again from `staged`
    to find out) gets the double-`where` hint instead of `--x64`."""
    result = validation.check_outputs(
        reference, modes.to_host(output), rtol=wl.rtol, atol=wl.atol, norm_tol=wl.norm_tol
    )
    if not result.ok:
        state.status = Status.MISMATCH
        gradient = False
        if result.nonfinite and staged is not None:
            gradient = jcompile.takes_gradient(
                wl.jax_fn,
                args=staged.args,
                kwargs={**staged.kwargs, **staged.static},
                static_argnames=wl.static_argnames,
            )
        state.diagnostics.append(
            diagnose.mismatch(
                result.message,
                nonfinite=result.nonfinite,
                mode=state.mode,
                against=against,
                gradient=gradient,
                reduced_matmul=_reduced_matmul(state.device, output)
                if against == "numpy" and not result.nonfinite
                else None,
                structural=result.structural,
                rounding=result.rounding,
                zero_reference=result.zero_reference,
            )
        )
    return result.reference_wider


def _reduced_matmul(device: jax.Device | None, output: Any = None) -> str | None:
    """The device's platform where float32 matmuls may run below float32: an accelerator
    with JAX's matmul precision not set to full float32, and (when `output` is given) a
    float32 or complex64 output; else None."""
    precision = jax.config.jax_default_matmul_precision  # type: ignore[attr-defined]
    if device is None or device.platform == "cpu" or precision in ("highest", "float32"):
        return None
    if output is not None and not any(
        getattr(leaf, "dtype", None) in (np.float32, np.complex64)
        for leaf in jax.tree_util.tree_leaves(output)
    ):
        return None
    return str(device.platform)


@dataclass
class CaseSession:
    """One workload × size × dtype made ready to time on one or more devices (inputs
    staged, compiled, validated, calibrated), and the samples taken so far. The NumPy side
    is host code: it is measured once and its samples are shared by every device's case,
    so the devices' speedups have one baseline. `sample` adds a round; `measurements`
    reports them."""

    cases: list[Case]
    states: dict[Slot, _ModeState]
    plan: SamplingPlan
    quick: bool
    timed: tuple[Mode, ...] = ()
    # False in a process following a group: the group's leader checked the same outputs.
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
    def runnable(self) -> list[_ModeState]:
        return [s for s in self.states.values() if s.call is not None]

    def _runnable_slots(self) -> dict[Slot, _ModeState]:
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
            self._sample(plan, report or _no_report)

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
            region=lambda slot: _mode_region(runnable[slot], self.capture),
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
            self._repeat_compile(capture, report or _no_report, list(self.compile_again))

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
            with _mode_region(state):
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
            self._repeat_compile(capture, _no_report, [slot])
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


def open_case(
    pc: PlannedCase, *, timed: Sequence[Mode], plan: SamplingPlan, seed: int, quick: bool
) -> CaseSession:
    """`open_cases` for one device."""
    return open_cases([pc], timed=timed, plan=plan, seed=seed, quick=quick)


def open_cases(
    pcs: Sequence[PlannedCase],
    *,
    timed: Sequence[Mode],
    plan: SamplingPlan,
    seed: int,
    quick: bool,
    report: StepReport | None = None,
    check_outputs: bool = True,
    timeout_s: float | None = None,
    skip: Skips | None = None,
) -> CaseSession:
    """Steps 1–4 of the protocol (docs: methodology) for one workload × size × dtype on the
    devices of `pcs`, up to (not including) sampling: inputs and the NumPy reference (once: host
    code), then per device staging, one clear of JAX's caches, the cold jit and eager first
    calls and validation; last warm-up and calibration, for the `timed` modes. A fault in
    a mode is recorded on that mode's state. What the workload prints is captured and
    counted per mode (`measure.capture`); `report` hears each step as it starts.

    Without `check_outputs` the JAX outputs are not compared with the reference: a
    `--processes` worker runs the code and inputs the first process already checked, and
    the comparison cost it about a second of the default suite.

    `timeout_s` limits each mode's own calls (`measure.limits`): a mode past it is stopped
    (status timeout, or its samples so far kept where it was sampling) and the others go on.
    A mode `skip` names for a case is not measured (status skipped, with the reason).
    """
    first = pcs[0]
    assert all(
        (pc.workload, pc.size, pc.dtype) == (first.workload, first.size, first.dtype) for pc in pcs
    ), "open_cases takes the devices of one workload × size × dtype"
    wl = first.workload
    labels = [device_label(pc.device) for pc in pcs]
    timed = tuple(timed)
    states: dict[Slot, _ModeState] = {}
    for pc, label in zip(pcs, labels, strict=True):
        for m in timed:
            nojit = m is Mode.EAGER and wl.eager == "nojit"
            others = tuple(o.value for o in timed if o is not m)
            states.setdefault(
                CaseSession._slot(label, m),
                _ModeState(
                    m, nojit=nojit, device=pc.device, limit=ModeLimit(m.value, timeout_s, others)
                ),
            )
    for pc, label in zip(pcs, labels, strict=True):
        for m in timed:
            why = (skip or {}).get((planned_case_record(pc).key, m))
            if why is not None and m is not Mode.NUMPY:
                others = tuple(o.value for o in timed if o is not m)
                states[CaseSession._slot(label, m)].skip(
                    diagnose.timed_out_before(m.value, why, others)
                )
    session = CaseSession(
        cases=[planned_case_record(pc) for pc in pcs],
        states=states,
        plan=plan,
        quick=quick,
        timed=timed,
        check_outputs=check_outputs,
    )
    with session._capturing() as capture:
        _open(session, pcs, labels, seed=seed, report=report or _no_report)
    # Printed outside any mode's calls (the input function, staging): the first mode's.
    first_state = states.get((HOST, Mode.NUMPY)) or next(iter(states.values()), None)
    if first_state is not None and capture.unattributed.lines:
        first_state.printed.first_call_lines += capture.unattributed.lines
        first_state.printed.first_call_bytes += capture.unattributed.nbytes
        first_state.printed.first_line = (
            first_state.printed.first_line or capture.unattributed.first_line
        )
    return session


def _open(
    session: CaseSession,
    pcs: Sequence[PlannedCase],
    labels: Sequence[str],
    *,
    seed: int,
    report: StepReport,
) -> None:
    """The body of `open_cases`, under its output capture."""
    first = pcs[0]
    wl = first.workload
    states = session.states
    capture = session.capture
    plan = session.plan
    report("inputs", None)
    try:
        _check_dtype_available(wl, first.dtype)
        host = shared_inputs(lambda: wl.make_inputs(first.params, dtype=first.dtype, seed=seed))
    except Exception as exc:
        add_hint(
            exc,
            f"raised by the input function of {wl.name!r} for size {first.size!r}; "
            "fix it, or check it alone with Workload.make_inputs.",
        )
        for s in states.values():
            s.fail(exc)
        return
    session.cases = [
        replace(
            case,
            input_elements=modes.nelements_of((host.args, host.kwargs)),
            input_bytes=modes.nbytes_of((host.args, host.kwargs)),
            input_dtypes=dict(host.dtypes) or None,
        )
        for case in session.cases
    ]
    _eager_diagnostics(session, wl)

    # 1. NumPy reference, once (computed even when numpy mode is not timed: validation
    #    needs it; not at all where nothing is timed nor checked against it, as in a
    #    `--processes` worker of a `-m jit` run).
    reference: Any = None
    no_reference = ""
    numpy_state = states.get((HOST, Mode.NUMPY))
    if numpy_state is not None or session.check_outputs:
        reference, no_reference = _numpy_reference(
            session, wl, host, first.dtype, numpy_state, report
        )

    # 2–3. Per device: stage, then the cold first calls after one cache clear, validated.
    reference_wider = False
    peak_labels = _peak_labels(pcs, labels, states)
    marks: dict[str, MemoryMark | None] = {}
    for pc, label in zip(pcs, labels, strict=True):
        if label in peak_labels:
            marks[label] = memory_mark(pc.device)  # after the devices before it were opened
        reference_wider |= _open_device(session, pc, label, host, reference, report, no_reference)
        if (label, Mode.SHARDED) in states:
            _open_sharded(session, pc, label, host, reference, report, no_reference)
    if reference_wider and numpy_state and numpy_state.status is Status.OK:
        numpy_state.diagnostics.append(diagnose.numpy_wider_dtype())

    # 4. Warm up and calibrate each mode; compiles from here on count as "during timing".
    #    (With several devices, each device's clear dropped the earlier devices' programs:
    #    their warm-up compiles them again, before any timing.)
    agree = session.agree
    for s in session.runnable:
        assert s.call is not None
        report(f"{s.mode.value} warm-up", None)
        try:
            with _mode_region(s, capture, "warm-up and calibration"):
                s.calls_per_sample = warm_up_and_calibrate(s.call, plan=plan, agree=agree)
        except Exception as exc:
            s.fail(exc)
    for s in session.runnable:
        s.timed_compiles = jcompile.CompileEvents()
    session.cache_generation = jcompile.cache_generation()
    # Sampling repeats the warmed-up calls, so the mark after warm-up is the case's peak.
    for pc, label in zip(pcs, labels, strict=True):
        if label in marks and (peak := case_peak(marks[label], memory_mark(pc.device))):
            session.device_peaks[label] = peak


def _numpy_reference(
    session: CaseSession,
    wl: Workload,
    host: Inputs,
    dtype: str,
    numpy_state: _ModeState | None,
    report: StepReport,
) -> tuple[Any, str]:
    """Call the NumPy side once: the reference outputs (None where there is none) and why
    there is none. A fault is the NumPy mode's (when timed); the JAX modes then go
    unvalidated or are checked against each other."""
    reference: Any = None
    no_reference = ""
    report("NumPy reference", None)
    try:
        numpy_call = modes.build_call(Mode.NUMPY, wl, host=host, staged=None)
        with (
            maybe_attribute(
                session.capture, numpy_state.printed if numpy_state else PrintTally(), timed=False
            ),
            numpy_state.limit.charged("first call") if numpy_state else contextlib.nullcontext(),
        ):
            returned = numpy_call()
        if returned is None and not wl.outputs:
            # Timed all the same; there is just nothing to compare with.
            no_reference = "the NumPy side returned None and the workload names no outputs"
        else:
            reference = require_array_tree(returned, wl, Mode.NUMPY)
        if numpy_state:
            numpy_state.call = numpy_call
            if reference is not None and validation.no_finite_values(reference):
                numpy_state.diagnostics.append(diagnose.no_finite_output())
            if reference is not None and any(
                isinstance(leaf, jax.Array) for leaf in jax.tree_util.tree_leaves(reference)
            ):
                numpy_state.diagnostics.append(diagnose.numpy_side_ran_jax())
            wide = diagnose.find_wide_scalars(_named_arguments(wl, host), dtype)
            if wide:
                numpy_state.diagnostics.append(diagnose.scalar_promotion(wide, dtype))
    except NoNumpySide as exc:
        no_reference = str(exc)
        if numpy_state:  # a JAX-only workload: nothing to time on NumPy
            numpy_state.skip(diagnose.no_numpy_side(no_reference))
    except Exception as exc:
        if numpy_state:
            numpy_state.fail(exc)
    return reference, no_reference


def _peak_labels(
    pcs: Sequence[PlannedCase], labels: Sequence[str], states: Mapping[Slot, _ModeState]
) -> set[str]:
    """The devices whose allocator peak this case records: those that keep figures (not
    JAX's CPU backend), and none in a session with sharded mode, whose staging on every
    device of the platform falls inside the window and is no one device's. Garbage of
    earlier cases is collected first, so what it frees is not freed inside the window,
    below the baseline."""
    if any(mode is Mode.SHARDED for _label, mode in states):
        return set()
    keeping = {label for pc, label in zip(pcs, labels, strict=True) if memory_mark(pc.device)}
    if keeping:
        gc.collect()
    return keeping


def _open_device(
    session: CaseSession,
    pc: PlannedCase,
    label: str,
    host: Inputs,
    reference: Any,
    report: StepReport,
    no_reference: str = "",
) -> bool:
    """Stage the inputs on one device, clear JAX's caches once, and take the cold first
    calls of its JAX modes (jit, then eager), validating each. Returns reference_wider."""
    wl = pc.workload
    jax_states = {
        m: session.states[(label, m)]
        for m in COLD_ORDER
        if (label, m) in session.states and session.states[(label, m)].status is not Status.SKIPPED
    }
    if not jax_states:
        return False
    report(f"transfer to {label}", None)
    staged = _stage(jax_states.values(), wl, host, lambda: modes.stage(host, pc.device))
    if staged is None:
        return False
    transfer = session.transfer[label] = {
        "transfer_s": staged.transfer_s,
        "transfer_bytes": staged.transfer_bytes,
    }
    outputs, reference_wider = _cold_first_calls(
        session, label, wl, host, staged, jax_states, reference, report, transfer
    )
    if not session.check_outputs:
        return reference_wider
    if reference is None and Mode.JIT in outputs and Mode.EAGER in outputs:
        # No NumPy reference (its side failed): jit must at least agree with eager.
        _validate(
            jax_states[Mode.JIT],
            wl,
            modes.to_host(outputs[Mode.EAGER]),
            outputs[Mode.JIT],
            against="eager",
            staged=staged,
        )
    _say_unvalidated(jax_states, outputs, reference, no_reference)
    return reference_wider


def _open_sharded(
    session: CaseSession,
    pc: PlannedCase,
    label: str,
    host: Inputs,
    reference: Any,
    report: StepReport,
    no_reference: str = "",
) -> None:
    """Sharded mode of one case: skipped (with the reason) where the case's platform has
    one device; else the inputs staged on a mesh of all its devices, JAX's caches cleared,
    and jit mode's cold first call taken on them and validated, as jit's is. The clear
    drops jit's and eager's programs too: their warm-up compiles them again, untimed."""
    from jitbench.measure import sharding

    wl = pc.workload
    s = session.states[(label, Mode.SHARDED)]
    devices = sharding.platform_devices(pc.device.platform)
    if len(devices) < 2:
        s.skip(diagnose.one_device(sharding.one_device_reason(pc.device.platform)))
        return
    report(f"transfer to {len(devices)} {pc.device.platform} devices", None)
    placed: list[sharding.Placement] = []

    def stage() -> modes.Staged:
        staged, s.sharding, placements = sharding.stage_sharded(wl, host, devices)
        placed.extend(placements)
        return staged

    staged = _stage([s], wl, host, stage)
    if staged is None:
        return
    transfer = s.transfer = {
        "transfer_s": staged.transfer_s,
        "transfer_bytes": staged.transfer_bytes,
    }
    if notes := [p.why_replicated for p in placed if p.why_replicated]:
        s.diagnostics.append(diagnose.replicated(notes, len(devices)))
    states = {Mode.SHARDED: s}
    outputs, _ = _cold_first_calls(
        session, label, wl, host, staged, states, reference, report, transfer
    )
    if session.check_outputs:
        _say_unvalidated(states, outputs, reference, no_reference)


def _stage(
    states: Iterable[_ModeState], wl: Workload, host: Inputs, stage: Callable[[], modes.Staged]
) -> modes.Staged | None:
    """Stage the inputs with `stage` (timed inside it); None, with `states` failed, when it
    raises. Inputs JAX got narrower than NumPy (int64 as int32 without x64) are said so."""
    states = list(states)
    try:
        staged = stage()
    except Exception as exc:
        for s in states:
            s.fail(exc)
        return None
    if narrowed := diagnose.find_narrowed(_staged_pairs(wl, host, staged)):
        for s in states:
            s.diagnostics.append(diagnose.narrowed_inputs(narrowed))
    return staged


# What a mode's cold first call is reported as, and how it is made ready.
_COLD_STEP = {
    Mode.JIT: "jit compile",
    Mode.EAGER: "eager first call",
    Mode.SHARDED: "sharded compile",
}
PREPARE = {Mode.JIT: prepare_jit, Mode.EAGER: prepare_eager, Mode.SHARDED: prepare_jit}


def _cold_first_calls(
    session: CaseSession,
    label: str,
    wl: Workload,
    host: Inputs,
    staged: modes.Staged,
    states: Mapping[Mode, _ModeState],
    reference: Any,
    report: StepReport,
    transfer: dict[str, Any],
) -> tuple[dict[Mode, Any], bool]:
    """Clear JAX's caches once, then take each mode's cold first call on `staged`, in order.

    The first output is copied back to the host before anything reads it, timed into
    `transfer` (`transfer_back_s`, `transfer_back_bytes`). Each output is validated against
    `reference` (when there is one) and checked for finite values; a compiled mode (jit,
    sharded) gets its cold compile registered to be measured again (`compile_again`).
    Returns the outputs by mode and whether the reference was of a wider dtype.
    """
    jcompile.clear_caches()
    reference_wider = False
    outputs: dict[Mode, Any] = {}
    for mode, s in states.items():
        report(_COLD_STEP[mode], None)
        try:
            with (
                maybe_attribute(session.capture, s.printed, timed=False),
                jcompile.shared_subfolder(f"{label}-{mode.value}"),
                modes.on_device(s.device),
                s.limit.charged("first call"),
            ):
                prepared = PREPARE[mode](wl, host, staged)
            s.call, s.compile = prepared.call, prepared.compile
            out = require_array_tree(prepared.output, wl, mode)
            if not outputs:  # jit's output (eager's where jit failed), before any read
                back = modes.fetch(out)  # sharded: a gather of the output's shards
                transfer.update(
                    transfer_back_s=back.transfer_s, transfer_back_bytes=back.transfer_bytes
                )
        except Exception as exc:
            s.fail(exc)
            continue
        outputs[mode] = out
        if mode is not Mode.SHARDED and s.device is not None:
            _check_output_device(s, out, s.device)
        if mode in (Mode.JIT, Mode.SHARDED):
            session.compile_again[(label, mode)] = functools.partial(
                cold_jit_stages, wl, host, staged, device=s.device
            )
        if reference is not None and session.check_outputs:
            reference_wider |= _validate(s, wl, reference, out, staged=staged)
        # The host copy: across processes, reading a sharded output is a gather (`to_host`).
        if s.status is Status.OK and validation.no_finite_values(modes.to_host(out)):
            s.diagnostics.append(diagnose.no_finite_output())
        elif s.status is Status.OK and validation.no_elements(out):
            s.diagnostics.append(diagnose.empty_output())
    return outputs, reference_wider


def _check_output_device(state: _ModeState, output: Any, device: jax.Device) -> None:
    """Warn when a leaf of a one-device mode's output lives on another device."""
    found = {
        d
        for leaf in jax.tree_util.tree_leaves(output)
        if isinstance(leaf, jax.Array)
        for d in leaf.devices()
    }
    if found - {device}:
        names = sorted(device_label(d) for d in found)
        state.diagnostics.append(
            diagnose.output_on_other_device(state.mode, names, device_label(device))
        )


def _say_unvalidated(
    states: Mapping[Mode, _ModeState], outputs: Mapping[Mode, Any], reference: Any, why: str
) -> None:
    """Without a NumPy reference, say so rather than report an unchecked output as plain
    `ok` (jit is spared where it was checked against eager)."""
    if reference is not None:
        return
    for mode in outputs:
        if mode is not Mode.JIT or Mode.EAGER not in outputs:
            states[mode].diagnostics.append(diagnose.unvalidated(why))


def _check_dtype_available(wl: Workload, dtype: str) -> None:
    """Refuse a dtype the workload pins but JAX would narrow (a 64-bit one without x64).

    Raises:
        WorkloadError: with the fix (run with --x64).
    """
    wanted = np.dtype(dtype)
    if wl.dtype is not None and jax.dtypes.canonicalize_dtype(wanted) != wanted:
        raise WorkloadError(
            f"workload {wl.name!r} runs in {wanted.name}, which JAX computes only with x64 "
            f"on (it would get {jax.dtypes.canonicalize_dtype(wanted).name}); run with --x64."
        )


def _eager_diagnostics(session: CaseSession, wl: Workload) -> None:
    """Say what eager means for this workload: run under jax.disable_jit(), or called as it
    is although parts of it are jitted."""
    for (_, mode), s in session.states.items():
        if mode is not Mode.EAGER:
            continue
        if wl.eager == "nojit":
            s.diagnostics.append(diagnose.eager_nojit(wl.eager_reason or 'eager="nojit"'))
        elif parts := jitted_parts(wl.jax_fn):
            s.diagnostics.append(diagnose.eager_partly_jitted("; ".join(parts)))


def _named_arguments(wl: Workload, host: Inputs) -> list[tuple[str, Any]]:
    """Every argument of a NumPy call by name (positional ones by parameter name)."""
    names = wl.argument_names(len(host.args))
    return [
        *zip(names, host.args, strict=True),
        *host.kwargs.items(),
        *host.static.items(),
    ]


def _staged_pairs(wl: Workload, host: Inputs, staged: modes.Staged) -> list[tuple[str, Any, Any]]:
    """(name, host value, device value) of every staged argument."""
    names = wl.argument_names(len(host.args))
    static = set(host.static_argnums)
    pairs = [
        (names[i], h, d)
        for i, (h, d) in enumerate(zip(host.args, staged.args, strict=True))
        if i not in static
    ]
    pairs += [(k, v, staged.kwargs[k]) for k, v in host.kwargs.items()]
    return pairs


#: A mode that failed or ran past its --timeout keeps no samples.
_NO_FIGURES = (Status.ERROR, Status.TIMEOUT)


def _measurement(
    case: Case,
    mode: Mode,
    s: _ModeState,
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


def measure_case(
    pc: PlannedCase,
    config: RunConfig,
    *,
    split_calls: int = 0,
    report: StepReport | None = None,
) -> list[Measurement]:
    """Measure one case in every configured mode under the protocol (docs: methodology)."""
    return measure_cases([pc], config, split_calls=split_calls, report=report)


def open_configured(
    pcs: Sequence[PlannedCase],
    config: RunConfig,
    *,
    report: StepReport | None = None,
    check_outputs: bool = True,
    skip: Skips | None = None,
) -> CaseSession:
    """`open_cases` with a run's settings: its modes, plan, seed, quick flag and timeout."""
    return open_cases(
        pcs,
        timed=config.modes,
        plan=config.plan,
        seed=config.seed,
        quick=config.quick,
        report=report,
        check_outputs=check_outputs,
        timeout_s=config.timeout_s,
        skip=skip,
    )


def measure_cases(
    pcs: Sequence[PlannedCase],
    config: RunConfig,
    *,
    split_calls: int = 0,
    report: StepReport | None = None,
    check_outputs: bool = True,
    skip: Skips | None = None,
) -> list[Measurement]:
    """Measure one workload × size × dtype on the devices of `pcs` in every configured mode
    under the protocol (docs: methodology), the NumPy side once for all of them (without
    `check_outputs`, the JAX outputs are not compared with it: `open_cases`).

    All of the plan's rounds are taken here, back to back; `run_workloads` spreads them
    over the run instead (see `SamplingPlan.rounds`). With `split_calls`, that many calls
    of each JAX mode are traced afterwards to split their time (`CaseSession.trace_splits`).
    `report` hears each step.
    """
    session = open_configured(pcs, config, report=report, check_outputs=check_outputs, skip=skip)
    rounds = config.plan.rounds
    for index in range(rounds):
        if report is not None and rounds > 1:
            done = index / rounds

            def round_report(step: str, fraction: float | None, done: float = done) -> None:
                assert report is not None
                report(step, None if fraction is None else done + fraction / rounds)

            session.sample(config.plan.for_round(), report=round_report)
        else:
            session.sample(config.plan.for_round(), report=report)
    for _ in range(config.plan.compile_measurements - 1):
        session.repeat_compile(report=report)
    if split_calls:
        session.trace_splits(split_calls, report=report)
    # 5. Diagnostics that compare modes (speed, compile figures): pure post-processing.
    return session.measurements()
