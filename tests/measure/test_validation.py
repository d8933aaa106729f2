"""Cross-mode output comparison."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jitbench.measure import validation
from jitbench.measure.validation import check_outputs, default_tolerance
from jitbench.results import Mode


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


def test_float64_rounding_of_1e_9_passes_and_float32_arithmetic_does_not():
    ref = np.linspace(1, 2, 1000)
    assert check_outputs(ref, ref * (1 + 1.4e-9)).ok
    # A float64 run whose JAX side computed in float32 differs by float32 rounding.
    as_float32 = ref.astype(np.float32).astype(np.float64)
    assert not check_outputs(ref, as_float32).ok


def test_norm_tolerance_passes_thin_rounding_but_not_a_wrong_region():
    ref = np.linspace(1, 2, 10_000, dtype=np.float32)
    noisy = ref.copy()
    noisy[::1000] *= 1 + 2e-4  # a few elements beyond rtol, the norm barely moves
    assert check_outputs(ref, noisy).ok
    assert not check_outputs(ref, noisy, norm_tol=0.0).ok
    wrong = ref.copy()
    wrong[:500] += 0.5
    result = check_outputs(ref, wrong)
    assert not result.ok and "relative norm error" in result.message


def test_per_dtype_tolerances_pick_the_compared_dtype():
    ref = np.ones(4, np.float32)
    got = ref * 1.01
    assert not check_outputs(ref, got).ok
    assert check_outputs(ref, got, rtol={"float32": 0.05}).ok
    assert not check_outputs(ref, got, rtol={"float64": 0.05}).ok  # not this dtype
    assert check_outputs(ref, got, norm_tol=0.02).ok


def test_complex128_reference_is_wider_than_complex64():
    ref = np.ones(3, np.complex128)
    assert check_outputs(ref, ref.astype(np.complex64)).reference_wider


def test_integer_mismatch_says_where():
    result = check_outputs(np.int64(130), np.int32(123))
    assert not result.ok and "1 of 1 values differ" in result.message and "123" in result.message


def test_mismatch_messages_show_plain_numbers_not_numpy_reprs():
    ref = np.array([1.0, 1.5, 2.0])
    got = np.array([1.0, 2.5, 2.0], np.float32)
    message = check_outputs(ref, got).message
    assert "flat index 1: 2.5 vs reference 1.5;" in message
    ints = check_outputs(np.arange(4), np.array([0, 1, 7, 3])).message
    assert ints.endswith("(first at flat index 2: 7 vs reference 2)")
    assert "np." not in message + ints


def test_differing_output_counts_say_whether_the_common_outputs_agree():
    a, b, c = (np.arange(4.0) + k for k in range(3))
    same = check_outputs((a, b, c), (a, b, c, a))
    assert not same.ok and same.structural
    assert same.message == "output has 4 leaves, the NumPy reference 3; the first 3 agree"
    differ = check_outputs((a, b, c), (a, b + 1, c, a))
    assert differ.message.startswith(
        "output has 4 leaves, the NumPy reference 3; of the first 3, leaf 1: 4 of 4 values differ"
    )


def test_a_float32_mismatch_the_size_of_rounding_says_so():
    from jitbench.measure import diagnose
    from jitbench.measure.validation import FLOAT32_ROUNDING

    assert diagnose.FLOAT32_ROUNDING_TEXT.startswith(f"{FLOAT32_ROUNDING:g} ")
    ref = np.linspace(1.0, 2.0, 1000).astype(np.float32)
    signs = np.where(np.arange(1000) % 3 == 0, -1.0, 1.0).astype(np.float32)
    off = ref * (1 + np.float32(2e-4) * signs)  # past float32's tolerances, both ways
    result = check_outputs(ref, off)
    assert not result.ok and result.rounding
    d = diagnose.mismatch(result.message, nonfinite=False, mode=Mode.JIT, rounding=True)
    assert "the size of float32 rounding" in d.message and "--x64" in d.hint
    assert "trace time" not in d.hint
    wrong = check_outputs(ref, ref * np.float32(1.5))
    assert not wrong.ok and not wrong.rounding
    assert not check_outputs(ref.astype(np.float64), off.astype(np.float64) * 1.01).rounding


def test_a_small_shift_all_one_way_is_not_called_rounding():
    """A global frozen at trace time shifts every element alike: however small relative to
    the values, it is no rounding, and keeps the trace-time hint."""
    ref = (np.linspace(1.0, 2.0, 1000) + 5000.0).astype(np.float32)
    shifted = ref + np.float32(1.0)
    result = check_outputs(ref, shifted)
    assert not result.ok and not result.rounding


def test_outputs_longer_than_a_chunk_are_checked_to_their_last_value():
    n = 3 * validation._CHUNK + 5
    ref = np.linspace(1, 2, n, dtype=np.float32).reshape(-1, 1)
    assert check_outputs(ref, ref.copy()).ok
    for i in (validation._CHUNK, n - 1):  # the first value of the second chunk; the last
        off = ref.copy()
        off[i] = 3.0
        v = check_outputs(ref, off)
        assert not v.ok and f"worst at flat index {i}:" in v.message
        off[i] = np.nan
        assert check_outputs(ref, off).nonfinite
    # The tolerance scales with the largest finite value anywhere, the last chunk's too.
    big = ref.copy()
    big[-1] = 1e6
    shifted = big + np.float32(5.0)
    shifted[-1] = big[-1]
    assert check_outputs(big, shifted).ok and not check_outputs(ref, ref + np.float32(5.0)).ok
    assert check_outputs(np.full(n, np.inf), np.full(n, np.inf)).ok
