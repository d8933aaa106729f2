"""Cross-mode output comparison: every leaf of a JAX output against the NumPy reference.

A leaf passes when it is elementwise close (`rtol`, `atol`, as `numpy.isclose`) or, failing
that, when its relative norm error ‖a − b‖₂ / ‖b‖₂ is within `norm_tol`: rounding spread
thinly over an iterative kernel passes, a wrong element or a wrong region does not.
Default tolerances depend on the dtype compared (the less precise of the two sides). The
default absolute tolerance scales with the reference's largest finite magnitude, so sums
and products with cancellation are judged relative to the size of the result; per-workload
overrides (a number, or one per dtype name) are used as given (`atol` absolute, like
`numpy.allclose`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from jitbench.suite.workload import Tolerance, is_key

# (rtol, atol relative to the reference's max |value|, relative norm error) per floating
# precision in bytes. float64's rtol stays below float32's epsilon (1.2e-7), so a float64
# run whose JAX side computes in float32 fails, while rounding of ~1e-9 passes.
_DEFAULT_TOLERANCES = {2: (1e-2, 1e-3, 1e-3), 4: (1e-4, 1e-5, 1e-5), 8: (1e-8, 1e-10, 1e-9)}


@dataclass(frozen=True)
class Validation:
    """Outcome of comparing one output with the reference."""

    ok: bool
    message: str = ""
    nonfinite: bool = False  # NaN/Inf where the reference is finite
    structural: bool = False  # other leaves or shapes: the sides return different things
    reference_wider: bool = False  # the reference is more precise (float64 vs float32, …)
    # Compared in float32 (or narrower) and off by what float32 rounding accumulates over a
    # kernel (`FLOAT32_ROUNDING`): --x64 would compare it at float64.
    rounding: bool = False
    # The reference is all zeros (an exact cancellation), so the default atol, relative
    # to its magnitude, is all but 0: rounding on the other side fails it.
    zero_reference: bool = False


#: A relative norm error up to this, in a comparison made at float32 or below, whose
#: differences go both ways (`_both_ways`), is the size of float32 rounding accumulated over
#: many operations (its epsilon is 1.2e-7; iterative kernels of a few thousand steps reach
#: 1e-4): a wrong result is off by far more, or all one way.
FLOAT32_ROUNDING = 1e-3


def _component_bytes(dtype: np.dtype[Any]) -> int:
    """A complex number's precision is that of its real part."""
    return dtype.itemsize // 2 if dtype.kind == "c" else dtype.itemsize


def _defaults(dtype: np.dtype[Any]) -> tuple[float, float, float]:
    dtype = np.dtype(dtype)
    if not np.issubdtype(dtype, np.inexact):
        return 0.0, 0.0, 0.0
    return _DEFAULT_TOLERANCES.get(_component_bytes(dtype), _DEFAULT_TOLERANCES[4])


def default_tolerance(dtype: np.dtype[Any]) -> tuple[float, float]:
    """(rtol, relative atol) for a dtype; exact (0, 0) for integers and booleans."""
    rtol, atol_rel, _ = _defaults(dtype)
    return rtol, atol_rel


def default_norm_tolerance(dtype: np.dtype[Any]) -> float:
    """The relative norm error a dtype's rounding may reach; 0 for integers and booleans."""
    return _defaults(dtype)[2]


def _pick(tolerance: Tolerance, dtype: np.dtype[Any]) -> float | None:
    """A workload's tolerance for `dtype`: the number, the dtype's entry, or None."""
    if tolerance is None or isinstance(tolerance, (int, float)):
        return tolerance
    return tolerance.get(np.dtype(dtype).name)


def relative_norm_error(actual: np.ndarray, reference: np.ndarray) -> float:
    """‖actual − reference‖₂ / ‖reference‖₂ over all elements (0 when both are zero)."""
    diff = float(np.linalg.norm((actual - reference).ravel()))
    scale = float(np.linalg.norm(reference.ravel()))
    if scale == 0.0:
        return 0.0 if diff == 0.0 else math.inf
    return diff / scale


def _leaf_dtype(x: np.ndarray) -> np.dtype[Any]:
    # bfloat16 and other ml_dtypes are not np.inexact; compare them as float32.
    if x.dtype.kind == "V" or x.dtype.name == "bfloat16":
        return np.dtype(np.float32)
    return x.dtype


def check_outputs(
    reference: Any,
    actual: Any,
    *,
    rtol: Tolerance = None,
    atol: Tolerance = None,
    norm_tol: Tolerance = None,
) -> Validation:
    """Compare two output pytrees leaf by leaf.

    Structure must agree (same number of leaves, same shapes). NaN positions must agree;
    a NaN or Inf where the reference is finite is a failure with `nonfinite=True`. Each
    tolerance is a number, a mapping of dtype names to numbers, or None (the default of
    the dtype compared).
    """
    ref_leaves = jax.tree_util.tree_leaves(reference)
    act_leaves = jax.tree_util.tree_leaves(actual)
    if len(ref_leaves) != len(act_leaves):
        common = min(len(ref_leaves), len(act_leaves))
        shared = check_outputs(
            ref_leaves[:common], act_leaves[:common], rtol=rtol, atol=atol, norm_tol=norm_tol
        )
        if not common:
            verdict = ""
        elif shared.ok:
            verdict = f"; the first {common} agree" if common > 1 else "; the first agrees"
        else:
            verdict = f"; of the first {common}, {shared.message}"
        return Validation(
            False,
            f"output has {len(act_leaves)} leaves, the NumPy reference {len(ref_leaves)}" + verdict,
            structural=True,
        )
    wider = False
    for i, (r_raw, a_raw) in enumerate(zip(ref_leaves, act_leaves, strict=True)):
        r = _as_numpy(r_raw)
        a = _as_numpy(a_raw)
        where = f"leaf {i}" if len(ref_leaves) > 1 else "output"
        if r.shape != a.shape:
            return Validation(
                False, f"{where}: shape {a.shape} differs from reference {r.shape}", structural=True
            )
        r_dtype, a_dtype = _leaf_dtype(r), _leaf_dtype(a)
        if (
            np.issubdtype(r_dtype, np.inexact)
            and np.issubdtype(a_dtype, np.inexact)
            and _component_bytes(r_dtype) > _component_bytes(a_dtype)
        ):
            wider = True
        # Judge at the precision of the less precise side.
        narrow = a_dtype if a_dtype.itemsize <= r_dtype.itemsize else r_dtype
        d_rtol, d_atol_rel, d_norm = _defaults(narrow)
        if np.issubdtype(narrow, np.inexact) or np.issubdtype(r_dtype, np.inexact):
            scale = _largest_finite_magnitude(r)
            given_rtol, given_atol = _pick(rtol, narrow), _pick(atol, narrow)
            given_norm = _pick(norm_tol, narrow)
            use_rtol = d_rtol if given_rtol is None else given_rtol
            use_atol = d_atol_rel * max(scale, 1e-30) if given_atol is None else given_atol
            use_norm = d_norm if given_norm is None else given_norm
            if _close_everywhere(r, a, rtol=use_rtol, atol=use_atol):
                continue
            # Something differs: the whole arrays, to find and word it.
            rf, af = _widened(r), _widened(a)
            ref_finite = np.isfinite(rf)
            bad_nonfinite = ref_finite & ~np.isfinite(af)
            if bad_nonfinite.any():
                count = int(bad_nonfinite.sum())
                return Validation(
                    False,
                    f"{where}: {count} NaN/Inf value(s) where the NumPy reference is finite",
                    nonfinite=True,
                    reference_wider=wider,
                )
            close = np.isclose(af, rf, rtol=use_rtol, atol=use_atol, equal_nan=True)
            if not close.all():
                bad = ~close
                # Rounding spread over many elements passes on the norm; a non-finite
                # reference value that differs never does.
                norm_err = (
                    relative_norm_error(af[ref_finite], rf[ref_finite])
                    if not (bad & ~ref_finite).any()
                    else math.inf
                )
                if norm_err <= use_norm:
                    continue
                err = np.abs(af - rf)
                err = np.where(np.isfinite(err), err, np.inf)
                worst = int(np.argmax(np.where(bad, err, -1)))
                rounding = (
                    _component_bytes(narrow) <= 4
                    and norm_err <= FLOAT32_ROUNDING
                    and _both_ways(af[bad] - rf[bad])
                )
                zero = given_atol is None and scale == 0
                return Validation(
                    False,
                    f"{where}: {int(bad.sum())} of {bad.size} values differ "
                    f"(worst at flat index {worst}: {_plain(a, worst)} vs reference "
                    f"{_plain(r, worst)}; rtol={use_rtol:g}, atol={use_atol:g}) and the "
                    f"relative norm error {norm_err:.3g} exceeds norm_tol={use_norm:g}"
                    + (
                        "; the reference is all zeros, so the default atol (relative to its "
                        "magnitude) is all but 0"
                        if zero
                        else ""
                    ),
                    reference_wider=wider,
                    rounding=rounding,
                    zero_reference=zero,
                )
        elif not np.array_equal(a, r):
            bad = a != r
            first = int(np.argmax(bad)) if bad.ndim else 0
            return Validation(
                False,
                f"{where}: {int(np.sum(bad))} of {max(bad.size, 1)} values differ (first at "
                f"flat index {first}: {_plain(a, first)} vs reference {_plain(r, first)})",
            )
    return Validation(True, reference_wider=wider)


#: Elements compared at a time where all is well (`_close_everywhere`): 512 KiB of
#: float64 a side, so the widened copies and `isclose`'s temporaries stay in the CPU's
#: caches. On whole multi-megabyte outputs the same checks took about six times as long,
#: a second of a default run.
_CHUNK = 1 << 16


def _as_numpy(leaf: Any) -> np.ndarray:
    """A leaf as a NumPy array; a typed PRNG key as its key data (it has no NumPy form); a
    Python float or complex (`float(x.sum())`) at the width JAX computes in (float32
    without x64): it holds what a float32 computation gave, not float64's precision."""
    if isinstance(leaf, (float, complex)) and not jax.config.read("jax_enable_x64"):
        return np.asarray(leaf, np.complex64 if isinstance(leaf, complex) else np.float32)
    return np.asarray(jax.random.key_data(leaf) if is_key(leaf) else leaf)


def _widened(x: np.ndarray) -> np.ndarray:
    """`x` in float64 (complex128 if complex): the precision every comparison is made at."""
    return x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)


def _chunks(x: np.ndarray) -> Iterator[np.ndarray]:
    flat = x.reshape(-1)
    for start in range(0, flat.size, _CHUNK):
        yield _widened(flat[start : start + _CHUNK])


def _largest_finite_magnitude(x: np.ndarray) -> float:
    """The largest |value| among `x`'s finite values; 0 where it has none."""
    return max(
        (float(np.max(np.where(np.isfinite(c), np.abs(c), 0.0))) for c in _chunks(x)),
        default=0.0,
    )


def _close_everywhere(r: np.ndarray, a: np.ndarray, *, rtol: float, atol: float) -> bool:
    """Whether every value of `a` is close to `r`'s (`numpy.isclose`, NaN equal to NaN) and
    finite wherever `r`'s is: the same test as on the whole arrays, a chunk at a time."""
    for rc, ac in zip(_chunks(r), _chunks(a), strict=True):
        if (np.isfinite(rc) & ~np.isfinite(ac)).any():
            return False
        if not np.isclose(ac, rc, rtol=rtol, atol=atol, equal_nan=True).all():
            return False
    return True


def _both_ways(diff: np.ndarray) -> bool:
    """Whether differences go both ways, as rounding's do: not one shift or drift in one
    direction (a global frozen at trace time adds the same to every element). Fewer than
    `ROUNDING_MIN_DIFFS` tell nothing, and pass."""
    real = np.real(diff).ravel()
    if real.size < ROUNDING_MIN_DIFFS:
        return True
    up = float(np.mean(real > 0))
    return ROUNDING_SIGN_SHARE <= up <= 1 - ROUNDING_SIGN_SHARE


#: Differing elements needed to judge their signs, and the least share either sign must
#: have for the differences to read as rounding.
ROUNDING_MIN_DIFFS = 20
ROUNDING_SIGN_SHARE = 0.1


def _plain(values: np.ndarray, index: int) -> str:
    """One element as a plain number in its own dtype ('2.96', not 'np.float64(2.96)',
    the repr of NumPy 2's scalars): the shortest text that reads back as that value."""
    return str(np.ravel(values)[index])


def no_elements(tree: Any) -> bool:
    """True when the output pytree holds arrays but not one element: checking it against
    the other modes compares nothing."""
    leaves = jax.tree_util.tree_leaves(tree)
    return bool(leaves) and all(np.size(_as_numpy(leaf)) == 0 for leaf in leaves)


def no_finite_values(tree: Any) -> bool:
    """True when the output pytree holds values and none is finite (all NaN or ±Inf):
    comparing two such outputs checks nothing. Integer and boolean leaves are finite."""
    size = 0
    for leaf in jax.tree_util.tree_leaves(tree):
        x = np.asarray(leaf)
        size += x.size
        if x.size == 0:
            continue
        if not np.issubdtype(_leaf_dtype(x), np.inexact):
            return False
        if np.isfinite(x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)).any():
            return False
    return size > 0
