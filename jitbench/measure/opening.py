"""Open a case under the protocol: everything before timing.

`open_case` (one device) and `open_cases` (one workload × size × dtype on several devices:
the NumPy side is host code, measured once and sampled in the same rounds as every
device's JAX modes, so all devices' speedups share one baseline) make the inputs and the
NumPy reference, stage them, make one cold first call per JAX mode, validate, warm up and
calibrate, and return a `session.CaseSession`. `measure_case` and `measure_cases` wrap
it for the callers that take every round at once (`profile`, asv, the `--isolate`
child): open, sample, report; `open_configured` opens with a RunConfig's settings.
Planning cases, spreading rounds across cases, guards, checkpoints and events belong to
`jitbench.runner`. The protocol's steps and why: docs: methodology, "The measurement
protocol".
"""

from __future__ import annotations

import contextlib
import functools
import gc
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import jax
import numpy as np

from jitbench.config import RunConfig, SamplingPlan
from jitbench.errors import NoNumpySide, WorkloadError, short_repr
from jitbench.measure import compilation as jcompile
from jitbench.measure import diagnose, modes, validation
from jitbench.measure.capture import PrintTally, maybe_attribute
from jitbench.measure.devices import MemoryMark, case_peak, device_label, memory_mark
from jitbench.measure.faults import Skips, add_hint
from jitbench.measure.limits import ModeLimit, doing
from jitbench.measure.session import (
    HOST,
    CaseSession,
    ModeState,
    Slot,
    StepReport,
    mode_region,
    no_report,
)
from jitbench.measure.shared_inputs import shared_inputs
from jitbench.measure.timer import (
    warm_up_and_calibrate,
)
from jitbench.results import (
    Case,
    CompileInfo,
    Measurement,
    Mode,
    Status,
)
from jitbench.suite.jitted import jitted_parts
from jitbench.suite.workload import Inputs, Workload


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


# The cold first calls after a case's one cache clear: jit first, so its trace, lowering and
# compile are all cold; eager's per-primitive programs are then all still compiled for real
# (jit's compile fills none of their cache entries), which a second clear would only repeat
# at the price of compiling jit's program again before it is timed.
COLD_ORDER = (Mode.JIT, Mode.EAGER)


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
    state: ModeState,
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
    states: dict[Slot, ModeState] = {}
    for pc, label in zip(pcs, labels, strict=True):
        for m in timed:
            nojit = m is Mode.EAGER and wl.eager == "nojit"
            others = tuple(o.value for o in timed if o is not m)
            states.setdefault(
                CaseSession._slot(label, m),
                ModeState(
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
        _open(session, pcs, labels, seed=seed, report=report or no_report)
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
            with mode_region(s, capture, "warm-up and calibration"):
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
    numpy_state: ModeState | None,
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
    pcs: Sequence[PlannedCase], labels: Sequence[str], states: Mapping[Slot, ModeState]
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
    states: Iterable[ModeState], wl: Workload, host: Inputs, stage: Callable[[], modes.Staged]
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
    states: Mapping[Mode, ModeState],
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


def _check_output_device(state: ModeState, output: Any, device: jax.Device) -> None:
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
    states: Mapping[Mode, ModeState], outputs: Mapping[Mode, Any], reference: Any, why: str
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
