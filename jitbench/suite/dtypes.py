"""The dtypes of a case's inputs: the run's float dtype applied where it makes sense, and
what was made, for the record (`Case.input_dtypes`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from jitbench.errors import WorkloadError


def conform(value: Any, pinned: np.dtype[Any] | None, target: np.dtype[Any]) -> Any:
    """`value` with its NumPy leaves converted: to `pinned` when given; else, when `target`
    is float32, the float64 ones (arrays and NumPy scalars; complex128 to complex64).

    Only down: NumPy makes float64 unless told otherwise, so a float64 input in a float32
    case is the usual oversight (`np.fromfunction`, `np.float64(1.5)`, an initialiser's
    default), while a float32 input in a float64 case was asked for (a float32-only
    kernel) and stays, as integer, boolean and half-precision inputs do."""
    if pinned is None and (target.kind != "f" or target.itemsize >= 8):
        return value
    import jax

    def leaf(x: Any) -> Any:
        if not isinstance(x, (np.ndarray, np.generic)):
            return x  # Python numbers are weakly typed on both sides
        if pinned is not None:
            return x.astype(pinned)
        if x.dtype.kind not in "fc":
            return x
        to = target if x.dtype.kind == "f" else np.result_type(target, np.complex64)
        return x.astype(to) if x.dtype.itemsize > to.itemsize else x

    return jax.tree_util.tree_map(leaf, value)


def dtype_text(value: Any) -> str:
    """The dtype(s) of the NumPy leaves of `value` ("float32", "int64,float32"), or ''."""
    import jax

    seen: list[str] = []
    for leaf in jax.tree_util.tree_leaves(value):
        name = getattr(leaf, "dtype", None)
        if isinstance(leaf, (np.ndarray, np.generic)) and str(name) not in seen:
            seen.append(str(name))
    return ",".join(seen)


def dtype_name(value: Any, wl_name: str, what: str) -> str:
    """The canonical name of a dtype a workload declares ("float32").

    Raises:
        WorkloadError: `value` is not a NumPy dtype.
    """
    try:
        return np.dtype(value).name
    except TypeError:
        raise WorkloadError(
            f"workload {wl_name!r}: {what}={value!r} is not a NumPy dtype; "
            "use a name such as 'float32' or 'int32'."
        ) from None
