"""Diagnostics (pure detectors on measurements) and the compile analysis they read.

The detectors are tested on hand-built measurements with exact figures; the compile
analysis on real JAX compiles (tiny sizes), except the cost-analysis shapes the installed
JAX no longer produces (a list, None, -1), which use a stand-in `compiled` object.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from jitbench.measure import compilation as jcompile
from jitbench.measure import diagnose
from jitbench.render.run_table import case_notes, problems, summary_table
from jitbench.results import (
    Case,
    CompileInfo,
    Measurement,
    Mode,
    Run,
    Severity,
    Status,
    dump_run,
    run_from_dict,
)
from jitbench.results.analysis import analyse
from jitbench.suite.discovery import discover

CASE = Case(workload="w", size="S", device="cpu:0", dtype="float32")


def m(
    mode: Mode,
    samples: list[float],
    *,
    status: Status = Status.OK,
    compile: CompileInfo | None = None,
) -> Measurement:
    return Measurement(
        case=CASE,
        mode=mode,
        status=status,
        samples_s=tuple(samples),
        calls_per_sample=1,
        compile=compile,
    )


def codes(ms: list[Measurement], mode: Mode) -> list[str]:
    return [d.code for x in ms if x.mode is mode for d in x.diagnostics]


def jit_compile(eqns: int, compile_s: float = 0.01, flops: float | None = None) -> CompileInfo:
    return CompileInfo(
        first_call_s=compile_s,
        compile_count=1,
        trace_s=compile_s / 2,
        lower_s=0.0,
        compile_s=compile_s / 2,
        jaxpr_eqn_count=eqns,
        flops=flops,
        bytes_accessed=None if flops is None else 2 * flops,
    )


# --- case_diagnostics ------------------------------------------------------------------

STEADY = [1.00e-3, 1.01e-3, 0.99e-3, 1.02e-3, 0.98e-3, 1.00e-3, 1.01e-3]


def test_large_jaxpr_reports_equations_and_compile_time() -> None:
    ms = diagnose.case_diagnostics(
        [
            m(Mode.NUMPY, STEADY),
            m(Mode.JIT, STEADY, compile=jit_compile(1200, compile_s=0.8)),
        ]
    )
    (d,) = ms[1].diagnostics
    assert d.code == "large-jaxpr" and d.severity is Severity.WARNING
    assert "1,200 jaxpr equations" in d.message and "800 ms" in d.message
    assert "fori_loop" in d.hint and "scan" in d.hint
    assert ms[0].diagnostics == ()


def test_small_jaxpr_and_fast_compile_give_nothing() -> None:
    ms = diagnose.case_diagnostics(
        [
            m(Mode.NUMPY, STEADY),
            m(Mode.JIT, STEADY, compile=jit_compile(1000, compile_s=4.9)),
        ]
    )
    assert [x.diagnostics for x in ms] == [(), ()]


def test_slow_compile_without_a_large_jaxpr() -> None:
    ms = diagnose.case_diagnostics([m(Mode.JIT, STEADY, compile=jit_compile(40, compile_s=6.0))])
    assert codes(ms, Mode.JIT) == ["slow-compile"]
    assert "6 s" in ms[0].diagnostics[0].message
    # 40 equations: no unrolled loop to blame; on a GPU the hint names autotuning.
    assert "XLA's backend" in ms[0].diagnostics[0].hint
    assert "autotun" not in ms[0].diagnostics[0].hint  # CASE is a CPU case
    gpu = diagnose.slow_compile(14.5, 1, 5.0, "gpu")
    assert "--xla_gpu_autotune_level=0" in gpu.hint and "lax.scan" not in gpu.hint
    assert "lax.scan" in diagnose.slow_compile(9.0, 900, 5.0, "gpu").hint


def test_compile_figures_of_a_failed_jit_are_not_judged() -> None:
    ms = diagnose.case_diagnostics(
        [
            m(Mode.JIT, [], status=Status.ERROR, compile=jit_compile(5000, compile_s=9.0)),
        ]
    )
    assert ms[0].diagnostics == ()


def test_jit_slower_than_numpy_needs_a_significant_difference() -> None:
    numpy_fast = [2e-6 * (1 + 0.01 * i) for i in range(7)]
    jit_slow = [10e-6 * (1 + 0.01 * i) for i in range(7)]
    ms = diagnose.case_diagnostics([m(Mode.NUMPY, numpy_fast), m(Mode.JIT, jit_slow)])
    (d,) = ms[1].diagnostics
    assert d.code == "jit-slower-than-numpy" and d.severity is Severity.INFO
    assert "dispatch" in d.message and "5×" in d.message

    # Overlapping samples: the slowdown's CI includes 1, so nothing is claimed.
    noisy_jit = [1e-6, 9e-6, 1.5e-6, 8e-6, 2e-6, 3e-6, 2.5e-6]
    ms = diagnose.case_diagnostics([m(Mode.NUMPY, numpy_fast), m(Mode.JIT, noisy_jit)])
    assert ms[1].diagnostics == ()


def test_jit_slower_on_a_long_call_is_not_called_dispatch() -> None:
    ms = diagnose.case_diagnostics(
        [
            m(Mode.NUMPY, STEADY),
            m(Mode.JIT, [x * 3 for x in STEADY]),
        ]
    )
    (d,) = ms[1].diagnostics
    assert "dispatch" not in d.message and "slower than NumPy's kernels" in d.message


def test_eager_far_slower_than_jit() -> None:
    ms = diagnose.case_diagnostics(
        [
            m(Mode.EAGER, [x * 50 for x in STEADY]),
            m(Mode.JIT, STEADY),
        ]
    )
    assert codes(ms, Mode.EAGER) == ["eager-dispatch-bound"]
    assert "50×" in ms[0].diagnostics[0].message and "jax.jit" in ms[0].diagnostics[0].hint
    # One preempted jit sample widens the CI but the median ratio still says "far".
    ms = diagnose.case_diagnostics(
        [
            m(Mode.EAGER, [0.1, 0.11, 0.12]),
            m(Mode.JIT, [1.3e-3, 1.4e-3, 30e-3, 1.3e-3, 1.5e-3]),
        ]
    )
    assert codes(ms, Mode.EAGER) == ["eager-dispatch-bound"]
    # Overlapping samples are never "far", whatever the medians say.
    ms = diagnose.case_diagnostics(
        [
            m(Mode.EAGER, [1e-3, 20e-3, 30e-3]),
            m(Mode.JIT, [1e-3, 1.5e-3, 2e-3]),
        ]
    )
    assert ms[0].diagnostics == ()
    # 5× is ordinary, not "far".
    ms = diagnose.case_diagnostics([m(Mode.EAGER, [x * 5 for x in STEADY]), m(Mode.JIT, STEADY)])
    assert ms[0].diagnostics == ()


def test_eager_slowed_by_recompiling_is_not_called_dispatch_bound() -> None:
    eager = m(Mode.EAGER, [x * 50 for x in STEADY]).with_diagnostics(
        [diagnose.recompiled_during_timing(7)]
    )
    ms = diagnose.case_diagnostics([eager, m(Mode.JIT, STEADY)])
    assert codes(ms, Mode.EAGER) == ["recompiled-during-timing"]


def test_case_diagnostics_is_pure_and_idempotent() -> None:
    inputs = [
        m(Mode.EAGER, [x * 50 for x in STEADY]),
        m(Mode.JIT, STEADY, compile=jit_compile(2000)),
    ]
    once = diagnose.case_diagnostics(inputs)
    twice = diagnose.case_diagnostics(once)
    assert [x.diagnostics for x in inputs] == [(), ()]
    assert [x.mode for x in once] == [Mode.EAGER, Mode.JIT]
    assert once == twice


def test_every_code_is_listed() -> None:
    made = {
        diagnose.numpy_wider_dtype().code,
        diagnose.recompiled_during_timing(2).code,
        diagnose.mismatch("x", nonfinite=True).code,
        diagnose.mismatch("x", nonfinite=False).code,
        diagnose.large_jaxpr(2000, 1.0, 1000).code,
        diagnose.slow_compile(9.0, 10, 5.0).code,
    }
    assert made <= diagnose.PITFALL_CODES
    assert diagnose.noisy(0.1, 0.01).code == diagnose.NOISY
    assert {diagnose.JIT_SLOWER, diagnose.EAGER_DISPATCH, diagnose.NOISY} <= diagnose.CODES


def test_mismatch_hint_depends_on_the_mode() -> None:
    jit = diagnose.mismatch("output: 3 of 8 values differ", nonfinite=False, mode=Mode.JIT)
    eager = diagnose.mismatch("output: 3 of 8 values differ", nonfinite=False, mode=Mode.EAGER)
    assert jit.message.startswith("jit output differs from the NumPy reference")
    assert "trace time" in jit.hint and "trace time" not in eager.hint


def test_a_mismatch_on_an_accelerator_at_jaxs_matmul_precision_names_it_first() -> None:
    """On a GPU, JAX's default float32 matmul is TensorFloat-32: gemm, mlp and friends
    mismatch NumPy by design there (seen on an H200), and the hint must say why."""
    from types import SimpleNamespace

    from jitbench.measure.opening import _reduced_matmul

    gpu = SimpleNamespace(platform="gpu")
    assert _reduced_matmul(gpu) == "gpu"  # type: ignore[arg-type]
    assert _reduced_matmul(jax.devices("cpu")[0]) is None
    assert _reduced_matmul(None) is None
    with jax.default_matmul_precision("highest"):
        assert _reduced_matmul(gpu) is None  # type: ignore[arg-type]
    # Only float32 (complex64) outputs: the setting does not touch float64 or integers.
    assert _reduced_matmul(gpu, np.zeros(2, np.float32)) == "gpu"  # type: ignore[arg-type]
    wide = (np.zeros(2, np.float64), np.zeros(2, np.int32))
    assert _reduced_matmul(gpu, wide) is None  # type: ignore[arg-type]
    d = diagnose.mismatch("x: 9 of 9 values differ", nonfinite=False, mode=Mode.JIT,
                          reduced_matmul="gpu")  # fmt: skip
    assert d.hint.startswith("on gpu, float32 matmuls and convolutions run below float32")
    assert "JAX_DEFAULT_MATMUL_PRECISION=highest" in d.hint and "trace time" in d.hint


# --- exceptions from real JAX tracing ---------------------------------------------------


def _trace_error(fn) -> BaseException:  # type: ignore[no-untyped-def]
    with pytest.raises(Exception) as info:
        jax.jit(fn)(jnp.asarray(3))
    return info.value


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x if x > 0 else -x,  # TracerBoolConversionError
        lambda x: jnp.zeros(3)[: int(x)],  # TracerIntegerConversionError
        lambda x: jnp.zeros(x),  # TypeError: shapes must be concrete
        lambda x: jnp.arange(10)[:x],  # IndexError: slice entries must be static
        lambda x: jnp.arange(10)[jnp.arange(10) > x],  # NonConcreteBooleanIndexError
    ],
)
def test_traced_value_errors_map_to_traced_control_flow(fn) -> None:  # type: ignore[no-untyped-def]
    exc = _trace_error(fn)
    (d,) = diagnose.for_exception(exc)
    assert d.code == "traced-control-flow" and d.severity is Severity.ERROR
    assert "static_argnames" in d.hint and "lax.cond" in d.hint


def test_unrelated_errors_are_not_pitfalls() -> None:
    assert diagnose.for_exception(ValueError("bad shape")) == []
    assert diagnose.for_exception(TypeError("unsupported operand")) == []


def test_transfer_guard_error_maps_to_implicit_transfer() -> None:
    x = np.ones(4, np.float32)
    with pytest.raises(Exception) as info, jax.transfer_guard("disallow"):
        jax.jit(lambda v: v + 1)(x)  # a NumPy argument needs a host-to-device copy
    (d,) = diagnose.for_exception(info.value)
    assert d.code == "implicit-transfer"


# --- compile analysis on real compiles ---------------------------------------------------


def _faq_fn():  # type: ignore[no-untyped-def]
    registry = discover([Path(__file__).resolve().parents[2] / "suites" / "linalg.py"])
    return registry.get("centred_product").jax_fn


@pytest.mark.parametrize("n", [64, 200])
def test_faq_function_flops_are_two_n_cubed(n: int) -> None:
    x = jnp.asarray(np.random.default_rng(0).standard_normal((n, n)), jnp.float32)
    aot = jcompile.cold_aot_breakdown(_faq_fn(), static_argnames=(), args=(x,), kwargs={})
    assert aot.flops is not None
    expected = 2 * n**3
    # 2n³ for the product, O(n²) for the mean and the subtraction.
    assert abs(aot.flops - expected) / expected < 0.03, (aot.flops, expected)
    assert 2 * n**3 <= aot.flops <= 2 * n**3 + 10 * n**2
    assert aot.bytes_accessed is not None and aot.bytes_accessed >= 2 * x.nbytes
    assert aot.compile_count == 1
    assert aot.memory is not None and aot.memory["argument_bytes"] == x.nbytes
    assert min(aot.trace_s, aot.lower_s, aot.compile_s) > 0


def _body(_, v):  # type: ignore[no-untyped-def]
    return jnp.sin(v) * 0.5 + v


def test_jaxpr_count_includes_loop_bodies() -> None:
    x = jnp.ones(8)
    looped = jcompile.cold_aot_breakdown(
        lambda v: lax.fori_loop(0, 10, _body, v), static_argnames=(), args=(x,), kwargs={}
    )
    body_eqns = len(jax.make_jaxpr(lambda v: _body(0, v))(x).eqns)
    assert body_eqns == 3
    assert looped.jaxpr_eqn_count is not None and looped.jaxpr_eqn_count > body_eqns
    unrolled = jcompile.cold_aot_breakdown(
        lambda v: [v := _body(0, v) for _ in range(10)][-1],
        static_argnames=(),
        args=(x,),
        kwargs={},
    )
    assert unrolled.jaxpr_eqn_count == 10 * body_eqns


def test_hlo_fingerprint_is_stable_and_tracks_the_program() -> None:
    x = jnp.ones(16)

    def fingerprint(fn) -> str | None:  # type: ignore[no-untyped-def]
        aot = jcompile.cold_aot_breakdown(
            fn, static_argnames=(), args=(x,), kwargs={}, keep_text=True
        )
        assert aot.hlo_text and "HloModule" in aot.hlo_text
        assert aot.jaxpr_text and "lambda" in aot.jaxpr_text
        return aot.hlo_fingerprint

    def twice(v):  # type: ignore[no-untyped-def]
        return v * 2.0

    def thrice(v):  # type: ignore[no-untyped-def]
        return v * 3.0

    assert fingerprint(twice) == fingerprint(twice)
    assert fingerprint(twice) != fingerprint(thrice)


def test_normalised_hlo_drops_source_locations() -> None:
    a = (
        'HloModule jit_f\n\nFileNames\n1 "/a/suite.py"\n\nStackFrames\n1 {file_location_id=1}\n\n'
        "ENTRY %main (x: f32[4]) -> f32[4] {\n  ROOT %m = f32[4] multiply(%x, %x), "
        'metadata={op_name="jit(f)/mul" source_file="/a/suite.py" source_line=12}\n}'
    )
    b = a.replace("/a/suite.py", "/b/moved.py").replace("source_line=12", "source_line=40")
    assert jcompile.hlo_fingerprint(a) == jcompile.hlo_fingerprint(b)
    assert "metadata" not in jcompile.normalised_hlo(a)
    assert "multiply(%x, %x)" in jcompile.normalised_hlo(a)
    assert jcompile.hlo_fingerprint(a) != jcompile.hlo_fingerprint(a.replace("multiply", "add"))


class _Compiled:
    """Stand-in for a compiled executable's analysis API (shapes older JAX returned)."""

    def __init__(self, cost: object) -> None:
        self.cost = cost

    def cost_analysis(self) -> object:
        if isinstance(self.cost, Exception):
            raise self.cost
        return self.cost


@pytest.mark.parametrize(
    ("cost", "expected"),
    [
        ({"flops": 10.0, "transcendentals": 2.0, "bytes accessed": 64.0}, (10.0, 2.0, 64.0)),
        ([{"flops": 10.0, "bytes accessed": 64.0}], (10.0, None, 64.0)),
        ([], (None, None, None)),
        (None, (None, None, None)),
        ({"flops": -1.0, "bytes accessed": float("nan")}, (None, None, None)),
        ({"flops": "n/a"}, (None, None, None)),
        (NotImplementedError("no cost model"), (None, None, None)),
    ],
)
def test_cost_figures_handle_every_shape(cost: object, expected: tuple) -> None:
    assert jcompile.cost_figures(_Compiled(cost)) == expected


# --- derived figures and how they are shown ----------------------------------------------


def _run(ms: list[Measurement]) -> Run:
    return Run(
        run_id="r",
        started_at="t",
        finished_at="t",
        complete=True,
        environment={},
        config={},
        measurements=tuple(ms),
    )


def test_achieved_rates_and_break_even() -> None:
    c = jit_compile(10, compile_s=0.5, flops=2e6)  # total compile 0.5 s
    jit = m(Mode.JIT, [1e-3] * 5, compile=c)
    run = _run([m(Mode.NUMPY, [3e-3] * 5), jit])
    shown = analyse(run).figure(CASE.key, Mode.JIT)
    assert shown is not None
    assert shown.achieved_flops_per_s == pytest.approx(2e9)
    assert shown.achieved_bytes_per_s == pytest.approx(4e9)
    assert analyse(run).break_even_calls(CASE.key) == pytest.approx(0.5 / 2e-3)
    slower = _run([m(Mode.NUMPY, [0.5e-3] * 5), jit])
    assert analyse(slower).break_even_calls(CASE.key) == math.inf
    numpy = analyse(run).figure(CASE.key, Mode.NUMPY)
    assert numpy is not None and numpy.achieved_flops_per_s is None


def test_summary_shows_codes_rates_and_warning_messages() -> None:
    ms = diagnose.case_diagnostics(
        [
            m(Mode.NUMPY, STEADY),
            m(Mode.EAGER, [x * 40 for x in STEADY]),
            m(Mode.JIT, [x / 4 for x in STEADY], compile=jit_compile(1500, 1.2, flops=5e6)),
        ]
    )
    run = _run(ms)
    assert case_notes(ms) == "eager: eager-dispatch-bound; jit: large-jaxpr"
    from rich.console import Console

    console = Console(width=250, record=True)
    console.print(summary_table(run))
    text = console.export_text()
    assert "large-jaxpr" in text and "20" in text  # 5e6 flops / 0.25 ms = 20 GFLOP/s
    lines = problems(run)
    assert any("large-jaxpr" in line and "1,500 jaxpr equations" in line for line in lines)
    assert not any("eager-dispatch-bound" in line for line in lines)  # info: codes only
    # Diagnostics survive the JSON round trip.
    again = run_from_dict(json.loads(dump_run(run)))
    assert [d.code for x in again.measurements for d in x.diagnostics] == [
        "eager-dispatch-bound",
        "large-jaxpr",
    ]


def test_loops_are_counted_and_their_rates_withheld() -> None:
    x = jnp.ones(64)
    looped = jcompile.cold_aot_breakdown(
        lambda v: lax.fori_loop(0, 10, _body, v), static_argnames=(), args=(x,), kwargs={}
    )
    straight = jcompile.cold_aot_breakdown(
        lambda v: _body(0, v), static_argnames=(), args=(x,), kwargs={}
    )
    assert looped.while_loop_count == 1 and straight.while_loop_count == 0
    c = CompileInfo(
        flops=looped.flops,
        bytes_accessed=looped.bytes_accessed,
        while_loop_count=looped.while_loop_count,
    )
    shown = analyse(_run([m(Mode.JIT, [1e-3], compile=c)])).figure(CASE.key, Mode.JIT)
    assert c.has_loops and shown is not None and shown.achieved_flops_per_s is None


def test_find_narrowed_names_inputs_and_whether_values_fit():
    small = np.arange(4, dtype=np.int64)
    big = np.array([2**40], dtype=np.int64)
    pairs = [
        ("idx", small, jax.device_put(small)),
        ("big", big, jax.device_put(big)),
        ("x", np.ones(2, np.float32), jax.device_put(np.ones(2, np.float32))),
    ]
    found = diagnose.find_narrowed(pairs)
    assert found == [("idx", "int64", "int32", True), ("big", "int64", "int32", False)]
    d = diagnose.narrowed_inputs(found)
    assert (
        d.code == diagnose.INPUT_NARROWED and "big int64 → int32 (values out of range" in d.message
    )
    assert d.code in diagnose.PITFALL_CODES


def test_find_wide_scalars_in_a_float32_case():
    named = [("alpha", np.float64(1.5)), ("beta", 1.5), ("n", np.int64(3)), ("x", np.ones(2))]
    assert diagnose.find_wide_scalars(named, "float32") == ["alpha (float64)"]
    assert diagnose.find_wide_scalars(named, "float64") == []
    assert diagnose.find_wide_scalars(named, "int32") == []
    d = diagnose.scalar_promotion(["alpha (float64)"], "float32")
    assert d.code == diagnose.SCALAR_PROMOTION and "NEP 50" in d.message


def test_eager_recompiles_get_the_closure_hint():
    assert "closure" in diagnose.recompiled_during_timing(3, Mode.EAGER).hint
    assert "closure" not in diagnose.recompiled_during_timing(3, Mode.JIT).hint


def test_a_shape_mismatch_is_told_to_return_the_same_arrays_not_about_purity() -> None:
    """A NumPy side returning another shape got jit's hint about globals frozen at trace
    time."""
    from jitbench.measure.validation import check_outputs

    result = check_outputs(np.zeros((3, 1)), np.zeros(3))
    assert not result.ok and result.structural
    found = diagnose.mismatch(
        result.message, nonfinite=False, mode=Mode.JIT, structural=result.structural
    )
    assert found.code == diagnose.OUTPUT_MISMATCH
    assert "shape (3,) differs from reference (3, 1)" in found.message
    assert found.hint.startswith("the two sides return different arrays")
    assert "trace time" not in found.hint
    values = check_outputs(np.zeros(3), np.ones(3))
    assert not values.ok and not values.structural


def test_a_gpu_out_of_memory_names_the_other_processes() -> None:
    # As an H100 worker raised it when the first process held 75 % of the GPU.
    exc = RuntimeError(
        "INTERNAL: RET_CHECK failure (external/xla+/xla/backends/gpu/runtime/fft_thunk.cc:201)"
        " fft_plan != nullptr Failed to create cuFFT batched plan with scratch allocator"
    )
    hint = diagnose.hint_for_exception(exc)
    assert "XLA_PYTHON_CLIENT_MEM_FRACTION" in hint and "75 %" in hint
    assert "fit in memory" in diagnose.hint_for_exception(MemoryError())
