"""Turn what the runner saw into diagnostics: a stable code, a severity, a message, a hint.

Each detector is a small pure function of measurements and observations, so it can be
tested alone and extended without touching the runner.
"""

from __future__ import annotations

from jitbench.results import Diagnostic, Severity

TRACER_ERRORS = {
    "ConcretizationTypeError",
    "TracerBoolConversionError",
    "TracerIntegerConversionError",
    "TracerArrayConversionError",
    "NonConcreteBooleanIndexError",
}


def hint_for_exception(exc: BaseException) -> str:
    """A one-line fix for exceptions whose cause is a known JAX pitfall, else ''."""
    name = type(exc).__name__
    text = str(exc)
    if name in TRACER_ERRORS:
        return (
            "Python control flow or conversion depends on a traced value: mark the argument "
            "static (static_argnames), or use jnp.where, lax.cond or lax.while_loop."
        )
    if "Disallowed" in text and "transfer" in text:
        return (
            "the function copies data between host and device inside the timed call "
            "(np.asarray, float(), .item(), a NumPy constant); keep the work in jax.numpy."
        )
    if isinstance(exc, MemoryError) or "RESOURCE_EXHAUSTED" in text:
        return "the size does not fit in memory; choose a smaller --sizes preset."
    return ""


def code_for_exception(exc: BaseException) -> str | None:
    """The diagnostic code an exception maps to, if it is a known pitfall."""
    name = type(exc).__name__
    text = str(exc)
    if name in TRACER_ERRORS:
        return "traced-control-flow"
    if "Disallowed" in text and "transfer" in text:
        return "implicit-transfer"
    return None


def for_exception(exc: BaseException) -> list[Diagnostic]:
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


def numpy_wider_dtype() -> Diagnostic:
    return Diagnostic(
        code="numpy-float64",
        severity=Severity.WARNING,
        message="the NumPy side returns float64 while JAX returns float32: an unfair comparison",
        hint="cast the NumPy result to the input dtype, or run both sides in float64 with --x64.",
    )


def recompiled_during_timing(count: int) -> Diagnostic:
    return Diagnostic(
        code="recompiled-during-timing",
        severity=Severity.WARNING,
        message=f"{count} compile(s) happened during timing; the timed calls include compiling",
        hint="keep shapes and dtypes stable, and create jax.jit(f) once outside the loop "
        "(not a new partial or lambda per call).",
    )


def noisy(rel_halfwidth: float, target: float) -> Diagnostic:
    return Diagnostic(
        code="noisy",
        severity=Severity.INFO,
        message=f"the median's 95 % CI is ±{rel_halfwidth:.1%}, wider than the ±{target:.1%} "
        "target, when the budget ran out",
        hint="raise --budget, close other programs, or pin the process to idle cores.",
    )


def mismatch(message: str, *, nonfinite: bool) -> Diagnostic:
    if nonfinite:
        return Diagnostic(
            code="nonfinite-output",
            severity=Severity.ERROR,
            message=message,
            hint="check for overflow or log/sqrt of invalid values at this dtype; try --x64.",
        )
    return Diagnostic(
        code="output-mismatch",
        severity=Severity.ERROR,
        message=message,
        hint="an impure function (global state, side effects, randomness) or a real bug; "
        "widen the workload's rtol/atol only if the difference is rounding.",
    )
