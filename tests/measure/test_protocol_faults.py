"""The protocol under faults: outputs that hold no array, and a real Ctrl-C during a compile
or inside the timed loop, which must leave JAX, gc and the compile counters as they were."""

from __future__ import annotations

import gc
import signal

import jax
import numpy as np
import pytest

from jitbench.config import RunConfig
from jitbench.errors import WorkloadError
from jitbench.measure.opening import require_array_tree
from jitbench.results import Mode
from jitbench.runner.events import RunInterrupted
from jitbench.runner.scheduler import run_workloads
from jitbench.suite.discovery import discover
from tests.faults import FAULT_SUITE, OK, statuses


@pytest.mark.parametrize("workload", ["interrupted_in_trace", "interrupted_in_sampling"])
def test_real_sigint_during_compile_or_sampling_leaves_clean_state(workload: str) -> None:
    from jitbench.measure import compilation as jcompile

    registry = discover([FAULT_SUITE])
    wls = [registry.get("ok_double"), registry.get(workload)]
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(RunInterrupted) as info:
            run_workloads(wls, RunConfig.quick_settings())
    finally:
        signal.signal(signal.SIGINT, previous)
    assert statuses(info.value.partial) == {"ok_double[S]": OK}
    assert gc.isenabled()  # sampling turned it back on
    assert jcompile._active == []  # no compile counter left registered
    # JAX still works normally afterwards (no transfer guard or trace left behind).
    assert float(jax.jit(lambda v: v + 1)(jax.numpy.ones(2)).sum()) == 4.0


@pytest.mark.parametrize(
    ("output", "ok"),
    [
        (np.ones(3), True),
        ((np.ones(3), {"b": np.float32(1.0)}), True),
        (1.5, True),
        (None, False),
        ((), False),
        ("text", False),
        ((np.ones(3), "text"), False),
        (object(), False),
    ],
    ids=["array", "pytree", "number", "none", "empty", "string", "string-leaf", "object"],
)
def test_require_array_tree(output: object, ok: bool) -> None:
    wl = discover([FAULT_SUITE]).get("ok_double")
    if ok:
        assert require_array_tree(output, wl, Mode.NUMPY) is output
    else:
        with pytest.raises(WorkloadError, match="ok_double"):
            require_array_tree(output, wl, Mode.NUMPY)
