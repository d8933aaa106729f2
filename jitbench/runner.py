"""Orchestrate a run: plan cases, measure each under the protocol, emit progress events.

The runner never prints and never writes files itself: progress goes to an `on_event`
callback and partial runs to a `checkpoint` callback, both supplied by the caller.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import secrets
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import jax
import numpy as np

from jitbench import compile as jcompile
from jitbench import diagnose, environment, modes, validate
from jitbench.errors import ConfigError
from jitbench.registry import unknown_name_message
from jitbench.results import (
    Case,
    CompileInfo,
    Diagnostic,
    ErrorInfo,
    Measurement,
    Mode,
    Run,
    Status,
)
from jitbench.timer import SamplingPlan, calibrate, relative_ci_halfwidth, sample_interleaved
from jitbench.timer import warm_up as warm_up_call
from jitbench.workload import Inputs, Workload

ALL_MODES = (Mode.NUMPY, Mode.EAGER, Mode.JIT)
MAX_ERROR_CHARS = 2000


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """What to run and how precisely. `plan` holds the sampling rules."""

    sizes: tuple[str, ...] = ("S", "M")
    modes: tuple[Mode, ...] = ALL_MODES
    devices: tuple[str, ...] = ()
    x64: bool = False
    sweep: bool = False
    seed: int = 0
    quick: bool = False
    plan: SamplingPlan = field(default_factory=SamplingPlan)

    @classmethod
    def quick_settings(cls, **overrides: Any) -> RunConfig:
        """Smoke-test settings: smallest preset, tiny budgets, seconds in total."""
        plan = SamplingPlan(
            min_sample_s=0.001,
            warmup_s=0.0,
            min_samples=3,
            max_samples=5,
            precision=0.05,
            budget_s=0.02,
        )
        return cls(**{"sizes": ("S",), "plan": plan, "quick": True, **overrides})

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["modes"] = [m.value for m in self.modes]
        return d


@dataclass(frozen=True)
class RunStarted:
    run_id: str
    total_cases: int


@dataclass(frozen=True)
class CaseStarted:
    case: Case
    index: int
    total: int


@dataclass(frozen=True)
class CaseFinished:
    case: Case
    index: int
    total: int
    measurements: tuple[Measurement, ...]


RunEvent = RunStarted | CaseStarted | CaseFinished


def new_run_id() -> str:
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{now}-{secrets.token_hex(3)}"


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def resolve_devices(specs: Sequence[str]) -> list[jax.Device]:
    """Devices named by platform ("cpu", "gpu") or platform:id ("cpu:1").

    Default: the first device of every platform JAX can initialise.
    Raises ConfigError for an unknown platform or id.
    """
    available = environment.all_devices()
    if not specs:
        first: dict[str, jax.Device] = {}
        for d in available:
            first.setdefault(d.platform, d)
        return list(first.values())
    by_label = {f"{d.platform}:{d.id}": d for d in available}
    platforms = {d.platform for d in available}
    chosen: list[jax.Device] = []
    for raw in specs:
        spec = raw.strip().lower().replace("cuda", "gpu").replace("rocm", "gpu")
        if spec in by_label:
            chosen.append(by_label[spec])
        elif spec in platforms:
            chosen.append(next(d for d in available if d.platform == spec))
        else:
            raise ConfigError(
                unknown_name_message("device", raw, sorted(platforms) + sorted(by_label))
            )
    return list(dict.fromkeys(chosen))


def device_label(device: jax.Device) -> str:
    return f"{device.platform}:{device.id}"


@dataclass(frozen=True)
class PlannedCase:
    workload: Workload
    size: str
    params: dict[str, Any]
    device: jax.Device
    dtype: str


def plan_cases(
    workloads: Sequence[Workload], config: RunConfig, devices: Sequence[jax.Device]
) -> list[PlannedCase]:
    """Every workload × size × device × dtype the config asks for.

    Raises ConfigError when a requested size exists in none of the workloads.
    """
    dtype = "float64" if config.x64 else "float32"
    if not config.sweep and workloads:
        known = {s for w in workloads for s in w.sizes}
        for size in config.sizes:
            if size not in known:
                raise ConfigError(unknown_name_message("size", size, sorted(known)))
    planned = []
    for wl in workloads:
        if config.sweep and wl.sweep:
            sizes = [(label, dict(p)) for label, p in zip(wl.sweep_labels, wl.sweep, strict=True)]
        else:
            sizes = [(s, dict(wl.sizes[s])) for s in config.sizes if s in wl.sizes]
        for size, params in sizes:
            for device in devices:
                planned.append(PlannedCase(wl, size, params, device, dtype))
    return planned


def warm_up_process(devices: Sequence[jax.Device]) -> None:
    """Compile and run a trivial function per device so backend start-up is not charged
    to the first workload's compile time."""
    for device in devices:
        x = jax.device_put(np.ones(8, np.float32), device)
        jax.block_until_ready(jax.jit(lambda v: v * 2 + 1)(x))
        jax.block_until_ready(x + 1)


def _error_info(exc: BaseException) -> ErrorInfo:
    text = str(exc)
    if len(text) > MAX_ERROR_CHARS:
        text = text[:MAX_ERROR_CHARS] + " …"
    return ErrorInfo(type=type(exc).__name__, message=text, hint=diagnose.hint_for_exception(exc))


@dataclass
class _ModeState:
    """Everything learnt about one mode of one case before sampling."""

    mode: Mode
    call: Callable[[], Any] | None = None
    error: BaseException | None = None
    compile: CompileInfo | None = None
    status: Status = Status.OK
    diagnostics: list[Diagnostic] = field(default_factory=list)
    calls_per_sample: int = 0
    timed_compiles: jcompile.CompileEvents = field(default_factory=jcompile.CompileEvents)

    def fail(self, exc: BaseException) -> None:
        self.error, self.status, self.call = exc, Status.ERROR, None
        self.diagnostics.extend(diagnose.for_exception(exc))


@contextlib.contextmanager
def _mode_region(state: _ModeState) -> Iterator[None]:
    with modes.timed_region(state.mode), jcompile.count_compiles() as events:
        yield
    state.timed_compiles.compile_count += events.compile_count


def _prepare_jit(state: _ModeState, wl: Workload, host: Inputs, staged: modes.Staged) -> Any:
    aot = jcompile.cold_aot_breakdown(
        wl.jax_fn, static_argnames=wl.static_argnames, args=staged.args,
        kwargs={**staged.kwargs, **staged.static},
    )
    jitted = modes.jit_function(wl)
    call = modes.build_call(Mode.JIT, wl, host=host, staged=staged, jitted=jitted)
    first_s, first_compiles, out = jcompile.cold_first_call(call)
    state.call = modes.specialise_call(Mode.JIT, call, out, staged=staged, jitted=jitted)
    state.compile = CompileInfo(
        first_call_s=first_s,
        compile_count=first_compiles,
        trace_s=aot.trace_s,
        lower_s=aot.lower_s,
        compile_s=aot.compile_s,
        jaxpr_eqn_count=aot.jaxpr_eqn_count,
        flops=aot.flops,
        transcendentals=aot.transcendentals,
        bytes_accessed=aot.bytes_accessed,
        memory=aot.memory,
        hlo_fingerprint=aot.hlo_fingerprint,
        while_loop_count=aot.while_loop_count,
    )
    return out


def _prepare_eager(state: _ModeState, wl: Workload, host: Inputs, staged: modes.Staged) -> Any:
    call = modes.build_call(Mode.EAGER, wl, host=host, staged=staged)
    first_s, first_compiles, out = jcompile.cold_first_call(call)
    state.call = call
    state.compile = CompileInfo(first_call_s=first_s, compile_count=first_compiles)
    return out


def _validate(
    state: _ModeState, wl: Workload, reference: Any, output: Any, *, against: str = "numpy"
) -> bool:
    """Compare a JAX output with the reference; mark a mismatch. Returns reference_wider."""
    result = validate.compare(reference, modes.to_host(output), rtol=wl.rtol, atol=wl.atol)
    if not result.ok:
        state.status = Status.MISMATCH
        state.diagnostics.append(diagnose.mismatch(
            result.message, nonfinite=result.nonfinite, mode=state.mode, against=against
        ))
    return result.reference_wider


def measure_case(pc: PlannedCase, config: RunConfig) -> list[Measurement]:
    """Measure one case in every configured mode under the protocol (see DESIGN §1)."""
    wl, plan = pc.workload, config.plan
    base_case = Case(
        workload=wl.name, size=pc.size, device=device_label(pc.device), dtype=pc.dtype,
        params=pc.params, platform=pc.device.platform, device_kind=pc.device.device_kind,
    )
    states = {m: _ModeState(m) for m in config.modes}
    try:
        host = wl.make_inputs(pc.params, dtype=pc.dtype, seed=config.seed)
    except Exception as exc:
        for s in states.values():
            s.fail(exc)
        return _finish(base_case, states, {}, plan, None)
    case = replace(
        base_case,
        input_elements=modes.nelements_of((host.args, host.kwargs)),
        input_bytes=modes.nbytes_of((host.args, host.kwargs)),
    )

    # 1. NumPy reference (computed even when numpy mode is not timed: validation needs it).
    reference: Any = None
    numpy_state = states.get(Mode.NUMPY)
    try:
        numpy_call = modes.build_call(Mode.NUMPY, wl, host=host, staged=None)
        reference = numpy_call()
        if numpy_state:
            numpy_state.call = numpy_call
    except Exception as exc:
        if numpy_state:
            numpy_state.fail(exc)

    # 2. Stage inputs on the device, timed on its own.
    staged: modes.Staged | None = None
    jax_states = [states[m] for m in modes.JAX_MODES if m in states]
    transfer: dict[str, Any] = {}
    if jax_states:
        try:
            staged = modes.stage(host, pc.device)
            transfer = {"transfer_s": staged.transfer_s, "transfer_bytes": staged.transfer_bytes}
        except Exception as exc:
            for s in jax_states:
                s.fail(exc)

    # 3. Cold compile and cold first call (jit first, then eager), then validation.
    reference_wider = False
    outputs: dict[Mode, Any] = {}
    if staged is not None:
        for s in jax_states:
            prepare = _prepare_jit if s.mode is Mode.JIT else _prepare_eager
            try:
                out = prepare(s, wl, host, staged)
            except Exception as exc:
                s.fail(exc)
                continue
            outputs[s.mode] = out
            if reference is not None:
                reference_wider |= _validate(s, wl, reference, out)
    if reference is None and Mode.JIT in outputs and Mode.EAGER in outputs:
        # No NumPy reference (its side failed): jit must at least agree with eager.
        _validate(states[Mode.JIT], wl, modes.to_host(outputs[Mode.EAGER]), outputs[Mode.JIT],
                  against="eager")
    if reference_wider and numpy_state and numpy_state.status is Status.OK:
        numpy_state.diagnostics.append(diagnose.numpy_wider_dtype())

    # 4. Warm up and calibrate each mode, then sample all modes in interleaved rounds.
    runnable = [s for s in states.values() if s.call is not None]
    for s in runnable:
        assert s.call is not None
        try:
            with _mode_region(s):
                warm_up_call(s.call, plan=plan)
                s.calls_per_sample = calibrate(s.call, plan=plan)
        except Exception as exc:
            s.fail(exc)
    runnable = [s for s in runnable if s.call is not None]
    s_by_mode = {s.mode: s for s in runnable}
    for s in runnable:
        s.timed_compiles = jcompile.CompileEvents()
    series = sample_interleaved(
        {s.mode: s.call for s in runnable if s.call is not None},
        {s.mode: s.calls_per_sample for s in runnable},
        plan=plan,
        region=lambda m: _mode_region(s_by_mode[m]),
    )
    samples: dict[Mode, tuple[float, ...]] = {}
    for mode, ser in series.items():
        s = states[mode]
        if ser.error is not None:
            s.fail(ser.error)
            continue
        samples[mode] = tuple(ser.samples_s)
        if s.timed_compiles.compile_count:
            s.diagnostics.append(diagnose.recompiled_during_timing(s.timed_compiles.compile_count))
        if not ser.converged and not config.quick:
            width = relative_ci_halfwidth(ser.samples_s)
            if width > plan.precision:
                s.diagnostics.append(diagnose.noisy(width, plan.precision))
    # 5. Diagnostics that compare modes (speed, compile figures): pure post-processing.
    return diagnose.case_diagnostics(_finish(case, states, samples, plan, transfer))


def _finish(
    case: Case,
    states: dict[Mode, _ModeState],
    samples: dict[Mode, tuple[float, ...]],
    plan: SamplingPlan,
    transfer: dict[str, Any] | None,
) -> list[Measurement]:
    out = []
    for mode, s in states.items():
        t = transfer if (transfer and mode is not Mode.NUMPY) else {}
        out.append(
            Measurement(
                case=case,
                mode=mode,
                status=s.status,
                samples_s=() if s.status is Status.ERROR else samples.get(mode, ()),
                calls_per_sample=s.calls_per_sample if s.status is not Status.ERROR else 0,
                transfer_s=t.get("transfer_s"),
                transfer_bytes=t.get("transfer_bytes"),
                compile=replace(s.compile, timed_compile_count=s.timed_compiles.compile_count)
                if s.compile
                else None,
                error=_error_info(s.error) if s.error is not None else None,
                diagnostics=tuple(s.diagnostics),
            )
        )
    return out


@contextlib.contextmanager
def x64_enabled(flag: bool) -> Iterator[None]:
    """Set `jax_enable_x64` for the block (both sides then use float64 inputs)."""
    before = bool(jax.config.jax_enable_x64)
    jax.config.update("jax_enable_x64", flag)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", before)


def run_workloads(
    workloads: Sequence[Workload],
    config: RunConfig | None = None,
    *,
    on_event: Callable[[RunEvent], None] | None = None,
    checkpoint: Callable[[Run], None] | None = None,
    run_id: str | None = None,
) -> Run:
    """Measure `workloads` under `config` and return the Run.

    Args:
        on_event: receives RunStarted, CaseStarted and CaseFinished events (progress).
        checkpoint: receives the partial Run (complete=False) after every case, so the
            caller can save it; a run interrupted later keeps what was measured.

    Raises:
        ConfigError: unknown device or size names.
    """
    config = config or RunConfig()
    emit = on_event or (lambda _e: None)
    started = utc_now()
    rid = run_id or new_run_id()
    with x64_enabled(config.x64):
        devices = resolve_devices(config.devices)
        cases = plan_cases(workloads, config, devices)
        env = environment.capture()
        warm_up_process(devices)
        emit(RunStarted(rid, len(cases)))
        measured: list[Measurement] = []

        def snapshot(complete: bool) -> Run:
            return Run(
                run_id=rid, started_at=started, finished_at=utc_now() if complete else None,
                complete=complete, environment=env, config=config.to_dict(),
                measurements=tuple(measured),
            )

        for i, pc in enumerate(cases):
            case = Case(workload=pc.workload.name, size=pc.size,
                        device=device_label(pc.device), dtype=pc.dtype, params=pc.params)
            emit(CaseStarted(case, i, len(cases)))
            result = measure_case(pc, config)
            measured.extend(result)
            emit(CaseFinished(result[0].case if result else case, i, len(cases), tuple(result)))
            if checkpoint is not None:
                checkpoint(snapshot(False))
        return snapshot(True)
