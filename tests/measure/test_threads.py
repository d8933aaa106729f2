"""Thread control: pinning and BLAS pool sizes are applied inside the block and restored;
the recorded state reads back and summarises itself."""

from __future__ import annotations

import os
import threading

import numpy as np  # noqa: F401  (loads the BLAS pool threadpoolctl reports)
import pytest

from jitbench.errors import ConfigError
from jitbench.measure.threads import (
    ThreadState,
    allowed_cores,
    current_state,
    limited_threads,
    recorded_summary,
)

needs_affinity = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity"), reason="no sched_setaffinity on this OS"
)


@needs_affinity
def test_one_thread_pins_every_thread_and_sizes_blas_then_restores() -> None:
    before = allowed_cores()
    started_inside: list[set[int]] = []
    with limited_threads(1) as state:
        assert state.requested == 1 and state.pinned
        # One of the allowed cores (the least busy one), and the process is on it.
        assert len(state.cores) == 1 and set(state.cores) <= set(before)
        assert state.cores == tuple(sorted(os.sched_getaffinity(0)))
        assert all(b["num_threads"] == 1 for b in state.blas), state.blas
        # A thread started inside inherits the pinning (as XLA's pool threads would).
        t = threading.Thread(target=lambda: started_inside.append(os.sched_getaffinity(0)))
        t.start()
        t.join()
    assert started_inside == [set(state.cores)]
    assert allowed_cores() == before
    assert current_state().requested is None


def test_none_changes_nothing() -> None:
    before = current_state()
    with limited_threads(None) as state:
        assert state.requested is None and not state.pinned
        assert state.cores == before.cores and state.blas == before.blas


def test_summary_names_threads_cores_and_pools() -> None:
    with limited_threads(1) as state:
        text = state.summary
    assert text.startswith("1 thread (core")
    assert state.to_dict()["requested"] == 1


def test_more_threads_than_allowed_cores_is_a_config_error() -> None:
    too_many = len(allowed_cores()) + 1
    with (
        pytest.raises(ConfigError, match=f"--threads {too_many} is more than"),
        limited_threads(too_many),
    ):
        pass
    assert allowed_cores() == tuple(sorted(os.sched_getaffinity(0)))


def test_the_recorded_state_reads_back() -> None:
    state = ThreadState(
        requested=2,
        cores=(0, 1, 2, 5),
        pinned=True,
        blas=({"internal_api": "openblas", "num_threads": 2, "version": "0.3"},),
        xla_flags="--xla_cpu_multi_thread_eigen=false",
    )
    again = ThreadState.from_dict(state.to_dict())
    assert again == state
    assert again.summary == "2 threads (cores 0-2,5; openblas 2)"
    assert recorded_summary({"threads": state.to_dict()}) == again.summary


def test_summaries_of_defaults_unpinned_and_malformed_states() -> None:
    defaults = ThreadState(requested=None, cores=(0, 1), pinned=False, blas=(), xla_flags="")
    assert defaults.summary == "library defaults on 2 core(s) (cores 0-1)"
    unpinned = ThreadState(requested=1, cores=(3,), pinned=False, blas=(), xla_flags="")
    assert unpinned.summary == "1 thread (core 3, not pinned)"
    garbage = ThreadState.from_dict({"requested": "one", "cores": "0", "blas": [1]})
    assert garbage.summary == "library defaults on 0 core(s)"
    assert recorded_summary({}) is None  # a run from before jitbench recorded threads


@pytest.mark.e2e  # a fresh interpreter: the pool must load first there
def test_a_blas_pool_first_loaded_inside_the_limit_gets_its_default_back() -> None:
    """SciPy's OpenBLAS, first imported by a measured function, kept the limit of one
    thread in the caller's process after `bench` returned."""
    import subprocess
    import sys

    code = (
        "import numpy as np, threadpoolctl, jitbench\n"
        "def f(x):\n"
        "    import scipy.linalg\n"
        "    return x * 2\n"
        "jitbench.bench(f, np.ones(8, np.float32), budget=0.01, processes=1, modes=['jit'])\n"
        "print(min(i['num_threads'] for i in threadpoolctl.threadpool_info()))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    import os

    assert int(proc.stdout.split()[-1]) == len(os.sched_getaffinity(0))
