"""The default suite: every workload discovers, describes itself, keeps NumPy honest
(no input mutation, input dtype out) and validates in numpy, eager and jit."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import jax
import numpy as np
import pytest

from jitbench import RunConfig, run_workloads
from jitbench.measure import diagnose
from jitbench.results import Severity, Status
from jitbench.suite.discovery import discover
from tests.faults import invoke

REPO = Path(__file__).resolve().parents[1]

# The default suite's files by kind. Other files in suites/ (pitfall demonstrations, the
# asv adapter) are not part of it and are deliberately left out here.
SUITE_FILES = [
    REPO / "suites" / f"{kind}.py"
    for kind in (
        "elementwise",
        "reductions",
        "linalg",
        "stencils",
        "control_flow",
        "signals",
        "physics_ml",
    )
]

EXPECTED = {
    "selu",
    "log2",
    "gelu",
    "black_scholes",
    "logsumexp",
    "softmax",
    "standardise",
    "gemm",
    "centred_product",
    "mlp",
    "pairwise_distances",
    "cholesky_solve",
    "jacobi2d",
    "heat1d",
    "mandelbrot",
    "ema",
    "fft_convolve",
    "nbody",
    "kmeans_step",
    "logreg_step",
}


@pytest.fixture(scope="module")
def registry():
    reg = discover(SUITE_FILES)
    assert not reg.errors, [str(e) for e in reg.errors]
    return reg


@pytest.fixture(scope="module")
def workloads(registry):
    return list(registry.workloads.values())


def test_suite_has_the_expected_workloads_with_metadata(workloads):
    assert {w.name for w in workloads} == EXPECTED
    for wl in workloads:
        assert set(wl.sizes) == {"S", "M", "L"}, wl.name
        assert wl.description and not wl.description.endswith(("vs", ",", ":")), wl.name
        assert wl.tags, wl.name
        assert len(wl.sweep) >= 5, wl.name


def test_presets_the_rest_of_the_project_relies_on(registry):
    assert registry.get("centred_product").sizes["M"] == {"n": 1000}
    assert registry.get("selu").sizes["M"] == {"n": 1_000_000}


def _float_leaves(tree):
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(tree)]


def test_numpy_side_keeps_inputs_and_dtype(workloads):
    for wl in workloads:
        inputs = wl.make_inputs(wl.sizes["S"], dtype="float32")
        before = [x.copy() for x in jax.tree_util.tree_leaves((inputs.args, inputs.kwargs))]
        out = wl.numpy_fn(*inputs.args, **inputs.kwargs, **inputs.static)
        after = jax.tree_util.tree_leaves((inputs.args, inputs.kwargs))
        for b, a in zip(before, after, strict=True):
            np.testing.assert_array_equal(a, b, err_msg=f"{wl.name} mutated its input")
        for leaf in _float_leaves(out):
            if np.issubdtype(leaf.dtype, np.floating):
                assert leaf.dtype == np.float32, f"{wl.name} returns {leaf.dtype}"
            assert np.all(np.isfinite(leaf)), f"{wl.name} returns non-finite values"


# Diagnostics that mean a workload is written wrongly. Observations about speed (noisy,
# jit slower than NumPy at this size, eager dispatch-bound, ...) are fine.
PROBLEM_CODES = {
    "output-mismatch",
    "nonfinite-output",
    "numpy-float64",
    "recompiled-during-timing",
}


def _assert_all_ok(run):
    problems = []
    for m in run.measurements:
        codes = [
            d.code for d in m.diagnostics if d.code in PROBLEM_CODES or d.severity is Severity.ERROR
        ]
        if m.status is not Status.OK or m.error is not None or codes:
            detail = m.error.message if m.error else "; ".join(d.message for d in m.diagnostics)
            problems.append(
                f"{m.case.workload}[{m.case.size}] {m.mode.value}: {m.status.value} {detail}"
            )
    assert not problems, "\n".join(problems)


def test_every_workload_validates_in_all_modes_at_S_with_no_false_pitfall():
    """One short run of the whole default suite (the slowest test; one run serves both
    checks): every measurement ok, and no pitfall diagnostic on code that has none."""
    run = default_suite_run()
    assert {m.case.workload for m in run.measurements} == EXPECTED
    assert {m.case.size for m in run.measurements} == {"S"}
    assert len(run.measurements) == 3 * len(EXPECTED)
    _assert_all_ok(run)
    for m in run.measurements:
        found = {d.code for d in m.diagnostics} & diagnose.PITFALL_CODES
        assert not found, f"{m.case.label} {m.mode.value}: {found}"


@pytest.mark.slow
def test_every_workload_validates_in_all_modes_at_every_preset(workloads):
    run = run_workloads(workloads, RunConfig.quick_settings(sizes=("S", "M", "L")))
    assert len(run.measurements) == 3 * 3 * len(EXPECTED)
    _assert_all_ok(run)


def test_cli_lists_every_workload_with_tags_and_descriptions():
    proc = invoke("list", "--json", *[arg for f in SUITE_FILES for arg in ("--suite", str(f))])
    assert proc.exit_code == 0, proc.stderr
    listed = {w["name"]: w for w in json.loads(proc.stdout)}
    assert set(listed) == EXPECTED
    assert all(w["tags"] and w["description"] for w in listed.values())
    assert listed["mandelbrot"]["tags"][:2] == ["control_flow", "while_loop"]


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("control_flow", {"mandelbrot", "ema"}),
        ("fori_loop", {"jacobi2d", "heat1d"}),
        ("linalg and not matmul", {"centred_product", "cholesky_solve"}),
        ("kmeans", {"kmeans_step"}),
    ],
)
def test_keyword_selects_by_tag_or_name(registry, expression, expected):
    assert {w.name for w in registry.select(keyword=expression)} == expected


def test_default_discovery_finds_exactly_the_default_suite():
    # What `jitbench run` sees with no --suite: pitfalls and adapters opt out.
    registry = discover([REPO / "suites"])
    assert registry.errors == []
    assert set(registry.workloads) == EXPECTED


def default_suite_run():
    """The whole default suite at S with 0.05 s of sampling per case and five samples at
    least: what the pitfall codes need (a recompile while timing is seen in any sample; the
    others come from the first calls), in half the time 0.1 s took."""
    config = RunConfig.quick_settings()
    plan = replace(config.plan, budget_s=0.05, min_samples=5, max_samples=9)
    registry = discover([REPO / "suites"])
    assert not registry.errors, [str(e) for e in registry.errors]
    return run_workloads(list(registry.workloads.values()), replace(config, plan=plan))
