"""The copies around a case's calls, on real JAX (CPU, tiny sizes): the inputs to the
device (`transfer_s`) and jit's cold first output back to the host (`transfer_back_s`),
each timed on its own, once per case and device."""

from __future__ import annotations

import jax
import numpy as np

from jitbench import Mode, RunConfig, Status, run_workloads, workload
from jitbench.measure import modes
from jitbench.results import Run


def _two(rng, *, dtype, n):
    return (rng.standard_normal(n).astype(dtype),)


def _by(run: Run, mode: Mode):
    (m,) = [m for m in run.measurements if m.mode is mode]
    return m


def test_jit_output_copied_back_is_timed_with_its_bytes() -> None:
    @workload(inputs=_two, sizes={"S": {"n": 96}})
    def halves(xp, x):
        return xp.sin(x), xp.cumsum(x)[:32]

    run = run_workloads([halves], RunConfig.quick_settings())
    numpy = _by(run, Mode.NUMPY)
    assert numpy.transfer_back_s is None and numpy.transfer_back_bytes is None
    out_bytes = (96 + 32) * 4  # both outputs, float32
    for mode in (Mode.EAGER, Mode.JIT):
        m = _by(run, mode)
        assert m.status is Status.OK, m.failure_text
        assert m.transfer_s is not None and m.transfer_s > 0 and m.transfer_bytes == 96 * 4
        # One copy back per case and device, recorded on each JAX mode as transfer_s is.
        assert m.transfer_back_s is not None and m.transfer_back_s > 0, m
        assert m.transfer_back_bytes == out_bytes


def test_eager_output_is_copied_back_where_jit_fails() -> None:
    @workload(inputs=_two, sizes={"S": {"n": 8}}, eager="call")
    def branchy(xp, x):
        # A Python branch on a value: fine op by op, a ConcretizationTypeError under jit.
        return x * 2 if float(x[0]) > -100 else x

    run = run_workloads([branchy], RunConfig.quick_settings())
    assert _by(run, Mode.JIT).status is Status.ERROR
    eager = _by(run, Mode.EAGER)
    assert eager.status is Status.OK, eager.failure_text
    assert eager.transfer_back_s is not None and eager.transfer_back_bytes == 8 * 4
    assert _by(run, Mode.JIT).transfer_back_bytes == 8 * 4  # the device's figure, as H→D


def test_no_copy_back_when_no_jax_mode_ran() -> None:
    @workload(inputs=_two, sizes={"S": {"n": 8}}, eager="call")
    def broken(xp, x):
        raise ValueError("no JAX side today")

    run = run_workloads([broken], RunConfig.quick_settings(modes=("numpy", "eager", "jit")))
    for mode in (Mode.EAGER, Mode.JIT):
        m = _by(run, mode)
        assert m.status is Status.ERROR and m.transfer_s is not None  # staged all the same
        assert m.transfer_back_s is None and m.transfer_back_bytes is None


def test_fetch_copies_the_tree_and_counts_only_device_arrays() -> None:
    out = {"a": jax.numpy.arange(6.0, dtype="float32"), "b": np.ones(5), "c": 3}
    fetched = modes.fetch(out)
    assert fetched.transfer_bytes == 24 and fetched.transfer_s > 0
    assert isinstance(fetched.host["a"], np.ndarray) and fetched.host["c"] == 3
    np.testing.assert_array_equal(fetched.host["a"], np.arange(6.0))


def test_a_device_peak_is_exact_only_where_the_case_raised_the_mark() -> None:
    from jitbench.measure.devices import MemoryMark, case_peak, memory_mark

    # JAX's CPU backend keeps no allocator figures: nothing is recorded, nothing invented.
    assert memory_mark(jax.devices("cpu")[0]) is None
    assert case_peak(None, MemoryMark(in_use=0, peak=10)) is None
    # The case took the mark from 5 MB to 9 MB with 2 MB resident before it: 7 MB its own.
    assert case_peak(MemoryMark(2 << 20, 5 << 20), MemoryMark(2 << 20, 9 << 20)) == (7 << 20, True)
    # The mark did not move: an earlier case's 5 MB bounds this one's 3 MB above resident.
    assert case_peak(MemoryMark(2 << 20, 5 << 20), MemoryMark(2 << 20, 5 << 20)) == (3 << 20, False)


def test_a_cpu_run_records_no_device_peak() -> None:
    @workload(inputs=_two, sizes={"S": {"n": 32}})
    def negate(xp, x):
        return -x

    run = run_workloads([negate], RunConfig.quick_settings())
    assert all(
        m.device_peak_bytes is None and m.device_peak_exact is None for m in run.measurements
    )


def test_the_peak_window_runs_from_staging_to_warm_up_and_skips_sharded_sessions(
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    """Where the marks are taken, with an allocator stand-in (JAX's CPU backend keeps none):
    one before the device is opened and one after warm-up; a session with sharded mode
    records none (its staging on every device falls in the window)."""
    from jitbench.config import SamplingPlan
    from jitbench.measure import opening
    from jitbench.measure.devices import MemoryMark
    from jitbench.measure.opening import PlannedCase, open_case

    marks = iter([(100, 1000), (100, 1000), (100, 1500)])  # check, before, after warm-up
    taken: list[str] = []

    def fake_mark(device):  # type: ignore[no-untyped-def]
        in_use, peak = next(marks)
        taken.append(device.platform)
        return MemoryMark(in_use=in_use, peak=peak)

    monkeypatch.setattr(opening, "memory_mark", fake_mark)

    @workload(inputs=_two, sizes={"S": {"n": 16}})
    def triple(xp, x):
        return 3 * x

    pc = PlannedCase(triple, "S", {"n": 16}, jax.devices("cpu")[0], "float32")
    plan = SamplingPlan(budget_s=0.01, min_samples=3)
    session = open_case(pc, timed=(Mode.NUMPY, Mode.JIT), plan=plan, seed=0, quick=True)
    assert taken == ["cpu", "cpu", "cpu"]
    by_mode = {m.mode: m for m in session.measurements()}
    assert (by_mode[Mode.JIT].device_peak_bytes, by_mode[Mode.JIT].device_peak_exact) == (
        1400,
        True,
    )
    assert by_mode[Mode.NUMPY].device_peak_bytes is None  # host code
    taken.clear()
    sharded = open_case(
        pc, timed=(Mode.NUMPY, Mode.JIT, Mode.SHARDED), plan=plan, seed=0, quick=True
    )
    assert taken == []
    assert all(m.device_peak_bytes is None for m in sharded.measurements())
