"""Diagnostics (pure detectors on measurements) and the compile analysis they read.

The detectors are tested on hand-built measurements with exact figures; the compile
analysis on real JAX compiles (tiny sizes), except the cost-analysis shapes the installed
JAX no longer produces (a list, None, -1), which use a stand-in `compiled` object.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from jitbench import formatting as fmt
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
    TimeSplit,
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


# --- run-level detectors: outliers and sizes out of order ------------------------------------


def sized(
    size: str,
    mode: Mode,
    samples: list[float],
    *,
    nbytes: int | None,
    elements: int | None = None,
    workload: str = "gemm",
    device: str = "cpu:0",
) -> Measurement:
    case = Case(
        workload=workload,
        size=size,
        device=device,
        dtype="float32",
        input_bytes=nbytes,
        input_elements=elements,
    )
    return Measurement(
        case=case, mode=mode, status=Status.OK, samples_s=tuple(samples), calls_per_sample=1
    )


def around(center: float, n: int = 12, rel: float = 0.01) -> list[float]:
    """n samples evenly spread ±rel around center."""
    return [center * (1 - rel + 2 * rel * i / (n - 1)) for i in range(n)]


def run_codes(run: Run) -> dict[tuple[str, str], list[str]]:
    return {(x.case.size, x.mode.value): [d.code for d in x.diagnostics] for x in run.measurements}


def test_outlier_samples_names_how_many_and_how_far() -> None:
    samples = [*around(10e-3, 30), 42e-3, 31e-3]
    [found] = diagnose.run_diagnostics(_run([m(Mode.NUMPY, samples)])).measurements[0].diagnostics
    assert found.code == diagnose.OUTLIERS and found.severity is Severity.INFO
    assert found.message.startswith("2 of 32 samples lie beyond Q3 + 3·IQR")
    assert "the worst 4.2× the median 10 ms" in found.message


@pytest.mark.parametrize(
    "samples",
    [
        [*around(10e-3, 6), 40e-3],  # too few samples to call anything far
        around(10e-3, 30, rel=0.2),  # wide but without a far tail
        [10e-3] * 20 + [10.3e-3],  # beyond Q3 + 3·IQR (IQR 0) but only 3 % above the median
    ],
)
def test_no_outliers_without_a_far_tail(samples: list[float]) -> None:
    run = diagnose.run_diagnostics(_run([m(Mode.NUMPY, samples)]))
    assert run.measurements[0].diagnostics == ()


def two_processes(first: float, second: float, mode: Mode = Mode.JIT) -> Measurement:
    """One measurement of a --processes 2 run whose processes measured these medians."""
    return replace(m(mode, [*around(first), *around(second)]), run_sample_counts=(12, 12))


def test_processes_that_measured_two_speeds_are_said_to_disagree() -> None:
    """softmax M in an A/A run: the first process's executable ran at 6.57 ms, the
    worker's at 1.71 ms, and the speedup landed between the two."""
    run = diagnose.run_diagnostics(_run([two_processes(6.57e-3, 1.71e-3)]))
    [found] = run.measurements[0].diagnostics
    assert found.code == diagnose.PROCESSES_DISAGREE and found.severity is Severity.WARNING
    assert found.message.startswith("its 2 processes measured 6.57 ms, 1.71 ms (3.84× apart)")
    assert "--processes 4" in found.hint
    assert diagnose.run_diagnostics(run) == run  # once


def test_a_whole_process_slowed_is_told_apart_from_one_mode_that_split() -> None:
    """mlp S in a noisy default run: NumPy, eager and jit all ran 1.3-1.5x slower in the
    worker, so the machine moved, not the code; softmax M: only jit split."""
    alike = diagnose.run_diagnostics(
        _run(
            [
                two_processes(0.97e-3, 1.27e-3, Mode.NUMPY),
                two_processes(1.11e-3, 1.70e-3, Mode.EAGER),
                two_processes(0.89e-3, 1.22e-3, Mode.JIT),
            ]
        )
    )
    [found] = alike.measurements[1].diagnostics  # eager: 1.53x, the others 1.31x and 1.37x
    assert found.code == diagnose.PROCESSES_DISAGREE
    assert "between the same processes numpy moved 1.31×, jit moved 1.37×" in found.message
    assert "every mode moved alike, so the machine was slower during one process" in found.message
    assert found.severity is Severity.INFO  # the speedups hold: not among the run's problems
    alone = diagnose.run_diagnostics(
        _run(
            [
                two_processes(7.7e-3, 7.6e-3, Mode.NUMPY),
                two_processes(6.6e-3, 6.5e-3, Mode.EAGER),
                two_processes(6.57e-3, 1.71e-3, Mode.JIT),
            ]
        )
    )
    [found] = alone.measurements[2].diagnostics
    assert "numpy moved 1.01×, eager moved 1.02×" in found.message
    assert "the same code ran at different speeds in different processes" in found.message
    assert "every mode moved alike" not in found.message
    assert found.severity is Severity.WARNING


def test_a_busier_machine_that_slowed_the_modes_unequally_is_named_with_the_speedups_moved() -> (
    None
):
    """standardise S in a noisy default run: every mode was slower in the worker
    (NumPy 1.47x, eager 1.93x, jit 1.59x): the machine was busier, not the code's
    executable slow, and the eager speedups moved by the difference."""
    run = diagnose.run_diagnostics(
        _run(
            [
                two_processes(0.80e-3, 1.176e-3, Mode.NUMPY),
                two_processes(0.70e-3, 1.351e-3, Mode.EAGER),
                two_processes(0.283e-3, 0.45e-3, Mode.JIT),
            ]
        )
    )
    [found] = run.measurements[1].diagnostics  # eager: 1.93x
    assert "between the same processes numpy moved 1.47×, jit moved 1.59×" in found.message
    assert "every mode was slower in the same process, so the machine was busier" in found.message
    assert "(its time relative to numpy's 1.31×, to jit's 1.21×)" in found.message
    assert "the same code ran at different speeds" not in found.message
    assert found.severity is Severity.WARNING  # its speedups did move
    [found] = run.measurements[2].diagnostics  # jit: 1.59x; eager moved more, NumPy less
    assert "relative to numpy's 1.08×, to eager's 1.21×" in found.message


def test_modes_alike_with_one_but_not_with_each_other_have_not_moved_alike() -> None:
    """ema S in the same run: eager moved 1.69x, NumPy 1.82x and jit 1.41x, each within
    1.2x of eager's but 1.29x apart, so jit's speedup over NumPy moved: not a note that
    the speedups hold."""
    run = diagnose.run_diagnostics(
        _run(
            [
                two_processes(0.96e-3, 1.75e-3, Mode.NUMPY),
                two_processes(1.0e-3, 1.69e-3, Mode.EAGER),
                two_processes(0.30e-3, 0.423e-3, Mode.JIT),
            ]
        )
    )
    [found] = run.measurements[1].diagnostics  # eager
    assert "numpy moved 1.82×, jit moved 1.41×" in found.message
    assert "every mode moved alike" not in found.message
    assert "the machine was busier then" in found.message
    assert found.severity is Severity.WARNING


@pytest.mark.parametrize(
    "measurement",
    [
        two_processes(1.43e-3, 1.38e-3),  # the usual few per cent between processes
        two_processes(1.4e-3, 2.0e-3),  # 1.43x: far, but within the factor
        m(Mode.JIT, [*around(6.57e-3), *around(1.71e-3)]),  # one process: no parts
    ],
)
def test_processes_that_roughly_agree_are_not_flagged(measurement: Measurement) -> None:
    run = diagnose.run_diagnostics(_run([measurement]))
    assert diagnose.PROCESSES_DISAGREE not in [d.code for d in run.measurements[0].diagnostics]


def test_noisy_is_judged_again_on_the_samples_of_every_process() -> None:
    """Five samples a process have no 95 % interval, so each process said `noisy`; the
    run reports the pooled ten, whose interval is judged instead."""
    per_process = diagnose.noisy(math.inf, 0.01)
    tight = replace(
        m(Mode.JIT, [*around(1e-3, 5, rel=0.001), *around(1e-3, 5, rel=0.001)]),
        run_sample_counts=(5, 5),
        diagnostics=(per_process,),
    )
    wide = replace(tight, samples_s=(*around(1e-3, 5, rel=0.3), *around(1e-3, 5, rel=0.3)))
    run = diagnose.pooled_judgement(_run([tight, wide]), precision=0.01)
    assert run.measurements[0].diagnostics == ()
    [again] = run.measurements[1].diagnostics
    assert again.code == diagnose.NOISY and "wider than the ±1.0% target" in again.message


def test_jit_slower_is_judged_again_on_the_pooled_run_with_the_figures_it_shows() -> None:
    """ema M in the H200 example: the first process's note said "jit is 2.52× slower than
    NumPy (31.5 ms vs 12.5 ms)" beside a row of 16.8 ms vs 9.21 ms, and gemm M was
    flagged with a speedup interval [0.805–1.02] that holds 1."""
    first_note = diagnose.jit_slower(2.52, 31.5e-3, 12.5e-3)

    def case(numpy_s: tuple[float, float], jit_s: tuple[float, float]) -> list[Measurement]:
        numpy_m = two_processes(*numpy_s, Mode.NUMPY)
        jit_m = replace(two_processes(*jit_s, Mode.JIT), diagnostics=(first_note,))
        return [numpy_m, jit_m]

    slower = diagnose.pooled_judgement(_run(case((12.5e-3, 11e-3), (31.5e-3, 27e-3))), None)
    [note] = [d for d in slower.measurements[1].diagnostics if d.code == diagnose.JIT_SLOWER]
    numpy_m, jit_m = slower.measurements
    assert note != first_note
    assert f"({fmt.seconds(jit_m.median_s)} vs {fmt.seconds(numpy_m.median_s)})" in note.message
    speedup = analyse(slower).speedup(jit_m.case.key, Mode.JIT)
    assert speedup is not None and speedup.high is not None and speedup.high < 1
    assert f"jit is {fmt.ratio(1 / speedup.value)} slower" in note.message
    # The processes disagree about it: the interval holds 1, so no note.
    unsure = diagnose.pooled_judgement(_run(case((12.5e-3, 9e-3), (31.5e-3, 7e-3))), None)
    assert diagnose.JIT_SLOWER not in [d.code for d in unsure.measurements[1].diagnostics]


def seed_case() -> list[Measurement]:
    """The seed of issue 14: gemm NumPy at S 49.5 ms (a BLAS stall), at M 45.6 ms."""
    s_bytes, m_bytes = 2 * 350 * 350 * 4, 2 * 700 * 700 * 4
    return [
        sized("S", Mode.NUMPY, around(49.5e-3), nbytes=s_bytes),
        sized("S", Mode.JIT, around(4.5e-3), nbytes=s_bytes),
        sized("M", Mode.NUMPY, around(45.6e-3), nbytes=m_bytes),
        sized("M", Mode.JIT, around(40e-3), nbytes=m_bytes),
    ]


def test_the_seed_case_marks_the_smaller_size_and_names_the_larger() -> None:
    run = diagnose.run_diagnostics(_run(seed_case()))
    assert run_codes(run) == {
        ("S", "numpy"): [diagnose.SIZE_ORDER],
        ("S", "jit"): [],
        ("M", "numpy"): [],
        ("M", "jit"): [],
    }
    [d] = run.measurements[0].diagnostics
    assert d.severity is Severity.WARNING
    assert d.message.startswith(
        "numpy at S (49.5 ms) is slower than at M (45.6 ms, 4× the input bytes)"
    )
    assert "left out of the geometric-mean speedup" in d.message
    assert "jitbench run gemm -s S,M" in d.hint and "--threads 1" in d.hint
    figures = analyse(run)
    s_numpy, m_numpy = run.measurements[0], run.measurements[2]
    assert figures.figure(s_numpy.case, Mode.JIT).suspect  # type: ignore[union-attr]
    assert not figures.figure(m_numpy.case, Mode.JIT).suspect  # type: ignore[union-attr]
    assert diagnose.run_diagnostics(run) == run  # idempotent


def test_the_worst_contradiction_is_named_across_three_sizes() -> None:
    ms = [
        sized("S", Mode.NUMPY, around(9e-3), nbytes=100),
        sized("M", Mode.NUMPY, around(5e-3), nbytes=1_000),
        sized("L", Mode.NUMPY, around(8e-3), nbytes=10_000),
    ]
    run = diagnose.run_diagnostics(_run(ms))
    assert run_codes(run) == {
        ("S", "numpy"): [diagnose.SIZE_ORDER],
        ("M", "numpy"): [],
        ("L", "numpy"): [],
    }
    assert (
        "slower than at L (8 ms, 100× the input bytes)"
        in run.measurements[0].diagnostics[0].message
    )


@pytest.mark.parametrize(
    "ms",
    [
        # Overlapping CIs: S is slower by the median only.
        [
            sized("S", Mode.NUMPY, around(10.2e-3, rel=0.1), nbytes=100),
            sized("M", Mode.NUMPY, around(10e-3, rel=0.1), nbytes=1_000),
        ],
        # Apart, but by less than the margin (a sweep's neighbouring points).
        [
            sized("n=1000", Mode.NUMPY, around(10.3e-3, rel=0.001), nbytes=1_000),
            sized("n=1024", Mode.NUMPY, around(10e-3, rel=0.001), nbytes=1_024),
        ],
        # Calls dominated by per-call overhead: flat in the size, their order is drift.
        [
            sized("S", Mode.JIT, around(60e-6), nbytes=100),
            sized("M", Mode.JIT, around(50e-6), nbytes=1_000),
        ],
        # Longer calls whose time split shows them dispatch-bound (eager on a GPU).
        [
            sized("S", Mode.EAGER, around(680e-6), nbytes=100),
            replace(
                sized("L", Mode.EAGER, around(540e-6), nbytes=1_000),
                time_split=TimeSplit(calls=5, wall_s=6e-4, host_s=5.7e-4, device_s=2e-5),
            ),
        ],
        # Same input size (a preset that changes an iteration count, not the input).
        [
            sized("S", Mode.NUMPY, around(20e-3), nbytes=1_000),
            sized("M", Mode.NUMPY, around(10e-3), nbytes=1_000),
        ],
        # Different modes, devices or workloads are never compared.
        [
            sized("S", Mode.NUMPY, around(20e-3), nbytes=100),
            sized("M", Mode.JIT, around(10e-3), nbytes=1_000),
            sized("M", Mode.NUMPY, around(10e-3), nbytes=1_000, device="gpu:0"),
            sized("M", Mode.NUMPY, around(10e-3), nbytes=1_000, workload="other"),
        ],
        # No recorded input size (a failed input function, an old file).
        [
            sized("S", Mode.NUMPY, around(20e-3), nbytes=None),
            sized("M", Mode.NUMPY, around(10e-3), nbytes=None),
        ],
    ],
)
def test_no_inversion_without_a_clear_contradiction(ms: list[Measurement]) -> None:
    run = diagnose.run_diagnostics(_run(ms))
    assert all(not codes for codes in run_codes(run).values()), run_codes(run)


def test_sizes_are_ordered_by_elements_when_bytes_are_unknown() -> None:
    ms = [
        sized("S", Mode.NUMPY, around(20e-3), nbytes=None, elements=10),
        sized("M", Mode.NUMPY, around(10e-3), nbytes=None, elements=100),
    ]
    run = diagnose.run_diagnostics(_run(ms))
    assert run_codes(run)[("S", "numpy")] == [diagnose.SIZE_ORDER]
    assert "10× the elements" in run.measurements[0].diagnostics[0].message


def test_run_level_codes_are_listed_and_survive_the_json_round_trip() -> None:
    assert {diagnose.OUTLIERS, diagnose.SIZE_ORDER} <= diagnose.CODES
    run = diagnose.run_diagnostics(_run(seed_case()))
    again = run_from_dict(json.loads(dump_run(run)))
    assert run_codes(again) == run_codes(run)


def test_the_terminal_table_and_problems_show_the_inversion() -> None:
    from rich.console import Console

    run = diagnose.run_diagnostics(_run(seed_case()))
    console = Console(width=250, record=True)
    console.print(summary_table(run))
    text = console.export_text()
    assert "numpy: size-order-inverted" in text
    assert any(
        line.startswith("gemm[S] cpu:0 float32 numpy: size-order-inverted: numpy at S")
        for line in problems(run)
    )


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
