"""Host dispatch vs device execution from JAX's profiler trace (`measure.timeline`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jitbench.measure.timeline import ANNOTATION, split_from_events, time_split


def _meta(pid: int, tid: int, name: str) -> dict:
    return {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}


def _span(pid: int, tid: int, name: str, ts: float, dur: float) -> dict:
    return {"ph": "X", "pid": pid, "tid": tid, "name": name, "ts": ts, "dur": dur}


def test_split_of_a_synthetic_trace() -> None:
    """One call of 100 µs: dispatch ends at 30 µs; the device is busy 40–70 and 60–90 µs
    (overlapping: 50 µs in all); bookkeeping and waiting do not count."""
    events = [
        _meta(1, 1, "python"),
        _meta(1, 2, "tf_XLAPjRtCpuClient/1"),
        _span(1, 1, ANNOTATION, 1000, 100),
        _span(1, 1, "PjitFunction(f)", 1005, 25),
        _span(1, 2, "fusion", 1040, 30),
        _span(1, 2, "fusion.1", 1060, 30),
        _span(1, 2, "ThunkExecutor::Execute (wait for completion)", 1000, 100),
        _span(1, 2, "ThreadpoolListener::Record", 1000, 100),
        _span(1, 2, "fusion.2", 2000, 50),  # after the call: not this call's
    ]
    split = split_from_events(events)
    assert split is not None
    assert split.calls == 1
    assert split.wall_s == pytest.approx(100e-6)
    assert split.host_s == pytest.approx(30e-6)
    assert split.device_s == pytest.approx(50e-6)


def test_no_annotated_call_gives_no_split() -> None:
    assert split_from_events([_meta(1, 1, "python"), _span(1, 1, "x", 0, 1)]) is None


def test_a_real_trace_of_jit_and_eager() -> None:
    x = jnp.asarray(np.arange(64, dtype=np.float32))
    f = jax.jit(lambda v: jnp.tanh(v) * 2)

    def jit_call() -> object:
        return f(x).block_until_ready()

    def eager_call() -> object:
        return (jnp.tanh(jnp.sin(x)) * 2 + 1).block_until_ready()

    for call in (jit_call, eager_call):
        split = time_split(call, calls=3)
        assert split is not None and split.calls == 3
        assert 0 < split.host_s <= split.wall_s
        assert 0 <= split.device_s <= split.wall_s


def test_a_trace_that_fails_is_said_not_silently_skipped(tmp_path) -> None:
    """With another profiler trace running, the split's own trace cannot start: the case
    is measured as usual and each JAX mode says why it has no split."""
    from jitbench.config import RunConfig
    from jitbench.measure import opening
    from jitbench.suite.discovery import discover
    from tests.faults import FAULT_SUITE

    wl = discover([FAULT_SUITE]).get("ok_double")
    pc = opening.PlannedCase(wl, "S", dict(wl.sizes["S"]), jax.devices("cpu")[0], "float32")
    jax.profiler.start_trace(str(tmp_path))
    try:
        measured = opening.measure_case(pc, RunConfig.quick_settings(), split_calls=3)
    finally:
        jax.profiler.stop_trace()
    by_mode = {m.mode.value: m for m in measured}
    for mode in ("eager", "jit"):
        m = by_mode[mode]
        assert m.ok and m.samples_s and m.time_split is None
        [note] = [d for d in m.diagnostics if d.code == "time-split-unavailable"]
        assert "profiler trace failed" in note.message
    assert not [d for d in by_mode["numpy"].diagnostics if d.code == "time-split-unavailable"]
