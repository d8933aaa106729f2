"""`jitbench.bench`: one function in NumPy, eager and jit, through the run's protocol."""

from __future__ import annotations

import json
import math
import tempfile
import threading
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import jitbench
from jitbench import Mode, bench
from jitbench import formatting as fmt
from jitbench.errors import ConfigError
from jitbench.results import load_run
from jitbench.results.analysis import Estimate, analyse

FAST = {"budget": 0.05, "processes": 1}


def selu(xp, x, alpha=1.67, lmbda=1.05):
    return lmbda * xp.where(x > 0, x, alpha * xp.exp(x) - alpha)


X = np.random.default_rng(0).standard_normal(4096).astype(np.float32)


def test_an_xp_function_is_measured_in_three_modes_and_agrees_with_itself() -> None:
    r = bench(selu, X, **FAST)
    assert r.name == "selu" and r.sizes == ("given",)
    assert {m.mode for m in r.run.measurements} == {Mode.NUMPY, Mode.EAGER, Mode.JIT}
    assert all(m.ok for m in r.run.measurements)
    jit, numpy = r.time("jit"), r.time("numpy")
    speedup = r.speedup("jit")
    assert jit is not None and numpy is not None and speedup is not None
    assert speedup.value == pytest.approx(numpy.value / jit.value)  # the figures agree
    assert r.speedup("jit", over="eager").value == pytest.approx(  # type: ignore[union-attr]
        r.time("eager").value / jit.value  # type: ignore[union-attr]
    )
    assert r.compile_s() is not None and r.compile_s() > 0  # type: ignore[operator]
    assert r.break_even_calls() is not None
    text = str(r)
    assert text.startswith("selu: jitbench, 1 process") and "vs NumPy" in text
    assert "jit compile" in text and repr(r) == text
    assert f"jit compile {fmt.seconds(r.compile_s())}" in text  # type: ignore[arg-type]
    html = r._repr_html_()
    assert "<table" in html and "<svg" in html and "<script" not in html


def test_a_numpy_twin_and_static_keywords() -> None:
    def power(x, n):
        return x**n

    r = bench(power, X, n=3, numpy=lambda x, n: x**n, static_argnames="n", **FAST)
    assert r.run.cases()[0].params == {}
    assert all(m.ok for m in r.run.measurements)


def test_without_a_numpy_side_eager_and_jit_are_compared() -> None:
    r = bench(lambda x: jnp.tanh(x) * 2, X, **FAST)
    assert {m.mode for m in r.run.measurements} == {Mode.EAGER, Mode.JIT}
    # No NumPy side: the baseline is eager, and jit's headline is its speedup over it.
    assert r.case().baseline is Mode.EAGER and r.speedup("jit", over="numpy") is None
    assert r.speedup("jit") == r.speedup("jit", over="eager") == r.case().eager_over_jit
    [(mode, _, message, hint)] = [d for d in r.diagnostics if d[1] == "unvalidated"]
    assert mode == "eager" and "no NumPy side" in message
    assert "numpy=" in hint


def test_sizes_and_a_sweep_make_one_case_each() -> None:
    cases_only = {**FAST, "budget": 0.01, "modes": ("numpy", "jit")}  # the cases, not figures
    sized = bench(selu, sizes={"S": lambda: (X[:256],), "M": lambda: (X,)}, **cases_only)
    assert sized.sizes == ("S", "M")
    assert sized.case("M").case.input_elements == X.size
    swept = bench(selu, sweep={256: lambda: (X[:256],), 4096: lambda: (X,)}, **cases_only)
    assert swept.sizes == ("n=256", "n=4096")
    with pytest.raises(KeyError, match="no size 'L'"):
        sized.case("L")


def test_bad_arguments_are_refused_with_the_signature() -> None:
    with pytest.raises(ConfigError, match="do not fit selu"):
        bench(selu, X, X, X, X, **FAST)
    with pytest.raises(ConfigError, match="not both"):
        bench(selu, X, sizes={"S": lambda: (X,)})


def test_the_result_saves_a_run_that_jitbench_reads(tmp_path: Path) -> None:
    r = bench(selu, X, **FAST)
    path = r.save(tmp_path)
    assert path.name == f"{r.run.run_id}.json" and load_run(path) == r.run
    assert json.loads(r.to_json())["run_id"] == r.run.run_id
    assert jitbench.analyse(r.run) is r.analysis


def test_a_second_call_in_the_same_process_gives_the_same_diagnostics() -> None:
    def wrong(xp, x):
        return x + 1 if xp is np else x

    timing = {"noisy", "outlier-samples"}  # the machine's, not the code's
    codes = [
        {(m, code) for m, code, *_ in bench(wrong, X, **FAST).diagnostics if code not in timing}
        for _ in range(2)
    ]
    assert codes[0] == codes[1] and ("jit", "output-mismatch") in codes[0]


@pytest.mark.e2e  # a real worker process receives the function
def test_an_interactive_function_reaches_the_worker_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Defined here (not in a suite file): pickled by value for the second process, in a
    folder the call removes when it ends."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    r = bench(selu, X, budget=0.05, processes=2)
    assert r.notes == () and r.run.processes == 2
    assert r.run.config.selection[0].suite.startswith("shipped:")  # type: ignore[index,union-attr]
    assert not list(tmp_path.glob("jitbench-shipped-*"))
    f = analyse(r.run).figure(r.run.cases()[0], Mode.JIT)
    assert f is not None and len(f.process_speedups) == 2


def test_what_cannot_be_shipped_is_measured_in_one_process_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    lock = threading.Lock()

    def locked(xp, x):
        with lock:
            return xp.tanh(x)

    r = bench(locked, X, budget=0.05, processes=2)
    assert r.run.processes == 1
    [note] = r.notes
    assert "one process" in note and "cannot pickle" in note
    assert note in str(r)
    assert math.isfinite(r.time("jit").value)  # type: ignore[union-attr]
    assert not list(tmp_path.glob("jitbench-shipped-*"))  # nothing left behind


def test_every_ratio_comes_from_the_analysis_layer() -> None:
    """`speedup(mode, over=...)` for any pair is the case's own (`CaseAnalysis.speedup`):
    the paired ratio where the analysis took one, inverted the other way round, and
    always the quotient of the two times shown."""
    from jitbench.interactive.one_call import BenchResult
    from jitbench.results import Case, Measurement, Run, Status

    case = Case(workload="f", size="given", device="cpu:0", dtype="float32")

    def measured(mode: Mode, scale: float) -> Measurement:
        samples = tuple(scale * (1 + (i % 5) / 50) for i in range(12))
        return Measurement(case=case, mode=mode, status=Status.OK, samples_s=samples)

    run = Run(
        run_id="r", started_at="t", finished_at="t", complete=True, environment={},
        measurements=(measured(Mode.NUMPY, 1e-3), measured(Mode.EAGER, 4e-4),
                      measured(Mode.JIT, 1e-4)),
    )  # fmt: skip
    r = BenchResult(run=run, name="f")
    c = r.case()
    assert r.speedup("jit", over="eager") == c.eager_over_jit
    back = r.speedup("numpy", over="jit")
    jit = c.get(Mode.JIT)
    assert jit is not None and jit.speedup is not None and back is not None
    assert back.value == pytest.approx(1 / jit.speedup.value)
    assert back.low == pytest.approx(1 / jit.speedup.high)  # type: ignore[operator]
    for mode, over in [("eager", "jit"), ("jit", "numpy"), ("numpy", "eager")]:
        shown = r.speedup(mode, over=over)
        a, b = r.time(over), r.time(mode)
        assert shown is not None and a is not None and b is not None
        assert shown.value == pytest.approx(a.value / b.value, rel=1e-12)
    assert r.speedup("jit", over="jit") == Estimate(1.0, 1.0, 1.0)
