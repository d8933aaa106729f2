"""Clock, warm-up, calibration and adaptive interleaved sampling.

Nothing here knows about JAX: a "call" is any zero-argument callable that returns only when
its work is finished (the modes module makes JAX calls synchronous). The clock is injected,
so the logic is tested with a fake clock and exact assertions.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import repeat
from typing import Generic, Protocol, TypeVar

from jitbench import stats
from jitbench.config import SamplingPlan

K = TypeVar("K", bound=Hashable)


class Clock(Protocol):
    """Returns monotonic seconds."""

    def __call__(self) -> float: ...


DEFAULT_CLOCK: Clock = time.perf_counter


def time_calls(fn: Callable[[], object], n: int, clock: Clock = DEFAULT_CLOCK) -> float:
    """Seconds taken by `n` back-to-back calls of `fn` (the timed region is only the loop).

    A call object with a `run_batch(n, clock)` method times its own loop with the call
    inlined (see `modes._SingleArrayCall`); the timed region is the same.
    """
    run_batch = getattr(fn, "run_batch", None)
    if run_batch is not None:
        return float(run_batch(n, clock))
    t0 = clock()
    for _ in repeat(None, n):
        fn()
    return clock() - t0


def warm_up(fn: Callable[[], object], *, plan: SamplingPlan, clock: Clock = DEFAULT_CLOCK) -> int:
    """Call `fn` at least `plan.warmup_calls` times, then until `plan.warmup_s` has passed.

    Returns the number of calls made.
    """
    start = clock()
    calls = 0
    while calls < plan.warmup_calls or clock() - start < plan.warmup_s:
        fn()
        calls += 1
    return calls


def calibrate(fn: Callable[[], object], *, plan: SamplingPlan, clock: Clock = DEFAULT_CLOCK) -> int:
    """Grow the calls per sample until one sample lasts at least `plan.min_sample_s`."""
    n = 1
    while n < plan.max_calls_per_sample:
        elapsed = time_calls(fn, n, clock)
        if elapsed >= plan.min_sample_s:
            return n
        # Jump most of the way to the target, but at least double (x10 below resolution).
        grow = 10 if elapsed <= 0 else max(2, math.ceil(plan.min_sample_s / elapsed * 1.2))
        n = min(n * grow, plan.max_calls_per_sample)
    return plan.max_calls_per_sample


def warm_up_and_calibrate(
    fn: Callable[[], object], *, plan: SamplingPlan, clock: Clock = DEFAULT_CLOCK
) -> int:
    """Warm `fn` up and find its calls per sample in one go; returns the calls per sample.

    At least `plan.warmup_calls` calls, then calibration probes (n calls each, n growing as
    in `calibrate`) that are warm-up calls too: they go on at the calibrated n until
    `plan.warmup_s` has passed since the start, and the probe taken once that time has
    passed must still last `plan.min_sample_s` (else n grows again). So the warm-up lasts
    as long as `warm_up`'s, the calls per sample hold for the warm function, and no time is
    spent calibrating after the warm-up is over.
    """
    start = clock()
    for _ in repeat(None, plan.warmup_calls):
        fn()
    n = 1
    while True:
        elapsed = time_calls(fn, n, clock)
        warm = clock() - start >= plan.warmup_s
        if elapsed >= plan.min_sample_s or n >= plan.max_calls_per_sample:
            if warm:
                return n
            continue
        # Jump most of the way to the target, but at least double (x10 below resolution).
        grow = 10 if elapsed <= 0 else max(2, math.ceil(plan.min_sample_s / elapsed * 1.2))
        n = min(n * grow, plan.max_calls_per_sample)


@lru_cache(maxsize=1024)
def _ci_indices(n: int) -> tuple[int, int] | None:
    return stats.median_ci_indices(n)


def relative_ci_halfwidth(samples: list[float]) -> float:
    """Half-width of the 95 % CI of the median relative to the median (inf if undefined)."""
    idx = _ci_indices(len(samples))
    if idx is None:
        return math.inf
    xs = sorted(samples)
    n = len(xs)
    median = xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
    if median <= 0:
        return math.inf
    return (xs[idx[1]] - xs[idx[0]]) / 2 / median


@dataclass
class SampleSeries(Generic[K]):
    """Samples of one callable (seconds per call) and why sampling stopped."""

    key: K
    calls_per_sample: int
    samples_s: list[float] = field(default_factory=list)
    stop_reason: str = ""  # "converged", "max_samples", "budget", "error"
    error: BaseException | None = None

    @property
    def converged(self) -> bool:
        return self.stop_reason == "converged"


def sample_interleaved(
    calls: Mapping[K, Callable[[], object]],
    calls_per_sample: Mapping[K, int],
    *,
    plan: SamplingPlan,
    clock: Clock = DEFAULT_CLOCK,
    region: Callable[[K], AbstractContextManager[object]] | None = None,
    prior: Mapping[K, Sequence[float]] | None = None,
) -> dict[K, SampleSeries[K]]:
    """Sample several callables in alternating rounds until each is precise enough.

    Each round takes one sample of every callable still active (A, B, C, A, B, C, …), so
    slow drift of the machine affects all of them alike. A callable stops when it has
    `min_samples` and its CI is within `precision`, at `max_samples`, or when the case's
    budget is spent and it has `floor_samples`. Garbage collection is off while sampling.
    `region(key)` is entered around each sample, outside the timed loop (the transfer guard).
    An exception stops that callable only; it is kept in `SampleSeries.error`.

    `prior` continues series from an earlier round: those samples count towards
    convergence (`min_samples`, `precision`) and are returned too, while `max_samples`,
    `floor_samples` and the budget apply to the samples taken now.
    """
    prior = prior or {}
    series = {
        k: SampleSeries(
            key=k, calls_per_sample=calls_per_sample[k], samples_s=list(prior.get(k, ()))
        )
        for k in calls
    }
    already = {k: len(s.samples_s) for k, s in series.items()}
    active = list(calls)
    enter = region or (lambda _k: nullcontext())
    start = clock()
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        while active:
            for k in active:
                s = series[k]
                try:
                    with enter(k):
                        elapsed = time_calls(calls[k], s.calls_per_sample, clock)
                except Exception as exc:  # a failing mode must not stop the others
                    s.error, s.stop_reason = exc, "error"
                    continue
                s.samples_s.append(elapsed / s.calls_per_sample)
            over_budget = clock() - start >= plan.budget_s
            still = []
            for k in active:
                s = series[k]
                if s.stop_reason:
                    continue
                n = len(s.samples_s)
                taken = n - already[k]
                if (
                    n >= plan.min_samples
                    and taken >= 1
                    and relative_ci_halfwidth(s.samples_s) <= plan.precision
                ):
                    s.stop_reason = "converged"
                elif taken >= plan.max_samples:
                    s.stop_reason = "max_samples"
                elif over_budget and taken >= plan.floor_samples:
                    s.stop_reason = "budget"
                else:
                    still.append(k)
            active = still
    finally:
        if gc_was_enabled:
            gc.enable()
    return series
