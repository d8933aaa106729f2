"""suites/pitfalls.py produces each pitfall's diagnostic; the default suite produces none.

Both suites are measured for real once per module with quick settings (a slightly larger
budget than `--quick`, so the speed observations have enough samples to be significant).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from jitbench import RunConfig, run_workloads
from jitbench.measure import diagnose
from jitbench.results import Mode, Run, Status
from jitbench.suite.discovery import discover, import_suite_file

SUITES = Path(__file__).resolve().parents[1] / "suites"
PITFALLS = SUITES / "pitfalls.py"


def quick_config() -> RunConfig:
    config = RunConfig.quick_settings()
    # CPU time (`--clock cpu`): the speed observations judge the code, and other processes
    # taking the core (a busy CI box) must not make NumPy's 1 µs call look slow.
    plan = replace(
        config.plan, budget_s=0.1, min_samples=15, max_samples=25, floor_samples=15, clock="cpu"
    )
    return replace(config, plan=plan)


def codes_by_mode(run: Run, workload: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for m in run.measurements:
        if m.case.workload == workload:
            out[m.mode.value] = [d.code for d in m.diagnostics]
    return out


def describe(run: Run) -> str:
    return "\n".join(
        f"{m.case.label} {m.mode.value} {m.status.value} median={m.median_s} "
        f"compile={m.compile.total_compile_s if m.compile else None} "
        f"eqns={m.compile.jaxpr_eqn_count if m.compile else None} "
        f"{[d.code for d in m.diagnostics]}"
        for m in run.measurements
    )


@pytest.fixture(scope="module")
def pitfalls_run() -> Run:
    registry = discover([PITFALLS])
    assert not registry.errors, registry.errors
    return run_workloads(list(registry.workloads.values()), quick_config())


def test_pitfalls_are_kept_out_of_the_default_suite() -> None:
    default = discover([SUITES]).workloads
    explicit = discover([PITFALLS]).workloads
    assert "unrolled_loop" in explicit and not set(explicit) & set(default)


def test_every_pitfall_produces_its_code(pitfalls_run: Run) -> None:
    expected = import_suite_file(PITFALLS).EXPECTED_CODES  # type: ignore[attr-defined]
    assert set(expected) == {c.workload for c in pitfalls_run.cases()}
    for name, wanted in expected.items():
        seen = codes_by_mode(pitfalls_run, name)
        for mode, code in wanted.items():
            assert code in seen[mode], f"{name} {mode}: want {code}, got {seen}\n" + describe(
                pitfalls_run
            )
        if not wanted:  # a fixed twin: no pitfall in any mode
            found = {c for cs in seen.values() for c in cs} & diagnose.PITFALL_CODES
            assert not found, f"{name} is the fix but shows {found}\n" + describe(pitfalls_run)


def test_unrolled_loop_is_many_times_larger_and_slower_to_compile(pitfalls_run: Run) -> None:
    def jit_compile(name: str):  # type: ignore[no-untyped-def]
        (m,) = [
            x for x in pitfalls_run.measurements if x.case.workload == name and x.mode is Mode.JIT
        ]
        assert m.compile is not None
        return m

    unrolled, twin = jit_compile("unrolled_loop"), jit_compile("fori_loop_twin")
    assert unrolled.compile.jaxpr_eqn_count >= 1000
    eqn_ratio = unrolled.compile.jaxpr_eqn_count / twin.compile.jaxpr_eqn_count

    def cold_compile_s(m) -> float:  # type: ignore[no-untyped-def]
        # Best of the two cold compiles the protocol makes (AOT stages, and the first call,
        # whose single run is negligible next to compiling), so one preemption on a busy
        # machine does not decide the ratio.
        return min(m.compile.total_compile_s, m.compile.first_call_s)

    compile_ratio = cold_compile_s(unrolled) / cold_compile_s(twin)
    print(f"jaxpr {eqn_ratio:.0f}x larger, compile {compile_ratio:.1f}x slower")
    assert eqn_ratio >= 50, describe(pitfalls_run)
    # Alone, 6.6-10.8x on this VM; 2.4x once in CI, when the other test worker slowed the
    # twin's two cold compiles alike. The figure is the benchmark's to report; here only
    # the direction, with room for a busy machine.
    assert compile_ratio >= 1.5, describe(pitfalls_run)
    (message,) = [d.message for d in unrolled.diagnostics if d.code == "large-jaxpr"]
    assert f"{unrolled.compile.jaxpr_eqn_count:,} jaxpr equations" in message


def test_impure_global_differs_under_jit(pitfalls_run: Run) -> None:
    (jit,) = [
        m
        for m in pitfalls_run.measurements
        if m.case.workload == "impure_global" and m.mode is Mode.JIT
    ]
    assert jit.status is Status.MISMATCH
    (d,) = [d for d in jit.diagnostics if d.code == "output-mismatch"]
    assert "trace time" in d.hint


def test_impure_global_differs_under_jit_in_every_run_of_a_process() -> None:
    # Suite modules stay imported, so a second run (a notebook, the Python API, another
    # test before this one) starts from the counter the first one left.
    impure = discover([PITFALLS]).get("impure_global")
    for attempt in (1, 2):
        run = run_workloads([impure], quick_config())
        (jit,) = [m for m in run.measurements if m.mode is Mode.JIT]
        codes = [d.code for d in jit.diagnostics]
        assert "output-mismatch" in codes, f"run {attempt}: {codes}\n" + describe(run)


def test_without_a_numpy_reference_jit_is_checked_against_eager() -> None:
    import numpy as np

    from jitbench import workload

    def vec(rng, *, dtype, n):  # type: ignore[no-untyped-def]
        return (rng.standard_normal(n).astype(dtype),)

    def no_numpy(x):  # type: ignore[no-untyped-def]
        raise RuntimeError("no NumPy version of this one")

    calls = {"count": 0}

    def bumps_a_global(x):  # type: ignore[no-untyped-def]
        calls["count"] += 1
        return x + calls["count"]

    impure = workload(bumps_a_global, inputs=vec, numpy=no_numpy, sizes={"S": {"n": 8}})
    pure = workload(lambda x: x * 2, name="pure", inputs=vec, numpy=no_numpy, sizes={"S": {"n": 8}})
    run = run_workloads([impure, pure], quick_config())
    by = {(m.case.workload, m.mode): m for m in run.measurements}
    assert by["bumps_a_global", Mode.NUMPY].status is Status.ERROR
    jit = by["bumps_a_global", Mode.JIT]
    assert jit.status is Status.MISMATCH, describe(run)
    assert "differs from the eager output" in jit.diagnostics[0].message
    assert by["pure", Mode.JIT].status is Status.OK and np.isfinite(by["pure", Mode.JIT].median_s)


def test_a_nan_gradient_through_where_gets_the_double_where_hint(pitfalls_run: Run) -> None:
    for name, fixed in (("grad_through_where", False), ("grad_double_where", True)):
        (jit,) = [
            m for m in pitfalls_run.measurements if m.case.workload == name and m.mode is Mode.JIT
        ]
        if fixed:
            assert jit.status is Status.OK, describe(pitfalls_run)
            continue
        assert jit.status is Status.MISMATCH
        (d,) = [d for d in jit.diagnostics if d.code == "nonfinite-output"]
        assert "double where" in d.hint and "jnp.where(mask, x, 1.0)" in d.hint
        assert "does not help" in d.hint and "gradient" in d.message


def test_prints_are_captured_and_named(pitfalls_run: Run) -> None:
    by_mode = {
        m.mode: m for m in pitfalls_run.measurements if m.case.workload == "prints_each_call"
    }
    eager = next(d for d in by_mode[Mode.EAGER].diagnostics if d.code == "prints-during-call")
    assert "in timed calls" in eager.message and "'sum is" in eager.message
    jit = next(d for d in by_mode[Mode.JIT].diagnostics if d.code == "prints-during-call")
    assert "at trace time" in jit.message and "Tracer" in jit.message  # print shows a tracer
