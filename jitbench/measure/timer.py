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
from itertools import repeat
from typing import Generic, Protocol, TypeVar

from jitbench.config import SamplingPlan
from jitbench.stats import MIN_CI_SAMPLES, relative_ci_halfwidth

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


#: Makes a sampling decision (a count, or 0/1) the same in every process of a
#: multi-process JAX program (`sharding.agreement`); where a process decides alone, it is
#: `decide_alone`, which returns the value as it is.
Agree = Callable[[int], int]


def decide_alone(value: int) -> int:
    return value


#: The floor bends to the budget: once sampling has taken this many budgets, the group
#: stops at `FLOOR_LEAST` samples instead of `floor_samples` (a 0.5 s call under a 0.05 s
#: budget took 15 calls, a 10 s call minutes: the floor was never meant for calls that
#: slow against the budget asked for). A budget a call fits in is not affected.
FLOOR_OVERRUN = 10.0
FLOOR_LEAST = 3

#: Seconds from which one warm call is slow (`slow_call_s`).
SLOW_CALL_S = 1.0


def slow_call_s(plan: SamplingPlan) -> float:
    """A warm call at least this long ends warm-up and calibration at once, one call per
    sample (`warm_up_and_calibrate`): a second, or the case's whole sampling budget."""
    return max(SLOW_CALL_S, plan.budget_s)


def warm_up_and_calibrate(
    fn: Callable[[], object],
    *,
    plan: SamplingPlan,
    clock: Clock = DEFAULT_CLOCK,
    agree: Agree = decide_alone,
) -> int:
    """Warm `fn` up and find its calls per sample in one go; returns the calls per sample.

    At least `plan.warmup_calls` calls, then calibration probes (n calls each, n growing as
    in `calibrate`) that are warm-up calls too: they go on at the calibrated n until
    `plan.warmup_s` has passed since the start, and the probe taken once that time has
    passed must still last `plan.min_sample_s` (else n grows again). So the warm-up lasts
    as long as `warm_up`'s, the calls per sample hold for the warm function, and no time is
    spent calibrating after the warm-up is over.

    A warm-up call that lasts `slow_call_s` or more ends it there, with one call per sample.

    Every decision goes through `agree`, so that the processes of a multi-process program
    make the same calls (a sharded program's collectives wait for every process's call).
    """
    start = clock()
    for _ in repeat(None, plan.warmup_calls):
        before = clock()
        fn()
        # A call this long is its own warm-up and a long enough sample: more warm-up calls
        # would only cost a slow mode (eager op by op) minutes of a run.
        if agree(int(clock() - before >= slow_call_s(plan))):
            return 1
    n = 1
    while True:
        elapsed = time_calls(fn, n, clock)
        warm = clock() - start >= plan.warmup_s
        long_enough = elapsed >= plan.min_sample_s or n >= plan.max_calls_per_sample
        verdict = agree(2 * long_enough + warm)
        if verdict >= 2:
            if verdict == 3:
                return n
            continue
        # Jump most of the way to the target, but at least double (x10 below resolution).
        grow = 10 if elapsed <= 0 else max(2, math.ceil(plan.min_sample_s / elapsed * 1.2))
        n = agree(min(n * grow, plan.max_calls_per_sample))


# Why a group of series stops after a round ("" goes on), as `agree` passes it: an index.
_STOP_REASONS = ("", "converged", "max_samples", "budget")


@dataclass
class SampleSeries(Generic[K]):
    """Samples of one callable (seconds per call) and why sampling stopped."""

    key: K
    calls_per_sample: int
    samples_s: list[float] = field(default_factory=list)
    # "converged", "max_samples", "budget", "error"; "peer converged": another process of a
    # multi-process program had converged and this one stopped with it.
    stop_reason: str = ""
    error: BaseException | None = None

    @property
    def converged(self) -> bool:
        return self.stop_reason == "converged"


def _block_length(plan: SamplingPlan, taken: int, have: int) -> int:
    """Samples of each callable in the next round: `plan.block_samples`, cut at the next
    point where the group may stop (the floor and the cap count this call's samples,
    `min_samples` and the first CI all of them, `have` being the fewest any has)."""
    least = max(plan.min_samples, MIN_CI_SAMPLES)
    ends = (plan.floor_samples - taken, least - have, plan.max_samples - taken)
    return min([plan.block_samples, *(e for e in ends if e > 0)])


def rewarm_calls(first_call_s: float, plan: SamplingPlan) -> int:
    """Untimed calls that re-warm a callable after a switch: enough to last
    `plan.rewarm_s` at the speed of the first (`first_call_s`), at least one; none for a
    call of `SLOW_CALL_S` or more, whose first milliseconds after a switch are a fraction
    of a percent of it, and whose re-warm doubled the cost of every sample. A count, not a
    clock, so that the processes of a multi-process program make the same calls."""
    if first_call_s >= SLOW_CALL_S:
        return 0
    if plan.rewarm_s <= first_call_s:
        return 1
    if first_call_s <= 0:
        return plan.max_calls_per_sample
    return min(math.ceil(plan.rewarm_s / first_call_s), plan.max_calls_per_sample)


def sample_interleaved(
    calls: Mapping[K, Callable[[], object]],
    calls_per_sample: Mapping[K, int],
    *,
    plan: SamplingPlan,
    clock: Clock = DEFAULT_CLOCK,
    region: Callable[[K], AbstractContextManager[object]] | None = None,
    prior: Mapping[K, Sequence[float]] | None = None,
    on_round: Callable[[int, float], None] | None = None,
    agree: Agree = decide_alone,
    rewarm: bool = True,
    sample_clock: Clock | None = None,
) -> dict[K, SampleSeries[K]]:
    """Sample several callables in lockstep rounds until all are precise enough.

    Each round takes `plan.block_samples` samples of every callable in turn (A, B, C, A,
    B, C, …, or A A, B B, C C, … with blocks of 2), the same number of each, and every
    callable is sampled in every round until the whole group stops, so sample i of each
    series comes from the same round: slow drift of the machine affects them alike, and
    the ratio of two series can be taken sample by sample (paired). The group stops when
    every callable has `min_samples` and its CI within `precision` ("converged"), after
    `max_samples` samples, or when the budget is spent after `floor_samples` samples (or
    after `FLOOR_LEAST`, once `FLOOR_OVERRUN` budgets are spent: the floor bends);
    each series records whether it had converged by then. Garbage collection is off
    while sampling. `region(key)` is entered around each sample, outside the timed loop
    (the transfer guard). An exception stops that callable only; it is kept in
    `SampleSeries.error`. A block is cut short where a round would pass the floor,
    `min_samples` or the cap, so that the group may stop right there (the cut depends on
    the sample counts alone, so every process of a multi-process program cuts alike).

    With `rewarm`, each block after a switch is preceded by untimed calls of the same
    callable for `plan.rewarm_s` (`rewarm_calls`: a count from its first call, agreed
    once, so that every process of a multi-process program makes the same calls): the
    other callables' samples evict its data from the caches and leave the calls after
    them slow for a few milliseconds (the figures, and what the calls cost in pairing:
    `SamplingPlan.rewarm_s`). A block that follows one of its own callable's (one
    callable left) needs none.

    `sample_clock` (default: `clock`) times the samples, `clock` the budget and the
    re-warm: with the process's CPU time as the sample clock, the budget is still spent in
    wall seconds.

    `prior` continues series from an earlier round: those samples count towards
    convergence (`min_samples`, `precision`) and are returned too, while `max_samples`,
    `floor_samples` and the budget apply to the samples taken now.

    `on_round(samples taken of each, seconds since the start)` is called after every round that
    does not end the sampling (between samples, outside any timed region), for progress.
    Whether to stop after a round goes through `agree` (see `warm_up_and_calibrate`).
    """
    prior = prior or {}
    series = {
        k: SampleSeries(
            key=k, calls_per_sample=calls_per_sample[k], samples_s=list(prior.get(k, ()))
        )
        for k in calls
    }
    active = list(calls)
    enter = region or (lambda _k: nullcontext())
    timed_by = sample_clock or clock
    start = clock()
    taken = 0
    previous: K | None = None  # the callable sampled last: no re-warm after itself
    rewarm_counts: dict[K, int] = {}

    def _rewarm(k: K) -> None:
        if k not in rewarm_counts:  # the count, from its first call, agreed once
            t0 = clock()
            calls[k]()
            rewarm_counts[k] = agree(rewarm_calls(clock() - t0, plan))
            left = rewarm_counts[k] - 1
        else:
            left = rewarm_counts[k]
        for _ in repeat(None, left):
            calls[k]()

    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        while active:
            block = _block_length(plan, taken, min(len(series[k].samples_s) for k in active))
            for k in list(active):
                s = series[k]
                try:
                    for _ in range(block):
                        with enter(k):
                            if rewarm and previous != k:
                                _rewarm(k)
                            previous = k
                            elapsed = time_calls(calls[k], s.calls_per_sample, timed_by)
                        s.samples_s.append(elapsed / s.calls_per_sample)
                except Exception as exc:  # a failing mode must not stop the others
                    s.error, s.stop_reason = exc, "error"
                    active.remove(k)
                    continue
            if not active:
                break
            taken += block
            converged = {
                k: len(series[k].samples_s) >= plan.min_samples
                and relative_ci_halfwidth(series[k].samples_s) <= plan.precision
                for k in active
            }
            if all(converged.values()):
                reason = "converged"
            elif taken >= plan.max_samples:
                reason = "max_samples"
            elif clock() - start >= plan.budget_s and (
                taken >= plan.floor_samples
                or (taken >= FLOOR_LEAST and clock() - start >= FLOOR_OVERRUN * plan.budget_s)
            ):
                reason = "budget"
            else:
                reason = ""
            reason = _STOP_REASONS[agree(_STOP_REASONS.index(reason))]
            if not reason:
                if on_round is not None:
                    on_round(taken, clock() - start)
                continue
            for k in active:
                # Stopped by another process's decision, where this one had not converged:
                # say so, not "converged".
                mine = reason if reason != "converged" else "peer converged"
                series[k].stop_reason = "converged" if converged[k] else mine
            active = []
    finally:
        if gc_was_enabled:
            gc.enable()
    return series
