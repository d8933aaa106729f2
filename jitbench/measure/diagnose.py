"""Turn what was seen while measuring into diagnostics: a stable code, a severity, a
message, a hint.

Each detector is a small pure function of measurements and observations, so it can be
tested alone and extended without touching the runner. `case_diagnostics` adds, once per
case on the finished measurements, what needs all its modes (compile figures, and the
speed notes `results.analysis.judgement` judges on the case's figures). Judging a whole
run's stored figures (outliers, sizes out of order, processes that disagree, a pooled
run's notes) is the analysis layer's: `results.analysis.judgement`.

Stable codes (see `CODES`): a pitfall code means jitbench saw the pitfall happen, not that
it guessed from the source.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from jitbench import formatting as fmt
from jitbench.measure.capture import PrintTally
from jitbench.results import Diagnostic, Measurement, Mode, Severity, Status
from jitbench.results.analysis import analyse_case
from jitbench.results.analysis.judgement import (
    EAGER_DISPATCH,
    EAGER_FAR_SLOWER,
    JIT_SLOWER,
    NOISY,
    OUTLIERS,
    PROCESSES_DISAGREE,
    RECOMPILED,
    SIZE_ORDER,
    speed_notes,
)
from jitbench.results.analysis.judgement import (
    noisy as noisy,  # one process's note, which `session` adds while sampling
)

# Pitfall codes: each means the measurement was affected by a known JAX pitfall.
TRACED_CONTROL_FLOW = "traced-control-flow"
IMPLICIT_TRANSFER = "implicit-transfer"
LARGE_JAXPR = "large-jaxpr"
SLOW_COMPILE = "slow-compile"
OUTPUT_MISMATCH = "output-mismatch"
NONFINITE = "nonfinite-output"
NUMPY_FLOAT64 = "numpy-float64"
PRINTS = "prints-during-call"
INPUT_NARROWED = "input-narrowed"
SCALAR_PROMOTION = "scalar-promotion"
EAGER_PARTLY_JITTED = "eager-partly-jitted"
# Observations: true statements about speed at this size, not mistakes in the code (the
# judged ones, jit slower, eager dispatch-bound, noisy, are `results.analysis.judgement`'s).
EAGER_NOJIT = "eager-nojit"
ONE_DEVICE = "sharded-one-device"  # sharded mode skipped: the platform has one device
REPLICATED = "sharded-replicated"  # an input sharded mode would split went whole to each
# Measurement trouble: the figure itself is suspect (outliers, size order and processes
# that disagree are judged on the stored figures: `results.analysis.judgement`).
NO_FINITE = "no-finite-output"
NO_TIME_SPLIT = "time-split-unavailable"  # time_split / profile: the trace gave no split
OTHER_DEVICE = "output-on-other-device"
# A partial run's case whose --rounds (or repeated cold compiles) were not all taken: its
# samples are some rounds of the plan's; a resume measures it again (`runner.scheduler`).
UNFINISHED_ROUNDS = "unfinished-rounds"
# A mode that ran past --timeout (the others kept their figures), stopped in its first call,
# warm-up or samples; "mode-capped" where the samples it took before are kept; and a mode a
# --processes worker did not measure again because it timed out in the first process.
MODE_TIMEOUT = "mode-timeout"
MODE_CAPPED = "mode-capped"
TIMED_OUT_BEFORE = "timed-out-before"

PITFALL_CODES = frozenset(
    {
        TRACED_CONTROL_FLOW,
        IMPLICIT_TRANSFER,
        RECOMPILED,
        LARGE_JAXPR,
        SLOW_COMPILE,
        OUTPUT_MISMATCH,
        NONFINITE,
        NUMPY_FLOAT64,
        PRINTS,
        INPUT_NARROWED,
        SCALAR_PROMOTION,
        EAGER_PARTLY_JITTED,
    }
)
CODES = PITFALL_CODES | {
    JIT_SLOWER,
    EAGER_DISPATCH,
    NOISY,
    EAGER_NOJIT,
    ONE_DEVICE,
    REPLICATED,
    OUTLIERS,
    SIZE_ORDER,
    PROCESSES_DISAGREE,
    NO_FINITE,
    OTHER_DEVICE,
    UNFINISHED_ROUNDS,
    MODE_TIMEOUT,
    MODE_CAPPED,
    TIMED_OUT_BEFORE,
}

# Thresholds of the case-level detectors (keyword arguments of `case_diagnostics`).
LARGE_JAXPR_EQNS = 1000  # the default suite's programs have < 50 equations
SLOW_COMPILE_S = 5.0  # trace + lower + compile; the default suite needs < 0.5 s (~3 s when loaded)
SMALL_PROGRAM_EQNS = 50  # no unrolled loop: a slow compile of this is the backend's doing

TRACER_ERRORS = {
    "ConcretizationTypeError",
    "TracerBoolConversionError",
    "TracerIntegerConversionError",
    "TracerArrayConversionError",
    "NonConcreteBooleanIndexError",
}


def _is_tracer_error(exc: BaseException) -> bool:
    # The named tracer errors, plus the TypeError / IndexError JAX raises when a traced
    # value is used where a concrete one is needed (a shape, a slice bound).
    if type(exc).__name__ in TRACER_ERRORS:
        return True
    text = str(exc)
    return (
        isinstance(exc, (TypeError, IndexError))
        and ("Tracer(" in text or "Traced<" in text)
        and ("concrete" in text or "static" in text)
    )


def hint_for_exception(exc: BaseException) -> str:
    """A one-line fix for exceptions whose cause is a known JAX pitfall, else ''."""
    text = str(exc)
    if _is_tracer_error(exc):
        return (
            "Python control flow or conversion depends on a traced value: mark the argument "
            "static (static_argnames), or use jnp.where, lax.cond or lax.while_loop."
        )
    if "Disallowed" in text and "transfer" in text:
        return (
            "the function copies data between host and device inside the timed call "
            "(np.asarray, float(), .item(), a NumPy constant); keep the work in jax.numpy."
        )
    if ("cuFFT" in text and "scratch" in text) or "CUDA_ERROR_OUT_OF_MEMORY" in text:
        return (
            "the GPU's memory ran out: JAX preallocates 75 % of a GPU in every process, and "
            "other processes on it (a notebook, another run) hold theirs; choose a smaller "
            "--sizes preset, or set XLA_PYTHON_CLIENT_MEM_FRACTION before JAX starts."
        )
    if isinstance(exc, MemoryError) or "RESOURCE_EXHAUSTED" in text:
        return "the size does not fit in memory; choose a smaller --sizes preset."
    return ""


def code_for_exception(exc: BaseException) -> str | None:
    """The diagnostic code an exception maps to, if it is a known pitfall."""
    text = str(exc)
    if _is_tracer_error(exc):
        return TRACED_CONTROL_FLOW
    if "Disallowed" in text and "transfer" in text:
        return IMPLICIT_TRANSFER
    return None


def for_exception(exc: BaseException) -> list[Diagnostic]:
    """The diagnostic for an exception raised by a workload, [] if not a known pitfall."""
    code = code_for_exception(exc)
    if code is None:
        return []
    return [
        Diagnostic(
            code=code,
            severity=Severity.ERROR,
            message=f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300],
            hint=hint_for_exception(exc),
        )
    ]


def without_mode_hint(mode: str, others: Sequence[str]) -> str:
    """What to do about a mode too slow for --timeout: measure the others alone, or wait."""
    rest = f"--modes {','.join(others)} measures the other modes without it, or " if others else ""
    return f"{rest}raise --timeout to wait for {mode}."


def mode_timeout(exc: Any, others: Sequence[str]) -> Diagnostic:
    """`mode-timeout`: one mode ran past --timeout (`measure.limits.ModeTimeout`) and was
    stopped; the case's other modes kept their figures."""
    return Diagnostic(
        code=MODE_TIMEOUT,
        severity=Severity.ERROR,
        message=f"{exc}; the other modes kept their figures",
        hint=without_mode_hint(exc.mode, others),
    )


def mode_capped(exc: Any, samples: int, others: Sequence[str]) -> Diagnostic:
    """`mode-capped`: a mode reached --timeout while sampling; its samples so far are kept."""
    return Diagnostic(
        code=MODE_CAPPED,
        severity=Severity.WARNING,
        message=f"{exc.mode} reached --timeout {exc.limit_s:g} s while sampling: its "
        f"{samples} sample(s) so far are its figure",
        hint=without_mode_hint(exc.mode, others),
    )


def timed_out_before(mode: str, why: str, others: Sequence[str]) -> Diagnostic:
    """`timed-out-before`: a --processes worker left out a mode the process that led the
    group stopped at --timeout (`why`), rather than pay the timeout again."""
    return Diagnostic(
        code=TIMED_OUT_BEFORE,
        severity=Severity.INFO,
        message=f"{mode} not measured again in this process: in the one that led it, {why}",
        hint="--setting retry_timeouts=true measures it in every process; "
        + without_mode_hint(mode, others),
    )


def numpy_wider_dtype() -> Diagnostic:
    return Diagnostic(
        code=NUMPY_FLOAT64,
        severity=Severity.WARNING,
        message="the NumPy side returns a wider float dtype than JAX (float64 or complex128 "
        "vs float32 or complex64): an unfair comparison",
        hint="cast the NumPy result to the input dtype, or run both sides in float64 with "
        "--x64; under NumPy 2 (NEP 50) a np.float64 scalar made inside the NumPy side "
        "(np.float64(…), a float64 array's .sum()) promotes float32 arrays to float64.",
    )


def unfinished_rounds(taken: int, rounds: int) -> Diagnostic:
    """`unfinished-rounds`: a partial run stopped after `taken` of the case's `rounds`
    (all of them, but not its repeated cold compiles, when `taken` == `rounds`)."""
    what = (
        f"{taken} of {rounds} sampling rounds"
        if taken < rounds
        else f"all {rounds} sampling rounds but not the repeated cold compiles"
    )
    return Diagnostic(
        code=UNFINISHED_ROUNDS,
        severity=Severity.WARNING,
        message=f"the run stopped after {what} of this case",
        hint="`jitbench run --resume` measures the case again, every round.",
    )


def narrowed_inputs(narrowed: Sequence[tuple[str, str, str, bool]]) -> Diagnostic:
    """`input-narrowed`: inputs JAX received in a narrower dtype than NumPy, because x64
    is off. Each entry is (argument, NumPy dtype, JAX dtype, whether its values fit)."""
    parts = [
        f"{name} {wide} → {narrow}" + ("" if fits else " (values out of range: they wrap)")
        for name, wide, narrow, fits in narrowed
    ]
    return Diagnostic(
        code=INPUT_NARROWED,
        severity=Severity.WARNING,
        message="JAX received narrower inputs than NumPy without x64: "
        + ", ".join(parts)
        + "; the two sides compute in different dtypes",
        hint="run with --x64, or make the input function produce the 32-bit dtype (or pin it "
        "with input_dtypes=) so both sides compute alike.",
    )


def scalar_promotion(names: Sequence[str], case_dtype: str) -> Diagnostic:
    """`scalar-promotion`: NumPy floating scalars wider than the case's dtype among the
    NumPy side's arguments (static ones are passed as they are)."""
    listed = ", ".join(names)
    return Diagnostic(
        code=SCALAR_PROMOTION,
        severity=Severity.WARNING,
        message=f"{listed}: wider NumPy scalar(s) in a {case_dtype} case; under NumPy 2's "
        f"promotion rules (NEP 50) they make the NumPy side compute in the wider dtype",
        hint=f"make them {case_dtype} (np.{case_dtype}(x)) or Python floats, which adapt to "
        "the arrays they meet.",
    )


def eager_nojit(reason: str) -> Diagnostic:
    """`eager-nojit`: eager mode ran the JAX side under `jax.disable_jit()`."""
    return Diagnostic(
        code=EAGER_NOJIT,
        severity=Severity.INFO,
        message=f"eager ran under jax.disable_jit() ({reason}): every operation, lax loops "
        "included, was dispatched on its own",
        hint='@workload(eager="call") times calling it as it is instead (its jitted parts '
        "then run compiled).",
    )


def eager_partly_jitted(reason: str) -> Diagnostic:
    """`eager-partly-jitted`: eager mode called a JAX side that runs jitted code."""
    return Diagnostic(
        code=EAGER_PARTLY_JITTED,
        severity=Severity.WARNING,
        message=f"eager called the JAX side as it is, but {reason}: those parts ran "
        "compiled, so this eager figure is partly jit",
        hint='eager="nojit" (in bench() or @workload) runs them op by op under jax.disable_jit().',
    )


def find_narrowed(pairs: Sequence[tuple[str, Any, Any]]) -> list[tuple[str, str, str, bool]]:
    """(name, host dtype, device dtype, values fit) for every argument whose device copy
    has a narrower dtype than its host value; `pairs` are (name, host value, device
    value) pytrees of the same structure."""
    import jax

    found: list[tuple[str, str, str, bool]] = []
    for name, host, device in pairs:
        for h, d in zip(
            jax.tree_util.tree_leaves(host), jax.tree_util.tree_leaves(device), strict=False
        ):
            hd, dd = getattr(h, "dtype", None), getattr(d, "dtype", None)
            if not isinstance(h, (np.ndarray, np.generic)) or hd is None or dd is None:
                continue
            hd, dd = np.dtype(hd), np.dtype(dd)
            if hd.kind != dd.kind or dd.itemsize >= hd.itemsize:
                continue
            found.append((name, hd.name, dd.name, _fits(np.asarray(h), dd)))
            break
    return found


def _fits(values: np.ndarray, narrow: np.dtype[Any]) -> bool:
    if values.size == 0:
        return True
    if narrow.kind in "iu":
        info = np.iinfo(narrow)
        return bool(values.min() >= info.min and values.max() <= info.max)
    if narrow.kind in "fc":
        finite = np.abs(values[np.isfinite(values)])
        return finite.size == 0 or bool(finite.max() <= np.finfo(narrow).max)
    return True


def find_wide_scalars(named: Sequence[tuple[str, Any]], case_dtype: str) -> list[str]:
    """Names of NumPy floating scalars (or 0-d arrays) wider than the float dtype
    `case_dtype`; [] when the case's dtype is not a float dtype."""
    target = np.dtype(case_dtype)
    if target.kind != "f":
        return []
    wide = []
    for name, value in named:
        if isinstance(value, (np.generic, np.ndarray)) and np.ndim(value) == 0:
            dt = np.dtype(value.dtype)
            component = dt.itemsize // 2 if dt.kind == "c" else dt.itemsize
            if dt.kind in "fc" and component > target.itemsize:
                wide.append(f"{name} ({dt.name})")
    return wide


def recompiled_during_timing(count: int, mode: Mode | None = None) -> Diagnostic:
    hint = (
        "keep shapes and dtypes stable, and create jax.jit(f) once outside the loop "
        "(not a new partial or lambda per call)."
    )
    if mode is Mode.EAGER:
        hint = (
            "in eager mode a lax loop (fori_loop, scan, while_loop) compiles its body once "
            "per body function: a closure made anew on every call compiles on every call, so "
            "this eager figure is mostly compile time. Give the body a module-level "
            'function, or time op-by-op eager with @workload(eager="nojit").'
        )
    return Diagnostic(
        code=RECOMPILED,
        severity=Severity.WARNING,
        message=f"{count} compile(s) happened during timing; the timed calls include compiling",
        hint=hint,
    )


def one_device(reason: str) -> Diagnostic:
    """`sharded-one-device`: sharded mode was skipped (`reason` says why and how to get
    several devices)."""
    return Diagnostic(code=ONE_DEVICE, severity=Severity.INFO, message=reason)


def replicated(notes: Sequence[str], device_count: int) -> Diagnostic:
    """`sharded-replicated`: inputs sharded mode would have split were copied whole to each
    of the `device_count` devices (their axis does not divide by it)."""
    return Diagnostic(
        code=REPLICATED,
        severity=Severity.INFO,
        message="; ".join(notes),
        hint=f"pick a size whose split axis divides by {device_count}, or say how to split "
        "it with @workload(shard=...); a replicated input is computed on every device.",
    )


def unvalidated(reason: str = "") -> Diagnostic:
    """`unvalidated`: no NumPy reference to check this output against (`reason` says why;
    by default its side failed)."""
    if reason.startswith(NO_NUMPY_SIDE):
        return Diagnostic(
            code="unvalidated",
            severity=Severity.INFO,
            message=f"{reason}: eager's output is not checked (jit's is checked against it)",
            hint="give a NumPy twin (bench(f, x, numpy=f_np)) or write f(xp, ...) to compare "
            "with NumPy and check the outputs.",
        )
    if reason:
        return Diagnostic(
            code="unvalidated",
            severity=Severity.WARNING,
            message=f"{reason}, so this output was not checked",
            hint="declare outputs=(the arguments the NumPy side writes into); the timing "
            "stands, but not its correctness.",
        )
    return Diagnostic(
        code="unvalidated",
        severity=Severity.WARNING,
        message="no NumPy reference (its side failed), so this output was not checked",
        hint="fix the NumPy side; the timing stands, but not its correctness.",
    )


#: How the NumPy side of a workload without one says so (`errors.NoNumpySide`).
NO_NUMPY_SIDE = "no NumPy side"


def changed_jax_config(changed: Mapping[str, tuple[Any, Any]]) -> Diagnostic:
    """`changed-jax-config`: the workload changed JAX's global configuration while it was
    measured; jitbench restored it, so later cases run as the run was configured."""
    what = ", ".join(f"{k}: {before!r} → {after!r}" for k, (before, after) in changed.items())
    return Diagnostic(
        code="changed-jax-config",
        severity=Severity.WARNING,
        message=f"the workload changed JAX's global configuration ({what}); jitbench "
        "restored it after the workload's calls, so later cases are unaffected, but this "
        "case's figures ran under the change",
        hint="set JAX options outside the workload (--x64, JAX_* environment variables, "
        "or a `with jax.default_matmul_precision(...)` inside the function).",
    )


def no_numpy_side(reason: str) -> Diagnostic:
    """`no-numpy-side`: a JAX-only workload's NumPy mode, skipped (eager is the baseline)."""
    return Diagnostic(
        code="no-numpy-side",
        severity=Severity.INFO,
        message=f"{reason}: NumPy is not measured; jit is compared with eager",
        hint="give a NumPy twin (numpy=f_np) or write f(xp, ...) to compare with NumPy.",
    )


def empty_output() -> Diagnostic:
    """The output has no elements: validation compares nothing."""
    return Diagnostic(
        code="empty-output",
        severity=Severity.WARNING,
        message="the output has no elements, so checking it against the other modes proves nothing",
        hint="check the input function's sizes; time a computation that returns values.",
    )


def numpy_side_ran_jax() -> Diagnostic:
    """The NumPy side returned JAX arrays: the comparison is JAX against JAX."""
    return Diagnostic(
        code="numpy-side-ran-jax",
        severity=Severity.WARNING,
        message="the NumPy side returned JAX arrays, so it ran JAX (jnp, jax.*), not NumPy: "
        "its speedups compare JAX with JAX",
        hint="write the NumPy side with numpy (np.*), or with xp when one function serves "
        "both sides (def f(xp, x)).",
    )


def no_finite_output() -> Diagnostic:
    """Every value of the output is NaN or ±Inf: validation compares nothing."""
    return Diagnostic(
        code=NO_FINITE,
        severity=Severity.WARNING,
        message="every value of the output is NaN or Inf, so checking it against the other "
        "modes proves nothing (and NaN arithmetic can run at another speed)",
        hint="check the input function and the workload for a division by zero, a log of "
        "negatives or an overflow; time a computation with real values.",
    )


def output_on_other_device(mode: Mode, found: Sequence[str], expected: str) -> Diagnostic:
    """A JAX mode's output lives (partly) on a device other than its case's: the time is
    at least partly another device's."""
    return Diagnostic(
        code=OTHER_DEVICE,
        severity=Severity.WARNING,
        message=f"the {mode.value} output is on {', '.join(found)}, not on the case's device "
        f"{expected}: part of the timed work ran elsewhere",
        hint="let the inputs choose the device: no jax.device_put or jax.default_device to "
        "a fixed device inside the workload.",
    )


def no_time_split(mode: Mode, reason: str) -> Diagnostic:
    """The profiler trace that splits `mode`'s time into host dispatch and device execution
    failed or held no call (`measure.timeline`); the timing itself is unaffected."""
    return Diagnostic(
        code=NO_TIME_SPLIT,
        severity=Severity.INFO,
        message=f"no host/device split for {mode.value}: {reason}; the timing is unaffected",
        hint="another jax.profiler trace may be running in this process; stop it, or run "
        "`jitbench profile` on this workload alone.",
    )


#: The hint of `nonfinite-output` when the program takes a gradient (the JAX FAQ's
#: "gradients contain NaN where using where"): --x64 does not help there.
DOUBLE_WHERE_HINT = (
    "a gradient through jnp.where is NaN where the branch it does not select is not "
    "finite (log, sqrt or a division at the masked points: 0 × inf is NaN); make the input "
    "safe before the risky operation as well, the double where of the JAX FAQ: "
    "`safe = jnp.where(mask, x, 1.0); jnp.where(mask, jnp.log(safe), 0.0)`. --x64 does "
    "not help here."
)


#: `validation.FLOAT32_ROUNDING` as text (diagnose reads no validation internals).
FLOAT32_ROUNDING_TEXT = "0.001 relative norm error"


def mismatch(
    message: str,
    *,
    nonfinite: bool,
    mode: Mode | None = None,
    against: str = "numpy",
    gradient: bool = False,
    reduced_matmul: str | None = None,
    structural: bool = False,
    rounding: bool = False,
    zero_reference: bool = False,
) -> Diagnostic:
    """A JAX output that does not match the reference (`message` says where).

    `against` is the mode that served as reference: "numpy", or "eager" when the NumPy
    side failed and jit was checked against eager instead. `gradient`: the program takes
    a derivative (autodiff), which changes the hint for non-finite outputs.
    `reduced_matmul`: the platform ("gpu", "tpu") when a float32 output was computed there
    with JAX's matmul precision not set to full float32: the hint then says so first.
    `structural`: the outputs differ in shape or number of arrays, which no purity rule or
    tolerance explains: the hint says to make the two sides return the same arrays.
    `rounding`: compared at float32 and off by what float32 rounding accumulates
    (`validation.FLOAT32_ROUNDING`): the message says so and the hint is --x64.
    """
    who = f"{mode.value} output" if mode is not None else "output"
    reference = "the NumPy reference" if against == "numpy" else f"the {against} output"
    if nonfinite:
        return Diagnostic(
            code=NONFINITE,
            severity=Severity.ERROR,
            message=f"{who}: {message}" + (" (the program takes a gradient)" if gradient else ""),
            hint=DOUBLE_WHERE_HINT
            if gradient
            else "check for overflow or log/sqrt of invalid values at this dtype; try --x64.",
        )
    if structural:
        return Diagnostic(
            code=OUTPUT_MISMATCH,
            severity=Severity.ERROR,
            message=f"{who} differs from {reference}: {message}",
            hint="the two sides return different arrays, which no purity rule or tolerance "
            "explains: make them return the same shapes in the same structure (a reshape, a "
            "squeeze, a tuple against one array).",
        )
    if mode is Mode.JIT:
        hint = (
            "jit runs the Python body once, at trace time: globals read then stay frozen and "
            "side effects do not repeat; pass state in as arguments (pure functions). Widen "
            "the workload's rtol/atol only if the difference is rounding."
        )
    else:
        hint = (
            "an impure function (global state, side effects, randomness) or a real bug; "
            "widen the workload's rtol/atol only if the difference is rounding."
        )
    if zero_reference:
        hint = (
            "the reference cancelled exactly to zero (x - x.mean() of constant inputs, say) "
            "where the other side kept rounding: give the workload (or bench) an atol on "
            "the scale of its inputs, such as atol=1e-6 for values near 1 in float32."
        )
    if rounding:
        hint = (
            "a difference this small is float32 rounding accumulated over the computation, "
            "not a bug: run with --x64 to compare both sides in float64, or widen the "
            "workload's rtol/atol (norm_tol) for float32."
        )
        message += f" (the size of float32 rounding: at most {FLOAT32_ROUNDING_TEXT})"
    if reduced_matmul is not None:
        hint = (
            f"on {reduced_matmul}, float32 matmuls and convolutions run below float32 unless "
            "JAX's matmul precision is 'highest' (its default uses TensorFloat-32 on NVIDIA "
            "GPUs, bfloat16 passes on TPUs), NumPy's are float32: if the program multiplies "
            "matrices, run with JAX_DEFAULT_MATMUL_PRECISION=highest to compare like with "
            "like. Otherwise: " + hint
        )
    return Diagnostic(
        code=OUTPUT_MISMATCH,
        severity=Severity.ERROR,
        message=f"{who} differs from {reference}: {message}",
        hint=hint,
    )


def prints_during_call(tally: PrintTally, mode: Mode) -> Diagnostic | None:
    """`prints-during-call` when the workload printed while measured (`capture`), else
    None: a warning when its timed calls printed (the time to print is in the figure), an
    info when only its first call did (under jit, Python's print runs once, at trace
    time, and shows tracers rather than values)."""
    if not tally.lines:
        return None
    first = f": {tally.first_line!r}" if tally.first_line else ""
    size = fmt.bytes_(tally.nbytes)
    if tally.timed_lines:
        return Diagnostic(
            code=PRINTS,
            severity=Severity.WARNING,
            message=f"the {mode.value} side printed {tally.lines:,} line(s) ({size}) while "
            f"measured, {tally.timed_lines:,} of them in timed calls, whose time includes "
            f"printing; captured, not shown{first}",
            hint="remove print calls (and jax.debug.print) from the measured function; "
            "print results once, outside it.",
        )
    when = "at trace time" if mode is Mode.JIT else "in its first call"
    return Diagnostic(
        code=PRINTS,
        severity=Severity.INFO,
        message=f"the {mode.value} side printed {tally.lines:,} line(s) ({size}) {when}, "
        f"none in timed calls; captured, not shown{first}",
        hint="under jax.jit a Python print runs once, while tracing, and shows tracers; "
        "use jax.debug.print to see values, and keep printing out of benchmarks.",
    )


def large_jaxpr(eqn_count: int, compile_s: float | None, threshold: int) -> Diagnostic:
    took = f" and compiling it took {fmt.seconds(compile_s)}" if compile_s is not None else ""
    return Diagnostic(
        code=LARGE_JAXPR,
        severity=Severity.WARNING,
        message=f"the traced program has {eqn_count:,} jaxpr equations (over {threshold:,}){took}: "
        "a Python loop is probably unrolled into the trace",
        hint="write the loop with lax.fori_loop or lax.scan (lax.while_loop for a dynamic "
        "count), so the program holds one copy of the body.",
    )


def slow_compile(
    compile_s: float, eqn_count: int | None, threshold_s: float, platform: str | None = None
) -> Diagnostic:
    """`slow-compile`. A small program that compiles slowly does not need the loop advice:
    its time is XLA's backend (GPU matmul autotuning took seconds where the CPU took
    milliseconds: docs: validation, "H200 runs")."""
    eqns = f" for {eqn_count:,} jaxpr equations" if eqn_count is not None else ""
    if eqn_count is not None and eqn_count <= SMALL_PROGRAM_EQNS:
        hint = "a program this small spends its compile in XLA's backend, not in tracing"
        if platform == "gpu":
            hint += (
                " (on GPU typically autotuning matmul and convolution kernels; "
                "XLA_FLAGS=--xla_gpu_autotune_level=0 skips it, often at a cost in run time)"
            )
        hint += "; the persistent compilation cache keeps the program for repeated runs."
    else:
        hint = (
            "keep loops in lax.fori_loop / lax.scan, avoid many distinct static argument "
            "values, and enable the persistent compilation cache for repeated runs."
        )
    return Diagnostic(
        code=SLOW_COMPILE,
        severity=Severity.WARNING,
        message=f"tracing, lowering and compiling took {fmt.seconds(compile_s)}{eqns} "
        f"(over {fmt.seconds(threshold_s)})",
        hint=hint,
    )


def case_diagnostics(
    measurements: Sequence[Measurement],
    *,
    large_jaxpr_eqns: int = LARGE_JAXPR_EQNS,
    slow_compile_s: float = SLOW_COMPILE_S,
    eager_far_slower: float = EAGER_FAR_SLOWER,
) -> list[Measurement]:
    """Add the diagnostics that need a whole case (all modes) to its measurements.

    Pure: returns new measurements in the same order. Speed observations need the
    difference to be significant (jit slower: the ratio's 95 % CI lies above 1; eager far
    slower: ratio at least `eager_far_slower` and CI above `judgement.EAGER_SURELY_SLOWER`),
    so a noisy quick run does not report them by chance.
    """
    jit_m = next((m for m in measurements if m.mode is Mode.JIT), None)
    extra: dict[Mode, list[Diagnostic]] = {m.mode: [] for m in measurements}

    if jit_m is not None and jit_m.status is not Status.ERROR and jit_m.compile is not None:
        c = jit_m.compile
        total = c.total_compile_s
        if c.jaxpr_eqn_count is not None and c.jaxpr_eqn_count > large_jaxpr_eqns:
            extra[Mode.JIT].append(large_jaxpr(c.jaxpr_eqn_count, total, large_jaxpr_eqns))
        elif total is not None and total > slow_compile_s:
            extra[Mode.JIT].append(
                slow_compile(total, c.jaxpr_eqn_count, slow_compile_s, jit_m.case.platform)
            )

    figures = analyse_case(measurements)
    if figures is not None:
        for mode, found in speed_notes(figures, eager_far_slower=eager_far_slower):
            extra[mode].append(found)

    return [m.with_diagnostics(extra[m.mode]) for m in measurements]
