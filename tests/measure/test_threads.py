"""Thread control: pinning and BLAS pool sizes are applied inside the block and restored."""

from __future__ import annotations

import os
import threading

import numpy as np  # noqa: F401  (loads the BLAS pool threadpoolctl reports)
import pytest

from jitbench.measure.threads import allowed_cores, current_state, limited_threads

needs_affinity = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity"), reason="no sched_setaffinity on this OS"
)


@needs_affinity
def test_one_thread_pins_every_thread_and_sizes_blas_then_restores() -> None:
    before = allowed_cores()
    started_inside: list[set[int]] = []
    with limited_threads(1) as state:
        assert state.requested == 1 and state.pinned
        assert state.cores == before[:1] == tuple(sorted(os.sched_getaffinity(0)))
        assert all(b["num_threads"] == 1 for b in state.blas), state.blas
        # A thread started inside inherits the pinning (as XLA's pool threads would).
        t = threading.Thread(target=lambda: started_inside.append(os.sched_getaffinity(0)))
        t.start()
        t.join()
    assert started_inside == [set(before[:1])]
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
