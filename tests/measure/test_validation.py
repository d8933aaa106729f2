"""Cross-mode output comparison."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jitbench.measure.validation import check_outputs, default_tolerance


def test_equal_pytrees_pass():
    ref = {"a": np.ones(3, np.float32), "b": (np.zeros(2, np.float32),)}
    got = {"a": jnp.ones(3), "b": (jnp.zeros(2),)}
    assert check_outputs(ref, got).ok


def test_rounding_level_difference_passes_but_real_error_fails():
    ref = np.linspace(1, 2, 100, dtype=np.float32)
    assert check_outputs(ref, ref * (1 + 1e-6)).ok
    bad = ref.copy()
    bad[17] += 0.01
    result = check_outputs(ref, bad)
    assert not result.ok and "1 of 100 values differ" in result.message
    assert "flat index 17" in result.message


def test_atol_scales_with_reference_magnitude():
    # Cancellation: an entry near 0 in an output of scale 1e3 differs by 1e-3.
    ref = np.array([1000.0, 1e-6], np.float32)
    got = np.array([1000.0, 1e-3], np.float32)
    assert check_outputs(ref, got).ok


def test_nan_where_reference_is_finite_fails_as_nonfinite():
    ref = np.array([1.0, 2.0], np.float32)
    got = np.array([1.0, np.nan], np.float32)
    result = check_outputs(ref, got)
    assert not result.ok and result.nonfinite


def test_matching_nans_pass():
    ref = np.array([np.nan, 1.0], np.float32)
    assert check_outputs(ref, ref.copy()).ok


def test_structure_and_shape_mismatch():
    assert "leaves" in check_outputs((np.ones(2), np.ones(2)), (np.ones(2),)).message
    assert "shape" in check_outputs(np.ones(2), np.ones(3)).message


def test_float64_reference_is_flagged_and_judged_at_float32():
    ref = np.linspace(0, 1, 10)  # float64
    got = ref.astype(np.float32)
    result = check_outputs(ref, got)
    assert result.ok and result.reference_wider


def test_integer_outputs_are_exact_and_overrides_apply():
    assert check_outputs(np.arange(3), np.arange(3)).ok
    assert not check_outputs(np.arange(3), np.arange(3) + 1).ok
    assert default_tolerance(np.dtype(np.int32)) == (0.0, 0.0)
    assert check_outputs(np.ones(2, np.float32), np.ones(2, np.float32) * 1.1, rtol=0.2).ok
