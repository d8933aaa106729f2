"""Per-mode time limits: a mode past --timeout is stopped, the case's other modes keep their
figures; a mode that reaches it while sampling keeps the samples it took."""

from __future__ import annotations

import time
from dataclasses import replace

import jax
import pytest

from jitbench import workload
from jitbench.config import RunConfig
from jitbench.measure import diagnose
from jitbench.measure.devices import resolve_devices
from jitbench.measure.faults import timed_out_skips
from jitbench.measure.limits import RETRY_INTERVAL_S as RETRY_S
from jitbench.measure.limits import ModeLimit, ModeTimeout, doing
from jitbench.measure.opening import measure_cases
from jitbench.results import Mode, Status
from jitbench.runner.plan import plan_cases
from tests.conftest import alarm_raises_inside_an_exit


def _vec(rng, *, dtype, n):
    return (rng.standard_normal(n).astype(dtype),)


def _busy(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:  # Python bytecode: a signal handler runs in between
        pass


def _slow_eager(seconds: float, name: str):
    """A workload whose JAX side takes `seconds` per call op by op and nothing under jit
    (its Python body runs once, at trace time, on tracers)."""

    @workload(inputs=_vec, sizes={"S": {"n": 4}}, name=name, eager="nojit")
    def slow(xp, x):
        if xp is not __import__("numpy") and not isinstance(x, jax.core.Tracer):
            _busy(seconds)
        return x * 2

    return slow


def test_a_limit_raises_in_the_block_and_counts_its_time() -> None:
    limit = ModeLimit("eager", 0.05, others=("numpy", "jit"))
    with pytest.raises(ModeTimeout) as caught, limit.charged("first call"):
        _busy(5.0)
    assert caught.value.mode == "eager" and caught.value.step == "first call"
    assert 0.05 <= limit.spent_s < 2.0
    with pytest.raises(ModeTimeout), limit.charged("samples"):  # spent: refused at once
        pass
    free = ModeLimit("jit")
    with free.charged("samples"):
        pass
    assert free.steps["samples"] >= 0.0


def test_a_mode_past_its_limit_is_stopped_and_the_others_keep_their_figures() -> None:
    slow = _slow_eager(30.0, "slow_eager")
    config = RunConfig.quick_settings(timeout_s=0.3)
    pcs = plan_cases([slow], config, resolve_devices([]))
    ms = {m.mode: m for m in measure_cases(pcs, config)}
    assert ms[Mode.NUMPY].ok and ms[Mode.JIT].ok and ms[Mode.NUMPY].samples_s
    eager = ms[Mode.EAGER]
    assert eager.status is Status.TIMEOUT and not eager.samples_s
    assert eager.failure_text.startswith(
        "timeout: ModeTimeout: eager exceeded --timeout 0.3 s in its first call"
    )
    assert "--modes numpy,jit" in eager.hint
    assert eager.diagnostics[0].code == diagnose.MODE_TIMEOUT  # the reason before any note
    # A later --processes worker leaves it out, saying why.
    skips = timed_out_skips(tuple(ms.values()))
    assert list(skips) == [(eager.case.key, Mode.EAGER)]
    again = {m.mode: m for m in measure_cases(pcs, config, skip=skips)}
    assert again[Mode.EAGER].status is Status.SKIPPED and again[Mode.JIT].ok
    assert again[Mode.EAGER].diagnostics[0].code == diagnose.TIMED_OUT_BEFORE
    assert "--setting retry_timeouts=true" in again[Mode.EAGER].hint


def test_a_mode_that_reaches_its_limit_while_sampling_keeps_its_samples() -> None:
    slow = _slow_eager(0.02, "sampled_eager")
    quick = RunConfig.quick_settings(timeout_s=0.5)
    plan = replace(quick.plan, budget_s=100.0, floor_samples=500, max_samples=500, precision=1e-12)
    config = replace(quick, plan=plan)
    pcs = plan_cases([slow], config, resolve_devices([]))
    ms = {m.mode: m for m in measure_cases(pcs, config)}
    eager = ms[Mode.EAGER]
    assert eager.ok and 1 <= len(eager.samples_s) < 500
    assert any(d.code == diagnose.MODE_CAPPED for d in eager.diagnostics)
    # The others sampled on after it stopped.
    assert min(len(ms[m].samples_s) for m in (Mode.JIT, Mode.NUMPY)) > len(eager.samples_s)


def test_a_limit_never_raises_inside_a_context_managers_exit() -> None:
    """An alarm that lands while a context manager exits (as `charged`'s own exit begins)
    waits for the retry: raised there, it would abort that exit and leave the handler and
    its timer armed after the block, to fire in whatever runs next."""
    import signal
    import sys

    limit = ModeLimit("jit", 30.0)
    with limit.charged("samples"):
        assert not alarm_raises_inside_an_exit(ModeTimeout)
        with pytest.raises(ModeTimeout):  # in the block itself it raises
            signal.getsignal(signal.SIGALRM)(signal.SIGALRM, sys._getframe())  # type: ignore[operator]
    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0  # and the block's exit disarmed it


def test_a_swallowed_timeout_is_raised_again_until_the_mode_stops() -> None:
    limit = ModeLimit("eager", 0.05)
    swallowed = 0
    with pytest.raises(ModeTimeout), limit.charged("first call"):
        while True:
            try:
                _busy(5.0)
            except ModeTimeout:  # a workload's own `except Exception`
                swallowed += 1
                if swallowed > 1:
                    raise
    assert swallowed == 2 and RETRY_S <= limit.spent_s < 3.0  # the whole block counted


def test_a_limit_reached_in_a_doing_block_says_what_ran_over() -> None:
    limit = ModeLimit("jit", 0.05)
    with pytest.raises(ModeTimeout) as caught, limit.charged("first call"), doing("XLA's compile"):
        _busy(5.0)
    assert caught.value.doing == "XLA's compile"
    assert str(caught.value).endswith("and was stopped, in XLA's compile")
    # A function says it as it is when the limit is reached, not when the block began.
    stage = ["tracing"]
    limit = ModeLimit("jit", 0.05)
    with pytest.raises(ModeTimeout) as caught, limit.charged("first call"), doing(lambda: stage[0]):
        stage[0] = "the first run"
        _busy(5.0)
    assert caught.value.doing == "the first run"
    limit = ModeLimit("eager", 0.05)  # outside any: as before
    with pytest.raises(ModeTimeout) as caught, limit.charged("first call"):
        _busy(5.0)
    assert caught.value.doing is None and str(caught.value).endswith("and was stopped")


def _jit_timeout(fn, name: str) -> str:  # type: ignore[no-untyped-def]
    """The failure text of jit's measurement of `fn` (NumPy: x * 2) under --timeout 0.3 s."""

    @workload(inputs=_vec, sizes={"S": {"n": 4}}, name=name)
    def slow(xp, x):
        return x * 2 if xp is __import__("numpy") else fn(x)

    config = RunConfig.quick_settings(timeout_s=0.3, modes=(Mode.NUMPY, Mode.JIT))
    ms = {m.mode: m for m in measure_cases(plan_cases([slow], config, resolve_devices([])), config)}
    assert ms[Mode.NUMPY].ok and ms[Mode.JIT].status is Status.TIMEOUT
    return ms[Mode.JIT].failure_text


def test_a_jit_first_call_past_its_limit_names_the_stage_that_ran_over() -> None:
    def slow_trace(x):  # type: ignore[no-untyped-def]
        _busy(30.0)  # at trace time: its Python body runs on tracers
        return x * 2

    text = _jit_timeout(slow_trace, "slow_trace")
    assert text.startswith("timeout: ModeTimeout: jit exceeded --timeout 0.3 s in its first call")
    assert text.endswith("and was stopped, in tracing or lowering")


def _unrolled_cumsum(steps: int):  # type: ignore[no-untyped-def]
    @workload(inputs=_vec, sizes={"S": {"n": steps}}, name=f"cumsum_loop{steps}")
    def cumsum_loop(xp, x):  # type: ignore[no-untyped-def]
        if xp is __import__("numpy"):
            return xp.cumsum(x)
        out, acc = [], xp.zeros((), x.dtype)
        for i in range(steps):  # unrolled by tracing: the pitfall
            acc = acc + x[i]
            out.append(acc)
        return xp.stack(out)

    return cumsum_loop


@pytest.mark.slow
def test_a_long_unrolled_loop_is_measured_and_a_short_limit_names_xlas_compile() -> None:
    """A 250-step unrolled loop (jitbench's own HLO pass took minutes on such programs,
    and a --timeout reported jit's first call) is measured, its program fingerprinted;
    under a limit shorter than XLA's compile of it, the timeout says so."""
    loop = _unrolled_cumsum(250)
    modes = (Mode.NUMPY, Mode.JIT)
    config = RunConfig.quick_settings(timeout_s=120.0, modes=modes)
    ms = {m.mode: m for m in measure_cases(plan_cases([loop], config, resolve_devices([])), config)}
    jit = ms[Mode.JIT]
    assert jit.ok and jit.compile is not None and jit.compile.program_fingerprint
    c = jit.compile
    assert c.compile_s is not None and c.trace_s is not None and c.lower_s is not None
    assert (c.hlo_opcodes or {}).get("fusion", 0) > 100
    # Past tracing and lowering, halfway through XLA's compile (as long again, about).
    limit = c.trace_s + c.lower_s + c.compile_s / 2
    short = RunConfig.quick_settings(timeout_s=limit, modes=modes)
    ms = {m.mode: m for m in measure_cases(plan_cases([loop], short, resolve_devices([])), short)}
    assert ms[Mode.JIT].status is Status.TIMEOUT
    assert ms[Mode.JIT].failure_text.endswith("and was stopped, in XLA's compile")
