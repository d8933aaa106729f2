"""Cross-mode output comparison: every leaf of a JAX output against the NumPy reference.

Default tolerances depend on the dtype compared (the less precise of the two sides). The
default absolute tolerance scales with the reference's largest finite magnitude, so sums
and products with cancellation are judged relative to the size of the result; per-workload
`rtol`/`atol` overrides are used as given (absolute, like `numpy.allclose`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

# (rtol, atol relative to the reference's max |value|) per floating precision in bytes.
_DEFAULT_TOLERANCES = {2: (1e-2, 1e-3), 4: (1e-4, 1e-5), 8: (1e-9, 1e-11)}


@dataclass(frozen=True)
class Validation:
    """Outcome of comparing one output with the reference."""

    ok: bool
    message: str = ""
    nonfinite: bool = False  # NaN/Inf where the reference is finite
    reference_wider: bool = False  # the reference has a wider float dtype (f64 vs f32)


def default_tolerance(dtype: np.dtype[Any]) -> tuple[float, float]:
    """(rtol, relative atol) for a dtype; exact (0, 0) for integers and booleans."""
    dtype = np.dtype(dtype)
    if not np.issubdtype(dtype, np.inexact):
        return 0.0, 0.0
    # A complex number's precision is that of its real part.
    component_bytes = dtype.itemsize // 2 if dtype.kind == "c" else dtype.itemsize
    return _DEFAULT_TOLERANCES.get(component_bytes, _DEFAULT_TOLERANCES[4])


def _leaf_dtype(x: np.ndarray) -> np.dtype[Any]:
    # bfloat16 and other ml_dtypes are not np.inexact; compare them as float32.
    if x.dtype.kind == "V" or x.dtype.name == "bfloat16":
        return np.dtype(np.float32)
    return x.dtype


def check_outputs(
    reference: Any, actual: Any, *, rtol: float | None = None, atol: float | None = None
) -> Validation:
    """Compare two output pytrees leaf by leaf.

    Structure must agree (same number of leaves, same shapes). NaN positions must agree;
    a NaN or Inf where the reference is finite is a failure with `nonfinite=True`.
    """
    ref_leaves = jax.tree_util.tree_leaves(reference)
    act_leaves = jax.tree_util.tree_leaves(actual)
    if len(ref_leaves) != len(act_leaves):
        return Validation(
            False, f"output has {len(act_leaves)} leaves, the NumPy reference {len(ref_leaves)}"
        )
    wider = False
    for i, (r_raw, a_raw) in enumerate(zip(ref_leaves, act_leaves, strict=True)):
        r = np.asarray(r_raw)
        a = np.asarray(a_raw)
        where = f"leaf {i}" if len(ref_leaves) > 1 else "output"
        if r.shape != a.shape:
            return Validation(False, f"{where}: shape {a.shape} differs from reference {r.shape}")
        r_dtype, a_dtype = _leaf_dtype(r), _leaf_dtype(a)
        if (
            np.issubdtype(r_dtype, np.floating)
            and np.issubdtype(a_dtype, np.floating)
            and r_dtype.itemsize > a_dtype.itemsize
        ):
            wider = True
        # Judge at the precision of the less precise side.
        narrow = a_dtype if a_dtype.itemsize <= r_dtype.itemsize else r_dtype
        d_rtol, d_atol_rel = default_tolerance(narrow)
        if np.issubdtype(narrow, np.inexact) or np.issubdtype(r_dtype, np.inexact):
            rf = r.astype(np.complex128 if np.iscomplexobj(r) else np.float64)
            af = a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)
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
            scale = float(np.max(np.abs(rf[ref_finite]))) if ref_finite.any() else 0.0
            use_rtol = d_rtol if rtol is None else rtol
            use_atol = d_atol_rel * max(scale, 1e-30) if atol is None else atol
            close = np.isclose(af, rf, rtol=use_rtol, atol=use_atol, equal_nan=True)
            if not close.all():
                bad = ~close
                err = np.abs(af - rf)
                err = np.where(np.isfinite(err), err, np.inf)
                worst = int(np.argmax(np.where(bad, err, -1)))
                return Validation(
                    False,
                    f"{where}: {int(bad.sum())} of {bad.size} values differ "
                    f"(worst at flat index {worst}: {af.flat[worst]!r} vs reference "
                    f"{rf.flat[worst]!r}; rtol={use_rtol:g}, atol={use_atol:g})",
                    reference_wider=wider,
                )
        elif not np.array_equal(a, r):
            return Validation(False, f"{where}: values differ from the NumPy reference")
    return Validation(True, reference_wider=wider)


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
